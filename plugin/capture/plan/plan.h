/* memdiag plugin: one capture plan as a pure state machine (prefix mdp_plan_).
 *
 * Events go in (begin, space answer, step reply, timer, worker gone, memory
 * limit, abort), each with the caller's clock reading; actions come out
 * (check space, send a request, set a timer, write the manifest, notify,
 * signal the worker, done). No I/O and no clock reads here, so every
 * sequence can be replayed in a unit test.
 *
 * Ownership: an mdp_plan_t is a plain value owned by whoever declared or
 * allocated it; it holds no pointers.
 */
#ifndef MDP_PLAN_H
#define MDP_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sample/sample.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MDP_PLAN_STEPS_MAX   34 /* configured steps + the limit's final dump */
#define MDP_PLAN_SAMPLES_MAX 64

typedef enum {
  MDP_STEP_TRACE_START,
  MDP_STEP_DUMP,
  MDP_STEP_TRACE_STOP, /* stops tracing and writes a heap dump */
  MDP_STEP_GC_START,
  MDP_STEP_GC_STOP,
  MDP_STEP_SCHEDULER,
  MDP_STEP_THREADS,
  MDP_STEP_WAIT,
  /* the allocation sampler's profile (heap_profile-N.pb.gz) beside the
   * dump before it; added after each dump when heap_profiles is set. A
   * worker that cannot give one (an older hook, sampling off) leaves it
   * skipped, which does not make the capture incomplete. */
  MDP_STEP_HEAP_PROFILE,
} mdp_step_kind_t;

typedef enum {
  MDP_SS_PENDING,
  MDP_SS_RUNNING,
  MDP_SS_OK,
  MDP_SS_ERROR,   /* the worker replied with an error, or timed out */
  MDP_SS_SKIPPED, /* memdiag did not run it (space, a start step failed) */
  MDP_SS_NOT_RUN, /* the plan ended before it (worker gone, limit, shutdown) */
} mdp_step_status_t;

/* A worker's memory map by kind when a dump step ended (memmap.h): Rss
 * summed over its mappings, in bytes. */
typedef struct mdp_memmap {
  uint64_t rss, heap, anon, file, stack, other;
  unsigned mappings;
  int read; /* 0: not read (no dump step, or the worker was gone) */
} mdp_memmap_t;

typedef struct mdp_step {
  mdp_step_kind_t kind;
  mdp_step_status_t status;
  char file[64]; /* name inside the capture folder; "" when none */
  char error[256];
  char mode[16];  /* dump mode the worker used */
  char note[192]; /* the worker's, or why a wait was as long as it was */
  uint64_t bytes, duration_us, pause_us;
  int64_t started_ms, finished_ms; /* unix ms; 0 = never */
  mdp_memmap_t mem;                /* dump steps: the worker's map when it ended */
} mdp_step_t;

typedef struct mdp_plan_params {
  uint64_t interval_ms;   /* length of a wait step */
  double space_factor;    /* a dump is RSS x factor bytes (mdp_plan_dump_need) */
  bool zstd_dumps;        /* heap dumps stored as heap-N.json.zst (DumpCompression) */
  bool streamed;          /* dumps come through the plugin (DumpTransfer), known at begin */
  uint64_t keep_free;     /* bytes that must stay free after a dump */
  uint64_t max_use;       /* bytes all captures may take; 0 = unbounded */
  bool trace_allocations; /* false: trace_start dropped, trace_stop = dump */
  bool heap_profiles;     /* a heap_profile step after each dump */
} mdp_plan_params_t;

/* A plan's stage: exactly one at a time, changed only through mdp_plan_to.
 * READY: not begun, or between two steps (only inside the handling of an
 * event). A wait ends in READY (its answer came: move on) or in FINISHED
 * (the worker went, the plan was aborted); READY goes to any wait or to
 * FINISHED; FINISHED is final. */
typedef enum mdp_plan_state {
  MDP_PLAN_READY,
  MDP_PLAN_WAITING_SPACE, /* a dump waits for its space check (MDP_ACT_CHECK_SPACE) */
  MDP_PLAN_IN_FLIGHT,     /* a step's request waits for the worker's reply */
  MDP_PLAN_WAITING_TIMER, /* a wait step waits for its timer */
  MDP_PLAN_FINISHED,      /* over; .complete says how */
} mdp_plan_state_t;

