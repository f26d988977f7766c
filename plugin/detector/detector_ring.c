/* The course ring (docs/detector.md, "The urgent rule"): the one-minute
 * buckets of the early path, filled sample by sample -- each keeps its
 * least sample (less the pace of the buckets before it, and as seen), its
 * samples' sum, its largest fall and rise between samples, and when they
 * came; detector_points.c reads the points from them. Pure code, as the
 * rest of the detector. */
#include <math.h>
#include <string.h>

#include "detector_internal.h"

#define CRING      (MDP_DETECTOR_COURSE_BUCKETS + 1)
/* The pace a bucket's samples are taken less of: the least rise between
 * the minima of the closed buckets before it, of up to PACE_RISES that
 * follow one another (docs/detector.md, "The early path"). */
#define PACE_RISES 3
/* A bucket counts (and sums) up to this many samples, as from_fall can. */
#define COUNT_MAX  32767

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
  /* The pace the new bucket's samples are taken less of. The least rise,
   * not a median: a warm-up's pace falls, and a pace taken from rises
   * before it (higher) would lower each point by more than the last, which
   * straightens the bend that tells a warm-up from a leak. Rises of the
   * minima, not of the points: under a steady pace they rise alike, and
   * the points' own errors would come back through the pace (a warm-up
   * without noise had its points off by -6.9, -0.5, -3.3, -2.8 MiB). */
  double pace = -1;
  unsigned m = d->cfilled ? d->cfilled - 1 : 0; /* closed buckets */
  for(unsigned k = m; k >= 2 && k + PACE_RISES > m; k--) {
    const mdp_detector_point *a = mdp_detector_course_bucket(d, m, k - 1);
    const mdp_detector_point *b = mdp_detector_course_bucket(d, m, k - 2);
    double rise = (double)a->min - (double)b->min;
    if(a->count && b->count && (pace < 0 || rise < pace))
      pace = rise;
  }
  d->ctrend = pace > 0 ? pace / d->cbucket_len : 0;
  d->cring[d->chead].paced = d->ctrend > 0;
  return 1;
}

/* A bucket closes with its last sample, not at the first of the next
 * (since the seventh stop of 2026-12-06, docs/detector.md): the next is
 * expected the usual interval after it (smoothed over the last few), half
 * of it early at most (samples 10 s apart give or take 2 s close on a
 * minute's 48 s, not 42 s). Gaps of up to a bucket count (30 s, 60 s:
 * since 2026-12-07; under half a bucket before); a sample after a
 * pause (a gap over GAP_PAUSE times the usual) closes nothing and is not
 * taken into the usual: the samples after it belong to the bucket. */
#define GAP_SMOOTH 0.25
#define GAP_EARLY  1.5
#define GAP_PAUSE  2.0

int mdp_detector_course_close_last(mdp_detector *d, double t)
{
  if(d->cbucket_len <= 0 || !d->have_last || !(t > d->last_t))
    return 0;
  double gap = t - d->last_t;
  if(gap > d->cbucket_len || (d->cgap > 0 && gap > GAP_PAUSE * d->cgap))
    return 0;
  d->cgap = d->cgap > 0 ? d->cgap + GAP_SMOOTH * (gap - d->cgap) : gap;
  double end = d->origin + (double)(d->cnbucket + 1) * d->cbucket_len;
  if(t + GAP_EARLY * d->cgap <= end)
    return 0;
  return mdp_detector_course_advance(d, d->cnbucket + 1);
}

/* Where t falls in the open bucket, in 65536ths of it. */
static uint16_t bucket_at(const mdp_detector *d, double t)
{
  double f = (t - d->origin) / d->cbucket_len - (double)d->cnbucket;
  return f <= 0 ? 0 : f >= 1 ? UINT16_MAX : (uint16_t)(f * 65536);
}

void mdp_detector_course_add(mdp_detector *d, double t, uint64_t v)
{
  mdp_detector_point *p = &d->cring[d->chead];
  if(d->cbucket_len <= 0)
    return;
  uint16_t at = bucket_at(d, t);
  double dv = (double)v - d->ctrend * d->cbucket_len * (at / 65536.0), fv = (double)v;
  if(!p->count || dv < p->dmin)
    p->dmin = (float)dv;
  if(!p->count) {
    p->min = (float)fv;
    p->min_at = at;
  } else if(fv < p->min) {
    /* The sum is kept less count times the minimum: a float holds it. */
    p->sum += (float)((double)p->count * (p->min - fv));
    p->spread += (float)(p->min - fv);
    p->min = (float)fv;
    p->min_at = at;
  }
  if(fv - p->min > p->spread)
    p->spread = (float)(fv - p->min);
  if(d->have_last && fv - (double)d->last_v > p->jump)
    p->jump = (float)(fv - (double)d->last_v);
  /* A fall below both samples before it (a spike falls back only to the
   * sample before it). */
  if(d->samples >= 2) {
    uint64_t before = d->last_v < d->prev_v ? d->last_v : d->prev_v;
    double fall = before > v ? (double)(before - v) : 0;
    if(fall > p->fall) {
      p->fall = (float)fall;
      p->fall_at = at;
      p->trough = (float)v;
      p->from_fall = 0;
    }
  }
  if(p->count == COUNT_MAX)
    return;
  p->sum += (float)(fv - p->min);
  p->sum_at += (float)(at / 65536.0);
  if(p->fall > 0)
    p->from_fall++;
  p->count++;
}
