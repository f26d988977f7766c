/* Capture plan state machine: step order, files, timers, errors, worker
 * gone, disk full, memory limit and restart ordering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "capture/plan/plan.h"

#define DEFAULT_PLAN "trace_start dump gc_start wait scheduler threads gc_stop trace_stop wait dump"
#define GiB          (1024ull * 1024 * 1024)
#define MiB          (1024ull * 1024)

/* A fake world around one plan: it answers space checks with a fixed
 * amount, records what the plan asked for, and lets the test reply. */
typedef struct world {
  mdp_plan_t plan;
  int64_t now;
  uint64_t avail, used;
  char log[4096]; /* "send:dump(heap-1.json) timer signal done:ok ..." */
  int notify_failure, notify_warning, notify_okay, manifests;
  uint64_t pending_timer, pending_ms;
  uint64_t timer_ms[8]; /* length of each wait the plan asked for */
  int n_timers;
  int64_t reply_delay; /* ms a worker takes to answer */
  bool send_pending, signalled, done;
} world_t;

static void run(world_t *w, const mdp_actions_t *acts);

static void logf_(world_t *w, const char *fmt, const char *a)
{
  size_t l = strlen(w->log);
  snprintf(w->log + l, sizeof(w->log) - l, fmt, a);
}

static void run(world_t *w, const mdp_actions_t *acts)
{
  /* every change of stage the plan made so far was a legal one */
  assert_int_equal(w->plan.refused, 0);
  for(size_t i = 0; i < acts->n; i++) {
    const mdp_action_t *a = &acts->a[i];
    mdp_actions_t more = {.n = 0};
    switch(a->kind) {
    case MDP_ACT_CHECK_SPACE:
      logf_(w, "%s", "space ");
      mdp_plan_space(&w->plan, w->now, w->avail, w->used, &more);
      run(w, &more);
      break;
    case MDP_ACT_SEND: {
      char buf[96];
      const mdp_step_t *s = &w->plan.steps[a->step];
      snprintf(buf, sizeof(buf), "%s(%s) ", mdp_step_name(s->kind), s->file);
      logf_(w, "send:%s", buf);
      w->send_pending = true;
      break;
    }
    case MDP_ACT_TIMER:
      /* Without a deadline every wait is CaptureInterval; with one, never
       * longer. */
      if(!w->plan.deadline_ms)
        assert_int_equal(a->ms, w->plan.p.interval_ms);
      assert_true(a->ms <= w->plan.p.interval_ms);
      logf_(w, "%s", "timer ");
      w->pending_timer = a->timer_id;
      w->pending_ms = a->ms;
      if(w->n_timers < 8)
        w->timer_ms[w->n_timers++] = a->ms;
      break;
    case MDP_ACT_MANIFEST: w->manifests++; break;
    case MDP_ACT_NOTIFY:
      if(a->severity == MDP_NOTIFY_FAILURE)
        w->notify_failure++;
      else if(a->severity == MDP_NOTIFY_WARNING)
        w->notify_warning++;
      else
        w->notify_okay++;
      break;
    case MDP_ACT_SIGNAL:
      /* Restart ordering: nothing may be in flight when the signal goes. */
      assert_false(w->send_pending);
      assert_int_not_equal(w->plan.state, MDP_PLAN_IN_FLIGHT);
      logf_(w, "%s", "signal ");
      w->signalled = true;
      break;
    case MDP_ACT_DONE:
      logf_(w, "done:%s ", a->complete ? "complete" : "incomplete");
      w->done = true;
      break;
    }
  }
}

static void setup_world(world_t *w, const char *plan_text, bool trace)
{
  mdp_step_kind_t kinds[32];
  size_t n;
  char err[256];
  memset(w, 0, sizeof(*w));
  assert_int_equal(mdp_plan_parse(plan_text, kinds, 32, &n, err, sizeof(err)), 0);
  mdp_plan_params_t p = {.interval_ms = 1000,
                         .space_factor = 3.0,
                         .keep_free = GiB,
                         .max_use = 0,
                         .trace_allocations = trace};
  mdp_plan_sample_t samples[] = {{100.0, 100 * MiB}, {110.0, 120 * MiB}};
  mdp_plan_trigger_t t = {
      .reason = "capture-size", .samples = samples, .n_samples = 2, .rss = 120 * MiB};
  mdp_plan_init(&w->plan, &p, kinds, n, &t);
  w->now = 1000000;
  w->avail = 100 * GiB;
  w->reply_delay = 10;
}

