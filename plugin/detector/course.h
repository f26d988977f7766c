/* The course of a memory series (prefix mdp_course_): what its lower
 * envelope is doing, fitted from equally spaced points, and when that
 * course reaches a level. Pure code used by the detector (detector.c): no
 * clock, no I/O, no allocation, no globals; safe from any thread on
 * caller-owned data.
 *
 * Four courses are tried, each y(x) = a + c * x + b * q^x fitted by least
 * squares on the points (x counted in points, from the first):
 *   steady        b = 0: a straight line, slope c
 *   plateau       c = 0, 0 < q < 1: an exponential approach to the plateau a,
 *                 time constant -1 / ln q points (a warm-up levelling off)
 *   settling      0 < q < 1 and c free: a steady slope c under a warm-up that
 *                 dies out (a leak from start-up beside a cache filling);
 *                 with mdp_course_opts.late_start, the slope may start at a
 *                 later point x0 (y = a + c * max(0, x - x0) + b * q^x: a
 *                 leak that starts while a warm-up still runs)
 *   accelerating  c = 0, q > 1, b > 0: growth that speeds up
 * over a fixed grid of time constants. The winner is the course with the
 * best balance of fit and parameters (the corrected Akaike criterion), so a
 * straight line with noise is not called a plateau by chance, and the points
 * far from it (spikes, a sawtooth peak that survived the envelope) are left
 * out of a second fit. The values are whatever the caller measures (a
 * worker's RSS, a cgroup's charge): nothing here knows which.
 */
#ifndef MDP_COURSE_H
#define MDP_COURSE_H

#define MDP_COURSE_MAX_POINTS 48

typedef enum {
  MDP_COURSE_NONE, /* too few points */
  MDP_COURSE_STEADY,
  MDP_COURSE_PLATEAU,
  MDP_COURSE_SETTLING,
  MDP_COURSE_ACCELERATING
} mdp_course_kind;

typedef struct {
  mdp_course_kind kind;
  double a, b, c, q;  /* y(x) = a + c * x + b * q^x (q = 1, b = 0: steady) */
  double x0;          /* settling: the point its slope starts from (c * (x - x0)
                         from there, nothing before); 0 but with late_start */
  double scatter;     /* median distance of the points kept from the curve */
  unsigned used;      /* points kept in the final fit */
  double first, last; /* x of the first and last point used */
  double against;     /* evidence against any course that levels off at or
                         below the level asked about: how much worse the best
                         such course fits than this one, in units of this
                         one's noise (an F ratio); 0 when one fits as well,
                         or when a plateau with one upward step (a cache
                         loaded at once) fits as well and within the
                         points' noise */
  unsigned dof;       /* degrees of freedom left to the noise */
} mdp_course;

/* Fits y[0..n) (n <= MDP_COURSE_MAX_POINTS; a point whose have[i] is 0 is
 * a hole and ignored; have may be NULL). Needs 4 points or more, else kind
 * is MDP_COURSE_NONE. level is the level the caller fears (the limit): see
 * `against`. */
void mdp_course_fit(const double *y, const unsigned char *have, unsigned n, double level,
                    mdp_course *c);

/* What mdp_course_fit_with asks besides the points. */
typedef struct {
  double level;                /* as for mdp_course_fit */
  double noise_floor;          /* the least noise per point (standard deviation, in
                                  y's units) the F tests assume (0: none). Where the
                                  points' noise is slight, what a fit leaves is the
                                  shape's own error, and a course one parameter more
                                  flexible beats a plateau "at 99 %" */
  double unit;                 /* what the one-step plateau's least step is counted
                                  in (STEP_ALT_MIN: 16 of them), in y's units; 0: a
                                  MiB of bytes */
  int late_start;              /* 1: also try settling courses whose slope starts at
                                  a later point (x0), kept only when they beat every
                                  plateau and the course chosen without them beyond
                                  chance (docs/detector.md, "a leak that starts under
                                  a warm-up"); 0: every slope from the first point */
  const unsigned char *jumped; /* n flags (NULL: none): the points whose
                                  bucket saw a sample jump over the one
                                  before it; a plateau's cache starting
                                  there (or at the point after) counts from
                                  STEP_ALT_JUMPED_MIN units, not STEP_ALT_MIN
                                  (course.c). Borrowed: read during the
                                  call only */
} mdp_course_opts;

/* mdp_course_fit with options; mdp_course_fit is this with noise_floor 0
 * (and no jumps). */
void mdp_course_fit_with(const double *y, const unsigned char *have, unsigned n,
                         const mdp_course_opts *o, mdp_course *c);

/* `against` over the F ratio that chance exceeds 1 time in 100 at this
 * course's degrees of freedom: 1 or more when the data rule out (at that
 * confidence) every course that levels off at or below the level. */
double mdp_course_ruled_out(const mdp_course *c);

/* The fitted value and slope (per point) at x (a late start's slope
 * counts from x0 on). */
double mdp_course_at(const mdp_course *c, double x);
double mdp_course_slope(const mdp_course *c, double x);

/* The plateau of a levelling-off course (kind plateau, rising to it); -1
 * for any other. */
double mdp_course_plateau(const mdp_course *c);

/* Points from x until the course first reaches level (0 when it is there
 * already); -1 when it never does (a plateau below it, or no growth). An
 * accelerating course is projected at its slope at x, a straight line: its
 * speeding up is not extrapolated. */
double mdp_course_reach(const mdp_course *c, double x, double level);

/* The straight run of the last points (mdp_course_tail): the first of
 * them and the line's slope (per point). */
typedef struct {
  unsigned start;
  double slope;
} mdp_course_run;

/* How many of the last points of y[0..n) lie on one straight line within
 * 3 times their noise (the run mdp_course_knee looks for); 0 with too few
 * points to tell the noise. When it is not 0 and run is not NULL, *run
 * says where the run starts and how steeply it climbs. */
unsigned mdp_course_tail(const double *y, const unsigned char *have, unsigned n, double sd_floor,
                         mdp_course_run *run);

/* The last change of slope in y[0..n) (have as for mdp_course_fit): the
 * first of the last points that lie on one straight line, when that line
 * climbs faster than the points before it, as a leak that starts after a
 * warm-up has levelled off. The run is the longest of the last points (6
 * or more) that a straight line fits within 3 times their noise (the
 * variance their second differences show, at least sd_floor squared); it
 * counts when its slope is at least 1.5 times that of the points before it
 * (the lesser of the slopes of the 6 and of the 3 points before it; or
 * when that slope is not positive) plus the noise's standard deviation per
 * point. 0 when there is no such run (or it starts at point 0 or 1). */
unsigned mdp_course_knee(const double *y, const unsigned char *have, unsigned n, double sd_floor);

#endif
