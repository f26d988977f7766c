/* The kernel's cgroup texts, parsed: see cgroup_parse.h. */
#include "workers/cgroup_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The next whitespace-separated field of a mountinfo line, unescaped
 * (\040 space, \011 tab, \012 newline, \134 backslash). Returns the
 * position after it, or NULL at the line's end. */
static const char *field(const char *p, const char *end, char *out, size_t len)
{
  size_t n = 0;

  while(p < end && (*p == ' ' || *p == '\t'))
    p++;
  if(p >= end)
    return NULL;
  while(p < end && *p != ' ' && *p != '\t') {
    char c = *p++;
    if(c == '\\' && end - p >= 3 && p[0] >= '0' && p[0] <= '3' && p[1] >= '0' && p[1] <= '7' &&
       p[2] >= '0' && p[2] <= '7') {
      c = (char)((p[0] - '0') * 64 + (p[1] - '0') * 8 + (p[2] - '0'));
      p += 3;
    }
    if(n + 1 < len)
      out[n++] = c;
    else
      n = len; /* too long: marked below */
  }
  if(len) {
    if(n >= len)
      out[0] = '\0'; /* never a cut path */
    else
      out[n] = '\0';
  }
  return p;
}

/* Does the comma-separated list hold word? */
static int has_word(const char *list, const char *word)
{
  size_t wl = strlen(word);

  for(const char *p = list; p && *p;) {
    const char *comma = strchr(p, ',');
    size_t l = comma ? (size_t)(comma - p) : strlen(p);
    if(l == wl && !memcmp(p, word, wl))
      return 1;
    p = comma ? comma + 1 : NULL;
  }
  return 0;
}

size_t mdp_cgroup_parse_mountinfo(const char *text, mdp_cgroup_mount *out, size_t max)
{
  size_t n1 = 0, n2 = 0;
  mdp_cgroup_mount v2[MDP_CGROUP_MOUNTS_MAX];

  for(const char *line = text; line && *line;) {
    const char *end = strchr(line, '\n'), *p = line;
    char root[MDP_CGROUP_PATH_MAX], point[MDP_CGROUP_PATH_MAX], tmp[MDP_CGROUP_PATH_MAX];
    char fstype[32], opts[256];
    int ok = 1;

    if(!end)
      end = line + strlen(line);
    /* ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER */
    for(int i = 0; i < 3 && ok; i++)
      ok = (p = field(p, end, tmp, sizeof tmp)) != NULL;
    ok = ok && (p = field(p, end, root, sizeof root)) != NULL;
    ok = ok && (p = field(p, end, point, sizeof point)) != NULL;
    ok = ok && (p = field(p, end, tmp, sizeof tmp)) != NULL;
    while(ok && (p = field(p, end, tmp, sizeof tmp)) != NULL && strcmp(tmp, "-") != 0)
      ;
    ok = ok && p && (p = field(p, end, fstype, sizeof fstype)) != NULL;
    ok = ok && (p = field(p, end, tmp, sizeof tmp)) != NULL;
    ok = ok && field(p, end, opts, sizeof opts) != NULL;
    if(ok && root[0] == '/' && point[0] == '/') {
      mdp_cgroup_mount m = {.version = MDP_CGROUP_NONE};
      snprintf(m.root, sizeof m.root, "%s", root);
      snprintf(m.point, sizeof m.point, "%s", point);
      if(!strcmp(fstype, "cgroup") && has_word(opts, "memory") && n1 < max) {
        m.version = MDP_CGROUP_V1;
        out[n1++] = m;
      } else if(!strcmp(fstype, "cgroup2") && n2 < MDP_CGROUP_MOUNTS_MAX) {
        m.version = MDP_CGROUP_V2;
        v2[n2++] = m;
      }
    }
    line = *end ? end + 1 : NULL;
  }
  if(n1)
    return n1;
  for(size_t i = 0; i < n2 && i < max; i++)
    out[i] = v2[i];
  return n2 < max ? n2 : max;
}