static void begin(world_t *w)
{
  mdp_actions_t a = {.n = 0};
  mdp_plan_begin(&w->plan, w->now, &a);
  run(w, &a);
}

static void reply(world_t *w, mdp_reply_status_t st, const char *error)
{
  mdp_actions_t a = {.n = 0};
  mdp_reply_t r = {.status = st,
                   .error = error,
                   .bytes = 4096,
                   .duration_us = 2500,
                   .pause_us = 300,
                   .mode = "fork"};
  assert_true(w->send_pending);
  w->send_pending = false;
  w->now += w->reply_delay;
  mdp_plan_reply(&w->plan, w->now, &r, &a);
  run(w, &a);
}

static void fire_timer(world_t *w)
{
  mdp_actions_t a = {.n = 0};
  assert_true(w->pending_timer != 0);
  uint64_t id = w->pending_timer;
  w->pending_timer = 0;
  w->now += (int64_t)w->pending_ms;
  mdp_plan_timer(&w->plan, w->now, id, &a);
  run(w, &a);
}

static void started(world_t *w, const char *plan_text, bool trace)
{
  setup_world(w, plan_text, trace);
  begin(w);
}

/* The one-dump plan a worker at its memory limit gets, begun with avail
 * bytes free. */
static void started_limit_plan(world_t *w, uint64_t avail)
{
  mdp_plan_params_t p = {.interval_ms = 1000, .space_factor = 3.0, .keep_free = GiB};

  memset(w, 0, sizeof(*w));
  mdp_plan_init_limit(&w->plan, &p, 100 * MiB);
  w->avail = avail;
  begin(w);
}

/* The worker reached its memory limit. */
static void hit_limit(world_t *w)
{
  mdp_actions_t a = {.n = 0};
  mdp_plan_limit(&w->plan, w->now, &a);
  run(w, &a);
}

/* A timer the plan no longer waits for: it asks for nothing. */
static void assert_timer_ignored(world_t *w, uint64_t timer_id)
{
  mdp_actions_t a = {.n = 0};
  mdp_plan_timer(&w->plan, w->now, timer_id, &a);
  assert_int_equal(a.n, 0);
}

/* Drive the plan to its end, answering every request with ok. */
static void drive_ok(world_t *w)
{
  while(!w->done) {
    if(w->send_pending)
      reply(w, MDP_REPLY_OK, NULL);
    else if(w->pending_timer)
      fire_timer(w);
    else
      fail_msg("plan stalled: %s", w->log);
  }
}

static void default_plan_without_tracing(void **state)
{
  (void)state;
  world_t w;
  started(&w, DEFAULT_PLAN, false);
  drive_ok(&w);
  assert_string_equal(w.log, "space send:dump(heap-1.json) send:gc_start() timer "
                             "send:scheduler(scheduler.txt) send:threads(threads.txt) "
                             "send:gc_stop(gc.txt) space send:dump(heap-2.json) timer "
                             "space send:dump(heap-3.json) done:complete ");
  assert_true(w.plan.complete);
  assert_int_equal(w.plan.n_steps, 9);
  assert_int_equal(w.notify_warning, 1);
  assert_int_equal(w.notify_okay, 1);
  assert_int_equal(w.notify_failure, 0);
  assert_false(w.signalled);
  assert_string_equal(w.plan.end, "finished");
  for(size_t i = 0; i < w.plan.n_steps; i++)
    assert_int_equal(w.plan.steps[i].status, MDP_SS_OK);
  assert_int_equal(w.plan.steps[0].pause_us, 300);
  assert_string_equal(w.plan.steps[0].mode, "fork");
}

static void default_plan_with_tracing(void **state)
{
  (void)state;
  world_t w;
  started(&w, DEFAULT_PLAN, true);
  drive_ok(&w);
  assert_string_equal(w.log, "send:trace_start() space send:dump(heap-1.json) send:gc_start() "
                             "timer send:scheduler(scheduler.txt) send:threads(threads.txt) "
                             "send:gc_stop(gc.txt) space send:trace_stop(heap-2.json) timer "
                             "space send:dump(heap-3.json) done:complete ");
  assert_int_equal(w.plan.n_steps, 10);
  assert_false(w.plan.tracing);
}

