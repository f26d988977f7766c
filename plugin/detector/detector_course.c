/* The course ring of the detector and the question the urgent rule asks it
 * (docs/detector.md, "The urgent rule"): does the course of the lower
 * envelope reach the limit within Horizon, or does it level off below it?
 * Pure code, as the rest of the detector. */
#include <math.h>
#include <string.h>
#ifdef MDP_URGENT_DEBUG
#include <stdio.h>
#endif

#include "course.h"
#include "detector_internal.h"

#define CB      MDP_DETECTOR_COURSE_BUCKETS
#define CRING   (MDP_DETECTOR_COURSE_BUCKETS + 1)
#define NB_LONG MDP_DETECTOR_BUCKETS

_Static_assert(CB <= MDP_COURSE_MAX_POINTS, "the course fit must hold the ring");

/* Buckets per ShortWindow (1 min at the default; the ring spans twice
 * ShortWindow). */
#define PER_WINDOW    20
/* Closed buckets the course needs before it can say anything. */
#define COURSE_MIN    6
/* The early path (mdp_detector_course_early): at least EARLY_MIN closed
 * buckets (8 min at the default); the course reaches the limit within
 * NEAR_SHARE of Horizon (1 h at the default); the envelope has grown, since
 * the lowest level seen, by URGENCY_SHARE of the room left (a steady leak
 * that reaches the limit T after it starts fires about T/5 after it
 * starts); no single rise between two buckets is more than STEP_SHARE of
 * the rise (growth, not a step); every course that levels off below where
 * near-limit would fire is ruled out (RULED_OUT of the F ratio's 99 %
 * point: about its 90 % point at these degrees of freedom); and CONFIRM
 * evaluations in a row agree (persistence: three looks a minute apart, each
 * at 90 %, instead of two at 99 %, fire fewer warm-ups and as many leaks). */
#define EARLY_MIN     8
#define NEAR_SHARE    (1.0 / 6)
#define URGENCY_SHARE 0.25
#define STEP_SHARE    0.4
#define CONFIRM       3
/* ... or CONFIRM - 1 when every such plateau is ruled out at FIRM times the
 * 99 % point: a leak whose course is plainly straight gains a minute. */
#define FIRM          4.0
#define RULED_OUT     0.4
#define STEP_MIN      (8.0 * MIB)
#define STEP_SPREAD   6.0
#define STEP_MAX      3
#define MIB           (1024.0 * 1024.0)
#define MIN_RISE      (2.0 * MIB)
#define RISE_SCATTER  4.0

void mdp_detector_course_init(mdp_detector *d)
{
  d->cbucket_len = d->sbucket_len > 0 ? d->cfg.short_window / PER_WINDOW : 0;
}

int mdp_detector_course_advance(mdp_detector *d, uint64_t idx)
{
  if(d->cbucket_len <= 0 || idx <= d->cnbucket)
    return 0;
  uint64_t steps = idx - d->cnbucket;
  if(steps > CRING)
    steps = CRING;
  for(uint64_t s = 0; s < steps; s++) {
    d->chead = (d->chead + 1) % CRING;
    if(d->cfilled < CRING)
      d->cfilled++;
    memset(&d->cring[d->chead], 0, sizeof(d->cring[0]));
  }
  d->cnbucket = idx;
  return 1;
}

void mdp_detector_course_add(mdp_detector *d, uint64_t v)
{
  mdp_detector_point *p = &d->cring[d->chead];
  if(d->cbucket_len <= 0)
    return;
  if(!p->count || v < p->min)
    p->min = v;
  if(!p->count || v > p->max)
    p->max = v;
  p->count++;
}

static void sort_small(double *v, unsigned n)
{
  for(unsigned i = 1; i < n; i++)
    for(unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double x = v[j];
      v[j] = v[j - 1];
      v[j - 1] = x;
    }
}

/* The rises between the buckets that have a value (diff[i], ending at
 * bucket at[i]); how many. */
