/* The early path's step filters (docs/detector.md, the early path's cache
 * bullets): a level shift -- a cache loaded at once -- is not growth, and
 * is taken out of the course points before the course is fitted. Each
 * works in place on the points y[0..m) of the course ring (have[k] 0: no
 * point), lowering every point from a step on by the step's excess; u is
 * the unit the floors are counted in (mdp_detector_unit). Not part of the
 * detector's interface (detector.h); pure code, no allocation. */
#ifndef MDP_DETECTOR_STEPS_H
#define MDP_DETECTOR_STEPS_H

#include "detector.h"

/* Rises between neighbouring points that stand out of the whole ring's
 * rises (more than 8 units and 6 times their usual spread from the median
 * rise), down to the median rise; at most three, the largest first. */
void mdp_detector_steps_remove(double *y, const unsigned char *have, unsigned m, double u);

/* The k largest rises, any above the median rise, down to it. */
void mdp_detector_steps_lower(double *y, const unsigned char *have, unsigned m, unsigned k,
                              double u);

/* Steps that stand out of the local pace (a cache on a warm-up that is
 * still climbing; a split cache taken as one), down to the local pace; at
 * most three. A warm-up's slowing rises, a leak's even ones and a
 * sawtooth's minima are left alone. */
void mdp_detector_steps_remove_local(double *y, const unsigned char *have, unsigned m, double u);

/* Steps seen in the samples: where a bucket's largest rise of a sample over
 * the one before it (jump[k]; below 0: not known) stands far out of the
 * buckets' usual one (or, where lower, the usual one of the buckets about
 * it), and the points' rise over that bucket stands above
 * the local pace by at least half the jump's excess (the level held: no
 * spike), that rise is taken down to the local pace, by no more than the
 * jump; at most three, the largest first. A step in the first minutes,
 * with no points before it to weigh it by, is taken out too; one in the
 * last two rises is left to mdp_detector_steps_pending. */
void mdp_detector_steps_remove_jumps(double *y, const unsigned char *have, const double *jump,
                                     unsigned m, double u);

/* Which of the m buckets saw a sample jump that a cache may have made
 * (into out, m flags): jump[k] above JUMPED_SHARE (1.8) times the buckets'
 * usual one and 10 units; none with fewer than five buckets' jumps known.
 * Looser than mdp_detector_steps_remove_jumps' bar (three times): the
 * early path only lets a plateau with a smaller cache there count as
 * levelling off (mdp_course_opts.jumped). */
void mdp_detector_steps_jumped(const double *jump, const unsigned char *have, unsigned m, double u,
                               unsigned char *out);

/* 1 when one of the last rises, too near the end for
 * mdp_detector_steps_remove_local to weigh, stands far above its local
 * pace: the early path holds its look until the points after it say
 * whether it was a step. */
int mdp_detector_steps_pending(const double *y, const unsigned char *have, unsigned m, double u);

#endif
