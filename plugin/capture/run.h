/* memdiag plugin: the capture plans that run (prefix mdp_run_).
 *
 * Internal to plugin/capture/: a run (one plan on one worker) and what
 * carries its plan out into the world: requests to its worker (relay), timers (loop),
 * folders and manifest (capture_fs, through the fs thread: run_fs.c),
 * notifications, the restart signal. capture.c implements capture.h
 * on top of it.
 *
 * A run the scheduler lets start is first `opening`: its folder is made on
 * the fs thread (store/fsq.h), and only when that answers, back on the loop
 * thread, does it begin (or fail). No step, timer or manifest exists before
 * that, so events keep their order; MemoryLimit reached meanwhile is kept
 * and told to the plan when it begins.
 *
 * Threading: every function here expects the module's lock (capst.h)
 * held; reply, timer and fs-thread callbacks take it themselves. The fs
 * thread never takes it.
 *
 * Ownership: the table of runs (capst.h: mdp_capst_add to mdp_capst_drop)
 * owns every run, with its folder descriptor and its reference to its
 * manifest slot.
 */
#ifndef MDP_RUN_H
#define MDP_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture.h"
#include "manifest.h"
#include "store/capfs.h"
#include "loop/loop.h"
#include "capture/plan/plan.h"
#include "capture/plan/sched.h"

/* A run's stage, changed by mdp_run_to only: QUEUED (behind
 * CaptureConcurrency, or granted and not yet asked for its folder) ->
 * OPENING (its folder is being made on the fs thread) -> BEGUN (the plan
 * runs). A run that will not begin is dropped from the stage it is in. */
typedef enum mdp_run_stage {
  MDP_RUN_QUEUED,
  MDP_RUN_OPENING,
  MDP_RUN_BEGUN,
} mdp_run_stage_t;

/* One plan, queued or running, for one connection. */
typedef struct mdp_run {
  uint64_t conn;
  uint64_t gen;          /* tells this run's callbacks from a former run's */
  mdp_run_stage_t stage; /* changed by mdp_run_to only */
  bool manual;
  mdp_worker_id who; /* who.connection_id == conn once mdp_run_identity ran */
  char dir[MDP_CAPTURE_PATH_MAX];
  int64_t signalled_ms;
  char signal_error[128];
  /* A dump sent while RestartAfterCapture is on: when, and the timeout the
   * worker was told; the relay waits RestartDeadline longer, and what came
   * of it goes to the manifest's restart.waited. */
  int64_t dump_sent_ms;
  uint32_t dump_told_ms;
  char restart_wait[240];
  bool limit_pending; /* MemoryLimit reached while opening: the plan is told once begun */
  bool limit_signal;  /* a MemoryLimit dump: signal even if no folder can be made */
  int dir_fd;         /* its folder once made, else -1 (the run's) */
  struct mdp_run_manifest *manifest; /* coalesced manifest writes (run_fs.c) */
  bool analysing;                    /* handed to analyze.c, which then starts CaptureCommand */
  bool streams; /* results go through the plugin (DumpTransfer), decided at start */
  /* DumpMode auto, decided by the plugin for a worker in a memory-limited
   * cgroup at its last dump ("" when the worker decides). */
  char mode_chosen[8];
  char mode_reason[400];
  uint64_t room; /* bytes the next dump may take on disk (KeepFree, MaxUse), at its space check */
  mdp_plan_t plan;
} mdp_run;

/* Heap dumps of the plan that succeeded. */
unsigned mdp_run_dumps_taken(const mdp_plan_t *p);

int64_t mdp_run_now_ms(void); /* wall clock, as manifests record it */

/* The one place a run's stage changes: true when `to` follows the current
 * stage (QUEUED -> OPENING -> BEGUN); otherwise the stage stays, the
 * refusal is logged as a bug, and false is returned. */
bool mdp_run_to(mdp_run *r, mdp_run_stage_t to);

/* The identity a run acts on: the registry's (SO_PEERCRED) while the worker
 * is connected, else the caller's. */
void mdp_run_identity(mdp_run *r, const mdp_capture_worker_t *w);

