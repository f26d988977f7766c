/* Leak detector: see detector.h for the model and docs/detector.md for the
 * rules and their defaults. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "detector_internal.h"
#include "robust.h"

#define NB    MDP_DETECTOR_BUCKETS
#define RING  (MDP_DETECTOR_BUCKETS + 1)
#define HALF  (MDP_DETECTOR_BUCKETS / 2)
#define SNB   MDP_DETECTOR_SHORT_BUCKETS
#define SRING (MDP_DETECTOR_SHORT_BUCKETS + 1)
#define SHALF (MDP_DETECTOR_SHORT_BUCKETS / 2)
#define MIB   (1024.0 * 1024.0)

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

/* The short window (urgent rule). It fires before the long window may only
 * when the limit is near: the projected time to it is under URGENT_SHARE of
 * Horizon, and the process has already grown, since the lowest level of the
 * last hour, by URGENCY_SHARE of the room it has left. A leak that reaches
 * the limit T after it starts therefore fires about 0.29 T after it starts,
 * whatever its rate; a burst or a fill fires only if it lasts that long at a
 * rate that would reach the limit within URGENT_SHARE of Horizon. */
#define URGENCY_SHARE     0.4
/* A warm-up levelling off decelerates: the recent half of the short window
 * must grow at least this share as fast as its older half. */
#define DECEL_SHARE       0.5
/* Evaluations in a row (one per short bucket) that must agree: two when
 * the course rules out every plateau below NearLimit at FIRM_RULED_OUT
 * times the 99 % point (firm evidence), else one more (a GC sawtooth's
 * ramp or a cache loaded at once can hold a warm-up's course up for two
 * looks, rarely for three). */
#define SHORT_CONFIRM     2
#define FIRM_RULED_OUT    2.0
/* A course that some plateau below NearLimit still fits (the data do not
 * rule every such plateau out at 99 %: SHORT_RULED_OUT) does not fire the
 * urgent rule, however near its course puts the limit: a warm-up that
 * levels off at 60-80 % of the limit climbs at a leak's pace for half an
 * hour, and only its bend tells them apart. A leak keeps its slope, so the
 * bend's absence soon rules the plateaus out; one the data never rule out
 * is left to the long window and near-limit. (Until 2026-12-03 such a
 * course fired once it reached the limit within a sixth of Horizon: 6 of
 * the tune draws' 1440 warm-ups fired by it, against 1 of 540 fast leaks
 * that met the lead asked only by it.) */
#define SHORT_RULED_OUT   1.0
/* The course must reach the limit within this share of Horizon (90 min at
 * the default), not URGENT_SHARE: the lead a fast leak needs is 50 min, and
 * a warm-up whose course reaches the limit in 90-120 min has half an hour
 * more to show its bend (2 of the tune draws' 1440 warm-ups fired there;
 * no fast leak of the three variants the lead is asked for lost it). */
#define SHORT_REACH_SHARE 0.25

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
  return k ? mdp_robust_median(slopes, k) : 0.0;
}

void mdp_detector_init(mdp_detector *d, const mdp_detector_config *cfg)
{
  memset(d, 0, sizeof(*d));
  d->cfg = *cfg;
  /* config_set refuses shorter windows; this only keeps a hand-made
   * config from dividing by zero. */
  d->bucket_len = (cfg->growth_window >= NB ? cfg->growth_window : 3600) / NB;
  /* A short window as long as the long one would add nothing but noise:
   * the urgent rule is then off (a GrowthWindow of 10 min with the default
   * ShortWindow stays a valid configuration). */
  d->sbucket_len = cfg->short_window >= SNB && cfg->short_window < d->bucket_len * NB
                       ? cfg->short_window / SNB
                       : 0;
  mdp_detector_course_init(d);
  d->last_eval.time_to_limit = -1;
  d->seval.time_to_limit = -1;
  d->state = d->long_state = MDP_DETECTOR_WARMING;
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
  d->sfilled = 1;
  d->cfilled = 1;
  d->origin = t;
}

