/* Reconnect delays: doubling from BackoffMin to BackoffMax, each drawn from
 * [base/2, base] so that the workers of a host spread out. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"

static void doubles_up_to_the_max(void **state)
{
  unsigned base = 100, seen[16], n = 0;

  (void)state;
  for(int i = 0; i < 16; i++) {
    seen[n++] = base;
    base = mdh_backoff_next(base, 100, 30000);
  }
  assert_int_equal(seen[0], 100);
  assert_int_equal(seen[1], 200);
  assert_int_equal(seen[2], 400);
  assert_int_equal(seen[8], 25600);
  /* 25600 doubled would pass 30000: the max itself, and it stays there. */
  assert_int_equal(seen[9], 30000);
  assert_int_equal(seen[15], 30000);
}

static void below_the_min_starts_at_the_min(void **state)
{
  (void)state;
  assert_int_equal(mdh_backoff_next(0, 100, 30000), 200);
  assert_int_equal(mdh_backoff_next(50, 100, 30000), 200);
  /* Exactly half the max doubles onto the max. */
  assert_int_equal(mdh_backoff_next(15000, 100, 30000), 30000);
  assert_int_equal(mdh_backoff_next(15001, 100, 30000), 30000);
  /* No overflow near UINT_MAX. */
  assert_int_equal(mdh_backoff_next(0x90000000u, 100, 0xffffffffu), 0xffffffffu);
}

static void jitter_stays_in_the_upper_half(void **state)
{
  unsigned seed = 12345, lo = ~0u, hi = 0;

  (void)state;
  for(int i = 0; i < 10000; i++) {
    unsigned d = mdh_backoff_jitter(1000, &seed);
    assert_in_range(d, 500, 1000);
    lo = d < lo ? d : lo;
    hi = d > hi ? d : hi;
  }
  /* Spread over the whole range, not stuck at one end. */
  assert_true(lo < 520);
  assert_true(hi > 980);
}

static void jitter_of_tiny_bases(void **state)
{
  unsigned seed = 1;

  (void)state;
  assert_int_equal(mdh_backoff_jitter(0, &seed), 0);
  assert_int_equal(mdh_backoff_jitter(1, &seed), 1);
  for(int i = 0; i < 100; i++)
    assert_in_range(mdh_backoff_jitter(3, &seed), 1, 3);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(doubles_up_to_the_max),
      cmocka_unit_test(below_the_min_starts_at_the_min),
      cmocka_unit_test(jitter_stays_in_the_upper_half),
      cmocka_unit_test(jitter_of_tiny_bases),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
