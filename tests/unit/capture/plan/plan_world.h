/* The fake world the capture plan's tests drive a plan in (plan_world.c):
 * it answers space checks with a fixed amount, records what the plan asked
 * for, and lets the test reply or fire the timer. Shared by test_plan.c
 * (steps, errors, states), test_plan_limit.c (memory limit) and
 * test_plan_fit.c (waits fitted to the time left). */
#ifndef PLAN_WORLD_H
#define PLAN_WORLD_H

#include <stdbool.h>
#include <stdint.h>

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

/* Carry out the plan's actions (and those they lead to), checking that
 * every change of stage was legal and nothing is in flight at the signal. */
void run(world_t *w, const mdp_actions_t *acts);

/* A world around plan_text (CaptureInterval 1 s, 100 GiB free), not begun. */
void setup_world(world_t *w, const char *plan_text, bool trace);
void begin(world_t *w);
/* setup_world, then begin. */
void started(world_t *w, const char *plan_text, bool trace);
/* The worker answers the pending request with st. */
void reply(world_t *w, mdp_reply_status_t st, const char *error);
/* The pending wait is over. */
void fire_timer(world_t *w);
/* The one-dump plan a worker at its memory limit gets, begun with avail
 * bytes free. */
void started_limit_plan(world_t *w, uint64_t avail);
/* The worker reached its memory limit. */
void hit_limit(world_t *w);
/* A timer the plan no longer waits for: it asks for nothing. */
void assert_timer_ignored(world_t *w, uint64_t timer_id);
/* Drive the plan to its end, answering every request with ok. */
void drive_ok(world_t *w);

#endif
