/* Capture module: the API of capture.h on top of the runs (run.c): starting
 * plans, the MemoryLimit restart, departures, status and counters. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "store/capfs.h"
#include "store/fsq.h"
#include "md/text.h"
#include "notify/notify.h"
#include "analyze.h"
#include "capst.h"
#include "run.h"
#include "workers/registry.h"

/* CaptureCommand's reports, on its runner thread (command.h). */
static void command_log(int level, const char *line, void *ctx)
{
  (void)ctx;
  plugin_log(level, "memdiag plugin: %s", line);
}

static void command_finished(const mdp_ship_result_t *r, void *ctx)
{
  (void)ctx;
  if(r->ok)
    INFO("memdiag plugin: CaptureCommand for worker %s (pid %d): %s after %.1f s; folder %s",
         r->worker, (int)r->pid, r->summary, r->seconds, r->folder);
  else if(r->shutdown) /* no notification while collectd stops */
    WARNING("memdiag plugin: CaptureCommand for worker %s (pid %d): %s; folder %s", r->worker,
            (int)r->pid, r->summary, r->folder);
  else if(mdp_notify(NOTIF_FAILURE, r->instance,
                     "CaptureCommand for the capture of worker %s (pid %d): %s; folder %s",
                     r->worker, (int)r->pid, r->summary, r->folder) != 0)
    WARNING("memdiag plugin: CaptureCommand for worker %s (pid %d): %s; folder %s", r->worker,
            (int)r->pid, r->summary, r->folder);
}

static const mdp_ship_hooks_t command_hooks = {.log = command_log, .finished = command_finished};

int mdp_capture_init(const mdp_capture_config_t *c, mdp_loop *loop)
{
  char err[256];
  int rc = 0;

  mdp_capst_lock();
  rc = mdp_capst_setup(c, loop, err, sizeof(err));
  if(rc) {
    ERROR("memdiag plugin: %s", err);
    goto out;
  }
  rc = mdp_ship_start(&mdp_capst_cfg()->command, &command_hooks, err, sizeof(err));
  if(rc) {
    ERROR("memdiag plugin: %s", err);
    mdp_capst_close();
    goto out;
  }
  /* The folders and the plugin's files are made readable by the command's
   * user as they are made (store/capfs.h, "Sharing"), never later. */
  gid_t reader;
  mdp_capfs_set_reader(mdp_ship_reader_gid(&reader) == 0 ? reader : (gid_t)-1);
  /* Everything the module does on CaptureDirectory happens on this thread
   * (store/fsq.h): without it there are no captures, rather than a server
   * thread that a slow disk can stop. */
  rc = mdp_fsq_start(loop);
  if(rc) {
    ERROR("memdiag plugin: cannot start the capture file-system thread: %s", strerror(-rc));
    mdp_ship_stop();
    mdp_capst_close();
    goto out;
  }
  /* CaptureDirectory is checked (and made) now, so that a misconfigured
   * one shows in collectd's log at startup, not at the first capture. */
  mdp_run_check_root(mdp_capst_cfg()->directory);
  mdp_capst_open();
out:
  mdp_capst_unlock();
  return rc;
}

void mdp_capture_shutdown(void)
{
  bool was_ready;

  mdp_capst_lock();
  was_ready = mdp_capst_ready();
  while(was_ready && mdp_capst_n_runs()) {
    mdp_run *r = mdp_capst_run(mdp_capst_n_runs() - 1);
    if(r->stage == MDP_RUN_BEGUN) {
      mdp_actions_t acts = {.n = 0};
      mdp_plan_abort(&r->plan, mdp_run_now_ms(), "plugin shutdown", &acts);
      mdp_run_actions(r, &acts);
    }
    mdp_capst_drop(r);
  }
  if(was_ready)
    mdp_capst_close();
  mdp_capst_unlock();
  if(was_ready) {
    /* The final manifests are queued: written before the directory closes.
     * Without the lock: the loop still runs, and its answers to earlier
     * jobs take it (to find the module stopped); a hung disk must not stop
     * the loop with it. */
    mdp_fsq_stop();
    mdp_capfs_close(); /* a restarted module checks CaptureDirectory again */
  }
  mdp_analyze_stop();
  /* After the runs and their analyses ended (their commands are queued,
   * then reported as not run), and without the lock: it may wait for a
   * command to die. */
  mdp_ship_stop();
}

