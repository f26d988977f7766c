/* Capture module: the runs, and how a run's plan acts: requests through the
 * relay, timers on the loop, folders and manifest, notifications, the
 * restart signal. See run.h. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze.h"
#include "capture_fs.h"
#include "capture_request.h"
#include "fs_queue.h"
#include "md/text.h"
#include "md/wire.h"
#include "notify.h"
#include "run.h"
#include "server/relay.h"
#include "workers/registry.h"

mdp_capture_state mdp_capst = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Handed to the relay with a request and to the loop with a timer; the
 * callback (or, for a timer that never runs, the loop's finalizer) frees it. */
typedef struct token {
  uint64_t conn, gen, timer_id;
} token_t;

int64_t mdp_caprun_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

mdp_plan_params_t mdp_caprun_params(void)
{
  const mdp_capture_config_t *cfg = &mdp_capst.cfg;
  mdp_plan_params_t p = {
      .interval_ms = cfg->interval_ms,
      .space_factor = cfg->dump_space_factor,
      .keep_free = cfg->keep_free,
      .max_use = cfg->max_use,
      .trace_allocations = cfg->trace_allocations,
  };
  return p;
}

/* ---------------------------------------------------------------- runs */

mdp_caprun *mdp_caprun_find(uint64_t conn)
{
  for(size_t i = 0; i < mdp_capst.n_runs; i++)
    if(mdp_capst.runs[i]->conn == conn)
      return mdp_capst.runs[i];
  return NULL;
}

mdp_caprun *mdp_caprun_add(uint64_t conn)
{
  mdp_capture_state *st = &mdp_capst;
  if(st->n_runs == st->cap_runs) {
    size_t cap = st->cap_runs ? st->cap_runs * 2 : 8;
    mdp_caprun **n = realloc(st->runs, cap * sizeof(*n));
    if(!n)
      return NULL;
    st->runs = n;
    st->cap_runs = cap;
  }
  mdp_caprun *r = calloc(1, sizeof(*r));
  if(!r)
    return NULL;
  r->conn = conn;
  r->gen = ++st->next_gen;
  st->runs[st->n_runs++] = r;
  return r;
}

void mdp_caprun_drop(mdp_caprun *r)
{
  mdp_capture_state *st = &mdp_capst;
  for(size_t i = 0; i < st->n_runs; i++) {
    if(st->runs[i] == r) {
      st->runs[i] = st->runs[--st->n_runs];
      break;
    }
  }
  free(r);
}