/* One of the detector's bucket rings and where it stands: len buckets, the
 * open one at *head, *filled of them used, *nbucket the open one's index. */
typedef struct {
  mdp_detector_bucket *ring;
  unsigned len;
  unsigned *head, *filled;
  uint64_t *nbucket;
} ring_cursor;

/* Moves the open bucket of ring r forward to index idx; returns 1 if a
 * bucket closed. A bucket leaving a full ring is remembered in held, unless
 * held is NULL (the short ring: the long ring covers the same time). */
static int ring_advance(const ring_cursor *r, uint64_t idx, mdp_detector_levels *held)
{
  if(idx <= *r->nbucket)
    return 0;
  uint64_t steps = idx - *r->nbucket;
  if(steps > r->len)
    steps = r->len;
  for(uint64_t s = 0; s < steps; s++) {
    *r->head = (*r->head + 1) % r->len;
    if(*r->filled < r->len)
      (*r->filled)++;
    else if(held)
      remember(held, &r->ring[*r->head]);
    memset(&r->ring[*r->head], 0, sizeof(r->ring[0]));
  }
  *r->nbucket = idx;
  return 1;
}

static void bucket_add(mdp_detector_bucket *b, double t, uint64_t v)
{
  if(!b->count) {
    b->start = t;
    b->min = b->max = v;
  }
  if(v < b->min)
    b->min = v;
  if(v > b->max)
    b->max = v;
  b->count++;
}

