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
#include "detector_steps.h"
#include "robust.h"

#define CB      MDP_DETECTOR_COURSE_BUCKETS
#define CRING   (MDP_DETECTOR_COURSE_BUCKETS + 1)
#define NB_LONG MDP_DETECTOR_BUCKETS

_Static_assert(CB <= MDP_COURSE_MAX_POINTS, "the course fit must hold the ring");

/* Buckets per ShortWindow (1 min at the default; the ring spans twice it). */
#define PER_WINDOW      20
/* Closed buckets the course needs before it can say anything. */
#define COURSE_MIN      6
/* The early path (mdp_detector_course_early): at least EARLY_MIN closed
 * buckets (8 min at the default); the course reaches the limit within
 * NEAR_SHARE of Horizon (1 h at the default); the envelope has grown, since
 * the lowest level seen, by URGENCY_SHARE of the room left (a steady leak
 * that reaches the limit T after it starts fires about T/5 after it
 * starts); no single rise between two buckets is more than STEP_SHARE of
 * the rise (growth, not a step); every course that levels off below where
 * near-limit would fire is ruled out (RULED_OUT of the F ratio's 99 %
 * point: about its 70 % point at these degrees of freedom; on points taken
 * less the pace, a bar at the 90 % point cost leaks and quieted no
 * warm-up: docs/detector.md); and CONFIRM of the last CONFIRM_OF
 * evaluations agree, the last of them among them (persistence: three looks
 * a minute apart instead of two at 99 % fire fewer warm-ups and as many
 * leaks; three of four rather than three in a row since the second stop of
 * 2026-12-06: a noisy leak's plateaus are ruled out near the bar, and one
 * look a hair under it began the three again). */
#define EARLY_MIN       8
#define NEAR_SHARE      (1.0 / 6)
#define URGENCY_SHARE   0.25
#define STEP_SHARE      0.4
#define CONFIRM         3
#define CONFIRM_OF      4
/* ... or CONFIRM - 1 when every such plateau is ruled out at FIRM times the
 * 99 % point: a leak whose course is plainly straight gains a minute. */
#define FIRM            4.0
#define RULED_OUT       0.2
/* A plateau above the limit with a time constant of LONG_TAU times the points'
 * span or more is projected at its slope (course_reach; 6 until 2026-12-06). */
#define LONG_TAU        5.0
#define MIB             (1024.0 * 1024.0)
#define MIN_RISE        2.0 /* and KNEE_SD: mdp_detector_unit */
#define RISE_SCATTER    4.0
/* The least noise the knee test assumes (mdp_course_knee): a one-minute bucket's
 * minimum of a 15 MiB/min leak sampled every 10 s moves by up to a sample's
 * 2.5 MiB with where the samples fall. */
#define KNEE_SD         1.5
/* A knee once found stands for KNEE_HOLD looks more (course buckets) while
 * no new one is found, as long as KNEE_KEEP points (the run the knee test
 * asks for) follow it in the ring. Each look's knee test asks that the
 * last points lie on one line: one point the sawtooth or the noise puts
 * low (a bucket whose least sample is a trough's) broke the run, the look
 * fell back to the whole ring's course (a warm-up's bend) and the streak
 * of looks began again. */
#define KNEE_KEEP       6
#define KNEE_HOLD       2
/* The points a settling course's tail must run straight (early_judge): as
 * many as the knee test's run (5 fired two more warm-ups of the `check`
 * draws, 8 cost leaks and quieted none). */
#define SETTLE_TAIL     6
/* A sawtooth whose period is LATE_SAW_PERIOD buckets or more must show
 * LATE_SAW_DROPS drops before a course may start late (the early path's
 * look, below). */
#define LATE_SAW_PERIOD 6.0
#define LATE_SAW_DROPS  3

void mdp_detector_course_init(mdp_detector *d)
{
  d->cbucket_len = d->sbucket_len > 0 ? d->cfg.short_window / PER_WINDOW : 0;
}