/* A heap profile after each dump (issue 22); one the worker cannot give
 * (an older hook, sampling off) is skipped and the capture stays complete. */
static void heap_profiles_follow_each_dump_and_never_fail_the_capture(void **state)
{
  (void)state;
  world_t w;
  mdp_step_kind_t kinds[32];
  size_t n;
  char err[256];
  memset(&w, 0, sizeof(w));
  assert_int_equal(mdp_plan_parse("dump wait dump", kinds, 32, &n, err, sizeof(err)), 0);
  mdp_plan_params_t p = {
      .interval_ms = 1000, .space_factor = 3.0, .keep_free = GiB, .heap_profiles = true};
  mdp_plan_trigger_t t = {.reason = "capture-size", .rss = 120 * MiB};
  mdp_plan_init(&w.plan, &p, kinds, n, &t);
  w.now = 1000000;
  w.avail = 100 * GiB;
  w.reply_delay = 10;
  begin(&w);
  while(!w.done) {
    if(w.send_pending) {
      bool refused = w.plan.cur == 1; /* the first profile */
      reply(&w, refused ? MDP_REPLY_ERROR : MDP_REPLY_OK, refused ? "unsupported" : NULL);
    } else if(w.pending_timer) {
      fire_timer(&w);
    } else {
      fail_msg("plan stalled: %s", w.log);
    }
  }
  assert_string_equal(w.log, "space send:dump(heap-1.json) send:heap_profile(heap_profile-1.pb.gz) "
                             "timer space send:dump(heap-2.json) "
                             "send:heap_profile(heap_profile-2.pb.gz) done:complete ");
  assert_true(w.plan.complete);
  assert_int_equal(w.plan.steps[1].kind, MDP_STEP_HEAP_PROFILE);
  assert_int_equal(w.plan.steps[1].status, MDP_SS_SKIPPED);
  assert_string_equal(w.plan.steps[1].error, "unsupported");
  assert_int_equal(w.plan.steps[4].status, MDP_SS_OK);
  assert_int_equal(w.notify_failure, 0);
  assert_int_equal(w.notify_okay, 1);
}

static void refused_trace_start_makes_plain_dump(void **state)
{
  (void)state;
  world_t w;
  started(&w, DEFAULT_PLAN, true);
  reply(&w, MDP_REPLY_ERROR, "refused: allocation tracing is already active");
  drive_ok(&w);
  /* A stop without our start would be refused: the second dump is plain. */
  assert_non_null(strstr(w.log, "send:dump(heap-2.json)"));
  assert_null(strstr(w.log, "trace_stop"));
  assert_false(w.plan.complete);
  assert_int_equal(w.plan.steps[0].status, MDP_SS_ERROR);
  assert_string_equal(w.plan.steps[0].error, "refused: allocation tracing is already active");
  assert_int_equal(w.notify_failure, 2); /* the step, then the incomplete end */
  assert_int_equal(w.notify_okay, 0);
}

static void step_error_continues(void **state)
{
  (void)state;
  world_t w;
  started(&w, "dump scheduler threads dump", false);
  reply(&w, MDP_REPLY_OK, NULL);
  reply(&w, MDP_REPLY_ERROR, "error: no fiber scheduler");
  drive_ok(&w);
  assert_string_equal(w.log, "space send:dump(heap-1.json) send:scheduler(scheduler.txt) "
                             "send:threads(threads.txt) space send:dump(heap-2.json) "
                             "done:incomplete ");
  assert_int_equal(w.plan.steps[1].status, MDP_SS_ERROR);
  assert_int_equal(w.plan.steps[3].status, MDP_SS_OK);
}

static void gc_stop_skipped_when_start_failed(void **state)
{
  (void)state;
  world_t w;
  started(&w, "gc_start dump gc_stop", false);
  reply(&w, MDP_REPLY_ERROR, "error: boom");
  drive_ok(&w);
  assert_int_equal(w.plan.steps[2].status, MDP_SS_SKIPPED);
  assert_null(strstr(w.log, "gc_stop"));
}

