/* The per-uid cap on unread frames (plugin/server/bufcap.c) counts every
 * uid: 200 uids below the cap close nothing, and one over it behind 199
 * others (until issue 24 only the first 64 uids a turn saw were counted)
 * loses its biggest connections, just enough of them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bufcap.h"

#define LIMIT ((size_t)65 << 20)
#define UIDS  200

static mdp_bufcap_entry e[UIDS + 8];

/* uid 1000 + i, one connection each, holding `bytes`. */
static size_t fill(size_t bytes)
{
  for(size_t i = 0; i < UIDS; i++)
    e[i] = (mdp_bufcap_entry){.uid = (uid_t)(1000 + i), .bytes = bytes, .conn = &e[i]};
  return UIDS;
}

static void many_uids_under_the_cap_close_nothing(void **state)
{
  (void)state;
  size_t n = fill(LIMIT); /* each at its cap, 200 x 65 MiB in all */
  assert_int_equal(mdp_bufcap_pick(e, n, LIMIT), 0);
  for(size_t i = 0; i < n; i++)
    assert_int_equal(e[i].close, 0);
}

static void the_last_of_200_uids_is_capped(void **state)
{
  (void)state;
  size_t n = fill(1);
  size_t mib = (size_t)1 << 20, closed_bytes = 0, kept = 0;
  /* 8 connections of uid 65534, after 200 others: 15..22 MiB, 148 MiB */
  for(size_t k = 0; k < 8; k++)
    e[n++] = (mdp_bufcap_entry){.uid = 65534, .bytes = (15 + k) * mib};
  /* the biggest go until it holds 65 MiB or less: 22, 21, 20, 19, 18 */
  assert_int_equal(mdp_bufcap_pick(e, n, LIMIT), 5);
  for(size_t i = 0; i < n; i++) {
    if(e[i].uid != 65534) {
      assert_int_equal(e[i].close, 0);
    } else if(e[i].close) {
      assert_true(e[i].bytes >= 18 * mib);
      assert_true(e[i].uid_had > LIMIT);
      closed_bytes += e[i].bytes;
    } else {
      kept += e[i].bytes;
    }
  }
  assert_int_equal(closed_bytes, 100 * mib);
  assert_int_equal(kept, (15 + 16 + 17) * mib);
}

static void nothing_to_count(void **state)
{
  (void)state;
  assert_int_equal(mdp_bufcap_pick(e, 0, LIMIT), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(many_uids_under_the_cap_close_nothing),
      cmocka_unit_test(the_last_of_200_uids_is_capped),
      cmocka_unit_test(nothing_to_count),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
