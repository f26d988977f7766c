/* memdiag plugin: a worker's process as a descriptor (prefix mdp_pidfd_).
 *
 * A PID names whichever process holds it now; once the worker exits, the
 * kernel may give it to any other process. Root signals a worker only
 * through a pidfd, which names one process for its whole life: after that
 * process exits, signals through it fail with ESRCH instead of reaching the
 * PID's next owner.
 *
 * The pidfd is taken when the connection is accepted. With SO_PEERPIDFD
 * (Linux 6.5) the kernel hands over the pidfd of the process that called
 * connect(), with no window at all. On older kernels it is pidfd_open() of
 * the SO_PEERCRED PID right after accept, and the process found there must
 * have started before the accept (its start time, /proc/PID/stat field
 * 22): a process started later cannot be the peer, it only reused the PID.
 * (The check is as fine as the kernel's clock tick, 10 ms.)
 *
 * Ownership: a descriptor returned belongs to the caller. Threading:
 * reentrant.
 */
#ifndef MDP_PIDFD_H
#define MDP_PIDFD_H

#include <stdint.h>
#include <sys/types.h>

/* CLOCK_BOOTTIME in ms, the clock of /proc/PID/stat's start time. Take it
 * right after accept() and pass it to mdp_pidfd_of_peer. */
uint64_t mdp_pidfd_boot_ms(void);

/* The pidfd of the process at the other end of the AF_UNIX socket sock
 * (pid from SO_PEERCRED, accepted_boot_ms from mdp_pidfd_boot_ms). Returns
 * a descriptor (O_CLOEXEC), or a negative errno: -ESRCH when that process
 * has exited or its PID already belongs to a process started after the
 * accept, -ENOSYS when the kernel has no pidfds. */
int mdp_pidfd_of_peer(int sock, pid_t pid, uint64_t accepted_boot_ms);

/* The fallback of mdp_pidfd_of_peer: pidfd_open(pid), kept only if the
 * process it names started no later than boot_ms. Returns as above. */
int mdp_pidfd_open_started_before(pid_t pid, uint64_t boot_ms);

/* 1 while the process is alive (a zombie counts), 0 once it is gone. */
int mdp_pidfd_alive(int pidfd);

/* Send sig to the process; returns 0 or a negative errno (-ESRCH: it has
 * exited, and nobody was signalled). */
int mdp_pidfd_signal(int pidfd, int sig);

/* How the process ended, as far as the kernel tells a process that is not
 * its parent: after it was reaped, through the pidfd (PIDFD_GET_INFO with
 * PIDFD_INFO_EXIT, Linux 6.15); while it exits or is a zombie, by
 * /proc/PID/stat's exit code (field 52), read through the PID and kept
 * only if the pidfd's process was still unreaped afterwards (so the PID
 * was still its own). That field reads 0 unless the reader may ptrace the
 * process (CAP_SYS_PTRACE, or its own user): pass the worker's uid. */
typedef enum mdp_exit_kind {
  MDP_EXIT_UNKNOWN = 0, /* cannot be told */
  MDP_EXIT_RUNNING,     /* not exiting: no exit code, not a zombie */
  MDP_EXIT_STATUS,      /* exiting or exited: status is its wait status */
} mdp_exit_kind;

typedef struct mdp_exit_info {
  mdp_exit_kind kind;
  int status; /* with MDP_EXIT_STATUS: WIFEXITED/WTERMSIG apply */
} mdp_exit_info;

void mdp_pidfd_exit(int pidfd, pid_t pid, uid_t uid, mdp_exit_info *out);

/* /proc/PID/stat's text: its state (field 3) and exit code (field 52).
 * Returns 0, or -EINVAL when the text has neither. */
int mdp_pidfd_parse_stat(const char *text, char *state, int *exit_code);

/* 1 when /proc/PID/stat's text shows a process that has begun to exit: a
 * zombie (state Z or X), or PF_EXITING (0x4) in its flags (field 9), set
 * as it begins to exit, long before it is a zombie; 0 when not; -EINVAL
 * when the text has neither. */
int mdp_pidfd_parse_exiting(const char *text);

/* 1 when the pidfd's process has begun to exit (read through pid, and kept
 * only if the pidfd's process was still unreaped afterwards, so the PID was
 * its own), 0 when it has not, -ESRCH when it is gone or pid is no longer
 * its own. On a cgroup v1 hierarchy, /proc/PID/cgroup of a process with
 * PF_EXITING names the root cgroup: that is no move. */
int mdp_pidfd_exiting(int pidfd, pid_t pid);

#endif
