/* memdiag plugin: automatic capture plans (prefix mdp_capture_).
 *
 * When the detector (or an operator's `memdiagctl capture`) decides that a
 * worker's memory is worth capturing, this module runs a capture plan on
 * that worker: heap dumps, GC profile, scheduler and thread dumps, written
 * by the worker into a new folder under CaptureDirectory, with a
 * capture.json manifest, collectd notifications and counters. With
 * RestartAfterCapture it also signals a worker that reached MemoryLimit,
 * after its dump finished. Without it memdiag never signals anything.
 *
 * Threading: every function below may be called from any thread (collectd's
 * read threads, the server loop, the config thread). The module keeps its
 * state behind one mutex and never calls back into the caller while holding
 * it. Requests and replies go through the relay (server/relay.h), timers
 * through the server's loop (loop/loop.h).
 *
 * Ownership: strings passed in are borrowed for the duration of the call;
 * the module copies what it keeps. Nothing returned needs freeing.
 */
#ifndef MDP_CAPTURE_H
#define MDP_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture/plan/plan.h"
#include "capture/plan/request.h"
#include "sample/sample.h"
#include "ship/ship.h"
#include "store/store.h"
#include "worker_id/worker_id.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mdp_loop;

#define MDP_CAPTURE_PATH_MAX 4096
#define MDP_CAPTURE_PLAN_MAX 32 /* steps in one plan */

/* ---------------------------------------------------------------- config */

typedef struct mdp_capture_config {
  char directory[MDP_CAPTURE_PATH_MAX]; /* CaptureDirectory */
  char plan[512];                       /* Plan: step names, space-separated */
  bool trace_allocations;               /* TraceAllocations */
  int dump_mode;                        /* DumpMode: MEMDIAG__V1__DUMP_MODE__* */
  bool dump_shapes;                     /* DumpShapes (false for Reap) */
  double dump_space_factor;             /* DumpSpaceFactor: needed = RSS x factor */
  uint64_t keep_free;                   /* KeepFree: bytes left free after a dump */
  uint64_t
      fork_margin;  /* ForkMargin: kept free beside a fork's copy-on-write in a limited cgroup */
  uint64_t max_use; /* MaxUse: bytes for all captures; 0 = unbounded */
  uint64_t interval_ms;         /* CaptureInterval */
  unsigned concurrency;         /* CaptureConcurrency */
  uint64_t cooldown_ms;         /* CaptureCooldown, per worker name */
  bool restart_after_capture;   /* RestartAfterCapture */
  int restart_signal;           /* RestartSignal */
  uint32_t step_timeout_ms;     /* StepTimeout: 0 = the server's default per operation */
  uint64_t restart_deadline_ms; /* RestartDeadline: wait past a dump's timeout */
  int dump_transfer;            /* DumpTransfer: MDP_TRANSFER_* (plan/request.h) */
  bool dump_compression;        /* DumpCompression: zstd (true) or none */
  int dump_compression_level;   /* DumpCompressionLevel: zstd level, 1..19 */
  bool analyze;                 /* Analyze: the retained set after each capture */
  uint64_t analyze_max_memory;  /* AnalyzeMaxMemory: bytes; 0 = no cap */
  mdp_ship_config_t command;    /* CaptureCommand* (capture/command.h) */
} mdp_capture_config_t;

/* Fill in every default (see docs/capture.md). */
void mdp_capture_config_init(mdp_capture_config_t *cfg);

/* The table entry of key when it is one of the capture keys
 * (case-insensitive; detector/keys.h; the CaptureCommand keys are ship/'s,
 * mdp_ship_config_key), else NULL. */
struct mdp_key;
const struct mdp_key *mdp_capture_config_key(const char *key);

/* Set one key from its text value ("CaptureInterval", "60s").
 * Returns 0, -ENOENT when the key is not a capture key (the caller tries
 * its own keys or reports an unknown key), -EINVAL when the value is bad
 * (err holds a message naming the key). */
int mdp_capture_config_set(mdp_capture_config_t *cfg, const char *key, const char *value, char *err,
                           size_t errlen);

/* Checks that need every key (e.g. the Plan pairs its start/stop steps).
 * Returns 0 or -EINVAL with a message in err. */
int mdp_capture_config_check(const mdp_capture_config_t *cfg, char *err, size_t errlen);

/* ---------------------------------------------------------------- lifecycle */

/* Copy the config and get ready; timers go on `loop` (borrowed: it must
 * outlive mdp_capture_shutdown). CaptureDirectory is opened, checked and
 * created (0711) if missing right away, on the capture module's
 * file-system thread: a misconfigured one is logged at startup (captures
 * check it again). Call from the plugin's init callback, after the server
 * is up. Returns 0 or a negative errno (logged). */