static void add_sample(mdp_detector *d, double t, uint64_t v)
{
  bucket_add(&d->ring[d->head], t, v);
  if(d->sbucket_len > 0)
    bucket_add(&d->sring[d->shead], t, v);
  mdp_detector_course_add(d, t, v);
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

/* Returns the slope recorded one window ago (0 if none), and in *before2
 * the one two windows ago (0 if none), and records the current one in
 * their place. */
static double remembered_slope(mdp_detector *d, double slope, double *before2)
{
  unsigned slot = (unsigned)(d->nbucket % NB);
  int valid = d->past_at[slot] == d->nbucket - NB + 1;
  double before = valid ? d->past_slope[slot] : 0;
  *before2 = valid ? d->past2_slope[slot] : 0;
  d->past2_slope[slot] = before;
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

/* The closed buckets of a window as points, oldest first, and the same
 * points split into the window's older and recent halves. Sized for the
 * long window; the short one uses fewer. */
typedef struct {
  double x[NB], y[NB], spread[NB], xo[HALF], yo[HALF], xr[HALF], yr[HALF];
  unsigned n, no, nr;
  uint32_t samples;
} window_points;
_Static_assert(SNB <= NB, "window_points must hold the short window too");

/* Reads the nb closed buckets of a ring of nb + 1 (open one at head), each
 * bucket len seconds long and nbucket the open bucket's index. */
static void window_collect(window_points *w, const mdp_detector_bucket *ring, unsigned nb,
                           unsigned head, uint64_t nbucket, double len)
{
  w->n = w->no = w->nr = 0;
  w->samples = 0;
  for(unsigned k = nb; k >= 1; k--) {
    const mdp_detector_bucket *b = &ring[(head + nb + 1 - k) % (nb + 1)];
    if(!b->count)
      continue;
    double bx = ((double)(nbucket - k) + 0.5) * len;
    w->x[w->n] = bx;
    w->y[w->n] = (double)b->min;
    w->spread[w->n] = (double)(b->max - b->min);
    w->samples += b->count;
    if(k > nb / 2) {
      w->xo[w->no] = bx;
      w->yo[w->no++] = w->y[w->n];
    } else {
      w->xr[w->nr] = bx;
      w->yr[w->nr++] = w->y[w->n];
    }
    w->n++;
  }
}

/* The robust line through a window's points and what the rules weigh
 * against it. */
typedef struct {
  double slope, slope_old, slope_new; /* whole window, older and recent half */
  double intercept;                   /* at time 0 (the episode's origin) */
  double scatter;                     /* median distance of the points from the line */
  double excursion;                   /* median max - min within a bucket */
  double recent_low;                  /* lowest of the last MDP_DETECTOR_FOLD points */
} window_fit;

/* Fits w (reorders its spread; needs w->n >= MDP_DETECTOR_FOLD). */
static void window_fit_points(window_points *w, window_fit *f)
{
  double resid[NB];
  unsigned n = w->n;

  f->slope = theil_sen(w->x, w->y, n);
  f->slope_old = theil_sen(w->xo, w->yo, w->no);
  f->slope_new = theil_sen(w->xr, w->yr, w->nr);
  for(unsigned i = 0; i < n; i++)
    resid[i] = w->y[i] - f->slope * w->x[i];
  f->intercept = mdp_robust_median(resid, n);
  for(unsigned i = 0; i < n; i++)
    resid[i] = fabs(w->y[i] - (f->intercept + f->slope * w->x[i]));
  f->scatter = mdp_robust_median(resid, n);
  f->excursion = mdp_robust_median(w->spread, n);
  f->recent_low = w->y[n - 1];
  for(unsigned i = n - 1; i > n - MDP_DETECTOR_FOLD; i--)
    if(w->y[i - 1] < f->recent_low)
      f->recent_low = w->y[i - 1];
}

/* Fills the fields of ev that both windows report alike. */
static void decision_fill(mdp_decision *ev, double t, double envelope, const window_fit *f,
                          double before, const window_points *w)
{
  ev->time = t;
  ev->envelope = envelope > 0 ? (uint64_t)envelope : 0;
  ev->slope = f->slope;
  ev->slope_recent = f->slope_new;
  ev->slope_before = before;
  ev->samples = w->samples;
}

/* Clears ev to "nothing found" (no time to the limit) before a rule runs;
 * returns the configuration the rules read. */
static const mdp_detector_config *no_decision(const mdp_detector *d, mdp_decision *ev)
{
  memset(ev, 0, sizeof(*ev));
  ev->time_to_limit = -1;
  return &d->cfg;
}

/* Fits the closed buckets of the window; fills ev and returns 1 when the
 * growth rule fires. */
static int evaluate_growth(mdp_detector *d, double t, mdp_decision *ev)
{
  window_points w;
  window_fit f;
  const mdp_detector_config *c = no_decision(d, ev);

  if(d->filled < RING)
    return 0;

  window_collect(&w, d->ring, NB, d->head, d->nbucket, d->bucket_len);
  /* A window with holes (the worker was not sampled) says too little. */
  if(w.n < NB - 2 || w.no < HALF - 1 || w.nr < HALF - 1)
    return 0;

  window_fit_points(&w, &f);
  double slope = f.slope;
  double now = t - d->origin;
  double envelope = f.intercept + slope * now;
  double rise = slope * NB * d->bucket_len;
  double before2;
  double before = remembered_slope(d, slope, &before2);

  decision_fill(ev, t, envelope, &f, before, &w);
  ev->window = NB * d->bucket_len;

  int growing = slope > 0 && f.slope_new >= RECENT_MIN_SHARE * slope &&
                f.slope_old >= OLDER_MIN_SHARE * slope && rise >= RISE_OVER_SCATTER * f.scatter &&
                rise >= MIN_RISE &&
                f.recent_low >= (double)history_high(&d->held) + NEW_LEVEL_SHARE * rise;
  if(growing && c->memory_limit) {
    double room = (double)c->memory_limit - (envelope + f.excursion);
    ev->time_to_limit = time_to_reach(room, slope, before, NB * d->bucket_len);
    /* Caches loaded late in an hour-long warm-up keep its last window as
     * steep as the one before; the slowdown since two windows ago still
     * shows the plateau (docs/detector.md, "How growth is measured"). */
    if(ev->time_to_limit >= 0) {
      double two = time_to_reach(room, slope, before2, 2 * NB * d->bucket_len);
      if(two < 0 || two > ev->time_to_limit)
        ev->time_to_limit = two;
    }
  }
  if(now < c->warmup) {
    d->long_state = MDP_DETECTOR_WARMING;
    return 0;
  }
  d->long_state = growing ? MDP_DETECTOR_GROWING : MDP_DETECTOR_STABLE;
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

/* Lowest level of the last hour: the long ring's bucket minima, open bucket
 * included. Growth "since the floor" is what the urgent rule weighs. */
static double ring_floor(const mdp_detector *d)
{
  double lo = -1;
  for(unsigned k = 0; k < d->filled; k++) {
    const mdp_detector_bucket *b = &d->ring[(d->head + RING - k) % RING];
    if(b->count && (lo < 0 || (double)b->min < lo))
      lo = (double)b->min;
  }
  return lo;
}

/* Highest level held (the minimum of three consecutive long buckets) in the
 * part of the last hour that lies before `before` (seconds since origin):
 * a climb back to where the process already was is not new growth. */
static double ring_held(const mdp_detector *d, double before)
{
  double hi = 0;
  for(unsigned k = NB; k >= MDP_DETECTOR_FOLD; k--) {
    if(k >= d->filled)
      continue;
    double lo = -1;
    unsigned j;
    for(j = 0; j < MDP_DETECTOR_FOLD; j++) {
      unsigned kk = k - j; /* k, k-1, k-2 buckets back from the open one */
      if((double)(d->nbucket - kk + 1) * d->bucket_len > before)
        break;
      const mdp_detector_bucket *b = &d->ring[(d->head + RING - kk) % RING];
      if(!b->count)
        break;
      if(lo < 0 || (double)b->min < lo)
        lo = (double)b->min;
    }
    if(j == MDP_DETECTOR_FOLD && lo > hi)
      hi = lo;
  }
  return hi;
}

/* Median max - min of the long window's closed buckets: a sawtooth longer
 * than a short bucket shows its full height only there. */
static double ring_excursion(const mdp_detector *d)
{
  double spread[NB];
  unsigned n = 0;
  for(unsigned k = 1; k < d->filled && k <= NB; k++) {
    const mdp_detector_bucket *b = &d->ring[(d->head + RING - k) % RING];
    if(b->count)
      spread[n++] = (double)(b->max - b->min);
  }
  return n >= 3 ? mdp_robust_median(spread, n) : 0;
}

/* The early path's verdict (its last look passed) stands to its next look
 * whatever the short window says between: its buckets close on the minute,
 * the course's with their last sample (detector_ring.c). */
static int early_growing(const mdp_detector *d) { return (d->clooks & 1u) != 0; }

/* Growing by the urgent rule: the short window's or the early path's. */
static int urgent_growing(const mdp_detector *d) { return d->sgrowing || early_growing(d); }

/* The urgent rule over the short window; fills ev and returns 1 when it
 * fires. The same checks as the long window (sustained, significant, new
 * territory) plus deceleration, urgency and confirmation. */
static int evaluate_short(mdp_detector *d, double t, mdp_decision *ev)
{
  window_points w;
  window_fit f;
  const mdp_detector_config *c = no_decision(d, ev);

  d->sgrowing = 0;
  d->sslope = early_growing(d) ? d->sslope : 0;
  if(!c->memory_limit || d->sbucket_len <= 0 || d->sfilled < SRING) {
    d->sstreak = 0;
    return 0;
  }
  window_collect(&w, d->sring, SNB, d->shead, d->snbucket, d->sbucket_len);
  if(w.n < SNB - 1 || w.no < SHALF - 1 || w.nr < SHALF - 1) {
    d->sstreak = 0;
    return 0;
  }

  window_fit_points(&w, &f);
  double slope = f.slope, slope_old = f.slope_old, slope_new = f.slope_new;
  double excursion = f.excursion;
  double longer = ring_excursion(d);
  if(longer > excursion)
    excursion = longer;
  double now = t - d->origin;
  double envelope = f.intercept + slope * now;
  double rise = slope * c->short_window;
  double held = ring_held(d, (double)(d->snbucket - SNB) * d->sbucket_len);
  double older = (double)history_high(&d->held);
  if(older > held)
    held = older;
  double room = (double)c->memory_limit - (envelope + excursion);
  double grown = envelope - ring_floor(d);
  /* Project at the slower of the window and its recent half. */
  double pace = slope_new < slope ? slope_new : slope;

  d->sslope = early_growing(d) ? d->sslope : slope > 0 ? slope : 0;
  decision_fill(ev, t, envelope, &f, slope_old, &w);
  ev->window = c->short_window;
  ev->urgent = 1;
  if(pace > 0)
    ev->time_to_limit = room > 0 ? room / pace : 0;

  int growing = slope > 0 && pace > 0 && slope_old >= OLDER_MIN_SHARE * slope &&
                slope_new >= RECENT_MIN_SHARE * slope && slope_new >= DECEL_SHARE * slope_old &&
                rise >= RISE_OVER_SCATTER * f.scatter && rise >= MIN_RISE &&
                f.recent_low >= held + NEW_LEVEL_SHARE * rise &&
                ev->time_to_limit <= URGENT_SHARE * c->horizon && grown >= URGENCY_SHARE * room &&
                (c->min_growth_rate <= 0 || slope >= c->min_growth_rate);
  /* Fire only when the envelope's course reaches the limit within Horizon:
   * a warm-up that levels off below it (however steep it was) does not,
   * nor one that a plateau below NearLimit still fits. */
  mdp_detector_course_look look = {0, 0, 0};
  double settle =
      (c->near_limit > 0 && c->near_limit < 1 ? c->near_limit : 1) * (double)c->memory_limit -
      excursion;
  if(growing &&
     mdp_detector_course_view(d, t, (double)c->memory_limit - excursion, settle, &look)) {
    ev->plateau = look.plateau;
    if(look.reach < 0 || look.reach > SHORT_REACH_SHARE * c->horizon ||
       look.ruled < SHORT_RULED_OUT)
      growing = 0;
#ifdef MDP_URGENT_DEBUG
    fprintf(stderr,
            "short t=%.1f reach=%.1f ruled=%.2f pl=%.0f slope=%.1f new=%.1f old=%.1f ttl=%.1f "
            "grown=%.0f room=%.0f -> %d\n",
            now / 60, look.reach / 60, look.ruled, look.plateau / MIB, slope * 60 / MIB,
            slope_new * 60 / MIB, slope_old * 60 / MIB, ev->time_to_limit / 60, grown / MIB,
            room / MIB, growing);
#endif
  }
  d->splateau = ev->plateau;
  if(!growing) {
    d->sstreak = 0;
    return 0;
  }
  d->sgrowing = 1;
  d->seval = *ev;
  /* Less than firm evidence against a plateau: one look more. */
  return ++d->sstreak >= (look.ruled >= FIRM_RULED_OUT ? SHORT_CONFIRM : SHORT_CONFIRM + 1);
}

/* Both this sample and the one before at or above the threshold: a single
 * spike does not start a capture. */
static int held_above(const mdp_detector *d, uint64_t v, double threshold)
{
  return threshold > 0 && d->have_last && (double)d->last_v >= threshold && (double)v >= threshold;
}

/* Seconds until MemoryLimit at the short window's last slope, for fires
 * that carry no projection of their own; -1 when unknown. */
static double rough_time_to_limit(const mdp_detector *d, uint64_t value)
{
  if(!d->cfg.memory_limit || d->sslope <= 0)
    return -1;
  double room = (double)d->cfg.memory_limit - (double)value;
  return room > 0 ? room / d->sslope : 0;
}

static uint64_t bucket_index(double since, double len)
{
  double idx = since / len;
  return idx < 0x1p63 ? (uint64_t)idx : UINT64_MAX;
}

int mdp_detector_feed(mdp_detector *d, const mdp_sample *s, mdp_decision *out)
{
  double t = s->time;
  uint64_t value = s->value;
  mdp_decision ev;
  const mdp_detector_config *c = &d->cfg;
  const char *reason = NULL;
  int fire = 0;

  if(!isfinite(t) || (d->have_last && t < d->last_t))
    return -EINVAL;
  if(!d->have_last || (d->state == MDP_DETECTOR_FIRED && value < d->rearm_below))
    start_episode(d, t);

  /* A time absurdly far past the episode's start (a csv line with
   * 1e40 as its epoch) must not be converted out of uint64_t's range:
   * undefined behaviour (found by fuzz_series_csv). Such a sample closes
   * every bucket, as any long gap does. */
  ring_cursor lr = {d->ring, RING, &d->head, &d->filled, &d->nbucket};
  ring_cursor sr = {d->sring, SRING, &d->shead, &d->sfilled, &d->snbucket};
  int closed = ring_advance(&lr, bucket_index(t - d->origin, d->bucket_len), &d->held);
  int sclosed =
      d->sbucket_len > 0 && ring_advance(&sr, bucket_index(t - d->origin, d->sbucket_len), NULL);
  int cclosed = d->cbucket_len > 0 &&
                mdp_detector_course_advance(d, bucket_index(t - d->origin, d->cbucket_len));
  add_sample(d, t, value);
  cclosed |= mdp_detector_course_close_last(d, t);

  if(d->state != MDP_DETECTOR_FIRED) {
    if(closed) {
      fire = evaluate_growth(d, t, &ev);
      d->last_eval = ev;
    }
    if(sclosed) {
      mdp_decision sev;
      /* Evaluated even when the long window fired, so that the urgent
       * rule's streak and slope stay current. */
      if(evaluate_short(d, t, &sev) && !fire) {
        ev = sev;
        fire = 1;
      }
    }
    if(cclosed) {
      mdp_decision cev;
      /* A fast leak from start-up, before the short window has filled or
       * confirmed it: its course alone (detector_course.c). */
      if(mdp_detector_course_early(d, t, &cev) && !fire) {
        ev = cev;
        fire = 1;
      }
    }
    d->state = urgent_growing(d) && d->long_state != MDP_DETECTOR_GROWING ? MDP_DETECTOR_GROWING
                                                                          : d->long_state;
    if(fire)
      reason = MDP_REASON_GROWTH;
    if(!fire && c->memory_limit && held_above(d, value, c->near_limit * (double)c->memory_limit))
      reason = MDP_REASON_NEAR_LIMIT;
    else if(!fire && held_above(d, value, (double)c->capture_size))
      reason = MDP_REASON_CAPTURE_SIZE;
    if(reason && !fire) {
      memset(&ev, 0, sizeof(ev));
      ev.time_to_limit = rough_time_to_limit(d, value);
      ev.envelope = value < d->last_v ? value : d->last_v;
    }
    fire = reason != NULL;
  }

  d->last_t = t;
  d->prev_v = d->last_v;
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

void mdp_detector_set_limit(mdp_detector *d, uint64_t memory_limit)
{
  d->cfg.memory_limit = memory_limit;
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
  /* A fast leak shows as growing from the short window's evaluation while
   * the long window still warms up. */
  const mdp_decision *e =
      urgent_growing(d) && d->long_state != MDP_DETECTOR_GROWING && d->state != MDP_DETECTOR_FIRED
          ? &d->seval
          : &d->last_eval;
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
