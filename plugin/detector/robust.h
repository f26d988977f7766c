/* Robust statistics the detector's fits share (detector.c, course.c).
 * Pure: no allocation, no state; the caller owns every array. */
#ifndef MDP_ROBUST_H
#define MDP_ROBUST_H

/* The median of v[0..n), n > 0 (the mean of the two middle values when n
 * is even). Reorders v. Quickselect: linear on average, the read callback
 * re-fits every worker's windows and a full sort was most of its cost. */
double mdp_robust_median(double *v, unsigned n);

/* Sorts v[0..n) in ascending order, in place. Insertion sort: for the
 * course ring's few dozen values. */
void mdp_robust_sort(double *v, unsigned n);

#endif
