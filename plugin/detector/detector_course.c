/* The course ring of the detector and the question the urgent rule asks it
 * (docs/detector.md, "The urgent rule"): does the course of the lower
 * envelope reach the limit within Horizon, or does it level off below it?
 * Pure code, as the rest of the detector. */
#include <math.h>
#include <string.h>
#ifdef MDP_URGENT_DEBUG
#include <stdio.h>
#endif

#include "course.h"
#include "detector_internal.h"

#define CB    MDP_DETECTOR_COURSE_BUCKETS
#define CRING (MDP_DETECTOR_COURSE_BUCKETS + 1)

_Static_assert(CB <= MDP_COURSE_MAX_POINTS, "the course fit must hold the ring");

/* Buckets per ShortWindow (1 min at the default; the ring spans twice
 * ShortWindow). */
#define PER_WINDOW 20
/* Closed buckets the course needs before it can say anything. */
#define COURSE_MIN 6

void mdp_detector_course_init(mdp_detector *d)
{
  d->cbucket_len = d->sbucket_len > 0 ? d->cfg.short_window / PER_WINDOW : 0;
}

int mdp_detector_course_advance(mdp_detector *d, uint64_t idx)
{
  if(d->cbucket_len <= 0 || idx <= d->cnbucket)
    return 0;
  uint64_t steps = idx - d->cnbucket;
  if(steps > CRING)
    steps = CRING;
  for(uint64_t s = 0; s < steps; s++) {
    d->chead = (d->chead + 1) % CRING;
    if(d->cfilled < CRING)
      d->cfilled++;
    memset(&d->cring[d->chead], 0, sizeof(d->cring[0]));
  }
  d->cnbucket = idx;
  return 1;
}

void mdp_detector_course_add(mdp_detector *d, uint64_t v)
{
  mdp_detector_point *p = &d->cring[d->chead];
  if(d->cbucket_len <= 0)
    return;
  if(!p->count || v < p->min)
    p->min = v;
  if(!p->count || v > p->max)
    p->max = v;
  p->count++;
}

int mdp_detector_course_levels_off(const mdp_detector *d, double t, double level, double within,
                                   double *plateau)
{
  double y[CB];
  unsigned char have[CB];
  mdp_course course;
  unsigned m = d->cfilled ? d->cfilled - 1 : 0; /* closed buckets */

  *plateau = 0;
  if(d->cbucket_len <= 0 || m < COURSE_MIN)
    return 0;
  if(m > CB)
    m = CB;
  for(unsigned k = 0; k < m; k++) {
    const mdp_detector_point *b = &d->cring[(d->chead + CRING - m + k) % CRING];
    have[k] = b->count > 0;
    y[k] = (double)b->min;
  }
  mdp_course_fit(y, have, m, level, &course);
  if(course.kind == MDP_COURSE_NONE)
    return 0;
  /* Point k stands for the start of its bucket: where a rising series has
   * its lowest value. */
  double x_now = (t - d->origin) / d->cbucket_len - (double)(d->cnbucket - m);
  double p = mdp_course_plateau(&course);
  if(p > 0)
    *plateau = p;
  double reach = mdp_course_reach(&course, x_now, level);
#ifdef MDP_URGENT_DEBUG
  fprintf(stderr,
          "veto t=%.0f m=%u kind=%d q=%.4f a=%.1f b=%.1f c=%.2f level=%.1f reach=%.1f F=%.2f\n",
          t - d->origin, m, course.kind, course.q, course.a / 1048576, course.b / 1048576,
          course.c / 1048576, level / 1048576, reach, mdp_course_ruled_out(&course));
#endif
  return reach < 0 || reach * d->cbucket_len > within;
}
