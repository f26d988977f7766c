/* memdiag plugin: the analysis of each completed capture (prefix
 * mdp_analyze_), off the server thread.
 *
 * Internal to plugin/capture/. When a plan completes with at least two heap
 * dumps and `Analyze true`, run.c hands the capture to this module instead
 * of sending its OKAY notification. One thread, at nice 19, analyses queued
 * captures one at a time (plugin/analysis, capped at AnalyzeMaxMemory),
 * writes analysis.json into the folder, adds an "analysis" summary to
 * capture.json and sends the OKAY notification naming the top retained site.
 * The last few results are kept for `memdiagctl status`.
 *
 * Threading: submit() runs with the capture module's lock (capst.h) held
 * and only takes this module's own lock; the analysis thread never takes
 * the capture module's.
 *
 * Ownership: the module owns its queue, its jobs (copies of what they need)
 * and its thread, created at the first job and joined by stop().
 */
#ifndef MDP_ANALYZE_H
#define MDP_ANALYZE_H

#include <stdbool.h>

#include "run.h"

/* Queue the analysis of r's finished plan when it applies (cfg's Analyze
 * true, the plan complete, two dumps or more). Returns true when queued: the
 * OKAY notification then comes from the analysis. The capture module's
 * lock held (cfg is its configuration, passed in so that this module does
 * not reach into its state). */
bool mdp_analyze_submit(const mdp_run *r, const mdp_capture_config_t *cfg);

/* Cancel the analysis in progress, drop the queue and join the thread.
 * Call without the capture module's lock. */
void mdp_analyze_stop(void);

#endif