static void worker_gone_mid_plan(void **state)
{
  (void)state;
  world_t w;
  started(&w, DEFAULT_PLAN, false);
  reply(&w, MDP_REPLY_OK, NULL); /* heap-1 */
  reply(&w, MDP_REPLY_OK, NULL); /* gc_start */
  assert_true(w.pending_timer != 0);
  mdp_actions_t gone = {.n = 0};
  mdp_plan_worker_gone(&w.plan, w.now, &gone);
  run(&w, &gone);
  assert_true(w.done);
  assert_false(w.plan.complete);
  assert_string_equal(w.plan.end, "worker gone");
  assert_int_equal(w.plan.steps[0].status, MDP_SS_OK);
  assert_int_equal(w.plan.steps[1].status, MDP_SS_OK);
  for(size_t i = 2; i < w.plan.n_steps; i++)
    assert_int_equal(w.plan.steps[i].status, MDP_SS_NOT_RUN);
  assert_false(w.signalled);
  /* A timer that fires afterwards changes nothing. */
  size_t before = strlen(w.log);
  assert_timer_ignored(&w, w.pending_timer);
  assert_int_equal(strlen(w.log), before);
}

static void worker_gone_reply_during_dump(void **state)
{
  (void)state;
  world_t w;
  started(&w, "dump wait dump", false);
  reply(&w, MDP_REPLY_GONE, "connection closed");
  assert_true(w.done);
  assert_int_equal(w.plan.steps[0].status, MDP_SS_ERROR);
  assert_string_equal(w.plan.steps[0].error, "worker gone before it replied");
  assert_int_equal(w.plan.steps[1].status, MDP_SS_NOT_RUN);
  assert_int_equal(w.plan.steps[2].status, MDP_SS_NOT_RUN);
}

static void disk_full_skips_dump(void **state)
{
  (void)state;
  world_t w;
  setup_world(&w, "dump scheduler dump", false);
  w.avail = 2 * GiB; /* KeepFree 1 GiB + 3 x 120 MiB fits */
  begin(&w);
  reply(&w, MDP_REPLY_OK, NULL);
  w.avail = GiB + 100 * MiB; /* no longer fits */
  reply(&w, MDP_REPLY_OK, NULL);
  assert_true(w.done);
  assert_int_equal(w.plan.steps[2].status, MDP_SS_SKIPPED);
  assert_non_null(strstr(w.plan.steps[2].error, "not enough free space"));
  assert_non_null(strstr(w.plan.steps[2].error, "KeepFree 1.0G"));
  assert_int_equal(w.notify_failure, 2); /* skip, then incomplete end */
  assert_false(w.plan.complete);
}

static void max_use_skips_dump(void **state)
{
  (void)state;
  world_t w;
  setup_world(&w, "dump", false);
  w.plan.p.max_use = 500 * MiB;
  w.used = 200 * MiB; /* + 360 MiB needed > 500 MiB */
  begin(&w);
  assert_true(w.done);
  assert_int_equal(w.plan.steps[0].status, MDP_SS_SKIPPED);
  assert_non_null(strstr(w.plan.steps[0].error, "MaxUse"));
}

static void stale_timer_ignored(void **state)
{
  (void)state;
  world_t w;
  started(&w, "dump wait dump", false);
  reply(&w, MDP_REPLY_OK, NULL);
  assert_timer_ignored(&w, w.pending_timer + 7);
  drive_ok(&w);
  assert_true(w.plan.complete);
}

static void limit_during_dump_signals_after_reply(void **state)
{
  (void)state;
  world_t w;
  started(&w, DEFAULT_PLAN, false);
  assert_true(w.send_pending); /* heap-1 in flight */
  hit_limit(&w);
  assert_false(w.signalled); /* not while the dump runs */
  assert_int_equal(w.plan.limit_ms, w.now);
  reply(&w, MDP_REPLY_OK, NULL);
  assert_true(w.signalled);
  assert_true(w.done);
  assert_string_equal(w.log, "space send:dump(heap-1.json) signal done:incomplete ");
  assert_string_equal(w.plan.end, "memory limit");
  assert_int_equal(w.plan.steps[1].status, MDP_SS_NOT_RUN);
  assert_string_equal(w.plan.steps[1].error, "memory limit reached");
}

