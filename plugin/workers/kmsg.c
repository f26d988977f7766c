/* memdiag plugin: the kernel's log, read for OOM kills; see kmsg.h. */
#include "workers/kmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "workers/identity.h"

#define KILLED "Killed process "

/* What the OOM killer's line may start with before KILLED ("%s: Killed
 * process", mm/oom_kill.c; 4.x had none). */
static const char *const oom_prefixes[] = {
    "Out of memory: ",
    "Memory cgroup out of memory: ",
    "Out of memory (oom_kill_allocating_task): ",
};

/* Whether the message's text before k is empty or one of oom_prefixes:
 * anywhere else "Killed process" is not the OOM killer's (a kernel line
 * quoting a file name or a cgroup's, which any user may choose). */
static int oom_start(const char *msg, const char *k)
{
  size_t n = (size_t)(k - msg);

  if(n == 0)
    return 1;
  for(size_t i = 0; i < sizeof oom_prefixes / sizeof oom_prefixes[0]; i++)
    if(strlen(oom_prefixes[i]) == n && memcmp(msg, oom_prefixes[i], n) == 0)
      return 1;
  return 0;
}

uint64_t mdp_kmsg_now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* An unsigned decimal at *p, moving *p past it; -1 when there is none. */
static int64_t number(const char **p, const char *end)
{
  int64_t v = 0;
  const char *s = *p;

  if(s >= end || *s < '0' || *s > '9')
    return -1;
  while(s < end && *s >= '0' && *s <= '9') {
    if(v > (INT64_MAX - 9) / 10)
      return -1;
    v = v * 10 + (*s++ - '0');
  }
  *p = s;
  return v;
}

int mdp_kmsg_parse_oom(const char *rec, size_t len, pid_t *pid, uint64_t *ts_us)
{
  const char *end = rec + len, *p = rec, *msg, *line_end, *k;
  int64_t ts, v, prio;

  /* prio,seq,usec,flags[,...];message; prio is facility << 3 | level, and
   * only the kernel's own lines have facility 0: what root writes into
   * /dev/kmsg is LOG_USER's or another's, never the kernel's */
  prio = number(&p, end);
  if(prio < 0 || prio >> 3 != 0 || p >= end || *p != ',')
    return 0;
  p++;
  if(number(&p, end) < 0 || p >= end || *p != ',')
    return 0;
  p++;
  ts = number(&p, end);
  if(ts < 0)
    return 0;
  msg = memchr(p, ';', (size_t)(end - p));
  if(!msg)
    return 0;
  msg++;
  line_end = memchr(msg, '\n', (size_t)(end - msg));
  if(!line_end)
    line_end = end;
  /* the message only, not its continuation lines (" KEY=value") */
  for(k = msg; (size_t)(line_end - k) >= sizeof KILLED - 1; k++) {
    if(memcmp(k, KILLED, sizeof KILLED - 1) != 0 || !oom_start(msg, k))
      continue;
    p = k + sizeof KILLED - 1;
    v = number(&p, line_end);
    if(v <= 0 || v > INT32_MAX || line_end - p < 2 || p[0] != ' ' || p[1] != '(')
      return 0;
    *pid = (pid_t)v;
    *ts_us = (uint64_t)ts;
    return 1;
  }
  return 0;
}

/* Whether collectd's PIDs are the host's, the log's (one NSpid entry). */
static int host_pid_ns(void)
{
  char buf[4096];
  const char *l;

  if(mdp_identity_self_status(buf, sizeof buf))
    return 0;
  l = strstr(buf, "\nNSpid:");
  if(!l)
    return 1; /* a kernel before 4.1 has no PID namespace field: the host's */
  l += 7;
  while(*l == ' ' || *l == '\t')
    l++;
  while(*l >= '0' && *l <= '9')
    l++;
  while(*l == ' ' || *l == '\t')
    l++;
  return *l == '\n' || *l == '\0';
}

int mdp_kmsg_oom_killed(pid_t pid, uint64_t since_us)
{
  char rec[8192];
  int fd, named = MDP_KMSG_NOT_NAMED;

  if(!host_pid_ns())
    return -EXDEV;
  fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if(fd < 0)
    return -errno;
  for(;;) {
    ssize_t n = read(fd, rec, sizeof rec);
    pid_t p;
    uint64_t ts;
    if(n < 0 && (errno == EPIPE || errno == EINTR))
      continue; /* a record overwritten while read: the next one */
    if(n < 0 && errno == EAGAIN)
      break; /* the end of the log */
    if(n < 0) {
      named = -errno;
      break;
    }
    if(n == 0)
      break;
    if(mdp_kmsg_parse_oom(rec, (size_t)n, &p, &ts) && p == pid && ts >= since_us) {
      named = MDP_KMSG_NAMED;
      break;
    }
  }
  close(fd);
  return named;
}
