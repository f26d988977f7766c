/* The detector's config keys as a user writes them, in <Plugin memdiag> or
 * as replay's Key=Value: accepted spellings, and the error for each kind of
 * mistake naming the key. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "detector/detector.h"

static mdp_detector_config cfg;
static char err[256];

static int set(const char *key, const char *value)
{
  err[0] = '\0';
  return mdp_detector_config_set(&cfg, key, value, err, sizeof(err));
}

/* A spelling a key accepts and the value it must store in its field. */
struct accepted {
  const char *key;
  const char *text;
  const double *field;
  double value;
};

static void assert_accepted(const struct accepted *a, size_t n)
{
  for(size_t i = 0; i < n; i++) {
    assert_int_equal(set(a[i].key, a[i].text), 0);
    if(*a[i].field != a[i].value)
      print_error("%s \"%s\" stored %g, want %g\n", a[i].key, a[i].text, *a[i].field, a[i].value);
    assert_true(*a[i].field == a[i].value);
  }
}

static int setup(void **s)
{
  (void)s;
  mdp_detector_config_init(&cfg);
  return 0;
}

static void test_defaults(void **s)
{
  (void)s;
  assert_int_equal(cfg.memory_limit, 0);
  assert_int_equal(cfg.capture_size, 0);
  assert_true(cfg.growth_window == 3600);
  assert_true(cfg.horizon == 21600);
  assert_true(cfg.warmup == 10800);
  assert_true(cfg.near_limit == 0.9);
  assert_true(cfg.min_growth_rate == 0);
  assert_true(cfg.short_window == 1200);
  assert_int_equal(mdp_detector_config_check(&cfg, err, sizeof(err)), 0);
}

static void test_short_window(void **s)
{
  (void)s;
  assert_int_equal(set("ShortWindow", "30min"), 0);
  assert_true(cfg.short_window == 1800);
  assert_int_equal(set("shortwindow", "0"), 0); /* off */
  assert_true(cfg.short_window == 0);
  assert_int_equal(mdp_detector_config_check(&cfg, err, sizeof(err)), 0);
  assert_int_equal(set("ShortWindow", "30s"), -EINVAL);
  assert_non_null(strstr(err, "ShortWindow \"30s\" is too short: 0 (off) or at least 60 s"));
  assert_int_equal(set("ShortWindow", "-5min"), -EINVAL);
  assert_true(cfg.short_window == 0); /* a bad value changes nothing */

  /* Not shorter than GrowthWindow is accepted (a short GrowthWindow with
   * the default ShortWindow must stay a valid configuration): the urgent
   * rule is then off, which test_detector_state checks. */
  assert_int_equal(set("ShortWindow", "1h"), 0);
  assert_int_equal(mdp_detector_config_check(&cfg, err, sizeof(err)), 0);
}

static void test_sizes(void **s)
{
  (void)s;
  static const struct {
    const char *text;
    uint64_t bytes;
  } ok[] = {{"1073741824", 1073741824ull},
            {"1G", 1073741824ull},
            {"1g", 1073741824ull},
            {"1GiB", 1073741824ull},
            {"1GB", 1073741824ull},
            {"512M", 536870912ull},
            {"1.5G", 1610612736ull},
            {"64K", 65536},
            {"2T", 2199023255552ull},
            {"0", 0},
            {" 10M ", 10485760}};
  for(size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    assert_int_equal(set("MemoryLimit", ok[i].text), 0);
    assert_int_equal(cfg.memory_limit, ok[i].bytes);
  }
  assert_int_equal(set("capturesize", "900M"), 0); /* keys are case-insensitive */
  assert_int_equal(cfg.capture_size, 943718400ull);
}

static void test_bad_sizes(void **s)
{
  (void)s;
  static const char *bad[] = {"", "G", "-1G", "1X", "1e9", "0x10", "1 G G", "inf", "99999999999T"};
  for(size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    assert_int_equal(set("MemoryLimit", bad[i]), -EINVAL);
    assert_non_null(strstr(err, "MemoryLimit \""));
    assert_non_null(strstr(err, "is not a size"));
  }
}

