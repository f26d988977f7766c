/* The <Plugin memdiag> block as collectd hands it over (oconfig items built
 * here by hand): every key's value types, the errors a user sees in the
 * log, and the checks that need every key. collectd's plugin_log is the
 * one stand-in: it records the lines the plugin would log. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"
#include "liboconfig/oconfig.h"

#include "config.h"

static char logged[16384];

void plugin_log(int level, const char *format, ...)
{
  size_t n = strlen(logged);
  va_list ap;

  (void)level;
  va_start(ap, format);
  vsnprintf(logged + n, sizeof(logged) - n, format, ap);
  va_end(ap);
  n = strlen(logged);
  snprintf(logged + n, sizeof(logged) - n, "\n");
}

/* A <Plugin memdiag> block under construction. */
typedef struct {
  oconfig_item_t block;
  oconfig_item_t kids[32];
  oconfig_value_t vals[32][4];
} block;

static oconfig_item_t *item(block *b, const char *key)
{
  oconfig_item_t *ci = &b->kids[b->block.children_num];

  assert_true(b->block.children_num < 32);
  memset(ci, 0, sizeof(*ci));
  ci->key = (char *)key;
  ci->values = b->vals[b->block.children_num];
  ci->parent = &b->block;
  b->block.children = b->kids;
  b->block.children_num++;
  return ci;
}

static void str(block *b, const char *key, const char *v)
{
  oconfig_item_t *ci = item(b, key);
  ci->values[0].type = OCONFIG_TYPE_STRING;
  ci->values[0].value.string = (char *)v;
  ci->values_num = 1;
}

static void num(block *b, const char *key, double v)
{
  oconfig_item_t *ci = item(b, key);
  ci->values[0].type = OCONFIG_TYPE_NUMBER;
  ci->values[0].value.number = v;
  ci->values_num = 1;
}

static void boolean(block *b, const char *key, int v)
{
  oconfig_item_t *ci = item(b, key);
  ci->values[0].type = OCONFIG_TYPE_BOOLEAN;
  ci->values[0].value.boolean = v;
  ci->values_num = 1;
}

static void strs(block *b, const char *key, const char *v0, const char *v1)
{
  oconfig_item_t *ci = item(b, key);
  ci->values[0].type = ci->values[1].type = OCONFIG_TYPE_STRING;
  ci->values[0].value.string = (char *)v0;
  ci->values[1].value.string = (char *)v1;
  ci->values_num = 2;
}

static mdp_config cfg;
static block b;

static int setup(void **state)
{
  (void)state;
  memset(&b, 0, sizeof(b));
  b.block.key = "Plugin";
  logged[0] = '\0';
  mdp_config_init(&cfg);
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  mdp_config_free(&cfg);
  return 0;
}

static void tls(block *bl)
{
  str(bl, "TLSCertificate", "/etc/memdiag/plugin.pem");
  str(bl, "TLSKey", "/etc/memdiag/plugin.key");
  str(bl, "TLSCA", "/etc/memdiag/ca.pem");
}

static void defaults(void **state)
{
  (void)state;
  assert_null(cfg.server.socket);
  assert_int_equal(cfg.server.socket_mode, 0660);
  assert_int_equal(cfg.server.max_connections, 1024);
  assert_int_equal(cfg.sampler.memory, MDP_MEM_RSS);
  assert_int_equal(cfg.server.heartbeat_ms, 5000);
  assert_int_equal(cfg.server.handshake_timeout_ms, 5000);
  assert_int_equal(cfg.relay.dump_timeout_ms, 600000);
  assert_int_equal(cfg.server.max_frame, 16u << 20);
  assert_int_equal(cfg.sampler.interval_ms, 0);
  /* Without TLS files the plugin does not start, naming the first. */
  assert_int_equal(mdp_config_check(&cfg), -EINVAL);
  assert_non_null(strstr(logged, "memdiag plugin: TLSCertificate is required"));
}

