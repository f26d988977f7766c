/* Capture module: binds the plan state machine (plan.c) and the admission
 * policy (plan_sched.c) to the server (requests, timers), the file system
 * (capture_fs.c) and collectd (notifications, values, log). See capture.h. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#include "capture.h"
#include "capture_fs.h"
#include "capture_request.h"
#include "md/wire.h"
#include "plan.h"
#include "plan_sched.h"
#include "server/server.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One plan, queued or running, for one connection. Owned by the runs table. */
typedef struct run {
  uint64_t conn;
  uint64_t gen; /* tells this run's callbacks from a former run's */
  bool begun;
  bool manual;
  char name[128];
  pid_t pid;
  uid_t uid;
  gid_t gid;
  char dir[MDP_CAPTURE_PATH_MAX];
  int64_t signalled_ms;
  char signal_error[128];
  bool manifest_failed;
  mdp_plan_t plan;
} run_t;

/* Passed through the server to reply callbacks, which free it (a reply
 * callback runs exactly once, even at shutdown). */
typedef struct token {
  uint64_t conn, gen, timer_id;
} token_t;

/* Timers the server has not fired yet. A timer's arg is only a key into
 * this table, never memory: the server drops timers at shutdown without
 * running them, so nothing may be owned through them. */
typedef struct pending_timer {
  uintptr_t key;
  token_t t;
} pending_timer_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool ready;
static mdp_capture_config_t cfg;
static mdp_step_kind_t kinds[MDP_CAPTURE_PLAN_MAX];
static size_t n_kinds;
static mdp_sched_t sched;
static mdp_capture_counters_t counters;
static run_t **runs;
static size_t n_runs, cap_runs;
static uint64_t next_gen;
static pending_timer_t *timers;
static size_t n_timers, cap_timers;
static uintptr_t next_timer_key;

static int64_t now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static mdp_plan_params_t params(void)
{
  mdp_plan_params_t p = {
      .interval_ms = cfg.interval_ms,
      .space_factor = cfg.dump_space_factor,
      .keep_free = cfg.keep_free,
      .max_use = cfg.max_use,
      .trace_allocations = cfg.trace_allocations,
  };
  return p;
}

/* ---------------------------------------------------------------- config */

int mdp_capture_config_item(mdp_capture_config_t *c, const oconfig_item_t *ci)
{
  char value[MDP_CAPTURE_PATH_MAX], err[256];
  int rc;

  if(ci->values_num != 1) {
    /* Only claim the key if it is ours, so the caller can report unknown
     * keys in its own words. */
    mdp_capture_config_t probe;
    mdp_capture_config_init(&probe);
    if(mdp_capture_config_set(&probe, ci->key, "", NULL, 0) == -ENOENT)
      return -ENOENT;
    ERROR("memdiag plugin: %s: expected exactly one value", ci->key);
    return -EINVAL;
  }
  const oconfig_value_t *v = &ci->values[0];
  switch(v->type) {
  case OCONFIG_TYPE_STRING: snprintf(value, sizeof(value), "%s", v->value.string); break;
  case OCONFIG_TYPE_NUMBER: snprintf(value, sizeof(value), "%.17g", v->value.number); break;
  case OCONFIG_TYPE_BOOLEAN:
    snprintf(value, sizeof(value), "%s", v->value.boolean ? "true" : "false");
    break;
  default: snprintf(value, sizeof(value), "?");
  }
  rc = mdp_capture_config_set(c, ci->key, value, err, sizeof(err));
  if(rc == -EINVAL)
    ERROR("memdiag plugin: %s", err);
  return rc;
}

/* ---------------------------------------------------------------- runs */

static run_t *find_run(uint64_t conn)
{
  for(size_t i = 0; i < n_runs; i++)
    if(runs[i]->conn == conn)
      return runs[i];
  return NULL;
}

static run_t *add_run(uint64_t conn)
{
  if(n_runs == cap_runs) {
    size_t cap = cap_runs ? cap_runs * 2 : 8;
    run_t **n = realloc(runs, cap * sizeof(*n));
    if(!n)
      return NULL;
    runs = n;
    cap_runs = cap;
  }
  run_t *r = calloc(1, sizeof(*r));
  if(!r)
    return NULL;
  r->conn = conn;
  r->gen = ++next_gen;
  runs[n_runs++] = r;
  return r;
}