void mdp_caprun_identity(mdp_caprun *r, const mdp_capture_worker_t *w)
{
  mdp_worker_info info;
  if(mdp_registry_info(w->connection_id, &info) == 0) {
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

static token_t *token(const mdp_caprun *r, uint64_t timer_id)
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

void mdp_caprun_notify(int severity, const mdp_caprun *r, const char *fmt, ...)
{
  char msg[NOTIF_MAX_MSG_LEN];
  mdp_worker_info info;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  /* The worker's instance, while it is connected, tells whom it is about. */
  if(mdp_notify(severity, mdp_registry_info(r->conn, &info) == 0 ? info.instance : "", "%s", msg) !=
     0)
    WARNING("memdiag plugin: %s", msg);
}

/* The capture is over: CaptureCommand (command.h) gets its folder and runs
 * on its own thread. Only a job it cannot take is reported here. */
static void submit_command(const mdp_caprun *r, bool complete)
{
  mdp_worker_info info;
  mdp_command_job_t j = {.folder = r->dir,
                         .worker = r->name,
                         .instance = mdp_registry_info(r->conn, &info) == 0 ? info.instance : "",
                         .pid = r->pid,
                         .reason = r->plan.reason,
                         .complete = complete};
  int rc = mdp_command_submit(&j);
  if(rc == -ENOSPC || rc == -ENOMEM)
    mdp_caprun_notify(NOTIF_FAILURE, r,
                      "CaptureCommand not run for the capture of worker %s (pid %d): %s; folder %s",
                      r->name, (int)r->pid,
                      rc == -ENOSPC ? "too many commands already wait" : "out of memory", r->dir);
}

/* A manifest write for the fs thread (fs_queue.h): everything it names is
 * copied, since the run may be gone before it is written. */
typedef struct {
  mdp_fsq_job job;
  mdp_manifest_info_t info;
  mdp_plan_t plan;
  char worker[128], dir[MDP_CAPTURE_PATH_MAX], plan_text[512];
  char signal_error[128], restart_wait[240];
} manifest_job;

static void manifest_work(mdp_fsq_job *j)
{
  manifest_job *m = (manifest_job *)j;
  int rc = mdp_capfs_write_manifest(m->dir, &m->info, &m->plan);
  if(rc)
    ERROR("memdiag plugin: cannot write %s/%s: %s", m->dir, MDP_CAPFS_MANIFEST, strerror(-rc));
}

static void write_manifest(mdp_caprun *r)
{
  const mdp_capture_config_t *cfg = &mdp_capst.cfg;
  manifest_job *m = calloc(1, sizeof(*m));
  int rc;

  if(!m) {
    ERROR("memdiag plugin: cannot write %s/%s: out of memory", r->dir, MDP_CAPFS_MANIFEST);
    return;
  }
  snprintf(m->worker, sizeof(m->worker), "%s", r->name);
  snprintf(m->dir, sizeof(m->dir), "%s", r->dir);
  snprintf(m->plan_text, sizeof(m->plan_text), "%s", cfg->plan);
  snprintf(m->signal_error, sizeof(m->signal_error), "%s", r->signal_error);
  snprintf(m->restart_wait, sizeof(m->restart_wait), "%s", r->restart_wait);
  m->plan = r->plan;
  m->info = (mdp_manifest_info_t){
      .worker = m->worker,
      .pid = r->pid,
      .connection_id = r->conn,
      .uid = r->uid,
      .gid = r->gid,
      .directory = m->dir,
      .plan_text = m->plan_text,
      .manual = r->manual,
      .restart_signal = cfg->restart_after_capture ? cfg->restart_signal : 0,
      .signalled_ms = r->signalled_ms,
      .signal_error = m->signal_error[0] ? m->signal_error : NULL,
      .restart_wait = m->restart_wait[0] ? m->restart_wait : NULL,
  };
  m->job.work = manifest_work;
  /* Written in order by the fs thread; if it is not running (or a hung disk
   * has filled its queue), here, as before. */
  if(mdp_fsq_submit(&m->job) == 0)
    return;
  rc = mdp_capfs_write_manifest(m->dir, &m->info, &m->plan);
  if(rc && !r->manifest_failed) {
    r->manifest_failed = true;
    ERROR("memdiag plugin: cannot write %s/%s: %s", r->dir, MDP_CAPFS_MANIFEST, strerror(-rc));
  }
  free(m);
}

void mdp_caprun_signal(mdp_caprun *r, const char *why)
{
  mdp_worker_info info;
  int sig = mdp_capst.cfg.restart_signal;
  const char *abbrev = sigabbrev_np(sig);
  const char *name = abbrev ? abbrev : "?";

  /* Only the process registered under this connection ID, through the
   * pidfd taken when it connected: never whoever holds its PID now. */
  if(mdp_registry_info(r->conn, &info) != 0 || info.pid != r->pid) {
    snprintf(r->signal_error, sizeof(r->signal_error), "worker gone before the signal");
    return;
  }
  int rc = mdp_registry_signal(r->conn, sig);
  if(rc) {
    const char *reason =
        rc == -ESRCH    ? "the process that registered has exited (a process it handed its "
                          "connection to, or a new owner of its PID, is not signalled)"
        : rc == -EBADF  ? "no pidfd for it (the kernel has none), and a PID alone may name "
                          "another process"
        : rc == -ENOENT ? "worker gone before the signal"
                        : strerror(-rc);
    snprintf(r->signal_error, sizeof(r->signal_error), "not signalled: %s", reason);
    WARNING("memdiag plugin: not sending SIG%s to worker %s (pid %d): %s", name, r->name,
            (int)r->pid, reason);
    return;
  }
  r->signalled_ms = mdp_caprun_now_ms();
  mdp_capst.counters.restarts++;
  mdp_caprun_notify(NOTIF_WARNING, r, "worker %s (pid %d) reached MemoryLimit: sent SIG%s (%s)",
                    r->name, (int)r->pid, name, why);
}

/* ---------------------------------------------------------------- callbacks */

static mdp_caprun *claim(const token_t *t)
{
  mdp_caprun *r = mdp_caprun_find(t->conn);
  return r && r->gen == t->gen && r->begun ? r : NULL;
}

static void on_reply(const Memdiag__V1__Reply *reply, void *arg)
{
  token_t *t = arg;
  pthread_mutex_lock(&mdp_capst.lock);
  mdp_caprun *r = mdp_capst.ready ? claim(t) : NULL;
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
      md_printable_inplace(error, MD_TEXT_PLAIN);
      rep.error = error;
    }
    /* A stored result may carry a suffix (heap-1.json.zst): the manifest
     * names the file that exists. */
    if(reply->path && r->plan.cur < r->plan.n_steps) {
      mdp_step_t *s = &r->plan.steps[r->plan.cur];
      const char *base = strrchr(reply->path, '/');
      base = base ? base + 1 : reply->path;
      if(s->file[0] && !strncmp(base, s->file, strlen(s->file)) && strlen(base) < sizeof(s->file))
        snprintf(s->file, sizeof(s->file), "%s", base);
    }
    mdp_caprun_dump_ended(r, reply->status == MEMDIAG__V1__STATUS__STATUS_TIMEOUT
                                 ? "ended with a timeout"
                                 : "was answered");
    mdp_plan_reply(&r->plan, mdp_caprun_now_ms(), &rep, &acts);
    mdp_caprun_actions(r, &acts);
    mdp_caprun_settle(r);
  }
  pthread_mutex_unlock(&mdp_capst.lock);
  free(t);
}

