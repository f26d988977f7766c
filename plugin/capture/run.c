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
#include <unistd.h>

#include "analyze.h"
#include "capture/plan/request.h"
#include "md/text.h"
#include "md/wire.h"
#include "notify/notify.h"
#include "capst.h"
#include "run.h"
#include "memmap.h"
#include "relay/relay.h"
#include "workers/registry.h"

/* Handed to the relay with a request and to the loop with a timer; the
 * callback (or, for a timer that never runs, the loop's finalizer) frees it. */
typedef struct token {
  uint64_t conn, gen, timer_id;
} token_t;

int64_t mdp_run_now_ms(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---------------------------------------------------------------- runs */

static const char *const stage_names[] = {"queued", "opening", "begun"};

bool mdp_run_to(mdp_run *r, mdp_run_stage_t to)
{
  bool ok = (r->stage == MDP_RUN_QUEUED && to == MDP_RUN_OPENING) ||
            (r->stage == MDP_RUN_OPENING && to == MDP_RUN_BEGUN);
  if(!ok) {
    ERROR("memdiag plugin: bug: the capture of worker %s (connection %" PRIu64
          ") cannot go from %s to %s",
          r->who.name, r->conn, stage_names[r->stage], stage_names[to]);
    return false;
  }
  DEBUG("memdiag plugin: capture of connection %" PRIu64 ": %s -> %s", r->conn,
        stage_names[r->stage], stage_names[to]);
  r->stage = to;
  return true;
}

void mdp_run_identity(mdp_run *r, const mdp_capture_worker_t *w)
{
  if(mdp_registry_who(w->who.connection_id, &r->who) != 0)
    r->who = w->who;
}

static token_t *token(const mdp_run *r, uint64_t timer_id)
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

void mdp_run_notify(int severity, const mdp_run *r, const char *fmt, ...)
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
static void submit_command(const mdp_run *r, bool complete)
{
  mdp_worker_info info;
  mdp_ship_job_t j = {.folder = r->dir,
                      .worker = r->who.name,
                      .instance = mdp_registry_info(r->conn, &info) == 0 ? info.instance : "",
                      .pid = r->who.pid,
                      .reason = r->plan.reason,
                      .complete = complete,
                      .uid = r->who.uid,
                      .gid = r->who.gid};
  int rc = mdp_ship_submit(&j);
  if(rc == -ENOSPC || rc == -ENOMEM)
    mdp_run_notify(NOTIF_FAILURE, r,
                   "CaptureCommand not run for the capture of worker %s (pid %d): %s; folder %s",
                   r->who.name, (int)r->who.pid,
                   rc == -ENOSPC ? "too many commands already wait" : "out of memory", r->dir);
}

void mdp_run_signal(mdp_run *r, const char *why)
{
  mdp_worker_info info;
  int sig = mdp_capst_cfg()->restart_signal;
  const char *abbrev = sigabbrev_np(sig);
  const char *name = abbrev ? abbrev : "?";

  /* Only the process registered under this connection ID, through the
   * pidfd taken when it connected: never whoever holds its PID now. */
  if(mdp_registry_info(r->conn, &info) != 0 || info.who.pid != r->who.pid) {
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
    WARNING("memdiag plugin: not sending SIG%s to worker %s (pid %d): %s", name, r->who.name,
            (int)r->who.pid, reason);
    return;
  }
  r->signalled_ms = mdp_run_now_ms();
  mdp_capst_counters()->restarts++;
  mdp_run_notify(NOTIF_WARNING, r, "worker %s (pid %d) reached MemoryLimit: sent SIG%s (%s)",
                 r->who.name, (int)r->who.pid, name, why);
}

/* ---------------------------------------------------------------- callbacks */

mdp_run *mdp_run_claim(uint64_t conn, uint64_t gen)
{
  mdp_run *r = mdp_capst_find(conn);
  return r && r->gen == gen && r->stage == MDP_RUN_BEGUN ? r : NULL;
}

static mdp_run *claim(const token_t *t) { return mdp_run_claim(t->conn, t->gen); }

static void on_reply(const Memdiag__V1__Reply *reply, void *arg)
{
  token_t *t = arg;
  mdp_capst_lock();
  mdp_run *r = mdp_capst_ready() ? claim(t) : NULL;
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
    /* The manifest names the file that exists: a dump the plugin could not
     * compress stays as the worker wrote it (heap-1.json, not .zst). */
    if(reply->path && r->plan.cur < r->plan.n_steps) {
      mdp_step_t *s = &r->plan.steps[r->plan.cur];
      const char *base = strrchr(reply->path, '/');
      base = base ? base + 1 : reply->path;
      if(s->file[0] && !strncmp(base, s->file, mdp_step_plain_len(s)) &&
         strlen(base) < sizeof(s->file))
        snprintf(s->file, sizeof(s->file), "%s", base);
    }
    /* The worker's memory map as the dump ends: RSS and where it lies, for
     * the analysis to weigh the Ruby heap against. */
    if(r->plan.cur < r->plan.n_steps && mdp_step_is_dump(r->plan.steps[r->plan.cur].kind) &&
       reply->status == MEMDIAG__V1__STATUS__STATUS_OK)
      (void)mdp_memmap_read(r->who.pid, &r->plan.steps[r->plan.cur].mem);
    mdp_run_dump_ended(r, reply->status == MEMDIAG__V1__STATUS__STATUS_TIMEOUT
                              ? "ended with a timeout"
                              : "was answered");
    mdp_plan_reply(&r->plan, mdp_run_now_ms(), &rep, &acts);
    mdp_run_actions(r, &acts);
    mdp_run_settle(r);
  }
  mdp_capst_unlock();
  free(t);
}

