/* memdiag plugin: the capture module's one state (prefix mdp_capst_).
 *
 * Internal to plugin/capture/. What the module keeps between calls: its
 * configuration, the steps of its Plan, the scheduler (plan/sched.h), the
 * counters, the table of runs (run.h) and the last finished plans, behind
 * one mutex. Only capst.c sees how they are laid out: capture.c (the API of
 * capture.h), run.c (the runs' callbacks) and manual.c reach them through
 * the functions below, so no other file can touch a field without the lock
 * or keep a pointer into the table.
 *
 * Threading: mdp_capst_lock and mdp_capst_unlock may be called from any
 * thread; every other function expects the lock held. A pointer returned
 * (the configuration, the scheduler, the counters, a run) is valid while
 * the lock is held, and the configuration until the next mdp_capst_setup.
 *
 * Ownership: the table owns every run, from mdp_capst_add to
 * mdp_capst_drop (which releases its folder descriptor and manifest slot:
 * mdp_run_release_fs); the scheduler and the table's array are freed by
 * mdp_capst_close.
 */
#ifndef MDP_CAPST_H
#define MDP_CAPST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"
#include "loop/loop.h"
#include "capture/plan/plan.h"
#include "capture/plan/sched.h"

struct mdp_run;

void mdp_capst_lock(void);
void mdp_capst_unlock(void);

/* Copy the configuration and the loop (borrowed), parse its Plan, start the
 * scheduler and zero the counters; the module is not ready yet. 0, or a
 * negative errno with err saying why (nothing to undo). */
int mdp_capst_setup(const mdp_capture_config_t *c, mdp_loop *loop, char *err, size_t errlen);
/* Captures may run from now on (mdp_capst_ready). */
void mdp_capst_open(void);
/* Not ready any more: the table's array and the scheduler are freed (the
 * table must be empty). Also undoes an mdp_capst_setup that went no
 * further. */
void mdp_capst_close(void);
bool mdp_capst_ready(void);

const mdp_capture_config_t *mdp_capst_cfg(void);
mdp_loop *mdp_capst_loop(void);
mdp_sched_t *mdp_capst_sched(void);
mdp_capture_counters_t *mdp_capst_counters(void);

/* The parameters every plan runs with, from the configuration. */
mdp_plan_params_t mdp_capst_params(void);
/* A plan of the configured steps (Plan) for this trigger. */
void mdp_capst_plan_init(mdp_plan_t *plan, const mdp_plan_trigger_t *trig);

/* ---- the table of runs */

struct mdp_run *mdp_capst_find(uint64_t conn);
struct mdp_run *mdp_capst_add(uint64_t conn); /* NULL when out of memory */
void mdp_capst_drop(struct mdp_run *r);
size_t mdp_capst_n_runs(void);
struct mdp_run *mdp_capst_run(size_t i); /* i < mdp_capst_n_runs() */

/* ---- the last finished plans (mdp_capture_evidence) */

void mdp_capst_remember(uint64_t conn, const mdp_capture_evidence_t *e);
/* The newest of them for conn into out; out is left as it is when there is
 * none. */
void mdp_capst_last_finished(uint64_t conn, mdp_capture_evidence_t *out);

#endif
