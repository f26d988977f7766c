/* The detector on arbitrary series: whatever a worker's memory does (wild
 * spikes, zero, values near 2^64, steps, sawtooths, time that stalls,
 * jumps ahead or goes back, a limit changed or removed mid-series), every
 * feed answers 0, 1 or -EINVAL (the last exactly when the time goes back or
 * is not finite), every decision's figures are finite and in range, and
 * the status line is a terminated string. The plugin runs the detector
 * inside collectd as root: a series must never crash it or feed a capture
 * plan NaN. The CI's ASan + UBSan build runs this too. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "detector/detector.h"

#define SERIES 1200

static uint32_t next(uint32_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

static double unit(uint32_t *s) { return next(s) / 4294967296.0; }

/* The next value of shape `shape` after v, for a series with this limit. */
static double next_value(int shape, double v, double lim, double rate, unsigned i, uint32_t *rs)
{
  switch(shape) {
  case 0: return v + rate + lim * 0.01 * (unit(rs) - 0.5);    /* a leak in noise */
  case 1: return i % 7 ? v + 3 * rate : v / 2;                /* a sawtooth */
  case 2: return next(rs) % 50 ? v : 4 * lim * unit(rs);      /* wild spikes */
  case 3: return next(rs) % 2 ? 0 : (double)(UINT64_MAX / 2); /* the extremes */
  case 4: return 0.9 * lim * (1 - exp(-(double)i / 60));      /* a warm-up */
  case 5: return next(rs) % 10 ? v : v + 0.05 * lim;          /* steps */
  case 6: return lim * unit(rs);                              /* noise alone */
  case 7: return v + rate;                                    /* a straight line */
  default: return lim * (1 + unit(rs));                       /* above the limit */
  }
}

static void check_decision(const mdp_decision *d)
{
  assert_true(isfinite(d->time));
  assert_true(isfinite(d->slope));
  assert_true(isfinite(d->slope_recent));
  assert_true(isfinite(d->slope_before));
  assert_true(isfinite(d->window) && d->window >= 0);
  assert_true(isfinite(d->time_to_limit) && d->time_to_limit >= -1);
  assert_true(isfinite(d->plateau) && d->plateau >= 0);
  assert_true(d->reason != NULL && d->reason[0] != '\0');
}

static void test_arbitrary_series(void **state)
{
  (void)state;
  static const char *limits[] = {"1G", "64M", "16G", "1M", "4096"};
  static const char *windows[] = {"20min", "60s", "10min", "0"};
  uint32_t rs = 2463534242u;
  unsigned fired = 0, refused = 0;

  for(unsigned k = 0; k < SERIES; k++) {
    mdp_detector_config cfg;
    mdp_detector d;
    char err[128];
    mdp_detector_config_init(&cfg);
    assert_int_equal(mdp_detector_config_set(&cfg, "MemoryLimit", limits[k % 5], err, sizeof err),
                     0);
    assert_int_equal(
        mdp_detector_config_set(&cfg, "ShortWindow", windows[k / 5 % 4], err, sizeof err), 0);
    mdp_detector_init(&d, &cfg);

    double lim = (double)cfg.memory_limit, dt = 1 + 20 * unit(&rs);
    double t = 1e9 * unit(&rs), v = lim * unit(&rs) / 2;
    double rate = lim * (unit(&rs) - 0.2) / 3600 * dt;
    int shape = (int)(next(&rs) % 9);
    unsigned n = 200 + next(&rs) % 2500;
    double last = -INFINITY;
    for(unsigned i = 0; i < n; i++) {
      v = next_value(shape, v, lim, rate, i, &rs);
      v = v < 0 ? 0 : v > 1.8e19 ? 1.8e19 : v;
      mdp_sample s = {t, (uint64_t)v};
      mdp_decision out;
      memset(&out, 0, sizeof out);
      int rc = mdp_detector_feed(&d, &s, &out);
      if(t < last) {
        assert_int_equal(rc, -EINVAL);
        refused++;
      } else {
        assert_true(rc == 0 || rc == 1);
        last = t;
      }
      if(rc == 1) {
        check_decision(&out);
        fired++;
      }
      if(i % 97 == 0) {
        char text[256];
        memset(text, 'x', sizeof text);
        assert_true(mdp_detector_describe(&d, text, sizeof text) >= 0);
        assert_non_null(memchr(text, '\0', sizeof text));
      }
      if(i == n / 2 && next(&rs) % 4 == 0)
        mdp_detector_set_limit(&d, next(&rs) % 3 ? (uint64_t)(lim * (0.5 + unit(&rs))) : 0);
      /* Mostly steady; sometimes a gap, the same time again, or a step back. */
      unsigned r = next(&rs) % 100;
      t += r < 90 ? dt : r < 95 ? 100 * dt * unit(&rs) : r < 98 ? 0 : -dt;
    }
  }
  /* The draws reach both answers, and the refusal. */
  assert_true(fired > 0);
  assert_true(refused > 0);
}

static void test_time_not_finite(void **state)
{
  (void)state;
  mdp_detector_config cfg;
  mdp_detector d;
  mdp_decision out;
  mdp_detector_config_init(&cfg);
  assert_int_equal(mdp_detector_config_set(&cfg, "MemoryLimit", "1G", NULL, 0), 0);
  mdp_detector_init(&d, &cfg);
  mdp_sample ok = {1790000000.0, 1 << 20};
  assert_int_equal(mdp_detector_feed(&d, &ok, &out), 0);
  const double bad[] = {NAN, INFINITY, -INFINITY};
  for(unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    mdp_sample s = {bad[i], 1 << 20};
    assert_int_equal(mdp_detector_feed(&d, &s, &out), -EINVAL);
  }
  ok.time += 10;
  assert_int_equal(mdp_detector_feed(&d, &ok, NULL), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_arbitrary_series),
      cmocka_unit_test(test_time_not_finite),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
