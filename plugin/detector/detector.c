/* Leak detector: see detector.h for the model and docs/detector.md for the
 * rules and their defaults. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector.h"

#define NB   MDP_DETECTOR_BUCKETS
#define RING (MDP_DETECTOR_BUCKETS + 1)
#define HALF (MDP_DETECTOR_BUCKETS / 2)
#define MIB  (1024.0 * 1024.0)

/* Growth must be spread over the window, not bunched in one half: a
 * warm-up that levels off has a flat second half, a one-off step has a flat
 * first half. */
#define RECENT_MIN_SHARE  0.5
#define OLDER_MIN_SHARE   0.25
/* The rise over the window must stand out of the scatter of the bucket
 * minima around the fitted line, and be more than allocator noise. */
#define RISE_OVER_SCATTER 4.0
#define MIN_RISE          (2.0 * MIB)
/* The lowest level of the last three buckets must stand this share of the
 * window's rise above any level held before the window: a leak's does by
 * about three quarters, a climb back to yesterday's peak does not. */
#define NEW_LEVEL_SHARE   0.25
/* Growth is confirmed when the window before grew at least this share of
 * the present slope; unconfirmed growth fires only when the limit is less
 * than this share of Horizon away. */
#define CONFIRM_SHARE     0.5
#define URGENT_SHARE      (1.0 / 3)
/* A new episode starts when memory falls this far below the lower envelope
 * at the time of the fire (memory released, or the process replaced). */