static void limit_during_wait_with_dump_signals_now(void **state)
{
  (void)state;
  world_t w;
  started(&w, DEFAULT_PLAN, false);
  reply(&w, MDP_REPLY_OK, NULL); /* heap-1 */
  reply(&w, MDP_REPLY_OK, NULL); /* gc_start, then wait */
  hit_limit(&w);
  assert_true(w.signalled);
  assert_string_equal(w.plan.steps[2].note, "cut short: memory limit reached");
  /* The cut-short wait's timer is stale now. */
  assert_timer_ignored(&w, w.pending_timer);
}

static void limit_before_any_dump_takes_one(void **state)
{
  (void)state;
  world_t w;
  started(&w, "gc_start wait dump gc_stop", false);
  assert_true(w.send_pending); /* gc_start */
  hit_limit(&w);
  reply(&w, MDP_REPLY_OK, NULL); /* gc_start done: final dump next */
  assert_false(w.signalled);
  assert_true(w.send_pending);
  reply(&w, MDP_REPLY_OK, NULL);
  assert_true(w.signalled);
  assert_string_equal(w.log, "send:gc_start() space send:dump(heap-2.json) signal "
                             "done:incomplete ");
}

static void limit_with_tracing_stops_trace(void **state)
{
  (void)state;
  world_t w;
  started(&w, DEFAULT_PLAN, true);
  reply(&w, MDP_REPLY_OK, NULL); /* trace_start */
  reply(&w, MDP_REPLY_OK, NULL); /* heap-1 */
  reply(&w, MDP_REPLY_OK, NULL); /* gc_start; waiting */
  hit_limit(&w);
  assert_false(w.signalled);
  reply(&w, MDP_REPLY_OK, NULL); /* trace_stop writes the tracing dump */
  assert_true(w.signalled);
  assert_non_null(strstr(w.log, "send:trace_stop(heap-4.json) signal"));
}

static void limit_plan_one_dump_then_signal(void **state)
{
  (void)state;
  world_t w;
  started_limit_plan(&w, 10 * GiB);
  assert_false(w.signalled);
  assert_int_equal(w.plan.limit_ms, w.now);
  reply(&w, MDP_REPLY_OK, NULL);
  assert_string_equal(w.log, "space send:dump(heap-1.json) signal done:complete ");
}

static void limit_plan_signals_even_when_dump_skipped(void **state)
{
  (void)state;
  world_t w;
  started_limit_plan(&w, GiB / 2);
  assert_true(w.signalled);
  assert_int_equal(w.plan.steps[0].status, MDP_SS_SKIPPED);
}

/* ---- plans that fit the time left (mdp_plan_fit) ---- */

static void setup_fit(world_t *w, uint64_t interval_ms, double time_left_s)
{
  setup_world(w, DEFAULT_PLAN, false);
  w->plan.p.interval_ms = interval_ms;
  mdp_plan_fit(&w->plan, w->now, time_left_s);
}

/* Two minutes left: both waits shrink so that the third dump is done
 * within half of them, and capture.json's notes say by how much and why. */
static void fit_shrinks_waits_to_half_the_time_left(void **state)
{
  (void)state;
  world_t w;
  setup_fit(&w, 60000, 120);
  int64_t t0 = w.now;
  w.reply_delay = 3000; /* each dump and profile step takes 3 s */
  begin(&w);
  drive_ok(&w);
  assert_true(w.plan.complete);
  assert_int_equal(w.n_timers, 2);
  assert_true(w.timer_ms[0] >= MDP_PLAN_MIN_WAIT_MS && w.timer_ms[0] < 60000);
  assert_true(w.timer_ms[1] >= MDP_PLAN_MIN_WAIT_MS && w.timer_ms[1] < 60000);
  printf("# 120 s left: waits %.1f s and %.1f s, plan over after %.1f s\n", w.timer_ms[0] / 1e3,
         w.timer_ms[1] / 1e3, (double)(w.plan.finished_ms - t0) / 1e3);
  assert_true(w.plan.finished_ms - t0 <= 60000);
  assert_true(w.plan.finished_ms - t0 >= 50000); /* the time is used, not wasted */
  const char *note = w.plan.steps[2].note;
  assert_non_null(strstr(note, "instead of 60 s: limit projected 2 min after the trigger"));
  assert_non_null(strstr(note, "within 50%"));
}

