/* memdiag plugin: pidfds for workers; see pidfd.h. */
#include "pidfd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

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

/* Start time of pid in ms since boot (/proc/PID/stat field 22, in clock
 * ticks); -1 when it cannot be read. */
static int64_t start_ms(pid_t pid)
{
  char path[64], buf[1024];
  long hz = sysconf(_SC_CLK_TCK);
  snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if(fd < 0)
    return -1;
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if(n <= 0 || hz <= 0)
    return -1;
  buf[n] = '\0';
  /* comm (field 2) may hold spaces and parentheses: count from its end. */
  char *p = strrchr(buf, ')');
  for(int field = 2; p && field < 22; field++)
    p = strchr(p + 1, ' ');
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
