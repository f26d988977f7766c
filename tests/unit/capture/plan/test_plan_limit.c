/* Capture plan at a memory limit: the signal after the dump in flight, a
 * dump taken first, tracing stopped, and the one-dump limit plan. */
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

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(limit_during_dump_signals_after_reply),
      cmocka_unit_test(limit_during_wait_with_dump_signals_now),
      cmocka_unit_test(limit_before_any_dump_takes_one),
      cmocka_unit_test(limit_with_tracing_stops_trace),
      cmocka_unit_test(limit_plan_one_dump_then_signal),
      cmocka_unit_test(limit_plan_signals_even_when_dump_skipped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