int mdp_cgroup_parse_proc(const char *text, mdp_cgroup_version v, char *out, size_t len)
{
  for(const char *line = text; line && *line;) {
    const char *end = strchr(line, '\n');
    const char *c1 = strchr(line, ':'), *c2;
    if(!end)
      end = line + strlen(line);
    c2 = c1 && c1 < end ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
    if(c2) {
      char ctl[256];
      size_t cl = (size_t)(c2 - c1 - 1), pl = (size_t)(end - c2 - 1);
      int want;
      if(cl >= sizeof ctl)
        cl = 0;
      memcpy(ctl, c1 + 1, cl);
      ctl[cl] = '\0';
      if(v == MDP_CGROUP_V2)
        want = !strncmp(line, "0:", 2) && cl == 0;
      else
        want = v == MDP_CGROUP_V1 && has_word(ctl, "memory");
      if(want) {
        if(pl + 1 > len)
          return -ENAMETOOLONG;
        memcpy(out, c2 + 1, pl);
        out[pl] = '\0';
        return 0;
      }
    }
    line = *end ? end + 1 : NULL;
  }
  return -ENOENT;
}

/* Every component of a relative path is a plain name ("" has none). */
static int plain_rel(const char *p)
{
  if(*p == '\0')
    return 1;
  for(;;) {
    const char *slash = strchr(p, '/');
    size_t l = slash ? (size_t)(slash - p) : strlen(p);
    if(l == 0 || (l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
      return 0;
    if(!slash)
      return 1;
    p = slash + 1;
  }
}

/* Every component of an absolute path is a plain name. */
static int plain_path(const char *path) { return path[0] == '/' && plain_rel(path + 1); }

/* As the kernel writes a cgroup path or a mount's root: collectd in a
 * cgroup namespace of its own (a DaemonSet pod that is not privileged)
 * sees every cgroup outside its namespace's root as a run of leading "/.."
 * components, then plain names ("/../pod/c"; a mount root "/.."). Nothing
 * else: a ".." after a name, "." or an empty component is refused. */
static int ns_path(const char *path)
{
  while(!strncmp(path, "/..", 3) && (path[3] == '/' || path[3] == '\0'))
    path += 3;
  return path[0] == '\0' || plain_path(path);
}

/* root is "/" or a prefix of path ending at a component boundary. */
static size_t root_prefix(const char *root, const char *path)
{
  size_t rl = strlen(root);

  if(rl == 1 && root[0] == '/')
    return 1;
  while(rl > 1 && root[rl - 1] == '/')
    rl--;
  if(strncmp(root, path, rl) != 0 || (path[rl] != '\0' && path[rl] != '/'))
    return 0;
  return rl;
}

int mdp_cgroup_relative(const mdp_cgroup_mount *m, const char *path, char *out, size_t len)
{
  size_t skip;
  const char *rest;

  if(!ns_path(path) || !ns_path(m->root))
    return -EINVAL;
  skip = root_prefix(m->root, path);
  if(!skip)
    return -EXDEV;
  rest = path + skip;
  while(*rest == '/')
    rest++;
  /* what lies below the mount point: plain names only ("/../x" under a
   * mount of "/" is outside it) */
  if(!plain_rel(rest))
    return -EINVAL;
  if(strlen(rest) + 1 > len)
    return -ENAMETOOLONG;
  snprintf(out, len, "%s", rest);
  return 0;
}

int mdp_cgroup_pick_mount(const mdp_cgroup_mount *m, size_t n, const char *path)
{
  int best = -1;
  size_t best_len = 0;

  if(!ns_path(path))
    return -1;
  for(size_t i = 0; i < n; i++) {
    size_t l = ns_path(m[i].root) ? root_prefix(m[i].root, path) : 0;
    const char *rest = path + l;
    while(l && *rest == '/')
      rest++;
    if(l && !plain_rel(rest)) /* climbs above this mount's root */
      l = 0;
    if(l > best_len) {
      best = (int)i;
      best_len = l;
    }
  }
  return best;
}

int mdp_cgroup_parse_limit(const char *text, uint64_t *out)
{
  char *end;
  unsigned long long v;

  while(*text == ' ' || *text == '\t')
    text++;
  if(!strncmp(text, "max", 3) && (text[3] == '\0' || text[3] == '\n')) {
    *out = MDP_CGROUP_NO_LIMIT;
    return 0;
  }
  if(*text < '0' || *text > '9')
    return -EINVAL;
  errno = 0;
  v = strtoull(text, &end, 10);
  if(errno || (*end != '\0' && *end != '\n' && *end != ' '))
    return -EINVAL;
  *out = v >= (1ull << 62) ? MDP_CGROUP_NO_LIMIT : (uint64_t)v;
  return 0;
}

int mdp_cgroup_parse_key(const char *text, const char *key, uint64_t *out)
{
  size_t kl = strlen(key);

  for(const char *line = text; line && *line;) {
    if(!strncmp(line, key, kl) && line[kl] == ' ') {
      char *end;
      unsigned long long v = strtoull(line + kl + 1, &end, 10);
      if(end == line + kl + 1)
        return -ENOENT;
      *out = (uint64_t)v;
      return 0;
    }
    line = strchr(line, '\n');
    if(line)
      line++;
  }
  return -ENOENT;
}

static int avg10(const char *text, const char *kind, double *out)
{
  size_t kl = strlen(kind);

  for(const char *line = text; line && *line;) {
    if(!strncmp(line, kind, kl) && line[kl] == ' ') {
      const char *a = strstr(line, "avg10=");
      const char *nl = strchr(line, '\n');
      char *end;
      if(!a || (nl && a > nl))
        return -EINVAL;
      *out = strtod(a + 6, &end);
      return end == a + 6 ? -EINVAL : 0;
    }
    line = strchr(line, '\n');
    if(line)
      line++;
  }
  return -EINVAL;
}

int mdp_cgroup_parse_pressure(const char *text, double *some_avg10, double *full_avg10)
{
  if(avg10(text, "some", some_avg10) || avg10(text, "full", full_avg10))
    return -EINVAL;
  return 0;
}

void mdp_cgroup_instance(const char *path, char *out, size_t len)
{
  char clean[MDP_CGROUP_PATH_MAX];
  size_t n = 0;
  uint32_t h = 2166136261u;

  for(const char *p = path; *p; p++)
    h = (h ^ (uint8_t)*p) * 16777619u;
  while(*path == '/')
    path++;
  for(; *path && n + 1 < sizeof clean; path++) {
    char c = *path;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '.' || c == '_' || c == '-';
    clean[n++] = ok ? c : '_';
  }
  clean[n] = '\0';
  if(n == 0)
    snprintf(out, len, "cgroup-root");
  else if(n <= 100)
    snprintf(out, len, "cgroup-%s", clean);
  else
    snprintf(out, len, "cgroup-%08x-%s", (unsigned)h, clean + n - 80);
}

bool mdp_cgroup_fork_fits(const mdp_cgroup_room *r, char *reason, size_t len)
{
  const char *dir = r->dir;
  uint64_t limit = r->limit, charge = r->charge, margin = r->margin, rss = r->rss;
  double mib = 1048576.0;
  double cow = (double)rss * MDP_CGROUP_COW_FACTOR;
  double room = (double)limit - (double)charge - (double)margin;
  bool fits = room >= cow;

  snprintf(reason, len,
           "cgroup %s room %.1f MiB (limit %.1f MiB - charge %.1f MiB - margin %.1f MiB) %s "
           "copy-on-write estimate %.1f MiB (%.1f x RSS %.1f MiB): %s",
           dir, room / mib, (double)limit / mib, (double)charge / mib, (double)margin / mib,
           fits ? ">=" : "<", cow / mib, MDP_CGROUP_COW_FACTOR, (double)rss / mib,
           fits ? "fork" : "inline");
  return fits;
}
