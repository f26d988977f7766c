/* memdiag plugin: the memory cgroups of registered workers; see
 * containers.h. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>

#include "capture/capture.h"
#include "containers.h"
#include "detector/detector.h"
#include "notify/notify.h"
#include "workers/cgroup.h"
#include "workers/kmsg.h"

#define MiB(x) ((double)(x) / 1048576.0)

/* Every how many read passes each worker's /proc/PID/cgroup is re-read. */
#define MDP_CONTAINERS_RECHECK 5

static void dispatch(const mdp_cgroup *cg, const mdp_cgroup_stats *s, unsigned workers, uint64_t t,
                     uint64_t interval)
{
  const char *in = mdp_cgroup_instance_of(cg);

  mdp_notify_gauge(in, "memory", "charge", (double)s->charge, t, interval);
  if(s->has_stat) {
    mdp_notify_gauge(in, "memory", "working_set", (double)s->working_set, t, interval);
    mdp_notify_gauge(in, "memory", "anon", (double)s->anon, t, interval);
    mdp_notify_gauge(in, "memory", "file", (double)s->file, t, interval);
  }
  if(s->limit != MDP_CGROUP_NO_LIMIT)
    mdp_notify_gauge(in, "memory", "limit", (double)s->limit, t, interval);
  if(s->high != MDP_CGROUP_NO_LIMIT)
    mdp_notify_gauge(in, "memory", "high", (double)s->high, t, interval);
  if(s->has_events) {
    if(mdp_cgroup_version_of(cg) == MDP_CGROUP_V2)
      mdp_notify_derive(in, "high_events", s->high_events, t, interval);
    mdp_notify_derive(in, "oom_kill", s->oom_kill, t, interval);
    if(s->has_group_kill)
      mdp_notify_derive(in, "oom_group_kill", s->oom_group_kill, t, interval);
  }
  if(s->has_events || s->has_stat)
    mdp_notify_derive(in, "max_events", s->max_events, t, interval);
  if(s->has_psi) {
    mdp_notify_gauge(in, "percent", "pressure_some_avg10", s->psi_some10, t, interval);
    mdp_notify_gauge(in, "percent", "pressure_full_avg10", s->psi_full10, t, interval);
  }
  mdp_notify_gauge(in, "count", "workers", (double)workers, t, interval);
}

/* How much a worker grew over the samples it keeps (its history ring). */
static int64_t growth(const mdp_worker *w)
{
  unsigned newest, oldest;

  if(w->history_n < 2)
    return 0;
  newest = (w->history_head + MDP_WORKER_HISTORY - 1) % MDP_WORKER_HISTORY;
  oldest = (w->history_head + MDP_WORKER_HISTORY - w->history_n) % MDP_WORKER_HISTORY;
  return (int64_t)w->history[newest].value - (int64_t)w->history[oldest].value;
}

static uint64_t last_rss(const mdp_worker *w)
{
  mdp_sampler_reading s;
  double t;

  mdp_registry_last(w, &s, &t);
  return s.rss;
}

/* The worker whose growth drives the cgroup's charge: the largest recent
 * RSS growth among its registered workers (the largest RSS on a tie). */
static mdp_worker *driver(mdp_worker **w, size_t n, const mdp_cgroup *cg)
{
  mdp_worker *best = NULL;
  int64_t best_g = 0;

  for(size_t i = 0; i < n; i++) {
    int64_t g;
    if(w[i]->cg != cg)
      continue;
    g = growth(w[i]);
    if(!best || g > best_g || (g == best_g && last_rss(w[i]) > last_rss(best))) {
      best = w[i];
      best_g = g;
    }
  }
  return best;
}

