/* The straight tail of a course's points and the knee where it starts
 * (mdp_course_tail, mdp_course_knee: see course.h). Pure code, as the
 * rest of the course fit (course.c). */
#include <math.h>
#include <string.h>

#include "course.h"
#include "course_internal.h"
#include "robust.h"

/* mdp_course_knee: see course.h (KNEE_NEAR: the eighth stop of 2026-12-06, docs/detector.md) */
#define KNEE_AFTER  6
#define KNEE_BEFORE 6
#define KNEE_NEAR   3
#define KNEE_GAIN   1.5
#define KNEE_RISE   1.0
#define TAIL_CHI    3.0
static void sums_add(mdp_course_sums *s, double x, double y)
{
  s->s0++;
  s->sx += x;
  s->sxx += x * x;
  s->sy += y;
  s->sxy += x * y;
  s->syy += y * y;
}

/* The noise variance y's second differences show (at least sd_floor
 * squared); -1 with fewer than 5 of them. */
static double second_diff_var(const double *y, const unsigned char *have, unsigned m,
                              double sd_floor)
{
  double d2[MDP_COURSE_MAX_POINTS];
  unsigned n2 = 0;
  for(unsigned k = 1; k + 1 < m; k++)
    if(!have || (have[k - 1] && have[k] && have[k + 1])) {
      double d = y[k + 1] - 2 * y[k] + y[k - 1];
      d2[n2++] = d * d;
    }
  if(n2 < 5)
    return -1;
  /* White noise of variance v: second differences of variance 6 v, their
   * squares' median 0.455 times that. */
  double var = mdp_robust_median(d2, n2) / (6 * 0.455);
  return var < sd_floor * sd_floor ? sd_floor * sd_floor : var;
}

/* The longest run of the last points that a straight line fits within
 * TAIL_CHI times the noise (var, from the second differences): how many,
 * the first, and their sums (taken less ref, the first point's value). */
typedef struct {
  unsigned n, start;
  double var, ref;
  mdp_course_sums line;
} tail_run_t;

/* Fills out from y[0..m) (its first MDP_COURSE_MAX_POINTS); 0 when there
 * are too few points to tell the noise. */
static int tail_run(const double *y, const unsigned char *have, unsigned m, double sd_floor,
                    tail_run_t *out)
{
  if(m > MDP_COURSE_MAX_POINTS)
    m = MDP_COURSE_MAX_POINTS;
  memset(out, 0, sizeof(*out));
  if((out->var = second_diff_var(y, have, m, sd_floor)) < 0)
    return 0;
  out->ref = -1;
  for(unsigned k = 0; k < m && out->ref < 0; k++)
    if(!have || have[k])
      out->ref = y[k];
  for(unsigned k = m; k-- > 0;) {
    if(have && !have[k])
      continue;
    mdp_course_sums t = out->line;
    sums_add(&t, k, y[k] - out->ref);
    double sse;
    mdp_course_sums_slope(&t, &sse);
    if(t.s0 >= 3 && sse > TAIL_CHI * out->var * (t.s0 - 2))
      break;
    out->line = t;
    out->start = k;
    out->n++;
  }
  return 1;
}

unsigned mdp_course_tail(const double *y, const unsigned char *have, unsigned m, double sd_floor,
                         mdp_course_run *out)
{
  tail_run_t run;
  if(!tail_run(y, have, m, sd_floor, &run))
    return 0;
  if(out) {
    out->start = run.start;
    out->slope = mdp_course_sums_slope(&run.line, NULL);
  }
  return run.n;
}

unsigned mdp_course_knee(const double *y, const unsigned char *have, unsigned m, double sd_floor)
{
  tail_run_t run;
  if(!tail_run(y, have, m, sd_floor, &run) || run.n < KNEE_AFTER || run.start < 2)
    return 0;
  mdp_course_sums before = {0}, near = {0};
  for(unsigned k = run.start, got = 0; k-- > 0 && got < KNEE_BEFORE;)
    if(!have || have[k]) {
      sums_add(&before, k, y[k] - run.ref);
      if(got++ < KNEE_NEAR)
        sums_add(&near, k, y[k] - run.ref);
    }
  if(before.s0 < 2)
    return 0;
  /* near holds 2 points or more when before does */
  double b_tail = mdp_course_sums_slope(&run.line, NULL);
  double b_before = fmin(mdp_course_sums_slope(&before, NULL), mdp_course_sums_slope(&near, NULL));
  if(!(b_tail > KNEE_GAIN * (b_before > 0 ? b_before : 0) + KNEE_RISE * sqrt(run.var)))
    return 0;
  return run.start;
}
