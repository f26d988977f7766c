/* memdiag plugin: the table of registered workers. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "md/text.h"
#include "pidfd.h"
#include "registry.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static mdp_worker **table; /* sorted by id (ids only grow) */
static size_t count, cap;
static uint64_t next_id = 1;
static mdp_detector_config detector_cfg;
static unsigned memory_kinds;

int mdp_registry_init(const mdp_detector_config *detector, unsigned memory)
{
  pthread_mutex_lock(&lock);
  detector_cfg = *detector;
  memory_kinds = memory;
  pthread_mutex_unlock(&lock);
  return 0;
}

static void worker_free(mdp_worker *w)
{
  if(w->proc_fd >= 0)
    close(w->proc_fd);
  if(w->pidfd >= 0)
    close(w->pidfd);
  mdp_cgroup_release(w->cg);
  for(size_t i = 0; i < w->n_capabilities; i++)
    free(w->capabilities[i]);
  free(w->capabilities);
  free(w);
}

/* Called with the lock held; frees outside of it would be nicer but the
 * close() of a /proc handle is cheap. */
static void unref_locked(mdp_worker *w)
{
  if(--w->refs == 0)
    worker_free(w);
}

void mdp_registry_destroy(void)
{
  pthread_mutex_lock(&lock);
  for(size_t i = 0; i < count; i++)
    unref_locked(table[i]);
  free(table);
  table = NULL;
  count = cap = 0;
  pthread_mutex_unlock(&lock);
}

void mdp_registry_sanitise(const char *name, char *out, size_t len)
{
  size_t i = 0;

  for(; name[i] && i + 1 < len; i++) {
    char c = name[i];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             c == '.' || c == '_' || c == '-';
    out[i] = ok ? c : '_';
  }
  out[i] = '\0';
  if(i == 0)
    snprintf(out, len, "worker");
}

static int name_taken_locked(const char *instance)
{
  for(size_t i = 0; i < count; i++)
    if(strcmp(table[i]->instance, instance) == 0)
      return 1;
  return 0;
}

static int copy_caps(mdp_worker *w, char **caps, size_t n)
{
  if(n == 0)
    return 0;
  w->capabilities = calloc(n, sizeof(char *));
  if(!w->capabilities)
    return -ENOMEM;
  for(size_t i = 0; i < n; i++) {
    w->capabilities[i] = strdup(caps[i] ? caps[i] : "");
    if(!w->capabilities[i])
      return -ENOMEM;
    w->n_capabilities = i + 1;
  }
  return 0;
}

