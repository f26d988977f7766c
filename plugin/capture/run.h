/* memdiag plugin: the capture plans that run (prefix mdp_caprun_).
 *
 * Internal to plugin/capture/: the table of runs, and what carries a run's
 * plan out into the world: requests to its worker (relay), timers (loop),
 * folders and manifest (capture_fs), notifications, the restart signal.
 * capture_glue.c implements capture.h on top of it.
 *
 * Threading: every function here expects mdp_capst.lock held; reply and
 * timer callbacks take it themselves.
 *
 * Ownership: the table owns every run (mdp_caprun_add to mdp_caprun_drop);
 * mdp_capst is the module's one state.
 */
#ifndef MDP_CAPTURE_RUN_H
#define MDP_CAPTURE_RUN_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture.h"
#include "loop/loop.h"
#include "plan.h"
#include "plan_sched.h"

/* One plan, queued or running, for one connection. */
typedef struct mdp_caprun {
  uint64_t conn;
  uint64_t gen; /* tells this run's callbacks from a former run's */
  bool begun;
  bool manual;
  char name[128];
  pid_t pid;
  uid_t uid;
  gid_t gid;
  char dir[MDP_CAPTURE_PATH_MAX];
  int64_t signalled_ms;
  char signal_error[128];
  /* A dump sent while RestartAfterCapture is on: when, and the timeout the
   * worker was told; the relay waits RestartDeadline longer, and what came
   * of it goes to the manifest's restart.waited. */
  int64_t dump_sent_ms;
  uint32_t dump_told_ms;
  char restart_wait[240];
  bool manifest_failed;
  bool analysing; /* handed to analyze.c, which then starts CaptureCommand */
  bool streams;   /* results go through the plugin (DumpTransfer), decided at start */
  mdp_plan_t plan;
} mdp_caprun;

typedef struct mdp_capture_state {
  pthread_mutex_t lock; /* guards everything below */
  bool ready;
  mdp_loop *loop;
  mdp_capture_config_t cfg;
  mdp_step_kind_t kinds[MDP_CAPTURE_PLAN_MAX];
  size_t n_kinds;
  mdp_sched_t sched;
  mdp_capture_counters_t counters;
  mdp_caprun **runs;
  size_t n_runs, cap_runs;
  uint64_t next_gen; /* never reset: a restarted module ignores old callbacks */
} mdp_capture_state;

extern mdp_capture_state mdp_capst;

int64_t mdp_caprun_now_ms(void); /* wall clock, as manifests record it */
mdp_plan_params_t mdp_caprun_params(void);

mdp_caprun *mdp_caprun_find(uint64_t conn);
mdp_caprun *mdp_caprun_add(uint64_t conn); /* NULL when out of memory */
void mdp_caprun_drop(mdp_caprun *r);

/* The identity a run acts on: the registry's (SO_PEERCRED) while the worker
 * is connected, else the caller's. */
void mdp_caprun_identity(mdp_caprun *r, const mdp_capture_worker_t *w);

/* A notification about the run's worker (also logged). */
void mdp_caprun_notify(int severity, const mdp_caprun *r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* RestartSignal to the run's worker, if it is still connected under the
 * same ID and PID; `why` goes into the notification. */
void mdp_caprun_signal(mdp_caprun *r, const char *why);
/* A dump sent under RestartAfterCapture ended (`how`: "was answered",
 * "ended with a timeout", "outlived its worker"): past its timeout, the
 * manifest's restart.waited says so. */
void mdp_caprun_dump_ended(mdp_caprun *r, const char *how);

bool mdp_caprun_dump_taken(const mdp_plan_t *p);

/* Start a run whose slot the scheduler granted. Returns 0, or -1 when its
 * folder could not be made: the run was counted as failed, reported and
 * dropped, and err says why. */
int mdp_caprun_begin(mdp_caprun *r, char *err, size_t errlen);

/* Carry out what the plan asked for. */
void mdp_caprun_actions(mdp_caprun *r, const mdp_actions_t *acts);

/* After any event: a finished run leaves and frees its slot, and queued
 * runs that may start now begin. */
void mdp_caprun_settle(mdp_caprun *r);
void mdp_caprun_pump(void);

#endif