static void test_durations(void **s)
{
  (void)s;
  static const struct accepted ok[] = {
      {"GrowthWindow", "30min", &cfg.growth_window, 1800},
      {"GrowthWindow", "7200", &cfg.growth_window, 7200},
      {"Horizon", "12h", &cfg.horizon, 43200},
      {"Horizon", "1d", &cfg.horizon, 86400},
      {"WarmupTime", "0", &cfg.warmup, 0},
      {"WarmupTime", "90 m", &cfg.warmup, 5400},
  };
  assert_accepted(ok, sizeof(ok) / sizeof(ok[0]));
}

static void test_bad_durations(void **s)
{
  (void)s;
  assert_int_equal(set("GrowthWindow", "59"), -EINVAL); /* too short for 12 buckets */
  assert_non_null(strstr(err, "GrowthWindow"));
  assert_int_equal(set("GrowthWindow", "1 fortnight"), -EINVAL);
  assert_int_equal(set("Horizon", "0"), -EINVAL);
  assert_non_null(strstr(err, "Horizon"));
  assert_int_equal(set("WarmupTime", "soon"), -EINVAL);
  assert_non_null(strstr(err, "WarmupTime"));
}

static void test_rates(void **s)
{
  (void)s;
  static const struct accepted ok[] = {
      {"MinGrowthRate", "2M/min", &cfg.min_growth_rate, 2.0 * 1048576 / 60},
      {"MinGrowthRate", "512K/h", &cfg.min_growth_rate, 512.0 * 1024 / 3600},
      {"MinGrowthRate", "1000", &cfg.min_growth_rate, 1000},
  };
  assert_accepted(ok, sizeof(ok) / sizeof(ok[0]));
  assert_int_equal(set("MinGrowthRate", "10M/fortnight"), -EINVAL);
  assert_non_null(strstr(err, "MinGrowthRate"));
  assert_int_equal(set("MinGrowthRate", "fast"), -EINVAL);
}

static void test_near_limit(void **s)
{
  (void)s;
  static const struct accepted ok[] = {
      {"NearLimit", "0.95", &cfg.near_limit, 0.95},
      {"NearLimit", "80%", &cfg.near_limit, 0.8},
      {"NearLimit", "0", &cfg.near_limit, 0},
  };
  assert_accepted(ok, sizeof(ok) / sizeof(ok[0]));
  assert_int_equal(set("NearLimit", "1.5"), -EINVAL);
  assert_non_null(strstr(err, "NearLimit"));
  assert_int_equal(set("NearLimit", "120%"), -EINVAL);
}

static void test_unknown_key(void **s)
{
  (void)s;
  assert_int_equal(set("MemoryLimitt", "1G"), -ENOENT);
  assert_non_null(strstr(err, "unknown key \"MemoryLimitt\""));
  assert_int_equal(mdp_detector_config_set(&cfg, "MemoryLimit", NULL, err, sizeof(err)), -EINVAL);
}

static void test_capture_size_below_limit(void **s)
{
  (void)s;
  assert_int_equal(set("MemoryLimit", "1G"), 0);
  assert_int_equal(set("CaptureSize", "1G"), 0);
  assert_int_equal(mdp_detector_config_check(&cfg, err, sizeof(err)), -EINVAL);
  assert_non_null(strstr(err, "CaptureSize"));
  assert_int_equal(set("CaptureSize", "900M"), 0);
  assert_int_equal(mdp_detector_config_check(&cfg, err, sizeof(err)), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_defaults, setup),
      cmocka_unit_test_setup(test_sizes, setup),
      cmocka_unit_test_setup(test_short_window, setup),
      cmocka_unit_test_setup(test_bad_sizes, setup),
      cmocka_unit_test_setup(test_durations, setup),
      cmocka_unit_test_setup(test_bad_durations, setup),
      cmocka_unit_test_setup(test_rates, setup),
      cmocka_unit_test_setup(test_near_limit, setup),
      cmocka_unit_test_setup(test_unknown_key, setup),
      cmocka_unit_test_setup(test_capture_size_below_limit, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