static void own_keys(void **state)
{
  (void)state;
  tls(&b);
  str(&b, "Socket", "/run/memdiag/supervisor.ipc");
  str(&b, "socketmode", "0600"); /* keys are case-insensitive */
  str(&b, "SocketGroup", "0");
  num(&b, "MaxConnections", 10);
  str(&b, "Interval", "500ms");
  strs(&b, "Memory", "rss", "pss");
  str(&b, "Memory", "swap"); /* a second line adds */
  num(&b, "HeartbeatInterval", 2);
  str(&b, "HandshakeTimeout", "1.5s");
  str(&b, "DumpTimeout", "30m");
  str(&b, "MaxFrameSize", "64K");
  assert_int_equal(mdp_config_apply(&cfg, &b.block), 0);
  assert_string_equal(logged, "");
  assert_string_equal(cfg.server.socket, "/run/memdiag/supervisor.ipc");
  assert_int_equal(cfg.server.socket_mode, 0600);
  assert_string_equal(cfg.server.socket_group, "0");
  assert_string_equal(cfg.server.tls_ca, "/etc/memdiag/ca.pem");
  assert_int_equal(cfg.server.max_connections, 10);
  assert_int_equal(cfg.sampler.interval_ms, 500);
  assert_int_equal(cfg.sampler.memory, MDP_MEM_RSS | MDP_MEM_PSS | MDP_MEM_SWAP);
  assert_int_equal(cfg.server.heartbeat_ms, 2000);
  assert_int_equal(cfg.server.handshake_timeout_ms, 1500);
  assert_int_equal(cfg.relay.dump_timeout_ms, 1800000);
  assert_int_equal(cfg.server.max_frame, 65536);
  assert_int_equal(mdp_config_check(&cfg), 0);
}

static void memory_replaces_the_default(void **state)
{
  char text[64];

  (void)state;
  str(&b, "Memory", "private");
  assert_int_equal(mdp_config_apply(&cfg, &b.block), 0);
  assert_int_equal(cfg.sampler.memory, MDP_MEM_PRIVATE);
  mdp_sampler_memory_text(MDP_MEM_RSS | MDP_MEM_PRIVATE | MDP_MEM_SWAP, text, sizeof(text));
  assert_string_equal(text, "rss private swap");
}

/* Numbers arrive as doubles, strings as text; both reach the detector and
 * the capture module, which parse text. */
static void detector_and_capture_keys(void **state)
{
  (void)state;
  tls(&b);
  num(&b, "MemoryLimit", 1073741824);
  str(&b, "CaptureSize", "800M");
  str(&b, "GrowthWindow", "2h");
  str(&b, "MinGrowthRate", "1M/min");
  num(&b, "NearLimit", 0.95);
  str(&b, "Plan", "dump wait dump");
  boolean(&b, "TraceAllocations", 1);
  num(&b, "DumpSpaceFactor", 2.5);
  num(&b, "CaptureConcurrency", 2);
  str(&b, "CaptureCooldown", "6h");
  boolean(&b, "RestartAfterCapture", 1);
  num(&b, "AnalyzeMaxMemory", 0); /* no cap (configuration.md) */
  assert_int_equal(mdp_config_apply(&cfg, &b.block), 0);
  assert_string_equal(logged, "");
  assert_int_equal(cfg.capture.analyze_max_memory, 0);
  assert_int_equal(cfg.detector.memory_limit, 1073741824);
  assert_int_equal(cfg.detector.capture_size, 800u << 20);
  assert_true(cfg.detector.growth_window == 7200);
  assert_true(cfg.detector.min_growth_rate == 1048576.0 / 60);
  assert_true(cfg.detector.near_limit == 0.95);
  assert_string_equal(cfg.capture.plan, "dump wait dump");
  assert_true(cfg.capture.trace_allocations);
  assert_true(cfg.capture.dump_space_factor == 2.5);
  assert_int_equal(cfg.capture.concurrency, 2);
  assert_int_equal(cfg.capture.cooldown_ms, 6 * 3600000ull);
  assert_true(cfg.capture.restart_after_capture);
  assert_int_equal(mdp_config_check(&cfg), 0);
}

