/* The early path's step filters (plugin/detector/detector_steps.c) on
 * course points, in MiB (unit 1): a cache loaded in the first minute of a
 * warm-up, which no filter of the points can weigh, is taken out when its
 * bucket saw a sample jump, down to the local pace, from the point it
 * lifted on, whether that is the jump's bucket or the next, also late in
 * a warm-up whose first minutes jumped more; a one-sample
 * spike (a jump the points do not hold), a leak's even rises and a ring too
 * short to say are left as they are; a jump in the last two rises is left
 * to the pending rule, which holds the look. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "detector/detector_steps.h"

#define M 16

static double noise(uint32_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return (double)*s / 2147483647.5 - 1.0;
}

/* A warm-up's points: 150 MiB rising to 550 with a time constant of 20
 * buckets (about 19.5 MiB a bucket at first), +-1 MiB of noise; each
 * bucket's largest rise of a sample over the one before it is 4-6 MiB. */
static void warmup(double *y, double *jump, unsigned char *have)
{
  uint32_t r = 11;
  for(unsigned k = 0; k < M; k++) {
    y[k] = 150 + 400 * (1 - exp(-(double)k / 20)) + noise(&r);
    jump[k] = 5 + noise(&r);
    have[k] = 1;
  }
}

/* Adds a cache of size MiB to every point from `from` on. */
static void cache(double *y, unsigned from, double size)
{
  for(unsigned k = from; k < M; k++)
    y[k] += size;
}

/* The jump filter changes none of the points. */
static void assert_left_alone(double *y, const unsigned char *have, const double *jump)
{
  double before[M];
  memcpy(before, y, sizeof(before));
  mdp_detector_steps_remove_jumps(y, have, jump, M, 1);
  assert_memory_equal(y, before, sizeof(before));
}

static void test_a_cache_in_the_first_minute_is_taken_out(void **st)
{
  (void)st;
  double y[M], jump[M], plain[M], local[M];
  unsigned char have[M];
  warmup(y, jump, have);
  memcpy(plain, y, sizeof(y));
  /* 36.5 MiB loaded 41 s into the first bucket, after its least sample:
   * the second point holds it. */
  cache(y, 1, 36.5);
  jump[0] = 36.5 + 3;
  memcpy(local, y, sizeof(y));
  mdp_detector_steps_remove_local(local, have, M, 1);
  assert_true(local[1] - local[0] > 50); /* nothing before it to weigh it by */
  mdp_detector_steps_remove_jumps(y, have, jump, M, 1);
  for(unsigned k = 1; k < M; k++)
    assert_true(fabs((y[k] - y[0]) - (plain[k] - plain[0])) < 3);
}

static void test_a_jump_after_the_least_sample_lifts_the_next_point(void **st)
{
  (void)st;
  double y[M], jump[M], plain[M];
  unsigned char have[M];
  warmup(y, jump, have);
  memcpy(plain, y, sizeof(y));
  /* Loaded in bucket 6 after its least sample: point 7 on. */
  cache(y, 7, 30);
  jump[6] = 33;
  mdp_detector_steps_remove_jumps(y, have, jump, M, 1);
  for(unsigned k = 0; k <= 6; k++)
    assert_true(y[k] == plain[k]);
  for(unsigned k = 7; k < M; k++)
    assert_true(fabs(y[k] - plain[k]) < 3);
}

/* A warm-up steep at first (400 MiB with a time constant of 5 buckets):
 * its first buckets' largest rises between two samples were 14-23 MiB,
 * the late ones' 4-7, so the ring's usual jump (the median, 8.5) stands
 * above the late buckets'. A 16 MiB cache loaded in bucket 11, after its least
 * sample, jumped 20: under three times the ring's usual jump, over three
 * times that of the buckets about it. It is taken out of point 12 on. */
static void test_a_late_cache_is_weighed_against_the_jumps_about_it(void **st)
{
  (void)st;
  double y[M], jump[M], plain[M];
  unsigned char have[M];
  uint32_t r = 5;
  for(unsigned k = 0; k < M; k++) {
    y[k] = 150 + 400 * (1 - exp(-(double)k / 5)) + noise(&r);
    jump[k] = 3 + 20 * exp(-(double)k / 5) + 0.3 * noise(&r);
    have[k] = 1;
  }
  memcpy(plain, y, sizeof(y));
  cache(y, 12, 16);
  jump[11] = 20;
  mdp_detector_steps_remove_jumps(y, have, jump, M, 1);
  for(unsigned k = 0; k < 12; k++)
    assert_true(y[k] == plain[k]);
  for(unsigned k = 12; k < M; k++)
    assert_true(fabs(y[k] - plain[k]) < 4);
}

static void test_a_spike_is_no_step(void **st)
{
  (void)st;
  double y[M], jump[M];
  unsigned char have[M];
  warmup(y, jump, have);
  /* One sample 150 MiB up and back: the bucket's least sample, and so
   * every point, as before; the next point stands 2.5 MiB high by noise. */
  jump[5] = 150;
  y[6] += 2.5;
  assert_left_alone(y, have, jump);
}

static void test_a_leaks_points_are_left_alone(void **st)
{
  (void)st;
  double y[M], jump[M];
  unsigned char have[M];
  uint32_t r = 5;
  for(unsigned k = 0; k < M; k++) {
    y[k] = 200 + 13 * k + 3 * noise(&r);
    jump[k] = 6 + 2 * noise(&r);
    have[k] = 1;
  }
  assert_left_alone(y, have, jump);
  /* Too few buckets with a jump known: nothing to compare with. */
  cache(y, 3, 40);
  for(unsigned k = 0; k < M; k++)
    jump[k] = k == 2 ? 43 : k < 4 ? 5 : -1;
  assert_left_alone(y, have, jump);
}

static void test_a_jump_at_the_end_is_left_to_pending(void **st)
{
  (void)st;
  double y[M], jump[M];
  unsigned char have[M];
  warmup(y, jump, have);
  cache(y, M - 1, 36);
  jump[M - 2] = 39;
  assert_left_alone(y, have, jump);
  assert_int_equal(mdp_detector_steps_pending(y, have, M, 1), 1);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_a_cache_in_the_first_minute_is_taken_out),
      cmocka_unit_test(test_a_jump_after_the_least_sample_lifts_the_next_point),
      cmocka_unit_test(test_a_late_cache_is_weighed_against_the_jumps_about_it),
      cmocka_unit_test(test_a_spike_is_no_step),
      cmocka_unit_test(test_a_leaks_points_are_left_alone),
      cmocka_unit_test(test_a_jump_at_the_end_is_left_to_pending),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
