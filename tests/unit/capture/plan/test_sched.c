/* Capture admission: one plan per worker, CaptureConcurrency with a queue,
 * CaptureCooldown per worker name, memory limit decisions. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "capture/plan/sched.h"
#include "sched_fixture.h"

#define HOUR (3600ll * 1000)

static mdp_admit_t admit(mdp_sched_t *sc, uint64_t conn, const char *name, int64_t now_ms,
                         bool manual)
{
  mdp_sched_trigger_t t = {
      .who = {.connection_id = conn}, .name = name, .now_ms = now_ms, .manual = manual};
  return mdp_sched_admit(sc, &t, why, sizeof(why));
}

static mdp_next_t next(mdp_sched_t *sc, int64_t now_ms, uint64_t *conn)
{
  return mdp_sched_next(sc, now_ms, conn, why, sizeof(why));
}

static mdp_limit_action_t limit(mdp_sched_t *sc, uint64_t conn, const char *name, int64_t now_ms)
{
  mdp_sched_trigger_t t = {.who = {.connection_id = conn}, .name = name, .now_ms = now_ms};
  return mdp_sched_limit(sc, &t, why, sizeof(why));
}

static void one_plan_per_worker(void **state)
{
  (void)state;
  mdp_sched_init(&s, 2, HOUR, false);
  assert_int_equal(admit(&s, 1, "web-1", 0, false), MDP_ADMIT_START);
  assert_int_equal(admit(&s, 1, "web-1", 10, true), MDP_ADMIT_BUSY);
  assert_non_null(strstr(why, "already runs"));
}

static void concurrency_queues_oldest_first(void **state)
{
  (void)state;
  uint64_t conn = 0;
  mdp_sched_init(&s, 1, 0, false);
  assert_int_equal(admit(&s, 1, "a", 0, false), MDP_ADMIT_START);
  assert_int_equal(admit(&s, 3, "c", 1, false), MDP_ADMIT_QUEUE);
  assert_non_null(strstr(why, "CaptureConcurrency 1"));
  assert_int_equal(admit(&s, 2, "b", 2, false), MDP_ADMIT_QUEUE);
  assert_int_equal(admit(&s, 2, "b", 3, false), MDP_ADMIT_BUSY);
  assert_non_null(strstr(why, "waits"));
  /* Nothing starts while the slot is taken. */
  assert_int_equal(next(&s, 5, &conn), MDP_NEXT_NONE);
  mdp_sched_finished(&s, 1, true);
  assert_int_equal(next(&s, 6, &conn), MDP_NEXT_START);
  assert_int_equal(conn, 3);
  assert_int_equal(next(&s, 6, &conn), MDP_NEXT_NONE);
  mdp_sched_finished(&s, 3, true);
  assert_int_equal(next(&s, 7, &conn), MDP_NEXT_START);
  assert_int_equal(conn, 2);
  assert_int_equal(s.running, 1);
}

static void concurrency_two(void **state)
{
  (void)state;
  mdp_sched_init(&s, 2, 0, false);
  assert_int_equal(admit(&s, 1, "a", 0, false), MDP_ADMIT_START);
  assert_int_equal(admit(&s, 2, "b", 0, false), MDP_ADMIT_START);
  assert_int_equal(admit(&s, 3, "c", 0, false), MDP_ADMIT_QUEUE);
}

static void cooldown_per_name(void **state)
{
  (void)state;
  mdp_sched_init(&s, 4, HOUR, false);
  assert_int_equal(admit(&s, 1, "web", 0, false), MDP_ADMIT_START);
  mdp_sched_finished(&s, 1, true);
  mdp_sched_gone(&s, 1);
  /* The restarted worker has a new connection ID but the same name. */
  assert_int_equal(admit(&s, 2, "web", HOUR / 2, false), MDP_ADMIT_COOLDOWN);
  assert_non_null(strstr(why, "CaptureCooldown"));
  assert_non_null(strstr(why, "1800 s"));
  /* Another name is not affected, an operator is not held back. */
  assert_int_equal(admit(&s, 3, "jobs", HOUR / 2, false), MDP_ADMIT_START);
  assert_int_equal(admit(&s, 2, "web", HOUR / 2, true), MDP_ADMIT_START);
  mdp_sched_finished(&s, 2, true);
  assert_int_equal(admit(&s, 2, "web", HOUR / 2 + HOUR, false), MDP_ADMIT_START);
}

/* The identity of a worker named "billing-api" of uid with this
 * certificate into out (MDP_SCHED_ID_MAX bytes). */
static void billing_api(char *out, uid_t uid, const char *certificate)
{
  mdp_worker_id who = {.name = "billing-api", .uid = uid};
  mdp_sched_identity(out, MDP_SCHED_ID_MAX, &who, certificate);
}

/* Issue 11, finding 6: a worker that claims another's name under another
 * uid or certificate shares no cooldown (and no limit decision) with it. */
