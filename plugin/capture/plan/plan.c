/* Capture plan state machine: see plan.h. */
#include "plan.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "md/text.h"

static const struct {
  const char *name;
  mdp_step_kind_t kind;
} step_names[] = {
    {"trace_start", MDP_STEP_TRACE_START},   {"dump", MDP_STEP_DUMP},
    {"trace_stop", MDP_STEP_TRACE_STOP},     {"gc_start", MDP_STEP_GC_START},
    {"gc_stop", MDP_STEP_GC_STOP},           {"scheduler", MDP_STEP_SCHEDULER},
    {"threads", MDP_STEP_THREADS},           {"wait", MDP_STEP_WAIT},
    {"heap_profile", MDP_STEP_HEAP_PROFILE},
};

const char *mdp_step_name(mdp_step_kind_t kind)
{
  for(size_t i = 0; i < sizeof(step_names) / sizeof(step_names[0]); i++)
    if(step_names[i].kind == kind)
      return step_names[i].name;
  return "unknown";
}

const char *mdp_step_status_name(mdp_step_status_t st)
{
  switch(st) {
  case MDP_SS_PENDING: return "pending";
  case MDP_SS_RUNNING: return "running";
  case MDP_SS_OK: return "ok";
  case MDP_SS_ERROR: return "error";
  case MDP_SS_SKIPPED: return "skipped";
  case MDP_SS_NOT_RUN: return "not_run";
  }
  return "unknown";
}

bool mdp_step_is_dump(mdp_step_kind_t kind)
{
  return kind == MDP_STEP_DUMP || kind == MDP_STEP_TRACE_STOP;
}

size_t mdp_step_plain_len(const mdp_step_t *s)
{
  size_t n = strlen(s->file);
  return n > 4 && !strcmp(s->file + n - 4, ".zst") ? n - 4 : n;
}

const char *mdp_plan_state_name(mdp_plan_state_t st)
{
  switch(st) {
  case MDP_PLAN_READY: return "ready";
  case MDP_PLAN_WAITING_SPACE: return "waiting for space";
  case MDP_PLAN_IN_FLIGHT: return "in flight";
  case MDP_PLAN_WAITING_TIMER: return "waiting for a timer";
  case MDP_PLAN_FINISHED: return "finished";
  }
  return "unknown";
}

bool mdp_plan_to(mdp_plan_t *plan, mdp_plan_state_t to)
{
  mdp_plan_state_t from = plan->state;
  /* READY -> a wait or FINISHED; a wait -> READY or FINISHED; none after
   * FINISHED, and no stage follows itself. */
  bool ok = from == MDP_PLAN_READY
                ? to != MDP_PLAN_READY
                : from != MDP_PLAN_FINISHED && (to == MDP_PLAN_READY || to == MDP_PLAN_FINISHED);
  if(!ok) {
    plan->refused++;
    return false;
  }
  plan->state = to;
  return true;
}

bool mdp_plan_is_finished(const mdp_plan_t *plan) { return plan->state == MDP_PLAN_FINISHED; }

uint64_t mdp_plan_dump_need(const mdp_plan_params_t *p, uint64_t rss)
{
  double raw = (double)rss * p->space_factor;

  if(!p->zstd_dumps)
    return (uint64_t)raw;
  if(p->streamed)
    return (uint64_t)(raw * MDP_PLAN_ZSTD_SHARE);
  return (uint64_t)(raw * (1 + MDP_PLAN_ZSTD_SHARE));
}

