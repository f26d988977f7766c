/* memdiag plugin: requests to workers and their replies (prefix mdp_relay_).
 *
 * The relay numbers each request, sends it through the send function it was
 * given (the server's, in the plugin), matches the worker's Reply to it, and
 * makes up the reply when the worker never answers: a timeout (a timer on the
 * loop), the worker gone, or the plugin shutting down. It does not know the
 * server: memdiag.c wires it to the server's hooks and send function.
 *
 * Threading: mdp_relay_request and mdp_relay_default_timeout_ms may be called
 * from any thread; everything else runs on the loop's thread. Reply
 * callbacks always run on the loop thread, never inside the call that
 * registered them, and never while the relay holds a lock.
 *
 * Ownership: the relay owns each pending request from mdp_relay_request
 * until its callback has run; `arg` stays the caller's. The request passed in
 * is borrowed for the call (copied when it must cross threads). The loop is
 * the caller's and must outlive every request.
 */
#ifndef MDP_RELAY_H
#define MDP_RELAY_H

#include <stdint.h>

#include "keys/keys.h"
#include "loop/loop.h"
#include "memdiag.pb-c.h"
#include "rstream.h"

/* The outcome of a request to a worker. On a worker's answer this is its
 * Reply (request_id is the relay's own id). When the worker never answers
 * the relay builds one: STATUS_TIMEOUT, STATUS_UNKNOWN_CONNECTION (no such
 * connection, or it went away before answering: `error` says which),
 * STATUS_ERROR "plugin shutting down". Borrowed for the callback only. */
typedef void (*mdp_reply_fn)(const Memdiag__V1__Reply *reply, void *arg);

/* Send a frame to the worker with this connection ID: returns 0 (sent or
 * queued), -ENOENT (no such worker), -EIO (the connection is closing: its
 * requests end through mdp_relay_worker_gone), or another negative errno
 * (not sent; the connection stays). */
typedef int (*mdp_relay_send_fn)(uint64_t connection_id, const Memdiag__V1__Frame *f);

/* The relay's key (relay_config.c): the default timeout of a dump. */
typedef struct mdp_relay_config {
  uint32_t dump_timeout_ms; /* DumpTimeout */
} mdp_relay_config;

void mdp_relay_config_init(mdp_relay_config *cfg);

/* The table entry of key when it is the relay's, else NULL. */
const mdp_key *mdp_relay_config_key(const char *key);

/* Set one key (see mdp_keys_set): 0, -ENOENT, or -EINVAL with a message. */
int mdp_relay_config_set(mdp_relay_config *cfg, const mdp_key_value *v, char *err, size_t errlen);

/* Before the loop turns: which loop runs the requests, how frames go out,
 * and DumpTimeout. Ends any shutdown of a former run. A NULL loop (before
 * the caller frees its loop) makes every later request fail at once with
 * -ESHUTDOWN. */
void mdp_relay_init(mdp_loop *loop, mdp_relay_send_fn send, uint32_t dump_timeout_ms);

/* Send `req` (its op and arguments; request_id is ignored: the relay assigns
 * its own) to the worker with this connection ID. timeout_ms 0 takes
 * req->timeout_ms, and when that is 0 too, mdp_relay_default_timeout_ms.
 * On 0, `done` runs exactly once, on the loop thread, after this call has
 * returned (even when memory runs out: the caller may hold a lock that
 * done takes). Otherwise done is never called: -EINVAL (NULL req/done),
 * -ENOMEM, -ESHUTDOWN (the loop is closed or gone). */
int mdp_relay_request(uint64_t connection_id, const Memdiag__V1__Request *req, uint32_t timeout_ms,
                      mdp_reply_fn done, void *arg);

/* The same, with the result stored by the plugin as sink->name in
 * sink->dir_fd (rstream.h): dumps are streamed over the connection, small
 * results asked inline and written; the reply's path names the file. The
 * sink is copied (its folder descriptor duplicated). */
int mdp_relay_request_to(uint64_t connection_id, const Memdiag__V1__Request *req,
                         uint32_t timeout_ms, const mdp_relay_sink *sink, mdp_reply_fn done,
                         void *arg);

/* How a request is waited for (mdp_relay_request_with). */
typedef struct {
  uint32_t timeout_ms; /* as mdp_relay_request's */
  /* Waited longer than the worker is told before the relay makes up
   * STATUS_TIMEOUT: a dump past its timeout may still be being written, and
   * RestartAfterCapture must not signal the worker until it answers
   * (RestartDeadline). */
  uint32_t extra_ms;
  const mdp_relay_sink *sink; /* as mdp_relay_request_to's, or NULL */
} mdp_relay_opts;

/* Either of the above, as `opts` says (borrowed for the call). */
int mdp_relay_request_with(uint64_t connection_id, const Memdiag__V1__Request *req,
                           const mdp_relay_opts *opts, mdp_reply_fn done, void *arg);

/* A DumpChunk or DumpEnd from this worker (the server's worker_stream hook);
 * returns as mdp_rstream_on_frame. */
int mdp_relay_on_stream(uint64_t connection_id, const Memdiag__V1__Frame *f);

/* Default timeout for an operation: seconds for ping and *_start, minutes
 * for dumps (DumpTimeout, 10 min unless configured). */
uint32_t mdp_relay_default_timeout_ms(const Memdiag__V1__Request *req);

/* A Reply arrived from this worker (the server's worker_reply hook). */
void mdp_relay_on_reply(uint64_t connection_id, const Memdiag__V1__Reply *reply);

/* A stream the plugin cancelled (rstream.h: its budget, a failed store)
 * ends the request CANCEL_GRACE_MS (5 s, relay.c) after the cancel at the
 * latest (plus extra_ms), as STATUS_ERROR naming the cause, even when the
 * worker keeps streaming: what it sends later is dropped and counted
 * (mdp_rstream_dropped), as is its late Reply. */

/* Replies that came after their request had ended, since the process
 * began. */
uint64_t mdp_relay_late_replies(void);

/* The worker is gone: its requests end with STATUS_UNKNOWN_CONNECTION. */
void mdp_relay_worker_gone(uint64_t connection_id);

/* End every pending request with "plugin shutting down"; later requests
 * end the same way at once. Returns how many callbacks ran. */
unsigned mdp_relay_shutdown(void);

#endif
