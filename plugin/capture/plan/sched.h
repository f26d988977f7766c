/* memdiag plugin: which capture plans may run (prefix mdp_sched_).
 *
 * Pure policy over all workers: one plan per process (queued or running,
 * whatever connections or names the process registered), at most
 * CaptureConcurrency plans at once, CaptureCooldown per worker identity,
 * and what to do when a worker reaches MemoryLimit under
 * RestartAfterCapture. No I/O, no clock reads: the caller passes the time.
 *
 * The queue is fair per uid (issue 24, finding 7): when a slot frees, the
 * waiting plan whose uid started a plan least recently goes first (a uid
 * that never started one first of all), oldest first within a uid. So a
 * worker of another uid starts after at most one plan of each other uid
 * that waits, however many plans one uid queued.
 *
 * A worker's identity (the `name` arguments below) is what it cannot forge:
 * its uid (SO_PEERCRED) and its certificate's CN together with the name it
 * claims, composed by mdp_sched_identity. A worker that claims another's
 * name under another uid or certificate shares no cooldown with it, so it
 * can neither suppress that worker's captures nor get it restarted without
 * a dump.
 *
 * Ownership: an mdp_sched_t owns its arrays; release with mdp_sched_free().
 */
#ifndef MDP_SCHED_H
#define MDP_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "worker_id/worker_id.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MDP_CONN_IDLE, MDP_CONN_QUEUED, MDP_CONN_RUNNING } mdp_conn_state_t;

#define MDP_SCHED_ID_MAX 320 /* an identity, as mdp_sched_identity writes it */

/* "'billing-api' (uid 1000, certificate 'memdiag worker')" into out: the
 * name and uid of who, and the CN of its certificate. */
void mdp_sched_identity(char *out, size_t len, const mdp_worker_id *who, const char *certificate);

typedef struct mdp_sched_conn {
  /* who.connection_id; who.pid, its process (SO_PEERCRED; 0: unknown,
   * shares with none); who.uid (SO_PEERCRED: the queue's round robin is
   * per uid), as its last trigger said */
  mdp_worker_id who;
  char name[MDP_SCHED_ID_MAX]; /* identity */
  mdp_conn_state_t state;
  bool manual;     /* queued by an operator: cooldown does not apply */
  bool dump_taken; /* a heap dump of this connection succeeded */
  bool limit_seen; /* the memory limit was handled once */
  uint64_t seq;    /* queue order */
  int64_t queued_ms;
} mdp_sched_conn_t;

typedef struct mdp_sched_cool {
  char name[MDP_SCHED_ID_MAX]; /* identity */
  int64_t last_ms;
} mdp_sched_cool_t;

/* When a uid last started a plan (a count of starts), for the round robin. */
typedef struct mdp_sched_uid {
  unsigned long uid;
  uint64_t last_start;
} mdp_sched_uid_t;

typedef struct mdp_sched {
  unsigned concurrency;
  uint64_t cooldown_ms;
  bool restart_after_capture;
  mdp_sched_conn_t *conns;
  size_t n_conns, cap_conns;
  mdp_sched_cool_t *cool;
  size_t n_cool, cap_cool;
  mdp_sched_uid_t *uids; /* uids with a plan queued or running, or the last to start */
  size_t n_uids, cap_uids;
  unsigned running;
  uint64_t seq;
  uint64_t starts; /* plans started so far */
} mdp_sched_t;

void mdp_sched_init(mdp_sched_t *s, unsigned concurrency, uint64_t cooldown_ms,
                    bool restart_after_capture);
void mdp_sched_free(mdp_sched_t *s);

/* What became of a trigger (mdp_sched_admit). Never an errno. */
typedef enum mdp_admit {
  MDP_ADMIT_START,     /* the caller starts the plan now; the worker counts as running */
  MDP_ADMIT_QUEUE,     /* waits behind CaptureConcurrency */
  MDP_ADMIT_BUSY,      /* a plan already runs or waits for this worker or its process */
  MDP_ADMIT_COOLDOWN,  /* CaptureCooldown for this identity */
  MDP_ADMIT_NO_MEMORY, /* nothing was changed */
} mdp_admit_t;

/* A trigger for a worker: who is, of its identity, its connection, its
 * process (who.pid, SO_PEERCRED; 0: unknown) and its uid (SO_PEERCRED). */
typedef struct mdp_sched_trigger {
  mdp_worker_id who;
  const char *name; /* its identity (mdp_sched_identity) */
  int64_t now_ms;
  bool manual; /* an operator's: CaptureCooldown does not apply */
} mdp_sched_trigger_t;

/* Admit a trigger. The refusals (BUSY, COOLDOWN, NO_MEMORY) and QUEUE put
 * the reason in why. */
mdp_admit_t mdp_sched_admit(mdp_sched_t *s, const mdp_sched_trigger_t *t, char *why, size_t whylen);

/* The plan of conn ended; dump_taken: a heap dump of it succeeded. */
void mdp_sched_finished(mdp_sched_t *s, uint64_t conn, bool dump_taken);
/* The slot of conn is given back with no dump taken (its plan never ran,
 * or ended before a dump). */
void mdp_sched_give_back(mdp_sched_t *s, uint64_t conn);

/* What mdp_sched_next found. Never an errno. */
typedef enum mdp_next {
  MDP_NEXT_NONE,    /* no queued worker may start now */
  MDP_NEXT_START,   /* *conn starts now (it counts as running) */
  MDP_NEXT_DROPPED, /* *conn fell into cooldown while queued (or memory ran out): it is no
                     * longer queued, and why says so */
} mdp_next_t;

/* The next queued worker that may start now: of the uid that started a
 * plan least recently, its oldest. */
mdp_next_t mdp_sched_next(mdp_sched_t *s, int64_t now_ms, uint64_t *conn, char *why, size_t whylen);

/* The worker is gone; forget it (a queued trigger is dropped). Returns true
 * if it was queued. */
bool mdp_sched_gone(mdp_sched_t *s, uint64_t conn);

typedef enum {
  MDP_LIMIT_IGNORE, /* RestartAfterCapture off, or already handled */
  MDP_LIMIT_PLAN,   /* a plan runs: tell it (mdp_plan_limit) */
  MDP_LIMIT_DUMP,   /* no dump yet: run a one-dump plan, then signal */
  MDP_LIMIT_SIGNAL, /* signal now (dump already taken, or cooldown: why) */
} mdp_limit_action_t;

/* The worker t->who.connection_id reached MemoryLimit (t->manual is not used). When
 * another connection of its process has a plan, that plan handles the
 * process: IGNORE (asked again on the next sample). */
mdp_limit_action_t mdp_sched_limit(mdp_sched_t *s, const mdp_sched_trigger_t *t, char *why,
                                   size_t whylen);

/* NULL when memdiag knows nothing about conn. */
const mdp_sched_conn_t *mdp_sched_find(const mdp_sched_t *s, uint64_t conn);

/* Milliseconds of cooldown left for an identity (0: none). */
uint64_t mdp_sched_cooldown_left(const mdp_sched_t *s, const char *name, int64_t now_ms);

#ifdef __cplusplus
}
#endif
#endif
