/* Detector behaviour around its rules: size thresholds, one fire per
 * episode and re-arming, growth without MemoryLimit, time going backwards,
 * gaps, and the state line `memdiagctl status` shows. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "detector/detector.h"

#define MIB (1024ull * 1024ull)
#define T0  1790000000.0

static mdp_detector_config cfg;
static mdp_detector det;
static mdp_decision dec;

static int setup(void **s)
{
  (void)s;
  mdp_detector_config_init(&cfg);
  cfg.memory_limit = 1024 * MIB;
  return 0;
}

static int feed(double t, uint64_t v)
{
  memset(&dec, 0, sizeof(dec));
  int rc = mdp_detector_feed(&det, &(mdp_sample){T0 + t, v}, &dec);
  assert_true(rc >= 0);
  return rc;
}

/* Feeds a straight line every 10 s over [from, to); returns how many fired
 * and leaves the first decision in *first. */
static int feed_line(double from, double to, double start_mib, double mib_per_min,
                     mdp_decision *first)
{
  int fires = 0;
  for(double t = from; t < to; t += 10) {
    double v = start_mib + mib_per_min * (t - from) / 60;
    if(feed(t, (uint64_t)(v * MIB)) && fires++ == 0 && first)
      *first = dec;
  }
  return fires;
}

static void test_capture_size_needs_two_samples(void **s)
{
  (void)s;
  cfg.capture_size = 600 * MIB;
  mdp_detector_init(&det, &cfg);
  assert_int_equal(feed(0, 400 * MIB), 0);
  assert_int_equal(feed(10, 650 * MIB), 0); /* a single spike */
  assert_int_equal(feed(20, 400 * MIB), 0);
  assert_int_equal(feed(30, 610 * MIB), 0);
  assert_int_equal(feed(40, 620 * MIB), 1);
  assert_string_equal(dec.reason, MDP_REASON_CAPTURE_SIZE);
  assert_int_equal(dec.rss, 620 * MIB);
  assert_true(dec.time == T0 + 40);
  assert_int_equal(feed(50, 630 * MIB), 0); /* same episode */
}

static void test_near_limit(void **s)
{
  (void)s;
  mdp_detector_init(&det, &cfg);
  assert_int_equal(feed(0, 930 * MIB), 0);
  assert_int_equal(feed(10, 925 * MIB), 1); /* 0.9 * 1024 MiB = 921.6 MiB */
  assert_string_equal(dec.reason, MDP_REASON_NEAR_LIMIT);
  assert_true(dec.time_to_limit < 0);

  cfg.near_limit = 0;
  mdp_detector_init(&det, &cfg);
  assert_int_equal(feed(0, 1000 * MIB), 0);
  assert_int_equal(feed(10, 1000 * MIB), 0);
}

static void test_growth_fires_once_then_rearms_after_drop(void **s)
{
  (void)s;
  mdp_decision first;
  mdp_detector_init(&det, &cfg);
  assert_int_equal(feed_line(0, 4 * 3600, 200, 2, &first), 1);
  assert_string_equal(first.reason, MDP_REASON_GROWTH);
  assert_true(first.time >= T0 + cfg.warmup);
  assert_true(first.slope > 1.9 * MIB / 60 && first.slope < 2.1 * MIB / 60);
  assert_true(first.samples >= 350 && first.samples <= 370);
  assert_true(first.time_to_limit > 0 && first.time_to_limit <= cfg.horizon);
  assert_int_equal(det.state, MDP_DETECTOR_FIRED);

  /* Memory falls far below where it fired (released by the same process):
   * a new episode begins, but climbing back to the level already held is
   * not new growth ... */
  assert_int_equal(feed_line(4 * 3600, 7 * 3600, 300, 2, NULL), 0);
  assert_int_not_equal(det.state, MDP_DETECTOR_FIRED);
  /* ... growing well past it is. */
  assert_int_equal(feed_line(7 * 3600, 9 * 3600, 660, 2, &first), 1);
  assert_string_equal(first.reason, MDP_REASON_GROWTH);
  assert_true(first.rss > 700 * MIB);
}

