/* memdiag plugin: requests in flight to workers, and the loop functions the
 * relay and control code use (prefix mdp_relay_, mdp_loop_).
 *
 * Everything here runs on the server's loop thread only.
 *
 * Ownership: the relay owns each pending request from mdp_relay_submit until
 * its callback has run. Frames passed to mdp_loop_send_* are borrowed.
 */
#ifndef MDP_RELAY_H
#define MDP_RELAY_H

#include <stdint.h>

#include "server.h"

/* ---- implemented by server.c ---- */

/* Send a frame to a registered worker (by connection ID) or to an operator
 * connection (by its internal serial). Returns 0 (sent or queued), -ENOENT
 * (no such live connection), -EMSGSIZE (the frame is larger than
 * MaxFrameSize: not sent, the connection stays) or -EIO (the connection
 * failed and is being closed: the worker's pending requests end through
 * mdp_relay_worker_gone). */
int mdp_loop_send_worker(uint64_t connection_id, const Memdiag__V1__Frame *f);
int mdp_loop_send_operator(uint64_t serial, const Memdiag__V1__Frame *f);
int mdp_loop_on_thread(void);
uint64_t mdp_loop_started_at(void); /* unix seconds */

/* ---- implemented by relay.c ---- */

void mdp_relay_configure(uint32_t dump_timeout_ms);

/* Loop-thread half of mdp_server_request. */
void mdp_relay_submit(uint64_t connection_id, const Memdiag__V1__Request *req, uint32_t timeout_ms,
                      mdp_reply_fn done, void *arg);

/* A Reply arrived from this worker. */
void mdp_relay_on_reply(uint64_t connection_id, const Memdiag__V1__Reply *reply);

/* The worker is gone: its requests end with STATUS_UNKNOWN_CONNECTION. */
void mdp_relay_worker_gone(uint64_t connection_id);

/* Time out what is due. Returns the next deadline (md_now_ms clock) or 0. */
uint64_t mdp_relay_expire(uint64_t now_ms);

/* End every pending request with "plugin shutting down"; later submits end
 * the same way at once. Returns how many callbacks ran. */
unsigned mdp_relay_shutdown(void);

#endif
