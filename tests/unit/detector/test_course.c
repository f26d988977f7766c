/* The course fit (plugin/detector/course.c): a straight line is steady and
 * reaches a level at its slope; an exponential approach is a plateau that
 * never reaches a level above it, and is found under noise and a spike; a
 * line under a dying warm-up is settling and keeps its slope; too few
 * points say nothing; a leak that starts after a warm-up has levelled off
 * is found where it starts, and neither a straight line nor a warm-up
 * alone has such a knee; one that starts while a warm-up still runs is
 * fitted from its start (late_start), a cache in a warm-up's first minute
 * is not. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "detector/course.h"

#define N 40

static double noise(uint32_t *s)
{
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return (double)*s / 2147483647.5 - 1.0;
}

static void test_line_is_steady(void **st)
{
  (void)st;
  double y[N];
  uint32_t r = 7;
  mdp_course c;
  for(int i = 0; i < N; i++)
    y[i] = 300 + 12 * i + 1.5 * noise(&r);
  mdp_course_fit(y, NULL, N, 1000, &c);
  assert_int_equal(c.kind, MDP_COURSE_STEADY);
  assert_true(fabs(mdp_course_slope(&c, N) - 12) < 0.3);
  /* From 780 at x = 40 to 1000: about 18 points at 12 per point. */
  double reach = mdp_course_reach(&c, N, 1000);
  assert_true(reach > 17 && reach < 20);
  assert_true(mdp_course_plateau(&c) < 0);
  assert_true(mdp_course_ruled_out(&c) >= 1); /* nothing levels off below 1000 */
}

/* A noise floor above the points' own noise weighs the evidence against a
 * plateau by the floor instead: the same course, `against` smaller by the
 * ratio of the two variances; a floor of 0 is mdp_course_fit. */
static void test_noise_floor_weighs_the_evidence(void **st)
{
  (void)st;
  double y[N];
  uint32_t r = 7;
  mdp_course c, c0, cf;
  for(int i = 0; i < N; i++)
    y[i] = 300 + 12 * i + 1.5 * noise(&r);
  mdp_course_fit(y, NULL, N, 1000, &c);
  mdp_course_opts o = {1000, 0, 0, 0, NULL};
  mdp_course_fit_with(y, NULL, N, &o, &c0);
  assert_true(c0.kind == c.kind && c0.against == c.against && c0.a == c.a);
  o.noise_floor = 5;
  mdp_course_fit_with(y, NULL, N, &o, &cf);
  assert_int_equal(cf.kind, c.kind);
  assert_true(cf.against > 0 && cf.against < c.against);
  double var = c.against > 0 ? cf.against / c.against * 25 : 0; /* the points' own variance */
  assert_true(var > 0.2 && var < 1.5);                          /* 1.5 * uniform: 0.75 */
}

static void test_approach_is_plateau(void **st)
{
  (void)st;
  double y[N];
  uint32_t r = 11;
  mdp_course c;
  for(int i = 0; i < N; i++)
    y[i] = 700 - 500 * exp(-i / 15.0) + 2 * noise(&r);
  y[20] += 150; /* a spike the envelope kept */
  mdp_course_fit(y, NULL, N, 1000, &c);
  assert_int_equal(c.kind, MDP_COURSE_PLATEAU);
  assert_true(fabs(mdp_course_plateau(&c) - 700) < 25);
  assert_true(mdp_course_reach(&c, N, 1000) < 0);
  assert_true(mdp_course_reach(&c, N, 600) >= 0);
  assert_true(mdp_course_ruled_out(&c) < 1); /* it does level off below 1000 */
}

static void test_line_under_warmup_is_settling(void **st)
{
  (void)st;
  double y[N];
  uint32_t r = 13;
  mdp_course c;
  for(int i = 0; i < N; i++)
    y[i] = 250 + 10 * i + 150 * (1 - exp(-i / 4.0)) + 1.5 * noise(&r);
  mdp_course_fit(y, NULL, N, 1000, &c);
  assert_int_equal(c.kind, MDP_COURSE_SETTLING);
  assert_true(fabs(mdp_course_slope(&c, N) - 10) < 1);
  assert_true(mdp_course_reach(&c, N, 1000) > 0);
}