typedef struct mdp_plan {
  mdp_plan_params_t p;
  mdp_step_t steps[MDP_PLAN_STEPS_MAX];
  size_t n_steps;
  size_t cur;     /* step running or next to run */
  unsigned dumps; /* heap-N numbering */
  unsigned gc_files, sched_files, thread_files;
  bool tracing, gc_active, dump_ok, restart_pending, final_added;
  mdp_plan_state_t state; /* changed by mdp_plan_to only */
  unsigned refused;       /* changes mdp_plan_to refused (a bug: 0 in every test) */
  bool complete;
  uint64_t timer_id;    /* stale timers are ignored */
  uint64_t rss;         /* latest, for the space check */
  uint64_t trigger_rss; /* when the plan was asked for */
  int64_t started_ms, finished_ms;
  int64_t limit_ms; /* when the memory limit was reported, 0 if never */
  /* Set by mdp_plan_fit: every step should be over by deadline_ms (0: no
   * deadline, waits are CaptureInterval); time_left_s as given. */
  int64_t deadline_ms;
  double time_left_s;
  char reason[256];
  char end[64]; /* "finished", "worker gone", "memory limit", ... */
  mdp_sample samples[MDP_PLAN_SAMPLES_MAX];
  size_t n_samples;
} mdp_plan_t;

typedef enum {
  MDP_ACT_CHECK_SPACE, /* answer with mdp_plan_space(); .bytes = space needed */
  MDP_ACT_SEND,        /* send the request for steps[.step] */
  MDP_ACT_TIMER,       /* call mdp_plan_timer(.timer_id) after .ms */
  MDP_ACT_MANIFEST,    /* write capture.json from the plan */
  MDP_ACT_NOTIFY,      /* .severity + .message */
  MDP_ACT_SIGNAL,      /* send RestartSignal to the worker */
  MDP_ACT_DONE,        /* the plan is over; .complete says how */
} mdp_act_kind_t;

enum { MDP_NOTIFY_FAILURE = 1, MDP_NOTIFY_WARNING = 2, MDP_NOTIFY_OKAY = 4 };

typedef struct mdp_action {
  mdp_act_kind_t kind;
  size_t step;
  uint64_t ms, timer_id, bytes;
  int severity;
  bool complete;
  char message[256];
} mdp_action_t;

#define MDP_ACTIONS_MAX 12
typedef struct mdp_actions {
  mdp_action_t a[MDP_ACTIONS_MAX];
  size_t n;
} mdp_actions_t;

/* What a worker answered to a step's request. */
typedef enum {
  MDP_REPLY_OK,
  MDP_REPLY_ERROR, /* error, refused, unsupported, timeout */
  MDP_REPLY_GONE,  /* unknown connection: the worker is gone */
} mdp_reply_status_t;

typedef struct mdp_reply {
  mdp_reply_status_t status;
  const char *error; /* may be NULL */
  const char *mode;  /* may be NULL */
  const char *note;  /* may be NULL */
  uint64_t bytes, duration_us, pause_us;
} mdp_reply_t;

/* The one place a plan's stage changes. Returns true when `to` may follow
 * the current stage (see mdp_plan_state_t) and is now the stage; otherwise
 * the stage stays, plan->refused counts the refusal and false is returned.
 * Called by the event functions below; outside plan.c only by tests. */
bool mdp_plan_to(mdp_plan_t *plan, mdp_plan_state_t to);
bool mdp_plan_is_finished(const mdp_plan_t *plan);
const char *mdp_plan_state_name(mdp_plan_state_t st);

/* Parse a Plan string ("trace_start dump gc_start wait ..."). Returns 0, or
 * -EINVAL with a message naming the bad word or unpaired step. */
int mdp_plan_parse(const char *text, mdp_step_kind_t *kinds, size_t max, size_t *n, char *err,
                   size_t errlen);