#define REARM_FRACTION    0.8

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, unsigned n)
{
  qsort(v, n, sizeof(*v), cmp_double);
  return (n % 2) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* Median of pairwise slopes: a few outlying points (a bucket that missed
 * the trough of a sawtooth) cannot tilt it. */
static double theil_sen(const double *x, const double *y, unsigned n)
{
  double slopes[NB * (NB - 1) / 2];
  unsigned k = 0;

  for(unsigned i = 0; i < n; i++)
    for(unsigned j = i + 1; j < n; j++)
      if(x[j] != x[i])
        slopes[k++] = (y[j] - y[i]) / (x[j] - x[i]);
  return k ? median(slopes, k) : 0.0;
}

void mdp_detector_init(mdp_detector *d, const mdp_detector_config *cfg)
{
  memset(d, 0, sizeof(*d));
  d->cfg = *cfg;
  /* config_set refuses shorter windows; this only keeps a hand-made
   * config from dividing by zero. */
  d->bucket_len = (cfg->growth_window >= NB ? cfg->growth_window : 3600) / NB;
  d->last_eval.time_to_limit = -1;
  d->state = MDP_DETECTOR_WARMING;
}

/* Keeps, for a bucket leaving the window, the level held around it. */
static void remember(mdp_detector_levels *h, const mdp_detector_bucket *b)
{
  if(!b->count)
    return;
  uint64_t low = b->min;
  for(unsigned i = 0; i < h->evicted_n; i++)
    if(h->evicted[i] < low)
      low = h->evicted[i];
  if(h->evicted_n == MDP_DETECTOR_FOLD - 1) {
    memmove(h->evicted, h->evicted + 1, sizeof(h->evicted) - sizeof(h->evicted[0]));
    h->evicted_n--;
    if(low > h->fold_max)
      h->fold_max = low;
  }
  h->evicted[h->evicted_n++] = b->min;
  if(++h->fold_n < MDP_DETECTOR_FOLD)
    return;
  h->history[h->head] = h->fold_max;
  h->head = (h->head + 1) % MDP_DETECTOR_HISTORY;
  if(h->n < MDP_DETECTOR_HISTORY)
    h->n++;
  h->fold_n = 0;
  h->fold_max = 0;
}

/* Starts over after memory fell well below where the detector fired, but
 * keeps the levels held so far: within one process, memory that fell and
 * climbs back to where it was (a traffic cycle) is not new growth. A new
 * process gets a new detector. */
static void start_episode(mdp_detector *d, double t)
{
  mdp_detector_config cfg = d->cfg;
  mdp_detector_levels held = d->held;

  if(d->have_last)
    for(unsigned k = d->filled; k-- > 0;)
      remember(&held, &d->ring[(d->head + RING - k) % RING]);
  mdp_detector_init(d, &cfg);
  d->held = held;
  d->filled = 1;
  d->origin = t;
}

/* Moves the open bucket forward to index idx; returns 1 if a bucket closed. */
static int advance(mdp_detector *d, uint64_t idx)
{
  if(idx <= d->nbucket)
    return 0;
  uint64_t steps = idx - d->nbucket;
  if(steps > RING)
    steps = RING;
  for(uint64_t s = 0; s < steps; s++) {
    d->head = (d->head + 1) % RING;
    if(d->filled == RING)
      remember(&d->held, &d->ring[d->head]);
    else
      d->filled++;
    memset(&d->ring[d->head], 0, sizeof(d->ring[d->head]));
  }
  d->nbucket = idx;
  return 1;
}

static void add_sample(mdp_detector *d, double t, uint64_t v)
{
  mdp_detector_bucket *b = &d->ring[d->head];
  if(!b->count) {
    b->start = t;
    b->min = b->max = v;
  }
  if(v < b->min)
    b->min = v;
  if(v > b->max)
    b->max = v;
  b->count++;
  d->samples++;
}

static uint64_t history_high(const mdp_detector_levels *h)
{
  uint64_t hi = 0;
  for(unsigned i = 0; i < h->n; i++)
    if(h->history[i] > hi)
      hi = h->history[i];
  return hi;
}

/* Returns the slope recorded one window ago (0 if none) and records the
 * current one in its place. */
static double remembered_slope(mdp_detector *d, double slope)
{
  unsigned slot = (unsigned)(d->nbucket % NB);
  double before = d->past_at[slot] == d->nbucket - NB + 1 ? d->past_slope[slot] : 0;
  d->past_slope[slot] = slope;
  d->past_at[slot] = d->nbucket + 1;
  return before;
}

/* Seconds until the trend climbs `room` bytes; -1 if it never does. Growth
 * that slowed since one window ago (a warm-up) is extrapolated as an
 * exponential approach to a plateau, with the time constant that slowdown
 * implies; growth that held or sped up, as a straight line at the present
 * slope. */
static double time_to_reach(double room, double slope, double before, double window)
{
  if(room <= 0)
    return 0;
  if(before <= 0 || slope >= before)
    return room / slope;
  double tau = window / log(before / slope);
  double reach = slope * tau; /* total growth still to come */
  if(room >= reach)
    return -1;
  return -tau * log(1 - room / reach);
}

/* Fits the closed buckets of the window; fills ev and returns 1 when the
 * growth rule fires. */
static int evaluate_growth(mdp_detector *d, double t, mdp_decision *ev)
{
  double x[NB], y[NB], spread[NB], resid[NB], xo[HALF], yo[HALF], xr[HALF], yr[HALF];
  unsigned n = 0, no = 0, nr = 0;
  uint32_t samples = 0;
  const mdp_detector_config *c = &d->cfg;

  memset(ev, 0, sizeof(*ev));
  ev->time_to_limit = -1;
  if(d->filled < RING)
    return 0;

  /* Oldest closed bucket first. */
  for(unsigned k = NB; k >= 1; k--) {
    const mdp_detector_bucket *b = &d->ring[(d->head + RING - k) % RING];
    if(!b->count)
      continue;
    double bx = ((double)(d->nbucket - k) + 0.5) * d->bucket_len;
    x[n] = bx;
    y[n] = (double)b->min;
    spread[n] = (double)(b->max - b->min);
    samples += b->count;
    if(k > HALF) {
      xo[no] = bx;
      yo[no++] = y[n];
    } else {
      xr[nr] = bx;
      yr[nr++] = y[n];
    }
    n++;
  }
  /* A window with holes (the worker was not sampled) says too little. */
  if(n < NB - 2 || no < HALF - 1 || nr < HALF - 1)
    return 0;

  double slope = theil_sen(x, y, n);
  double slope_old = theil_sen(xo, yo, no);
  double slope_new = theil_sen(xr, yr, nr);
  for(unsigned i = 0; i < n; i++)
    resid[i] = y[i] - slope * x[i];
  double intercept = median(resid, n);
  for(unsigned i = 0; i < n; i++)
    resid[i] = fabs(y[i] - (intercept + slope * x[i]));
  double scatter = median(resid, n);
  double excursion = median(spread, n);
  double now = t - d->origin;
  double envelope = intercept + slope * now;
  double rise = slope * NB * d->bucket_len;
  double before = remembered_slope(d, slope);
  double recent_low = y[n - 1];
  for(unsigned i = n - 1; i > n - MDP_DETECTOR_FOLD; i--)
    if(y[i - 1] < recent_low)
      recent_low = y[i - 1];

  ev->time = t;
  ev->envelope = envelope > 0 ? (uint64_t)envelope : 0;
  ev->slope = slope;
  ev->slope_recent = slope_new;
  ev->slope_before = before;
  ev->samples = samples;
  ev->window = NB * d->bucket_len;

  int growing = slope > 0 && slope_new >= RECENT_MIN_SHARE * slope &&
                slope_old >= OLDER_MIN_SHARE * slope && rise >= RISE_OVER_SCATTER * scatter &&
                rise >= MIN_RISE &&
                recent_low >= (double)history_high(&d->held) + NEW_LEVEL_SHARE * rise;
  if(growing && c->memory_limit)
    ev->time_to_limit = time_to_reach((double)c->memory_limit - (envelope + excursion), slope,
                                      before, NB * d->bucket_len);
  if(now < c->warmup) {
    d->state = MDP_DETECTOR_WARMING;
    return 0;
  }
  d->state = growing ? MDP_DETECTOR_GROWING : MDP_DETECTOR_STABLE;
  if(!growing)
    return 0;
  if(c->min_growth_rate > 0 && slope < c->min_growth_rate)
    return 0;
  /* Growth seen over two windows in a row is confirmed; over one window
   * only, it may be the rising side of a traffic cycle, so it fires alone
   * only when waiting a window would eat much of the lead. */
  int confirmed = before >= CONFIRM_SHARE * slope;
  if(c->memory_limit)
    return ev->time_to_limit >= 0 && ev->time_to_limit <= c->horizon &&
           (confirmed || ev->time_to_limit <= URGENT_SHARE * c->horizon);
  /* Without a limit there is nothing to project onto: only an explicit
   * MinGrowthRate says which growth is too much. */
  return c->min_growth_rate > 0 && confirmed;
}

/* Both this sample and the one before at or above the threshold: a single
 * spike does not start a capture. */
static int held_above(const mdp_detector *d, uint64_t v, double threshold)
{
  return threshold > 0 && d->have_last && (double)d->last_v >= threshold && (double)v >= threshold;
}

int mdp_detector_feed(mdp_detector *d, double t, uint64_t value, mdp_decision *out)
{
  mdp_decision ev;
  const mdp_detector_config *c = &d->cfg;
  const char *reason = NULL;
  int fire = 0;

  if(!isfinite(t) || (d->have_last && t < d->last_t))
    return -EINVAL;
  if(!d->have_last || (d->state == MDP_DETECTOR_FIRED && value < d->rearm_below))
    start_episode(d, t);

  int closed = advance(d, (uint64_t)((t - d->origin) / d->bucket_len));
  add_sample(d, t, value);

  if(d->state != MDP_DETECTOR_FIRED) {
    if(closed) {
      fire = evaluate_growth(d, t, &ev);
      d->last_eval = ev;
      if(fire)
        reason = MDP_REASON_GROWTH;
    }
    if(!fire && c->memory_limit && held_above(d, value, c->near_limit * (double)c->memory_limit))
      reason = MDP_REASON_NEAR_LIMIT;
    else if(!fire && held_above(d, value, (double)c->capture_size))
      reason = MDP_REASON_CAPTURE_SIZE;
    if(reason && !fire) {
      memset(&ev, 0, sizeof(ev));
      ev.time_to_limit = -1;
      ev.envelope = value < d->last_v ? value : d->last_v;
    }
    fire = reason != NULL;
  }

  d->last_t = t;
  d->last_v = value;
  d->have_last = 1;
  if(!fire)
    return 0;

  ev.reason = reason;
  ev.time = t;
  ev.rss = value;
  d->state = MDP_DETECTOR_FIRED;
  d->rearm_below = (uint64_t)(REARM_FRACTION * (double)(ev.envelope ? ev.envelope : value));
  d->last_eval = ev;
  if(out)
    *out = ev;
  return 1;
}

const char *mdp_detector_state_name(mdp_detector_state s)
{
  switch(s) {
  case MDP_DETECTOR_WARMING: return "warming";
  case MDP_DETECTOR_STABLE: return "stable";
  case MDP_DETECTOR_GROWING: return "growing";
  case MDP_DETECTOR_FIRED: return "fired";
  }
  return "unknown";
}

int mdp_detector_describe(const mdp_detector *d, char *buf, size_t len)
{
  const mdp_decision *e = &d->last_eval;
  double have = d->have_last ? d->last_t - d->origin : 0;
  double need = d->cfg.warmup > d->cfg.growth_window ? d->cfg.warmup : d->cfg.growth_window;

  switch(d->state) {
  case MDP_DETECTOR_WARMING:
    return snprintf(buf, len, "warming (%.0f/%.0f min)", have / 60, need / 60);
  case MDP_DETECTOR_STABLE: return snprintf(buf, len, "stable");
  case MDP_DETECTOR_GROWING:
    if(e->time_to_limit >= 0)
      return snprintf(buf, len, "growing %.1f MiB/min, limit in %.0f min", e->slope * 60 / MIB,
                      e->time_to_limit / 60);
    return snprintf(buf, len, "growing %.1f MiB/min", e->slope * 60 / MIB);
  case MDP_DETECTOR_FIRED: return snprintf(buf, len, "fired (%s)", e->reason ? e->reason : "?");
  }
  return snprintf(buf, len, "unknown");
}
