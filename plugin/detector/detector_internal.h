/* What detector.c and detector_course.c share; not part of the detector's
 * interface (detector.h). Pure code, as the rest of the detector. */
#ifndef MDP_DETECTOR_INTERNAL_H
#define MDP_DETECTOR_INTERNAL_H

#include "detector.h"

/* The course ring: sets its bucket length from the config (after the
 * short ring's; 0 = off), moves its open bucket to index idx (returns 1 if
 * a bucket closed), adds a sample to the open bucket. */
void mdp_detector_course_init(mdp_detector *d);
int mdp_detector_course_advance(mdp_detector *d, uint64_t idx);
void mdp_detector_course_add(mdp_detector *d, double t, uint64_t v);

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