int mdp_registry_add(const mdp_worker_hello *h, uint64_t *id, int *proc_err)
{
  mdp_worker *w = calloc(1, sizeof(*w));
  char base[100];
  int rc;

  if(!w) {
    if(h->pidfd >= 0)
      close(h->pidfd);
    return -ENOMEM;
  }
  w->proc_fd = -1;
  w->pidfd = h->pidfd;
  w->who.pid = h->pid;
  w->ppid = h->ppid;
  w->who.uid = h->uid;
  w->who.gid = h->gid;
  /* The name is the peer's text and ends up in logs and notifications. */
  md_printable(w->who.name, sizeof(w->who.name), h->name && h->name[0] ? h->name : "worker",
               MD_TEXT_PLAIN);
  md_printable(w->certificate, sizeof(w->certificate), h->certificate, MD_TEXT_PLAIN);
  snprintf(w->runtime, sizeof(w->runtime), "%s", h->runtime ? h->runtime : "");
  snprintf(w->runtime_version, sizeof(w->runtime_version), "%s",
           h->runtime_version ? h->runtime_version : "");
  snprintf(w->dump_directory, sizeof(w->dump_directory), "%s",
           h->dump_directory ? h->dump_directory : "");
  w->who.ns_pid = h->ns_pid ? h->ns_pid : h->pid;
  snprintf(w->cgroup, sizeof(w->cgroup), "%s", h->cgroup ? h->cgroup : "");
  w->same_mnt_ns = h->same_mnt_ns;
  w->connected_at = (uint64_t)time(NULL);
  {
    struct timespec mono;
    clock_gettime(CLOCK_MONOTONIC, &mono);
    w->registered_us = (uint64_t)mono.tv_sec * 1000000u + (uint64_t)mono.tv_nsec / 1000u;
  }
  rc = copy_caps(w, h->capabilities, h->n_capabilities);
  if(rc)
    goto fail;
  /* Its cgroup as collectd sees it, from the host PID; the pidfd check
   * below tells that the PID was still this process's. */
  if(mdp_cgroup_acquire(h->pid, &w->cg, w->cgroup_err, sizeof w->cgroup_err) != 0)
    w->cg = NULL;
  if(w->cg) {
    w->cg_version = mdp_cgroup_version_of(w->cg);
    snprintf(w->cg_path, sizeof w->cg_path, "%s", mdp_cgroup_path(w->cg));
    /* named by its memory cgroup (v1: not the v2 line, "/" there); a
     * delegated cgroup's name is anyone's text: clean */
    md_printable(w->cgroup, sizeof w->cgroup, w->cg_path, MD_TEXT_UTF8);
  }
  /* Opened by PID: if the process behind the pidfd is still alive after the
   * open, the PID was still its own, so the file is that process's. */
  w->proc_fd = mdp_sampler_open(h->pid, memory_kinds);
  *proc_err = w->proc_fd < 0 ? w->proc_fd : 0;
  if(w->pidfd >= 0 && !mdp_pidfd_alive(w->pidfd)) {
    rc = -ESRCH;
    goto fail;
  }
  /* The first sample now, not at the next read interval: until then the
   * worker would be listed, and a capture started, with 0 bytes. The
   * detector is left to the read callback, which owns it. */
  if(w->proc_fd >= 0 && mdp_sampler_read(w->proc_fd, memory_kinds, &w->last) == 0) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    w->sampled_at = (double)now.tv_sec + (double)now.tv_nsec / 1e9;
  }
  mdp_registry_sanitise(w->who.name, base, sizeof(base));
  w->refs = 1;

  pthread_mutex_lock(&lock);
  if(count == cap) {
    size_t ncap = cap ? cap * 2 : 64;
    mdp_worker **nt = realloc(table, ncap * sizeof(*nt));
    if(!nt) {
      pthread_mutex_unlock(&lock);
      rc = -ENOMEM;
      goto fail;
    }
    table = nt;
    cap = ncap;
  }
  mdp_detector_init(&w->detector, &detector_cfg);
  /* Two live workers with one name would write one series; the second
   * (and later) ones are told apart by PID. */
  /* "cgroup-..." names the cgroups' series (workers/cgroup_parse.h) */
  if(!strncmp(base, "cgroup-", 7)) {
    size_t l = strlen(base);
    if(l + 8 > sizeof base)
      l = sizeof base - 8;
    memmove(base + 7, base, l);
    memcpy(base, "worker-", 7);
    base[l + 7] = '\0';
  }
  if(name_taken_locked(base))
    snprintf(w->instance, sizeof(w->instance), "%s-%ld", base, (long)w->who.pid);
  else
    snprintf(w->instance, sizeof(w->instance), "%s", base);
  w->who.connection_id = next_id++;
  table[count++] = w;
  *id = w->who.connection_id;
  pthread_mutex_unlock(&lock);
  return 0;
fail:
  worker_free(w);
  return rc;
}

