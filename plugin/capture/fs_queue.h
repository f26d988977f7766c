/* memdiag plugin: file-system work of the capture runs on a thread of its
 * own (prefix mdp_fsq_).
 *
 * Manifest writes (write, fsync, rename), MaxUse prune scans and statvfs
 * can block for as long as the disk does (a hung NFS mount: forever); on
 * the server thread that would stop every connection. run.c hands them to
 * this one "memdiag fs" thread as jobs, in order, through a bounded queue;
 * a job's `done` runs afterwards on the loop thread.
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
#ifndef MDP_FS_QUEUE_H
#define MDP_FS_QUEUE_H

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

/* Queue a job. 0; -EAGAIN when MDP_FSQ_MAX wait already; -ESHUTDOWN when
 * the thread is not running. On error the job stays the caller's. */
int mdp_fsq_submit(mdp_fsq_job *j);

/* Wait until every job queued before this call has run (another thread
 * writing the same files keeps their order). */
void mdp_fsq_wait_idle(void);

#endif
