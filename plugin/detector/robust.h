/* Robust statistics the detector's fits share (detector.c, course.c), and
 * the one least-squares line they fit (detector_points.c, detector_short.c,
 * detector_means.c, course.c). Pure: no allocation, no state of its own;
 * the caller owns every array and every mdp_robust_line. */
#ifndef MDP_ROBUST_H
#define MDP_ROBUST_H

/* The median of v[0..n), n > 0 (the mean of the two middle values when n
 * is even). Reorders v. Quickselect: linear on average, the read callback
 * re-fits every worker's windows and a full sort was most of its cost. */
double mdp_robust_median(double *v, unsigned n);

/* Sorts v[0..n) in ascending order, in place. Insertion sort: for the
 * course ring's few dozen values. */
void mdp_robust_sort(double *v, unsigned n);

/* The sums of a least-squares line through points (x, y) added one at a
 * time: start it zeroed (= {0}), add with mdp_robust_line_add, read with
 * mdp_robust_line_fit. n counts the points. */
typedef struct {
  double n, sx, sxx, sy, sxy;
} mdp_robust_line;

/* Adds the point (x, y) to l. Inline: the fits add a point per bucket in
 * loops the read callback runs for every worker. */
static inline void mdp_robust_line_add(mdp_robust_line *l, double x, double y)
{
  l->n++;
  l->sx += x;
  l->sxx += x * x;
  l->sy += y;
  l->sxy += x * y;
}

/* The least-squares line y = intercept + slope x through l's points: into
 * *slope and *intercept (either may be NULL), returning 1; returns 0 and
 * writes nothing when l holds fewer than least points, or when its
 * denominator n sxx - sx sx is not above 0 (fewer than two points, all at
 * one x, or a NaN). The same operations in the same order at every call:
 * slope = (n sxy - sx sy) / (n sxx - sx sx), intercept = (sy - slope sx) /
 * n. */
int mdp_robust_line_fit(const mdp_robust_line *l, unsigned least, double *slope, double *intercept);

#endif