static void on_timer(void *arg)
{
  token_t *t = arg;
  mdp_capst_lock();
  mdp_run *r = mdp_capst_ready() ? claim(t) : NULL;
  if(r) {
    mdp_actions_t acts = {.n = 0};
    mdp_plan_timer(&r->plan, mdp_run_now_ms(), t->timer_id, &acts);
    mdp_run_actions(r, &acts);
    mdp_run_settle(r);
  }
  mdp_capst_unlock();
  free(t);
}

/* ---------------------------------------------------------------- actions */

/* Send a step whose result the plugin stores (DumpTransfer): dumps come
 * as a stream, text inline; both are written by the stream store into the
 * capture folder, heap dumps zstd-compressed unless DumpCompression none. */
/* With DumpTransfer file the worker writes its heap dumps itself; the
 * plugin compresses them afterwards, on the same writer thread. */
static bool plugin_stores(const mdp_run *r, const mdp_step_t *s)
{
  if(!s->file[0])
    return false;
  return r->streams || mdp_step_plain_len(s) < strlen(s->file);
}

/* RestartAfterCapture: a dump past its timeout may still be being written
 * (an inline dump cannot be stopped), and a restart signal then would tear
 * it. The relay waits RestartDeadline longer than the worker is told, for
 * its answer or its exit; returns that extra time (0 for other steps). */
static uint32_t restart_wait(mdp_run *r, const mdp_request_t *cr, const mdp_step_t *s)
{
  const mdp_capture_config_t *cfg = mdp_capst_cfg();

  r->dump_sent_ms = 0;
  if(!cfg->restart_after_capture || !mdp_step_is_dump(s->kind))
    return 0;
  r->dump_sent_ms = mdp_run_now_ms();
  r->dump_told_ms =
      cfg->step_timeout_ms ? cfg->step_timeout_ms : mdp_relay_default_timeout_ms(&cr->req);
  return cfg->restart_deadline_ms > UINT32_MAX / 2 ? UINT32_MAX / 2
                                                   : (uint32_t)cfg->restart_deadline_ms;
}

/* The dump sent under RestartAfterCapture ended (answer, made-up timeout
 * or the worker's exit: `how`); past its timeout, say what the restart
 * waited for. */
