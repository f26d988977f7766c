/* Who a connected process is, from the kernel: see identity.h. */
#include "workers/identity.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "md/text.h"

pid_t mdp_identity_parse_nspid(const char *status)
{
  const char *line = status;
  long last = 0;

  while(line && *line) {
    if(!strncmp(line, "NSpid:", 6)) {
      const char *p = line + 6;
      char *end;
      for(;;) {
        long v = strtol(p, &end, 10);
        if(end == p)
          break;
        last = v;
        p = end;
      }
      return last > 0 ? (pid_t)last : 0;
    }
    line = strchr(line, '\n');
    if(line)
      line++;
  }
  return 0;
}

void mdp_identity_parse_cgroup(const char *text, char *out, size_t outlen)
{
  const char *line = text, *first = NULL;

  if(outlen)
    out[0] = '\0';
  while(line && *line) {
    const char *colon = strchr(line, ':'), *nl = strchr(line, '\n');
    if(!nl)
      nl = line + strlen(line);
    if(colon && colon < nl) {
      const char *path = strchr(colon + 1, ':');
      if(path && path < nl) {
        if(!first)
          first = line;
        if(!strncmp(line, "0::", 3) || line == first) {
          size_t n = (size_t)(nl - (path + 1));
          char tmp[512];
          if(n >= sizeof tmp)
            n = sizeof tmp - 1;
          memcpy(tmp, path + 1, n);
          tmp[n] = '\0';
          /* a worker names its own cgroup: shown to operators, so clean */
          md_printable(out, outlen, tmp, MD_TEXT_UTF8);
          if(!strncmp(line, "0::", 3))
            return;
        }
      }
    }
    line = *nl ? nl + 1 : NULL;
  }
}

int mdp_identity_self_status(char *buf, size_t len)
{
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  ssize_t n;
  if(fd < 0)
    return -errno;
  n = read(fd, buf, len - 1);
  if(n < 0)
    n = -errno;
  close(fd);
  if(n <= 0)
    return n < 0 ? (int)n : -EIO;
  buf[n] = '\0';
  return 0;
}

/* Read a small /proc file whole (NUL-terminated). */
static int slurp(const char *path, char *buf, size_t len, char *err, size_t errlen)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  size_t got = 0;

  if(fd < 0) {
    int e = errno;
    md_seterr(err, errlen, "cannot open %s: %s", path, strerror(e));
    return e == ENOENT ? -ESRCH : -e;
  }
  while(got + 1 < len) {
    ssize_t n = read(fd, buf + got, len - 1 - got);
    if(n < 0 && errno == EINTR)
      continue;
    if(n < 0) {
      int e = errno;
      close(fd);
      md_seterr(err, errlen, "cannot read %s: %s", path, strerror(e));
      return -e;
    }
    if(n == 0)
      break;
    got += (size_t)n;
  }
  close(fd);
  buf[got] = '\0';
  return 0;
}

static int same_ns(pid_t pid, const char *ns)
{
  char mine[64], theirs[64];
  struct stat a, b;

  snprintf(mine, sizeof mine, "/proc/self/ns/%s", ns);
  snprintf(theirs, sizeof theirs, "/proc/%d/ns/%s", (int)pid, ns);
  if(stat(mine, &a) < 0 || stat(theirs, &b) < 0)
    return -1;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int mdp_identity_read(pid_t pid, mdp_identity *out, char *err, size_t errlen)
{
  char path[64], buf[4096];
  int rc;

  memset(out, 0, sizeof *out);
  out->pid = pid;
  out->ns_pid = pid;
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  rc = slurp(path, buf, sizeof buf, err, errlen);
  if(rc)
    return rc;
  {
    pid_t ns = mdp_identity_parse_nspid(buf);
    if(ns > 0)
      out->ns_pid = ns;
  }
  snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
  if(slurp(path, buf, sizeof buf, NULL, 0) == 0)
    mdp_identity_parse_cgroup(buf, out->cgroup, sizeof out->cgroup);
  out->same_mnt_ns = same_ns(pid, "mnt");
  return 0;
}

bool mdp_identity_matches(const mdp_identity *id, pid_t claimed)
{
  return claimed > 0 && (claimed == id->pid || claimed == id->ns_pid);
}