static void trigger(mdp_worker *w, const mdp_cgroup *cg, const mdp_cgroup_stats *s,
                    const mdp_decision *d)
{
  mdp_sample samples[MDP_WORKER_HISTORY];
  mdp_capture_worker_t cw = {
      .who = w->who,
      .rss = w->history_n
                 ? w->history[(w->history_head + MDP_WORKER_HISTORY - 1) % MDP_WORKER_HISTORY].value
                 : 0,
      .time_left_s = d->time_to_limit == 0 ? 1 : d->time_to_limit};
  char reason[512], err[256] = "";
  mdp_capture_outcome rc;
  unsigned n_samples = mdp_containers_history(w, samples);

  char growth[48] = "";
  if(d->slope > 0)
    snprintf(growth, sizeof growth, ", growing %.1f MiB/min", MiB(d->slope * 60.0));
  snprintf(reason, sizeof reason,
           "%s of cgroup %s: working set %.1f MiB of limit %.1f MiB (charge %.1f MiB)%s", d->reason,
           mdp_cgroup_dir(cg), MiB(s->working_set), MiB(s->limit), MiB(s->charge), growth);
  INFO("memdiag plugin: cgroup detector fired for %s; capture of worker %" PRIu64
       " ('%s' pid %ld), whose growth drives the charge: %s",
       mdp_cgroup_dir(cg), w->who.connection_id, w->who.name, (long)w->who.pid, reason);
  mdp_capture_opts_t o = {.reason = reason, .samples = samples, .n_samples = n_samples};
  rc = mdp_capture_start(&cw, &o, err, sizeof err);
  if(rc < 0)
    INFO("memdiag plugin: no capture for worker %" PRIu64 ": %s", w->who.connection_id,
         err[0] ? err : mdp_capture_outcome_name(rc));
}

static void detect(mdp_worker **w, size_t n, mdp_cgroup *cg, const mdp_cgroup_stats *s,
                   const mdp_config *cfg)
{
  mdp_detector_config dc = cfg->detector;
  mdp_detector *d;
  mdp_decision dec;

  if(s->limit == MDP_CGROUP_NO_LIMIT || !s->has_stat)
    return; /* no room to project against: the workers' own detectors watch */
  dc.memory_limit = s->limit;
  dc.capture_size = 0; /* CaptureSize is a worker's size, not a cgroup's */
  d = mdp_cgroup_detector(cg, &dc);
  d->cfg.memory_limit = s->limit; /* a limit resized in place */
  mdp_sample ws = {.time = s->t, .value = s->working_set};
  if(mdp_detector_feed(d, &ws, &dec) == 1) {
    mdp_worker *target = driver(w, n, cg);
    if(target)
      trigger(target, cg, s, &dec);
  }
}

