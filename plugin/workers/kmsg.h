/* memdiag plugin: the kernel's log, read for its OOM kills (prefix
 * mdp_kmsg_).
 *
 * When the kernel's OOM killer ends a process it logs "...: Killed process
 * PID (comm) total-vm:..." (every kernel since 4.x; for each member of an
 * oom.group kill too), PID being the host's. That line ties a kill to one
 * process; a cgroup's oom_kill count only says that some process of the
 * cgroup was killed. The log is read from /dev/kmsg (readable by root; the
 * records' timestamps are the monotonic clock's microseconds) only where it
 * can answer: collectd in the host's PID namespace (its PIDs are the log's),
 * the device readable.
 *
 * Ownership: nothing is kept between calls. Threading: reentrant.
 */
#ifndef MDP_KMSG_H
#define MDP_KMSG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef enum mdp_kmsg_answer {
  MDP_KMSG_NOT_NAMED = 0, /* the log holds no OOM kill of that PID since then */
  MDP_KMSG_NAMED = 1,     /* it logged an OOM kill of that PID since then */
} mdp_kmsg_answer;

/* Does the kernel's log name an OOM kill of host PID pid at or after
 * since_us (CLOCK_MONOTONIC microseconds)? Returns an mdp_kmsg_answer, or
 * a negative errno when the log cannot answer (-EACCES/-EPERM/-ENOENT: not
 * readable; -EXDEV: collectd is not in the host's PID namespace). */
int mdp_kmsg_oom_killed(pid_t pid, uint64_t since_us);

/* One /dev/kmsg record ("prio,seq,usec,flags;message\n" and its
 * continuation lines), len bytes. Returns 1 with *pid and *ts_us set when
 * it is an OOM kill's "Killed process PID (" line, else 0: a kernel line
 * (facility 0: not one written into /dev/kmsg) whose message starts so, or
 * with the OOM killer's "Out of memory: " or "Memory cgroup out of
 * memory: " before it. */
int mdp_kmsg_parse_oom(const char *rec, size_t len, pid_t *pid, uint64_t *ts_us);

/* The monotonic clock in microseconds, the log's clock. */
uint64_t mdp_kmsg_now_us(void);

#endif
