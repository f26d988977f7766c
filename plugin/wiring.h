/* memdiag plugin: the server's hooks, wired to the parts that serve them
 * (prefix mdp_wiring_).
 *
 * The server (server/) knows none of the registry, relay, capture or
 * operator verbs; this table connects them. memdiag.c hands it to
 * mdp_server_start, and the fuzz harness (tests/fuzz/server_harness.c) to
 * its stand-in connections, so that both run the same wiring.
 *
 * Dependencies: glue only (it calls down into workers/, server/ and
 * capture/; nothing there calls it).
 * Ownership: a constant table; nothing to release.
 */
#ifndef MDP_WIRING_H
#define MDP_WIRING_H

#include "server/server.h"

extern const mdp_server_hooks mdp_wiring_server_hooks;

#endif
