/* The course points under a GC sawtooth whose teeth are shorter than a
 * bucket (docs/detector.md, the early path's GC sawtooth): GC every 30-90 s
 * under a fast leak. Nearly every bucket then holds a drop, one or two, and
 * the drops seen are whole numbers of teeth apart; the period is the
 * longest their times fit, and each bucket's point is the mean of its
 * samples less what the teeth added to it. Not part of the detector's
 * interface (detector.h); pure code, no allocation. */
#ifndef MDP_DETECTOR_SHORT_H
#define MDP_DETECTOR_SHORT_H

#include "detector_internal.h"

/* The drops the course ring's buckets hold (detector_points.c): all
 * borrowed from the caller for the call. */
typedef struct {
  const double *x;     /* n drops' trough times, buckets from the ring's first */
  const double *falls; /* their falls, bytes */
  unsigned n;          /* drops */
  unsigned filled;     /* buckets holding a sample */
  double dt;           /* the sampling interval, buckets */
  double lost;         /* what the envelope's trend took off the falls, bytes
                          (read by mdp_detector_short_points only) */
} mdp_detector_short_drops;

/* 1 when the drops may be teeth shorter than a bucket: nearly every
 * bucket with a sample holds one, and their median fall is a real drop's
 * (detector_short.c, SHORT_SHARE); else 0. Does not read dr->lost: the
 * caller works that out only once this passes. */
int mdp_detector_short_gate(const mdp_detector *d, const mdp_detector_short_drops *dr);

/* For drops that passed mdp_detector_short_gate: when they are teeth
 * shorter than a bucket (a period found), replaces the points y[0..m) of
 * the last m closed buckets (have[k] 0: no point) by their buckets' means
 * less the teeth's part (mdp_detector_means_less), fills si->period,
 * si->ramp and si->rise (the teeth's climb between two samples) and
 * returns 1. Else returns 0 and leaves y and si as they are. */
int mdp_detector_short_points(const mdp_detector *d, unsigned m, const mdp_detector_short_drops *dr,
                              double *y, const unsigned char *have, mdp_detector_saw *si);

#endif