int mdp_plan_parse(const char *text, mdp_step_kind_t *kinds, size_t max, size_t *n, char *err,
                   size_t errlen)
{
  char word[32];
  size_t count = 0;
  int trace = 0, gc = 0, dumps = 0;
  const char *p = text;

  while(*p) {
    while(*p == ' ' || *p == '\t' || *p == ',')
      p++;
    if(!*p)
      break;
    size_t len = strcspn(p, " \t,");
    if(len >= sizeof(word)) {
      md_seterr(err, errlen, "Plan: step name too long near \"%.20s\"", p);
      return -EINVAL;
    }
    memcpy(word, p, len);
    word[len] = '\0';
    p += len;
    size_t i;
    for(i = 0; i < sizeof(step_names) / sizeof(step_names[0]); i++)
      if(strcmp(step_names[i].name, word) == 0)
        break;
    if(i == sizeof(step_names) / sizeof(step_names[0])) {
      md_seterr(err, errlen,
                "Plan: unknown step \"%s\" (steps: trace_start dump trace_stop "
                "gc_start gc_stop scheduler threads wait heap_profile)",
                word);
      return -EINVAL;
    }
    if(count == max) {
      md_seterr(err, errlen, "Plan: more than %zu steps", max);
      return -EINVAL;
    }
    mdp_step_kind_t k = step_names[i].kind;
    /* Start/stop steps must pair up: a plan that leaves tracing or GC
     * profiling on would keep costing the worker after memdiag is done. */
    if(k == MDP_STEP_TRACE_START && trace++) {
      md_seterr(err, errlen, "Plan: trace_start twice without trace_stop");
      return -EINVAL;
    }
    if(k == MDP_STEP_TRACE_STOP && trace-- != 1) {
      md_seterr(err, errlen, "Plan: trace_stop without trace_start before it");
      return -EINVAL;
    }
    if(k == MDP_STEP_GC_START && gc++) {
      md_seterr(err, errlen, "Plan: gc_start twice without gc_stop");
      return -EINVAL;
    }
    if(k == MDP_STEP_GC_STOP && gc-- != 1) {
      md_seterr(err, errlen, "Plan: gc_stop without gc_start before it");
      return -EINVAL;
    }
    if(mdp_step_is_dump(k))
      dumps++;
    kinds[count++] = k;
  }
  if(trace) {
    md_seterr(err, errlen, "Plan: trace_start without a later trace_stop");
    return -EINVAL;
  }
  if(gc) {
    md_seterr(err, errlen, "Plan: gc_start without a later gc_stop");
    return -EINVAL;
  }
  if(count == 0) {
    md_seterr(err, errlen, "Plan: no steps");
    return -EINVAL;
  }
  if(!dumps) {
    md_seterr(err, errlen, "Plan: no heap dump step (dump or trace_stop)");
    return -EINVAL;
  }
  *n = count;
  return 0;
}

static void name_file(mdp_plan_t *plan, mdp_step_t *s)
{
  unsigned *counter = NULL;
  const char *base = NULL, *ext = ".txt";

  switch(s->kind) {
  case MDP_STEP_DUMP:
  case MDP_STEP_TRACE_STOP:
    snprintf(s->file, sizeof(s->file), "heap-%u.json%s", ++plan->dumps,
             plan->p.zstd_dumps ? ".zst" : "");
    return;
  case MDP_STEP_HEAP_PROFILE: /* named after the dump before it */
    snprintf(s->file, sizeof(s->file), "heap_profile-%u.pb.gz", plan->dumps);
    return;
  case MDP_STEP_GC_STOP: counter = &plan->gc_files, base = "gc"; break;
  case MDP_STEP_SCHEDULER: counter = &plan->sched_files, base = "scheduler"; break;
  case MDP_STEP_THREADS: counter = &plan->thread_files, base = "threads"; break;
  default: s->file[0] = '\0'; return;
  }
  if(++*counter == 1)
    snprintf(s->file, sizeof(s->file), "%s%s", base, ext);
  else
    snprintf(s->file, sizeof(s->file), "%s-%u%s", base, *counter, ext);
}

static mdp_step_t *add_step(mdp_plan_t *plan, mdp_step_kind_t kind)
{
  if(plan->n_steps == MDP_PLAN_STEPS_MAX)
    return NULL;
  mdp_step_t *s = &plan->steps[plan->n_steps++];
  memset(s, 0, sizeof(*s));
  s->kind = kind;
  s->status = MDP_SS_PENDING;
  name_file(plan, s);
  return s;
}

static void init_common(mdp_plan_t *plan, const mdp_plan_params_t *p, const char *reason,
                        uint64_t rss)
{
  memset(plan, 0, sizeof(*plan));
  plan->p = *p;
  plan->rss = rss;
  plan->trigger_rss = rss;
  snprintf(plan->reason, sizeof(plan->reason), "%s", reason ? reason : "");
}