void mdp_run_dump_ended(mdp_run *r, const char *how)
{
  int64_t took;

  if(!r->dump_sent_ms)
    return;
  took = mdp_run_now_ms() - r->dump_sent_ms;
  r->dump_sent_ms = 0;
  if(took <= (int64_t)r->dump_told_ms)
    return;
  snprintf(r->restart_wait, sizeof(r->restart_wait),
           "the dump %s %.1f s after it was sent, past its timeout (%.0f s); RestartDeadline "
           "%.0f s",
           how, (double)took / 1000, (double)r->dump_told_ms / 1000,
           (double)mdp_capst_cfg()->restart_deadline_ms / 1000);
}

static int send_stored(mdp_run *r, mdp_request_t *cr, const mdp_step_t *s, token_t *t,
                       uint32_t extra)
{
  const mdp_capture_config_t *cfg = mdp_capst_cfg();
  /* the plan named the dumps to compress (heap-1.json.zst) */
  size_t plain = mdp_step_plain_len(s);
  int level = plain < strlen(s->file) ? cfg->dump_compression_level : 0;
  char from[sizeof(s->file)];
  mdp_relay_sink sink = {.dir_path = r->dir, .name = s->file, .zstd_level = level};
  mdp_relay_opts how = {.timeout_ms = cfg->step_timeout_ms, .extra_ms = extra, .sink = &sink};

  snprintf(from, sizeof(from), "%.*s", (int)plain, s->file);
  if(r->streams) {
    (void)mdp_request_for_stream(cr); /* results come inline or streamed */
  } else {
    sink.compress_from = from;
    sink.compress_owner = r->who.uid;
  }
  /* The folder's own descriptor, taken when it was made (the relay keeps a
   * copy): neither its path again nor capture_fs, whose lock a slow write
   * on the fs thread may hold. */
  sink.dir_fd = r->dir_fd;
  if(sink.dir_fd < 0)
    return -EBADF;
  if(mdp_step_is_dump(s->kind)) {
    /* a dump's budget: twice its estimate, and the room its check found */
    sink.limits.max_raw = (uint64_t)((double)r->plan.rss * cfg->dump_space_factor * 2);
    sink.limits.max_stored = r->room;
    sink.limits.max_ms =
        cfg->step_timeout_ms ? cfg->step_timeout_ms : mdp_relay_default_timeout_ms(&cr->req);
  }
  sink.limits.keep_free = cfg->keep_free;
  return mdp_relay_request_with(r->conn, &cr->req, &how, on_reply, t);
}

/* DumpMode auto for a worker in a memory-limited cgroup: the fork's
 * copy-on-write pages would be charged to that cgroup, so the plugin
 * decides from the cgroup's room now (workers/cgroup_parse.h) and says so
 * in the manifest; elsewhere the worker decides from what it sees. */
static int choose_mode(mdp_run *r)
{
  mdp_cgroup *cg = mdp_registry_cgroup(r->conn);
  mdp_cgroup_stats st;
  mdp_worker_info info;
  uint64_t charge;
  int mode = MEMDIAG__V1__DUMP_MODE__DUMP_MODE_AUTO;

  if(!cg)
    return mode;
  if(mdp_cgroup_last(cg, &st) && st.limit != MDP_CGROUP_NO_LIMIT &&
     mdp_cgroup_read_charge(cg, &charge) == 0 && mdp_registry_info(r->conn, &info) == 0) {
    mdp_cgroup_room room = {.dir = mdp_cgroup_dir(cg),
                            .limit = st.limit,
                            .charge = charge,
                            .margin = mdp_capst_cfg()->fork_margin,
                            .rss = info.last.rss};
    bool fork = mdp_cgroup_fork_fits(&room, r->mode_reason, sizeof(r->mode_reason));
    mode = fork ? MEMDIAG__V1__DUMP_MODE__DUMP_MODE_FORK : MEMDIAG__V1__DUMP_MODE__DUMP_MODE_INLINE;
    snprintf(r->mode_chosen, sizeof(r->mode_chosen), "%s", fork ? "fork" : "inline");
    INFO("memdiag plugin: DumpMode auto for worker %s (pid %d): %s", r->who.name, (int)r->who.pid,
         r->mode_reason);
  }
  mdp_cgroup_release(cg);
  return mode;
}

