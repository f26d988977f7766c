/* memdiag plugin: the server thread and its event loop (prefix mdp_server_).
 *
 * One thread owns the listening socket, every TLS connection, the pending
 * requests and the timers. Other parts of the plugin (capture plans, the
 * read callback) reach workers through the functions below.
 *
 * Threading: every function here may be called from any thread. Work that
 * must happen on the loop (sending, timers) is handed to it internally, so
 * callbacks (mdp_task_fn, mdp_reply_fn) always run on the loop thread, never
 * inside the call that registered them, and never while the server holds a
 * lock: a callback may call any mdp_server_* function.
 *
 * Ownership: arguments are borrowed for the duration of the call; the server
 * copies what it keeps. `arg` pointers are the caller's: the server never
 * frees them.
 */
#ifndef MDP_SERVER_H
#define MDP_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "memdiag.pb-c.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*mdp_task_fn)(void *arg);

/* Run fn(arg) on the loop thread soon (FIFO). Returns 0, or a negative errno
 * (-ENOMEM, -ESHUTDOWN when the server is not running) and fn is not called. */
int mdp_server_post(mdp_task_fn fn, void *arg);

/* One-shot timer: fn(arg) runs on the loop thread after delay_ms.
 * Returns a timer id (never 0), or 0 when the server is not running. */
uint64_t mdp_server_timer_add(uint64_t delay_ms, mdp_task_fn fn, void *arg);

/* Cancel a timer. Called on the loop thread, fn is guaranteed not to run
 * afterwards; returns 0, or -ENOENT if it already ran or never existed.
 * Called from another thread, the cancel is queued and fn may still run
 * once if it was already due (returns 0). */
int mdp_server_timer_cancel(uint64_t timer_id);

/* The outcome of a request to a worker. On a worker's answer this is its
 * Reply (request_id is the server's own id). When the worker never answers
 * the server builds one: STATUS_TIMEOUT, STATUS_UNKNOWN_CONNECTION (no such
 * connection, or it went away before answering: `error` says which),
 * STATUS_ERROR "plugin shutting down". Borrowed for the callback only. */
typedef void (*mdp_reply_fn)(const Memdiag__V1__Reply *reply, void *arg);

/* Send `req` (its op and arguments; request_id is ignored: the server
 * assigns its own) to the worker with this connection ID. timeout_ms 0
 * takes req->timeout_ms, and when that is 0 too, the default for the
 * operation (mdp_server_default_timeout_ms). `done` runs exactly once, on
 * the loop thread. Returns 0, or -EINVAL (NULL req/done: done not called). */
int mdp_server_request(uint64_t connection_id, const Memdiag__V1__Request *req, uint32_t timeout_ms,
                       mdp_reply_fn done, void *arg);

/* Default timeout for an operation: seconds for ping and *_start, minutes
 * for dumps (DumpTimeout, 10 min unless configured). */
uint32_t mdp_server_default_timeout_ms(const Memdiag__V1__Request *req);

/* What the registry knows about a connected worker (a copy). */
typedef struct mdp_worker_info {
  uint64_t connection_id;
  pid_t pid; /* SO_PEERCRED (the hello had to agree) */
  pid_t ppid;
  uid_t uid; /* SO_PEERCRED */
  gid_t gid;
  char name[128];     /* from its hello */
  char instance[128]; /* collectd plugin_instance of its values */
  char runtime[32];
  char runtime_version[32];
  char dump_directory[512]; /* from its hello, "" if none */
  uint64_t connected_at;    /* unix seconds */
  size_t n_capabilities;    /* operations announced in its hello */
  /* Latest sample in bytes, 0 until sampled or when not configured. */
  uint64_t rss, pss, private_bytes, swap;
  double sampled_at; /* unix seconds of that sample, 0 if none yet */
} mdp_worker_info;

/* Copy a worker's entry. Returns 0, or -ENOENT for an unknown ID. */
int mdp_server_worker(uint64_t connection_id, mdp_worker_info *out);

/* 1 when the worker announced this operation name in its hello
 * ("memory_dump", ...), 0 otherwise or for an unknown ID. */
int mdp_server_worker_can(uint64_t connection_id, const char *op);

/* Dispatch a collectd notification (plugin "memdiag", plugin_instance the
 * worker's instance when connection_id names a live worker, else empty).
 * severity: NOTIF_FAILURE, NOTIF_WARNING or NOTIF_OKAY (collectd's values:
 * 1, 2, 4). The message is also logged. Returns 0 or a negative errno. */
int mdp_server_notify(int severity, uint64_t connection_id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Disconnect events: called on the loop thread after a worker is removed
 * from the registry (connection closed, heartbeat lost, refused). At most
 * 8 listeners; register before the server starts (from an init callback).
 * The capture module, when built in, is told directly as well
 * (mdp_capture_worker_gone). Returns 0 or -ENOSPC. */
typedef void (*mdp_gone_fn)(uint64_t connection_id, void *arg);
int mdp_server_on_worker_gone(mdp_gone_fn fn, void *arg);

/* ---- lifecycle (memdiag.c only) ---- */

struct mdp_config;

/* Load TLS material, listen, start the loop thread. Returns 0 or a negative
 * errno; every failure is logged naming the file or setting. */
int mdp_server_start(const struct mdp_config *cfg);

/* Stop the loop: pending requests complete with "plugin shutting down",
 * tasks already posted run, timers not yet due are dropped without running
 * (their `arg` is not freed: owners release what their timers hold in their
 * own shutdown, before this is called), connections are closed and the
 * socket file removed. */
void mdp_server_stop(void);

#ifdef __cplusplus
}
#endif
#endif
