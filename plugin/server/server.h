/* memdiag plugin: the server (prefix mdp_server_).
 *
 * The server listens on the plugin's socket and owns every TLS connection:
 * handshake, hello, heartbeats, frames. It runs on an mdp_loop that the
 * caller made and turns on its own thread. It knows nothing of what the
 * frames mean beyond the hello: replies, control requests and the workers'
 * comings and goings go to the hooks its caller (memdiag.c) gives it.
 *
 * Threading: mdp_server_start and mdp_server_stop are for memdiag.c's init
 * and shutdown callbacks. The send functions are for the loop thread. Hooks
 * run on the loop thread, never while the server holds a lock: a hook may
 * call any mdp_server_* function except start and stop.
 *
 * Ownership: the loop and the hooks table are the caller's and must outlive
 * mdp_server_stop; frames passed in are borrowed.
 */
#ifndef MDP_SERVER_H
#define MDP_SERVER_H

#include <stdint.h>

#include "loop/loop.h"
#include "memdiag.pb-c.h"
#include "workers/registry.h"

struct mdp_server_config;

/* What the server hands over. Every hook is required. */
typedef struct mdp_server_hooks {
  /* A hello passed the checks (its pid is the socket peer's): register the
   * worker. Returns 0 with *id set (*proc_err as mdp_registry_add), or a
   * negative errno: the worker is sent a Goodbye. */
  int (*worker_hello)(const mdp_worker_hello *hello, uint64_t *id, int *proc_err);
  /* A registered worker's connection is gone (closed, heartbeat lost). */
  void (*worker_gone)(uint64_t connection_id);
  /* A Reply from a registered worker (borrowed for the call). */
  void (*worker_reply)(uint64_t connection_id, const Memdiag__V1__Reply *reply);
  /* A DumpChunk or DumpEnd from a registered worker (borrowed). Returns 0,
   * or a negative errno when it belongs to no stream (-ENOENT: unknown
   * request, -EINVAL: not a stream): dropped, the server reports it. */
  int (*worker_stream)(uint64_t connection_id, const Memdiag__V1__Frame *f);
  /* A Control frame from an operator; `serial` names the connection for
   * mdp_server_send_operator, `who` describes it for logs. */
  void (*control)(uint64_t serial, const char *who, const Memdiag__V1__Control *ctl);
  /* The loop is stopping: end what is in flight. Called again (with the
   * tasks its callbacks posted run in between) until it returns 0. */
  unsigned (*stopping)(void);
} mdp_server_hooks;

/* Load TLS material, listen, start the loop's thread. Returns 0 or a
 * negative errno; every failure is logged naming the file or setting. */
int mdp_server_start(const struct mdp_server_config *cfg, mdp_loop *loop,
                     const mdp_server_hooks *hooks);

/* Stop the loop: hooks->stopping ends what is in flight, tasks already
 * posted run, timers not yet due are finalized without running, connections
 * are closed (worker_gone runs for each worker) and the socket file is
 * removed. The loop is closed, not freed. */
void mdp_server_stop(void);

/* Send a frame to a registered worker (by connection ID) or to an operator
 * connection (by its serial). Loop thread only. Returns 0 (sent or queued),
 * -ENOENT (no such live connection), -EMSGSIZE (the frame is larger than
 * MaxFrameSize: not sent, the connection stays) or -EIO (the connection
 * failed and is being closed: worker_gone follows). */
int mdp_server_send_worker(uint64_t connection_id, const Memdiag__V1__Frame *f);
int mdp_server_send_operator(uint64_t serial, const Memdiag__V1__Frame *f);

/* When the server started (unix seconds), 0 when not started. */
uint64_t mdp_server_started_at(void);

#endif
