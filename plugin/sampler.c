/* memdiag plugin: read a worker's memory from /proc. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "sampler.h"

int mdp_sampler_open(pid_t pid)
{
  char path[64];
  int fd;

  snprintf(path, sizeof(path), "/proc/%ld", (long)pid);
  fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

/* Read a whole small /proc file relative to the worker's directory. */
static int read_file(int proc_dir, const char *name, char *buf, size_t len)
{
  ssize_t n;
  size_t used = 0;
  int fd = openat(proc_dir, name, O_RDONLY | O_CLOEXEC);
  int rc = 0;

  if(fd < 0)
    return (errno == ENOENT || errno == ESRCH) ? -ESRCH : -errno;
  while(used + 1 < len) {
    n = read(fd, buf + used, len - 1 - used);
    if(n < 0) {
      if(errno == EINTR)
        continue;
      rc = (errno == ESRCH) ? -ESRCH : -errno;
      goto out;
    }
    if(n == 0)
      break;
    used += (size_t)n;
  }
  buf[used] = '\0';
  /* A process that exited leaves an empty file behind its open handle. */
  if(used == 0)
    rc = -ESRCH;
out:
  close(fd);
  return rc;
}

static int read_statm(int proc_dir, mdp_sample *out)
{
  static long page;
  char buf[256];
  unsigned long long size, resident;
  int rc = read_file(proc_dir, "statm", buf, sizeof(buf));

  if(rc)
    return rc;
  if(sscanf(buf, "%llu %llu", &size, &resident) != 2)
    return -EIO;
  if(page == 0)
    page = sysconf(_SC_PAGESIZE);
  out->rss = (uint64_t)resident * (uint64_t)page;
  return 0;
}

/* smaps_rollup lines look like "Pss:     1234 kB". */
static int read_rollup(int proc_dir, mdp_sample *out)
{
  char buf[4096];
  uint64_t priv = 0;
  int found = 0;
  int rc = read_file(proc_dir, "smaps_rollup", buf, sizeof(buf));

  if(rc)
    return rc;
  for(char *line = buf; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
    char *colon = strchr(line, ':');
    unsigned long long kb;
    size_t klen;

    if(!colon)
      continue;
    klen = (size_t)(colon - line);
    if(sscanf(colon + 1, " %llu", &kb) != 1)
      continue;
#define KEY(s) (klen == sizeof(s) - 1 && memcmp(line, s, klen) == 0)
    if(KEY("Rss")) {
      out->rss = kb * 1024;
      found++;
    } else if(KEY("Pss")) {
      out->pss = kb * 1024;
      found++;
    } else if(KEY("Private_Clean") || KEY("Private_Dirty")) {
      priv += kb * 1024;
    } else if(KEY("Swap")) {
      out->swap = kb * 1024;
    }
#undef KEY
  }
  if(found < 2)
    return -EIO;
  out->private_bytes = priv;
  return 0;
}

int mdp_sampler_read(int proc_dir, unsigned memory, mdp_sample *out)
{
  memset(out, 0, sizeof(*out));
  if(memory & (MDP_MEM_PSS | MDP_MEM_PRIVATE | MDP_MEM_SWAP))
    return read_rollup(proc_dir, out);
  return read_statm(proc_dir, out);
}
