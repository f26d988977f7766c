/* What the detector's files (detector.c, detector_course.c, detector_ring.c,
 * detector_points.c, detector_means.c, detector_short.c, detector_steps.c)
 * share; not part of the detector's interface (detector.h). Pure code, as
 * the rest of the detector. */
#ifndef MDP_DETECTOR_INTERNAL_H
#define MDP_DETECTOR_INTERNAL_H

#include "detector.h"

/* The course ring: sets its bucket length from the config (after the
 * short ring's; 0 = off; detector_course.c), moves its open bucket to
 * index idx (returns 1 if a bucket closed; the new bucket takes its
 * samples less the pace of the buckets before it), adds a sample to the
 * open bucket (detector_ring.c). */
void mdp_detector_course_init(mdp_detector *d);
int mdp_detector_course_advance(mdp_detector *d, uint64_t idx);
/* Closes the open bucket when the sample at t (just added, the last one
 * at d->last_t) is its last: the next, a gap later, falls past its end.
 * Returns 1 if it closed. */
int mdp_detector_course_close_last(mdp_detector *d, double t);
void mdp_detector_course_add(mdp_detector *d, double t, uint64_t v);
/* The samples a course bucket holds at one every interval seconds (0 when
 * the urgent rule is off), and how many the early path was tuned on
 * (mdp_detector_interval_note). */
double mdp_detector_course_samples(const mdp_detector_config *cfg, double interval);
#define MDP_DETECTOR_COURSE_SAMPLES 6

/* What the early path's floors (the least drop, step, rise and noise it
 * counts: docs/detector.md, "Limits and tuning") are counted in: a MiB at
 * a MemoryLimit of 1 GiB, MemoryLimit / 1024 at another (a worker of half
 * the size, with half the teeth, caches and noise, is judged alike; since
 * 2026-12-07), a MiB without a limit; from 128 KiB to 16 MiB. */
static inline double mdp_detector_unit(const mdp_detector *d)
{
  double u = d->cfg.memory_limit ? (double)d->cfg.memory_limit / 1024 : 1024.0 * 1024.0;
  return u < 128.0 * 1024 ? 128.0 * 1024 : u > 16.0 * 1024 * 1024 ? 16.0 * 1024 * 1024 : u;
}

/* How far a sample must rise over the one before it to have jumped (a
 * cache loaded at once, seen within its bucket): more than 8 units (u,
 * mdp_detector_unit) and three times usual, the buckets' median largest
 * such rise (detector_means.c: the bucket gives its least sample;
 * detector_steps.c: the step is taken out of the points). */
static inline double mdp_detector_jump_bar(double usual, double u)
{
  return usual * 3.0 > 8.0 * u ? usual * 3.0 : 8.0 * u;
}

/* Bucket k (0 = oldest) of the last m closed buckets of the course ring. */
static inline const mdp_detector_point *mdp_detector_course_bucket(const mdp_detector *d,
                                                                   unsigned m, unsigned k)
{
  return &d->cring[(d->chead + MDP_DETECTOR_COURSE_BUCKETS + 1 - m + k) %
                   (MDP_DETECTOR_COURSE_BUCKETS + 1)];
}

/* What the points say of a GC sawtooth (docs/detector.md, the early
 * path's GC sawtooth bullet). */
typedef struct {
  unsigned drops;   /* drops found */
  double period;    /* the drops' period, buckets (a line through the teeth);
                       0 if fewer than 2 drops or not a sawtooth's */
  double ramp;      /* the sawtooth's own rise per bucket, taken out; 0 if none */
  double last_drop; /* x of the last drop; -1 if none */
  int stands;       /* the largest drop stands out of the usual falls */
  double rise;      /* teeth shorter than a bucket: the ramp's own rise from
                       one sample to the next, part of each bucket's largest
                       jump; else 0 */
} mdp_detector_saw;

/* The ramp per bucket of a GC sawtooth of period buckets, sampled dt
 * buckets apart, whose drops (how many: drops) gave back `back` bytes in
 * all: each fall is what the ramp climbed over its tooth less the two
 * intervals it is measured over (the sample after a drop is two intervals
 * later than the lower of the two before it), and less the envelope's
 * trend over them, so back is the falls' sum plus what the trend took off
 * them (detector_points.c's trend_lost). 0 when the period is not longer
 * than those two intervals. Each caller sums back in its own order
 * (detector_points.c, detector_short.c). */
static inline double mdp_detector_saw_ramp(double back, unsigned drops, double period, double dt)
{
  double teeth = drops * (period - 2 * dt);
  return teeth > 0 ? back / teeth : 0;
}

/* The largest jump of bucket k (0 = oldest) of the last m closed buckets
 * (its largest rise of a sample over the one before it: a cache loaded at
 * once within it) less what teeth shorter than a bucket climb between two
 * samples (si->rise, from mdp_detector_course_points: part of every
 * bucket's jump, not a cache's); -1 when it holds fewer than 2 samples.
 * The buckets' jumps are read through it only (detector_means.c,
 * detector_course.c). */
static inline double mdp_detector_course_jump(const mdp_detector *d, unsigned m, unsigned k,
                                              const mdp_detector_saw *si)
{
  const mdp_detector_point *b = mdp_detector_course_bucket(d, m, k);
  return b->count >= 2 ? b->jump - si->rise : -1;
}

/* The course points of the last m closed buckets, oldest first, into y
 * (have[k] 0 for an empty bucket, or one a sawtooth's ramp leaves out):
 * each bucket's level at its start (dmin; a bucket closed before any pace
 * was known gives its minimum less the usual gap between the two), or
 * under a GC sawtooth its trough or its minimum less the ramp its tooth
 * climbed (under short teeth of real drops, the mean of its samples less
 * the ramp each climbed; under teeth shorter than a bucket, the mean of
 * its samples less the ramp times their mean phase: detector_short.h),
 * each moved to its bucket's start; where no
 * sawtooth's ramp is taken out, the mean of its samples less its largest,
 * moved so and less the buckets' usual offset above that level (a bucket
 * whose mean stands far off, or where a sample jumped far above the one
 * before it, gives its minimum less the usual gap between minimum and
 * point); and those means, with si as if no ramp were found, under a
 * sawtooth (not one shorter than a bucket) whose points are 1.1 times as
 * rough as the means or more. Fills si. */
void mdp_detector_course_points(const mdp_detector *d, unsigned m, double *y, unsigned char *have,
                                mdp_detector_saw *si);

/* What the course of the ring's envelope says at t (the urgent rule's
 * veto): seconds until it reaches level (-1: never, it levels off below
 * it or does not grow), how firmly the data rule out every course that
 * levels off at or below settle (mdp_course_ruled_out: 1 = at 99 %; the
 * lesser of what the bucket minima and the early path's points say), and
 * where it levels off (bytes; 0 if it does not). */
typedef struct {
  double reach, ruled, plateau;
} mdp_detector_course_look;

/* Fills v and returns 1; 0 (v zeroed) when the ring holds too little to
 * say. */
int mdp_detector_course_view(const mdp_detector *d, double t, double level, double settle,
                             mdp_detector_course_look *v);

/* The urgent rule's early path, in the first GrowthWindow of an episode
 * (no held level to compare with yet): evaluated when a course bucket
 * closes at t; fills ev and returns 1 when a fast leak's course alone fires
 * (docs/detector.md, "The urgent rule"). */
int mdp_detector_course_early(mdp_detector *d, double t, mdp_decision *ev);

#endif
