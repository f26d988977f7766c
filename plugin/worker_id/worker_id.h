/* memdiag plugin: who a worker is (prefix mdp_worker_id_): one value the
 * registry hands out (mdp_registry_who) and the capture module keeps for
 * each run, copies into what it writes later (the folder job, the manifest
 * record) and names in its logs and notifications, instead of a name, PID,
 * uid and gid passed and copied one by one.
 *
 * A plain value: copied by assignment, nothing to free, no thread of its
 * own. Header only (a leaf every module may use).
 */
#ifndef MDP_WORKER_ID_H
#define MDP_WORKER_ID_H

#include <stdint.h>
#include <sys/types.h>

typedef struct mdp_worker_id {
  uint64_t connection_id; /* the registry's ID of its connection */
  char name[128];         /* from its hello (MEMDIAG_NAME), as the registry keeps it */
  pid_t pid;              /* the host's PID (SO_PEERCRED; the hello had to agree) */
  pid_t ns_pid;           /* its PID in its own PID namespace; == pid on the host */
  uid_t uid;              /* SO_PEERCRED: a capture folder it writes is chowned to it */
  gid_t gid;
} mdp_worker_id;

#endif
