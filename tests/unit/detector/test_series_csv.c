/* The csv series reader on files as collectd writes them and on broken
 * ones: each error names the file and the line. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "detector/series_csv.h"
#include "mdt.h"

static const char *const dir = mdt_dir; /* mdt_dir_setup */
static char path[256];

static const char *write_file(const char *text)
{
  snprintf(path, sizeof(path), "%s/series.csv", dir);
  mdt_write_text(path, text);
  return path;
}

/* Reads the whole file; returns the number of samples or the error. */
static int read_all(const char *text, mdp_series_csv *r, double *ts, uint64_t *vs, int max)
{
  int n = 0, rc = mdp_series_csv_open(r, write_file(text));
  if(rc)
    return rc;
  mdp_sample s;
  while((rc = mdp_series_csv_next(r, &s)) == 1) {
    if(n < max) {
      ts[n] = s.time;
      vs[n] = s.value;
    }
    n++;
  }
  mdp_series_csv_close(r);
  return rc ? rc : n;
}

static void test_collectd_file(void **s)
{
  (void)s;
  mdp_series_csv r;
  double ts[8];
  uint64_t vs[8];
  int n = read_all("epoch,value\n1790000000.000,317102470.000000\r\n\n1790000010.000,nan\n"
                   "1790000020.500,3.1e8\n",
                   &r, ts, vs, 8);
  assert_int_equal(n, 2); /* the nan sample is a gap, not an error */
  assert_true(ts[0] == 1790000000.0);
  assert_int_equal(vs[0], 317102470ull);
  assert_true(ts[1] == 1790000020.5);
  assert_int_equal(vs[1], 310000000ull);
}

static void expect_error(const char *text, const char *line_and_msg)
{
  mdp_series_csv r;
  double ts[1];
  uint64_t vs[1];
  char want[512];
  assert_int_equal(read_all(text, &r, ts, vs, 1), -EINVAL);
  snprintf(want, sizeof(want), "%s:%s", path, line_and_msg);
  if(strncmp(r.err, want, strlen(want)) != 0)
    fail_msg("got \"%s\", want \"%s...\"", r.err, want);
}

static void test_errors_name_the_line(void **s)
{
  (void)s;
  expect_error("", " empty file");
  expect_error("1790000000,100\n", "1: expected the header line \"epoch,value\"");
  expect_error("epoch,rx,tx\n1,2,3\n", "1: expected 2 columns (epoch,value), the header has 3");
  expect_error("epoch,value\n1,100\n2,abc\n", "3: invalid value \"abc\"");
  expect_error("epoch,value\n1,100\n2,-5\n", "3: invalid value \"-5\"");
  expect_error("epoch,value\n1,100\nnoon,100\n", "3: invalid time \"noon\"");
  expect_error("epoch,value\n1,100\n2,100,7\n", "3: expected \"epoch,value\"");
  expect_error("epoch,value\n1,100\n2\n", "3: expected \"epoch,value\"");
}

static void test_missing_file(void **s)
{
  (void)s;
  mdp_series_csv r;
  assert_int_equal(mdp_series_csv_open(&r, "/nonexistent/trace.csv"), -ENOENT);
  assert_string_equal(r.err, "/nonexistent/trace.csv: cannot open: No such file or directory");
  mdp_series_csv_close(&r);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_collectd_file),
      cmocka_unit_test(test_errors_name_the_line),
      cmocka_unit_test(test_missing_file),
  };
  return cmocka_run_group_tests(tests, mdt_dir_setup, mdt_dir_teardown);
}
