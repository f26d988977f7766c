/* The fair capture queue (issue 24, finding 7): one plan per process
 * whatever names it registered, round robin per uid among waiting plans. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "capture/plan/sched.h"
#include "sched_fixture.h"

#define NOBODY 65534ul

/* A trigger of connection conn, from process pid of uid; its name is made
 * from conn, so no two connections share a cooldown. */
static mdp_admit_t admit(uint64_t conn, long pid, unsigned long uid)
{
  char name[32];
  snprintf(name, sizeof(name), "w%llu", (unsigned long long)conn);
  mdp_sched_trigger_t t = {.who = {.connection_id = conn, .pid = (pid_t)pid, .uid = (uid_t)uid},
                           .name = name};
  return mdp_sched_admit(&s, &t, why, sizeof(why));
}

static uint64_t next_started(void)
{
  uint64_t conn = 0;
  assert_int_equal(mdp_sched_next(&s, 0, &conn, why, sizeof(why)), MDP_NEXT_START);
  return conn;
}

static void one_plan_per_process(void **state)
{
  (void)state;
  mdp_sched_init(&s, 4, 0, false);
  assert_int_equal(admit(1, 100, NOBODY), MDP_ADMIT_START);
  /* Another name the same process registered is the same worker. */
  assert_int_equal(admit(2, 100, NOBODY), MDP_ADMIT_BUSY);
  assert_non_null(strstr(why, "already runs for this process (pid 100, connection 1)"));
  assert_non_null(strstr(why, "one plan per process"));
  assert_int_equal(s.running, 1);
  /* Another process of the same uid is another worker. */
  assert_int_equal(admit(3, 101, NOBODY), MDP_ADMIT_START);
  /* Once the plan ends, the process may be captured again, on any of its
   * connections. */
  mdp_sched_finished(&s, 1, true);
  assert_int_equal(admit(2, 100, NOBODY), MDP_ADMIT_START);
}

static void one_queued_plan_per_process(void **state)
{
  (void)state;
  mdp_sched_init(&s, 1, 0, false);
  assert_int_equal(admit(9, 300, 0), MDP_ADMIT_START);
  assert_int_equal(admit(1, 100, NOBODY), MDP_ADMIT_QUEUE);
  for(uint64_t c = 2; c <= 8; c++) {
    assert_int_equal(admit(c, 100, NOBODY), MDP_ADMIT_BUSY);
    assert_non_null(strstr(why, "already waits for this process (pid 100, connection 1)"));
  }
  /* The process leaves a name: its queued trigger goes, the others may
   * queue one. */
  assert_true(mdp_sched_gone(&s, 1));
  assert_int_equal(admit(2, 100, NOBODY), MDP_ADMIT_QUEUE);
}

/* Finding 7 itself: eight plans of uid nobody queued first; the honest
 * worker of another uid starts after the one running, not after eight. */
static void another_uid_waits_one_plan(void **state)
{
  (void)state;
  mdp_sched_init(&s, 1, 0, false);
  assert_int_equal(admit(1, 201, NOBODY), MDP_ADMIT_START);
  for(uint64_t c = 2; c <= 8; c++)
    assert_int_equal(admit(c, 200 + (long)c, NOBODY), MDP_ADMIT_QUEUE);
  assert_int_equal(admit(9, 300, 1000), MDP_ADMIT_QUEUE);
  mdp_sched_finished(&s, 1, false);
  assert_int_equal(next_started(), 9);
  /* Then nobody's, oldest first. */
  mdp_sched_finished(&s, 9, true);
  assert_int_equal(next_started(), 2);
  mdp_sched_finished(&s, 2, false);
  assert_int_equal(next_started(), 3);
}