double mdp_detector_course_samples(const mdp_detector_config *cfg, double interval)
{
  return cfg->short_window > 0 && interval > 0 ? cfg->short_window / PER_WINDOW / interval : 0;
}

/* The course of the points, with NOISE_FLOOR: the least noise per point
 * the fit's F tests assume. Where the samples' noise is slight, what is
 * left of a fit is the shape's own error (a GC sawtooth's drop, a cache's
 * part-minute, the points' small bends), and a course one parameter more
 * flexible beat a plateau "at 99 %": a plain warm-up of 16 minutes' time
 * constant under +-2 MiB of noise and a 7.5 MiB sawtooth was fitted as
 * settling (a line under a four-minute warm-up) at 6.3 times the 99 %
 * point and fired at minute 13 (held-out-9003 warmup-011 of the 9001-9060
 * draws); with a floor of 1 MiB it stays a plateau (since the second stop
 * of 2026-12-06; 2 MiB cost leaks). */
#define NOISE_FLOOR 1.0 /* mdp_detector_unit */
static void fit(const double *y, const unsigned char *have, unsigned m, double settle, double u,
                mdp_course *out)
{
  mdp_course_opts o = {settle, NOISE_FLOOR * u, u, 0, NULL};
  mdp_course_fit_with(y, have, m, &o, out);
}

/* The short window's veto asks its plateaus to be ruled out also with the
 * VIEW_CACHES largest rises taken down to the median rise (mdp_detector_steps_lower):
 * the course without two caches loaded at once. Two caches of 31-36 MiB loaded 8
 * minutes apart on a warm-up of an hour's time constant climbing
 * 1.4 MiB/min made its course speed up, and it fired at minute 84
 * (standard-9010 warmup-075 of the 9001-9060 draws); a leak's rises are
 * alike, and without its two largest it is still a leak. Not on the early
 * path: there a fast leak has 8-15 points, and its two largest rises are
 * much of its growth (83 of 2700 leaks late there, 27 without). */
#define VIEW_CACHES 2

/* Where course c reaches level, in buckets from x (-1: never). A plateau
 * above settle (NearLimit's level) is no levelling off: along it the level
 * comes later than at its slope, or never, only by a bend the noise may
 * have made (a steady leak fitted as a plateau at 90-175 minutes' time
 * constant reached the limit in 78 minutes where its slope said 55; one
 * under a warm-up's tail, standard-1007 fast-leak-031 of the tune draws,
 * levelled off between NearLimit and the limit). Once every plateau below
 * NearLimit is ruled out at 99 % (LINE_RULED_OUT: at 0.4 of it, about its
 * 90 % point, two more warm-ups of the check set fired), such a course is projected at its
 * present slope, as a steady one, when that is sooner. So is a plateau
 * above the level itself whose time constant is LONG_TAU times the span
 * (in points) of what was fitted or more, whatever is ruled out: it bends
 * the points by little more than their noise, and says that the course
 * reaches the level, not reliably when (a 13 MiB/min leak under 54 MiB
 * teeth, fitted at minute 12 as a 77-minute plateau at 1.3 GiB, reached
 * the limit in 81 minutes that way and in 53 at its slope; a 14 MiB/min
 * leak under 11 MiB teeth of 291 s, fitted at minute 10 as a plateau of
 * 60 points' time constant over 10 points, reached it in 105 minutes so
 * and in 49 at its slope, and was caught 12 s late at six times the
 * span). */