static unsigned rises(const double *y, const unsigned char *have, unsigned m, double *diff,
                      unsigned *at)
{
  unsigned n = 0;
  int prev = -1;
  for(unsigned k = 0; k < m; k++) {
    if(!have[k])
      continue;
    if(prev >= 0) {
      diff[n] = y[k] - y[prev];
      at[n++] = k;
    }
    prev = (int)k;
  }
  return n;
}

/* A level shift is not growth: a rise between two neighbouring buckets of
 * more than STEP_MIN and STEP_SPREAD times the usual spread of the rises
 * (a cache loaded at once) is taken out of every later point, down to the
 * usual rise, before the course is fitted. At most STEP_MAX shifts, the
 * largest first. */
static void remove_steps(double *y, const unsigned char *have, unsigned m)
{
  double diff[CB], sorted[CB], dev[CB];
  unsigned at[CB], n = rises(y, have, m, diff, at);
  if(n < 5)
    return;
  memcpy(sorted, diff, n * sizeof(diff[0]));
  sort_small(sorted, n);
  double med = sorted[n / 2];
  for(unsigned i = 0; i < n; i++)
    dev[i] = fabs(diff[i] - med);
  sort_small(dev, n);
  double cut = STEP_SPREAD * dev[n / 2];
  if(cut < STEP_MIN)
    cut = STEP_MIN;
  for(unsigned s = 0; s < STEP_MAX; s++) {
    unsigned big = 0;
    for(unsigned i = 1; i < n; i++)
      if(diff[i] > diff[big])
        big = i;
    if(diff[big] - med <= cut)
      return;
    double shift = diff[big] - med;
    for(unsigned k = at[big]; k < m; k++)
      y[k] -= shift;
    diff[big] = med;
  }
}

/* A step that stands out of the local pace: a cache loaded at once on top
 * of a warm-up that is still climbing. Its rise, less the pace of the rises
 * around it (their median), lifts every one of the STEP_AFTER points from
 * it on above every one of the STEP_BEFORE points before it, by more than
 * STEP_MIN and LOCAL_SPREAD times how far rises usually stray from their
 * local pace. A warm-up from start-up rises less at each bucket than at the
 * one before, a leak alike at each, and a sawtooth's one-minute minima fall
 * back within a period: none of them is taken out. Such a step is taken out
 * of every later point, down to the local pace (at most STEP_MAX). */
#define LOCAL_SPREAD 4.0
#define STEP_BEFORE  3
#define STEP_AFTER   3
static void remove_local_steps(double *y, const unsigned char *have, unsigned m)
{
  double diff[CB], pace[CB], dev[CB], excess[CB];
  unsigned at[CB], n = rises(y, have, m, diff, at);
  if(n < 5)
    return;
  /* The local pace at each rise: the median of the rises around it, without
   * it; how far each rise strays from it is the noise a step must beat. */
  for(unsigned i = 0; i < n; i++) {
    double loc[8];
    unsigned nl = 0;
    for(int j = (int)i - 3; j <= (int)i + 3; j++)
      if(j >= 0 && j < (int)n && j != (int)i)
        loc[nl++] = diff[j];
    sort_small(loc, nl);
    pace[i] = loc[nl / 2];
    dev[i] = fabs(diff[i] - pace[i]);
  }
  sort_small(dev, n);
  double cut = LOCAL_SPREAD * dev[n / 2];
  if(cut < STEP_MIN)
    cut = STEP_MIN;
  for(unsigned i = 0; i < n; i++) {
    excess[i] = 0;
    if(i + 1 < STEP_BEFORE || i + STEP_AFTER > n)
      continue;
    /* The lowest point from the step on, over the highest before it. */
    double lo_after = INFINITY, hi_before = -INFINITY;
    for(unsigned j = 0; j < STEP_AFTER; j++)
      if(y[at[i + j]] < lo_after)
        lo_after = y[at[i + j]];
    for(unsigned j = 0; j < STEP_BEFORE; j++) {
      double v = y[at[i - j]] - diff[i - j]; /* the point before rise i - j */
      if(v > hi_before)
        hi_before = v;
    }
    excess[i] = lo_after - hi_before - pace[i];
  }
  for(unsigned s = 0; s < STEP_MAX; s++) {
    unsigned big = 0;
    for(unsigned i = 1; i < n; i++)
      if(excess[i] > excess[big])
        big = i;
    if(excess[big] <= cut)
      return;
    double shift = diff[big] - pace[big];
    for(unsigned k = at[big]; k < m; k++)
      y[k] -= shift;
    excess[big] = 0;
  }
}