static void uids_take_turns(void **state)
{
  (void)state;
  uint64_t order[6];
  mdp_sched_init(&s, 1, 0, false);
  assert_int_equal(admit(1, 101, 1), MDP_ADMIT_START);
  assert_int_equal(admit(2, 102, 1), MDP_ADMIT_QUEUE);
  assert_int_equal(admit(3, 103, 1), MDP_ADMIT_QUEUE);
  assert_int_equal(admit(4, 201, 2), MDP_ADMIT_QUEUE);
  assert_int_equal(admit(5, 202, 2), MDP_ADMIT_QUEUE);
  assert_int_equal(admit(6, 301, 3), MDP_ADMIT_QUEUE);
  order[0] = 1;
  for(size_t i = 1; i < 6; i++) {
    mdp_sched_finished(&s, order[i - 1], true);
    order[i] = next_started();
  }
  /* uid 1 started first: uids 2 and 3 (never started) go next, oldest
   * first, then uid 1 again, then uid 2: 1 4 6 2 5 3. */
  const uint64_t want[6] = {1, 4, 6, 2, 5, 3};
  for(size_t i = 0; i < 6; i++)
    assert_int_equal(order[i], want[i]);
}

/* A uid whose plans all ended is forgotten: it is not held back later for
 * the turns it had then. */
static void idle_uid_forgotten(void **state)
{
  (void)state;
  mdp_sched_init(&s, 1, 0, false);
  for(uint64_t c = 1; c <= 3; c++) {
    assert_int_equal(admit(c, 100 + (long)c, 1), MDP_ADMIT_START);
    mdp_sched_finished(&s, c, true);
  }
  assert_int_equal(admit(10, 200, 2), MDP_ADMIT_START);
  assert_int_equal(s.n_uids, 1); /* uid 1 has nothing queued or running */
  assert_int_equal(admit(11, 201, 2), MDP_ADMIT_QUEUE);
  assert_int_equal(admit(4, 104, 1), MDP_ADMIT_QUEUE);
  mdp_sched_finished(&s, 10, true);
  assert_int_equal(next_started(), 4);
}

static void unknown_process_shares_nothing(void **state)
{
  (void)state;
  mdp_sched_init(&s, 4, 0, false);
  assert_int_equal(admit(1, 0, 0), MDP_ADMIT_START);
  assert_int_equal(admit(2, 0, 0), MDP_ADMIT_START);
}

static mdp_limit_action_t limit(uint64_t conn, long pid)
{
  char name[32];
  snprintf(name, sizeof(name), "w%llu", (unsigned long long)conn);
  mdp_sched_trigger_t t = {.who = {.connection_id = conn, .pid = (pid_t)pid, .uid = (uid_t)NOBODY},
                           .name = name};
  return mdp_sched_limit(&s, &t, why, sizeof(why));
}

/* At MemoryLimit, the process's plan on one connection takes its dump and
 * restart: its other connections start none. */
static void limit_one_dump_per_process(void **state)
{
  (void)state;
  mdp_sched_init(&s, 1, 0, true);
  assert_int_equal(admit(1, 100, NOBODY), MDP_ADMIT_START);
  assert_int_equal(limit(2, 100), MDP_LIMIT_IGNORE);
  assert_int_equal(limit(1, 100), MDP_LIMIT_PLAN);
  assert_int_equal(s.running, 1);
  /* A queued plan likewise: it takes the dump when the limit reaches it. */
  assert_int_equal(admit(3, 101, NOBODY), MDP_ADMIT_QUEUE);
  assert_int_equal(limit(4, 101), MDP_LIMIT_IGNORE);
  assert_int_equal(limit(3, 101), MDP_LIMIT_DUMP);
  /* Not marked as handled: once the process has no plan, the next sample
   * of that connection takes the dump. */
  mdp_sched_finished(&s, 1, false);
  mdp_sched_gone(&s, 1);
  assert_int_equal(limit(2, 100), MDP_LIMIT_DUMP);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(one_plan_per_process, teardown),
      cmocka_unit_test_teardown(one_queued_plan_per_process, teardown),
      cmocka_unit_test_teardown(another_uid_waits_one_plan, teardown),
      cmocka_unit_test_teardown(uids_take_turns, teardown),
      cmocka_unit_test_teardown(idle_uid_forgotten, teardown),
      cmocka_unit_test_teardown(unknown_process_shares_nothing, teardown),
      cmocka_unit_test_teardown(limit_one_dump_per_process, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