static void on_timer(void *arg)
{
  token_t *t = arg;
  pthread_mutex_lock(&mdp_capst.lock);
  mdp_caprun *r = mdp_capst.ready ? claim(t) : NULL;
  if(r) {
    mdp_actions_t acts = {.n = 0};
    mdp_plan_timer(&r->plan, mdp_caprun_now_ms(), t->timer_id, &acts);
    mdp_caprun_actions(r, &acts);
    mdp_caprun_settle(r);
  }
  pthread_mutex_unlock(&mdp_capst.lock);
  free(t);
}

/* ---------------------------------------------------------------- actions */

/* Send a step whose result the plugin stores (DumpTransfer): dumps come
 * as a stream, text inline; both are written by the stream store into the
 * capture folder, heap dumps zstd-compressed unless DumpCompression none. */
/* With DumpTransfer file the worker writes its heap dumps itself; the
 * plugin compresses them afterwards, on the same writer thread. */
static bool plugin_stores(const mdp_caprun *r, const mdp_step_t *s)
{
  if(!s->file[0])
    return false;
  return r->streams || (mdp_step_is_dump(s->kind) && mdp_capst.cfg.dump_compression);
}

/* RestartAfterCapture: a dump past its timeout may still be being written
 * (an inline dump cannot be stopped), and a restart signal then would tear
 * it. The relay waits RestartDeadline longer than the worker is told, for
 * its answer or its exit; returns that extra time (0 for other steps). */
static uint32_t restart_wait(mdp_caprun *r, const mdp_capreq_t *cr, const mdp_step_t *s)
{
  const mdp_capture_config_t *cfg = &mdp_capst.cfg;

  r->dump_sent_ms = 0;
  if(!cfg->restart_after_capture || !mdp_step_is_dump(s->kind))
    return 0;
  r->dump_sent_ms = mdp_caprun_now_ms();
  r->dump_told_ms =
      cfg->step_timeout_ms ? cfg->step_timeout_ms : mdp_relay_default_timeout_ms(&cr->req);
  return cfg->restart_deadline_ms > UINT32_MAX / 2 ? UINT32_MAX / 2
                                                   : (uint32_t)cfg->restart_deadline_ms;
}