const char *mdp_capture_outcome_name(mdp_capture_outcome o)
{
  switch(o) {
  case MDP_CAPTURE_STARTED: return "started";
  case MDP_CAPTURE_QUEUED: return "queued";
  case MDP_CAPTURE_NO_WORKER: return "no such worker";
  case MDP_CAPTURE_NOT_RUNNING: return "capture module not running";
  case MDP_CAPTURE_BUSY: return "a capture already runs or waits for this worker";
  case MDP_CAPTURE_COOLDOWN: return "cooldown";
  case MDP_CAPTURE_OUTSIDE: return "CaptureDirectory outside the worker's dump directory";
  case MDP_CAPTURE_FAILED: return "capture folder could not be made";
  case MDP_CAPTURE_NO_MEMORY: return "out of memory";
  }
  return "unknown outcome";
}

/* The scheduler's answer (plan/sched.h) as the caller's outcome. */
static mdp_capture_outcome admitted(mdp_admit_t a)
{
  switch(a) {
  case MDP_ADMIT_START: return MDP_CAPTURE_STARTED;
  case MDP_ADMIT_QUEUE: return MDP_CAPTURE_QUEUED;
  case MDP_ADMIT_BUSY: return MDP_CAPTURE_BUSY;
  case MDP_ADMIT_COOLDOWN: return MDP_CAPTURE_COOLDOWN;
  case MDP_ADMIT_NO_MEMORY: break;
  }
  return MDP_CAPTURE_NO_MEMORY;
}

mdp_capture_outcome mdp_capture_start(const mdp_capture_worker_t *w, const mdp_capture_opts_t *o,
                                      char *err, size_t errlen)
{
  const char *reason = o->reason;
  char why[256] = "";
  mdp_capture_outcome rc;
  bool manual = o->flags & MDP_CAPTURE_MANUAL;

  mdp_capst_lock();
  if(!mdp_capst_ready()) {
    md_seterr(err, errlen, "the capture module is not running");
    rc = MDP_CAPTURE_NOT_RUNNING;
    goto out;
  }
  mdp_worker_info info;
  if(mdp_registry_info(w->who.connection_id, &info) != 0) {
    md_seterr(err, errlen, "no worker with connection ID %" PRIu64, w->who.connection_id);
    rc = MDP_CAPTURE_NO_WORKER;
    goto out;
  }
  /* With DumpTransfer file, whether the worker may write into
   * CaptureDirectory is asked on the fs thread (realpath): an OUTSIDE
   * refusal reaches cb. */
  char id[MDP_SCHED_ID_MAX];
  mdp_sched_identity(id, sizeof(id), &info.who, info.certificate);
  mdp_sched_trigger_t t = {
      .who = info.who, .name = id, .now_ms = mdp_run_now_ms(), .manual = manual};
  rc = admitted(mdp_sched_admit(mdp_capst_sched(), &t, why, sizeof(why)));
  if(rc < 0) {
    md_seterr(err, errlen, "%s", why);
    mdp_capst_counters()->skipped++;
    mdp_run tmp = {.conn = w->who.connection_id};
    mdp_run_identity(&tmp, w);
    mdp_run_notify(NOTIF_FAILURE, &tmp, "capture of worker %s (pid %d) skipped (%s): %s",
                   tmp.who.name, (int)tmp.who.pid, reason ? reason : "", why);
    goto out;
  }
  mdp_run *r = mdp_capst_add(w->who.connection_id);
  if(!r) {
    /* Give the slot back: nothing will run. */
    mdp_sched_give_back(mdp_capst_sched(), w->who.connection_id);
    mdp_sched_gone(mdp_capst_sched(), w->who.connection_id);
    md_seterr(err, errlen, "out of memory");
    rc = MDP_CAPTURE_NO_MEMORY;
    goto out;
  }
  mdp_run_identity(r, w);
  r->manual = manual;
  mdp_plan_trigger_t trig = {.reason = reason,
                             .samples = o->samples,
                             .n_samples = o->n_samples,
                             .rss = w->rss ? w->rss : info.last.rss};
  mdp_capst_plan_init(&r->plan, &trig);
  mdp_plan_fit(&r->plan, mdp_run_now_ms(), w->time_left_s);
  if(rc == MDP_CAPTURE_QUEUED) {
    NOTICE("memdiag plugin: capture of worker %s (pid %d) queued: %s", r->who.name, (int)r->who.pid,
           why);
    goto out;
  }
  if(mdp_run_begin(r, o->cb, o->arg, err, errlen) != 0)
    rc = MDP_CAPTURE_FAILED;
out:
  mdp_capst_unlock();
  return rc;
}