static void test_no_limit_needs_min_growth_rate(void **s)
{
  (void)s;
  mdp_decision first;
  cfg.memory_limit = 0;
  mdp_detector_init(&det, &cfg);
  assert_int_equal(feed_line(0, 10 * 3600, 200, 2, NULL), 0);

  cfg.min_growth_rate = 1.0 * MIB / 60;
  mdp_detector_init(&det, &cfg);
  assert_int_equal(feed_line(0, 10 * 3600, 200, 2, &first), 1);
  assert_string_equal(first.reason, MDP_REASON_GROWTH);
  assert_true(first.time_to_limit < 0);

  /* ... and growth below that rate does not fire. */
  mdp_detector_init(&det, &cfg);
  assert_int_equal(feed_line(0, 10 * 3600, 200, 0.5, NULL), 0);
}

static void test_min_growth_rate_floor_with_limit(void **s)
{
  (void)s;
  cfg.min_growth_rate = 5.0 * MIB / 60;
  mdp_detector_init(&det, &cfg);
  assert_int_equal(feed_line(0, 6 * 3600, 200, 2, NULL), 0);
}

static void test_time_backwards(void **s)
{
  (void)s;
  mdp_detector_init(&det, &cfg);
  assert_int_equal(feed(100, 400 * MIB), 0);
  assert_int_equal(mdp_detector_feed(&det, &(mdp_sample){T0 + 90, 400 * MIB}, NULL), -EINVAL);
  assert_int_equal(feed(110, 400 * MIB), 0);
}

/* A worker not sampled for a while: the window with holes says nothing,
 * and nothing fires on the jump across the gap. */
static void test_gap_does_not_fire(void **s)
{
  (void)s;
  mdp_detector_init(&det, &cfg);
  assert_int_equal(feed_line(0, 3 * 3600, 400, 0, NULL), 0);
  assert_int_equal(feed_line(5 * 3600, 8 * 3600, 500, 0, NULL), 0);
}

static void test_describe(void **s)
{
  (void)s;
  char line[96];
  mdp_detector_init(&det, &cfg);
  feed_line(0, 1800, 200, 2, NULL);
  assert_int_equal(det.state, MDP_DETECTOR_WARMING);
  mdp_detector_describe(&det, line, sizeof(line));
  assert_string_equal(line, "warming (30/180 min)");
  assert_string_equal(mdp_detector_state_name(det.state), "warming");

  cfg.horizon = 600; /* growth seen, limit too far away to fire */
  mdp_detector_init(&det, &cfg);
  feed_line(0, 4 * 3600, 200, 2, NULL);
  assert_int_equal(det.state, MDP_DETECTOR_GROWING);
  mdp_detector_describe(&det, line, sizeof(line));
  assert_non_null(strstr(line, "growing 2.0 MiB/min, limit in "));

  mdp_detector_init(&det, &cfg);
  feed_line(0, 4 * 3600, 300, 0, NULL);
  assert_int_equal(det.state, MDP_DETECTOR_STABLE);
  mdp_detector_describe(&det, line, sizeof(line));
  assert_string_equal(line, "stable");

  feed(4 * 3600, 950 * MIB);
  feed(4 * 3600 + 10, 950 * MIB);
  mdp_detector_describe(&det, line, sizeof(line));
  assert_string_equal(line, "fired (near-limit)");
}

/* The urgent rule: a leak that will reach the limit within the hour fires
 * sustained-growth long before WarmupTime, marked urgent, with its course's
 * slope and projection: from start-up, on the course alone (8 minutes of
 * one-minute buckets at least, 40 at most), about a fifth of the way to the
 * limit. */
static void test_short_window_fires_urgent(void **s)
{
  (void)s;
  mdp_decision first;
  mdp_detector_init(&det, &cfg);
  assert_int_equal(feed_line(0, 470, 254, 11, NULL), 0);

  mdp_detector_init(&det, &cfg);
  assert_int_equal(feed_line(0, 3600, 254, 11, &first), 1);
  assert_string_equal(first.reason, MDP_REASON_GROWTH);
  assert_int_equal(first.urgent, 1);
  assert_true(first.time - T0 <= 20 * 60);
  assert_true(first.window >= 8 * 60 && first.window <= 2400);
  /* The evaluation before the one that fires already shows the growth. */
  char line[96];
  mdp_detector_init(&det, &cfg);
  assert_int_equal(feed_line(0, first.time - T0 - 30, 254, 11, NULL), 0);
  assert_int_equal(det.state, MDP_DETECTOR_GROWING);
  mdp_detector_describe(&det, line, sizeof(line));
  assert_non_null(strstr(line, "growing 1"));
  assert_non_null(strstr(line, " MiB/min, limit in "));
  assert_true(first.slope > 10.5 * MIB / 60 && first.slope < 11.5 * MIB / 60);
  /* 1 GiB is reached at +70 min; the projection says so within minutes. */
  double at = first.time - T0 + first.time_to_limit;
  assert_true(at > 65 * 60 && at < 72 * 60);
}

