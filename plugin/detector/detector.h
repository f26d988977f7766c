/* Leak detector (prefix mdp_detector_): one per monitored series. Pure
 * code: samples in, decisions out; it reads no clock, does no I/O and has no
 * globals, so `memdiagctl replay` runs exactly what the plugin runs.
 *
 * What it watches is the caller's choice: a worker's RSS, or a memory
 * cgroup's charge (working set) against that cgroup's limit. Nothing here
 * assumes RSS: the values are bytes, the limit is cfg.memory_limit, and an
 * instance per series (one per worker, one per cgroup) each with its own
 * config and limit is the intended use; mdp_detector_set_limit follows a
 * limit that changes (a pod resized in place).
 *
 * Samples are folded into MDP_DETECTOR_BUCKETS time buckets spanning
 * GrowthWindow; each bucket keeps its minimum (the lower envelope, which GC
 * sawtooth and short spikes do not move) and maximum. A second, short ring
 * of MDP_DETECTOR_SHORT_BUCKETS buckets spans ShortWindow (20 min) and lets
 * a leak that will reach MemoryLimit soon fire before the long window and
 * WarmupTime have passed. A third, finer ring of MDP_DETECTOR_COURSE_BUCKETS
 * buckets of ShortWindow/20 holds the envelope's course (steady,
 * accelerating, or levelling off to a plateau: course.h): the urgent rule
 * fires only when that course reaches the limit within Horizon, so a
 * warm-up that levels off below it stays quiet however steep. Memory per
 * detector is therefore fixed whatever the sampling rate (about 3.8 KiB).
 *
 * Threading: none inside; a detector is used by one thread at a time.
 * Ownership: mdp_detector and mdp_detector_config are caller-owned plain
 * structs (embed them, no init allocation, nothing to free). Reason strings
 * in mdp_decision are static.
 */
#ifndef MDP_DETECTOR_H
#define MDP_DETECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "sample/sample.h"

#define MDP_DETECTOR_BUCKETS        12
#define MDP_DETECTOR_SHORT_BUCKETS  10
#define MDP_DETECTOR_COURSE_BUCKETS 40
/* Levels held before the window: the highest minimum over any three
 * consecutive buckets, one entry per three buckets, remembered for about a
 * day at the default window. A rise that only climbs back to a level
 * already held (a traffic cycle) is not new growth. */
#define MDP_DETECTOR_HISTORY        100
#define MDP_DETECTOR_FOLD           3

#define MDP_REASON_GROWTH       "sustained-growth"
#define MDP_REASON_NEAR_LIMIT   "near-limit"
#define MDP_REASON_CAPTURE_SIZE "capture-size"

typedef struct {
  uint64_t memory_limit;  /* MemoryLimit, bytes; 0 = not set */
  uint64_t capture_size;  /* CaptureSize, bytes; 0 = not set */
  double growth_window;   /* GrowthWindow, seconds */
  double min_growth_rate; /* MinGrowthRate, bytes/s; 0 = not set */
  double horizon;         /* Horizon, seconds */
  double near_limit;      /* NearLimit, fraction of MemoryLimit; 0 = off */
  double warmup;          /* WarmupTime, seconds before growth may fire */
  double short_window;    /* ShortWindow, seconds; 0 = urgent rule off */
} mdp_detector_config;

/* Defaults: no MemoryLimit, no CaptureSize, GrowthWindow 3600 s,
 * MinGrowthRate not set, Horizon 21600 s, NearLimit 0.9, WarmupTime 10800 s,
 * ShortWindow 1200 s. */
void mdp_detector_config_init(mdp_detector_config *cfg);

/* Sets one key (case-insensitive, collectd spelling) from its text value,
 * e.g. ("MemoryLimit", "1G"), spelled as keys/units.h says. Returns 0, -ENOENT for an unknown
 * key or -EINVAL for a bad value; on error writes a one-line message naming the key into err (may
 * be NULL). Used by the collectd config (numbers passed as their decimal text) and by replay. */
int mdp_detector_config_set(mdp_detector_config *cfg, const char *key, const char *value, char *err,
                            size_t errlen);

/* The table entry of key when it is one of the detector's
 * (case-insensitive; detector/keys.h), else NULL. */
struct mdp_key;
const struct mdp_key *mdp_detector_config_key(const char *key);

