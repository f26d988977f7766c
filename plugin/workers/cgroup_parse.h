/* memdiag plugin: the kernel's cgroup texts, parsed (prefix mdp_cgroup_).
 *
 * Pure code: text in, values out; no I/O, no globals, so every case (v1,
 * v2, hybrid hosts, cgroup namespaces, "max", missing lines) is tested on
 * fixture texts (tests/data/cgroup/). cgroup.h does the reading.
 *
 * Which hierarchy: the memory controller's. On a v1 or hybrid host that is
 * the v1 "cgroup" mount whose super options name "memory"; where no v1
 * mount has it, the cgroup2 mount (the unified hierarchy). A path from
 * /proc/PID/cgroup is relative to the READER's cgroup namespace root: the
 * plugin reads it itself (never the worker's view, which is "0::/" inside
 * its own namespace) and maps it under a mount whose root is a prefix of it.
 *
 * Ownership: caller-owned buffers and structs; nothing is allocated.
 * Threading: reentrant.
 */
#ifndef MDP_CGROUP_PARSE_H
#define MDP_CGROUP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum mdp_cgroup_version {
  MDP_CGROUP_NONE = 0,
  MDP_CGROUP_V1 = 1, /* memory controller on a v1 hierarchy */
  MDP_CGROUP_V2 = 2, /* the unified hierarchy */
} mdp_cgroup_version;

#define MDP_CGROUP_PATH_MAX   512
#define MDP_CGROUP_MOUNTS_MAX 8

/* A mount of the memory controller's hierarchy (mountinfo fields 4, 5). */
typedef struct mdp_cgroup_mount {
  mdp_cgroup_version version;
  char root[MDP_CGROUP_PATH_MAX];  /* the hierarchy's path mounted there ("/" usually) */
  char point[MDP_CGROUP_PATH_MAX]; /* where ("/sys/fs/cgroup/memory"), unescaped */
} mdp_cgroup_mount;

/* The memory hierarchy's mounts in a /proc/self/mountinfo text: v1 ones
 * when any v1 mount carries "memory", else the cgroup2 ones. Returns how
 * many were stored in out (at most max), 0 when the host has none. */
size_t mdp_cgroup_parse_mountinfo(const char *text, mdp_cgroup_mount *out, size_t max);

/* The process's path in the hierarchy of version v from a /proc/PID/cgroup
 * text: v1, the line whose controller list has "memory"; v2, the "0::"
 * line. Returns 0, -ENOENT (no such line) or -ENAMETOOLONG. */
int mdp_cgroup_parse_proc(const char *text, mdp_cgroup_version v, char *out, size_t len);

/* The directory of path below the mount m, relative to its mount point
 * ("" for the mount's root, else "a/b" with no leading '/'). Refuses a
 * path that is not absolute or has ".", ".." or empty components
 * (-EINVAL), one outside the mount's root (-EXDEV: not visible there; a
 * path like "/../.." that a namespace shows is refused too), and one too
 * long (-ENAMETOOLONG). */
int mdp_cgroup_relative(const mdp_cgroup_mount *m, const char *path, char *out, size_t len);

/* Of the mounts, the one path is visible under (the longest root that is
 * a prefix of it), or -1. */
int mdp_cgroup_pick_mount(const mdp_cgroup_mount *m, size_t n, const char *path);

#define MDP_CGROUP_NO_LIMIT UINT64_MAX

/* A limit file's text (v2 memory.max/memory.high, v1 limit_in_bytes or
 * hierarchical_memory_limit): "max" and v1's "unlimited" (at least 2^62,
 * the page-rounded LONG_MAX) give MDP_CGROUP_NO_LIMIT. Returns 0 or
 * -EINVAL (no number). */
int mdp_cgroup_parse_limit(const char *text, uint64_t *out);

/* The value of "key value" in a flat keyed file (memory.stat,
 * memory.events, memory.oom_control). Returns 0, or -ENOENT when the key
 * is absent. */
int mdp_cgroup_parse_key(const char *text, const char *key, uint64_t *out);

/* memory.pressure ("some avg10=0.12 avg60=... total=...\nfull avg10=...").
 * Returns 0 with both avg10 figures (percent), or -EINVAL. */
int mdp_cgroup_parse_pressure(const char *text, double *some_avg10, double *full_avg10);

/* A collectd plugin_instance for a cgroup path relative to its
 * hierarchy's root: "cgroup-" + the path without its leading '/', '/' as
 * '_', other characters than A-Za-z0-9._- as '_'; "cgroup-root" for "/".
 * Longer than 100 characters: "cgroup-" + 8 hex digits (FNV-1a of the
 * path) + "-" + the last 80 characters. len should be at least 128. */
void mdp_cgroup_instance(const char *path, char *out, size_t len);

/* DumpMode auto in a memory-limited cgroup: a fork's copy-on-write pages
 * are charged to the same cgroup, so fork only when the room (limit -
 * charge - margin) holds MDP_CGROUP_COW_FACTOR x rss (the hook's own
 * estimate, fork_headroom_factor's default). reason says which and why,
 * e.g. "cgroup /sys/fs/cgroup/memory/x room 6.0 MiB (limit 400.0 MiB -
 * charge 330.0 MiB - margin 64.0 MiB) < copy-on-write estimate 300.0 MiB
 * (1.5 x RSS 200.0 MiB): inline". Returns true to fork. */
#define MDP_CGROUP_COW_FACTOR 1.5
typedef struct mdp_cgroup_room {
  const char *dir;                     /* the cgroup's host directory, for the reason */
  uint64_t limit, charge, margin, rss; /* bytes */
} mdp_cgroup_room;
bool mdp_cgroup_fork_fits(const mdp_cgroup_room *room, char *reason, size_t len);

#endif