/* MemoryLimit with nothing captured yet: one dump, then the signal (also
 * when its folder cannot be made: limit_signal). */
static void limit_dump(mdp_run *r, const mdp_capture_worker_t *w)
{
  char err[256];

  if(!r) {
    r = mdp_capst_add(w->who.connection_id);
    if(!r) {
      mdp_sched_give_back(mdp_capst_sched(), w->who.connection_id);
      return;
    }
    mdp_run_identity(r, w);
  }
  mdp_plan_params_t p = mdp_capst_params();
  mdp_plan_init_limit(&r->plan, &p, w->rss);
  r->limit_signal = true;
  mdp_run_begin(r, NULL, NULL, err, sizeof(err));
}

/* The identity cooldowns are kept under (plan/sched.h), and the process:
 * the registry's while the worker is connected, else what the caller
 * knows. */
static void worker_identity(const mdp_capture_worker_t *w, char *id, size_t len,
                            mdp_sched_trigger_t *t)
{
  mdp_worker_info info;
  *t = (mdp_sched_trigger_t){.who = w->who, .name = id, .now_ms = mdp_run_now_ms()};
  if(mdp_registry_info(w->who.connection_id, &info) == 0) {
    mdp_sched_identity(id, len, &info.who, info.certificate);
    t->who = info.who;
  } else {
    mdp_sched_identity(id, len, &w->who, "");
  }
}

void mdp_capture_observe(const mdp_capture_worker_t *w, bool limit_reached)
{
  char why[256] = "";

  mdp_capst_lock();
  if(!mdp_capst_ready())
    goto out;
  mdp_run *r = mdp_capst_find(w->who.connection_id);
  if(r)
    mdp_plan_set_rss(&r->plan, w->rss);
  if(!limit_reached || !mdp_capst_cfg()->restart_after_capture)
    goto out;
  char id[MDP_SCHED_ID_MAX];
  mdp_sched_trigger_t t;
  worker_identity(w, id, sizeof(id), &t);
  switch(mdp_sched_limit(mdp_capst_sched(), &t, why, sizeof(why))) {
  case MDP_LIMIT_IGNORE: break;
  case MDP_LIMIT_PLAN: {
    mdp_actions_t acts = {.n = 0};
    if(r && r->stage == MDP_RUN_OPENING)
      r->limit_pending = true; /* told to the plan when it begins */
    if(!r || r->stage != MDP_RUN_BEGUN)
      break;
    NOTICE("memdiag plugin: worker %s (pid %d) reached MemoryLimit during its "
           "capture: finishing the dump, then SIG%s",
           r->who.name, (int)r->who.pid, sigabbrev_np(mdp_capst_cfg()->restart_signal));
    mdp_plan_limit(&r->plan, mdp_run_now_ms(), &acts);
    mdp_run_actions(r, &acts);
    mdp_run_settle(r);
    break;
  }
  case MDP_LIMIT_DUMP: limit_dump(r, w); break;
  case MDP_LIMIT_SIGNAL: {
    mdp_run tmp = {.conn = w->who.connection_id};
    mdp_run_identity(&tmp, w);
    if(r && r->stage != MDP_RUN_BEGUN)
      mdp_capst_drop(r); /* its queued trigger is moot: the worker restarts */
    mdp_run_signal(&tmp, why);
    break;
  }
  }
out:
  mdp_capst_unlock();
}

void mdp_capture_worker_gone(uint64_t connection_id)
{
  mdp_capst_lock();
  if(!mdp_capst_ready())
    goto out;
  mdp_run *r = mdp_capst_find(connection_id);
  if(r && r->stage == MDP_RUN_BEGUN) {
    mdp_actions_t acts = {.n = 0};
    mdp_run_dump_ended(r, "was not answered: the worker exited");
    mdp_plan_worker_gone(&r->plan, mdp_run_now_ms(), &acts);
    mdp_run_actions(r, &acts);
    mdp_sched_finished(mdp_capst_sched(), r->conn, mdp_run_dump_taken(&r->plan));
    mdp_capst_drop(r);
  } else if(r) {
    /* An opening run's folder job finds it gone, and removes the folder. */
    INFO("memdiag plugin: worker %s (pid %d) left before its %s capture began", r->who.name,
         (int)r->who.pid, r->stage == MDP_RUN_OPENING ? "starting" : "queued");
    mdp_capst_drop(r);
  }
  mdp_sched_gone(mdp_capst_sched(), connection_id);
  mdp_run_pump();
out:
  mdp_capst_unlock();
}

