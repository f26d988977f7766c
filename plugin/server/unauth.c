/* memdiag plugin: unauthenticated connections per uid; see unauth.h. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#include "conn.h"
#include "unauth.h"

/* Uids refused now. More at once than this is an attack from many
 * accounts: still refused, each refusal logged through the rate limit. */
#define EPISODES_MAX 32

static struct episode {
  uid_t uid;
  unsigned long refused;
} episodes[EPISODES_MAX];
static unsigned n_episodes;

static struct episode *find(uid_t uid)
{
  for(unsigned i = 0; i < n_episodes; i++)
    if(episodes[i].uid == uid)
      return &episodes[i];
  return NULL;
}

bool mdp_unauth_admit(uid_t uid, unsigned pending)
{
  if(pending < MDP_UNAUTH_PER_UID)
    return true;
  struct episode *e = find(uid);
  if(e) {
    e->refused++;
    return false;
  }
  if(n_episodes < EPISODES_MAX) {
    episodes[n_episodes].uid = uid;
    episodes[n_episodes].refused = 1;
    n_episodes++;
    WARNING("memdiag plugin: refusing connections from uid %ld: %u of its connections are "
            "still in their TLS handshake or waiting for their hello (at most %u per uid)",
            (long)uid, pending, MDP_UNAUTH_PER_UID);
  } else {
    mdp_conn_warn("memdiag plugin: refusing a connection from uid %ld: %u of its connections are "
                  "not authenticated yet (at most %u per uid)",
                  (long)uid, pending, MDP_UNAUTH_PER_UID);
  }
  return false;
}

void mdp_unauth_roll(unsigned (*pending)(uid_t uid))
{
  for(unsigned i = 0; i < n_episodes;) {
    if(pending(episodes[i].uid) >= MDP_UNAUTH_PER_UID) {
      i++;
      continue;
    }
    INFO("memdiag plugin: accepting connections from uid %ld again (%lu refused while it had "
         "%u unauthenticated)",
         (long)episodes[i].uid, episodes[i].refused, MDP_UNAUTH_PER_UID);
    episodes[i] = episodes[--n_episodes];
  }
}
