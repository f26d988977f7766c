/* memdiag plugin: the registered workers (prefix mdp_registry_).
 *
 * The server thread adds and removes workers; collectd's read thread samples
 * them; control requests list them. One mutex guards the table and every
 * field marked "locked" below; critical sections copy and leave.
 *
 * Entries are reference counted so that the read thread can sample a worker
 * without holding the lock while the server removes it: removal takes the
 * entry out of the table, and the last reference closes its /proc handle and
 * pidfd and frees it.
 *
 * Ownership: the registry owns every mdp_worker. mdp_registry_snapshot hands
 * out references that the caller returns with mdp_registry_release.
 */
#ifndef MDP_REGISTRY_H
#define MDP_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "detector/detector.h"
#include "workers/cgroup.h"
#include "sample/sample.h"
#include "worker_id/worker_id.h"
#include "sampler.h"
#include "workers/pidfd.h"

#define MDP_WORKER_HISTORY 32 /* samples kept for a capture manifest */

typedef struct mdp_worker {
  /* Immutable after mdp_registry_add. */
  mdp_worker_id who; /* who.connection_id is its ID */
  pid_t ppid;
  char certificate[128]; /* CN of its TLS certificate */
  char instance[128];
  char runtime[32];
  char runtime_version[32];
  char dump_directory[512];
  int same_mnt_ns;
  char **capabilities; /* owned */
  size_t n_capabilities;
  uint64_t connected_at;
  uint64_t registered_us; /* CLOCK_MONOTONIC microseconds (the kernel log's clock) */
  int proc_fd;            /* mdp_sampler_open; -1 if it could not be opened */
  int pidfd;              /* the registered process (pidfd.h); -1 if the kernel has none */
  char cgroup_err[128];   /* why cg was NULL at registration, "" otherwise */
  /* Its memory cgroup (a reference), NULL when none is known. Changed by
   * the read thread only (mdp_registry_follow_cgroup, under the lock):
   * the read thread reads it freely, other threads under the lock
   * (mdp_registry_cgroup hands out a reference). */
  mdp_cgroup *cg;

  /* Read thread only (collectd runs one read callback at a time). */
  mdp_detector detector;
  mdp_sample history[MDP_WORKER_HISTORY]; /* a ring: the newest before history_head */
  unsigned history_head, history_n;
  unsigned cg_sharing; /* registered workers in cg (itself too), set by each containers pass */
  mdp_cgroup_version cg_version;      /* of its first cgroup; NONE: it had none, never followed */
  char cg_path[MDP_CGROUP_PATH_MAX];  /* the cgroup /proc/PID/cgroup last named */
  unsigned cg_checks;                 /* passes since registration (containers.c) */
  unsigned cg_retry_at, cg_retry_gap; /* with cg NULL: the pass of its next acquire, the gap */
  bool cg_unread;                     /* its cgroup could not be sampled last pass */

  /* Locked. */
  /* Its memory cgroup's path in the hierarchy (cg_path: at registration,
   * then after each move), or, with none, what /proc/PID/cgroup names
   * first (the v2 line) at registration. */
  char cgroup[256];
  unsigned refs;
  mdp_sampler_reading last;
  double sampled_at;
  char detector_text[96];
} mdp_worker;

/* A copy of what the registry knows about a connected worker. */
typedef struct mdp_worker_info {
  mdp_worker_id who; /* as mdp_registry_who hands it out */
  pid_t ppid;
  char certificate[128]; /* CN of its TLS certificate */
  char instance[128];    /* collectd plugin_instance of its values */
  char runtime[32];
  char runtime_version[32];
  char dump_directory[512]; /* from its hello, "" if none */
  char cgroup[256];         /* its cgroup (names the container or pod), "" if unknown */
  int same_mnt_ns;          /* 1: shares collectd's mount namespace, 0: not, -1: unknown */
  bool cgroup_limited;      /* its memory cgroup has a limit (as last sampled) */
  uint64_t connected_at;    /* unix seconds */
  size_t n_capabilities;    /* operations announced in its hello */
  /* Latest read of its figures, 0 until sampled or when not configured. */
  mdp_sampler_reading last;
  double sampled_at; /* unix seconds of that read, 0 if none yet */
} mdp_worker_info;

/* What the server learnt from a hello and SO_PEERCRED. Borrowed. */
typedef struct mdp_worker_hello {
  pid_t pid, ppid;
  uid_t uid;
  gid_t gid;
  const char *name, *runtime, *runtime_version, *dump_directory;
  const char *certificate; /* CN of the peer's certificate */
  char **capabilities;
  size_t n_capabilities;
  pid_t ns_pid;       /* its PID in its own namespace (NSpid), == pid on the host */
  const char *cgroup; /* from /proc/PID/cgroup, "" or NULL if unknown */
  int same_mnt_ns;    /* 1: sees collectd's files; 0: another mount namespace; -1 unknown */
  int pidfd;          /* taken at accept (pidfd.h) or -1; mdp_registry_add owns it */
} mdp_worker_hello;

/* memory: the MDP_MEM_* figures sampled (decides which /proc file each
 * worker's proc_fd is). */
int mdp_registry_init(const mdp_detector_config *detector, unsigned memory);
void mdp_registry_destroy(void);

/* Register a worker; assigns the next connection ID (1, 2, 3, ... for the
 * plugin's lifetime, never reused). Returns 0 with *id set, -ENOMEM, or
 * -ESRCH when hello->pidfd shows that the process that connected has
 * exited (a connection it handed on registers nobody). *proc_err is 0, or
 * the negative errno of opening its /proc file (the worker is registered
 * but cannot be sampled). hello->pidfd is the registry's in every case. */