int mdp_capture_init(const mdp_capture_config_t *cfg, struct mdp_loop *loop);

/* Ends every plan (manifests say "complete": false, "plugin shutdown"). */
void mdp_capture_shutdown(void);

/* ---------------------------------------------------------------- events */

/* What the caller knows about a worker at the time of the call. While the
 * worker is connected, the module acts on the registry's identity
 * (mdp_registry_who), not on who. */
typedef struct mdp_capture_worker {
  mdp_worker_id who;  /* SO_PEERCRED; the capture folder is chowned to who.uid */
  uint64_t rss;       /* latest sample in bytes; 0 if unknown */
  double time_left_s; /* detector's projected time to MemoryLimit; <= 0: unknown */
} mdp_capture_worker_t;

#define MDP_CAPTURE_MANUAL 1u /* operator request: ignores CaptureCooldown */

/* What became of a request to capture a worker. The refusals (BUSY,
 * COOLDOWN, OUTSIDE) are counted as skipped and notified (FAILURE); FAILED
 * is counted as failed and notified; NO_WORKER and NOT_RUNNING are neither. */
/* The refusals are negative and below -MDP_CAPTURE_ERR_BASE: never a
 * negated errno. */
#define MDP_CAPTURE_ERR_BASE 3000
typedef enum mdp_capture_outcome {
  MDP_CAPTURE_STARTED = 0,                               /* the plan runs */
  MDP_CAPTURE_QUEUED = 1,                                /* waits behind CaptureConcurrency */
  MDP_CAPTURE_NO_WORKER = -(MDP_CAPTURE_ERR_BASE + 1),   /* no worker with that connection ID */
  MDP_CAPTURE_NOT_RUNNING = -(MDP_CAPTURE_ERR_BASE + 2), /* the module is not running */
  MDP_CAPTURE_BUSY = -(MDP_CAPTURE_ERR_BASE + 3), /* a plan already runs or waits for this worker */
  MDP_CAPTURE_COOLDOWN = -(MDP_CAPTURE_ERR_BASE + 4), /* CaptureCooldown for this worker name */
  MDP_CAPTURE_OUTSIDE =
      -(MDP_CAPTURE_ERR_BASE + 5), /* CaptureDirectory is outside the worker's dump directory */
  MDP_CAPTURE_FAILED = -(MDP_CAPTURE_ERR_BASE + 6), /* the capture folder could not be made */
  MDP_CAPTURE_NO_MEMORY = -(MDP_CAPTURE_ERR_BASE + 7),
} mdp_capture_outcome;

/* How a started capture went, once its folder was made or not (see
 * mdp_capture_start): STARTED with its folder in dir, or FAILED / OUTSIDE
 * with err saying why. Runs on the server's loop thread, without the
 * module's lock; the strings are borrowed for the call. */
typedef void (*mdp_capture_started_fn)(void *arg, mdp_capture_outcome rc, const char *dir,
                                       const char *err);

/* "cooldown", "busy", ... for logs and replies. */
const char *mdp_capture_outcome_name(mdp_capture_outcome o);

/* Start the plan on a worker (the detector fired, or an operator asked).
 * Returns STARTED, QUEUED, or a negative outcome with a message in err.
 * STARTED means its folder is being made on the file-system thread (the
 * disk may be slow: the caller's thread never waits for it); cb (may be
 * NULL) then learns, later and on the loop thread, whether the capture
 * began (STARTED, its folder) or not (FAILED, or OUTSIDE when DumpTransfer
 * is file and CaptureDirectory lies outside the worker's dump directory).
 * cb runs exactly once after a STARTED return (unless the loop closes
 * first), never otherwise. */
typedef struct mdp_capture_opts {
  const char *reason;
  /* The series that caused the trigger (unix seconds, bytes; goes into the
   * manifest; borrowed for the call). NULL for an operator's capture. */
  const mdp_sample *samples;
  size_t n_samples;
  unsigned flags;            /* MDP_CAPTURE_MANUAL */
  mdp_capture_started_fn cb; /* may be NULL */
  void *arg;
} mdp_capture_opts_t;

mdp_capture_outcome mdp_capture_start(const mdp_capture_worker_t *w, const mdp_capture_opts_t *o,
                                      char *err, size_t errlen);

/* Call for every worker on every sample. Keeps the RSS used by the space
 * check current and, when limit_reached (RSS >= MemoryLimit) and
 * RestartAfterCapture is set, lets the dump in progress finish (or takes
 * one) and then signals the worker once. */
void mdp_capture_observe(const mdp_capture_worker_t *w, bool limit_reached);

/* The worker's connection is gone (exit, disconnect, heartbeat loss). */
void mdp_capture_worker_gone(uint64_t connection_id);

