/* memdiag plugin: containers, the memory cgroups that hold registered
 * workers, as the kernel sees them (prefix mdp_containers_).
 *
 * Glue: it calls down into workers/ (the cgroup table, the registry),
 * detector/, capture/ and notify/; nothing there calls it. Each read pass
 * samples every cgroup in use once (however many workers share it),
 * dispatches its values (plugin_instance "cgroup-...", docs/containers.md
 * and docs/configuration.md), runs the cgroup's own detector on its
 * working set against its limit, and sends a capture to the worker whose
 * growth drives the charge. When a worker vanishes it says whether the
 * kernel's OOM killer ended it.
 *
 * Threading: mdp_containers_read on collectd's read thread (one at a
 * time), mdp_containers_worker_gone on the server thread.
 * Ownership: borrowed arguments only.
 */
#ifndef MDP_CONTAINERS_H
#define MDP_CONTAINERS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "sample/sample.h"
#include "workers/registry.h"

/* Sample the cgroups of these workers (a snapshot the caller holds); t and
 * interval are cdtime_t values. Call before the workers are sampled, so
 * that their detectors see the cgroup's current limit. */
void mdp_containers_read(mdp_worker **workers, size_t n, const mdp_config *cfg, uint64_t t,
                         uint64_t interval);

/* Worker id's connection is gone; call before it leaves the registry.
 * Sends a FAILURE notification when its cgroup counted an OOM kill. */
void mdp_containers_worker_gone(uint64_t id);

/* The limits of worker w, given its figure v now (0: none).
 * project_to: what its own detector projects to: the lower of MemoryLimit
 * and the level at which its cgroup would be full if the rest of the charge
 * stayed (v + limit - charge), so a plan's waits are sized from the time
 * the cgroup has left. whole: what its near-limit and its limit reached
 * count against: project_to for a worker alone in its cgroup; for workers
 * that share one, MemoryLimit or the cgroup's limit (their room is shared:
 * once the charge nears the limit every quiet worker's v + room is "near",
 * and the cgroup's detector captures the one that drives the charge). */
typedef struct {
  uint64_t project_to;
  uint64_t whole;
} mdp_containers_limits;

void mdp_containers_limit(const mdp_worker *w, uint64_t v, mdp_containers_limits *out);

/* w's recent samples, oldest first, into out (MDP_WORKER_HISTORY of
 * them at most), for a capture's fit of its waits. Returns how many. */
unsigned mdp_containers_history(const mdp_worker *w, mdp_sample *out);

#endif
