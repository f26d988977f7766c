/* The allocation sampler's table (worker-hook/ruby/ext/memdiag_hook/
 * sample_table.c): objects found, replaced and removed by address against a
 * plain reference array, through growth and backward-shift deletion;
 * filtering (objects moved by a compaction, freed ones dropped); strings, locations and sites
 * interned once. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sample_table.h"

enum { N = 20000 };

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static int put(mdh_stab *t, uintptr_t addr, uint32_t site, uint32_t generation)
{
  mdh_stab_entry e = {
      .addr = addr, .object_id = addr / 8, .site = site, .generation = generation, .weight = 1};
  return mdh_stab_insert(t, &e);
}

static int has(mdh_stab *t, uintptr_t addr, mdh_stab_entry *found)
{
  static mdh_stab_entry all[N * 2];
  size_t n = mdh_stab_snapshot(t, all, N * 2), i;
  for(i = 0; i < n; i++)
    if(all[i].addr == addr) {
      if(found)
        *found = all[i];
      return 1;
    }
  return 0;
}

static void objects_match_a_reference_through_inserts_and_removes(void **state)
{
  mdh_stab *t = mdh_stab_new();
  static uintptr_t ref[N];
  static int live[N];
  size_t i, n_live = 0;

  (void)state;
  /* distinct addresses as Ruby's heap has them (40-byte slots), scattered */
  for(i = 0; i < N; i++)
    ref[i] = 0x7f0000000000u + (uintptr_t)((i * 7919u) % 1000003u) * 40;
  for(i = 0; i < N; i++) {
    assert_int_equal(put(t, ref[i], (uint32_t)i, 7), 0);
    live[i] = 1;
    n_live++;
    if(i % 3 == 0) { /* free an earlier one */
      size_t j = (size_t)(next() % (i + 1));
      assert_int_equal(mdh_stab_remove(t, ref[j]), live[j]);
      n_live -= (size_t)live[j];
      live[j] = 0;
    }
  }
  assert_int_equal(mdh_stab_live(t), n_live);
  for(i = 0; i < N; i++) {
    int r = mdh_stab_remove(t, ref[i]);
    assert_int_equal(r, live[i]);
    if(r && i % 1000 == 0)
      assert_false(has(t, ref[i], NULL));
  }
  assert_int_equal(mdh_stab_live(t), 0);
  assert_int_equal(mdh_stab_remove(t, ref[0]), 0);
  mdh_stab_free(t);
}

static void an_address_reused_replaces_its_entry(void **state)
{
  mdh_stab *t = mdh_stab_new();
  mdh_stab_entry e;
  (void)state;
  assert_int_equal(put(t, 0x1000, 1, 3), 0);
  assert_int_equal(put(t, 0x1000, 2, 9), 0);
  assert_int_equal(mdh_stab_live(t), 1);
  assert_true(has(t, 0x1000, &e));
  assert_int_equal(e.site, 2);
  assert_int_equal(e.generation, 9);
  assert_int_equal(put(t, 0, 1, 1), -EINVAL);
  mdh_stab_free(t);
}

/* half the objects move (to where no object was), every third is freed */
static int compact_and_free(mdh_stab_entry *e, void *arg)
{
  if((e->addr / 40) % 3 == 0)
    return 0;
  if((e->addr / 40) % 2)
    e->addr += *(uintptr_t *)arg;
  return 1;
}

static void filter_follows_moved_objects_and_drops_freed_ones(void **state)
{
  mdh_stab *t = mdh_stab_new();
  uintptr_t delta = 0x100000000u, i;
  size_t moved, dropped, n_moved = 0, n_dropped = 0;
  (void)state;
  for(i = 1; i <= 1000; i++) {
    assert_int_equal(put(t, i * 40, (uint32_t)i, 1), 0);
    n_dropped += i % 3 == 0;
    n_moved += i % 3 != 0 && i % 2;
  }
  assert_int_equal(mdh_stab_filter(t, compact_and_free, &delta, &moved, &dropped), 0);
  assert_int_equal(moved, n_moved);
  assert_int_equal(dropped, n_dropped);
  assert_int_equal(mdh_stab_live(t), 1000 - n_dropped);
  for(i = 1; i <= 1000; i++) {
    uintptr_t now = i % 2 ? i * 40 + delta : i * 40;
    assert_int_equal(mdh_stab_remove(t, now), i % 3 != 0);
  }
  assert_int_equal(mdh_stab_live(t), 0);
  mdh_stab_free(t);
}

static void sites_and_strings_are_interned_once(void **state)
{
  mdh_stab *t = mdh_stab_new();
  mdh_stab_frame a[2] = {{"app.rb", 6, "leak", 4, 12}, {"app.rb", 6, "<main>", 6, 30}};
  mdh_stab_frame b[2] = {{"app.rb", 6, "leak", 4, 13}, {"app.rb", 6, "<main>", 6, 30}};
  uint32_t s1, s2, s3, id;
  const uint32_t *locs;
  size_t n, len;
  (void)state;
  assert_int_equal(mdh_stab_site(t, a, 2, &s1), 0);
  assert_int_equal(mdh_stab_site(t, b, 2, &s2), 0);
  assert_int_equal(mdh_stab_site(t, a, 2, &s3), 0);
  assert_int_equal(s1, s3);
  assert_int_not_equal(s1, s2);
  assert_int_equal(mdh_stab_n_sites(t), 2);
  assert_int_equal(mdh_stab_n_locs(t), 3);    /* leak:12, leak:13, <main>:30 */
  assert_int_equal(mdh_stab_n_strings(t), 3); /* app.rb, leak, <main> */
  locs = mdh_stab_site_locs(t, s2, &n);
  assert_int_equal(n, 2);
  assert_int_equal(mdh_stab_location(t, locs[0])->line, 13);
  assert_string_equal(mdh_stab_string(t, mdh_stab_location(t, locs[1])->label, &len), "<main>");
  assert_int_equal(len, 6);
  assert_int_equal(mdh_stab_intern(t, "leak", 4, &id), 0);
  assert_int_equal(mdh_stab_n_strings(t), 3);
  assert_string_equal(mdh_stab_string(t, id, NULL), "leak");
  assert_null(mdh_stab_site_locs(t, 99, &n));
  assert_null(mdh_stab_string(t, 99, NULL));
  assert_true(mdh_stab_bytes(t) > 0);
  mdh_stab_free(t);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(objects_match_a_reference_through_inserts_and_removes),
      cmocka_unit_test(an_address_reused_replaces_its_entry),
      cmocka_unit_test(filter_follows_moved_objects_and_drops_freed_ones),
      cmocka_unit_test(sites_and_strings_are_interned_once),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