static void send_step(mdp_run *r, size_t idx)
{
  mdp_request_t cr;
  mdp_actions_t acts = {.n = 0};
  const char *why = NULL;
  token_t *t = NULL;
  const mdp_step_t *s = &r->plan.steps[idx];
  uint32_t extra = 0;

  mdp_request_opts ro = {.dir = r->dir,
                         .shapes = mdp_capst_cfg()->dump_shapes,
                         .dump_mode = mdp_capst_cfg()->dump_mode};
  if(s->kind == MDP_STEP_DUMP && ro.dump_mode == MEMDIAG__V1__DUMP_MODE__DUMP_MODE_AUTO)
    ro.dump_mode = choose_mode(r);
  if(mdp_request_build(&cr, s, &ro) != 0)
    why = "the step sends no request";
  else if(!(t = token(r, 0)))
    why = "out of memory";
  else {
    extra = restart_wait(r, &cr, s);
    if(plugin_stores(r, s)) {
      if(send_stored(r, &cr, s, t, extra) != 0)
        why = "the plugin could not open the capture folder to store the result";
    } else if(mdp_relay_request_with(
                  r->conn, &cr.req,
                  &(mdp_relay_opts){.timeout_ms = mdp_capst_cfg()->step_timeout_ms,
                                    .extra_ms = extra},
                  on_reply, t) != 0) {
      why = "the server could not send the request";
    }
  }
  if(!why)
    return;
  r->dump_sent_ms = 0;
  free(t);
  mdp_reply_t rep = {.status = MDP_REPLY_ERROR, .error = why};
  mdp_plan_reply(&r->plan, mdp_run_now_ms(), &rep, &acts);
  mdp_run_actions(r, &acts);
}

/* The space check's answer (run_fs.c), on the loop thread. */
static void space_answer(mdp_run *r, uint64_t avail, uint64_t used)
{
  mdp_actions_t acts = {.n = 0};
  const mdp_capture_config_t *cfg = mdp_capst_cfg();

  r->room = avail > cfg->keep_free ? avail - cfg->keep_free : 0;
  if(cfg->max_use) {
    uint64_t under = cfg->max_use > used ? cfg->max_use - used : 0;
    r->room = under < r->room ? under : r->room;
  }
  mdp_plan_space(&r->plan, mdp_run_now_ms(), avail, used, &acts);
  mdp_run_actions(r, &acts);
}

static void on_space(uint64_t conn, uint64_t gen, uint64_t avail, uint64_t used)
{
  mdp_capst_lock();
  mdp_run *r = mdp_capst_ready() ? mdp_run_claim(conn, gen) : NULL;
  if(r) {
    space_answer(r, avail, used);
    mdp_run_settle(r);
  }
  mdp_capst_unlock();
}

static void check_space(mdp_run *r, uint64_t need)
{
  /* Out of memory, or the fs thread has stopped (shutdown): no space is
   * known, and the plan says the dump did not fit rather than wait. */
  if(mdp_run_check_space(r, mdp_capst_cfg(), need, on_space) != 0)
    space_answer(r, 0, 0);
}

static int set_timer(mdp_run *r, uint64_t ms, uint64_t timer_id)
{
  token_t *t = token(r, timer_id);

  if(!t)
    return -ENOMEM;
  if(!mdp_loop_timer_add(mdp_capst_loop(), ms, on_timer, free, t)) {
    free(t); /* the loop is closed or out of memory: the caller aborts */
    return -ESHUTDOWN;
  }
  return 0;
}

/* For mdp_capture_evidence: a report of the worker's death names it. */
static void remember_finished(const mdp_run *r, bool complete)
{
  mdp_capture_evidence_t e = {.kind = complete ? MDP_EVIDENCE_COMPLETE : MDP_EVIDENCE_INCOMPLETE,
                              .dumps = mdp_run_dumps_taken(&r->plan)};
  snprintf(e.directory, sizeof(e.directory), "%s", r->dir);
  mdp_capst_remember(r->conn, &e);
}

