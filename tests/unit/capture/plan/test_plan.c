/* Capture plan state machine: step order, files, timers, errors, worker
 * gone, disk full, stale timers, parsing and the plan's states (the memory
 * limit: test_plan_limit.c; waits fitted to the time left: test_plan_fit.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "plan_world.h"

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
      cmocka_unit_test(parse_errors),
      cmocka_unit_test(illegal_transitions_are_refused),
      cmocka_unit_test(finished_plan_ignores_events),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