int mdp_detector_course_view(const mdp_detector *d, double t, double level, double settle,
                             mdp_detector_course_look *v)
{
  double y[CB];
  unsigned char have[CB];
  mdp_course course;
  unsigned m = d->cfilled ? d->cfilled - 1 : 0; /* closed buckets */

  v->reach = 0;
  v->ruled = 0;
  v->plateau = 0;
  if(d->cbucket_len <= 0 || m < COURSE_MIN)
    return 0;
  if(m > CB)
    m = CB;
  for(unsigned k = 0; k < m; k++) {
    const mdp_detector_point *b = &d->cring[(d->chead + CRING - m + k) % CRING];
    have[k] = b->count > 0;
    y[k] = (double)b->min;
  }
  remove_local_steps(y, have, m);
  remove_steps(y, have, m);
  mdp_course_fit(y, have, m, settle, &course);
  if(course.kind == MDP_COURSE_NONE)
    return 0;
  /* Point k stands for the start of its bucket: where a rising series has
   * its lowest value. */
  double x_now = (t - d->origin) / d->cbucket_len - (double)(d->cnbucket - m);
  double p = mdp_course_plateau(&course);
  if(p > 0)
    v->plateau = p;
  double reach = mdp_course_reach(&course, x_now, level);
  v->reach = reach < 0 ? -1 : reach * d->cbucket_len;
  v->ruled = mdp_course_ruled_out(&course);
#ifdef MDP_URGENT_DEBUG
  fprintf(stderr,
          "veto t=%.1f m=%u kind=%d q=%.4f a=%.1f b=%.1f c=%.2f level=%.1f reach=%.1f F=%.2f\n",
          (t - d->origin) / 60, m, course.kind, course.q, course.a / 1048576, course.b / 1048576,
          course.c / 1048576, level / 1048576, v->reach / 60, v->ruled);
#endif
  return 1;
}

/* Median max - min of the closed buckets of the course ring, less what a
 * trend of `slope` bytes per bucket adds within one. */
static double course_excursion(const mdp_detector *d, unsigned m, double slope)
{
  double spread[CB];
  unsigned n = 0;
  for(unsigned k = 0; k < m; k++) {
    const mdp_detector_point *b = &d->cring[(d->chead + CRING - m + k) % CRING];
    if(b->count)
      spread[n++] = (double)(b->max - b->min);
  }
  if(n < 3)
    return 0;
  sort_small(spread, n);
  double e = spread[n / 2] - fabs(slope);
  return e > 0 ? e : 0;
}

static int early_fail(mdp_detector *d)
{
  d->cstreak = 0;
  return 0;
}