/* Every manifest of one batch shows the plan's final state: one written
 * before the batch's signal would say the plan ended but not the signal,
 * and a reader could find it after the worker got the signal (the fs
 * thread writes later). The signal writes it instead. */
static bool signal_follows(const mdp_actions_t *acts, size_t i)
{
  for(size_t k = i + 1; k < acts->n; k++)
    if(acts->a[k].kind == MDP_ACT_SIGNAL)
      return true;
  return false;
}

void mdp_run_actions(mdp_run *r, const mdp_actions_t *acts)
{
  for(size_t i = 0; i < acts->n; i++) {
    const mdp_action_t *a = &acts->a[i];
    switch(a->kind) {
    case MDP_ACT_CHECK_SPACE: check_space(r, a->bytes); break;
    case MDP_ACT_SEND: send_step(r, a->step); break;
    case MDP_ACT_TIMER:
      if(set_timer(r, a->ms, a->timer_id) != 0) {
        mdp_actions_t more = {.n = 0};
        mdp_plan_abort(&r->plan, mdp_run_now_ms(), "timer could not be set", &more);
        mdp_run_actions(r, &more);
      }
      break;
    case MDP_ACT_MANIFEST:
      if(!signal_follows(acts, i))
        mdp_run_write_manifest(r, mdp_capst_cfg());
      break;
    case MDP_ACT_NOTIFY:
      /* A completed capture is analysed first; the analysis sends the OKAY
       * notification, naming the suspect. */
      if(a->severity == MDP_NOTIFY_OKAY && mdp_analyze_submit(r, mdp_capst_cfg())) {
        r->analysing = true;
        break;
      }
      mdp_run_notify(a->severity, r, "capture of worker %s (pid %d): %s; folder %s", r->who.name,
                     (int)r->who.pid, a->message, r->dir);
      break;
    case MDP_ACT_SIGNAL:
      mdp_run_signal(r, "after its capture");
      mdp_run_write_manifest(r, mdp_capst_cfg());
      break;
    case MDP_ACT_DONE:
      remember_finished(r, a->complete);
      if(a->complete)
        mdp_capst_counters()->completed++;
      else
        mdp_capst_counters()->failed++;
      if(!r->analysing) /* else the analysis starts it, once analysis.json is there */
        submit_command(r, a->complete);
      break;
    }
  }
}

/* ---------------------------------------------------------------- lifecycle */

unsigned mdp_run_dumps_taken(const mdp_plan_t *p)
{
  unsigned n = 0;

  for(size_t i = 0; i < p->n_steps; i++)
    n += mdp_step_is_dump(p->steps[i].kind) && p->steps[i].status == MDP_SS_OK;
  return n;
}

bool mdp_run_dump_taken(const mdp_plan_t *p)
{
  for(size_t i = 0; i < p->n_steps; i++)
    if(mdp_step_is_dump(p->steps[i].kind) && p->steps[i].status == MDP_SS_OK)
      return true;
  return false;
}

/* A run that will not begin: counted, reported, its slot given back. */
/* How a run that will not begin is counted. */
typedef enum { BEGIN_FAILED, BEGIN_SKIPPED } begin_refusal;

static void not_begun(mdp_run *r, begin_refusal how, const char *why)
{
  bool skipped = how == BEGIN_SKIPPED;

  if(skipped)
    mdp_capst_counters()->skipped++;
  else
    mdp_capst_counters()->failed++;
  mdp_run_notify(NOTIF_FAILURE, r, "capture of worker %s (pid %d) %s: %s", r->who.name,
                 (int)r->who.pid, skipped ? "skipped" : "failed", why);
  mdp_sched_give_back(mdp_capst_sched(), r->conn);
  /* No evidence can be taken; the restart that was asked for still
   * happens, or the worker would grow on. */
  if(r->limit_signal)
    mdp_run_signal(r, why);
  mdp_capst_drop(r);
}

