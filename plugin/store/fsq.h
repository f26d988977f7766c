/* memdiag plugin: file-system work of the capture runs on a thread of its
 * own (prefix mdp_fsq_).
 *
 * Everything the capture module does on CaptureDirectory can block for as
 * long as the disk does (a hung NFS mount: forever): the walk that opens
 * and checks it, making and opening a capture folder or an operator's
 * manual folder, manifest writes (write, fsync, rename), MaxUse prune
 * scans, statvfs, realpath. On the server thread that would stop every
 * connection, so run_fs.c and manual.c hand all of it to this one "memdiag
 * fs" thread as jobs, in order; a job's `done` runs afterwards on the loop
 * thread. The server thread never waits for this thread, nor for the lock
 * capture_fs.c holds while it writes.
 *
 * Bound: new work (a capture's folder, a manual folder) is refused beyond
 * MDP_FSQ_MAX waiting jobs, and the caller reports the refusal (the
 * capture fails, the operator is told): on a hung disk that is what stops
 * new work piling up. Work that continues a capture already begun (its
 * space check, its manifest) comes in through mdp_fsq_continue, which is
 * never refused for the bound, because it is bounded otherwise: a plan
 * waits for its space check before it goes on, and manifest writes are
 * coalesced (run_fs.c: one queued write per capture, always of its newest
 * state), so each capture has at most two jobs waiting; and captures
 * begin only once their folder job has run, which on a hung disk never
 * happens. Refusing a manifest instead would lose the record of what the
 * capture did; writing it in place would block the loop.
 *
 * Threading: mdp_fsq_submit and mdp_fsq_wait_idle from any thread;
 * mdp_fsq_start and mdp_fsq_stop from the thread that owns the capture
 * module (init and shutdown). Jobs run one at a time, in submission order.
 *
 * Ownership: a job is allocated by the submitter (malloc, mdp_fsq_job its
 * first member) and owned by the queue from a successful submit: work runs
 * on the fs thread, then done (if not NULL) on the loop thread, which
 * frees it; with no done, or when the loop is closed, the queue frees it.
 */
#ifndef MDP_FSQ_H
#define MDP_FSQ_H

#include <stdbool.h>

#include "loop/loop.h"

#define MDP_FSQ_MAX 64 /* jobs waiting; beyond that submit refuses */

typedef struct mdp_fsq_job {
  struct mdp_fsq_job *next;
  void (*work)(struct mdp_fsq_job *j); /* fs thread */
  void (*done)(struct mdp_fsq_job *j); /* loop thread, frees j; may be NULL */
  mdp_loop_task task;                  /* the queue's, to reach the loop */
} mdp_fsq_job;

/* Start the thread; `done` callbacks go to this loop. 0 or a negative
 * errno. Calling it while running does nothing. */
int mdp_fsq_start(mdp_loop *loop);

/* Run what is queued, then end the thread. */
void mdp_fsq_stop(void);

/* Queue a job of new work. 0; -EAGAIN when MDP_FSQ_MAX wait already;
 * -ESHUTDOWN when the thread is not running. On error the job stays the
 * caller's. */
int mdp_fsq_submit(mdp_fsq_job *j);

/* Queue a job that continues a capture already begun (see Bound above):
 * as mdp_fsq_submit, but never -EAGAIN. */
int mdp_fsq_continue(mdp_fsq_job *j);

/* True once mdp_fsq_stop has begun: a job about to make something that
 * nobody will use (a capture folder) may give up. */
bool mdp_fsq_stopping(void);

/* Jobs waiting now (for tests and the refusal message). */
unsigned mdp_fsq_waiting(void);

/* Wait until every job queued before this call has run (another thread
 * writing the same files keeps their order). */
void mdp_fsq_wait_idle(void);

#endif