static double thread_cpu_s(void)
{
  struct timespec ts;

  if(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return 0;
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Has worker w moved to another cgroup (a runtime or systemd writing its
 * PID into another cgroup.procs)? Checked every MDP_CONTAINERS_RECHECK
 * passes, and at once when its cgroup could not be read (removed: a v1 or
 * v2 cgroup is removed only once empty). Logs each move once; a worker
 * without a cgroup is tried again (registry.h), and said so once. */
static void follow(mdp_worker *w, bool now)
{
  mdp_cgroup_move_info mv;
  mdp_cgroup_move rc;

  if(!now && w->cg_checks % MDP_CONTAINERS_RECHECK != 0) {
    w->cg_checks++;
    return;
  }
  rc = mdp_registry_follow_cgroup(w, &mv);
  w->cg_unread = false;
  if(rc == MDP_CGROUP_MOVED)
    INFO("memdiag plugin: worker %" PRIu64 " ('%s' pid %ld) moved from cgroup %s to cgroup %s; "
         "its charge and limit are now read from %s",
         w->who.connection_id, w->who.name, (long)w->who.pid, mv.from, mv.to,
         mdp_cgroup_dir(w->cg));
  else if(rc == MDP_CGROUP_UNREADABLE)
    WARNING("memdiag plugin: worker %" PRIu64 " ('%s' pid %ld) moved from cgroup %s to cgroup "
            "%s, which cannot be read (%s): no cgroup limit or charge for it",
            w->who.connection_id, w->who.name, (long)w->who.pid, mv.from, mv.to, mv.err);
  else if(rc == MDP_CGROUP_FOUND)
    INFO("memdiag plugin: worker %" PRIu64 " ('%s' pid %ld): its cgroup %s can be read now; "
         "its charge and limit are read from %s",
         w->who.connection_id, w->who.name, (long)w->who.pid, mv.to, mdp_cgroup_dir(w->cg));
  else if(rc == MDP_CGROUP_STILL_NONE && mv.gap == MDP_CGROUP_RETRY_FIRST) {
    /* once: a host without a memory hierarchy says so for every worker */
    int level = mv.rc == -ENOENT ? LOG_INFO : LOG_WARNING;
    plugin_log(level,
               "memdiag plugin: worker %" PRIu64 " ('%s' pid %ld): no memory cgroup can be read "
               "for it (%s): no cgroup limit or charge; tried again at growing gaps, up to "
               "every %d read intervals",
               w->who.connection_id, w->who.name, (long)w->who.pid, mv.err, MDP_CGROUP_RETRY_MAX);
  }
}

void mdp_containers_read(mdp_worker **w, size_t n, const mdp_config *cfg, uint64_t t,
                         uint64_t interval)
{
  double now = CDTIME_T_TO_DOUBLE((cdtime_t)t);
  double cpu0 = thread_cpu_s(), read_cpu = 0;
  size_t cgroups = 0;

  for(size_t i = 0; i < n; i++)
    follow(w[i], w[i]->cg_unread);
  for(size_t i = 0; i < n; i++) {
    mdp_cgroup *cg = w[i]->cg;
    mdp_cgroup_stats s;
    unsigned count = 0;
    size_t j;

    if(!cg)
      continue;
    for(j = 0; j < i && w[j]->cg != cg; j++)
      ;
    if(j < i)
      continue; /* sampled with its first worker */
    for(j = i; j < n; j++)
      count += w[j]->cg == cg;
    for(j = i; j < n; j++)
      if(w[j]->cg == cg)
        w[j]->cg_sharing = count;
    double r0 = thread_cpu_s();
    int rc = mdp_cgroup_sample(cg, now, &s);
    read_cpu += thread_cpu_s() - r0;
    for(j = i; j < n; j++)
      if(w[j]->cg == cg)
        w[j]->cg_unread = rc != 0;
    if(rc != 0)
      continue;
    cgroups++;
    dispatch(cg, &s, count, t, interval);
    detect(w, n, cg, &s, cfg);
  }
  mdp_notify_counter("oom_kills", mdp_cgroup_oom_kills());
  if(cgroups) {
    /* What the cgroups cost, beside sampling_cpu (tests/bench/sample-cost):
     * their file reads alone, and the whole pass (dispatch, detectors) */
    mdp_notify_gauge("", "duration", "cgroup_read_cpu", read_cpu, t, interval);
    mdp_notify_gauge("", "duration", "cgroup_cpu", thread_cpu_s() - cpu0, t, interval);
    mdp_notify_gauge("", "count", "cgroups", (double)cgroups, t, interval);
  }
}

void mdp_containers_limit(const mdp_worker *w, uint64_t v, mdp_containers_limits *out)
{
  mdp_worker_limit lim;
  mdp_cgroup_stats s;
  uint64_t limit;

  mdp_registry_limit(w, &lim);
  limit = lim.limit;
  if(w->cg && mdp_cgroup_last(w->cg, &s) && s.limit != MDP_CGROUP_NO_LIMIT) {
    uint64_t room = s.limit > s.charge ? s.limit - s.charge : 0;
    if(!limit || v + room < limit)
      limit = v + room;
  }
  out->project_to = limit;
  /* The room is shared: the cgroup's detector watches it for all of them */
  out->whole = w->cg_sharing > 1 ? lim.limit : limit;
}

/* Whether the kernel's OOM killer ended worker id, whose cgroup's own
 * count rose (hit 1) or not (0) since the last kill accounted for. A kill
 * is a SIGKILL: a worker that exited with a status, or by another signal,
 * or still runs, was not killed by it, whatever its cgroup counted (another
 * process's kill). The kernel's log, where it can answer, names the PID
 * killed; elsewhere the cgroup's count is the evidence. Logs why a counted
 * kill is not this worker's. */
static bool oom_killed(uint64_t id, const mdp_worker_info *info, int hit, const mdp_cgroup *cg)
{
  mdp_exit_info ex = {0};
  uint64_t since = 0;
  int named;
  char why[96];

  if(mdp_registry_exit(id, &ex, &since) != 0)
    ex.kind = MDP_EXIT_UNKNOWN;
  if(ex.kind == MDP_EXIT_RUNNING)
    snprintf(why, sizeof why, "it is still running or exited with status 0");
  else if(ex.kind == MDP_EXIT_STATUS && WIFEXITED(ex.status))
    snprintf(why, sizeof why, "it exited with status %d", WEXITSTATUS(ex.status));
  else if(ex.kind == MDP_EXIT_STATUS && WIFSIGNALED(ex.status) && WTERMSIG(ex.status) != SIGKILL)
    snprintf(why, sizeof why, "it ended by signal %d", WTERMSIG(ex.status));
  else
    why[0] = '\0';
  if(!why[0]) {
    /* SIGKILLed, or its end unknown: did the kernel log its OOM kill?
     * (a worker registered in the same second as an earlier process of
     * its PID was killed is the only one the margin could take for it) */
    since = since > 2000000u ? since - 2000000u : 0;
    named = mdp_kmsg_oom_killed(info->who.pid, since);
    if(named == MDP_KMSG_NOT_NAMED && hit == 1) {
      /* the log takes the kill's line right after its SIGKILL: once more */
      struct timespec pause = {0, 50 * 1000 * 1000};
      nanosleep(&pause, NULL);
      named = mdp_kmsg_oom_killed(info->who.pid, since);
    }
    if(named == MDP_KMSG_NAMED)
      return true;
    if(named < 0)
      return hit == 1; /* the log cannot tell: its cgroup's count does */
    snprintf(why, sizeof why, "the kernel's log names no OOM kill of pid %ld", (long)info->who.pid);
  }
  if(hit == 1)
    INFO("memdiag plugin: worker %" PRIu64 " ('%s' pid %ld) gone: not an OOM kill (%s); the OOM "
         "kill counted in cgroup %s was another process's",
         id, info->who.name, (long)info->who.pid, why, mdp_cgroup_dir(cg));
  return false;
}

void mdp_containers_worker_gone(uint64_t id)
{
  mdp_worker_info info;
  mdp_cgroup *cg;
  mdp_cgroup_stats s;
  mdp_capture_evidence_t ev;
  char evidence[MDP_CAPTURE_PATH_MAX + 64], limit[64];
  char text[2 * MDP_CAPTURE_PATH_MAX + 512];
  int hit;

  if(mdp_registry_info(id, &info) != 0)
    return;
  cg = mdp_registry_cgroup(id);
  if(!cg)
    return;
  /* the count is taken (and a rise accounted) whoever was killed */
  hit = mdp_cgroup_oom_check(cg, &s);
  if(!oom_killed(id, &info, hit, cg)) {
    mdp_cgroup_release(cg);
    return;
  }
  mdp_cgroup_count_kill();
  mdp_capture_evidence(id, &ev);
  switch(ev.kind) {
  case MDP_EVIDENCE_COMPLETE:
    snprintf(evidence, sizeof evidence, "capture %s complete", ev.directory);
    break;
  case MDP_EVIDENCE_RUNNING:
  case MDP_EVIDENCE_INCOMPLETE:
    snprintf(evidence, sizeof evidence, "capture %s incomplete, %u heap dump%s", ev.directory,
             ev.dumps, ev.dumps == 1 ? "" : "s");
    break;
  default: snprintf(evidence, sizeof evidence, "no capture"); break;
  }
  if(s.t == 0)
    snprintf(limit, sizeof limit, "charge and limit unknown");
  else if(s.limit == MDP_CGROUP_NO_LIMIT)
    snprintf(limit, sizeof limit, "at charge %.0f MiB, no limit", MiB(s.charge));
  else
    snprintf(limit, sizeof limit, "at charge %.0f MiB of limit %.0f MiB", MiB(s.charge),
             MiB(s.limit));
  /* collectd cuts a notification at 256 characters: the words that matter
   * first, the (long) cgroup path last, and the whole line in the log */
  snprintf(text, sizeof text,
           "worker %" PRIu64 " ('%s' pid %ld) killed by the kernel's OOM killer %s; %s; cgroup %s",
           id, info.who.name, (long)info.who.pid, limit, evidence, mdp_cgroup_dir(cg));
  mdp_notify(NOTIF_FAILURE, info.instance, "%s", text);
  if(strlen(text) >= NOTIF_MAX_MSG_LEN)
    WARNING("memdiag plugin: in full: %s", text);
  mdp_cgroup_release(cg);
}

unsigned mdp_containers_history(const mdp_worker *w, mdp_sample *out)
{
  unsigned start = (w->history_head + MDP_WORKER_HISTORY - w->history_n) % MDP_WORKER_HISTORY;

  for(unsigned i = 0; i < w->history_n; i++) {
    out[i] = w->history[(start + i) % MDP_WORKER_HISTORY];
  }
  return w->history_n;
}