int mdp_detector_course_early(mdp_detector *d, double t, mdp_decision *ev)
{
  const mdp_detector_config *c = &d->cfg;
  double y[CB];
  unsigned char have[CB];
  mdp_course course;
  unsigned m = d->cfilled ? d->cfilled - 1 : 0;

  memset(ev, 0, sizeof(*ev));
  ev->time_to_limit = -1;
  /* Only while no held level exists to tell new growth from a climb back
   * (the long ring has not filled: the episode's first GrowthWindow). */
  if(!c->memory_limit || d->cbucket_len <= 0 || m < EARLY_MIN || d->filled > NB_LONG)
    return early_fail(d);
  if(m > CB)
    m = CB;
  double lo = -1, first = -1, last = -1, jump = 0, prev = -1;
  for(unsigned k = 0; k < m; k++) {
    const mdp_detector_point *b = &d->cring[(d->chead + CRING - m + k) % CRING];
    have[k] = b->count > 0;
    y[k] = (double)b->min;
    if(!have[k])
      continue;
    if(lo < 0 || y[k] < lo)
      lo = y[k];
    if(first < 0)
      first = y[k];
    last = y[k];
    if(prev >= 0 && y[k] - prev > jump)
      jump = y[k] - prev;
    prev = y[k];
  }
  /* Most series are nowhere near: skip the fit unless the raw minima have
   * grown by half the share of the room the rule asks for. */
  if(last - lo < URGENCY_SHARE / 2 * ((double)c->memory_limit - last) || last - first < MIN_RISE)
    return early_fail(d);
  double exc = course_excursion(d, m, (last - first) / m);
  double level = (double)c->memory_limit - exc;
  double settle =
      (c->near_limit > 0 && c->near_limit < 1 ? c->near_limit : 1) * (double)c->memory_limit - exc;
  remove_local_steps(y, have, m);
  mdp_course_fit(y, have, m, settle, &course);
  if(course.kind == MDP_COURSE_NONE)
    return early_fail(d);

  double len = d->cbucket_len;
  double x_now = (t - d->origin) / len - (double)(d->cnbucket - m);
  double envelope = mdp_course_at(&course, x_now);
  double slope = mdp_course_slope(&course, x_now) / len;
  double rise = envelope - mdp_course_at(&course, course.first);
  double room = level - envelope;
  double reach = mdp_course_reach(&course, x_now, level);
  double plateau = mdp_course_plateau(&course);

  ev->time = t;
  ev->envelope = envelope > 0 ? (uint64_t)envelope : 0;
  ev->slope = slope;
  ev->slope_recent = slope;
  ev->slope_before = mdp_course_slope(&course, course.first) / len;
  ev->window = (double)m * len;
  ev->urgent = 1;
  ev->plateau = plateau > 0 ? plateau : 0;
  for(unsigned k = 0; k < m; k++)
    ev->samples += d->cring[(d->chead + CRING - m + k) % CRING].count;
  if(reach >= 0)
    ev->time_to_limit = reach * len;

  int growing = slope > 0 && reach >= 0 && ev->time_to_limit <= NEAR_SHARE * c->horizon &&
                rise >= MIN_RISE && rise >= RISE_SCATTER * course.scatter &&
                jump <= STEP_SHARE * rise && envelope - lo >= URGENCY_SHARE * room &&
                mdp_course_ruled_out(&course) >= RULED_OUT &&
                (c->min_growth_rate <= 0 || slope >= c->min_growth_rate);
#ifdef MDP_URGENT_DEBUG
  fprintf(
      stderr,
      "early t=%.1f m=%u kind=%d tau=%.1f env=%.0f slope=%.1f reach=%.1f rise=%.0f sc=%.1f "
      "jump=%.0f grown=%.0f need=%.0f F=%.2f fails=%d%d%d%d%d%d%d\n",
      (t - d->origin) / 60, m, course.kind, course.q > 0 && course.q < 1 ? -1 / log(course.q) : 0,
      envelope / MIB, slope * 60 / MIB, ev->time_to_limit / 60, rise / MIB, course.scatter / MIB,
      jump / MIB, (envelope - lo) / MIB, URGENCY_SHARE * room / MIB, mdp_course_ruled_out(&course),
      !(slope > 0 && reach >= 0), !(ev->time_to_limit <= NEAR_SHARE * c->horizon),
      !(rise >= MIN_RISE), !(rise >= RISE_SCATTER * course.scatter), !(jump <= STEP_SHARE * rise),
      !(envelope - lo >= URGENCY_SHARE * room), !(mdp_course_ruled_out(&course) >= RULED_OUT));
#endif
  if(!growing)
    return early_fail(d);
  /* The status line shows the growth from the first passing evaluation. */
  d->sgrowing = 1;
  d->sslope = slope;
  d->seval = *ev;
  return ++d->cstreak >= (mdp_course_ruled_out(&course) >= FIRM ? CONFIRM - 1 : CONFIRM);
}