/* A warm-up (time constant 6 points, to 700 MiB) with a cache of 30 MiB
 * loaded at once at point 14, 20 points, noise +-3 MiB, ten seeds: a
 * plateau on the way, not a leak; no course that levels off below 900 MiB
 * may be ruled out. Before the settling course's F test counted its time
 * constant and a plateau with a step counted as levelling off, 6 of the
 * 10 were ruled out at 3-10 times the 99 % point. */
static void test_warmup_with_loaded_cache_levels_off(void **st)
{
  (void)st;
  const double mib = 1024.0 * 1024.0;
  for(uint32_t seed = 1; seed <= 10; seed++) {
    double y[20];
    uint32_t r = seed;
    mdp_course c;
    for(int i = 0; i < 20; i++)
      y[i] = (670 - 600 * exp(-i / 6.0) + (i >= 14 ? 30 : 0) + 3 * noise(&r)) * mib;
    mdp_course_fit(y, NULL, 20, 900 * mib, &c);
    assert_true(mdp_course_ruled_out(&c) < 1);
  }
}

/* A warm-up of 33 points' time constant (from 90 towards 815 MiB: as
 * standard-9011 warmup-015 of the 9001-9060 draws) with a cache
 * of 12 MiB loaded after its second point, noise +-3 MiB, ten seeds: a
 * cache that early, which the detector cannot take out by its local pace,
 * counts for the plateau with a step from 8 MiB, and nothing below 900 MiB
 * is ruled out (before, the fit read the cache as a warm-up dying out
 * beside a line, and ruled the plateaus out). A leak (15 MiB a point) with
 * that early step still rules every plateau out. */
static void test_early_cache_counts_for_a_plateau(void **st)
{
  (void)st;
  const double mib = 1024.0 * 1024.0;
  for(uint32_t seed = 1; seed <= 10; seed++) {
    double y[20], l[20];
    uint32_t r = seed;
    mdp_course c;
    for(int i = 0; i < 20; i++) {
      double n = 3 * noise(&r), warm = 90 + 725 * (1 - exp(-i / 33.0)) + n;
      y[i] = (warm + (i >= 2 ? 12 : 0)) * mib;
      l[i] = (250 + 15 * i + (i >= 2 ? 12 : 0) + n) * mib;
    }
    mdp_course_fit(y, NULL, 20, 900 * mib, &c);
    assert_true(mdp_course_ruled_out(&c) < 0.2);
    mdp_course_fit(l, NULL, 20, 900 * mib, &c);
    assert_true(mdp_course_ruled_out(&c) >= 1);
  }
}

static void test_holes_and_too_few_points(void **st)
{
  (void)st;
  double y[N];
  unsigned char have[N] = {0};
  mdp_course c;
  for(int i = 0; i < N; i++)
    y[i] = 100 + i;
  have[3] = have[9] = have[20] = 1;
  mdp_course_fit(y, have, N, 1000, &c);
  assert_int_equal(c.kind, MDP_COURSE_NONE);
  assert_true(mdp_course_reach(&c, N, 1000) < 0);
  have[30] = have[35] = 1;
  mdp_course_fit(y, have, N, 1000, &c);
  assert_int_equal(c.kind, MDP_COURSE_STEADY);
  assert_true(fabs(mdp_course_at(&c, 10) - 110) < 1e-6);
}

static void test_leak_after_warmup_has_a_knee(void **st)
{
  (void)st;
  double y[N];
  uint32_t r = 11;
  for(int i = 0; i < 24; i++) {
    y[i] = 330 - 150 * exp(-i / 2.5) + 2.0 * noise(&r);
    if(i > 13)
      y[i] += 14 * (i - 13);
  }
  unsigned k = mdp_course_knee(y, NULL, 24, 1.5);
  assert_true(k >= 12 && k <= 15);
  /* The warm-up alone, and a straight line: no knee. */
  for(int i = 0; i < 24; i++)
    y[i] = 330 - 150 * exp(-i / 6.0) + 2.0 * noise(&r);
  assert_int_equal(mdp_course_knee(y, NULL, 24, 1.5), 0);
  for(int i = 0; i < 24; i++)
    y[i] = 200 + 13 * i + 2.0 * noise(&r);
  assert_int_equal(mdp_course_knee(y, NULL, 24, 1.5), 0);
}