/* A notification about the run's worker (also logged). */
void mdp_run_notify(int severity, const mdp_run *r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* RestartSignal to the run's worker, if it is still connected under the
 * same ID and PID; `why` goes into the notification. */
void mdp_run_signal(mdp_run *r, const char *why);
/* A dump sent under RestartAfterCapture ended (`how`: "was answered",
 * "ended with a timeout", "outlived its worker"): past its timeout, the
 * manifest's restart.waited says so. */
void mdp_run_dump_ended(mdp_run *r, const char *how);

bool mdp_run_dump_taken(const mdp_plan_t *p);

/* A begun run of this connection and generation (a callback's token), or
 * NULL when it has gone since. */
mdp_run *mdp_run_claim(uint64_t conn, uint64_t gen);

/* Start a run whose slot the scheduler granted: its folder is made on the
 * fs thread, then it begins, and cb (may be NULL) learns on the loop thread
 * how that went (exactly once, after this call returned; never if the loop
 * closes first). Returns 0, or a negative errno when the job could not even
 * be queued (that of mdp_run_open_folder):
 * the run was counted as failed, reported and dropped, err says why and cb
 * is not called. */
int mdp_run_begin(mdp_run *r, mdp_capture_started_fn cb, void *arg, char *err, size_t errlen);

/* What the fs thread made of an opening run's folder. */
typedef struct mdp_run_folder {
  int rc;       /* 0 or a negative errno */
  bool outside; /* refused: DumpTransfer file, CaptureDirectory outside the dump directory */
  bool streams; /* results go through the plugin */
  int dir_fd;   /* the folder's descriptor (rc 0) */
  char dir[MDP_CAPTURE_PATH_MAX];
  char err[512]; /* why, when rc != 0 */
} mdp_run_folder;

/* The folder of an opening run is made (or not): the run begins (STARTED;
 * it takes f->dir_fd) or is counted, reported and dropped (FAILED, or
 * OUTSIDE counted as skipped; f->err says why). */
mdp_capture_outcome mdp_run_opened(mdp_run *r, mdp_run_folder *f);

/* Carry out what the plan asked for. */
void mdp_run_actions(mdp_run *r, const mdp_actions_t *acts);

/* After any event: a finished run leaves and frees its slot, and queued
 * runs that may start now begin. */
void mdp_run_settle(mdp_run *r);
void mdp_run_pump(void);

/* ---- run_fs.c: the runs' file-system jobs. They never reach into run.c:
 * what a job needs is passed in, and its answer goes, on the loop thread
 * and without any lock held, to the callback given. */

/* The answer to mdp_run_open_folder: the run of conn/gen may be gone.
 * Returns what became of the capture (f->err says why when not STARTED). */
typedef mdp_capture_outcome (*mdp_run_opened_fn)(uint64_t conn, uint64_t gen, mdp_run_folder *f);

/* Who hears of a folder job: opened, then started (may be NULL) with arg. */
typedef struct mdp_run_open {
  mdp_run_opened_fn opened;
  mdp_capture_started_fn started;
  void *arg;
} mdp_run_open_t;

/* Queue the making of r's folder below cfg->directory (the realpath check
 * of DumpTransfer file and the streams decision included); o->opened, then
 * o->started, run afterwards. 0, or a negative errno with err saying why
 * (-EAGAIN: MDP_FSQ_MAX jobs wait) and neither runs. */
int mdp_run_open_folder(const mdp_run *r, const mdp_capture_config_t *cfg, const mdp_run_open_t *o,
                        char *err, size_t errlen);

/* An empty folder whose run went before it began: released and removed on
 * the fs thread (logged when it cannot be). */
void mdp_run_discard(const char *dir);

/* MaxUse prune and statvfs for a dump of `need` bytes; answer gets the
 * bytes available and those the captures use. 0, or a negative errno (no
 * answer will come). */
typedef void (*mdp_run_space_fn)(uint64_t conn, uint64_t gen, uint64_t avail, uint64_t used);
int mdp_run_check_space(const mdp_run *r, const mdp_capture_config_t *cfg, uint64_t need,
                        mdp_run_space_fn answer);

/* What a capture's manifest says besides the analysis, copied from its run
 * (the run may be gone by the time it is written): the coalesced writes
 * here and analyze.c's last one. */
typedef struct mdp_run_record {
  mdp_plan_t plan;
  mdp_worker_id who;
  bool manual;
  int restart_signal; /* 0: RestartAfterCapture off */
  int64_t signalled_ms;
  char dir[MDP_CAPTURE_PATH_MAX], plan_text[512];
  char signal_error[128], restart_wait[240];
  int dump_mode; /* DumpMode configured */
  char mode_chosen[8], mode_reason[400];
} mdp_run_record;

void mdp_run_record_of(mdp_run_record *rec, const mdp_run *r, const mdp_capture_config_t *cfg);
/* The manifest's info, its strings borrowed from rec; analysis may be NULL. */
mdp_manifest_info_t mdp_run_record_info(const mdp_run_record *rec, const char *analysis);

/* Queue a write of r's manifest as it is now (coalesced: see store/fsq.h). */
void mdp_run_write_manifest(mdp_run *r, const mdp_capture_config_t *cfg);

/* Check (and make) CaptureDirectory on the fs thread, keeping nothing
 * open, and log the outcome (at init). */
void mdp_run_check_root(const char *root);

/* Close the run's folder descriptor, drop its manifest slot (a queued write
 * still happens). mdp_capst_drop calls it. */
void mdp_run_release_fs(mdp_run *r);

#endif
