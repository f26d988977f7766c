/* memdiag plugin: pidfds for workers; see pidfd.h. */
#include "pidfd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "workers/identity.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5; older headers lack it */
#endif
/* glibc before 2.36 has no wrappers; the syscall numbers are older (5.3). */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

uint64_t mdp_pidfd_boot_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_BOOTTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int mdp_pidfd_signal(int pidfd, int sig)
{
  if(pidfd < 0)
    return -EBADF;
  return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) == 0 ? 0 : -errno;
}

int mdp_pidfd_alive(int pidfd) { return mdp_pidfd_signal(pidfd, 0) == 0; }

/* The space before /proc/PID/stat's field n (n >= 3) in text, or NULL.
 * comm (field 2) may hold spaces and parentheses: count from its end. */
static const char *stat_field(const char *text, int n)
{
  const char *p = strrchr(text, ')');
  for(int field = 2; p && field < n; field++)
    p = strchr(p + 1, ' ');
  return p;
}

/* /proc/PID/stat's text in buf (len bytes at most, NUL-terminated); 0, or
 * -1 when it cannot be read (the process is gone). */
static int read_stat(pid_t pid, char *buf, size_t len)
{
  char path[64];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if(fd < 0)
    return -1;
  ssize_t n = read(fd, buf, len - 1);
  close(fd);
  if(n <= 0)
    return -1;
  buf[n] = '\0';
  return 0;
}

/* Start time of pid in ms since boot (/proc/PID/stat field 22, in clock
 * ticks); -1 when it cannot be read. */
static int64_t start_ms(pid_t pid)
{
  char buf[1024];
  long hz = sysconf(_SC_CLK_TCK);
  if(hz <= 0 || read_stat(pid, buf, sizeof buf) != 0)
    return -1;
  const char *p = stat_field(buf, 22);
  if(!p)
    return -1;
  char *end;
  unsigned long long ticks = strtoull(p + 1, &end, 10);
  if(end == p + 1)
    return -1;
  return (int64_t)(ticks * 1000ull / (unsigned long long)hz);
}

int mdp_pidfd_of_peer(int sock, pid_t pid, uint64_t accepted_boot_ms)
{
  int fd;
  socklen_t len = sizeof(fd);

  if(getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &fd, &len) == 0 && len == sizeof(fd))
    return fd;
  if(errno != ENOPROTOOPT && errno != EINVAL && errno != EOPNOTSUPP)
    return -errno;
  return mdp_pidfd_open_started_before(pid, accepted_boot_ms);
}

int mdp_pidfd_open_started_before(pid_t pid, uint64_t boot_ms)
{
  int fd = (int)syscall(SYS_pidfd_open, pid, 0);
  if(fd < 0)
    return -errno;
  /* The start time read through the PID belongs to the pidfd's process if
   * that process is still alive afterwards (a PID is not reused while its
   * process exists). */
  int64_t started = start_ms(pid);
  if(started < 0 || (uint64_t)started > boot_ms || !mdp_pidfd_alive(fd)) {
    close(fd);
    return -ESRCH;
  }
  return fd;
}

/* PIDFD_GET_INFO (Linux 6.13; exit information 6.15): the first published
 * layout of struct pidfd_info, 64 bytes; older headers lack it. */
struct pidfd_info_v0 {
  uint64_t mask;
  uint64_t cgroupid;
  uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
  int32_t exit_code;
};
#define PIDFD_INFO_EXIT_BIT (1ull << 3)
#define PIDFD_GET_INFO_V0   _IOWR(0xFF, 11, struct pidfd_info_v0)

/* 1 with *status when the kernel kept the reaped process's exit status,
 * 0 when it has not exited (or was not reaped yet), -1 when it cannot
 * tell (no PIDFD_GET_INFO). */
static int info_exit(int pidfd, int *status)
{
  struct pidfd_info_v0 info;

  memset(&info, 0, sizeof info);
  info.mask = PIDFD_INFO_EXIT_BIT;
  if(ioctl(pidfd, PIDFD_GET_INFO_V0, &info) != 0)
    return errno == ESRCH ? 0 : -1; /* ESRCH: reaped, no exit kept (< 6.15) */
  if(!(info.mask & PIDFD_INFO_EXIT_BIT))
    return 0;
  *status = info.exit_code;
  return 1;
}

int mdp_pidfd_parse_stat(const char *text, char *state, int *exit_code)
{
  const char *s = stat_field(text, 3), *p = stat_field(text, 52);
  char *end;
  long v;

  if(!s || !s[1] || !p)
    return -EINVAL;
  *state = s[1];
  v = strtol(p + 1, &end, 10);
  if(end == p + 1)
    return -EINVAL;
  *exit_code = (int)v;
  return 0;
}

int mdp_pidfd_parse_exiting(const char *text)
{
  const char *s = stat_field(text, 3), *p = stat_field(text, 9);
  char *end;
  unsigned long flags;

  if(!s || !s[1])
    return -EINVAL;
  if(s[1] == 'Z' || s[1] == 'X')
    return 1;
  if(!p)
    return -EINVAL;
  flags = strtoul(p + 1, &end, 10);
  if(end == p + 1)
    return -EINVAL;
  return (flags & 0x4ul) != 0; /* PF_EXITING */
}

int mdp_pidfd_exiting(int pidfd, pid_t pid)
{
  char buf[2048];
  int rc;

  if(read_stat(pid, buf, sizeof buf) != 0)
    return -ESRCH;
  rc = mdp_pidfd_parse_exiting(buf);
  /* still unreaped after the read: the PID was its own */
  if(pidfd >= 0 && !mdp_pidfd_alive(pidfd))
    return -ESRCH;
  return rc < 0 ? -ESRCH : rc;
}

/* Whether /proc/PID/stat shows this reader the exit code: ptrace access,
 * from CAP_SYS_PTRACE (bit 19 of CapEff) or the same user. */
static int may_read_exit_code(uid_t uid)
{
  char buf[4096];
  const char *cap;

  if(geteuid() == uid)
    return 1;
  if(mdp_identity_self_status(buf, sizeof buf))
    return 0;
  cap = strstr(buf, "\nCapEff:");
  if(!cap)
    return 0;
  return (strtoull(cap + 8, NULL, 16) >> 19) & 1u;
}

void mdp_pidfd_exit(int pidfd, pid_t pid, uid_t uid, mdp_exit_info *out)
{
  char buf[2048], state;
  int code, rc;

  out->kind = MDP_EXIT_UNKNOWN;
  out->status = 0;
  if(pidfd < 0)
    return;
  rc = info_exit(pidfd, &code);
  if(rc == 1) {
    out->kind = MDP_EXIT_STATUS;
    out->status = code;
    return;
  }
  if(read_stat(pid, buf, sizeof buf) != 0)
    goto reaped;
  /* still unreaped after the read: the PID was its own */
  if(!mdp_pidfd_alive(pidfd) || mdp_pidfd_parse_stat(buf, &state, &code) != 0)
    goto reaped;
  if(code != 0) {
    out->kind = MDP_EXIT_STATUS; /* set as it began to exit */
    out->status = code;
  } else if(may_read_exit_code(uid)) {
    out->kind = state == 'Z' || state == 'X' ? MDP_EXIT_STATUS : MDP_EXIT_RUNNING;
  }
  return;
reaped:
  /* reaped meanwhile: the pidfd may hold it now */
  if(info_exit(pidfd, &code) == 1) {
    out->kind = MDP_EXIT_STATUS;
    out->status = code;
  }
}