/* A leak that starts while a warm-up still dies out (standard-9044
 * fast-leak-039 of the 9001-9060 draws at minute 14, MiB): over the six
 * points before its run the slope is more than half the run's 16 a point,
 * over the three just before it (rises of 9 and 7) about half. Twice the six
 * points' slope found no knee until minute 21. */
static void test_knee_after_a_warmup_still_dying_out(void **st)
{
  (void)st;
  const double pts[] = {313, 339, 368, 389, 405, 418, 427, 434, 439, 448, 466, 482, 498, 514, 530};
  unsigned n = sizeof(pts) / sizeof(pts[0]);
  unsigned k = mdp_course_knee(pts, NULL, n, 1.5);
  assert_true(k >= 8 && k <= 9);
  /* Its first ten points, the warm-up and the leak's first two: none. */
  assert_int_equal(mdp_course_knee(pts, NULL, 10, 1.5), 0);
  /* A warm-up whose pace falls as fast, with no leak after it: none. */
  double y[N];
  uint32_t r = 3;
  for(unsigned i = 0; i < n; i++)
    y[i] = 460 - 150 * exp(-(double)i / 3.5) + 1.5 * noise(&r);
  assert_int_equal(mdp_course_knee(y, NULL, n, 1.5), 0);
}

/* A leak under a warm-up that dies out runs straight at its end; a
 * warm-up whose last minutes carry two loaded caches does not (the early
 * path asks this of a settling course). */
static void test_tail_runs_straight_after_a_warmup_not_over_caches(void **st)
{
  (void)st;
  double y[N];
  uint32_t r = 5;
  for(int i = 0; i < 22; i++)
    y[i] = 400 - 250 * exp(-i / 4.0) + 12 * i + 2.0 * noise(&r);
  mdp_course_run run = {0};
  assert_true(mdp_course_tail(y, NULL, 22, 1.5, &run) >= 10);
  /* The tail's line climbs at about the leak's pace (12 a point, with a
   * little of the warm-up's end), not the warm-up's (62 at first). */
  assert_true(run.slope > 12 && run.slope < 15);
  for(int i = 0; i < 22; i++)
    y[i] = 780 - 650 * exp(-i / 9.0) + (i >= 17 ? 22 : 0) + (i >= 19 ? 25 : 0) + 2.0 * noise(&r);
  assert_true(mdp_course_tail(y, NULL, 22, 1.5, NULL) < 6);
  /* Too few points to tell the noise. */
  assert_int_equal(mdp_course_tail(y, NULL, 5, 1.5, &run), 0);
}

/* A leak that starts while a warm-up still runs (13.2 a point from point
 * 5, under 180 with a time constant of 3.9 points): from the first point,
 * a settling course lacks the slope before the start and a plateau fits
 * as well, so nothing is ruled out; with late_start its slope starts near
 * point 5, keeps the leak's pace and rules every plateau out. A warm-up
 * with a cache loaded in its first minute is no late start: no start is
 * tried in its first four points, where one would bend to the cache. */
static void test_leak_under_a_running_warmup_starts_late(void **st)
{
  (void)st;
  enum { M = 12 };
  /* The early path's points at minute 12 of standard-9004 fast-leak-003
   * (docs/detector.md), in MiB. */
  double y[M] = {212.368, 250.741, 281.282, 302.358, 320.865, 338.305,
                 362.454, 384.446, 404.586, 421.604, 439.602, 455.317};
  mdp_course c;
  mdp_course_opts o = {900, 1, 1, 0, NULL};
  mdp_course_fit_with(y, NULL, M, &o, &c);
  print_message("from the first point: kind %d x0 %.0f ruled out %.2f\n", c.kind, c.x0,
                mdp_course_ruled_out(&c));
  assert_true(mdp_course_ruled_out(&c) < 1);
  o.late_start = 1;
  mdp_course_fit_with(y, NULL, M, &o, &c);
  print_message("late start: kind %d x0 %.0f slope %.1f ruled out %.2f\n", c.kind, c.x0, c.c,
                mdp_course_ruled_out(&c));
  assert_int_equal(c.kind, MDP_COURSE_SETTLING);
  assert_true(c.x0 >= 3 && c.x0 <= 7);
  assert_true(fabs(c.c - 13.2) < 2); /* the leak's own pace, under the warm-up's end */
  assert_true(mdp_course_ruled_out(&c) >= 1);
  /* held-out-9031 warmup-034 at minute 11: a warm-up of 8.5 minutes'
   * time constant with a 13.5 MiB cache loaded 41 s in. A start at point
   * 3, after the steep first minutes, rules out every plateau at 5.3 times
   * the 99 % point; none is tried before point 4. */
  double cache[] = {254.929, 301.817, 334.093, 355.764, 379.865, 400.657,
                    417.256, 435.631, 448.977, 464.392, 475.626};
  mdp_course_fit_with(cache, NULL, 11, &o, &c);
  print_message("cache at point 1: kind %d x0 %.0f ruled out %.2f\n", c.kind, c.x0,
                mdp_course_ruled_out(&c));
  assert_true(c.x0 == 0 && mdp_course_ruled_out(&c) < 1);
}