void mdp_plan_init(mdp_plan_t *plan, const mdp_plan_params_t *p, const mdp_step_kind_t *kinds,
                   size_t n, const mdp_plan_trigger_t *t)
{
  const mdp_sample *samples = t->samples;
  size_t n_samples = t->n_samples;

  init_common(plan, p, t->reason, t->rss);
  for(size_t i = 0; i < n; i++) {
    mdp_step_kind_t k = kinds[i];
    if(k == MDP_STEP_TRACE_START && !p->trace_allocations)
      continue;
    if(k == MDP_STEP_TRACE_STOP && !p->trace_allocations)
      k = MDP_STEP_DUMP;
    if(k == MDP_STEP_HEAP_PROFILE && p->heap_profiles)
      continue; /* one follows each dump anyway */
    /* Room is kept for the final dump the memory limit may add. */
    if(plan->n_steps + 1 >= MDP_PLAN_STEPS_MAX)
      break;
    add_step(plan, k);
    if(mdp_step_is_dump(k) && p->heap_profiles && plan->n_steps + 1 < MDP_PLAN_STEPS_MAX)
      add_step(plan, MDP_STEP_HEAP_PROFILE);
  }
  /* The newest samples say most about the trigger. */
  size_t first = n_samples > MDP_PLAN_SAMPLES_MAX ? n_samples - MDP_PLAN_SAMPLES_MAX : 0;
  for(size_t i = first; i < n_samples; i++) {
    plan->samples[plan->n_samples].time = samples[i].time;
    plan->samples[plan->n_samples].value = samples[i].value;
    plan->n_samples++;
  }
}

void mdp_plan_init_limit(mdp_plan_t *plan, const mdp_plan_params_t *p, uint64_t rss)
{
  init_common(plan, p, "memory limit reached before any capture", rss);
  add_step(plan, MDP_STEP_DUMP);
  plan->restart_pending = true;
  plan->final_added = true;
}

void mdp_plan_set_rss(mdp_plan_t *plan, uint64_t rss)
{
  if(rss)
    plan->rss = rss;
}

static mdp_action_t *emit(mdp_actions_t *out, mdp_act_kind_t kind)
{
  /* Handlers emit at most a handful of actions per event; the array is
   * sized for the longest path (skip + notify + manifest + signal + done). */
  if(out->n == MDP_ACTIONS_MAX)
    return NULL;
  mdp_action_t *a = &out->a[out->n++];
  memset(a, 0, sizeof(*a));
  a->kind = kind;
  return a;
}

