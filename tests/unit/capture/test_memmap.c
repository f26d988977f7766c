/* A worker's memory map by kind (memmap.h): a smaps file of a Ruby worker
 * (tests/data/smaps) summed per kind, and this process's own map. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/memmap.h"

static char *slurp(const char *path)
{
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  char *buf = calloc(1, 1 << 16);
  assert_non_null(buf);
  fread(buf, 1, (1 << 16) - 1, f);
  fclose(f);
  return buf;
}

static void test_kinds(void **s)
{
  mdp_memmap_t m;
  (void)s;
  char *text = slurp(MEMDIAG_SMAPS_DIR "/ruby-worker.smaps");
  assert_int_equal(mdp_memmap_parse(text, &m), 0);
  assert_int_equal(m.mappings, 7);
  assert_int_equal(m.file, 600u << 10);
  assert_int_equal(m.heap, 3400u << 10);
  assert_int_equal(m.anon, (30000u + 16) << 10);
  assert_int_equal(m.stack, 40u << 10);
  assert_int_equal(m.other, 8u << 10);
  assert_int_equal(m.rss, (600u + 3400 + 30000 + 16 + 40 + 8) << 10);
  assert_true(m.read);
  free(text);
  assert_int_equal(mdp_memmap_parse("not a map\n", &m), -EINVAL);
  assert_false(m.read);
}

static void test_own_process(void **s)
{
  mdp_memmap_t m;
  (void)s;
  assert_int_equal(mdp_memmap_read(getpid(), &m), 0);
  assert_true(m.rss > 0);
  assert_true(m.file > 0); /* this test program is a file */
  assert_int_equal(m.rss, m.heap + m.anon + m.file + m.stack + m.other);
  assert_int_equal(mdp_memmap_read(0, &m), -ESRCH);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kinds),
      cmocka_unit_test(test_own_process),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