/* One start names every bad key, each with its value, not only the first. */
static void every_bad_key_is_logged(void **state)
{
  static const char *const want[] = {
      "memdiag plugin: unknown configuration key \"Sokcet\"",
      "memdiag plugin: MaxConnections \"0\" is not a whole number between 1 and 65536",
      "memdiag plugin: Interval \"soon\" is not a duration between 10ms and 1d",
      "memdiag plugin: MaxFrameSize \"12X\" is not a size between 4KiB and 1GiB",
      "memdiag plugin: SocketMode \"0999\" is not an octal permission",
      "memdiag plugin: SocketMode needs a quoted octal string",
      "memdiag plugin: Socket needs a non-empty quoted string",
      "memdiag plugin: Memory \"heap\" is not one of rss, pss, private, swap",
      "memdiag plugin: MemoryLimit \"lots\" is not a size",
      "memdiag plugin: NearLimit \"1.5\" is not a fraction between 0 and 1",
      "memdiag plugin: DumpMode \"sideways\" is not inline, fork or auto",
      "memdiag plugin: CaptureConcurrency \"65\" is not a whole number between 1 and 64",
      "memdiag plugin: HeartbeatInterval takes exactly one value",
      "memdiag plugin: CaptureInterval takes exactly one value",
      "memdiag plugin: CaptureSize \"1.5e+20\" is not a size",
  };
  (void)state;
  str(&b, "Sokcet", "/tmp/x");
  num(&b, "MaxConnections", 0);
  str(&b, "Interval", "soon");
  str(&b, "MaxFrameSize", "12X");
  str(&b, "SocketMode", "0999");
  num(&b, "SocketMode", 660);
  num(&b, "Socket", 1);
  strs(&b, "Memory", "rss", "heap");
  str(&b, "MemoryLimit", "lots");
  num(&b, "NearLimit", 1.5);
  str(&b, "DumpMode", "sideways");
  num(&b, "CaptureConcurrency", 65);
  strs(&b, "HeartbeatInterval", "1s", "2s");
  /* A capture key in the wrong shape is that, not an unknown key. */
  strs(&b, "CaptureInterval", "1s", "2s");
  num(&b, "CaptureSize", 1.5e20); /* beyond int64_t: refused, not wrapped */
  assert_int_equal(mdp_config_apply(&cfg, &b.block), -EINVAL);
  for(size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
    if(!strstr(logged, want[i]))
      fail_msg("log lacks \"%s\"; it says:\n%s", want[i], logged);
  assert_null(strstr(logged, "unknown configuration key \"CaptureInterval\""));
  /* Nothing bad was kept. */
  assert_int_equal(cfg.server.max_connections, 1024);
  assert_int_equal(cfg.detector.memory_limit, 0);
  assert_true(cfg.detector.near_limit == 0.9);
  assert_int_equal(cfg.capture.concurrency, 1);
}

/* Every key of the block is accepted, but the check across keys refuses
 * the whole and the log says why. */
static void assert_refused_by_check(const char *why)
{
  assert_int_equal(mdp_config_apply(&cfg, &b.block), 0);
  assert_int_equal(mdp_config_check(&cfg), -EINVAL);
  assert_non_null(strstr(logged, why));
}

static void checks_across_keys(void **state)
{
  (void)state;
  tls(&b);
  boolean(&b, "RestartAfterCapture", 1);
  assert_refused_by_check("RestartAfterCapture true needs MemoryLimit");

  logged[0] = '\0';
  str(&b, "MemoryLimit", "1G");
  str(&b, "CaptureSize", "1G");
  assert_refused_by_check("CaptureSize (1073741824) must be below MemoryLimit");
}

static void unknown_group(void **state)
{
  (void)state;
  tls(&b);
  str(&b, "SocketGroup", "no-such-group-here");
  assert_refused_by_check("SocketGroup \"no-such-group-here\": no such group");
}

static void last_value_wins_and_strings_are_owned(void **state)
{
  char path[] = "/run/a.ipc";

  (void)state;
  str(&b, "Socket", path);
  str(&b, "Socket", "/run/b.ipc");
  assert_int_equal(mdp_config_apply(&cfg, &b.block), 0);
  path[5] = 'x';
  assert_string_equal(cfg.server.socket, "/run/b.ipc");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(defaults, setup, teardown),
      cmocka_unit_test_setup_teardown(own_keys, setup, teardown),
      cmocka_unit_test_setup_teardown(memory_replaces_the_default, setup, teardown),
      cmocka_unit_test_setup_teardown(detector_and_capture_keys, setup, teardown),
      cmocka_unit_test_setup_teardown(every_bad_key_is_logged, setup, teardown),
      cmocka_unit_test_setup_teardown(checks_across_keys, setup, teardown),
      cmocka_unit_test_setup_teardown(unknown_group, setup, teardown),
      cmocka_unit_test_setup_teardown(last_value_wins_and_strings_are_owned, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
