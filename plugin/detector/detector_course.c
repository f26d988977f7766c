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
#include "robust.h"

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
/* The least noise the knee test assumes (mdp_course_knee): a one-minute
 * bucket's minimum of a 15 MiB/min leak sampled every 10 s moves by up to
 * a sample's 2.5 MiB with where the samples fall. */
#define KNEE_SD       (1.5 * MIB)

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

/* Where t falls in the open bucket, in 65536ths of it. */
static uint16_t bucket_at(const mdp_detector *d, double t)
{
  double f = (t - d->origin) / d->cbucket_len - (double)d->cnbucket;
  return f <= 0 ? 0 : f >= 1 ? UINT16_MAX : (uint16_t)(f * 65536);
}

void mdp_detector_course_add(mdp_detector *d, double t, uint64_t v)
{
  mdp_detector_point *p = &d->cring[d->chead];
  if(d->cbucket_len <= 0)
    return;
  uint16_t at = bucket_at(d, t);
  if(!p->count || v < p->min) {
    p->min = v;
    p->min_at = at;
  }
  if(!p->count || v > p->max)
    p->max = v;
  /* A fall below both samples before it (a spike falls back only to the
   * sample before it). */
  if(d->samples >= 2) {
    uint64_t before = d->last_v < d->prev_v ? d->last_v : d->prev_v;
    double fall = before > v ? (double)(before - v) : 0;
    if(fall > p->fall) {
      p->fall = (float)fall;
      p->fall_at = at;
      p->trough = (float)v;
    }
  }
  p->count++;
}

/* A GC sawtooth in the course ring: each drop (a bucket whose largest fall
 * is at least DROP_MIN and DROP_SHARE of the largest) starts a tooth, and
 * between drops the minima ride the tooth's ramp, not the envelope. */
#define DROP_MIN       (8.0 * MIB)
#define DROP_SHARE     0.5
#define DROP_NOISE     3.0
#define SAW_CONSISTENT 0.5
#define LONE_DROP      2.0

typedef struct {
  unsigned drops;   /* drops found */
  double period;    /* mean spacing of the drops, buckets; 0 if fewer than 2 */
  double ramp;      /* the sawtooth's own rise per bucket, taken out; 0 if none */
  double last_drop; /* x of the last drop; -1 if none */
  int stands;       /* the largest drop stands out of the usual falls */
} saw_info;

static double det3(const double a[3][3])
{
  return a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) -
         a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
         a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
}

/* Solves the 3x3 symmetric system m x = r by Cramer's rule; 0 if singular. */
static int solve3(const double m[3][3], const double r[3], double x[3])
{
  double det = det3(m);
  if(!(fabs(det) > 1e-9 * fabs(m[0][0] * m[1][1] * m[2][2])))
    return 0;
  for(int c = 0; c < 3; c++) {
    double a[3][3];
    memcpy(a, m, sizeof(a));
    for(int i = 0; i < 3; i++)
      a[i][c] = r[i];
    x[c] = det3(a) / det;
  }
  return 1;
}

/* The buckets of the course ring as a sawtooth sees them: where each
 * point lies (x, in buckets from the first), its value (a drop's trough,
 * else the minimum), whether it holds a drop, and its phase in its tooth. */
typedef struct {
  double x[CB], y[CB], phase[CB], falls[CB];
  unsigned char drop[CB];
  double first_drop, dt; /* x of the first drop; the sampling interval */
} saw_points;

static const mdp_detector_point *course_bucket(const mdp_detector *d, unsigned m, unsigned k)
{
  return &d->cring[(d->chead + CRING - m + k) % CRING];
}

/* Finds the drops of the m closed buckets (fills sp and si->drops,
 * si->last_drop, si->stands); the raw minima go to y and have. */
