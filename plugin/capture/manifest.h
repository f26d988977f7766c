/* memdiag plugin: a capture's manifest, capture.json (prefix
 * mdp_manifest_): what the plan did, step by step, with the worker, the
 * trigger, the restart and the analysis. The store writes it (atomically,
 * below the CaptureDirectory descriptor); this module says what it holds.
 *
 * Ownership: every function works on caller-owned values.
 * Threading: no state; any thread.
 */
#ifndef MDP_MANIFEST_H
#define MDP_MANIFEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "capture/plan/plan.h"
#include "worker_id/worker_id.h"

/* Everything the manifest says besides the plan. */
typedef struct mdp_manifest_info {
  const mdp_worker_id *who;
  const char *directory;
  const char *plan_text; /* the configured Plan */
  bool manual;
  int restart_signal;       /* 0: RestartAfterCapture off */
  int64_t signalled_ms;     /* when the signal was sent, 0 if never */
  const char *signal_error; /* why it could not be sent, or NULL */
  const char *restart_wait; /* how a dump past its timeout ended before the signal, or NULL */
  const char *analysis;     /* JSON object: the capture's analysis, or NULL */
  int dump_mode;            /* DumpMode configured: MEMDIAG__V1__DUMP_MODE__* */
  const char *mode_chosen;  /* the plugin's choice for DumpMode auto, or NULL (the worker's) */
  const char *mode_reason;  /* why, or NULL */
} mdp_manifest_info_t;

/* Write dir/capture.json (dir a capture folder of the open
 * CaptureDirectory) through the store; when the plan is finished, the capture is
 * released. Returns 0 or a negative errno. */
int mdp_manifest_write(const char *dir, const mdp_manifest_info_t *info, const mdp_plan_t *plan);

/* The manifest's JSON (always valid UTF-8) to f; errors show in ferror(f). */
void mdp_manifest_format(FILE *f, const mdp_manifest_info_t *info, const mdp_plan_t *plan);

#endif