/* Less time than the shortest useful wait: 10 s each, never less. */
static void fit_never_below_ten_seconds(void **state)
{
  (void)state;
  world_t w;
  setup_fit(&w, 60000, 20);
  begin(&w);
  drive_ok(&w);
  assert_int_equal(w.n_timers, 2);
  assert_int_equal(w.timer_ms[0], MDP_PLAN_MIN_WAIT_MS);
  assert_int_equal(w.timer_ms[1], MDP_PLAN_MIN_WAIT_MS);
  assert_non_null(strstr(w.plan.steps[7].note, "10 s instead of 60 s: limit projected 20 s after"));
}

/* A CaptureInterval shorter than the floor is kept, never lengthened. */
static void fit_keeps_short_interval(void **state)
{
  (void)state;
  world_t w;
  setup_fit(&w, 5000, 20);
  begin(&w);
  drive_ok(&w);
  assert_int_equal(w.timer_ms[0], 5000);
  assert_int_equal(w.timer_ms[1], 5000);
}

/* Hours left: CaptureInterval, and the note says it fits. Unknown time
 * left (the detector's -1, or nonsense): nothing changes, no note. */
static void fit_leaves_waits_when_time_allows(void **state)
{
  (void)state;
  world_t w;
  setup_fit(&w, 60000, 6 * 3600);
  begin(&w);
  drive_ok(&w);
  assert_int_equal(w.timer_ms[0], 60000);
  assert_int_equal(w.timer_ms[1], 60000);
  assert_non_null(strstr(w.plan.steps[2].note, "60 s (CaptureInterval): fits"));

  const double unknown[] = {-1, 0, NAN, INFINITY};
  for(size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
    setup_fit(&w, 60000, unknown[i]);
    assert_int_equal(w.plan.deadline_ms, 0);
    begin(&w);
    drive_ok(&w);
    assert_int_equal(w.timer_ms[0], 60000);
    assert_string_equal(w.plan.steps[2].note, "");
  }
}

/* Dumps slower than expected: the second wait gives back what they took. */
static void fit_second_wait_absorbs_slow_dumps(void **state)
{
  (void)state;
  world_t w;
  setup_fit(&w, 60000, 180);
  int64_t t0 = w.now;
  w.reply_delay = 10;
  begin(&w);
  while(w.n_timers < 1)
    reply(&w, MDP_REPLY_OK, NULL);
  fire_timer(&w);
  w.reply_delay = 5000; /* the second half of the plan runs slow */
  while(w.n_timers < 2)
    reply(&w, MDP_REPLY_OK, NULL);
  drive_ok(&w);
  assert_true(w.timer_ms[1] < w.timer_ms[0]);
  assert_true(w.plan.finished_ms - t0 <= 90000);
}

/* The memory limit cuts a fitted wait short: both reasons stay. */
static void fit_note_survives_limit(void **state)
{
  (void)state;
  world_t w;
  setup_fit(&w, 60000, 120);
  begin(&w);
  while(!w.pending_timer)
    reply(&w, MDP_REPLY_OK, NULL);
  hit_limit(&w);
  assert_non_null(strstr(w.plan.steps[2].note, "instead of 60 s"));
  assert_non_null(strstr(w.plan.steps[2].note, "; cut short: memory limit reached"));
}

static void parse_errors(void **state)
{
  (void)state;
  mdp_step_kind_t k[32];
  size_t n;
  char err[256];
  assert_int_equal(mdp_plan_parse("dump bogus", k, 32, &n, err, sizeof(err)), -EINVAL);
  assert_non_null(strstr(err, "bogus"));
  assert_int_equal(mdp_plan_parse("gc_start dump", k, 32, &n, err, sizeof(err)), -EINVAL);
  assert_non_null(strstr(err, "gc_start without a later gc_stop"));
  assert_int_equal(mdp_plan_parse("dump trace_stop", k, 32, &n, err, sizeof(err)), -EINVAL);
  assert_int_equal(mdp_plan_parse("wait scheduler", k, 32, &n, err, sizeof(err)), -EINVAL);
  assert_non_null(strstr(err, "no heap dump"));
  assert_int_equal(mdp_plan_parse("", k, 32, &n, err, sizeof(err)), -EINVAL);
  assert_int_equal(mdp_plan_parse(" dump,  wait\tdump ", k, 32, &n, err, sizeof(err)), 0);
  assert_int_equal(n, 3);
}

/* The stage changes only along the machine's edges: a change it does not
 * allow is refused, counted, and leaves the stage as it was. */