#define LINE_RULED_OUT 1.0
static double course_reach(const mdp_course *c, double x, double level, double settle, double span)
{
  double reach = mdp_course_reach(c, x, level);
  double slope = mdp_course_slope(c, x), room = level - mdp_course_at(c, x);
  double plateau = mdp_course_plateau(c);
  int settles_above = plateau > settle && mdp_course_ruled_out(c) >= LINE_RULED_OUT;
  int long_above = plateau > level && -1 / log(c->q) >= LONG_TAU * span;
  if((settles_above || long_above) && slope > 0 && room > 0 && (reach < 0 || room / slope < reach))
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
    const mdp_detector_point *b = mdp_detector_course_bucket(d, m, k);
    have[k] = b->count > 0;
    y[k] = (double)b->min;
  }
  double u = mdp_detector_unit(d);
  mdp_detector_steps_remove_local(y, have, m, u);
  mdp_detector_steps_remove(y, have, m, u);
  fit(y, have, m, settle, u, &course);
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
   * before and after its local steps come out, and with its VIEW_CACHES
   * largest rises taken down to the median rise: a warm-up's minima under
   * a sawtooth or with caches can look straight where those level off,
   * noise taken for steps bends a smooth warm-up into a jump and a line,
   * and two caches loaded late on a slow warm-up make it speed up
   * (docs/detector.md). Once one rules nothing out, the least stays 0. */
  mdp_detector_saw si;
  mdp_detector_course_points(d, m, y, have, &si);
  for(int pass = 0; pass < 3 && v->ruled > 0; pass++) {
    if(pass == 1)
      mdp_detector_steps_remove_local(y, have, m, u);
    if(pass == 2)
      mdp_detector_steps_lower(y, have, m, VIEW_CACHES, u);
    fit(y, have, m, settle, u, &course);
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
    const mdp_detector_point *b = mdp_detector_course_bucket(d, m, k);
    if(b->count)
      spread[n++] = b->spread;
  }
  if(n < 3)
    return 0;
  mdp_robust_sort(spread, n);
  double e = spread[n / 2] - fabs(slope);
  return e > 0 ? e : 0;
}

/* Records one early evaluation: whether its course passed. */
static void early_look_was(mdp_detector *d, int passed)
{
  d->clooks = ((d->clooks << 1) | (passed ? 1u : 0u)) & ((1u << CONFIRM_OF) - 1);
}

static int early_fail(mdp_detector *d)
{
  early_look_was(d, 0);
  d->cgrown = 0;
  return 0;
}

/* One look of the early path at the points (raw: before the steps came
 * out): fits their course and fills ev; 1 when the course passes (every
 * check but the growth); lk->grown and lk->firm say the rest. */
typedef struct {
  const double *raw, *y;       /* the points, before and after the steps came out */
  const unsigned char *have;   /* which of the m points to use */
  unsigned m, from;            /* points; the first used (0, or the knee) */
  double lo, level, settle;    /* the lowest point; the limit and NearLimit's level */
  int grown, firm;             /* out: grown its share of the room; plateaus ruled out at FIRM */
  int late_ok;                 /* courses may start late (fit_look) */
  int late;                    /* out: the course's slope starts late (course.h) */
  const unsigned char *jumped; /* m flags (mdp_detector_steps_jumped) */
} early_look;

/* The course of a look's points (y: lk->y or lk->raw; have: lk->have or
 * the knee's), as fit, also trying courses whose slope starts late
 * (course.h) when late is not 0: a leak that starts while a warm-up still
 * runs. The early path's own look only, and its check on the points as
 * seen when that look's course started late: a settling course from the
 * first point fitted such a leak worse than a plateau (the slope it lacked
 * before the start bent it), and a 13.2 MiB/min leak that started 5
 * minutes into a 180 MiB warm-up of 3.9 minutes' time constant, asked by
 * minute 17, was caught at minute 24 (standard-9004 fast-leak-003 of the
 * 9001-9060 draws; 12 with it). */