/* A warm-up of 25 points' time constant (from 150 towards 780 MiB) with a
 * cache of 12 MiB loaded at point 9, noise +-1.5 MiB, ten seeds: under
 * STEP_ALT_MIN (16 MiB), so the plateau with that cache does not count and
 * the bend the cache hides rules the plateaus out (8 of the 10); where the
 * caller saw a
 * sample jump at point 9 (jumped), it counts from 8 MiB and nothing below
 * 900 MiB is ruled out (standard-9148 warmup-106: a 13.9 MiB cache; sixth
 * stop of 2026-12-07). A leak (13 MiB a point) whose bucket 8 saw a jump
 * of noise still rules every plateau out: no plateau and 8 MiB step bends
 * into a line. */
static void test_cache_seen_jumping_counts_from_8(void **st)
{
  (void)st;
  enum { M = 13 };
  const double mib = 1024.0 * 1024.0;
  unsigned ruled_without = 0;
  for(uint32_t seed = 1; seed <= 10; seed++) {
    double y[M], l[M];
    unsigned char jumped[M] = {0};
    uint32_t r = seed;
    mdp_course c;
    for(int i = 0; i < M; i++) {
      double n = 1.5 * noise(&r);
      y[i] = (150 + 630 * (1 - exp(-i / 25.0)) + (i >= 9 ? 12 : 0) + n) * mib;
      l[i] = (220 + 13 * i + n) * mib;
    }
    mdp_course_opts o = {900 * mib, mib, mib, 0, NULL};
    mdp_course_fit_with(y, NULL, M, &o, &c);
    print_message("seed %u: without the jump ruled out %.2f", seed, mdp_course_ruled_out(&c));
    ruled_without += mdp_course_ruled_out(&c) >= 1;
    jumped[9] = 1;
    o.jumped = jumped;
    mdp_course_fit_with(y, NULL, M, &o, &c);
    print_message(", with it %.2f", mdp_course_ruled_out(&c));
    assert_true(mdp_course_ruled_out(&c) < 1);
    jumped[9] = 0;
    jumped[8] = 1;
    mdp_course_fit_with(l, NULL, M, &o, &c);
    print_message("; the leak %.2f\n", mdp_course_ruled_out(&c));
    assert_true(mdp_course_ruled_out(&c) >= 1);
  }
  assert_true(ruled_without >= 6);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_line_is_steady),
      cmocka_unit_test(test_noise_floor_weighs_the_evidence),
      cmocka_unit_test(test_approach_is_plateau),
      cmocka_unit_test(test_line_under_warmup_is_settling),
      cmocka_unit_test(test_warmup_with_loaded_cache_levels_off),
      cmocka_unit_test(test_early_cache_counts_for_a_plateau),
      cmocka_unit_test(test_holes_and_too_few_points),
      cmocka_unit_test(test_leak_after_warmup_has_a_knee),
      cmocka_unit_test(test_knee_after_a_warmup_still_dying_out),
      cmocka_unit_test(test_tail_runs_straight_after_a_warmup_not_over_caches),
      cmocka_unit_test(test_leak_under_a_running_warmup_starts_late),
      cmocka_unit_test(test_cache_seen_jumping_counts_from_8),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