static void illegal_transitions_are_refused(void **state)
{
  (void)state;
  mdp_plan_t p;
  memset(&p, 0, sizeof(p));
  assert_int_equal(p.state, MDP_PLAN_READY);
  assert_false(mdp_plan_to(&p, MDP_PLAN_READY)); /* no stage follows itself */
  assert_true(mdp_plan_to(&p, MDP_PLAN_IN_FLIGHT));
  /* a request in flight cannot start waiting for a timer or space */
  assert_false(mdp_plan_to(&p, MDP_PLAN_WAITING_TIMER));
  assert_false(mdp_plan_to(&p, MDP_PLAN_WAITING_SPACE));
  assert_int_equal(p.state, MDP_PLAN_IN_FLIGHT);
  assert_int_equal(p.refused, 3);
  assert_true(mdp_plan_to(&p, MDP_PLAN_READY));
  assert_true(mdp_plan_to(&p, MDP_PLAN_WAITING_SPACE));
  assert_true(mdp_plan_to(&p, MDP_PLAN_FINISHED));
  assert_true(mdp_plan_is_finished(&p));
  /* FINISHED is final */
  assert_false(mdp_plan_to(&p, MDP_PLAN_READY));
  assert_false(mdp_plan_to(&p, MDP_PLAN_IN_FLIGHT));
  assert_int_equal(p.state, MDP_PLAN_FINISHED);
  assert_int_equal(p.refused, 5);
  assert_string_equal(mdp_plan_state_name(p.state), "finished");
}

/* A finished plan ignores every later event: no action, same stage. */
static void finished_plan_ignores_events(void **state)
{
  (void)state;
  world_t w;
  setup_world(&w, "dump", false);
  mdp_actions_t acts = {.n = 0};
  mdp_plan_begin(&w.plan, w.now, &acts);
  run(&w, &acts);
  assert_int_equal(w.plan.state, MDP_PLAN_IN_FLIGHT);
  acts.n = 0;
  mdp_plan_abort(&w.plan, w.now, "shutdown", &acts);
  assert_true(mdp_plan_is_finished(&w.plan));
  acts.n = 0;
  mdp_reply_t r = {.status = MDP_REPLY_OK};
  mdp_plan_reply(&w.plan, w.now, &r, &acts);
  mdp_plan_timer(&w.plan, w.now, w.plan.timer_id, &acts);
  mdp_plan_space(&w.plan, w.now, GiB, 0, &acts);
  mdp_plan_worker_gone(&w.plan, w.now, &acts);
  assert_int_equal(acts.n, 0);
  assert_int_equal(w.plan.state, MDP_PLAN_FINISHED);
  assert_int_equal(w.plan.refused, 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(default_plan_without_tracing),
      cmocka_unit_test(heap_profiles_follow_each_dump_and_never_fail_the_capture),
      cmocka_unit_test(default_plan_with_tracing),
      cmocka_unit_test(refused_trace_start_makes_plain_dump),
      cmocka_unit_test(step_error_continues),
      cmocka_unit_test(gc_stop_skipped_when_start_failed),
      cmocka_unit_test(worker_gone_mid_plan),
      cmocka_unit_test(worker_gone_reply_during_dump),
      cmocka_unit_test(disk_full_skips_dump),
      cmocka_unit_test(max_use_skips_dump),
      cmocka_unit_test(stale_timer_ignored),
      cmocka_unit_test(limit_during_dump_signals_after_reply),
      cmocka_unit_test(limit_during_wait_with_dump_signals_now),
      cmocka_unit_test(limit_before_any_dump_takes_one),
      cmocka_unit_test(limit_with_tracing_stops_trace),
      cmocka_unit_test(limit_plan_one_dump_then_signal),
      cmocka_unit_test(limit_plan_signals_even_when_dump_skipped),
      cmocka_unit_test(parse_errors),
      cmocka_unit_test(fit_shrinks_waits_to_half_the_time_left),
      cmocka_unit_test(fit_never_below_ten_seconds),
      cmocka_unit_test(fit_keeps_short_interval),
      cmocka_unit_test(fit_leaves_waits_when_time_allows),
      cmocka_unit_test(fit_second_wait_absorbs_slow_dumps),
      cmocka_unit_test(fit_note_survives_limit),
      cmocka_unit_test(illegal_transitions_are_refused),
      cmocka_unit_test(finished_plan_ignores_events),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
