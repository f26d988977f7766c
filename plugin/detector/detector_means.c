/* The course points without a sawtooth's ramp (detector_means.h): each
 * bucket's mean, a steadier figure than its least sample. Pure code, as
 * the rest of the detector. */
#include <math.h>
#include <string.h>

#include "detector_means.h"
#include "robust.h"

#define CB           MDP_DETECTOR_COURSE_BUCKETS
#define MEAN_SCATTER 3.0

/* The usual offset of the buckets' means above their points (the median
 * of off[0..n)) and the bar past which a mean stands off it: floor, or
 * MEAN_SCATTER times the offsets' scatter (their median absolute
 * deviation, scaled to a normal's standard one). 0 with fewer than 3. */
int mdp_detector_means_offsets(const double *off, unsigned n, double floor, double *usual,
                               double *bar)
{
  double dev[CB];
  if(n < 3)
    return 0;
  memcpy(dev, off, n * sizeof(off[0]));
  *usual = mdp_robust_median(dev, n);
  for(unsigned i = 0; i < n; i++)
    dev[i] = fabs(off[i] - *usual);
  *bar = fmax(floor, MEAN_SCATTER * 1.4826 * mdp_robust_median(dev, n));
  return 1;
}

/* Without a sawtooth's ramp taken out, each bucket's point is the mean of
 * its samples less its largest (a one-sample spike), moved to its
 * bucket's start along the slope of the points about it, less the
 * buckets' usual offset of that mean above their least sample less the
 * pace: the same level, a steadier figure. The least of six samples is one sample's noise picked
 * low: under noise of a normal's shape it scattered 1.8 times as far as
 * this mean (test_detector_points), and under uniform noise about as far.
 * A bucket whose mean stands off its point by more than PLAIN_OFF and
 * MEAN_SCATTER times the offsets' scatter beyond the usual offset (a cache
 * loaded within it lifts its mean part-way) gives its least sample less
 * the usual gap (below); so does one where a sample rose over the one
 * before it by more than mdp_detector_jump_bar (8 MiB and 3 times the
 * buckets' median such rise: the cache itself, seen at once). A cache loaded
 * within a bucket lifted its mean by less than PLAIN_OFF, and split its
 * step over two points: 22.3 MiB at second 681 of a 12.7-minute warm-up
 * under +-2.1 MiB of noise rose the points by 15 and 19 MiB (the pace
 * 6), which no step filter took for a cache, and the course sped up; it
 * fired at minute 15 (standard-9041 warmup-094 of the 9001-9060 draws;
 * since the fourth stop of 2026-12-06). Noise's rises between samples
 * are alike in every bucket, a trend's too. */
#define PLAIN_OFF  8.0
/* The slope (per bucket) of a least-squares line through the points of
 * y from k - PLAIN_NEAR to k + PLAIN_NEAR; 0 with fewer than 3. */
#define PLAIN_NEAR 4
static double local_slope(const double *y, const unsigned char *have, unsigned m, unsigned k)
{
  mdp_robust_line l = {0};
  double slope;
  unsigned from = k > PLAIN_NEAR ? k - PLAIN_NEAR : 0, to = k + PLAIN_NEAR + 1;
  for(unsigned i = from; i < to && i < m; i++)
    if(have[i])
      mdp_robust_line_add(&l, i, y[i]);
  return mdp_robust_line_fit(&l, 3, &slope, NULL) ? slope : 0;
}

/* As mdp_detector_means_plain, or with lift (teeth shorter than a bucket)
 * each bucket's mean of all its samples less lift[k]: under such teeth the
 * largest sample is a tooth's top, not a spike. */
static void means(const mdp_detector *d, unsigned m, double *y, const unsigned char *have,
                  const double *lift, const mdp_detector_saw *si)
{
  double mean[CB], off[CB] = {0}, jump[CB], jumps[CB]; /* jumps: packed, reordered */
  unsigned char use[CB];
  unsigned n_off = 0;
  for(unsigned k = 0; k < m; k++) {
    const mdp_detector_point *b = mdp_detector_course_bucket(d, m, k);
    use[k] = 0;
    if(!have[k] || b->count < 3)
      continue;
    double c = b->count;
    mean[k] = lift ? (double)b->min + (double)b->sum / c - lift[k]
                   : (double)b->min + ((double)b->sum - (double)b->spread) / (c - 1);
    mean[k] -= local_slope(y, have, m, k) * b->sum_at / c;
    jump[k] = mdp_detector_course_jump(d, m, k, si);
    jumps[n_off] = jump[k];
    off[n_off++] = mean[k] - y[k];
    use[k] = 1;
  }
  double usual, bar;
  if(!mdp_detector_means_offsets(off, n_off, PLAIN_OFF * mdp_detector_unit(d), &usual, &bar))
    return;
  /* A bucket whose mean stands off keeps its least sample less the usual
   * gap between the least sample and the point, not its least sample less
   * the pace: on a warm-up still steep the pace (the least rise of the
   * minima before) runs ahead of the bucket's own, and that point came out
   * 14 MiB low (test_a_steep_warmups_points_keep_to_its_level); a cache
   * loaded within the bucket comes after its least sample either way. */
  double gap[CB];
  unsigned ng = 0;
  double jump_bar = mdp_detector_jump_bar(mdp_robust_median(jumps, n_off), mdp_detector_unit(d));
  for(unsigned k = 0; k < m; k++) {
    if(!use[k])
      continue;
    const mdp_detector_point *b = mdp_detector_course_bucket(d, m, k);
    mean[k] -= usual;
    /* Under teeth shorter than a bucket (lift) its least sample is where
     * a tooth's first sample fell, up to the ramp of an interval above its
     * drop, no level to stand off from: only a jump says a cache. */
    use[k] =
        (lift || fabs(mean[k] - y[k]) <= bar) && jump[k] <= jump_bar ? 1 : 2; /* 2: stands off */
    if(use[k] == 1)
      gap[ng++] = (double)b->min - mean[k];
  }
  double g = ng ? mdp_robust_median(gap, ng) : 0;
  for(unsigned k = 0; k < m; k++)
    if(use[k])
      y[k] = use[k] == 1 ? mean[k] : (double)mdp_detector_course_bucket(d, m, k)->min - g;
}

void mdp_detector_means_plain(const mdp_detector *d, unsigned m, double *y,
                              const unsigned char *have, const mdp_detector_saw *si)
{
  means(d, m, y, have, NULL, si);
}

void mdp_detector_means_less(const mdp_detector *d, unsigned m, double *y,
                             const unsigned char *have, const double *lift,
                             const mdp_detector_saw *si)
{
  means(d, m, y, have, lift, si);
}