/* ---------------------------------------------------------------- status */

static void describe_step(const mdp_run *r, char *buf, size_t len)
{
  if(r->stage != MDP_RUN_BEGUN) {
    snprintf(buf, len, r->stage == MDP_RUN_OPENING ? "starting" : "queued");
    return;
  }
  const mdp_plan_t *p = &r->plan;
  size_t cur = p->cur < p->n_steps ? p->cur : p->n_steps - 1;
  snprintf(buf, len, "%s (%zu/%zu)", mdp_step_name(p->steps[cur].kind), cur + 1, p->n_steps);
}

size_t mdp_capture_list(mdp_capture_info_t *out, size_t max)
{
  size_t n;
  mdp_capst_lock();
  n = mdp_capst_n_runs();
  for(size_t i = 0; i < n && i < max; i++) {
    const mdp_run *r = mdp_capst_run(i);
    mdp_capture_info_t *o = &out[i];
    memset(o, 0, sizeof(*o));
    o->connection_id = r->conn;
    snprintf(o->worker, sizeof(o->worker), "%s", r->who.name);
    snprintf(o->reason, sizeof(o->reason), "%s", r->plan.reason);
    snprintf(o->directory, sizeof(o->directory), "%s", r->dir);
    describe_step(r, o->step, sizeof(o->step));
    o->started_at = r->stage == MDP_RUN_BEGUN ? (uint64_t)(r->plan.started_ms / 1000) : 0;
  }
  mdp_capst_unlock();
  return n;
}

void mdp_capture_evidence(uint64_t connection_id, mdp_capture_evidence_t *out)
{
  memset(out, 0, sizeof(*out));
  mdp_capst_lock();
  for(size_t i = 0; i < mdp_capst_n_runs(); i++) {
    const mdp_run *r = mdp_capst_run(i);
    if(r->conn == connection_id && r->stage == MDP_RUN_BEGUN) {
      out->kind = MDP_EVIDENCE_RUNNING;
      snprintf(out->directory, sizeof(out->directory), "%s", r->dir);
      out->dumps = mdp_run_dumps_taken(&r->plan);
    }
  }
  if(out->kind == MDP_EVIDENCE_NONE)
    mdp_capst_last_finished(connection_id, out);
  mdp_capst_unlock();
}

void mdp_capture_get_counters(mdp_capture_counters_t *out)
{
  mdp_capst_lock();
  *out = *mdp_capst_counters();
  mdp_capst_unlock();
}

/* A worker that restarted has a new connection but its identity's cooldown. */
static bool cooled(const mdp_sched_conn_t *c, uint64_t connection_id)
{
  mdp_worker_info info;
  char id[MDP_SCHED_ID_MAX];
  const char *name = c ? c->name : NULL;
  if(!name && mdp_registry_info(connection_id, &info) == 0) {
    mdp_sched_identity(id, sizeof(id), &info.who, info.certificate);
    name = id;
  }
  return name && mdp_sched_cooldown_left(mdp_capst_sched(), name, mdp_run_now_ms()) > 0;
}

void mdp_capture_plan_state(uint64_t connection_id, char *buf, size_t len)
{
  mdp_capst_lock();
  const mdp_run *r = mdp_capst_ready() ? mdp_capst_find(connection_id) : NULL;
  const mdp_sched_conn_t *c =
      mdp_capst_ready() ? mdp_sched_find(mdp_capst_sched(), connection_id) : NULL;
  if(r) {
    char step[64];
    describe_step(r, step, sizeof(step));
    snprintf(buf, len, r->stage == MDP_RUN_BEGUN ? "running: %s" : "%s", step);
  } else if(c && c->limit_seen && mdp_capst_cfg()->restart_after_capture) {
    snprintf(buf, len, "limit reached");
  } else if(mdp_capst_ready() && cooled(c, connection_id)) {
    snprintf(buf, len, "cooldown");
  } else {
    snprintf(buf, len, "idle");
  }
  mdp_capst_unlock();
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
    int r = mdp_notify_counter(names[i], v[i]);
    if(r && !rc)
      rc = r;
  }
  return rc;
}