/* The dump sent under RestartAfterCapture ended (answer, made-up timeout
 * or the worker's exit: `how`); past its timeout, say what the restart
 * waited for. */
void mdp_caprun_dump_ended(mdp_caprun *r, const char *how)
{
  int64_t took;

  if(!r->dump_sent_ms)
    return;
  took = mdp_caprun_now_ms() - r->dump_sent_ms;
  r->dump_sent_ms = 0;
  if(took <= (int64_t)r->dump_told_ms)
    return;
  snprintf(r->restart_wait, sizeof(r->restart_wait),
           "the dump %s %.1f s after it was sent, past its timeout (%.0f s); RestartDeadline "
           "%.0f s",
           how, (double)took / 1000, (double)r->dump_told_ms / 1000,
           (double)mdp_capst.cfg.restart_deadline_ms / 1000);
}

static int send_stored(mdp_caprun *r, mdp_capreq_t *cr, const mdp_step_t *s, token_t *t,
                       uint32_t extra)
{
  const mdp_capture_config_t *cfg = &mdp_capst.cfg;
  int heap = r->streams ? mdp_capreq_for_stream(cr) : 1;
  int level = heap && cfg->dump_compression ? cfg->dump_compression_level : 0;
  char name[80];
  mdp_relay_sink sink = {.dir_path = r->dir, .name = name, .zstd_level = level};
  int rc;

  snprintf(name, sizeof(name), "%s%s", s->file, level ? ".zst" : "");
  if(!r->streams) {
    sink.compress_from = s->file;
    sink.compress_owner = r->uid;
  }
  /* The folder's own descriptor (capture_fs), not its path again. */
  sink.dir_fd = mdp_capfs_folder_fd(r->dir);
  if(sink.dir_fd < 0)
    return sink.dir_fd;
  rc = mdp_relay_request_past(r->conn, &cr->req, cfg->step_timeout_ms, extra, &sink, on_reply, t);
  close(sink.dir_fd);
  return rc;
}

static void send_step(mdp_caprun *r, size_t idx)
{
  mdp_capreq_t cr;
  mdp_actions_t acts = {.n = 0};
  const char *why = NULL;
  token_t *t = NULL;
  const mdp_step_t *s = &r->plan.steps[idx];
  uint32_t extra = 0;

  if(mdp_capreq_build(&cr, s, r->dir, &mdp_capst.cfg) != 0)
    why = "the step sends no request";
  else if(!(t = token(r, 0)))
    why = "out of memory";
  else {
    extra = restart_wait(r, &cr, s);
    if(plugin_stores(r, s)) {
      if(send_stored(r, &cr, s, t, extra) != 0)
        why = "the plugin could not open the capture folder to store the result";
    } else if(mdp_relay_request_past(r->conn, &cr.req, mdp_capst.cfg.step_timeout_ms, extra, NULL,
                                     on_reply, t) != 0) {
      why = "the server could not send the request";
    }
  }
  if(!why)
    return;
  r->dump_sent_ms = 0;
  free(t);
  mdp_reply_t rep = {.status = MDP_REPLY_ERROR, .error = why};
  mdp_plan_reply(&r->plan, mdp_caprun_now_ms(), &rep, &acts);
  mdp_caprun_actions(r, &acts);
}

/* capture_fs keeps CaptureDirectory open once it has checked it; every
 * later call names it only to say which one. */
static const char *root_dir(void) { return mdp_capst.cfg.directory; }

/* The space check before a dump, on the fs thread: MaxUse's prune scan and
 * statvfs; the answer goes to the plan back on the loop thread. */
typedef struct {
  mdp_fsq_job job;
  token_t t;
  uint64_t need, max_use, avail, used;
  char root[MDP_CAPTURE_PATH_MAX], dir[MDP_CAPTURE_PATH_MAX];
} space_job;

