/* The capture plan tests' fake world; see plan_world.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "plan_world.h"

static void logf_(world_t *w, const char *fmt, const char *a)
{
  size_t l = strlen(w->log);
  snprintf(w->log + l, sizeof(w->log) - l, fmt, a);
}

void run(world_t *w, const mdp_actions_t *acts)
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

void setup_world(world_t *w, const char *plan_text, bool trace)
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
  mdp_sample samples[] = {{100.0, 100 * MiB}, {110.0, 120 * MiB}};
  mdp_plan_trigger_t t = {
      .reason = "capture-size", .samples = samples, .n_samples = 2, .rss = 120 * MiB};
  mdp_plan_init(&w->plan, &p, kinds, n, &t);
  w->now = 1000000;
  w->avail = 100 * GiB;
  w->reply_delay = 10;
}

void begin(world_t *w)
{
  mdp_actions_t a = {.n = 0};
  mdp_plan_begin(&w->plan, w->now, &a);
  run(w, &a);
}

void reply(world_t *w, mdp_reply_status_t st, const char *error)
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

void fire_timer(world_t *w)
{
  mdp_actions_t a = {.n = 0};
  assert_true(w->pending_timer != 0);
  uint64_t id = w->pending_timer;
  w->pending_timer = 0;
  w->now += (int64_t)w->pending_ms;
  mdp_plan_timer(&w->plan, w->now, id, &a);
  run(w, &a);
}

void started(world_t *w, const char *plan_text, bool trace)
{
  setup_world(w, plan_text, trace);
  begin(w);
}

/* The one-dump plan a worker at its memory limit gets, begun with avail
 * bytes free. */
void started_limit_plan(world_t *w, uint64_t avail)
{
  mdp_plan_params_t p = {.interval_ms = 1000, .space_factor = 3.0, .keep_free = GiB};

  memset(w, 0, sizeof(*w));
  mdp_plan_init_limit(&w->plan, &p, 100 * MiB);
  w->avail = avail;
  begin(w);
}

/* The worker reached its memory limit. */
void hit_limit(world_t *w)
{
  mdp_actions_t a = {.n = 0};
  mdp_plan_limit(&w->plan, w->now, &a);
  run(w, &a);
}

/* A timer the plan no longer waits for: it asks for nothing. */
void assert_timer_ignored(world_t *w, uint64_t timer_id)
{
  mdp_actions_t a = {.n = 0};
  mdp_plan_timer(&w->plan, w->now, timer_id, &a);
  assert_int_equal(a.n, 0);
}

/* Drive the plan to its end, answering every request with ok. */
void drive_ok(world_t *w)
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