static void fit_look(const early_look *lk, const double *y, const unsigned char *have, double u,
                     int late, mdp_course *out)
{
  mdp_course_opts o = {lk->settle, NOISE_FLOOR * u, u, late, lk->jumped};
  mdp_course_fit_with(y, have, lk->m, &o, out);
}

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
  double u = mdp_detector_unit(d);
  fit_look(lk, y, have, u, lk->late_ok, &course);
  if(course.kind == MDP_COURSE_NONE)
    return 0;

  double len = d->cbucket_len;
  /* As of the end of the last closed bucket (its data's end), also when
   * it closed with its last sample, a gap before its end: the same look
   * then, only sooner (detector_points.c). */
  double x_t = (t - d->origin) / len - (double)(d->cnbucket - m);
  double x_now = x_t > (double)m ? x_t : (double)m;
  double envelope = mdp_course_at(&course, x_now);
  double slope = mdp_course_slope(&course, x_now) / len;
  double rise = envelope - mdp_course_at(&course, course.first);
  double room = level - envelope;
  double reach = course_reach(&course, x_now, level, lk->settle, (double)(m - lk->from));
  double plateau = mdp_course_plateau(&course);

  /* A leak that starts after a warm-up has levelled off bends up from a
   * level; fitted on the whole ring as a settling or accelerating course,
   * its slope at x_now can be half the leak's, and the limit hours away. If
   * its last SETTLE_TAIL points or more run on one line, and that line
   * climbs faster than the course itself where the line starts (a course
   * that levels off, a warm-up's, is faster there than the line after it),
   * it is projected at that line's slope when that is sooner. */
  mdp_course_run tail = {0};
  unsigned run = 0;
  if(!lk->from && (course.kind == MDP_COURSE_SETTLING || course.kind == MDP_COURSE_ACCELERATING))
    run = mdp_course_tail(y, have, m, KNEE_SD * u, &tail);
  if(run >= SETTLE_TAIL && room > 0 && tail.slope > mdp_course_slope(&course, tail.start) &&
     (reach < 0 || room / tail.slope < reach))
    reach = room / tail.slope;
  ev->time = t;
  ev->envelope = envelope > 0 ? (uint64_t)envelope : 0;
  ev->slope = slope;
  ev->slope_recent = slope;
  ev->slope_before = mdp_course_slope(&course, course.first) / len;
  ev->window = (double)(m - lk->from) * len;
  ev->urgent = 1;
  ev->plateau = plateau > 0 ? plateau : 0;
  for(unsigned k = 0; k < m; k++)
    ev->samples += mdp_detector_course_bucket(d, m, k)->count;
  if(reach >= 0)
    ev->time_to_limit = (reach + x_now - x_t) * len;

  int course_ok = slope > 0 && reach >= 0 && reach * len <= NEAR_SHARE * c->horizon &&
                  rise >= MIN_RISE * u && rise >= RISE_SCATTER * course.scatter &&
                  jump <= STEP_SHARE * rise && mdp_course_ruled_out(&course) >= RULED_OUT &&
                  (c->min_growth_rate <= 0 || slope >= c->min_growth_rate);
  /* A settling course (a warm-up dying out under a line) must show its
   * line in a straight tail of SETTLE_TAIL points: a warm-up with a cache
   * or two loaded as it ends fits that course too, and the steps break
   * its tail. */
  if(course_ok && course.kind == MDP_COURSE_SETTLING && !lk->from && run < SETTLE_TAIL)
    course_ok = 0;
  int grown = envelope - lo >= URGENCY_SHARE * room;
  lk->grown = grown;
  lk->firm = mdp_course_ruled_out(&course) >= FIRM;
  lk->late = course.x0 > 0;
