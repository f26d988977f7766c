/* memory_limit 0 (AnalyzeMaxMemory 0, `memdiagctl analyze --max-memory 0`)
 * is no cap, as docs/configuration.md says: the analysis runs, and an
 * allocation the system refuses is reported as that, never as "needs more
 * than its memory limit of 0 MiB". Large callocs are made to fail here
 * (--wrap=calloc): the first dump's object set is sized from its file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/analysis.h"
#include "dump_data.h"
#include "mdt.h"

void *__real_calloc(size_t n, size_t size);
static size_t fail_from; /* callocs of at least this many bytes fail; 0: none */
void *__wrap_calloc(size_t n, size_t size)
{
  return fail_from && n * size >= fail_from ? NULL : __real_calloc(n, size);
}

static char err[512];

static void no_cap_runs(void **s)
{
  mdp_analysis_result res;
  const char *paths[3] = {data("basic-1.json"), data("basic-2.json"), data("basic-3.json")};
  mdp_analysis_opts opts = {.memory_limit = 0};
  (void)s;
  assert_int_equal(mdp_analysis_run(paths, 3, &opts, &res, err, sizeof(err)), 0);
  assert_true(res.n_groups > 0);
  mdp_analysis_result_free(&res);
}

/* basic-1.json followed by 4 MiB of spaces: the object set sized from the
 * file is some 256 KiB, refused by the system. */
static void refused_allocation_says_so(void **s)
{
  char big[128], line[4096];
  mdp_analysis_result res;
  (void)s;
  snprintf(big, sizeof(big), "%s/big-1.json", mdt_dir);
  FILE *in = fopen(data("basic-1.json"), "r"), *out = fopen(big, "w");
  assert_non_null(in);
  assert_non_null(out);
  size_t n;
  while((n = fread(line, 1, sizeof(line), in)) > 0)
    assert_int_equal(fwrite(line, 1, n, out), n);
  memset(line, ' ', sizeof(line));
  for(int i = 0; i < 1024; i++)
    assert_int_equal(fwrite(line, 1, sizeof(line), out), sizeof(line));
  fclose(in);
  assert_int_equal(fclose(out), 0);
  const char *paths[3] = {big, data("basic-2.json"), data("basic-3.json")};
  mdp_analysis_opts opts = {.memory_limit = 0};
  fail_from = 128 << 10;
  int rc = mdp_analysis_run(paths, 3, &opts, &res, err, sizeof(err));
  fail_from = 0;
  assert_int_equal(rc, -ENOMEM);
  assert_non_null(strstr(err, "big-1.json: out of memory (no memory limit was set)"));
  assert_null(strstr(err, "memory limit of"));
  /* A limit it is over is still named. */
  opts.memory_limit = 64 << 10;
  assert_int_equal(mdp_analysis_run(paths, 3, &opts, &res, err, sizeof(err)), -ENOMEM);
  assert_non_null(strstr(err, "needs more than its memory limit of 0 MiB"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(no_cap_runs),
      cmocka_unit_test_setup_teardown(refused_allocation_says_so, mdt_dir_setup, mdt_dir_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