static void space_work(mdp_fsq_job *j)
{
  space_job *sj = (space_job *)j;
  int rc;

  if(sj->max_use) {
    /* Make room under MaxUse before the dump, oldest captures first;
     * capture_fs never removes a capture still in progress. */
    unsigned removed = 0;
    uint64_t limit = sj->max_use > sj->need ? sj->max_use - sj->need : 0;
    rc = mdp_capfs_prune(sj->root, limit, NULL, 0, &sj->used, &removed);
    if(rc)
      WARNING("memdiag plugin: pruning %s: %s", sj->root, strerror(-rc));
    if(removed)
      NOTICE("memdiag plugin: MaxUse: removed the %u oldest capture(s) under %s", removed,
             sj->root);
  }
  rc = mdp_capfs_avail(sj->dir, &sj->avail);
  if(rc)
    WARNING("memdiag plugin: statvfs %s: %s", sj->dir, strerror(-rc));
}

static void space_done(mdp_fsq_job *j)
{
  space_job *sj = (space_job *)j;

  pthread_mutex_lock(&mdp_capst.lock);
  mdp_caprun *r = mdp_capst.ready ? claim(&sj->t) : NULL;
  if(r) {
    mdp_actions_t acts = {.n = 0};
    mdp_plan_space(&r->plan, mdp_caprun_now_ms(), sj->avail, sj->used, &acts);
    mdp_caprun_actions(r, &acts);
    mdp_caprun_settle(r);
  }
  pthread_mutex_unlock(&mdp_capst.lock);
  free(sj);
}

static void check_space(mdp_caprun *r, uint64_t need)
{
  const mdp_capture_config_t *cfg = &mdp_capst.cfg;
  space_job *sj = calloc(1, sizeof(*sj));
  mdp_actions_t acts = {.n = 0};

  if(sj) {
    sj->t = (token_t){.conn = r->conn, .gen = r->gen};
    sj->need = need;
    sj->max_use = cfg->max_use;
    snprintf(sj->root, sizeof(sj->root), "%s", root_dir());
    snprintf(sj->dir, sizeof(sj->dir), "%s", r->dir);
    sj->job.work = space_work;
    sj->job.done = space_done;
    if(mdp_fsq_submit(&sj->job) == 0)
      return;
    /* the fs thread is not running, or its queue is full: here, as before */
    space_work(&sj->job);
    mdp_plan_space(&r->plan, mdp_caprun_now_ms(), sj->avail, sj->used, &acts);
    free(sj);
  } else {
    mdp_plan_space(&r->plan, mdp_caprun_now_ms(), 0, 0, &acts);
  }
  mdp_caprun_actions(r, &acts);
}

static int set_timer(mdp_caprun *r, uint64_t ms, uint64_t timer_id)
{
  token_t *t = token(r, timer_id);

  if(!t)
    return -1;
  if(!mdp_loop_timer_add(mdp_capst.loop, ms, on_timer, free, t)) {
    free(t); /* the loop is closed or out of memory: the caller aborts */
    return -1;
  }
  return 0;
}

void mdp_caprun_actions(mdp_caprun *r, const mdp_actions_t *acts)
{
  for(size_t i = 0; i < acts->n; i++) {
    const mdp_action_t *a = &acts->a[i];
    switch(a->kind) {
    case MDP_ACT_CHECK_SPACE: check_space(r, a->bytes); break;
    case MDP_ACT_SEND: send_step(r, a->step); break;
    case MDP_ACT_TIMER:
      if(set_timer(r, a->ms, a->timer_id) != 0) {
        mdp_actions_t more = {.n = 0};
        mdp_plan_abort(&r->plan, mdp_caprun_now_ms(), "timer could not be set", &more);
        mdp_caprun_actions(r, &more);
      }
      break;
    case MDP_ACT_MANIFEST: write_manifest(r); break;
    case MDP_ACT_NOTIFY:
      /* A completed capture is analysed first; the analysis sends the OKAY
       * notification, naming the suspect. */
      if(a->severity == MDP_NOTIFY_OKAY && mdp_capana_submit(r, &mdp_capst.cfg)) {
        r->analysing = true;
        break;
      }
      mdp_caprun_notify(a->severity, r, "capture of worker %s (pid %d): %s; folder %s", r->name,
                        (int)r->pid, a->message, r->dir);
      break;
    case MDP_ACT_SIGNAL:
      mdp_caprun_signal(r, "after its capture");
      write_manifest(r);
      break;
    case MDP_ACT_DONE:
      if(a->complete)
        mdp_capst.counters.completed++;
      else
        mdp_capst.counters.failed++;
      if(!r->analysing) /* else the analysis starts it, once analysis.json is there */
        submit_command(r, a->complete);
      break;
    }
  }
}

