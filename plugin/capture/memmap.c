/* memdiag plugin: a worker's memory map by kind; see memmap.h. */
#include "memmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The kind of the mapping whose smaps header line is line. */
static uint64_t *kind_of(mdp_memmap_t *m, const char *line, const char *end)
{
  /* "start-end perms offset dev inode   path": the path is the sixth field */
  const char *p = line;
  for(int field = 0; field < 5; field++) {
    while(p < end && *p != ' ')
      p++;
    while(p < end && *p == ' ')
      p++;
  }
  size_t n = (size_t)(end - p);
  if(!n || (n > 6 && !memcmp(p, "[anon:", 6)))
    return &m->anon;
  if(n == 6 && !memcmp(p, "[heap]", 6))
    return &m->heap;
  if(n >= 6 && !memcmp(p, "[stack", 6))
    return &m->stack;
  if(*p == '/')
    return &m->file;
  return &m->other;
}

int mdp_memmap_parse(const char *text, mdp_memmap_t *out)
{
  uint64_t *cur = NULL;
  memset(out, 0, sizeof(*out));
  for(const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    if(!end)
      end = line + strlen(line);
    /* header lines start with a hexadecimal range; fields with a name */
    const char *dash = memchr(line, '-', (size_t)(end - line));
    const char *colon = memchr(line, ':', (size_t)(end - line));
    if(dash && (!colon || dash < colon) && line[0] != ' ' &&
       strspn(line, "0123456789abcdef") == (size_t)(dash - line)) {
      cur = kind_of(out, line, end);
      out->mappings++;
    } else if(cur && end - line > 4 && !memcmp(line, "Rss:", 4)) {
      unsigned long long kb = strtoull(line + 4, NULL, 10);
      *cur += (uint64_t)kb << 10;
      out->rss += (uint64_t)kb << 10;
    }
    line = *end ? end + 1 : end;
  }
  out->read = out->mappings > 0;
  return out->read ? 0 : -EINVAL;
}

int mdp_memmap_read(pid_t pid, mdp_memmap_t *out)
{
  char path[64];
  size_t cap = 1 << 16, used = 0;
  char *buf;
  int fd, rc;

  memset(out, 0, sizeof(*out));
  if(pid <= 0)
    return -ESRCH;
  snprintf(path, sizeof(path), "/proc/%ld/smaps", (long)pid);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if(fd < 0)
    return errno == ENOENT ? -ESRCH : -errno;
  buf = malloc(cap);
  if(!buf) {
    close(fd);
    return -ENOMEM;
  }
  for(;;) {
    if(used + 4096 > cap) {
      if(cap >= (64u << 20)) /* a map this large: count what was read */
        break;
      char *nb = realloc(buf, cap * 2);
      if(!nb)
        break;
      buf = nb;
      cap *= 2;
    }
    ssize_t n = read(fd, buf + used, cap - 1 - used);
    if(n < 0 && errno == EINTR)
      continue;
    if(n <= 0)
      break;
    used += (size_t)n;
  }
  close(fd);
  buf[used] = '\0';
  rc = mdp_memmap_parse(buf, out);
  free(buf);
  return rc == -EINVAL ? -ESRCH : rc;
}