/* The early path looks once a one-minute course bucket, when the bucket
 * closes: with its last sample (the next is due past its end), not with
 * the first of the next bucket a sampling interval later. Sampled every
 * 10 s, the leak above fires on a minute's 50 s sample; sampled every
 * 10 s give or take 1 s (the first 1 s early, so that every minute starts
 * with its 0 s sample), on a minute's last sample still; sampled every
 * 30 s, on a minute's 30 s sample; every 40 s (a minute holds one sample
 * or two), on a minute's last; every 60 s, on its only sample, as soon as
 * it is in. A sample after a pause (more than twice the usual interval)
 * closes nothing: the samples after it belong to its bucket. */
static double jitter(unsigned k) { return (double)((k * 7919u) % 3u) - 1.0; }

static double fire_with_step(double step, int jittered, double *next)
{
  *next = -1;
  mdp_detector_init(&det, &cfg);
  for(unsigned k = 0; k < 3600 / step; k++) {
    double t = k * step + (jittered ? jitter(k) : 0);
    if(feed(t, (uint64_t)((254 + 11 * t / 60) * MIB))) {
      /* Both since the first sample, where the first bucket starts. */
      double first = jittered ? jitter(0) : 0;
      *next = (k + 1) * step + (jittered ? jitter(k + 1) : 0) - first;
      return t - first;
    }
  }
  fail_msg("the leak never fired");
  return -1;
}

static void test_a_course_bucket_closes_with_its_last_sample(void **s)
{
  (void)s;
  double next, at = fire_with_step(10, 0, &next);
  assert_string_equal(dec.reason, MDP_REASON_GROWTH);
  assert_true(at < 20 * 60);
  assert_int_equal((long)at % 60, 50);
  at = fire_with_step(10, 1, &next);
  assert_true((long)(at / 60) < (long)(next / 60)); /* the minute's last */
  at = fire_with_step(30, 0, &next);
  assert_string_equal(dec.reason, MDP_REASON_GROWTH);
  assert_int_equal((long)at % 60, 30);
  for(double step = 40; step <= 60; step += 20) {
    at = fire_with_step(step, 0, &next);
    assert_string_equal(dec.reason, MDP_REASON_GROWTH);
    assert_true((long)(at / 60) < (long)(next / 60)); /* the minute's last */
  }
}

/* After a pause of 55 s in samples 10 s apart, the minute's samples at
 * 25, 35 and 45 s close nothing: its bucket closes with its 55 s sample.
 * Were the pause taken into the usual interval (21 s, smoothed), the 35 s
 * sample would close it, and the 45 s and 55 s ones go to the next. */
static void test_a_sample_after_a_pause_closes_no_bucket(void **s)
{
  (void)s;
  mdp_detector_init(&det, &cfg);
  for(double t = 0; t <= 575; t += 10)
    feed(t, (uint64_t)((254 + 11 * t / 60) * MIB));
  uint64_t before = det.cnbucket;
  feed(625, (uint64_t)((254 + 11 * 625.0 / 60) * MIB));
  assert_int_equal(det.cnbucket, before + 1); /* the 600-660 s bucket opened */
  feed(635, (uint64_t)((254 + 11 * 635.0 / 60) * MIB));
  feed(645, (uint64_t)((254 + 11 * 645.0 / 60) * MIB));
  assert_int_equal(det.cnbucket, before + 1);
  feed(655, (uint64_t)((254 + 11 * 655.0 / 60) * MIB));
  assert_int_equal(det.cnbucket, before + 2); /* closed with its last sample */
}

/* From the early path's first passing look to its fire, the state line
 * reads growing at every sample: the short window's buckets, which close
 * on the minute, 10 s after the course's, do not turn it back to warming
 * (they did, every other minute, before the early path's verdict stood on
 * its own). */
