/* memdiag plugin: the memory cgroups that hold registered workers (prefix
 * mdp_cgroup_).
 *
 * A worker's cgroup is found from its HOST pid: collectd reads
 * /proc/PID/cgroup itself (the path relative to collectd's cgroup
 * namespace, never the worker's own "0::/" view) and maps it under the
 * memory hierarchy's mount from /proc/self/mountinfo (cgroup_parse.h). The
 * directory is opened component by component with openat(O_NOFOLLOW)
 * below the mount's descriptor, from the kernel's answers only, and each
 * file the plugin reads is opened once, under that descriptor, and re-read
 * with pread: no path a worker names is ever opened.
 *
 * The table holds each cgroup in use once, shared by the workers in it
 * (reference counted: mdp_cgroup_acquire at registration, release when the
 * worker is freed). Nothing walks the cgroup tree: a sample reads the
 * cgroups in the table and nothing else.
 *
 * What a sample reads (per cgroup, not per worker):
 *   v2: memory.current, memory.max and memory.high of the cgroup and every
 *       ancestor up to the mount's root (the smallest wins: no file holds
 *       the effective value), memory.stat, memory.pressure (where present),
 *       memory.events only when inotify says it changed (IN_MODIFY), and
 *       with it memory.events.local (its own processes' OOM kills, which
 *       mdp_cgroup_oom_check counts: memory.events counts descendants').
 *   v1: memory.usage_in_bytes, memory.limit_in_bytes, memory.stat (its
 *       hierarchical_memory_limit covers the ancestors; total_* figures),
 *       memory.failcnt and memory.oom_control.
 * memory.stat, the costly file, is re-read every MDP_CGROUP_STAT_EVERY
 * samples or when the charge moved by more than 1/64 of the limit (or
 * 4 MiB) since; the working set is the charge less its last inactive_file.
 *
 * Threading: acquire/release from the server thread, sample from the read
 * thread (one at a time), mdp_cgroup_oom_check from the server thread,
 * mdp_cgroup_last from any thread. One mutex guards the table and the
 * fields marked locked; file reads happen outside it.
 * Ownership: the table owns every mdp_cgroup; callers hold references.
 */
#ifndef MDP_CGROUP_H
#define MDP_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "detector/detector.h"
#include "workers/cgroup_parse.h"

#define MDP_CGROUP_STAT_EVERY 4
#define MDP_CGROUP_DEPTH_MAX  32 /* v2 levels read for the tightest limit */

typedef struct mdp_cgroup_stats {
  uint64_t charge;                  /* v2 memory.current, v1 memory.usage_in_bytes */
  uint64_t working_set;             /* charge - inactive_file (cAdvisor), never below 0 */
  uint64_t anon, file;              /* v2 anon/file, v1 total_rss/total_cache */
  uint64_t limit;                   /* tightest limit on the path, MDP_CGROUP_NO_LIMIT if none */
  uint64_t high;                    /* v2 tightest memory.high, MDP_CGROUP_NO_LIMIT if none (v1) */
  uint64_t high_events, max_events; /* v2 memory.events high/max; v1 max = failcnt */
  uint64_t oom_kill, oom_group_kill;
  uint64_t own_oom_kill; /* its own processes' kills: v2 memory.events.local, else oom_kill */
  double psi_some10, psi_full10; /* memory.pressure avg10, percent */
  bool has_stat, has_events, has_group_kill, has_psi;
  double t; /* when sampled (caller's clock), 0 if never */
} mdp_cgroup_stats;

typedef struct mdp_cgroup mdp_cgroup;

/* The cgroup of the process with host PID pid, a new reference. Returns 0
 * with *out set, or a negative errno with err saying why: -ENOENT when the
 * host has no memory hierarchy or the process is in none, -EXDEV when its
 * cgroup is not visible under collectd's mounts, -ESRCH when it is gone. */
int mdp_cgroup_acquire(pid_t pid, mdp_cgroup **out, char *err, size_t errlen);

/* Like acquire, with the mountinfo and /proc/PID/cgroup texts given and
 * paths under root_prefix (tests run on fixture trees: "" for the real
 * system). */
typedef struct mdp_cgroup_source {
  const char *mountinfo;   /* a /proc/self/mountinfo text */
  const char *proc_cgroup; /* collectd's read of /proc/PID/cgroup */
  const char *root_prefix; /* prepended to mount points; "" on the host */
} mdp_cgroup_source;
int mdp_cgroup_acquire_from(const mdp_cgroup_source *src, mdp_cgroup **out, char *err,
                            size_t errlen);

/* The path in the hierarchy of version v ("/a/b", as mdp_cgroup_path
 * gives it) of the cgroup the process with host PID pid is in now, from
 * /proc/PID/cgroup: the cheap check that a worker is still where it was
 * (nothing is opened below the mount). Returns 0, -ESRCH when the process
 * is gone, or a negative errno. */
int mdp_cgroup_path_of(pid_t pid, mdp_cgroup_version v, char *out, size_t len);

/* One more reference to cg (the caller holds one). */
void mdp_cgroup_ref(mdp_cgroup *cg);

/* Give a reference back; the last closes its files. NULL is ignored. */
void mdp_cgroup_release(mdp_cgroup *cg);

/* Read its figures now (read thread). t is the sample's time. Returns 0,
 * or a negative errno (-ENOENT: the cgroup was removed). */
int mdp_cgroup_sample(mdp_cgroup *cg, double t, mdp_cgroup_stats *out);

/* The charge now (one read; any thread). Returns 0 or a negative errno. */
int mdp_cgroup_read_charge(mdp_cgroup *cg, uint64_t *charge);

/* The last sample's figures (any thread); false when never sampled. */
bool mdp_cgroup_last(mdp_cgroup *cg, mdp_cgroup_stats *out);

/* A worker of this cgroup has vanished: were OOM kills of its own
 * processes counted since the last one accounted for? Re-reads the OOM
 * counts now; returns 1 (and accounts one kill, whoever's it was, with
 * *now the figures) when the count rose, 0 when not, or a negative errno.
 * Server thread. */
int mdp_cgroup_oom_check(mdp_cgroup *cg, mdp_cgroup_stats *now);

/* Immutable after acquire. */
mdp_cgroup_version mdp_cgroup_version_of(const mdp_cgroup *cg);
const char *mdp_cgroup_path(const mdp_cgroup *cg);        /* in the hierarchy: "/a/b" */
const char *mdp_cgroup_dir(const mdp_cgroup *cg);         /* host directory */
const char *mdp_cgroup_instance_of(const mdp_cgroup *cg); /* collectd plugin_instance */

/* The cgroup's own detector (read thread only): initialised from cfg at
 * the first call, its MemoryLimit the cgroup's limit. */
mdp_detector *mdp_cgroup_detector(mdp_cgroup *cg, const mdp_detector_config *cfg);

/* Workers reported as OOM-killed since the plugin started (the
 * mdp_cgroup_count_kill calls). Any thread. */
uint64_t mdp_cgroup_oom_kills(void);

/* Count one worker reported as OOM-killed. Any thread. */
void mdp_cgroup_count_kill(void);

/* The inotify descriptor watching v2 memory.events files, or -1. */
int mdp_cgroup_inotify_fd(void);

/* Close the table's inotify descriptor (at shutdown, after every release). */
void mdp_cgroup_shutdown(void);

#endif