/* Checks the keys together (e.g. CaptureSize below MemoryLimit). Returns 0
 * or -EINVAL with a message in err. */
int mdp_detector_config_check(const mdp_detector_config *cfg, char *err, size_t errlen);

/* The early path's points are course buckets of ShortWindow / 20 (a minute
 * at the default), tuned on six samples a bucket: with fewer it catches
 * fast leaks later and fires on more warm-ups (docs/detector.md, "Limits
 * and tuning"). When samples every interval seconds leave a bucket fewer
 * (the urgent rule on), writes what that costs into buf ("gives the leak
 * detector's early path 2 samples a bucket where it was tuned on 6: ...",
 * cut to len) and returns 1; else 0. The plugin logs it at start,
 * memdiagctl replay writes it on stderr. */
int mdp_detector_interval_note(const mdp_detector_config *cfg, double interval, char *buf,
                               size_t len);

typedef struct {
  double start; /* first sample time in the bucket */
  uint64_t min;
  uint64_t max;
  uint32_t count; /* 0 = no sample fell in this bucket */
} mdp_detector_bucket;

/* Levels the process held before the window, kept across episodes. */
typedef struct {
  uint64_t evicted[MDP_DETECTOR_FOLD - 1]; /* minima of the last buckets to leave */
  unsigned evicted_n;
  uint64_t fold_max; /* highest three-bucket minimum in the current fold */
  unsigned fold_n;
  uint64_t history[MDP_DETECTOR_HISTORY]; /* fold maxima, oldest overwritten */
  unsigned head, n;
} mdp_detector_levels;

typedef enum {
  MDP_DETECTOR_WARMING, /* less than one GrowthWindow of history */
  MDP_DETECTOR_STABLE,
  MDP_DETECTOR_GROWING, /* growth seen but the rule does not fire (yet) */
  MDP_DETECTOR_FIRED    /* fired; silent until the episode ends */
} mdp_detector_state;

/* What a fire is based on. Growth fields are 0 for size-based reasons. */
typedef struct {
  const char *reason;   /* MDP_REASON_* */
  double time;          /* sample time that fired */
  uint64_t rss;         /* that sample's value */
  uint64_t envelope;    /* lower envelope at `time` (fitted) */
  double slope;         /* bytes/s over the window (Theil-Sen on bucket minima) */
  double slope_recent;  /* bytes/s over the window's second half */
  double slope_before;  /* bytes/s over the window before; 0 if unknown */
  uint32_t samples;     /* samples inside the window */
  double window;        /* seconds of history used */
  double time_to_limit; /* seconds until the trend plus the usual
                           excursion above it reaches MemoryLimit;
                           -1 when unknown. Also set for near-limit and
                           capture-size fires when the short window sees
                           growth, so a capture plan can fit the time left. */
  int urgent;           /* 1 when the short window fired (the long one had
                           not confirmed growth yet) */
  double plateau;       /* where the envelope's course levels off, bytes; 0
                           when it does not (urgent rule only) */
} mdp_decision;

/* A bucket of the course ring (40 bytes). */
typedef struct {
  float min;               /* the least sample, bytes (a float: to 128 bytes at
                              1 GiB, which leaves room for jump) */
  float spread;            /* the largest sample less the least, bytes */
  float fall;              /* the largest fall of a sample below both samples before
                              it, bytes: a GC sawtooth's drop (a one-sample spike
                              falls only back to the sample before it) */
  float trough;            /* the sample that fell so, bytes */
  float dmin;              /* the least sample less the pace (ctrend) since the
                              bucket's start: the level at its start, bytes */
  float sum;               /* the samples' sum less count times min, bytes */
  float sum_at;            /* the sum of where they fell in the bucket (0 to 1) */
  float jump;              /* the largest rise of a sample over the one before it,
                              bytes: a cache loaded at once within the bucket */
  uint16_t count;          /* 0 = no sample fell in this bucket; stops at 32767
                              (the sums and from_fall with it) */
  uint16_t min_at;         /* when the minimum was seen, in 65536ths of the bucket */
  uint16_t fall_at;        /* when the largest fall was seen, likewise */
  unsigned from_fall : 15; /* samples counted from the largest fall's trough on */
  unsigned paced : 1;      /* 1 when a pace was known (dmin is not the minimum) */
} mdp_detector_point;