/* ---------------------------------------------------------------- lifecycle */

bool mdp_caprun_dump_taken(const mdp_plan_t *p)
{
  for(size_t i = 0; i < p->n_steps; i++)
    if(mdp_step_is_dump(p->steps[i].kind) && p->steps[i].status == MDP_SS_OK)
      return true;
  return false;
}

int mdp_caprun_begin(mdp_caprun *r, char *err, size_t errlen)
{
  mdp_actions_t acts = {.n = 0};
  int64_t now = mdp_caprun_now_ms();
  char why[512];
  mdp_worker_info info;
  int rc;

  /* Decided once per capture, from what the kernel says of the worker
   * (its mount namespace) and where it may write. */
  if(mdp_registry_info(r->conn, &info) == 0)
    r->streams = mdp_capreq_streams(mdp_capst.cfg.dump_transfer, info.same_mnt_ns,
                                    info.dump_directory, root_dir());
  else
    r->streams = mdp_capst.cfg.dump_transfer != MDP_TRANSFER_FILE;
  /* A folder the plugin alone writes stays root's; one the worker writes
   * into is handed to the worker's user. */
  rc = mdp_capfs_open_root(root_dir(), why, sizeof(why));
  if(!rc &&
     (rc = mdp_capfs_make_folder(root_dir(), r->name, r->pid, now, r->streams ? geteuid() : r->uid,
                                 r->streams ? getegid() : r->gid, r->dir, sizeof(r->dir))) != 0)
    md_seterr(why, sizeof(why), "cannot create a capture folder under %s: %s",
              mdp_capst.cfg.directory, strerror(-rc));
  if(rc) {
    md_seterr(err, errlen, "%s", why);
    mdp_capst.counters.failed++;
    mdp_caprun_notify(NOTIF_FAILURE, r, "capture of worker %s (pid %d) failed: %s", r->name,
                      (int)r->pid, err);
    mdp_sched_finished(&mdp_capst.sched, r->conn, false);
    mdp_caprun_drop(r);
    return -1;
  }
  r->begun = true;
  mdp_capst.counters.started++;
  INFO("memdiag plugin: capturing worker %s (pid %d, connection %" PRIu64 ") into %s%s", r->name,
       (int)r->pid, r->conn, r->dir, r->streams ? " (streamed through the plugin)" : "");
  mdp_plan_begin(&r->plan, now, &acts);
  mdp_caprun_actions(r, &acts);
  return 0;
}

void mdp_caprun_settle(mdp_caprun *r)
{
  if(!r->plan.finished)
    return;
  mdp_sched_finished(&mdp_capst.sched, r->conn, mdp_caprun_dump_taken(&r->plan));
  mdp_caprun_drop(r);
  mdp_caprun_pump();
}

void mdp_caprun_pump(void)
{
  char why[256], err[256];
  uint64_t conn;
  int got;
  while((got = mdp_sched_next(&mdp_capst.sched, mdp_caprun_now_ms(), &conn, why, sizeof(why))) !=
        0) {
    mdp_caprun *r = mdp_caprun_find(conn);
    if(!r) {
      mdp_sched_finished(&mdp_capst.sched, conn, false);
      continue;
    }
    if(got == 2) {
      mdp_capst.counters.skipped++;
      mdp_caprun_notify(NOTIF_FAILURE, r, "capture of worker %s (pid %d) skipped: %s", r->name,
                        (int)r->pid, why);
      mdp_caprun_drop(r);
      continue;
    }
    if(mdp_caprun_begin(r, err, sizeof(err)) == 0)
      mdp_caprun_settle(r);
  }
}
