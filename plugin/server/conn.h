/* memdiag plugin: one peer connection of the server (prefix mdp_conn_).
 *
 * Internal to plugin/server/: the state of a connection, sending, closing,
 * and the rate-limited log of what peers cause. Loop thread only.
 *
 * Ownership: server.c owns every mdp_conn (accept to sweep) and the md_conn
 * in it; `env` points at the server's settings for the connection's life.
 */
#ifndef MDP_CONN_H
#define MDP_CONN_H

#include <stdint.h>
#include <sys/types.h>

#include "md/tls.h"
#include "server.h"

/* Registered workers: at most this many connections per process; all
 * together, MaxConnections less MDP_CONN_OPERATOR_SLOTS (or a quarter of
 * MaxConnections, if less), which only operators may take; per uid, three
 * quarters of the workers' share, so that other users keep room
 * (mdp_conn_worker_limit). */
#define MDP_CONN_PER_PID        4u
#define MDP_CONN_OPERATOR_SLOTS 16u

/* Bytes a uid's connections may hold in their read buffers, partial frames
 * included, as a multiple of MaxFrameSize (plus 1 MiB); past it, its
 * connection holding most is closed. A process has at most
 * MDP_CONN_PER_PID connections, each holding at most about two frames. */
#define MDP_CONN_BUFFERED_UID_FRAMES 4u

/* Until a peer is known (a worker registered, or an operator's certificate
 * checked), the largest frame it may send: a hello fits in far less, and a
 * peer without a certificate must not make the plugin buffer MaxFrameSize. */
#define MDP_CONN_UNKNOWN_FRAME_MAX   (64u * 1024u)
/* What a Hello may announce (operation names are a few words long). */
#define MDP_HELLO_CAPABILITIES_MAX   64u
#define MDP_HELLO_CAPABILITY_LEN_MAX 64u

typedef enum {
  MDP_CONN_HANDSHAKE,
  MDP_CONN_HELLO,
  MDP_CONN_WORKER,
  MDP_CONN_OPERATOR
} mdp_conn_state;

/* What every connection of one server shares. */
typedef struct mdp_conn_env {
  const struct mdp_server_config *cfg;
  mdp_server_hooks hooks;
  /* Registered workers now: all of them, of this uid, of this pid. */
  void (*count_workers)(uid_t uid, pid_t pid, unsigned *all, unsigned *of_uid, unsigned *of_pid);
} mdp_conn_env;

typedef struct mdp_conn {
  struct mdp_conn *next;
  const mdp_conn_env *env;
  mdp_loop_watch *watch;
  uint64_t serial;
  md_conn *mc;
  mdp_conn_state state;
  int dead;    /* freed at the end of this loop turn */
  int closing; /* flushing a Goodbye, then dead */
  int more;    /* stopped at its turn's budget with frames maybe left */
  uint64_t deadline_ms;
  uint64_t last_heard_ms;
  uint64_t worker_id;
  pid_t pid;
  uid_t uid;
  gid_t gid;
  /* The peer process (workers/pidfd.h), taken at accept; -1 with the
   * reason in pidfd_err (-ESRCH: that process is gone). Owned here until a
   * hello hands it to the registry. */
  int pidfd;
  int pidfd_err;
  int stray_warned; /* a stream frame of no stream was logged (once) */
  char who[192];
} mdp_conn;

/* What one connection may take of one loop turn: this many frames or
 * bytes (whichever comes first; at least one frame), so that a peer that
 * never pauses leaves room for accepts, timers and every other peer. */
#define MDP_CONN_TURN_FRAMES 32u
#define MDP_CONN_TURN_BYTES  (1024u * 1024u)

/* May one more worker register from uid/pid? NULL if so, else why not
 * (a static string naming the limit). */
const char *mdp_conn_worker_limit(const mdp_conn *c);

/* Send a frame; returns as mdp_server_send_worker. A peer with more than
 * MaxFrameSize waiting to be written is not reading: it is dropped. */
int mdp_conn_send(mdp_conn *c, const Memdiag__V1__Frame *f);

/* Mark the connection dead (swept at the end of the turn); logs a worker's
 * departure with `why`. */
void mdp_conn_drop(mdp_conn *c, const char *why);

/* Tell the peer why in a Goodbye, then close once it is out (or soon). */
void mdp_conn_goodbye(mdp_conn *c, Memdiag__V1__Status status, const char *reason);

/* What peers cause is logged, but a peer looping on bad connections must
 * not fill the disk: at most a burst of such lines per minute, then one
 * line saying how many were left out. mdp_conn_log_roll (call it every
 * second) writes that line without waiting for the next bad connection. */
void mdp_conn_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mdp_conn_log_roll(uint64_t now_ms);

#endif