typedef struct {
  mdp_detector_config cfg;
  double bucket_len;
  mdp_detector_bucket ring[MDP_DETECTOR_BUCKETS + 1]; /* closed buckets + the open one */
  unsigned head;                                      /* index of the open bucket */
  unsigned filled;  /* buckets used in the ring, open one included */
  uint64_t nbucket; /* index (from origin) of the open bucket */
  double origin;    /* time of the first sample of the episode */
  double last_t;
  uint64_t last_v;
  uint64_t prev_v;  /* the sample before last_v */
  uint64_t samples; /* since the episode began */
  int have_last;
  mdp_detector_levels held;
  /* The window's slope at each of the last NB bucket closes, so that the
   * slope now can be compared with the slope one window ago. */
  double past_slope[MDP_DETECTOR_BUCKETS];
  uint64_t past_at[MDP_DETECTOR_BUCKETS]; /* bucket index + 1; 0 = empty */
  /* ... and at the same slot one window before that (0 = none). */
  double past2_slope[MDP_DETECTOR_BUCKETS];
  mdp_detector_state state;
  mdp_detector_state long_state; /* what the long window said last */
  uint64_t rearm_below;          /* FIRED until a sample drops below this */
  mdp_decision last_eval;        /* last growth evaluation, for the state text */
  /* The short window: its own ring, closed every ShortWindow/10. */
  double sbucket_len;
  mdp_detector_bucket sring[MDP_DETECTOR_SHORT_BUCKETS + 1];
  unsigned shead, sfilled;
  uint64_t snbucket;
  unsigned sstreak;   /* consecutive short evaluations that passed */
  int sgrowing;       /* the last short evaluation saw urgent growth */
  double sslope;      /* its slope, bytes/s (0 if none), for near-limit;
                         the early path's while its verdict stands */
  mdp_decision seval; /* the last urgent evaluation (short window or early
                         path) that saw growth */
  /* The course ring: a bucket every ShortWindow/20 (0 = off). */
  double cbucket_len;
  mdp_detector_point cring[MDP_DETECTOR_COURSE_BUCKETS + 1];
  unsigned chead, cfilled;
  uint64_t cnbucket;
  double splateau;     /* the plateau the last urgent evaluation's course
                          levels off at, bytes; 0 if none */
  unsigned clooks;     /* the last early evaluations, a bit each (newest
                          lowest): 1 if its course passed; the newest
                          is the early path's verdict (growing) */
  unsigned cgrown;     /* consecutive ones whose course passed and had grown
                          enough too */
  uint64_t cknee;      /* course bucket (index + 1) of the last knee the
                          early path found; 0 = none */
  uint64_t cknee_seen; /* the open course bucket when it found it */
  double ctrend;       /* the pace the open course bucket is taken less of
                          (detector_ring.c), bytes/s; 0 if none */
  double cgap;         /* the usual sampling interval, s (smoothed; 0 until
                          known): when the open course bucket's last sample
                          is in (detector_ring.c) */
} mdp_detector;

/* Starts a detector with a copy of cfg. One detector per series: per
 * worker process (it remembers the levels the process held, so a restarted
 * worker needs a fresh one), or per cgroup, each with its own limit. */
void mdp_detector_init(mdp_detector *d, const mdp_detector_config *cfg);

/* Feeds one sample (its time in seconds, any epoch; its value in bytes).
 * Returns 1 and fills out when a capture should start, 0 when not, -EINVAL
 * when the time goes backwards or is not finite (the sample is ignored).
 * out may be NULL. */
int mdp_detector_feed(mdp_detector *d, const mdp_sample *s, mdp_decision *out);

/* Follows a new limit for the series (bytes; 0 = none), for example a
 * cgroup's memory.max changed in place. History and state are kept; the
 * next evaluation projects onto the new limit. */
void mdp_detector_set_limit(mdp_detector *d, uint64_t memory_limit);

const char *mdp_detector_state_name(mdp_detector_state s);

/* One short line for `memdiagctl status`, e.g. "warming (20/60 min)",
 * "growing 2.1 MiB/min, limit in 35 min". Returns snprintf's result. */
int mdp_detector_describe(const mdp_detector *d, char *buf, size_t len);

#endif