/* A manual folder, as mdp_capture_manual_folder's answer hands it over.
 * limits: the same byte budget as a capture's dump (issue 24): at most
 * twice the worker's RSS x DumpSpaceFactor from the worker (no such bound
 * when its RSS is not known yet, or DumpSpaceFactor is 0), at most the room
 * beyond KeepFree that statvfs found when the folder was made, and KeepFree
 * checked again as the file grows. Strings are borrowed for the call. */
typedef struct mdp_capture_folder {
  const char *dir;
  int dir_fd;     /* borrowed for the call: dup it to keep it */
  int zstd_level; /* 0: none */
  mdp_store_limits limits;
} mdp_capture_folder_t;

/* The answer to mdp_capture_manual_folder, on the loop thread: rc 0 with
 * the folder, or a negative errno with err saying why (folder NULL; -ENOSPC
 * when less than KeepFree, or less than the dump is assumed to need, is
 * free). */
typedef void (*mdp_capture_folder_fn)(void *arg, int rc, const mdp_capture_folder_t *folder,
                                      const char *err);

/* Who the manual dump is of, and whom to tell. */
typedef struct mdp_capture_manual {
  mdp_worker_id who; /* its name and pid name the folder */
  uint64_t rss;      /* its latest sample in bytes; 0: not known */
  mdp_capture_folder_fn cb;
  void *arg;
} mdp_capture_manual_t;

/* A new folder for an operator's dump without a path:
 * CaptureDirectory/manual/<worker>-<pid>-<UTC>/ (the plugin's, 0700), made
 * on the capture module's file-system thread. Returns 0 and cb runs once,
 * later, on the loop thread (unless the loop closes first); or a negative
 * errno with err saying why (no cb: the module is not running or too much
 * file-system work waits). Any thread. */
int mdp_capture_manual_folder(const mdp_capture_manual_t *m, char *err, size_t errlen);

/* ---------------------------------------------------------------- status */

typedef struct mdp_capture_info {
  uint64_t connection_id;
  char worker[128];
  char reason[256];
  char directory[MDP_CAPTURE_PATH_MAX];
  char step[64];       /* "dump (2/9)", "wait (5/9)", "queued" */
  uint64_t started_at; /* unix seconds; 0 while queued */
} mdp_capture_info_t;

typedef struct mdp_capture_counters {
  uint64_t started, completed, failed, skipped, restarts;
} mdp_capture_counters_t;

/* Plans running or queued; returns how many exist (may exceed max). */
size_t mdp_capture_list(mdp_capture_info_t *out, size_t max);

/* The last finished captures with their analysis, newest first. */
typedef struct mdp_capture_recent {
  uint64_t connection_id;
  char worker[128];
  char directory[MDP_CAPTURE_PATH_MAX];
  char analysis[256];   /* "analysing", the leak suspect, or why there is none */
  uint64_t finished_at; /* unix seconds */
} mdp_capture_recent_t;

#define MDP_CAPTURE_RECENT_MAX 8

/* Copies up to max of them; returns how many were copied. */
size_t mdp_capture_recent(mdp_capture_recent_t *out, size_t max);

void mdp_capture_get_counters(mdp_capture_counters_t *out);

/* What captures of a connection left behind, for a report of its death:
 * its plan still running (its dumps so far), the last one finished
 * (complete or not) among the last MDP_CAPTURE_EVIDENCE_MAX finished
 * plans, or none. */
typedef enum mdp_capture_evidence_kind {
  MDP_EVIDENCE_NONE = 0,
  MDP_EVIDENCE_RUNNING,    /* a plan was still running */
  MDP_EVIDENCE_COMPLETE,   /* its last plan finished complete */
  MDP_EVIDENCE_INCOMPLETE, /* its last plan finished incomplete */
} mdp_capture_evidence_kind;

typedef struct mdp_capture_evidence {
  mdp_capture_evidence_kind kind;
  char directory[MDP_CAPTURE_PATH_MAX];
  unsigned dumps; /* heap dumps taken (status ok) */
} mdp_capture_evidence_t;

#define MDP_CAPTURE_EVIDENCE_MAX 16

void mdp_capture_evidence(uint64_t connection_id, mdp_capture_evidence_t *out);

/* One word for `memdiagctl status` / WorkerInfo.plan_state:
 * "idle", "queued", "running: <step>", "cooldown", "signalled". */
void mdp_capture_plan_state(uint64_t connection_id, char *buf, size_t len);

/* Dispatch the capture counters as collectd values (plugin memdiag, type
 * "counter", type instances captures_started/completed/failed/skipped,
 * restarts). Call from the plugin's read callback. */
int mdp_capture_read(void);

#ifdef __cplusplus
}
#endif
#endif