static void cooldown_per_identity(void **state)
{
  (void)state;
  char real[MDP_SCHED_ID_MAX], impostor[MDP_SCHED_ID_MAX], other_cert[MDP_SCHED_ID_MAX],
      again[MDP_SCHED_ID_MAX];
  billing_api(real, 1000, "memdiag worker");
  billing_api(impostor, 65534, "memdiag worker");
  billing_api(other_cert, 1000, "other app");
  billing_api(again, 1000, "memdiag worker");
  mdp_sched_init(&s, 4, HOUR, true);
  assert_int_equal(admit(&s, 1, impostor, 0, false), MDP_ADMIT_START);
  mdp_sched_finished(&s, 1, true);
  assert_int_equal(admit(&s, 2, real, 1000, false), MDP_ADMIT_START);
  mdp_sched_finished(&s, 2, true);
  assert_int_equal(admit(&s, 3, other_cert, 2000, false), MDP_ADMIT_START);
  mdp_sched_finished(&s, 3, true);
  /* The same identity on a new connection is in its cooldown. */
  assert_int_equal(admit(&s, 4, again, 3000, false), MDP_ADMIT_COOLDOWN);
  assert_non_null(strstr(why, "'billing-api' (uid 1000, certificate 'memdiag worker')"));
  /* At the limit, a worker whose name alone was captured gets its dump
   * first, not a bare restart. */
  mdp_sched_t t;
  mdp_sched_init(&t, 4, HOUR, true);
  assert_int_equal(admit(&t, 1, impostor, 0, false), MDP_ADMIT_START);
  mdp_sched_finished(&t, 1, true);
  assert_int_equal(limit(&t, 2, real, 1000), MDP_LIMIT_DUMP);
  mdp_sched_free(&t);
}

static void queued_then_cooldown_is_dropped(void **state)
{
  (void)state;
  uint64_t conn = 0;
  mdp_sched_init(&s, 1, HOUR, false);
  assert_int_equal(admit(&s, 1, "web", 0, false), MDP_ADMIT_START);
  assert_int_equal(admit(&s, 2, "jobs", 1, false), MDP_ADMIT_QUEUE);
  assert_int_equal(admit(&s, 3, "jobs", 2, false), MDP_ADMIT_QUEUE);
  mdp_sched_finished(&s, 1, true);
  assert_int_equal(next(&s, 3, &conn), MDP_NEXT_START);
  assert_int_equal(conn, 2);
  mdp_sched_finished(&s, 2, true);
  /* "jobs" was captured meanwhile: the second "jobs" trigger is dropped. */
  assert_int_equal(next(&s, 4, &conn), MDP_NEXT_DROPPED);
  assert_int_equal(conn, 3);
  assert_non_null(strstr(why, "CaptureCooldown"));
  assert_int_equal(next(&s, 4, &conn), MDP_NEXT_NONE);
  assert_int_equal(mdp_sched_find(&s, 3)->state, MDP_CONN_IDLE);
}

static void gone_drops_queued(void **state)
{
  (void)state;
  mdp_sched_init(&s, 1, 0, false);
  assert_int_equal(admit(&s, 1, "a", 0, false), MDP_ADMIT_START);
  assert_int_equal(admit(&s, 2, "b", 0, false), MDP_ADMIT_QUEUE);
  assert_true(mdp_sched_gone(&s, 2));
  mdp_sched_finished(&s, 1, false);
  uint64_t conn = 0;
  assert_int_equal(next(&s, 1, &conn), MDP_NEXT_NONE);
  /* A running worker that goes frees its slot. */
  assert_int_equal(admit(&s, 4, "d", 5, false), MDP_ADMIT_START);
  assert_false(mdp_sched_gone(&s, 4));
  assert_int_equal(s.running, 0);
}

static void limit_decisions(void **state)
{
  (void)state;
  mdp_sched_init(&s, 1, HOUR, true);
  /* No plan, no dump yet: take one, ignoring the concurrency slot. */
  assert_int_equal(admit(&s, 9, "busy", 0, false), MDP_ADMIT_START);
  assert_int_equal(limit(&s, 1, "a", 0), MDP_LIMIT_DUMP);
  assert_int_equal(s.running, 2);
  /* Handled once only. */
  assert_int_equal(limit(&s, 1, "a", 1), MDP_LIMIT_IGNORE);
  /* A running plan is told. */
  assert_int_equal(limit(&s, 9, "busy", 1), MDP_LIMIT_PLAN);
  /* A worker whose plan finished with a dump is signalled at once. */
  assert_int_equal(admit(&s, 2, "b", 0, true), MDP_ADMIT_QUEUE);
  mdp_sched_finished(&s, 9, true);
  uint64_t conn;
  assert_int_equal(next(&s, 2, &conn), MDP_NEXT_NONE); /* slot: limit dump of 1 */
  mdp_sched_finished(&s, 1, true);
  assert_int_equal(next(&s, 2, &conn), MDP_NEXT_START);
  mdp_sched_finished(&s, 2, true);
  assert_int_equal(limit(&s, 2, "b", 3), MDP_LIMIT_SIGNAL);
  assert_non_null(strstr(why, "already captured"));
  /* Same name in cooldown, no dump of this connection: signal without one. */
  mdp_sched_gone(&s, 2);
  assert_int_equal(limit(&s, 5, "b", 4), MDP_LIMIT_SIGNAL);
  assert_non_null(strstr(why, "CaptureCooldown"));
}

static void limit_ignored_without_restart(void **state)
{
  (void)state;
  mdp_sched_init(&s, 1, HOUR, false);
  assert_int_equal(limit(&s, 1, "a", 0), MDP_LIMIT_IGNORE);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(one_plan_per_worker, teardown),
      cmocka_unit_test_teardown(concurrency_queues_oldest_first, teardown),
      cmocka_unit_test_teardown(concurrency_two, teardown),
      cmocka_unit_test_teardown(cooldown_per_name, teardown),
      cmocka_unit_test_teardown(cooldown_per_identity, teardown),
      cmocka_unit_test_teardown(queued_then_cooldown_is_dropped, teardown),
      cmocka_unit_test_teardown(gone_drops_queued, teardown),
      cmocka_unit_test_teardown(limit_decisions, teardown),
      cmocka_unit_test_teardown(limit_ignored_without_restart, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