/* The folder job's answer (run_fs.c), on the loop thread. */
static mdp_capture_outcome on_folder(uint64_t conn, uint64_t gen, mdp_run_folder *f)
{
  mdp_capture_outcome rc = MDP_CAPTURE_FAILED;

  mdp_capst_lock();
  mdp_run *r = mdp_capst_ready() ? mdp_capst_find(conn) : NULL;
  if(r && r->gen == gen && r->stage == MDP_RUN_OPENING) {
    rc = mdp_run_opened(r, f);
  } else {
    md_seterr(f->err, sizeof(f->err), "%s before its capture folder was made",
              mdp_capst_ready() ? "the worker left" : "the capture module stopped");
    if(f->dir_fd >= 0) {
      close(f->dir_fd);
      mdp_run_discard(f->dir);
    }
  }
  mdp_capst_unlock();
  return rc;
}

int mdp_run_begin(mdp_run *r, mdp_capture_started_fn cb, void *arg, char *err, size_t errlen)
{
  mdp_run_open_t open = {.opened = on_folder, .started = cb, .arg = arg};
  int rc = mdp_run_open_folder(r, mdp_capst_cfg(), &open, err, errlen);
  if(rc == 0) {
    mdp_run_to(r, MDP_RUN_OPENING);
    return 0;
  }
  not_begun(r, BEGIN_FAILED, err);
  return rc;
}

mdp_capture_outcome mdp_run_opened(mdp_run *r, mdp_run_folder *f)
{
  mdp_actions_t acts = {.n = 0};

  if(f->rc) {
    not_begun(r, f->outside ? BEGIN_SKIPPED : BEGIN_FAILED, f->err);
    mdp_run_pump(); /* its slot is free */
    return f->outside ? MDP_CAPTURE_OUTSIDE : MDP_CAPTURE_FAILED;
  }
  snprintf(r->dir, sizeof(r->dir), "%s", f->dir);
  r->dir_fd = f->dir_fd;
  f->dir_fd = -1;
  r->streams = f->streams;
  r->plan.p.streamed = r->streams; /* for the space check */
  mdp_run_to(r, MDP_RUN_BEGUN);
  mdp_capst_counters()->started++;
  INFO("memdiag plugin: capturing worker %s (pid %d, connection %" PRIu64 ") into %s%s",
       r->who.name, (int)r->who.pid, r->conn, r->dir,
       r->streams ? " (streamed through the plugin)" : "");
  mdp_plan_begin(&r->plan, mdp_run_now_ms(), &acts);
  mdp_run_actions(r, &acts);
  if(r->limit_pending && !mdp_plan_is_finished(&r->plan)) {
    mdp_actions_t more = {.n = 0};
    mdp_plan_limit(&r->plan, mdp_run_now_ms(), &more);
    mdp_run_actions(r, &more);
  }
  mdp_run_settle(r);
  return MDP_CAPTURE_STARTED;
}

void mdp_run_settle(mdp_run *r)
{
  if(!mdp_plan_is_finished(&r->plan))
    return;
  mdp_sched_finished(mdp_capst_sched(), r->conn, mdp_run_dump_taken(&r->plan));
  mdp_capst_drop(r);
  mdp_run_pump();
}

void mdp_run_pump(void)
{
  char why[256], err[256];
  uint64_t conn;
  mdp_next_t got;
  while((got = mdp_sched_next(mdp_capst_sched(), mdp_run_now_ms(), &conn, why, sizeof(why))) !=
        MDP_NEXT_NONE) {
    mdp_run *r = mdp_capst_find(conn);
    if(!r) {
      mdp_sched_give_back(mdp_capst_sched(), conn);
      continue;
    }
    if(got == MDP_NEXT_DROPPED) {
      mdp_capst_counters()->skipped++;
      mdp_run_notify(NOTIF_FAILURE, r, "capture of worker %s (pid %d) skipped: %s", r->who.name,
                     (int)r->who.pid, why);
      mdp_capst_drop(r);
      continue;
    }
    mdp_run_begin(r, NULL, NULL, err, sizeof(err));
  }
}