static void test_growing_stands_until_the_early_path_fires(void **s)
{
  (void)s;
  char line[96];
  int seen = 0;
  mdp_detector_init(&det, &cfg);
  for(double t = 0; t < 3600; t += 10) {
    if(feed(t, (uint64_t)((254 + 11 * t / 60) * MIB)))
      break;
    mdp_detector_describe(&det, line, sizeof(line));
    if(det.state == MDP_DETECTOR_GROWING)
      seen++;
    else if(seen)
      fail_msg("at %.0f s, after %d samples growing: %s", t, seen, line);
  }
  assert_string_equal(dec.reason, MDP_REASON_GROWTH);
  assert_true(seen >= 6);
}

/* ShortWindow 0 turns the urgent rule off: the same leak is caught only
 * near the limit, as before the short window existed. */
static void test_short_window_off(void **s)
{
  (void)s;
  mdp_decision first;
  assert_int_equal(mdp_detector_config_set(&cfg, "ShortWindow", "0", NULL, 0), 0);
  mdp_detector_init(&det, &cfg);
  assert_int_equal(feed_line(0, 3600 + 1800, 254, 11, &first), 1);
  assert_string_equal(first.reason, MDP_REASON_NEAR_LIMIT);
  assert_true(first.time - T0 > 55 * 60);
  assert_true(first.time_to_limit < 0); /* no short window, no slope */
}

/* A GrowthWindow no longer than ShortWindow turns the urgent rule off too;
 * the long window then sees the leak on its own. */
static void test_short_window_not_shorter_than_growth_window(void **s)
{
  (void)s;
  mdp_decision first;
  assert_int_equal(mdp_detector_config_set(&cfg, "GrowthWindow", "10min", NULL, 0), 0);
  assert_int_equal(mdp_detector_config_set(&cfg, "WarmupTime", "10min", NULL, 0), 0);
  mdp_detector_init(&det, &cfg);
  assert_int_equal(feed_line(0, 3600 + 1800, 254, 11, &first), 1);
  assert_string_equal(first.reason, MDP_REASON_GROWTH);
  assert_int_equal(first.urgent, 0);
  assert_true(first.window == 600);
}

/* A fire without a projection of its own (near-limit) still says how much
 * time is left at the short window's slope, so the plan can fit it. */
static void test_near_limit_carries_time_left(void **s)
{
  (void)s;
  mdp_decision first;
  mdp_detector_init(&det, &cfg);
  /* 0.5 MiB/min from 880 MiB: too slow for the urgent rule (the limit is
   * more than two hours away), near-limit after about 83 minutes. */
  assert_int_equal(feed_line(0, 3 * 3600, 880, 0.5, &first), 1);
  assert_string_equal(first.reason, MDP_REASON_NEAR_LIMIT);
  assert_true(first.time_to_limit > 150 * 60 && first.time_to_limit < 260 * 60);
}

/* Memory per worker does not depend on how long it runs or how often it is
 * sampled: the detector is one fixed-size struct. */
static void test_bounded_memory(void **s)
{
  (void)s;
  assert_true(sizeof(mdp_detector) < 4096);
  mdp_detector_init(&det, &cfg);
  for(double t = 0; t < 7 * 86400; t += 1)
    feed(t, 400 * MIB + ((uint64_t)t % 97) * MIB / 10);
  assert_int_equal(det.state, MDP_DETECTOR_STABLE);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_capture_size_needs_two_samples, setup),
      cmocka_unit_test_setup(test_near_limit, setup),
      cmocka_unit_test_setup(test_growth_fires_once_then_rearms_after_drop, setup),
      cmocka_unit_test_setup(test_no_limit_needs_min_growth_rate, setup),
      cmocka_unit_test_setup(test_min_growth_rate_floor_with_limit, setup),
      cmocka_unit_test_setup(test_time_backwards, setup),
      cmocka_unit_test_setup(test_gap_does_not_fire, setup),
      cmocka_unit_test_setup(test_describe, setup),
      cmocka_unit_test_setup(test_bounded_memory, setup),
      cmocka_unit_test_setup(test_short_window_fires_urgent, setup),
      cmocka_unit_test_setup(test_a_course_bucket_closes_with_its_last_sample, setup),
      cmocka_unit_test_setup(test_a_sample_after_a_pause_closes_no_bucket, setup),
      cmocka_unit_test_setup(test_growing_stands_until_the_early_path_fires, setup),
      cmocka_unit_test_setup(test_short_window_off, setup),
      cmocka_unit_test_setup(test_short_window_not_shorter_than_growth_window, setup),
      cmocka_unit_test_setup(test_near_limit_carries_time_left, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