static void drop_run(run_t *r)
{
  for(size_t i = 0; i < n_runs; i++) {
    if(runs[i] == r) {
      runs[i] = runs[--n_runs];
      break;
    }
  }
  free(r);
}

static token_t *token(const run_t *r, uint64_t timer_id)
{
  token_t *t = malloc(sizeof(*t));
  if(t) {
    t->conn = r->conn;
    t->gen = r->gen;
    t->timer_id = timer_id;
  }
  return t;
}

/* ---------------------------------------------------------------- outputs */

static void notify(int severity, const run_t *r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void notify(int severity, const run_t *r, const char *fmt, ...)
{
  char msg[NOTIF_MAX_MSG_LEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if(mdp_server_notify(severity, r->conn, "%s", msg) != 0)
    WARNING("memdiag plugin: %s", msg);
}

static void write_manifest(run_t *r)
{
  mdp_manifest_info_t info = {
      .worker = r->name,
      .pid = r->pid,
      .connection_id = r->conn,
      .uid = r->uid,
      .gid = r->gid,
      .directory = r->dir,
      .plan_text = cfg.plan,
      .manual = r->manual,
      .restart_signal = cfg.restart_after_capture ? cfg.restart_signal : 0,
      .signalled_ms = r->signalled_ms,
      .signal_error = r->signal_error[0] ? r->signal_error : NULL,
  };
  int rc = mdp_capfs_write_manifest(r->dir, &info, &r->plan);
  if(rc && !r->manifest_failed) {
    r->manifest_failed = true;
    ERROR("memdiag plugin: cannot write %s/%s: %s", r->dir, MDP_CAPFS_MANIFEST, strerror(-rc));
  }
}

static void signal_worker(run_t *r, const char *why)
{
  mdp_worker_info info;
  const char *sig = sigabbrev_np(cfg.restart_signal);

  /* Only a worker still connected under this ID is signalled: its PID was
   * checked against SO_PEERCRED, so it is not a recycled PID. */
  if(mdp_server_worker(r->conn, &info) != 0 || info.pid != r->pid) {
    snprintf(r->signal_error, sizeof(r->signal_error), "worker gone before the signal");
    return;
  }
  if(kill(r->pid, cfg.restart_signal) != 0) {
    snprintf(r->signal_error, sizeof(r->signal_error), "kill: %s", strerror(errno));
    ERROR("memdiag plugin: cannot send SIG%s to worker %s (pid %d): %s", sig ? sig : "?", r->name,
          (int)r->pid, strerror(errno));
    return;
  }
  r->signalled_ms = now_ms();
  counters.restarts++;
  notify(NOTIF_WARNING, r, "worker %s (pid %d) reached MemoryLimit: sent SIG%s (%s)", r->name,
         (int)r->pid, sig ? sig : "?", why);
}

/* ---------------------------------------------------------------- requests */

static void on_reply(const Memdiag__V1__Reply *reply, void *arg);
static void on_timer(void *arg);
static void run_actions(run_t *r, const mdp_actions_t *acts);

static void send_step(run_t *r, size_t idx)
{
  mdp_capreq_t cr;
  mdp_actions_t acts = {.n = 0};
  const char *why = NULL;
  token_t *t = NULL;

  if(mdp_capreq_build(&cr, &r->plan.steps[idx], r->dir, &cfg) != 0)
    why = "the step sends no request";
  else if(!(t = token(r, 0)))
    why = "out of memory";
  else if(mdp_server_request(r->conn, &cr.req, cfg.step_timeout_ms, on_reply, t) != 0)
    why = "the server could not send the request";
  if(!why)
    return;
  free(t);
  mdp_reply_t rep = {.status = MDP_REPLY_ERROR, .error = why};
  mdp_plan_reply(&r->plan, now_ms(), &rep, &acts);
  run_actions(r, &acts);
}

/* CaptureDirectory with its symbolic links resolved, once it exists: the
 * hook refuses paths that pass through a link below its dump directory, and
 * pruning must name in-progress folders exactly as they were made. */
static char resolved_root[MDP_CAPTURE_PATH_MAX];

static const char *root_dir(void) { return resolved_root[0] ? resolved_root : cfg.directory; }

static int make_root(void)
{
  char buf[PATH_MAX];
  int rc = mdp_capfs_ensure_root(cfg.directory);
  if(!rc && !resolved_root[0] && realpath(cfg.directory, buf) &&
     strlen(buf) < sizeof(resolved_root))
    memcpy(resolved_root, buf, strlen(buf) + 1);
  return rc;
}

static void check_space(run_t *r, uint64_t need)
{
  mdp_actions_t acts = {.n = 0};
  uint64_t avail = 0, used = 0;
  int rc;

  if(cfg.max_use) {
    /* Make room under MaxUse before the dump, oldest captures first; the
     * captures still in progress stay. */
    const char *keep[64];
    size_t n_keep = 0;
    unsigned removed = 0;
    for(size_t i = 0; i < n_runs && n_keep < 64; i++)
      if(runs[i]->begun)
        keep[n_keep++] = runs[i]->dir;
    uint64_t limit = cfg.max_use > need ? cfg.max_use - need : 0;
    rc = mdp_capfs_prune(root_dir(), limit, keep, n_keep, &used, &removed);
    if(rc)
      WARNING("memdiag plugin: pruning %s: %s", cfg.directory, strerror(-rc));
    if(removed)
      NOTICE("memdiag plugin: MaxUse: removed the %u oldest capture(s) under %s", removed,
             cfg.directory);
  }
  rc = mdp_capfs_avail(r->dir, &avail);
  if(rc)
    WARNING("memdiag plugin: statvfs %s: %s", r->dir, strerror(-rc));
  mdp_plan_space(&r->plan, now_ms(), avail, used, &acts);
  run_actions(r, &acts);
}

static int set_timer(run_t *r, uint64_t ms, uint64_t timer_id)
{
  if(n_timers == cap_timers) {
    size_t cap = cap_timers ? cap_timers * 2 : 8;
    pending_timer_t *n = realloc(timers, cap * sizeof(*n));
    if(!n)
      return -ENOMEM;
    timers = n;
    cap_timers = cap;
  }
  pending_timer_t *p = &timers[n_timers];
  p->key = ++next_timer_key;
  p->t.conn = r->conn;
  p->t.gen = r->gen;
  p->t.timer_id = timer_id;
  if(!mdp_server_timer_add(ms, on_timer, (void *)p->key))
    return -ESHUTDOWN;
  n_timers++;
  return 0;
}

/* Take a fired timer out of the table; false when it is not there (the
 * module was shut down and started again meanwhile). */
static bool take_timer(uintptr_t key, token_t *out)
{
  for(size_t i = 0; i < n_timers; i++) {
    if(timers[i].key == key) {
      *out = timers[i].t;
      timers[i] = timers[--n_timers];
      return true;
    }
  }
  return false;
}

static void run_actions(run_t *r, const mdp_actions_t *acts)
{
  for(size_t i = 0; i < acts->n; i++) {
    const mdp_action_t *a = &acts->a[i];
    switch(a->kind) {
    case MDP_ACT_CHECK_SPACE: check_space(r, a->bytes); break;
    case MDP_ACT_SEND: send_step(r, a->step); break;
    case MDP_ACT_TIMER:
      if(set_timer(r, a->ms, a->timer_id) != 0) {
        mdp_actions_t more = {.n = 0};
        mdp_plan_abort(&r->plan, now_ms(), "timer could not be set", &more);
        run_actions(r, &more);
      }
      break;
    case MDP_ACT_MANIFEST: write_manifest(r); break;
    case MDP_ACT_NOTIFY:
      notify(a->severity, r, "capture of worker %s (pid %d): %s; folder %s", r->name, (int)r->pid,
             a->message, r->dir);
      break;
    case MDP_ACT_SIGNAL:
      signal_worker(r, "after its capture");
      write_manifest(r);
      break;
    case MDP_ACT_DONE:
      if(a->complete)
        counters.completed++;
      else
        counters.failed++;
      break;
    }
  }
}

/* ---------------------------------------------------------------- plan lifecycle */

static bool dump_taken(const mdp_plan_t *p)
{
  for(size_t i = 0; i < p->n_steps; i++)
    if(mdp_step_is_dump(p->steps[i].kind) && p->steps[i].status == MDP_SS_OK)
      return true;
  return false;
}

static void pump(void);

/* Start a run whose slot the scheduler granted. Returns 0, or a negative
 * errno after the run was counted, reported and dropped. */
static int begin_run(run_t *r, char *err, size_t errlen)
{
  mdp_actions_t acts = {.n = 0};
  int64_t now = now_ms();
  int rc = make_root();
  if(!rc)
    rc = mdp_capfs_make_folder(root_dir(), r->name, r->pid, now, r->uid, r->gid, r->dir,
                               sizeof(r->dir));
  if(rc) {
    snprintf(err, errlen, "cannot create a capture folder under %s: %s", cfg.directory,
             strerror(-rc));
    counters.failed++;
    notify(NOTIF_FAILURE, r, "capture of worker %s (pid %d) failed: %s", r->name, (int)r->pid, err);
    mdp_sched_finished(&sched, r->conn, false);
    drop_run(r);
    return -EIO;
  }
  r->begun = true;
  counters.started++;
  INFO("memdiag plugin: capturing worker %s (pid %d, connection %" PRIu64 ") into %s", r->name,
       (int)r->pid, r->conn, r->dir);
  mdp_plan_begin(&r->plan, now, &acts);
  run_actions(r, &acts);
  return 0;
}

/* After any event: a finished run leaves and frees its slot. */
static void settle(run_t *r)
{
  if(!r->plan.finished)
    return;
  mdp_sched_finished(&sched, r->conn, dump_taken(&r->plan));
  drop_run(r);
  pump();
}

static void pump(void)
{
  char why[256], err[256];
  uint64_t conn;
  int got;
  while((got = mdp_sched_next(&sched, now_ms(), &conn, why, sizeof(why))) != 0) {
    run_t *r = find_run(conn);
    if(!r) {
      mdp_sched_finished(&sched, conn, false);
      continue;
    }
    if(got == 2) {
      counters.skipped++;
      notify(NOTIF_FAILURE, r, "capture of worker %s (pid %d) skipped: %s", r->name, (int)r->pid,
             why);
      drop_run(r);
      continue;
    }
    if(begin_run(r, err, sizeof(err)) == 0)
      settle(r);
  }
}

/* ---------------------------------------------------------------- callbacks */

static run_t *claim(const token_t *t)
{
  run_t *r = find_run(t->conn);
  return r && r->gen == t->gen && r->begun ? r : NULL;
}

static void on_reply(const Memdiag__V1__Reply *reply, void *arg)
{
  token_t *t = arg;
  pthread_mutex_lock(&lock);
  run_t *r = ready ? claim(t) : NULL;
  if(r) {
    char error[300];
    mdp_actions_t acts = {.n = 0};
    mdp_reply_t rep = {
        .bytes = reply->has_bytes ? reply->bytes : 0,
        .duration_us = reply->has_duration_us ? reply->duration_us : 0,
        .pause_us = reply->has_pause_us ? reply->pause_us : 0,
        .mode = reply->mode,
        .note = reply->note,
    };
    if(reply->status == MEMDIAG__V1__STATUS__STATUS_OK) {
      rep.status = MDP_REPLY_OK;
    } else {
      rep.status = reply->status == MEMDIAG__V1__STATUS__STATUS_UNKNOWN_CONNECTION
                       ? MDP_REPLY_GONE
                       : MDP_REPLY_ERROR;
      snprintf(error, sizeof(error), "%s%s%s", md_status_name(reply->status),
               reply->error && reply->error[0] ? ": " : "", reply->error ? reply->error : "");
      /* The worker's text ends up in the log and notifications. */
      for(char *p = error; *p; p++)
        if((unsigned char)*p < 0x20 || *p == 0x7f)
          *p = '?';
      rep.error = error;
    }
    mdp_plan_reply(&r->plan, now_ms(), &rep, &acts);
    run_actions(r, &acts);
    settle(r);
  }
  pthread_mutex_unlock(&lock);
  free(t);
}

static void on_timer(void *arg)
{
  token_t t;
  pthread_mutex_lock(&lock);
  run_t *r = ready && take_timer((uintptr_t)arg, &t) ? claim(&t) : NULL;
  if(r) {
    mdp_actions_t acts = {.n = 0};
    mdp_plan_timer(&r->plan, now_ms(), t.timer_id, &acts);
    run_actions(r, &acts);
    settle(r);
  }
  pthread_mutex_unlock(&lock);
}

/* ---------------------------------------------------------------- API */

int mdp_capture_init(const mdp_capture_config_t *c)
{
  char err[256];
  int rc = 0;

  pthread_mutex_lock(&lock);
  cfg = *c;
  rc = mdp_plan_parse(cfg.plan, kinds, MDP_CAPTURE_PLAN_MAX, &n_kinds, err, sizeof(err));
  if(rc) {
    ERROR("memdiag plugin: %s", err);
    goto out;
  }
  /* CaptureDirectory is made at the first capture, not here: a plugin that
   * never captures leaves the file system alone. */
  resolved_root[0] = '\0';
  mdp_sched_init(&sched, cfg.concurrency, cfg.cooldown_ms, cfg.restart_after_capture);
  memset(&counters, 0, sizeof(counters));
  ready = true;
out:
  pthread_mutex_unlock(&lock);
  return rc;
}

void mdp_capture_shutdown(void)
{
  pthread_mutex_lock(&lock);
  if(!ready)
    goto out;
  while(n_runs) {
    run_t *r = runs[n_runs - 1];
    if(r->begun) {
      mdp_actions_t acts = {.n = 0};
      mdp_plan_abort(&r->plan, now_ms(), "plugin shutdown", &acts);
      run_actions(r, &acts);
    }
    drop_run(r);
  }
  free(runs);
  runs = NULL;
  cap_runs = 0;
  free(timers);
  timers = NULL;
  n_timers = cap_timers = 0;
  mdp_sched_free(&sched);
  ready = false;
out:
  pthread_mutex_unlock(&lock);
}

static void fill_identity(run_t *r, const mdp_capture_worker_t *w)
{
  mdp_worker_info info;
  /* The registry's copy is authoritative (SO_PEERCRED); the caller's is a
   * fallback for a worker the registry has just forgotten. */
  if(mdp_server_worker(w->connection_id, &info) == 0) {
    snprintf(r->name, sizeof(r->name), "%s", info.name);
    r->pid = info.pid;
    r->uid = info.uid;
    r->gid = info.gid;
  } else {
    snprintf(r->name, sizeof(r->name), "%s", w->name ? w->name : "");
    r->pid = w->pid;
    r->uid = w->uid;
    r->gid = w->gid;
  }
}

int mdp_capture_start(const mdp_capture_worker_t *w, const char *reason,
                      const mdp_capture_sample_t *samples, size_t n_samples, unsigned flags,
                      char *dir, size_t dirlen, char *err, size_t errlen)
{
  mdp_plan_sample_t ps[MDP_PLAN_SAMPLES_MAX];
  char why[256] = "";
  int rc;
  bool manual = flags & MDP_CAPTURE_MANUAL;

  pthread_mutex_lock(&lock);
  if(!ready) {
    snprintf(err, errlen, "the capture module is not running");
    rc = -ESHUTDOWN;
    goto out;
  }
  mdp_worker_info info;
  if(mdp_server_worker(w->connection_id, &info) != 0) {
    snprintf(err, errlen, "no worker with connection ID %" PRIu64, w->connection_id);
    rc = -ENOENT;
    goto out;
  }
  if(info.dump_directory[0] && !mdp_capfs_inside(cfg.directory, info.dump_directory)) {
    /* Every file step would be refused by the hook: say why once. */
    if(snprintf(why, sizeof(why),
                "CaptureDirectory %s is outside the worker's dump directory %s "
                "(MEMDIAG_DUMP_DIRECTORY): the worker may not write there",
                cfg.directory, info.dump_directory) >= (int)sizeof(why))
      snprintf(why, sizeof(why), "CaptureDirectory is outside the worker's dump directory");
    rc = -EPERM;
  } else {
    rc = mdp_sched_admit(&sched, w->connection_id, info.name, now_ms(), manual, why, sizeof(why));
  }
  if(rc < 0) {
    snprintf(err, errlen, "%s", why);
    counters.skipped++;
    run_t tmp = {.conn = w->connection_id};
    fill_identity(&tmp, w);
    notify(NOTIF_FAILURE, &tmp, "capture of worker %s (pid %d) skipped (%s): %s", tmp.name,
           (int)tmp.pid, reason ? reason : "", why);
    goto out;
  }
  run_t *r = add_run(w->connection_id);
  if(!r) {
    /* Give the slot back: nothing will run. */
    mdp_sched_finished(&sched, w->connection_id, false);
    mdp_sched_gone(&sched, w->connection_id);
    snprintf(err, errlen, "out of memory");
    rc = -ENOMEM;
    goto out;
  }
  fill_identity(r, w);
  r->manual = manual;
  size_t first = n_samples > MDP_PLAN_SAMPLES_MAX ? n_samples - MDP_PLAN_SAMPLES_MAX : 0;
  for(size_t i = first; i < n_samples; i++) {
    ps[i - first].time = samples[i].time;
    ps[i - first].value = samples[i].value;
  }
  mdp_plan_params_t p = params();
  uint64_t rss = w->rss ? w->rss : info.rss;
  mdp_plan_init(&r->plan, &p, kinds, n_kinds, reason, ps, n_samples - first, rss);
  if(rc == MDP_ADMIT_QUEUE) {
    NOTICE("memdiag plugin: capture of worker %s (pid %d) queued: %s", r->name, (int)r->pid, why);
    if(dir && dirlen)
      dir[0] = '\0';
    goto out;
  }
  rc = begin_run(r, err, errlen);
  if(rc)
    goto out;
  if(dir && dirlen)
    snprintf(dir, dirlen, "%s", r->dir);
  settle(r);
out:
  pthread_mutex_unlock(&lock);
  return rc;
}

void mdp_capture_observe(const mdp_capture_worker_t *w, bool limit_reached)
{
  char why[256] = "", err[256];

  pthread_mutex_lock(&lock);
  if(!ready)
    goto out;
  run_t *r = find_run(w->connection_id);
  if(r)
    mdp_plan_set_rss(&r->plan, w->rss);
  if(!limit_reached || !cfg.restart_after_capture)
    goto out;
  switch(mdp_sched_limit(&sched, w->connection_id, w->name ? w->name : "", now_ms(), why,
                         sizeof(why))) {
  case MDP_LIMIT_IGNORE: break;
  case MDP_LIMIT_PLAN: {
    mdp_actions_t acts = {.n = 0};
    if(!r || !r->begun)
      break;
    NOTICE("memdiag plugin: worker %s (pid %d) reached MemoryLimit during its "
           "capture: finishing the dump, then SIG%s",
           r->name, (int)r->pid, sigabbrev_np(cfg.restart_signal));
    mdp_plan_limit(&r->plan, now_ms(), &acts);
    run_actions(r, &acts);
    settle(r);
    break;
  }
  case MDP_LIMIT_DUMP: {
    if(!r) {
      r = add_run(w->connection_id);
      if(!r) {
        mdp_sched_finished(&sched, w->connection_id, false);
        break;
      }
      fill_identity(r, w);
    }
    mdp_plan_params_t p = params();
    run_t who = *r; /* begin_run frees r when it fails */
    mdp_plan_init_limit(&r->plan, &p, w->rss);
    if(begin_run(r, err, sizeof(err)) == 0) {
      settle(r);
    } else {
      /* No evidence can be taken; the restart that was asked for still
       * happens, or the worker would grow on. */
      signal_worker(&who, err);
    }
    break;
  }
  case MDP_LIMIT_SIGNAL: {
    run_t tmp = {.conn = w->connection_id};
    fill_identity(&tmp, w);
    if(r && !r->begun)
      drop_run(r); /* its queued trigger is moot: the worker restarts */
    signal_worker(&tmp, why);
    break;
  }
  }
out:
  pthread_mutex_unlock(&lock);
}

void mdp_capture_worker_gone(uint64_t connection_id)
{
  pthread_mutex_lock(&lock);
  if(!ready)
    goto out;
  run_t *r = find_run(connection_id);
  if(r && r->begun) {
    mdp_actions_t acts = {.n = 0};
    mdp_plan_worker_gone(&r->plan, now_ms(), &acts);
    run_actions(r, &acts);
    mdp_sched_finished(&sched, r->conn, dump_taken(&r->plan));
    drop_run(r);
  } else if(r) {
    INFO("memdiag plugin: worker %s (pid %d) left before its queued capture began", r->name,
         (int)r->pid);
    drop_run(r);
  }
  mdp_sched_gone(&sched, connection_id);
  pump();
out:
  pthread_mutex_unlock(&lock);
}

/* ---------------------------------------------------------------- status */

static void describe_step(const run_t *r, char *buf, size_t len)
{
  if(!r->begun) {
    snprintf(buf, len, "queued");
    return;
  }
  const mdp_plan_t *p = &r->plan;
  size_t cur = p->cur < p->n_steps ? p->cur : p->n_steps - 1;
  snprintf(buf, len, "%s (%zu/%zu)", mdp_step_name(p->steps[cur].kind), cur + 1, p->n_steps);
}

size_t mdp_capture_list(mdp_capture_info_t *out, size_t max)
{
  size_t n;
  pthread_mutex_lock(&lock);
  n = n_runs;
  for(size_t i = 0; i < n_runs && i < max; i++) {
    const run_t *r = runs[i];
    mdp_capture_info_t *o = &out[i];
    memset(o, 0, sizeof(*o));
    o->connection_id = r->conn;
    snprintf(o->worker, sizeof(o->worker), "%s", r->name);
    snprintf(o->reason, sizeof(o->reason), "%s", r->plan.reason);
    snprintf(o->directory, sizeof(o->directory), "%s", r->dir);
    describe_step(r, o->step, sizeof(o->step));
    o->started_at = r->begun ? (uint64_t)(r->plan.started_ms / 1000) : 0;
  }
  pthread_mutex_unlock(&lock);
  return n;
}

void mdp_capture_get_counters(mdp_capture_counters_t *out)
{
  pthread_mutex_lock(&lock);
  *out = counters;
  pthread_mutex_unlock(&lock);
}

/* A worker that restarted has a new connection but its name's cooldown. */
static bool cooled(const mdp_sched_conn_t *c, uint64_t connection_id)
{
  mdp_worker_info info;
  const char *name = c ? c->name : NULL;
  if(!name && mdp_server_worker(connection_id, &info) == 0)
    name = info.name;
  return name && mdp_sched_cooldown_left(&sched, name, now_ms()) > 0;
}

void mdp_capture_plan_state(uint64_t connection_id, char *buf, size_t len)
{
  pthread_mutex_lock(&lock);
  const run_t *r = ready ? find_run(connection_id) : NULL;
  const mdp_sched_conn_t *c = ready ? mdp_sched_find(&sched, connection_id) : NULL;
  if(r) {
    char step[64];
    describe_step(r, step, sizeof(step));
    snprintf(buf, len, r->begun ? "running: %s" : "%s", step);
  } else if(c && c->limit_seen && cfg.restart_after_capture) {
    snprintf(buf, len, "limit reached");
  } else if(ready && cooled(c, connection_id)) {
    snprintf(buf, len, "cooldown");
  } else {
    snprintf(buf, len, "idle");
  }
  pthread_mutex_unlock(&lock);
}

int mdp_capture_read(void)
{
  static const char *names[] = {"captures_started", "captures_completed", "captures_failed",
                                "captures_skipped", "restarts"};
  mdp_capture_counters_t c;
  mdp_capture_get_counters(&c);
  uint64_t v[] = {c.started, c.completed, c.failed, c.skipped, c.restarts};
  int rc = 0;

  for(size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
    value_t value = {.counter = (counter_t)v[i]};
    value_list_t vl = VALUE_LIST_INIT;
    vl.values = &value;
    vl.values_len = 1;
    snprintf(vl.plugin, sizeof(vl.plugin), "memdiag");
    snprintf(vl.type, sizeof(vl.type), "counter");
    snprintf(vl.type_instance, sizeof(vl.type_instance), "%s", names[i]);
    int r = plugin_dispatch_values(&vl);
    if(r && !rc)
      rc = r;
  }
  return rc;
}