/* What asked for a plan: the reason, the series that caused it (the newest
 * MDP_PLAN_SAMPLES_MAX are kept; borrowed for the call) and the RSS then. */
typedef struct mdp_plan_trigger {
  const char *reason;
  const mdp_sample *samples;
  size_t n_samples;
  uint64_t rss;
} mdp_plan_trigger_t;

/* Set up a plan from parsed steps; trace steps follow p->trace_allocations. */
void mdp_plan_init(mdp_plan_t *plan, const mdp_plan_params_t *p, const mdp_step_kind_t *kinds,
                   size_t n, const mdp_plan_trigger_t *t);

/* A plan of one heap dump (worker at its limit, no dump yet), followed by
 * the restart signal. */
void mdp_plan_init_limit(mdp_plan_t *plan, const mdp_plan_params_t *p, uint64_t rss);

/* Fits the plan into the time the worker has left: time_left_s is the
 * projected time from now_ms until it reaches MemoryLimit (the detector's
 * time_to_limit; <= 0 or not finite: unknown, nothing changes). Each wait
 * step is then shortened, when it starts, so that every step is over within
 * MDP_PLAN_FIT_SHARE of the time left, counting an estimate for the steps
 * still to come; waits are never longer than CaptureInterval nor shorter
 * than MDP_PLAN_MIN_WAIT_MS (or CaptureInterval, if that is shorter). The
 * wait used and why goes into the step's note (capture.json). Call after
 * mdp_plan_init, before or after mdp_plan_begin. */
#define MDP_PLAN_FIT_SHARE   0.5
#define MDP_PLAN_MIN_WAIT_MS 10000
void mdp_plan_fit(mdp_plan_t *plan, int64_t now_ms, double time_left_s);

void mdp_plan_begin(mdp_plan_t *plan, int64_t now_ms, mdp_actions_t *out);
/* Answer to MDP_ACT_CHECK_SPACE: bytes available to unprivileged users on
 * the captures' filesystem, and bytes the captures folder holds now. */
void mdp_plan_space(mdp_plan_t *plan, int64_t now_ms, uint64_t avail, uint64_t used,
                    mdp_actions_t *out);
void mdp_plan_reply(mdp_plan_t *plan, int64_t now_ms, const mdp_reply_t *r, mdp_actions_t *out);
void mdp_plan_timer(mdp_plan_t *plan, int64_t now_ms, uint64_t timer_id, mdp_actions_t *out);
void mdp_plan_worker_gone(mdp_plan_t *plan, int64_t now_ms, mdp_actions_t *out);
/* RestartAfterCapture: the worker reached MemoryLimit. */
void mdp_plan_limit(mdp_plan_t *plan, int64_t now_ms, mdp_actions_t *out);
void mdp_plan_abort(mdp_plan_t *plan, int64_t now_ms, const char *why, mdp_actions_t *out);
void mdp_plan_set_rss(mdp_plan_t *plan, uint64_t rss);

/* Disk a heap dump needs at its peak, for the space check: the dump is
 * rss x space_factor bytes. zstd-compressed, it is assumed to take
 * MDP_PLAN_ZSTD_SHARE of that, a conservative share (real dumps compress
 * about 13x at level 1). A streamed dump is compressed as it arrives, so
 * only the compressed file is on disk; one the worker writes itself
 * (DumpTransfer file) is whole on disk before the plugin writes its
 * compressed copy beside it and removes it, so it needs both. */
#define MDP_PLAN_ZSTD_SHARE 0.25
uint64_t mdp_plan_dump_need(const mdp_plan_params_t *p, uint64_t rss);

/* A heap dump the plugin compresses is named with its ".zst" suffix (the
 * file the folder will hold, as every message names it); the worker writing
 * it itself (DumpTransfer file) writes the plain dump, the name without it.
 * Returns the length of that plain name. */
size_t mdp_step_plain_len(const mdp_step_t *s);

const char *mdp_step_name(mdp_step_kind_t kind);
const char *mdp_step_status_name(mdp_step_status_t st);
bool mdp_step_is_dump(mdp_step_kind_t kind);

#ifdef __cplusplus
}
#endif
#endif
