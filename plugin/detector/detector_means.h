/* The course points where no sawtooth's ramp is taken out (docs/detector.md,
 * the early path's points): each bucket's mean of its samples less its
 * largest, moved to its bucket's start and less the buckets' usual offset
 * of that mean above the least-sample point; a bucket whose mean stands off
 * (a cache loaded within it, a sample that jumped far) keeps its least
 * sample less the usual gap. Not part of the detector's interface
 * (detector.h); pure code, no allocation. */
#ifndef MDP_DETECTOR_MEANS_H
#define MDP_DETECTOR_MEANS_H

#include "detector_internal.h"

/* Replaces the least-sample points y[0..m) of the last m closed buckets
 * (have[k] 0: no point) by their buckets' means as above; leaves them as
 * they are when fewer than 3 buckets hold 3 samples or more. Each
 * bucket's largest jump is weighed as a cache as
 * mdp_detector_course_jump gives it under si (its rise 0 here: no teeth
 * shorter than a bucket). */
void mdp_detector_means_plain(const mdp_detector *d, unsigned m, double *y,
                              const unsigned char *have, const mdp_detector_saw *si);

/* As mdp_detector_means_plain, but each bucket's mean of all its samples
 * less lift[k] (what a GC sawtooth of teeth shorter than a bucket added to
 * that mean; detector_short.c), not less its largest sample; each
 * bucket's largest jump comes less si->rise (the teeth's own rise between
 * two samples, filled before the call) before it is weighed as a cache. */
void mdp_detector_means_less(const mdp_detector *d, unsigned m, double *y,
                             const unsigned char *have, const double *lift,
                             const mdp_detector_saw *si);

/* The usual offset of the buckets' means above their points (the median of
 * off[0..n)) into *usual, and into *bar how far a mean may stand off it:
 * floor, or 3 times the offsets' scatter (their median absolute deviation,
 * scaled to a normal's standard one). Returns 0 (nothing written) with
 * fewer than 3 offsets. */
int mdp_detector_means_offsets(const double *off, unsigned n, double floor, double *usual,
                               double *bar);

#endif