int mdp_registry_add(const mdp_worker_hello *hello, uint64_t *id, int *proc_err);

/* Send sig to the process registered as worker id, through its pidfd, so
 * never to a process that merely reuses its PID. Returns 0, -ENOENT (not
 * registered), -ESRCH (the registered process has exited: nobody was
 * signalled), -EBADF (no pidfd: the kernel has none; nothing is sent) or
 * what the kernel said. */
int mdp_registry_signal(uint64_t id, int sig);

/* How worker id's process ended (pidfd.h), and since when it was
 * registered (CLOCK_MONOTONIC microseconds). Returns 0, or -ENOENT. */
int mdp_registry_exit(uint64_t id, mdp_exit_info *out, uint64_t *registered_us);

/* Forget a worker. Returns 0 or -ENOENT. */
int mdp_registry_remove(uint64_t id);

/* References to every worker, in connection ID order. *out is a new array
 * (caller frees it through mdp_registry_release). Returns the count, or
 * (size_t)-1 on allocation failure. */
size_t mdp_registry_snapshot(mdp_worker ***out);
void mdp_registry_release(mdp_worker **workers, size_t n);

/* Store a sample and the detector's description of the worker. */
void mdp_registry_store(mdp_worker *w, const mdp_sampler_reading *s, double t,
                        const char *detector_text);

/* Locked copies for other threads. mdp_registry_info returns 0, or -ENOENT
 * for an unknown ID; mdp_registry_can is 1 when the worker announced this
 * operation name ("memory_dump", ...) in its hello, else 0. */
int mdp_registry_info(uint64_t id, mdp_worker_info *out);
/* Who the worker with this ID is: 0, or -ENOENT for an unknown ID. */
int mdp_registry_who(uint64_t id, mdp_worker_id *out);
int mdp_registry_can(uint64_t id, const char *op);
void mdp_registry_detector_text(const mdp_worker *w, char *buf, size_t len);
void mdp_registry_cgroup_text(const mdp_worker *w, char *buf, size_t len); /* w->cgroup */
void mdp_registry_last(const mdp_worker *w, mdp_sampler_reading *s, double *t);

/* The memory limit that applies to a worker: the lower of MemoryLimit and
 * its cgroup's tightest limit (as last sampled), either alone when only
 * one exists. cgroup_dir is the worker's cgroup (immutable while the
 * caller holds its reference), NULL when none is known. */
typedef enum mdp_limit_source {
  MDP_LIMIT_NONE = 0,
  MDP_LIMIT_CONFIG,
  MDP_LIMIT_CGROUP,
} mdp_limit_source;

#define MDP_WORKER_LIMIT_DIR_MAX (2 * MDP_CGROUP_PATH_MAX)

typedef struct mdp_worker_limit {
  uint64_t limit; /* bytes; 0 with MDP_LIMIT_NONE */
  mdp_limit_source source;
  char cgroup_dir[MDP_WORKER_LIMIT_DIR_MAX]; /* host directory of its cgroup, "" if none */
  uint64_t charge;                           /* the cgroup's charge at its last sample */
  bool has_charge;
} mdp_worker_limit;

void mdp_registry_limit(const mdp_worker *w, mdp_worker_limit *out);

/* Read thread: is worker w still in the memory cgroup it was in? Every
 * call re-reads /proc/PID/cgroup (one small read, nothing opened below
 * the mount); when it names another cgroup, that one is acquired as at
 * registration (mdp_cgroup_acquire: by descriptor, below the host's
 * mount, from the kernel's answers only) and becomes w->cg, kept only if
 * the worker's pidfd shows that the PID was still its own afterwards; the
 * new path is then w->cgroup too (the CGROUP of `memdiagctl workers`).
 * A worker with no cgroup (none could be read at registration or after a
 * move: out of file descriptors, a cgroup made or moved meanwhile) is
 * acquired again at growing gaps of passes, MDP_CGROUP_RETRY_FIRST
 * doubling up to MDP_CGROUP_RETRY_MAX, until one can be read. */
#define MDP_CGROUP_RETRY_FIRST 5
#define MDP_CGROUP_RETRY_MAX   320

typedef enum mdp_cgroup_move {
  MDP_CGROUP_STAYED = 0,
  MDP_CGROUP_MOVED = 1,      /* w->cg is the new one */
  MDP_CGROUP_UNREADABLE = 2, /* it moved to one the plugin cannot read: w->cg is NULL */
  MDP_CGROUP_FOUND = 3,      /* it had none, and w->cg is the one it is in now */
  MDP_CGROUP_STILL_NONE = 4, /* it has none, and the one it is in still cannot be read */
} mdp_cgroup_move;

typedef struct mdp_cgroup_move_info {
  char from[MDP_CGROUP_PATH_MAX], to[MDP_CGROUP_PATH_MAX]; /* paths in the hierarchy */
  char err[128]; /* with MDP_CGROUP_UNREADABLE, MDP_CGROUP_STILL_NONE (FOUND: the last) */
  int rc;        /* with MDP_CGROUP_STILL_NONE: mdp_cgroup_acquire's */
  unsigned gap;  /* with MDP_CGROUP_STILL_NONE: passes until the next try */
} mdp_cgroup_move_info;

mdp_cgroup_move mdp_registry_follow_cgroup(mdp_worker *w, mdp_cgroup_move_info *out);

/* A new reference to the cgroup of worker id (mdp_cgroup_release it), or
 * NULL when it is not registered or has none. */
mdp_cgroup *mdp_registry_cgroup(uint64_t id);

/* Turn a worker name into a collectd plugin_instance: letters, digits and
 * "._-" kept, anything else becomes '_'. */
void mdp_registry_sanitise(const char *name, char *out, size_t len);

#endif