static void find_drops(const mdp_detector *d, unsigned m, double *y, unsigned char *have,
                       saw_points *sp, saw_info *si)
{
  double biggest = 0, second = 0, usual[CB];
  unsigned nu = 0, nd = 0;

  sp->dt = 0;
  sp->first_drop = -1;
  for(unsigned k = 0; k < m; k++) {
    const mdp_detector_point *b = course_bucket(d, m, k);
    have[k] = b->count > 0;
    y[k] = sp->y[k] = (double)b->min;
    sp->x[k] = k + b->min_at / 65536.0;
    sp->drop[k] = 0;
    if(!have[k])
      continue;
    usual[nu++] = b->fall;
    sp->dt += 1.0 / b->count;
    second = b->fall > biggest ? biggest : fmax(second, b->fall);
    biggest = fmax(biggest, b->fall);
  }
  if(nu)
    sp->dt /= nu;
  if(biggest < DROP_MIN)
    return;
  for(unsigned k = 0; k < m; k++) {
    const mdp_detector_point *b = course_bucket(d, m, k);
    if(!have[k] || b->fall < DROP_SHARE * biggest || b->fall < DROP_MIN)
      continue;
    sp->drop[k] = 1;
    sp->y[k] = b->trough;
    sp->x[k] = k + b->fall_at / 65536.0;
    sp->falls[nd++] = b->fall;
    if(nd == 1)
      sp->first_drop = sp->x[k];
    si->last_drop = sp->x[k];
  }
  si->drops = nd;
  /* A drop that stands out of the usual falls (noise falls about as far in
   * every bucket) and of the next largest (docs/detector.md, GC sawtooth). */
  si->stands = nu >= 3 && biggest >= DROP_NOISE * mdp_robust_median(usual, nu) &&
               biggest >= LONE_DROP * second;
}

/* Each point's phase in its tooth (-1 when unknown): since the last drop
 * at or before it (a drop's own bucket holds the trough: phase 0); before
 * the first drop, since one period before it, if that is not after the
 * point. Returns the ramp per bucket that a least-squares fit of level,
 * slope and ramp * phase finds in the points (0 when it cannot say). */
static double tooth_phases(saw_points *sp, const unsigned char *have, unsigned m, double period)
{
  double last = -1, m3[3][3] = {{0}}, r3[3] = {0}, coef[3];
  for(unsigned k = 0; k < m; k++) {
    if(sp->drop[k])
      last = sp->x[k];
    sp->phase[k] = -1;
    if(!have[k])
      continue;
    if(last >= 0)
      sp->phase[k] = sp->x[k] - last;
    else if(sp->x[k] >= sp->first_drop - period)
      sp->phase[k] = sp->x[k] - (sp->first_drop - period);
    if(sp->phase[k] < 0)
      continue;
    double v[3] = {1, sp->x[k], sp->phase[k]};
    for(int i = 0; i < 3; i++) {
      r3[i] += v[i] * sp->y[k];
      for(int j = 0; j < 3; j++)
        m3[i][j] += v[i] * v[j];
    }
  }
  return m3[0][0] >= 5 && solve3(m3, r3, coef) ? coef[2] : 0;
}

/* Whether the drops come as a sawtooth's do: every gap between two drops
 * within TEETH_SLACK of the median gap, or of a whole multiple of it (a
 * tooth whose drop fell short of the bar). Noise that falls far now and
 * then drops at random gaps. Two drops have one gap: nothing to compare. */
#define TEETH_SLACK 0.25
static int drops_periodic(const saw_points *sp, unsigned m, unsigned nd)
{
  double gap[CB], sorted[CB], prev = -1;
  unsigned n = 0;
  if(nd < 3)
    return 1;
  for(unsigned k = 0; k < m; k++) {
    if(!sp->drop[k])
      continue;
    if(prev >= 0)
      gap[n++] = sp->x[k] - prev;
    prev = sp->x[k];
  }
  memcpy(sorted, gap, n * sizeof(gap[0]));
  mdp_robust_sort(sorted, n);
  double med = sorted[n / 2];
  if(!(med > 0))
    return 0;
  for(unsigned i = 0; i < n; i++) {
    double r = gap[i] / med, whole = floor(r + 0.5);
    if(whole < 1 || fabs(r - whole) > TEETH_SLACK)
      return 0;
  }
  return 1;
}

/* The course points of the last m closed buckets, oldest first: each
 * bucket's minimum (have[k] 0 for an empty one). Under a sawtooth (two
 * drops or more, docs/detector.md "The early path") a drop's trough, and
 * every other minimum less the ramp its tooth climbed since its drop; the
 * ramp is what the drops gave back over the teeth between them (each drop
 * returns what its ramp climbed over the tooth, less the ramp of the two
 * samples the fall is measured over, whatever the envelope did), and is
 * used only if the minima do climb it between drops. Each point is then
 * moved from where it was seen to its bucket's start along the points'
 * slope. */