#ifdef MDP_URGENT_DEBUG
  fprintf(stderr,
          "early t=%.1f m=%u kind=%d tau=%.1f env=%.0f slope=%.1f reach=%.1f rise=%.0f sc=%.1f "
          "jump=%.0f grown=%.0f need=%.0f F=%.2f from=%u x0=%.0f fails=%d%d%d%d%d%d%d\n",
          (t - d->origin) / 60, m, course.kind,
          course.q > 0 && course.q < 1 ? -1 / log(course.q) : 0, envelope / MIB, slope * 60 / MIB,
          ev->time_to_limit / 60, rise / MIB, course.scatter / MIB, jump / MIB,
          (envelope - lo) / MIB, URGENCY_SHARE * room / MIB, mdp_course_ruled_out(&course),
          lk->from, course.x0, !(slope > 0 && reach >= 0),
          !(reach * len <= NEAR_SHARE * c->horizon), !(rise >= MIN_RISE * u),
          !(rise >= RISE_SCATTER * course.scatter), !(jump <= STEP_SHARE * rise),
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
  mdp_detector_saw si;
  mdp_detector_course_points(d, m, y, have, &si);
  /* One drop: a sawtooth whose period the ring has not seen yet, whose ramp
   * may be all there is. */
  if(si.drops == 1 && si.stands)
    return early_fail(d);
#ifdef MDP_URGENT_DEBUG
  fprintf(stderr, "saw t=%.1f drops=%u P=%.1f ramp=%.1f ld=%.1f st=%d\n", (t - d->origin) / 60,
          si.drops, si.period, si.ramp / MIB, si.last_drop, si.stands);
#endif
  /* The lowest level seen counts the buckets the points leave out too
   * (those before a sawtooth's first tooth, whose phase is not known): the
   * series was at their least sample. When a sawtooth whose first drops
   * fell short of the bar was seen at last, the five points it left out
   * took 62 MiB off the growth since the lowest level, and a 13.5 MiB/min
   * leak under 13 MiB teeth of 191 s, asked by minute 14.2, waited for its
   * clock until minute 18 (standard-9098 fast-leak-045 of the 9061-9120
   * draws; since the sixth stop of 2026-12-06). */
  double lo = -1, left_out = INFINITY, first = -1, last = -1;
  for(unsigned k = 0; k < m; k++) {
    if(!have[k]) {
      const mdp_detector_point *b = mdp_detector_course_bucket(d, m, k);
      if(b->count > 0)
        left_out = fmin(left_out, (double)b->min);
      continue;
    }
    if(lo < 0 || y[k] < lo)
      lo = y[k];
    if(first < 0)
      first = y[k];
    last = y[k];
  }
  if(lo >= 0 && left_out < lo)
    lo = left_out;
  /* Most series are nowhere near: no fit before half the growth asked. */
  double u = mdp_detector_unit(d);
  if(last - lo < URGENCY_SHARE / 2 * ((double)c->memory_limit - last) ||
     last - first < MIN_RISE * u)
    return early_fail(d);
  double exc = course_excursion(d, m, (last - first) / m);
  double level = (double)c->memory_limit - exc;
  double settle =
      (c->near_limit > 0 && c->near_limit < 1 ? c->near_limit : 1) * (double)c->memory_limit - exc;
  double raw[CB];
  memcpy(raw, y, m * sizeof(y[0]));
  /* Caches seen in the samples first (a sample that jumped, less what
   * teeth shorter than a bucket climb between two samples: si.rise, taken
   * off by mdp_detector_course_jump), then
   * those that stand out of the points' local pace. Under 68.5 MiB teeth
   * of 51 s (14 MiB a sample) a 27 MiB cache rose 41, under three times
   * the usual 17, and a warm-up of 8.3 minutes' time constant with it and
   * a second cache fired at minute 15.8 (held-out-9121 warmup-022 of the
   * 9121-9180 draws; quiet since the seventh stop of 2026-12-07). */
  double jump[CB];
  for(unsigned k = 0; k < m; k++)
    jump[k] = mdp_detector_course_jump(d, m, k, &si);
  mdp_detector_steps_remove_jumps(y, have, jump, m, u);
  mdp_detector_steps_remove_local(y, have, m, u);
#ifdef MDP_URGENT_DEBUG
  fprintf(stderr, "pts");
  for(unsigned k = 0; k < m; k++)
    fprintf(stderr, " %.0f/%.0f", raw[k] / MIB, y[k] / MIB);
  fprintf(stderr, "\n");
#endif
  if(mdp_detector_steps_pending(y, have, m, u))
    return 0;
  /* Courses may start late (fit_look) but under a GC sawtooth of long
   * teeth seen fewer than LATE_SAW_DROPS times: after a long tooth's first
   * drop its ramp passes for a leak that starts (held-out-9238 warmup-103,
   * 70 MiB teeth of 571 s, fitted from minute 15 as a warm-up under a line
   * from just after its first drop, fired at 21.8; docs/detector.md).
   * Not wherever drops are seen: a noisy leak's falls are read as drops
   * too, and asking for none made six leaks after a warm-up late on
   * 9121-9180 and 9301-9360 standard. */
  int late_ok = !(si.period >= LATE_SAW_PERIOD && si.drops < LATE_SAW_DROPS);
  unsigned char jumps[CB];
  mdp_detector_steps_jumped(jump, have, m, u, jumps);
  early_look lk = {raw, y, have, m, 0, lo, level, settle, 0, 0, late_ok, 0, jumps};
  int course_ok = early_judge(d, t, &lk, ev);
  /* A leak that started after a warm-up: the course since the last change
   * of slope (or since the last one found, for KNEE_HOLD looks), when the
   * whole ring's fails or passes without having grown its share (its
   * envelope, under the warm-up's bend, stands lower); the whole ring's
   * stands when the knee's fails. The knee is looked for at every look, so
   * that one found stands for the looks after it whatever the whole ring
   * did. */
  unsigned knee = mdp_course_knee(y, have, m, KNEE_SD * u);
  uint64_t first_at = d->cnbucket - m; /* the course bucket of point 0 */
  if(knee) {
    d->cknee = first_at + knee + 1;
    d->cknee_seen = d->cnbucket;
  } else if(d->cknee > first_at + 2 && d->cknee - 1 + KNEE_KEEP <= first_at + m &&
            d->cnbucket <= d->cknee_seen + KNEE_HOLD) {
    knee = (unsigned)(d->cknee - 1 - first_at);
#ifdef MDP_URGENT_DEBUG
    fprintf(stderr, "knee kept %u\n", knee);
#endif
  }
  if(course_ok && lk.grown)
    knee = 0;
  if(knee) {
    /* Judged on a copy: the whole ring's points and decision stand unless
     * the knee's course passes. */
    unsigned char since[CB];
    memcpy(since, have, m);
    memset(since, 0, knee);
    early_look klk = lk;
    mdp_decision kev;
    klk.have = since;
    klk.from = knee;
    if(early_judge(d, t, &klk, &kev)) {
      *ev = kev;
      lk.grown = klk.grown;
      lk.firm = klk.firm;
      course_ok = 1;
    } else if(course_ok) {
      knee = 0;
    }
  }
  /* The whole ring's plateaus, ruled out on the points with their local
   * steps out, must be on the points as seen too (see the view), by a
   * course that starts late only when the look's did: a warm-up with
   * caches, fitted from the first point as settling at one look, fired
   * once the points as seen could start late too (standard-9059 warmup-118
   * of the 9001-9060 draws, at minute 21). */
  mdp_course as_seen;
  if(course_ok && !knee)
    fit_look(&lk, raw, have, u, lk.late, &as_seen);
  if(!course_ok || (!knee && mdp_course_ruled_out(&as_seen) < RULED_OUT))
    return early_fail(d);
  /* The status line shows the growth from the first evaluation whose
   * course passes. The course must pass CONFIRM of the last CONFIRM_OF
   * looks, this one among them; the growth since the lowest level need
   * only be there at the last: it is a clock (about T/5 for a steady
   * leak), not evidence that wants repeating. The CONFIRM - 1 firm looks
   * must be in a row and both have grown enough. */
  d->sslope = ev->slope;
  d->seval = *ev;
  early_look_was(d, 1);
  if(!lk.grown) {
    d->cgrown = 0;
    return 0;
  }
  ++d->cgrown;
  return (unsigned)__builtin_popcount(d->clooks) >= CONFIRM ||
         (lk.firm && d->cgrown >= CONFIRM - 1);
}
