/* memdiag plugin: read a worker's memory from /proc. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sampler.h"

static int uses_rollup(unsigned memory)
{
  return (memory & (MDP_MEM_PSS | MDP_MEM_PRIVATE | MDP_MEM_SWAP)) != 0;
}

int mdp_sampler_open(pid_t pid, unsigned memory)
{
  char path[64];
  int fd;

  snprintf(path, sizeof(path), "/proc/%ld/%s", (long)pid,
           uses_rollup(memory) ? "smaps_rollup" : "statm");
  fd = open(path, O_RDONLY | O_CLOEXEC);
  return fd < 0 ? -errno : fd;
}

/* Re-read a whole small /proc file from its start. */
static int read_file(int fd, char *buf, size_t len)
{
  ssize_t n;
  size_t used = 0;

  while(used + 1 < len) {
    n = pread(fd, buf + used, len - 1 - used, (off_t)used);
    if(n < 0) {
      if(errno == EINTR)
        continue;
      return (errno == ESRCH || errno == ENOENT) ? -ESRCH : -errno;
    }
    if(n == 0)
      break;
    used += (size_t)n;
  }
  buf[used] = '\0';
  return used == 0 ? -ESRCH : 0;
}

static int read_statm(int fd, mdp_sampler_reading *out)
{
  static long page;
  char buf[256];
  unsigned long long size, resident;
  int rc = read_file(fd, buf, sizeof(buf));

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
static int read_rollup(int fd, mdp_sampler_reading *out)
{
  char buf[4096];
  uint64_t priv = 0;
  int found = 0;
  int rc = read_file(fd, buf, sizeof(buf));

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

int mdp_sampler_read(int fd, unsigned memory, mdp_sampler_reading *out)
{
  memset(out, 0, sizeof(*out));
  return uses_rollup(memory) ? read_rollup(fd, out) : read_statm(fd, out);
}
