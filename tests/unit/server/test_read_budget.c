/* The server's read path serves one connection a bounded number of frames
 * per call, and says when input is left, so that the loop turns (accepts,
 * timers, other peers) between bursts of a fast sender. Runs the plugin's
 * own hello.c/conn.c through the fuzz harness's in-memory connection
 * (tests/fuzz/server_harness.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "server_harness.h"

static void a_burst_is_served_in_several_turns(void **state)
{
  unsigned first = 0, calls = 0;
  int more = 0;

  (void)state;
  assert_int_equal(md_fuzz_server_burst(256, &first, &more, &calls), 0);
  /* not all 256 in one call: the rest is left for later turns */
  assert_true(first > 0);
  assert_true(first < 256);
  assert_true(more);
  assert_true(calls > 1);
}

static void a_small_burst_is_served_at_once(void **state)
{
  unsigned first = 0, calls = 0;
  int more = 1;

  (void)state;
  assert_int_equal(md_fuzz_server_burst(10, &first, &more, &calls), 0);
  assert_int_equal(first, 10);
  assert_false(more);
  assert_int_equal(calls, 1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(a_burst_is_served_in_several_turns),
      cmocka_unit_test(a_small_burst_is_served_at_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
