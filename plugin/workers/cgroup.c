/* The memory cgroups that hold registered workers: see cgroup.h. */
#include "workers/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "md/text.h"

struct mdp_cgroup {
  /* Immutable after acquire. */
  mdp_cgroup_version version;
  char path[MDP_CGROUP_PATH_MAX];
  char dir[2 * MDP_CGROUP_PATH_MAX];
  char instance[128];
  int dir_fd;
  int charge_fd, stat_fd, events_fd, pressure_fd;
  int local_fd;             /* v2 memory.events.local (its own processes' events), -1 if none */
  int limit_fd, failcnt_fd; /* v1 */
  int max_fd[MDP_CGROUP_DEPTH_MAX], high_fd[MDP_CGROUP_DEPTH_MAX]; /* v2: self first */
  size_t depth;
  int wd; /* inotify watch of v2 memory.events, -1 if none */

  /* Read thread only. */
  unsigned samples;
  uint64_t stat_charge; /* charge when memory.stat was last read */
  uint64_t inactive_file, v1_limit;
  bool events_dirty; /* v2: memory.events changed since read */
  bool detector_ready;
  mdp_detector detector;
  mdp_cgroup_stats cur;

  /* Locked. */
  unsigned refs;
  mdp_cgroup_stats last, before_last;
  uint64_t oom_accounted; /* kills already explained (before, or reported) */
  uint64_t oom_prev;      /* the count the sample before saw */
  mdp_cgroup *next;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static mdp_cgroup *table;
static int ino_fd = -1;
static uint64_t oom_reported;

/* ---------------------------------------------------------------- files */

static int read_at(int fd, char *buf, size_t len)
{
  size_t used = 0;

  if(fd < 0)
    return -ENOENT;
  while(used + 1 < len) {
    ssize_t n = pread(fd, buf + used, len - 1 - used, (off_t)used);
    if(n < 0 && errno == EINTR)
      continue;
    if(n < 0)
      return -errno;
    if(n == 0)
      break;
    used += (size_t)n;
  }
  buf[used] = '\0';
  return used ? 0 : -ENODATA;
}

static int slurp(const char *path, char *buf, size_t len)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
  size_t used = 0;

  if(fd < 0)
    return -errno;
  /* /proc files are read sequentially, not by pread */
  while(used + 1 < len) {
    ssize_t n = read(fd, buf + used, len - 1 - used);
    if(n < 0 && errno == EINTR)
      continue;
    if(n < 0)
      rc = -errno;
    if(n <= 0)
      break;
    used += (size_t)n;
  }
  if(!rc && used + 1 >= len)
    rc = -E2BIG;
  close(fd);
  buf[used] = '\0';
  return rc;
}

static int open_in(int dir_fd, const char *name)
{
  return openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
}

static int read_u64(int fd, uint64_t *out)
{
  char buf[64];
  int rc = read_at(fd, buf, sizeof buf);
  return rc ? rc : mdp_cgroup_parse_limit(buf, out);
}

/* ---------------------------------------------------------------- table */