static void notify(mdp_actions_t *out, int severity, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void notify(mdp_actions_t *out, int severity, const char *fmt, ...)
{
  mdp_action_t *a = emit(out, MDP_ACT_NOTIFY);
  if(!a)
    return;
  a->severity = severity;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(a->message, sizeof(a->message), fmt, ap);
  va_end(ap);
}

static void manifest(mdp_actions_t *out) { emit(out, MDP_ACT_MANIFEST); }

static void describe(const mdp_step_t *s, char *buf, size_t len)
{
  if(s->file[0])
    snprintf(buf, len, "%s (%s)", mdp_step_name(s->kind), s->file);
  else
    snprintf(buf, len, "%s", mdp_step_name(s->kind));
}

static void mark_rest(mdp_plan_t *plan, int64_t now_ms, const char *why)
{
  for(size_t i = plan->cur; i < plan->n_steps; i++) {
    mdp_step_t *s = &plan->steps[i];
    if(s->status == MDP_SS_PENDING || s->status == MDP_SS_RUNNING) {
      if(s->status == MDP_SS_RUNNING)
        s->finished_ms = now_ms;
      s->status = MDP_SS_NOT_RUN;
      snprintf(s->error, sizeof(s->error), "%s", why);
    }
  }
  plan->cur = plan->n_steps;
}

static void finish(mdp_plan_t *plan, int64_t now_ms, const char *end, mdp_actions_t *out)
{
  size_t bad = 0;
  for(size_t i = 0; i < plan->n_steps; i++)
    if(plan->steps[i].status != MDP_SS_OK &&
       !(plan->steps[i].kind == MDP_STEP_HEAP_PROFILE && plan->steps[i].status == MDP_SS_SKIPPED))
      bad++;
  mdp_plan_to(plan, MDP_PLAN_FINISHED);
  plan->finished_ms = now_ms;
  plan->complete = bad == 0;
  snprintf(plan->end, sizeof(plan->end), "%s", end);
  manifest(out);
  if(plan->complete)
    notify(out, MDP_NOTIFY_OKAY, "capture complete");
  else
    notify(out, MDP_NOTIFY_FAILURE, "capture incomplete (%s): %zu of %zu steps did not succeed",
           end, bad, plan->n_steps);
  mdp_action_t *a = emit(out, MDP_ACT_DONE);
  if(a)
    a->complete = plan->complete;
}

static void send_step(mdp_plan_t *plan, int64_t now_ms, mdp_actions_t *out)
{
  mdp_step_t *s = &plan->steps[plan->cur];
  s->status = MDP_SS_RUNNING;
  s->started_ms = now_ms;
  mdp_plan_to(plan, MDP_PLAN_IN_FLIGHT);
  mdp_action_t *a = emit(out, MDP_ACT_SEND);
  if(a)
    a->step = plan->cur;
}

static void skip_step(mdp_plan_t *plan, int64_t now_ms, mdp_actions_t *out, const char *why)
{
  mdp_step_t *s = &plan->steps[plan->cur];
  char what[96];
  s->status = MDP_SS_SKIPPED;
  if(!s->started_ms)
    s->started_ms = now_ms;
  s->finished_ms = now_ms;
  snprintf(s->error, sizeof(s->error), "%s", why);
  describe(s, what, sizeof(what));
  notify(out, MDP_NOTIFY_FAILURE, "%s skipped: %s", what, why);
  manifest(out);
}

/* The memory limit was reached: what is left of the plan gives way to the
 * one dump that matters before the restart. */
static void enter_final(mdp_plan_t *plan, int64_t now_ms)
{
  size_t first_new = plan->n_steps;
  /* A dump that was just skipped for want of space would be skipped again. */
  bool space_refused = plan->cur > 0 && mdp_step_is_dump(plan->steps[plan->cur - 1].kind) &&
                       plan->steps[plan->cur - 1].status == MDP_SS_SKIPPED;
  plan->final_added = true;
  mark_rest(plan, now_ms, "memory limit reached");
  if(plan->tracing)
    add_step(plan, MDP_STEP_TRACE_STOP);
  else if(!plan->dump_ok && !space_refused)
    add_step(plan, MDP_STEP_DUMP);
  plan->cur = first_new;
}

static void advance(mdp_plan_t *plan, int64_t now_ms, mdp_actions_t *out);

/* The current step is over (ok, failed or skipped): move on, or, when the
 * memory limit arrived meanwhile, to the final phase. */
static void step_done(mdp_plan_t *plan, int64_t now_ms, mdp_actions_t *out)
{
  plan->cur++;
  if(plan->restart_pending && !plan->final_added)
    enter_final(plan, now_ms);
  advance(plan, now_ms, out);
}

void mdp_plan_fit(mdp_plan_t *plan, int64_t now_ms, double time_left_s)
{
  /* Not finite or not positive: unknown (the detector says -1). Beyond a
   * year the deadline is meaningless anyway. */
  if(!(time_left_s > 0) || time_left_s > 365 * 86400.0)
    return;
  plan->time_left_s = time_left_s;
  plan->deadline_ms = now_ms + (int64_t)(time_left_s * 1000.0 * MDP_PLAN_FIT_SHARE);
}

/* What a step still to come is expected to take, in ms. A dump: the
 * slowest one this plan has seen, else about 30 s per GiB of RSS (an
 * inline Ruby dump of a 376 MB heap took 10 s here), at least 5 s. */
static uint64_t step_estimate_ms(const mdp_plan_t *plan, const mdp_step_t *s)
{
  if(s->kind == MDP_STEP_WAIT)
    return 0;
  if(!mdp_step_is_dump(s->kind))
    return 2000;
  uint64_t seen = 0;
  for(size_t i = 0; i < plan->cur; i++) {
    const mdp_step_t *d = &plan->steps[i];
    if(mdp_step_is_dump(d->kind) && d->finished_ms > d->started_ms &&
       (uint64_t)(d->finished_ms - d->started_ms) > seen)
      seen = (uint64_t)(d->finished_ms - d->started_ms);
  }
  if(seen)
    return seen;
  uint64_t by_size = (uint64_t)((double)plan->rss / (1024.0 * 1024 * 1024) * 30000.0);
  return by_size > 5000 ? by_size : 5000;
}

/* "95 s" or "12 min": the time left as the note shows it. */
static void fmt_left(double s, char *buf, size_t len)
{
  if(s < 120)
    snprintf(buf, len, "%.0f s", s);
  else
    snprintf(buf, len, "%.0f min", s / 60);
}

/* Length of the wait step starting now (steps[cur]); notes why in it. */
static uint64_t wait_ms(mdp_plan_t *plan, int64_t now_ms)
{
  char left[32];
  uint64_t interval = plan->p.interval_ms;
  mdp_step_t *w = &plan->steps[plan->cur];
  if(!plan->deadline_ms)
    return interval;

  unsigned waits = 0;
  uint64_t others = 0;
  for(size_t i = plan->cur; i < plan->n_steps; i++) {
    waits += plan->steps[i].kind == MDP_STEP_WAIT;
    others += step_estimate_ms(plan, &plan->steps[i]);
  }
  int64_t spare = plan->deadline_ms - now_ms - (int64_t)others;
  uint64_t fit = spare > 0 ? (uint64_t)spare / waits : 0;
  uint64_t floor = interval < MDP_PLAN_MIN_WAIT_MS ? interval : MDP_PLAN_MIN_WAIT_MS;
  uint64_t ms = fit < interval ? fit : interval;
  if(ms < floor)
    ms = floor;
  fmt_left(plan->time_left_s, left, sizeof(left));
  if(ms < interval)
    snprintf(w->note, sizeof(w->note),
             "%.0f s instead of %.0f s: limit projected %s after the trigger; "
             "steps kept within %.0f%% of that",
             (double)ms / 1000, (double)interval / 1000, left, MDP_PLAN_FIT_SHARE * 100);
  else
    snprintf(w->note, sizeof(w->note),
             "%.0f s (CaptureInterval): fits, limit projected %s after the trigger",
             (double)ms / 1000, left);
  return ms;
}

static void advance(mdp_plan_t *plan, int64_t now_ms, mdp_actions_t *out)
{
  while(plan->state == MDP_PLAN_READY) {
    if(plan->cur >= plan->n_steps) {
      if(plan->restart_pending) {
        emit(out, MDP_ACT_SIGNAL);
        finish(plan, now_ms, "memory limit", out);
      } else {
        finish(plan, now_ms, "finished", out);
      }
      return;
    }
    mdp_step_t *s = &plan->steps[plan->cur];
    switch(s->kind) {
    case MDP_STEP_WAIT: {
      s->status = MDP_SS_RUNNING;
      s->started_ms = now_ms;
      mdp_plan_to(plan, MDP_PLAN_WAITING_TIMER);
      mdp_action_t *a = emit(out, MDP_ACT_TIMER);
      if(a) {
        a->ms = wait_ms(plan, now_ms);
        a->timer_id = ++plan->timer_id;
      }
      return;
    }
    case MDP_STEP_TRACE_STOP:
      if(!plan->tracing)
        s->kind = MDP_STEP_DUMP; /* trace_start failed: a plain dump instead */
      /* fall through */
    case MDP_STEP_DUMP: {
      mdp_plan_to(plan, MDP_PLAN_WAITING_SPACE);
      mdp_action_t *a = emit(out, MDP_ACT_CHECK_SPACE);
      if(a) {
        a->step = plan->cur;
        a->bytes = mdp_plan_dump_need(&plan->p, plan->rss);
      }
      return;
    }
    case MDP_STEP_GC_STOP:
      if(!plan->gc_active) {
        skip_step(plan, now_ms, out, "the GC profile was not started");
        plan->cur++;
        continue;
      }
      send_step(plan, now_ms, out);
      return;
    default: send_step(plan, now_ms, out); return;
    }
  }
}

void mdp_plan_begin(mdp_plan_t *plan, int64_t now_ms, mdp_actions_t *out)
{
  plan->started_ms = now_ms;
  if(plan->restart_pending && !plan->limit_ms)
    plan->limit_ms = now_ms; /* a one-dump plan for a worker at its limit */
  notify(out, MDP_NOTIFY_WARNING, "capture started: %s; RSS %.1f MiB", plan->reason,
         (double)plan->rss / (1024.0 * 1024.0));
  manifest(out);
  advance(plan, now_ms, out);
}

static void fmt_bytes(uint64_t v, char *buf, size_t len)
{
  static const char units[] = "BKMGTP";
  double d = (double)v;
  int u = 0;
  while(d >= 1024 && u < 5)
    d /= 1024, u++;
  snprintf(buf, len, u ? "%.1f%c" : "%.0f%c", d, units[u]);
}

void mdp_plan_space(mdp_plan_t *plan, int64_t now_ms, uint64_t avail, uint64_t used,
                    mdp_actions_t *out)
{
  if(plan->state != MDP_PLAN_WAITING_SPACE)
    return;
  mdp_plan_to(plan, MDP_PLAN_READY);
  uint64_t need = mdp_plan_dump_need(&plan->p, plan->rss);
  char why[256], b1[16], b2[16], b3[16], b4[16], zstd[64] = "";

  if(avail < need || avail - need < plan->p.keep_free) {
    fmt_bytes(need, b1, sizeof(b1));
    fmt_bytes(plan->p.keep_free, b2, sizeof(b2));
    fmt_bytes(avail, b3, sizeof(b3));
    fmt_bytes(plan->rss, b4, sizeof(b4));
    if(plan->p.zstd_dumps)
      snprintf(zstd, sizeof(zstd), " x %.2f, zstd%s",
               plan->p.streamed ? MDP_PLAN_ZSTD_SHARE : 1 + MDP_PLAN_ZSTD_SHARE,
               plan->p.streamed ? "" : " beside the worker's file");
    snprintf(why, sizeof(why),
             "not enough free space: dump needs %s (RSS %s x %.1f%s) + KeepFree %s, "
             "%s available",
             b1, b4, plan->p.space_factor, zstd, b2, b3);
  } else if(plan->p.max_use && used + need > plan->p.max_use) {
    fmt_bytes(need, b1, sizeof(b1));
    fmt_bytes(used, b2, sizeof(b2));
    fmt_bytes(plan->p.max_use, b3, sizeof(b3));
    snprintf(why, sizeof(why), "MaxUse %s would be exceeded: captures hold %s, the dump needs %s",
             b3, b2, b1);
  } else {
    send_step(plan, now_ms, out);
    return;
  }
  skip_step(plan, now_ms, out, why);
  step_done(plan, now_ms, out);
}

static void end_gone(mdp_plan_t *plan, int64_t now_ms, const char *end, mdp_actions_t *out)
{
  mark_rest(plan, now_ms, end);
  finish(plan, now_ms, end, out);
}

void mdp_plan_reply(mdp_plan_t *plan, int64_t now_ms, const mdp_reply_t *r, mdp_actions_t *out)
{
  if(plan->state != MDP_PLAN_IN_FLIGHT)
    return;
  mdp_step_t *s = &plan->steps[plan->cur];
  mdp_plan_to(plan, MDP_PLAN_READY);
  s->finished_ms = now_ms;
  s->bytes = r->bytes;
  s->duration_us = r->duration_us;
  s->pause_us = r->pause_us;
  snprintf(s->mode, sizeof(s->mode), "%s", r->mode ? r->mode : "");
  snprintf(s->note, sizeof(s->note), "%s", r->note ? r->note : "");

  if(r->status == MDP_REPLY_GONE) {
    s->status = MDP_SS_ERROR;
    snprintf(s->error, sizeof(s->error), "worker gone before it replied");
    plan->cur++;
    end_gone(plan, now_ms, "worker gone", out);
    return;
  }
  bool ok = r->status == MDP_REPLY_OK;
  s->status = ok ? MDP_SS_OK : MDP_SS_ERROR;
  if(!ok)
    snprintf(s->error, sizeof(s->error), "%s",
             r->error && r->error[0] ? r->error : "the worker reported an error");
  if(!ok && s->kind == MDP_STEP_HEAP_PROFILE) {
    /* extra evidence, not the capture's: said in the manifest only */
    s->status = MDP_SS_SKIPPED;
    manifest(out);
    step_done(plan, now_ms, out);
    return;
  }
  switch(s->kind) {
  case MDP_STEP_TRACE_START: plan->tracing = ok; break;
  case MDP_STEP_TRACE_STOP:
    /* The hook stops tracing before it dumps, so tracing is off either way. */
    plan->tracing = false;
    plan->dump_ok |= ok;
    break;
  case MDP_STEP_DUMP: plan->dump_ok |= ok; break;
  case MDP_STEP_GC_START: plan->gc_active = ok; break;
  case MDP_STEP_GC_STOP: plan->gc_active = false; break;
  default: break;
  }
  if(!ok) {
    char what[96];
    describe(s, what, sizeof(what));
    notify(out, MDP_NOTIFY_FAILURE, "%s failed: %s", what, s->error);
  }
  manifest(out);
  step_done(plan, now_ms, out);
}

void mdp_plan_timer(mdp_plan_t *plan, int64_t now_ms, uint64_t timer_id, mdp_actions_t *out)
{
  if(plan->state != MDP_PLAN_WAITING_TIMER || timer_id != plan->timer_id)
    return;
  mdp_step_t *s = &plan->steps[plan->cur];
  mdp_plan_to(plan, MDP_PLAN_READY);
  s->status = MDP_SS_OK;
  s->finished_ms = now_ms;
  manifest(out);
  step_done(plan, now_ms, out);
}

void mdp_plan_limit(mdp_plan_t *plan, int64_t now_ms, mdp_actions_t *out)
{
  if(plan->state == MDP_PLAN_FINISHED || plan->restart_pending)
    return;
  plan->restart_pending = true;
  plan->limit_ms = now_ms;
  /* A request in flight (or a dump waiting for its space check) finishes
   * first; its completion enters the final phase. A wait is cut short. */
  if(plan->state == MDP_PLAN_IN_FLIGHT || plan->state == MDP_PLAN_WAITING_SPACE)
    return;
  if(plan->state == MDP_PLAN_WAITING_TIMER) {
    mdp_step_t *s = &plan->steps[plan->cur];
    mdp_plan_to(plan, MDP_PLAN_READY);
    plan->timer_id++;
    s->status = MDP_SS_OK;
    s->finished_ms = now_ms;
    /* Keep why the wait was as long as it was planned to be. */
    size_t used = strlen(s->note);
    snprintf(s->note + used, sizeof(s->note) - used, "%scut short: memory limit reached",
             used ? "; " : "");
  }
  step_done(plan, now_ms, out);
}

void mdp_plan_worker_gone(mdp_plan_t *plan, int64_t now_ms, mdp_actions_t *out)
{
  if(plan->state == MDP_PLAN_FINISHED)
    return;
  if(plan->state == MDP_PLAN_IN_FLIGHT) {
    mdp_step_t *s = &plan->steps[plan->cur];
    s->status = MDP_SS_ERROR;
    s->finished_ms = now_ms;
    snprintf(s->error, sizeof(s->error), "worker gone before it replied");
    plan->cur++;
  }
  end_gone(plan, now_ms, "worker gone", out);
}

void mdp_plan_abort(mdp_plan_t *plan, int64_t now_ms, const char *why, mdp_actions_t *out)
{
  if(plan->state == MDP_PLAN_FINISHED)
    return;
  end_gone(plan, now_ms, why, out);
}
