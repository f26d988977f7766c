/* The one units parser: every spelling the configuration keys and replay
 * accept, what they refuse, and errors that name the key and the value. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "keys/units.h"

static char err[512];

#define B(k, lo, hi) ((mdp_units_bounds){.key = (k), .min = (lo), .max = (hi)})

static double parse_ok(mdp_units_kind kind, const char *text)
{
  double v = -1;
  err[0] = '\0';
  assert_int_equal(mdp_units_parse(kind, text, B("Key", 0, MDP_UNITS_NO_MAX), &v, err, sizeof(err)),
                   0);
  return v;
}

static void parse_bad(mdp_units_kind kind, const char *text)
{
  double v = 42;
  err[0] = '\0';
  assert_int_equal(mdp_units_parse(kind, text, B("Key", 0, MDP_UNITS_NO_MAX), &v, err, sizeof(err)),
                   -EINVAL);
  assert_true(v == 42); /* left alone */
  assert_non_null(strstr(err, "Key \""));
}

static void sizes(void **s)
{
  static const struct {
    const char *text;
    double bytes;
  } ok[] = {
      {"0", 0},
      {"1073741824", 1073741824.0},
      {"10B", 10},
      {"10 b", 10},
      {"64K", 65536},
      {"64k", 65536},
      {"64KB", 65536},
      {"64KiB", 65536},
      {"64kib", 65536},
      {"512M", 536870912.0},
      {"512MiB", 536870912.0},
      {"1.5G", 1610612736.0},
      {"1 G", 1073741824.0},
      {"1GB", 1073741824.0},
      {"2T", 2199023255552.0},
      {"2TiB", 2199023255552.0},
      {" \t10M \t", 10485760},
  };
  (void)s;
  for(size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
    assert_true(parse_ok(MDP_UNITS_SIZE, ok[i].text) == ok[i].bytes);
}

static void bad_sizes(void **s)
{
  static const char *bad[] = {"",      "G",   "-1G", "+1G",   "1X",    "1e9",
                              "0x10",  "inf", "nan", "1 G G", "1KiBs", "99999999999T",
                              "1.2.3", "1Ki", ".",   "1/s",   "1,000", "１"};
  (void)s;
  for(size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    parse_bad(MDP_UNITS_SIZE, bad[i]);
  assert_non_null(strstr(err, "is not a size"));
}

static void durations(void **s)
{
  static const struct {
    const char *text;
    double secs;
  } ok[] = {
      {"0", 0},           {"30", 30},           {"1.5", 1.5},
      {"500ms", 0.5},     {"250 msec", 0.25},   {"2 milliseconds", 0.002},
      {"30s", 30},        {"30 sec", 30},       {"1 second", 1},
      {"2 seconds", 2},   {"10m", 600},         {"10min", 600},
      {"1 minute", 60},   {"90 minutes", 5400}, {"2h", 7200},
      {"1 hour", 3600},   {"3 HOURS", 10800},   {"1d", 86400},
      {"1 day", 86400},   {"2 days", 172800},   {"1.5h", 5400},
      {" 30min\t", 1800},
  };
  (void)s;
  for(size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
    assert_true(parse_ok(MDP_UNITS_DURATION, ok[i].text) == ok[i].secs);
}

static void bad_durations(void **s)
{
  static const char *bad[] = {"",    "soon", "1 fortnight", "5mo",   "5 secs", "-1s",
                              "1e3", "1s2",  "s",           "1 h h", "1w"};
  (void)s;
  for(size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    parse_bad(MDP_UNITS_DURATION, bad[i]);
  assert_non_null(strstr(err, "is not a duration"));
}

static void rates(void **s)
{
  (void)s;
  assert_true(parse_ok(MDP_UNITS_RATE, "1000") == 1000);
  assert_true(parse_ok(MDP_UNITS_RATE, "2M/min") == 2.0 * 1048576 / 60);
  assert_true(parse_ok(MDP_UNITS_RATE, "10MiB/min") == 10.0 * 1048576 / 60);
  assert_true(parse_ok(MDP_UNITS_RATE, "512K/h") == 512.0 * 1024 / 3600);
  assert_true(parse_ok(MDP_UNITS_RATE, "1 G / day") == 1073741824.0 / 86400);
  assert_true(parse_ok(MDP_UNITS_RATE, "100B/s") == 100);
  assert_true(parse_ok(MDP_UNITS_RATE, "1M/ms") == 1048576.0 * 1000);
  parse_bad(MDP_UNITS_RATE, "10M/fortnight");
  parse_bad(MDP_UNITS_RATE, "fast");
  parse_bad(MDP_UNITS_RATE, "2M/"); /* a per without its unit */
  parse_bad(MDP_UNITS_RATE, "2M/5min");
  assert_non_null(strstr(err, "is not a rate"));
}

static void fractions(void **s)
{
  double v;
  (void)s;
  assert_true(parse_ok(MDP_UNITS_FRACTION, "0.9") == 0.9);
  assert_true(parse_ok(MDP_UNITS_FRACTION, "80%") == 0.8);
  assert_true(parse_ok(MDP_UNITS_FRACTION, "80 %") == 0.8);
  assert_true(parse_ok(MDP_UNITS_FRACTION, "0") == 0);
  assert_int_equal(
      mdp_units_parse(MDP_UNITS_FRACTION, "120%", B("NearLimit", 0, 1), &v, err, sizeof(err)),
      -EINVAL);
  assert_string_equal(err, "NearLimit \"120%\" is not a fraction between 0 and 1 (0 to 1, or a "
                           "percentage: 0.9, 90%)");
  parse_bad(MDP_UNITS_FRACTION, "%");
  parse_bad(MDP_UNITS_FRACTION, "0.9%%");
}

static void numbers_and_counts(void **s)
{
  unsigned n = 7;
  (void)s;
  assert_true(parse_ok(MDP_UNITS_NUMBER, "2.5") == 2.5);
  parse_bad(MDP_UNITS_NUMBER, "1e1");
  parse_bad(MDP_UNITS_NUMBER, "2x");
  assert_int_equal(mdp_units_count("1024", B("MaxConnections", 1, 65536), &n, err, sizeof(err)), 0);
  assert_int_equal(n, 1024);
  assert_int_equal(mdp_units_count("0", B("MaxConnections", 1, 65536), &n, err, sizeof(err)),
                   -EINVAL);
  assert_int_equal(n, 1024);
  assert_non_null(strstr(err, "MaxConnections \"0\" is not a whole number between 1 and 65536"));
  assert_int_equal(mdp_units_count("1.5", B("MaxConnections", 1, 65536), &n, err, sizeof(err)),
                   -EINVAL);
  assert_int_equal(mdp_units_count("-1", B("MaxConnections", 1, 65536), &n, err, sizeof(err)),
                   -EINVAL);
}

/* Bounds are written in units the user can paste back. */
static void ranges_in_messages(void **s)
{
  uint64_t b = 1, ms = 1;
  (void)s;
  assert_int_equal(
      mdp_units_size("12X", B("MaxFrameSize", 4096, 1024u * 1024u * 1024u), &b, err, sizeof(err)),
      -EINVAL);
  assert_non_null(strstr(err, "MaxFrameSize \"12X\" is not a size between 4KiB and 1GiB ("));
  assert_int_equal(mdp_units_size("1K", B("MaxFrameSize", 4096, 1u << 30), &b, err, sizeof(err)),
                   -EINVAL);
  assert_int_equal(b, 1);
  assert_int_equal(mdp_units_size("64K", B("MaxFrameSize", 4096, 1u << 30), &b, err, sizeof(err)),
                   0);
  assert_int_equal(b, 65536);
  assert_int_equal(mdp_units_ms("soon", B("Interval", 0.01, 86400), &ms, err, sizeof(err)),
                   -EINVAL);
  assert_non_null(strstr(err, "Interval \"soon\" is not a duration between 10ms and 1d ("));
  assert_int_equal(mdp_units_ms("2d", B("Interval", 0.01, 86400), &ms, err, sizeof(err)), -EINVAL);
  assert_int_equal(mdp_units_ms("1.5", B("Interval", 0.01, 86400), &ms, err, sizeof(err)), 0);
  assert_int_equal(ms, 1500);
  assert_int_equal(mdp_units_ms("250ms", B("Interval", 0.01, 86400), &ms, err, sizeof(err)), 0);
  assert_int_equal(ms, 250);
  assert_int_equal(mdp_units_parse(MDP_UNITS_DURATION, "59",
                                   B("GrowthWindow", 60, MDP_UNITS_NO_MAX), &(double){0}, err,
                                   sizeof(err)),
                   -EINVAL);
  assert_non_null(strstr(err, "GrowthWindow \"59\" is not a duration of at least 1min ("));
  /* No bound to state: none in the message. */
  assert_int_equal(
      mdp_units_size("lots", B("MemoryLimit", 0, MDP_UNITS_NO_MAX), &b, err, sizeof(err)), -EINVAL);
  assert_non_null(strstr(err, "MemoryLimit \"lots\" is not a size (bytes"));
}

static void sizes_round_to_bytes(void **s)
{
  uint64_t b;
  (void)s;
  assert_int_equal(mdp_units_size("1.0001K", B("K", 0, MDP_UNITS_NO_MAX), &b, NULL, 0), 0);
  assert_int_equal(b, 1024); /* 1024.1024 */
  assert_int_equal(mdp_units_size("0.4B", B("K", 0, MDP_UNITS_NO_MAX), &b, NULL, 0), 0);
  assert_int_equal(b, 0);
  assert_int_equal(mdp_units_size("0.5", B("K", 0, MDP_UNITS_NO_MAX), &b, NULL, 0), 0);
  assert_int_equal(b, 1);
  assert_int_equal(mdp_units_size("15.5T", B("K", 0, MDP_UNITS_NO_MAX), &b, NULL, 0), 0);
  assert_int_equal(b, 31ull << 39);
  assert_int_equal(mdp_units_size("16777216T", B("K", 0, MDP_UNITS_NO_MAX), &b, NULL, 0), -EINVAL);
  assert_int_equal(mdp_units_size(NULL, B("K", 0, MDP_UNITS_NO_MAX), &b, err, sizeof(err)),
                   -EINVAL);
  assert_non_null(strstr(err, "K \"\" is not a size"));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sizes),
      cmocka_unit_test(bad_sizes),
      cmocka_unit_test(durations),
      cmocka_unit_test(bad_durations),
      cmocka_unit_test(rates),
      cmocka_unit_test(fractions),
      cmocka_unit_test(numbers_and_counts),
      cmocka_unit_test(ranges_in_messages),
      cmocka_unit_test(sizes_round_to_bytes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
