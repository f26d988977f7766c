/* Capture plans fitted to the time left (mdp_plan_fit): shorter waits,
 * their floor, and the notes capture.json keeps. */
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

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fit_shrinks_waits_to_half_the_time_left),
      cmocka_unit_test(fit_never_below_ten_seconds),
      cmocka_unit_test(fit_keeps_short_interval),
      cmocka_unit_test(fit_leaves_waits_when_time_allows),
      cmocka_unit_test(fit_second_wait_absorbs_slow_dumps),
      cmocka_unit_test(fit_note_survives_limit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
