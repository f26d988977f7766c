/* memdiag plugin: which connections to close so that each uid's unread
 * frames stay under the cap (prefix mdp_bufcap_).
 *
 * The connections of one uid (operators aside) may hold at most a limit of
 * unread bytes in their read buffers together (conn.h,
 * MDP_CONN_BUFFERED_UID_FRAMES); past it, the one holding most is closed,
 * then the next, until the uid is under the limit. Every uid is counted,
 * however many there are: the caller passes one entry per connection
 * holding bytes, in an array it owns (sized to MaxConnections, so the
 * accounting's memory is bounded and nothing is allocated per turn).
 *
 * Internal to plugin/server/; pure (no I/O, no allocation, any thread).
 */
#ifndef MDP_BUFCAP_H
#define MDP_BUFCAP_H

#include <stddef.h>
#include <sys/types.h>

typedef struct {
  uid_t uid;
  size_t bytes;   /* unread bytes this connection holds */
  void *conn;     /* the caller's, untouched */
  int close;      /* out: 1 when this connection is to be closed */
  size_t uid_had; /* out, when close: what its uid held before this close */
} mdp_bufcap_entry;

/* Marks the entries to close (reordering the array: by uid, most first)
 * and returns how many. */
size_t mdp_bufcap_pick(mdp_bufcap_entry *e, size_t n, size_t limit);

#endif