static mdp_worker *find_locked(uint64_t id, size_t *pos)
{
  size_t lo = 0, hi = count;

  while(lo < hi) {
    size_t mid = (lo + hi) / 2;
    if(table[mid]->who.connection_id < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  if(lo < count && table[lo]->who.connection_id == id) {
    if(pos)
      *pos = lo;
    return table[lo];
  }
  return NULL;
}

int mdp_registry_signal(uint64_t id, int sig)
{
  int rc = -ENOENT;

  pthread_mutex_lock(&lock);
  mdp_worker *w = find_locked(id, NULL);
  if(w)
    rc = mdp_pidfd_signal(w->pidfd, sig);
  pthread_mutex_unlock(&lock);
  return rc;
}

int mdp_registry_exit(uint64_t id, mdp_exit_info *out, uint64_t *registered_us)
{
  int pidfd = -1;
  pid_t pid = 0;
  uid_t uid = 0;

  pthread_mutex_lock(&lock);
  mdp_worker *w = find_locked(id, NULL);
  if(w) {
    /* a copy: the worker may be removed once the lock is left */
    pidfd = w->pidfd >= 0 ? fcntl(w->pidfd, F_DUPFD_CLOEXEC, 0) : -1;
    pid = w->who.pid;
    uid = w->who.uid;
    *registered_us = w->registered_us;
  }
  pthread_mutex_unlock(&lock);
  if(!w)
    return -ENOENT;
  mdp_pidfd_exit(pidfd, pid, uid, out);
  if(pidfd >= 0)
    close(pidfd);
  return 0;
}

int mdp_registry_remove(uint64_t id)
{
  size_t pos;
  mdp_worker *w;

  pthread_mutex_lock(&lock);
  w = find_locked(id, &pos);
  if(w) {
    memmove(&table[pos], &table[pos + 1], (count - pos - 1) * sizeof(*table));
    count--;
    unref_locked(w);
  }
  pthread_mutex_unlock(&lock);
  return w ? 0 : -ENOENT;
}

size_t mdp_registry_snapshot(mdp_worker ***out)
{
  mdp_worker **arr;
  size_t n;

  pthread_mutex_lock(&lock);
  n = count;
  arr = malloc((n ? n : 1) * sizeof(*arr));
  if(!arr) {
    pthread_mutex_unlock(&lock);
    *out = NULL;
    return (size_t)-1;
  }
  for(size_t i = 0; i < n; i++) {
    arr[i] = table[i];
    arr[i]->refs++;
  }
  pthread_mutex_unlock(&lock);
  *out = arr;
  return n;
}

void mdp_registry_release(mdp_worker **workers, size_t n)
{
  pthread_mutex_lock(&lock);
  for(size_t i = 0; i < n; i++)
    unref_locked(workers[i]);
  pthread_mutex_unlock(&lock);
  free(workers);
}

void mdp_registry_store(mdp_worker *w, const mdp_sampler_reading *s, double t,
                        const char *detector_text)
{
  pthread_mutex_lock(&lock);
  w->last = *s;
  w->sampled_at = t;
  if(detector_text)
    snprintf(w->detector_text, sizeof(w->detector_text), "%s", detector_text);
  pthread_mutex_unlock(&lock);
}

void mdp_registry_detector_text(const mdp_worker *w, char *buf, size_t len)
{
  pthread_mutex_lock(&lock);
  snprintf(buf, len, "%s", w->detector_text[0] ? w->detector_text : "not sampled yet");
  pthread_mutex_unlock(&lock);
}

void mdp_registry_cgroup_text(const mdp_worker *w, char *buf, size_t len)
{
  pthread_mutex_lock(&lock);
  snprintf(buf, len, "%s", w->cgroup);
  pthread_mutex_unlock(&lock);
}

void mdp_registry_last(const mdp_worker *w, mdp_sampler_reading *s, double *t)
{
  pthread_mutex_lock(&lock);
  *s = w->last;
  *t = w->sampled_at;
  pthread_mutex_unlock(&lock);
}

int mdp_registry_info(uint64_t id, mdp_worker_info *out)
{
  mdp_worker *w;

  pthread_mutex_lock(&lock);
  w = find_locked(id, NULL);
  if(w) {
    memset(out, 0, sizeof(*out));
    out->who = w->who;
    out->ppid = w->ppid;
    snprintf(out->certificate, sizeof(out->certificate), "%s", w->certificate);
    snprintf(out->instance, sizeof(out->instance), "%s", w->instance);
    snprintf(out->runtime, sizeof(out->runtime), "%s", w->runtime);
    snprintf(out->runtime_version, sizeof(out->runtime_version), "%s", w->runtime_version);
    snprintf(out->dump_directory, sizeof(out->dump_directory), "%s", w->dump_directory);
    snprintf(out->cgroup, sizeof(out->cgroup), "%s", w->cgroup);
    out->same_mnt_ns = w->same_mnt_ns;
    if(w->cg) {
      mdp_cgroup_stats cs;
      out->cgroup_limited = mdp_cgroup_last(w->cg, &cs) && cs.limit != MDP_CGROUP_NO_LIMIT;
    }
    out->connected_at = w->connected_at;
    out->n_capabilities = w->n_capabilities;
    out->last = w->last;
    out->sampled_at = w->sampled_at;
  }
  pthread_mutex_unlock(&lock);
  return w ? 0 : -ENOENT;
}

int mdp_registry_who(uint64_t id, mdp_worker_id *out)
{
  mdp_worker *w;

  pthread_mutex_lock(&lock);
  w = find_locked(id, NULL);
  if(w)
    *out = w->who;
  pthread_mutex_unlock(&lock);
  return w ? 0 : -ENOENT;
}

int mdp_registry_can(uint64_t id, const char *op)
{
  mdp_worker *w;
  int can = 0;

  pthread_mutex_lock(&lock);
  w = find_locked(id, NULL);
  for(size_t i = 0; w && i < w->n_capabilities; i++)
    if(strcmp(w->capabilities[i], op) == 0)
      can = 1;
  pthread_mutex_unlock(&lock);
  return can;
}

void mdp_registry_limit(const mdp_worker *w, mdp_worker_limit *out)
{
  mdp_cgroup_stats s;
  uint64_t config;
  bool have = false;

  memset(out, 0, sizeof *out);
  pthread_mutex_lock(&lock);
  config = detector_cfg.memory_limit;
  /* under the lock: the read thread may move the worker to another
   * cgroup and free the old one */
  if(w->cg) {
    snprintf(out->cgroup_dir, sizeof out->cgroup_dir, "%s", mdp_cgroup_dir(w->cg));
    have = mdp_cgroup_last(w->cg, &s);
  }
  pthread_mutex_unlock(&lock);
  if(config) {
    out->limit = config;
    out->source = MDP_LIMIT_CONFIG;
  }
  if(!have)
    return;
  out->charge = s.charge;
  out->has_charge = true;
  if(s.limit != MDP_CGROUP_NO_LIMIT && (!config || s.limit < config)) {
    out->limit = s.limit;
    out->source = MDP_LIMIT_CGROUP;
  }
}

/* w has no cgroup: acquire the one it is in now once its gap has passed. */
static mdp_cgroup_move retry_cgroup(mdp_worker *w, mdp_cgroup_move_info *out)
{
  mdp_cgroup *ncg = NULL;
  int rc;

  if(w->cg_checks < w->cg_retry_at)
    return MDP_CGROUP_STAYED;
  memset(out, 0, sizeof *out);
  rc = mdp_cgroup_acquire(w->who.pid, &ncg, out->err, sizeof out->err);
  /* gone, or the PID no longer its own after the reads: its connection closes */
  if(rc == -ESRCH || (w->pidfd >= 0 && !mdp_pidfd_alive(w->pidfd))) {
    mdp_cgroup_release(rc ? NULL : ncg);
    return MDP_CGROUP_STAYED;
  }
  if(rc) {
    w->cg_retry_gap = !w->cg_retry_gap                              ? MDP_CGROUP_RETRY_FIRST
                      : w->cg_retry_gap >= MDP_CGROUP_RETRY_MAX / 2 ? MDP_CGROUP_RETRY_MAX
                                                                    : 2 * w->cg_retry_gap;
    w->cg_retry_at = w->cg_checks + w->cg_retry_gap;
    out->rc = rc;
    out->gap = w->cg_retry_gap;
    return MDP_CGROUP_STILL_NONE;
  }
  md_printable(out->from, sizeof out->from, w->cg_path, MD_TEXT_UTF8);
  w->cg_retry_gap = w->cg_retry_at = 0;
  w->cg_version = mdp_cgroup_version_of(ncg);
  snprintf(w->cg_path, sizeof w->cg_path, "%s", mdp_cgroup_path(ncg));
  md_printable(out->to, sizeof out->to, w->cg_path, MD_TEXT_UTF8);
  pthread_mutex_lock(&lock);
  w->cg = ncg;
  md_printable(w->cgroup, sizeof w->cgroup, w->cg_path, MD_TEXT_UTF8);
  pthread_mutex_unlock(&lock);
  return MDP_CGROUP_FOUND;
}

mdp_cgroup_move mdp_registry_follow_cgroup(mdp_worker *w, mdp_cgroup_move_info *out)
{
  char now[MDP_CGROUP_PATH_MAX];
  mdp_cgroup *ncg = NULL, *old;

  w->cg_checks++;
  if(!w->cg)
    return retry_cgroup(w, out);
  if(mdp_cgroup_path_of(w->who.pid, w->cg_version, now, sizeof now) != 0 ||
     !strcmp(now, w->cg_path))
    return MDP_CGROUP_STAYED; /* there still, or gone (its connection closes) */
  /* Exiting (killed by the OOM killer, say): on a cgroup v1 hierarchy the
   * kernel shows a task with PF_EXITING in the root cgroup (/proc/PID/cgroup
   * reads "/"), but its cgroup is still the one it dies in. The flag is set
   * before that read could show it, so a read of /proc/PID/stat made after
   * the cgroup's sees it. */
  if(mdp_pidfd_exiting(w->pidfd, w->who.pid) != 0)
    return MDP_CGROUP_STAYED;
  memset(out, 0, sizeof *out);
  if(mdp_cgroup_acquire(w->who.pid, &ncg, out->err, sizeof out->err) != 0)
    ncg = NULL;
  /* still unreaped after the reads: the PID was its own */
  if(w->pidfd >= 0 && !mdp_pidfd_alive(w->pidfd)) {
    mdp_cgroup_release(ncg);
    return MDP_CGROUP_STAYED;
  }
  /* for the log: a delegated cgroup's name is its maker's text */
  md_printable(out->from, sizeof out->from, w->cg_path, MD_TEXT_UTF8);
  snprintf(w->cg_path, sizeof w->cg_path, "%s", ncg ? mdp_cgroup_path(ncg) : now);
  md_printable(out->to, sizeof out->to, w->cg_path, MD_TEXT_UTF8);
  pthread_mutex_lock(&lock);
  old = w->cg;
  w->cg = ncg;
  md_printable(w->cgroup, sizeof w->cgroup, w->cg_path, MD_TEXT_UTF8);
  pthread_mutex_unlock(&lock);
  mdp_cgroup_release(old);
  return ncg ? MDP_CGROUP_MOVED : MDP_CGROUP_UNREADABLE;
}

mdp_cgroup *mdp_registry_cgroup(uint64_t id)
{
  mdp_cgroup *cg = NULL;

  pthread_mutex_lock(&lock);
  mdp_worker *w = find_locked(id, NULL);
  if(w && w->cg) {
    cg = w->cg;
    mdp_cgroup_ref(cg);
  }
  pthread_mutex_unlock(&lock);
  return cg;
}
