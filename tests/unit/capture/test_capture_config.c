/* Capture config keys: defaults, values, clear errors naming the key. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <string.h>

#include "capture/capture.h"
#include "memdiag.pb-c.h"

static void defaults(void **state)
{
  (void)state;
  mdp_capture_config_t c;
  char err[256];
  mdp_capture_config_init(&c);
  assert_string_equal(c.directory, "/var/tmp/memdiag");
  assert_string_equal(c.plan, "trace_start dump gc_start wait scheduler threads gc_stop "
                              "trace_stop wait dump");
  assert_false(c.trace_allocations);
  assert_int_equal(c.dump_mode, MEMDIAG__V1__DUMP_MODE__DUMP_MODE_AUTO);
  assert_true(c.dump_shapes);
  assert_true(c.dump_space_factor == 3.0);
  assert_int_equal(c.keep_free, 1024ull * 1024 * 1024);
  assert_int_equal(c.max_use, 0);
  assert_int_equal(c.interval_ms, 60000);
  assert_int_equal(c.concurrency, 1);
  assert_int_equal(c.cooldown_ms, 3600000);
  assert_false(c.restart_after_capture);
  assert_int_equal(c.restart_signal, SIGTERM);
  assert_true(c.analyze);
  assert_int_equal(c.analyze_max_memory, 2048ull << 20);
  assert_int_equal(mdp_capture_config_check(&c, err, sizeof(err)), 0);
}

static void values(void **state)
{
  (void)state;
  mdp_capture_config_t c;
  char err[256];
  mdp_capture_config_init(&c);
#define SET(k, v) assert_int_equal(mdp_capture_config_set(&c, k, v, err, sizeof(err)), 0)
  SET("CaptureDirectory", "/srv/captures/");
  SET("plan", "dump wait dump");
  SET("TraceAllocations", "true");
  SET("DumpMode", "fork");
  SET("DumpShapes", "false");
  SET("DumpSpaceFactor", "2.5");
  SET("KeepFree", "1000G");
  SET("MaxUse", "20G");
  SET("CaptureInterval", "1.5");
  SET("CaptureCooldown", "2h");
  SET("CaptureConcurrency", "2");
  SET("RestartAfterCapture", "yes");
  SET("RestartSignal", "SIGUSR1");
  SET("StepTimeout", "5m");
  SET("Analyze", "false");
  SET("AnalyzeMaxMemory", "512M");
#undef SET
  assert_string_equal(c.directory, "/srv/captures");
  assert_string_equal(c.plan, "dump wait dump");
  assert_true(c.trace_allocations);
  assert_int_equal(c.dump_mode, MEMDIAG__V1__DUMP_MODE__DUMP_MODE_FORK);
  assert_false(c.dump_shapes);
  assert_true(c.dump_space_factor == 2.5);
  assert_int_equal(c.keep_free, 1000ull << 30);
  assert_int_equal(c.max_use, 20ull << 30);
  assert_int_equal(c.interval_ms, 1500);
  assert_int_equal(c.cooldown_ms, 7200000);
  assert_int_equal(c.concurrency, 2);
  assert_true(c.restart_after_capture);
  assert_int_equal(c.restart_signal, SIGUSR1);
  assert_int_equal(c.step_timeout_ms, 300000);
  assert_false(c.analyze);
  assert_int_equal(c.analyze_max_memory, 512ull << 20);
  assert_int_equal(mdp_capture_config_set(&c, "RestartSignal", "9", err, sizeof(err)), 0);
  assert_int_equal(c.restart_signal, 9);
}

static void errors_name_the_key(void **state)
{
  (void)state;
  mdp_capture_config_t c;
  char err[256];
  mdp_capture_config_init(&c);
  assert_int_equal(mdp_capture_config_set(&c, "Socket", "/x", err, sizeof(err)), -ENOENT);
  static const char *bad[][2] = {
      {"CaptureDirectory", "relative/dir"},
      {"TraceAllocations", "maybe"},
      {"DumpMode", "sideways"},
      {"DumpSpaceFactor", "-1"},
      {"KeepFree", "lots"},
      {"CaptureInterval", "0"},
      {"CaptureConcurrency", "0"},
      {"RestartSignal", "SIGNOPE"},
      {"Analyze", "sometimes"},
      {"AnalyzeMaxMemory", "plenty"},
      {"Plan", "dump fly"},
      {"Plan", "gc_start dump"},
  };
  for(size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    err[0] = '\0';
    assert_int_equal(mdp_capture_config_set(&c, bad[i][0], bad[i][1], err, sizeof(err)), -EINVAL);
    if(strcmp(bad[i][0], "Plan") == 0)
      assert_non_null(strstr(err, "Plan:"));
    else
      assert_non_null(strstr(err, bad[i][0]));
  }
  /* Nothing bad was kept. */
  assert_int_equal(mdp_capture_config_check(&c, err, sizeof(err)), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(defaults),
      cmocka_unit_test(values),
      cmocka_unit_test(errors_name_the_key),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
