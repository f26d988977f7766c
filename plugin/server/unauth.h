/* memdiag plugin: connections not yet authenticated, per uid (prefix
 * mdp_unauth_).
 *
 * A local user allowed on the socket (SocketGroup, SocketMode) but holding
 * no certificate can still open connections and let each sit in its TLS
 * handshake until HandshakeTimeout, then open them again: enough of them
 * would fill MaxConnections and keep every worker out. So each uid (from
 * SO_PEERCRED) may have at most MDP_UNAUTH_PER_UID connections that are in
 * their handshake or waiting for their hello; further ones are closed at
 * accept. Each uid's run of refusals is one episode: one line when it
 * starts, one when the uid is back under the limit, with the count.
 *
 * Internal to plugin/server/; loop thread only. Nothing is allocated.
 */
#ifndef MDP_UNAUTH_H
#define MDP_UNAUTH_H

#include <stdbool.h>
#include <sys/types.h>

#define MDP_UNAUTH_PER_UID 64u

/* May a new connection from uid be accepted, `pending` of its connections
 * being unauthenticated already? Logs the start of an episode. */
bool mdp_unauth_admit(uid_t uid, unsigned pending);

/* Call every second: episodes of uids back under the limit end (logged).
 * pending(uid) counts that uid's unauthenticated connections now. */
void mdp_unauth_roll(unsigned (*pending)(uid_t uid));

#endif
