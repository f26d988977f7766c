/* memdiag plugin: who a connected process is, from the kernel
 * (prefix mdp_identity_).
 *
 * A worker in a container knows itself by the PID of its own PID
 * namespace; the plugin sees the host's PID (SO_PEERCRED). The kernel's own
 * mapping, the NSpid line of /proc/PID/status, lists the process's PID in
 * every namespace from the host's down to its own: a hello is believed when
 * its pid is the last entry. The cgroup (from /proc/PID/cgroup) names the
 * container or pod; the mount namespace tells whether the worker sees the
 * plugin's files at all (streamed transfer when it does not).
 *
 * Ownership: plain values and caller-owned buffers; nothing is allocated.
 */
#ifndef MDP_IDENTITY_H
#define MDP_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct mdp_identity {
  pid_t pid;        /* the host's PID (SO_PEERCRED) */
  pid_t ns_pid;     /* the PID in the process's own namespace (== pid on the host) */
  char cgroup[256]; /* cgroup v2 path ("/system.slice/docker-abc.scope"), or "" */
  int same_mnt_ns;  /* 1: shares collectd's mount namespace; 0: not; -1: unknown */
} mdp_identity;

/* Read the identity of pid from /proc. Returns 0, or a negative errno with
 * err naming the file (-ESRCH when the process is gone). */
int mdp_identity_read(pid_t pid, mdp_identity *out, char *err, size_t errlen);

/* This process's own /proc/self/status into buf (len > 1), NUL-terminated
 * and cut at len - 1 bytes. 0, or a negative errno (-EIO when empty). */
int mdp_identity_self_status(char *buf, size_t len);

/* True when a hello claiming `claimed` comes from this process: its host PID
 * or, in a PID namespace, the PID the kernel maps it to there. */
bool mdp_identity_matches(const mdp_identity *id, pid_t claimed);

/* Parsers, exposed for tests: the last NSpid entry of a status text (0 when
 * it has none: a kernel before 4.1 — then the host PID stands), and the
 * cgroup path from a /proc/PID/cgroup text (the v2 "0::" line, else the
 * first line's path). */
pid_t mdp_identity_parse_nspid(const char *status);
void mdp_identity_parse_cgroup(const char *text, char *out, size_t outlen);

#endif