static void cgroup_free(mdp_cgroup *cg)
{
  int *fds[] = {&cg->dir_fd,      &cg->charge_fd, &cg->stat_fd,    &cg->events_fd,
                &cg->pressure_fd, &cg->limit_fd,  &cg->failcnt_fd, &cg->local_fd};

  if(cg->wd >= 0 && ino_fd >= 0)
    inotify_rm_watch(ino_fd, cg->wd);
  for(size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
    if(*fds[i] >= 0)
      close(*fds[i]);
  for(size_t i = 0; i < cg->depth; i++) {
    if(cg->max_fd[i] >= 0)
      close(cg->max_fd[i]);
    if(cg->high_fd[i] >= 0)
      close(cg->high_fd[i]);
  }
  free(cg);
}

/* Walk rel ("a/b/c") below mount_fd with O_NOFOLLOW, one component at a
 * time; v2 opens each level's memory.max/memory.high on the way (self
 * first). Returns the cgroup's directory descriptor or a negative errno. */
static int walk(mdp_cgroup *cg, int mount_fd, const char *rel)
{
  int levels[MDP_CGROUP_DEPTH_MAX + 1], n = 0, fd = dup(mount_fd);
  char comp[256];

  if(fd < 0)
    return -errno;
  levels[n++] = fd;
  for(const char *p = rel; *p;) {
    const char *slash = strchr(p, '/');
    size_t l = slash ? (size_t)(slash - p) : strlen(p);
    if(l == 0 || l >= sizeof comp || n > MDP_CGROUP_DEPTH_MAX) {
      fd = -ENAMETOOLONG;
      break;
    }
    memcpy(comp, p, l);
    comp[l] = '\0';
    fd = openat(levels[n - 1], comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if(fd < 0) {
      fd = -errno;
      break;
    }
    levels[n++] = fd;
    p = slash ? slash + 1 : p + l;
  }
  if(fd < 0) {
    for(int i = 0; i < n; i++)
      close(levels[i]);
    return fd;
  }
  if(cg->version == MDP_CGROUP_V2) {
    /* the mount's root level (the hierarchy's root) has no memory.max */
    for(int i = n - 1; i >= 0 && cg->depth < MDP_CGROUP_DEPTH_MAX; i--) {
      cg->max_fd[cg->depth] = open_in(levels[i], "memory.max");
      cg->high_fd[cg->depth] = open_in(levels[i], "memory.high");
      cg->depth++;
    }
  }
  for(int i = 0; i < n - 1; i++)
    close(levels[i]);
  return levels[n - 1];
}

static void open_files(mdp_cgroup *cg)
{
  int d = cg->dir_fd;

  cg->stat_fd = open_in(d, "memory.stat");
  if(cg->version == MDP_CGROUP_V2) {
    cg->charge_fd = open_in(d, "memory.current");
    cg->events_fd = open_in(d, "memory.events");
    cg->local_fd = open_in(d, "memory.events.local");
    cg->pressure_fd = open_in(d, "memory.pressure");
  } else {
    cg->charge_fd = open_in(d, "memory.usage_in_bytes");
    cg->events_fd = open_in(d, "memory.oom_control");
    cg->limit_fd = open_in(d, "memory.limit_in_bytes");
    cg->failcnt_fd = open_in(d, "memory.failcnt");
  }
}

/* v2: the change notification on memory.events (by its /proc/self/fd
 * name: the descriptor was opened safely; inotify needs a path). */
static void watch_events(mdp_cgroup *cg)
{
  char name[64];

  if(cg->version != MDP_CGROUP_V2 || cg->events_fd < 0)
    return;
  if(ino_fd < 0)
    ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if(ino_fd < 0)
    return;
  snprintf(name, sizeof name, "/proc/self/fd/%d", cg->events_fd);
  cg->wd = inotify_add_watch(ino_fd, name, IN_MODIFY);
}

static int read_oom(mdp_cgroup *cg, mdp_cgroup_stats *s)
{
  char buf[512];
  int rc = read_at(cg->events_fd, buf, sizeof buf);

  if(rc)
    return rc;
  if(mdp_cgroup_parse_key(buf, "oom_kill", &s->oom_kill) != 0)
    return -EIO;
  if(cg->version == MDP_CGROUP_V2) {
    (void)mdp_cgroup_parse_key(buf, "high", &s->high_events);
    (void)mdp_cgroup_parse_key(buf, "max", &s->max_events);
    s->has_group_kill = mdp_cgroup_parse_key(buf, "oom_group_kill", &s->oom_group_kill) == 0;
  }
  /* v2's memory.events counts the kills in its descendants too: whose
   * processes were killed is memory.events.local's (Linux 5.2); v1's count
   * is the cgroup's own */
  s->own_oom_kill = s->oom_kill;
  if(cg->local_fd >= 0 && read_at(cg->local_fd, buf, sizeof buf) == 0)
    (void)mdp_cgroup_parse_key(buf, "oom_kill", &s->own_oom_kill);
  s->has_events = true;
  return 0;
}

static uint64_t oom_total(const mdp_cgroup_stats *s)
{
  /* a group kill counts its processes in oom_kill too (each one killed) */
  return s->own_oom_kill;
}

int mdp_cgroup_acquire_from(const mdp_cgroup_source *src, mdp_cgroup **out, char *err,
                            size_t errlen)
{
  mdp_cgroup_mount mounts[MDP_CGROUP_MOUNTS_MAX];
  size_t n = mdp_cgroup_parse_mountinfo(src->mountinfo, mounts, MDP_CGROUP_MOUNTS_MAX);
  char path[MDP_CGROUP_PATH_MAX], rel[MDP_CGROUP_PATH_MAX], point[2 * MDP_CGROUP_PATH_MAX];
  mdp_cgroup *cg;
  int m, rc, mount_fd;

  *out = NULL;
  if(n == 0) {
    md_seterr(err, errlen, "no memory cgroup hierarchy is mounted");
    return -ENOENT;
  }
  rc = mdp_cgroup_parse_proc(src->proc_cgroup, mounts[0].version, path, sizeof path);
  if(rc) {
    if(rc == -ENAMETOOLONG)
      md_seterr(err, errlen, "its memory cgroup's path is longer than %d bytes",
                MDP_CGROUP_PATH_MAX - 1);
    else
      md_seterr(err, errlen, "the process is in no memory cgroup");
    return rc;
  }
  m = mdp_cgroup_pick_mount(mounts, n, path);
  if(m < 0 || mdp_cgroup_relative(&mounts[m], path, rel, sizeof rel) != 0) {
    char clean[128];
    md_printable(clean, sizeof clean, path, MD_TEXT_PLAIN);
    md_seterr(err, errlen, "cgroup %s is not visible under collectd's mounts", clean);
    return m < 0 ? -EXDEV : -EINVAL;
  }
  snprintf(point, sizeof point, "%s%s", src->root_prefix, mounts[m].point);

  pthread_mutex_lock(&lock);
  for(cg = table; cg; cg = cg->next)
    if(cg->version == mounts[m].version && !strcmp(cg->path, path)) {
      cg->refs++;
      pthread_mutex_unlock(&lock);
      *out = cg;
      return 0;
    }
  pthread_mutex_unlock(&lock);

  cg = calloc(1, sizeof *cg);
  if(!cg)
    return -ENOMEM;
  cg->version = mounts[m].version;
  snprintf(cg->path, sizeof cg->path, "%s", path);
  snprintf(cg->dir, sizeof cg->dir, "%s%s%s", mounts[m].point, rel[0] ? "/" : "", rel);
  /* only ever shown (opened by descriptor below): a delegated cgroup's
   * name is its maker's text */
  md_printable_inplace(cg->dir, MD_TEXT_UTF8);
  if(strncmp(path, "/..", 3) == 0 && (path[3] == '/' || path[3] == '\0')) {
    /* seen from collectd's own cgroup namespace ("/../x"): named, as
     * always, relative to the hierarchy's root, which is what the mount
     * shows (its root "/.."), so by the path below the mount point */
    char host_rel[sizeof rel + 1];
    snprintf(host_rel, sizeof host_rel, "/%s", rel);
    mdp_cgroup_instance(host_rel, cg->instance, sizeof cg->instance);
  } else {
    mdp_cgroup_instance(path, cg->instance, sizeof cg->instance);
  }
  cg->charge_fd = cg->stat_fd = cg->events_fd = cg->pressure_fd = -1;
  cg->limit_fd = cg->failcnt_fd = cg->wd = cg->local_fd = -1;
  mount_fd = open(point, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if(mount_fd < 0) {
    rc = -errno;
    md_seterr(err, errlen, "cannot open %s: %s", point, strerror(-rc));
    free(cg);
    return rc;
  }
  cg->dir_fd = walk(cg, mount_fd, rel);
  close(mount_fd);
  if(cg->dir_fd < 0) {
    rc = cg->dir_fd;
    md_seterr(err, errlen, "cannot open cgroup %s: %s", cg->dir, strerror(-rc));
    cg->dir_fd = -1;
    cgroup_free(cg);
    return rc == -ENOENT ? -ESRCH : rc;
  }
  open_files(cg);
  if(cg->charge_fd < 0) {
    md_seterr(err, errlen, "cgroup %s has no memory controller files", cg->dir);
    cgroup_free(cg);
    return -ENOENT;
  }
  cg->refs = 1;
  cg->events_dirty = true;

  pthread_mutex_lock(&lock);
  /* another registration may have made it meanwhile: keep one */
  for(mdp_cgroup *o = table; o; o = o->next)
    if(o->version == cg->version && !strcmp(o->path, cg->path)) {
      o->refs++;
      pthread_mutex_unlock(&lock);
      cgroup_free(cg);
      *out = o;
      return 0;
    }
  watch_events(cg);
  {
    mdp_cgroup_stats s = {0};
    if(read_oom(cg, &s) == 0)
      cg->oom_accounted = cg->oom_prev = oom_total(&s);
  }
  cg->next = table;
  table = cg;
  pthread_mutex_unlock(&lock);
  *out = cg;
  return 0;
}

int mdp_cgroup_path_of(pid_t pid, mdp_cgroup_version v, char *out, size_t len)
{
  char path[64], procs[4096];
  int rc;

  snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
  rc = slurp(path, procs, sizeof procs);
  if(rc)
    return rc == -ENOENT ? -ESRCH : rc;
  return mdp_cgroup_parse_proc(procs, v, out, len);
}

/* The cgroup and cgroup2 lines of /proc/self/mountinfo into *out (malloc'd,
 * the caller's to free). The file has a line for every mount collectd's
 * namespace holds, and a Kubernetes node's pod volumes and overlay roots
 * (an overlay line alone can be kilobytes) pass the 256 KiB buffer it was
 * once read into, which then refused every worker's cgroup (E2BIG): only
 * the hierarchies' lines are kept, whatever the file's size. Returns 0 or
 * a negative errno. */
static int cgroup_mount_lines(char **out)
{
  enum { KEPT_MAX = 1024 * 1024 };
  FILE *f = fopen("/proc/self/mountinfo", "re");
  char *line = NULL, *kept = NULL;
  size_t linecap = 0, cap = 0, used = 0;
  ssize_t n;
  int rc = 0;

  *out = NULL;
  if(!f)
    return -errno;
  while(!rc && (n = getline(&line, &linecap, f)) > 0) {
    /* the separator " - " then the type: paths have their spaces escaped */
    if(!strstr(line, " - cgroup ") && !strstr(line, " - cgroup2 "))
      continue;
    if(used + (size_t)n + 1 > cap) {
      size_t ncap = cap ? cap : 4096;
      char *p;
      while(ncap < used + (size_t)n + 1)
        ncap *= 2;
      if(ncap > KEPT_MAX) {
        rc = -E2BIG;
        break;
      }
      if(!(p = realloc(kept, ncap))) {
        rc = -ENOMEM;
        break;
      }
      kept = p;
      cap = ncap;
    }
    memcpy(kept + used, line, (size_t)n);
    used += (size_t)n;
    kept[used] = '\0';
  }
  if(!rc && ferror(f))
    rc = -EIO;
  free(line);
  fclose(f);
  if(!rc && !kept && !(kept = calloc(1, 1)))
    rc = -ENOMEM;
  if(rc)
    free(kept);
  else
    *out = kept;
  return rc;
}

int mdp_cgroup_acquire(pid_t pid, mdp_cgroup **out, char *err, size_t errlen)
{
  char path[64], procs[4096], *mountinfo = NULL;
  int rc;

  snprintf(path, sizeof path, "/proc/%d/cgroup", (int)pid);
  rc = slurp(path, procs, sizeof procs);
  if(rc) {
    md_seterr(err, errlen, "cannot read %s: %s", path, strerror(-rc));
    return rc == -ENOENT ? -ESRCH : rc;
  }
  rc = cgroup_mount_lines(&mountinfo);
  if(rc) {
    md_seterr(err, errlen, "cannot read /proc/self/mountinfo: %s", strerror(-rc));
  } else {
    mdp_cgroup_source src = {.mountinfo = mountinfo, .proc_cgroup = procs, .root_prefix = ""};
    rc = mdp_cgroup_acquire_from(&src, out, err, errlen);
  }
  free(mountinfo);
  return rc;
}

void mdp_cgroup_ref(mdp_cgroup *cg)
{
  pthread_mutex_lock(&lock);
  cg->refs++;
  pthread_mutex_unlock(&lock);
}

uint64_t mdp_cgroup_oom_kills(void)
{
  uint64_t n;

  pthread_mutex_lock(&lock);
  n = oom_reported;
  pthread_mutex_unlock(&lock);
  return n;
}

void mdp_cgroup_count_kill(void)
{
  pthread_mutex_lock(&lock);
  oom_reported++;
  pthread_mutex_unlock(&lock);
}

void mdp_cgroup_release(mdp_cgroup *cg)
{
  if(!cg)
    return;
  pthread_mutex_lock(&lock);
  if(--cg->refs == 0) {
    for(mdp_cgroup **p = &table; *p; p = &(*p)->next)
      if(*p == cg) {
        *p = cg->next;
        break;
      }
    cgroup_free(cg);
  }
  pthread_mutex_unlock(&lock);
}

void mdp_cgroup_shutdown(void)
{
  pthread_mutex_lock(&lock);
  if(!table && ino_fd >= 0) {
    close(ino_fd);
    ino_fd = -1;
  }
  pthread_mutex_unlock(&lock);
}

int mdp_cgroup_inotify_fd(void) { return ino_fd; }

/* ---------------------------------------------------------------- sampling */

/* Which cgroups' memory.events changed (drained without blocking). */
static void drain_inotify(void)
{
  char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
  ssize_t n;

  if(ino_fd < 0)
    return;
  while((n = read(ino_fd, buf, sizeof buf)) > 0) {
    for(char *p = buf; p < buf + n;) {
      const struct inotify_event *ev = (const struct inotify_event *)p;
      pthread_mutex_lock(&lock);
      for(mdp_cgroup *cg = table; cg; cg = cg->next)
        if(cg->wd == ev->wd)
          cg->events_dirty = true;
      pthread_mutex_unlock(&lock);
      p += sizeof *ev + ev->len;
    }
  }
}

static uint64_t tightest(const int *fds, size_t n)
{
  uint64_t best = MDP_CGROUP_NO_LIMIT, v;

  for(size_t i = 0; i < n; i++)
    if(fds[i] >= 0 && read_u64(fds[i], &v) == 0 && v < best)
      best = v;
  return best;
}

static bool stat_due(const mdp_cgroup *cg, uint64_t charge, uint64_t limit)
{
  uint64_t step = limit != MDP_CGROUP_NO_LIMIT ? limit / 64 : 4u << 20;
  uint64_t moved = charge > cg->stat_charge ? charge - cg->stat_charge : cg->stat_charge - charge;

  return cg->samples % MDP_CGROUP_STAT_EVERY == 0 || moved > step;
}

static void read_stat(mdp_cgroup *cg, mdp_cgroup_stats *s)
{
  char buf[8192];
  uint64_t v;
  bool v2 = cg->version == MDP_CGROUP_V2;

  if(read_at(cg->stat_fd, buf, sizeof buf) != 0)
    return;
  (void)mdp_cgroup_parse_key(buf, v2 ? "anon" : "total_rss", &s->anon);
  (void)mdp_cgroup_parse_key(buf, v2 ? "file" : "total_cache", &s->file);
  if(mdp_cgroup_parse_key(buf, v2 ? "inactive_file" : "total_inactive_file", &v) == 0)
    cg->inactive_file = v;
  if(!v2 && mdp_cgroup_parse_key(buf, "hierarchical_memory_limit", &v) == 0)
    cg->v1_limit = v >= (1ull << 62) ? MDP_CGROUP_NO_LIMIT : v;
  if(!v2 && cg->failcnt_fd >= 0 && read_u64(cg->failcnt_fd, &v) == 0)
    s->max_events = v;
  cg->stat_charge = s->charge;
  s->has_stat = true;
}

int mdp_cgroup_sample(mdp_cgroup *cg, double t, mdp_cgroup_stats *out)
{
  mdp_cgroup_stats *s = &cg->cur;
  char buf[256];
  int rc;

  drain_inotify();
  rc = read_u64(cg->charge_fd, &s->charge);
  if(rc)
    return rc == -ENODEV ? -ENOENT : rc;
  if(cg->version == MDP_CGROUP_V2) {
    s->limit = tightest(cg->max_fd, cg->depth);
    s->high = tightest(cg->high_fd, cg->depth);
  } else {
    uint64_t own = MDP_CGROUP_NO_LIMIT;
    (void)read_u64(cg->limit_fd, &own);
    if(cg->samples == 0)
      cg->v1_limit = MDP_CGROUP_NO_LIMIT;
    s->limit = own < cg->v1_limit ? own : cg->v1_limit;
    s->high = MDP_CGROUP_NO_LIMIT;
  }
  if(stat_due(cg, s->charge, s->limit)) {
    read_stat(cg, s);
    if(cg->version == MDP_CGROUP_V1 && cg->v1_limit < s->limit)
      s->limit = cg->v1_limit;
    if(cg->version == MDP_CGROUP_V1)
      cg->events_dirty = true; /* no change notification: read with the stat */
  }
  s->working_set = s->charge > cg->inactive_file ? s->charge - cg->inactive_file : 0;
  bool dirty;
  pthread_mutex_lock(&lock);
  dirty = cg->events_dirty;
  cg->events_dirty = false;
  pthread_mutex_unlock(&lock);
  if(dirty)
    (void)read_oom(cg, s);
  if(cg->pressure_fd >= 0 && read_at(cg->pressure_fd, buf, sizeof buf) == 0)
    s->has_psi = mdp_cgroup_parse_pressure(buf, &s->psi_some10, &s->psi_full10) == 0;
  s->t = t;
  cg->samples++;
  *out = *s;

  pthread_mutex_lock(&lock);
  cg->before_last = cg->last;
  cg->last = *s;
  if(s->has_events) {
    uint64_t now = oom_total(s);
    /* A rise that stayed for a whole interval with no registered worker
     * gone was some other process's kill (the workers' own deaths are
     * accounted by mdp_cgroup_oom_check as they vanish). */
    if(now > cg->oom_accounted && now == cg->oom_prev)
      cg->oom_accounted = now;
    cg->oom_prev = now;
  }
  pthread_mutex_unlock(&lock);
  return 0;
}

int mdp_cgroup_read_charge(mdp_cgroup *cg, uint64_t *charge)
{
  return read_u64(cg->charge_fd, charge);
}

bool mdp_cgroup_last(mdp_cgroup *cg, mdp_cgroup_stats *out)
{
  bool have;

  pthread_mutex_lock(&lock);
  *out = cg->last;
  have = cg->last.t != 0;
  pthread_mutex_unlock(&lock);
  return have;
}

int mdp_cgroup_oom_check(mdp_cgroup *cg, mdp_cgroup_stats *now)
{
  mdp_cgroup_stats s = {0};
  int rc = read_oom(cg, &s), hit = 0;

  if(rc)
    return rc;
  pthread_mutex_lock(&lock);
  /* The figures from before the kill: the kill frees the worker's memory,
   * so a sample taken between the kill and this call (the worker's
   * connection closes a moment after it dies) holds less. Of the last two
   * samples, the one with the higher charge is the one before. */
  *now = cg->before_last.t && cg->before_last.charge > cg->last.charge ? cg->before_last : cg->last;
  now->oom_kill = s.oom_kill;
  now->own_oom_kill = s.own_oom_kill;
  now->oom_group_kill = s.oom_group_kill;
  now->has_group_kill = s.has_group_kill;
  now->has_events = true;
  if(oom_total(&s) > cg->oom_accounted) {
    cg->oom_accounted++;
    hit = 1;
  }
  pthread_mutex_unlock(&lock);
  return hit;
}

mdp_cgroup_version mdp_cgroup_version_of(const mdp_cgroup *cg) { return cg->version; }

const char *mdp_cgroup_path(const mdp_cgroup *cg) { return cg->path; }

const char *mdp_cgroup_dir(const mdp_cgroup *cg) { return cg->dir; }

const char *mdp_cgroup_instance_of(const mdp_cgroup *cg) { return cg->instance; }

mdp_detector *mdp_cgroup_detector(mdp_cgroup *cg, const mdp_detector_config *cfg)
{
  if(!cg->detector_ready) {
    mdp_detector_init(&cg->detector, cfg);
    cg->detector_ready = true;
  }
  return &cg->detector;
}