static void course_points(const mdp_detector *d, unsigned m, double *y, unsigned char *have,
                          saw_info *si)
{
  saw_points sp;

  memset(si, 0, sizeof(*si));
  si->last_drop = -1;
  find_drops(d, m, y, have, &sp, si);
  if(si->drops < 2)
    return;
  unsigned nd = si->drops;
  if(!drops_periodic(&sp, m, nd))
    return;
  si->period = (si->last_drop - sp.first_drop) / (nd - 1);
  double fitted = tooth_phases(&sp, have, m, si->period);
  double climbed = 0;
  for(unsigned i = 1; i < nd; i++)
    climbed += sp.falls[i];
  double teeth = si->last_drop - sp.first_drop - 2 * sp.dt * (nd - 1);
  if(!(teeth > 0))
    return;
  double ramp = climbed / teeth;
  /* Noise falls as far as it rises: its minima climb no ramp. */
  if(!(fitted > 0 && fitted >= SAW_CONSISTENT * ramp))
    return;
  si->ramp = ramp;
  double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;
  for(unsigned k = 0; k < m; k++) {
    if(!have[k] || sp.phase[k] < 0)
      continue;
    sp.y[k] -= ramp * sp.phase[k];
    sx += sp.x[k];
    sy += sp.y[k];
    sxx += sp.x[k] * sp.x[k];
    sxy += sp.x[k] * sp.y[k];
    n++;
  }
  double slope = n * sxx - sx * sx > 0 ? (n * sxy - sx * sy) / (n * sxx - sx * sx) : 0;
  for(unsigned k = 0; k < m; k++) {
    if(have[k] && sp.phase[k] < 0)
      have[k] = 0;
    else if(have[k])
      y[k] = sp.y[k] - slope * (sp.x[k] - k);
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
  mdp_robust_sort(sorted, n);
  double med = sorted[n / 2];
  for(unsigned i = 0; i < n; i++)
    dev[i] = fabs(diff[i] - med);
  mdp_robust_sort(dev, n);
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
    mdp_robust_sort(loc, nl);
    pace[i] = loc[nl / 2];
    dev[i] = fabs(diff[i] - pace[i]);
  }
  mdp_robust_sort(dev, n);
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

/* Where course c reaches level, in buckets from x (-1: never). A plateau
 * above settle (NearLimit's level) is no levelling off: along it the level
 * comes later than at its slope, or never, only by a bend the noise may
 * have made (a steady leak fitted as a plateau at 90-175 minutes' time
 * constant reached the limit in 78 minutes where its slope said 55; one
 * under a warm-up's tail, standard-1007 fast-leak-031 of the tune draws,
 * levelled off between NearLimit and the limit). Once every plateau below
 * NearLimit is ruled out at 99 % (LINE_RULED_OUT: at RULED_OUT's 90 % two
 * more warm-ups of the check set fired), such a course is projected at its
 * present slope, as a steady one, when that is sooner. */
#define LINE_RULED_OUT 1.0
static double course_reach(const mdp_course *c, double x, double level, double settle)
{
  double reach = mdp_course_reach(c, x, level);
  double slope = mdp_course_slope(c, x), room = level - mdp_course_at(c, x);
  if(c->kind == MDP_COURSE_PLATEAU && mdp_course_plateau(c) > settle && slope > 0 && room > 0 &&
     mdp_course_ruled_out(c) >= LINE_RULED_OUT && (reach < 0 || room / slope < reach))
    reach = room / slope;
  return reach;
}

int mdp_detector_course_view(const mdp_detector *d, double t, double level, double settle,
                             mdp_detector_course_look *v)
{
  double y[CB];
  unsigned char have[CB];
  mdp_course course;
  unsigned m = d->cfilled ? d->cfilled - 1 : 0; /* closed buckets */

  v->reach = v->ruled = v->plateau = 0;
  if(d->cbucket_len <= 0 || m < COURSE_MIN)
    return 0;
  if(m > CB)
    m = CB;
  for(unsigned k = 0; k < m; k++) {
    const mdp_detector_point *b = course_bucket(d, m, k);
    have[k] = b->count > 0;
    y[k] = (double)b->min;
  }
  remove_local_steps(y, have, m);
  remove_steps(y, have, m);
  mdp_course_fit(y, have, m, settle, &course);
  if(course.kind == MDP_COURSE_NONE)
    return 0;
  /* Point k stands for the start of its bucket (a rising series' lowest). */
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
  /* The plateaus are ruled out only if also on the early path's points,
   * before and after its local steps come out: a warm-up's minima under a
   * sawtooth or with caches can look straight where those level off, and
   * noise taken for steps bends a smooth warm-up into a jump and a line
   * (docs/detector.md). Once one rules nothing out, the least stays 0. */
  saw_info si;
  course_points(d, m, y, have, &si);
  for(int steps_out = 0; steps_out < 2 && v->ruled > 0; steps_out++) {
    if(steps_out)
      remove_local_steps(y, have, m);
    mdp_course_fit(y, have, m, settle, &course);
    if(course.kind != MDP_COURSE_NONE && mdp_course_ruled_out(&course) < v->ruled)
      v->ruled = mdp_course_ruled_out(&course);
  }
  return 1;
}

/* Median max - min of the closed buckets of the course ring, less what a
 * trend of `slope` bytes per bucket adds within one. */
static double course_excursion(const mdp_detector *d, unsigned m, double slope)
{
  double spread[CB];
  unsigned n = 0;
  for(unsigned k = 0; k < m; k++) {
    const mdp_detector_point *b = course_bucket(d, m, k);
    if(b->count)
      spread[n++] = (double)(b->max - b->min);
  }
  if(n < 3)
    return 0;
  mdp_robust_sort(spread, n);
  double e = spread[n / 2] - fabs(slope);
  return e > 0 ? e : 0;
}

static int early_fail(mdp_detector *d)
{
  d->cstreak = 0;
  d->cgrown = 0;
  return 0;
}

/* One look of the early path at the points (raw: before the steps came
 * out): fits their course and fills ev; 1 when the course passes (every
 * check but the growth); lk->grown and lk->firm say the rest. */
typedef struct {
  const double *raw, *y;     /* the points, before and after the steps came out */
  const unsigned char *have; /* which of the m points to use */
  unsigned m, from;          /* points; the first used (0, or the knee) */
  double lo, level, settle;  /* the lowest point; the limit and NearLimit's level */
  int grown, firm;           /* out: grown its share of the room; plateaus ruled out at FIRM */
} early_look;

static int early_judge(mdp_detector *d, double t, early_look *lk, mdp_decision *ev)
{
  const mdp_detector_config *c = &d->cfg;
  const double *raw = lk->raw, *y = lk->y, lo = lk->lo, level = lk->level;
  const unsigned char *have = lk->have;
  unsigned m = lk->m;
  mdp_course course;
  double jump = 0, prev = -1;
  for(unsigned k = 0; k < m; k++) {
    if(!have[k])
      continue;
    if(prev >= 0 && raw[k] - prev > jump)
      jump = raw[k] - prev;
    prev = raw[k];
  }
  memset(ev, 0, sizeof(*ev));
  ev->time_to_limit = -1;
  mdp_course_fit(y, have, m, lk->settle, &course);
  if(course.kind == MDP_COURSE_NONE)
    return 0;

  double len = d->cbucket_len;
  double x_now = (t - d->origin) / len - (double)(d->cnbucket - m);
  double envelope = mdp_course_at(&course, x_now);
  double slope = mdp_course_slope(&course, x_now) / len;
  double rise = envelope - mdp_course_at(&course, course.first);
  double room = level - envelope;
  double reach = course_reach(&course, x_now, level, lk->settle);
  double plateau = mdp_course_plateau(&course);

  ev->time = t;
  ev->envelope = envelope > 0 ? (uint64_t)envelope : 0;
  ev->slope = slope;
  ev->slope_recent = slope;
  ev->slope_before = mdp_course_slope(&course, course.first) / len;
  ev->window = (double)(m - lk->from) * len;
  ev->urgent = 1;
  ev->plateau = plateau > 0 ? plateau : 0;
  for(unsigned k = 0; k < m; k++)
    ev->samples += course_bucket(d, m, k)->count;
  if(reach >= 0)
    ev->time_to_limit = reach * len;

  int course_ok = slope > 0 && reach >= 0 && ev->time_to_limit <= NEAR_SHARE * c->horizon &&
                  rise >= MIN_RISE && rise >= RISE_SCATTER * course.scatter &&
                  jump <= STEP_SHARE * rise && mdp_course_ruled_out(&course) >= RULED_OUT &&
                  (c->min_growth_rate <= 0 || slope >= c->min_growth_rate);
  int grown = envelope - lo >= URGENCY_SHARE * room;
  lk->grown = grown;
  lk->firm = mdp_course_ruled_out(&course) >= FIRM;
#ifdef MDP_URGENT_DEBUG
  fprintf(
      stderr,
      "early t=%.1f m=%u kind=%d tau=%.1f env=%.0f slope=%.1f reach=%.1f rise=%.0f sc=%.1f "
      "jump=%.0f grown=%.0f need=%.0f F=%.2f from=%u fails=%d%d%d%d%d%d%d\n",
      (t - d->origin) / 60, m, course.kind, course.q > 0 && course.q < 1 ? -1 / log(course.q) : 0,
      envelope / MIB, slope * 60 / MIB, ev->time_to_limit / 60, rise / MIB, course.scatter / MIB,
      jump / MIB, (envelope - lo) / MIB, URGENCY_SHARE * room / MIB, mdp_course_ruled_out(&course),
      lk->from, !(slope > 0 && reach >= 0), !(ev->time_to_limit <= NEAR_SHARE * c->horizon),
      !(rise >= MIN_RISE), !(rise >= RISE_SCATTER * course.scatter), !(jump <= STEP_SHARE * rise),
      !(envelope - lo >= URGENCY_SHARE * room), !(mdp_course_ruled_out(&course) >= RULED_OUT));
#endif
  return course_ok;
}

int mdp_detector_course_early(mdp_detector *d, double t, mdp_decision *ev)
{
  const mdp_detector_config *c = &d->cfg;
  double y[CB];
  unsigned char have[CB];
  unsigned m = d->cfilled ? d->cfilled - 1 : 0;

  memset(ev, 0, sizeof(*ev));
  ev->time_to_limit = -1;
  /* Only while no held level exists to tell new growth from a climb back
   * (the long ring has not filled: the episode's first GrowthWindow). */
  if(!c->memory_limit || d->cbucket_len <= 0 || m < EARLY_MIN || d->filled > NB_LONG)
    return early_fail(d);
  if(m > CB)
    m = CB;
  saw_info si;
  course_points(d, m, y, have, &si);
  /* One drop: a sawtooth whose period the ring has not seen yet, whose ramp
   * may be all there is. */
  if(si.drops == 1 && si.stands)
    return early_fail(d);
#ifdef MDP_URGENT_DEBUG
  fprintf(stderr, "saw t=%.1f drops=%u P=%.1f ramp=%.1f ld=%.1f\n", (t - d->origin) / 60, si.drops,
          si.period, si.ramp / MIB, si.last_drop);
#endif
  double lo = -1, first = -1, last = -1;
  for(unsigned k = 0; k < m; k++) {
    if(!have[k])
      continue;
    if(lo < 0 || y[k] < lo)
      lo = y[k];
    if(first < 0)
      first = y[k];
    last = y[k];
  }
  /* Most series are nowhere near: no fit before half the growth asked. */
  if(last - lo < URGENCY_SHARE / 2 * ((double)c->memory_limit - last) || last - first < MIN_RISE)
    return early_fail(d);
  double exc = course_excursion(d, m, (last - first) / m);
  double level = (double)c->memory_limit - exc;
  double settle =
      (c->near_limit > 0 && c->near_limit < 1 ? c->near_limit : 1) * (double)c->memory_limit - exc;
  double raw[CB];
  memcpy(raw, y, m * sizeof(y[0]));
  remove_local_steps(y, have, m);
  early_look lk = {raw, y, have, m, 0, lo, level, settle, 0, 0};
  int course_ok = early_judge(d, t, &lk, ev);
  /* A leak that started after a warm-up: the course since the last change
   * of slope, when the whole ring's does not pass. */
  unsigned knee = course_ok ? 0 : mdp_course_knee(y, have, m, KNEE_SD);
  if(knee) {
    for(unsigned k = 0; k < knee; k++)
      have[k] = 0;
    lk.from = knee;
    course_ok = early_judge(d, t, &lk, ev);
  }
  /* The whole ring's plateaus, ruled out on the points with their local
   * steps out, must be on the points as seen too (see the view). */
  mdp_course as_seen;
  if(course_ok && !knee)
    mdp_course_fit(raw, have, m, settle, &as_seen);
  if(!course_ok || (!knee && mdp_course_ruled_out(&as_seen) < RULED_OUT))
    return early_fail(d);
  /* The status line shows the growth from the first evaluation whose
   * course passes. The course must pass CONFIRM looks in a row, the growth
   * since the lowest level need only be there at the last: it is a clock
   * (about T/5 for a steady leak), not evidence that wants repeating. The
   * CONFIRM - 1 firm looks must both have grown enough. */
  d->sgrowing = 1;
  d->sslope = ev->slope;
  d->seval = *ev;
  ++d->cstreak;
  if(!lk.grown) {
    d->cgrown = 0;
    return 0;
  }
  ++d->cgrown;
  return d->cstreak >= CONFIRM || (lk.firm && d->cgrown >= CONFIRM - 1);
}
