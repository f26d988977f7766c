/* memdiag plugin: the server's side of the protocol on one connection
 * (prefix mdp_hello_): TLS handshake, hello and Welcome, heartbeats, and
 * handing replies and control requests to the server's hooks.
 *
 * Internal to plugin/server/; loop thread only. The connection is borrowed.
 */
#ifndef MDP_HELLO_H
#define MDP_HELLO_H

#include "conn.h"

/* Serve a connection that poll() found ready: handshake, flush, read and
 * act on frames. May drop the connection (it is swept later). */
void mdp_hello_service(mdp_conn *c, short revents);

#endif
