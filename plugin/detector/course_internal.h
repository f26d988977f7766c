/* What the course fit's two files share (course.c, course_tail.c; prefix
 * mdp_course_): the sums of a least-squares line. Internal to the
 * detector: no other file includes it. */
#ifndef MDP_COURSE_INTERNAL_H
#define MDP_COURSE_INTERNAL_H

/* Sums over points (x, y): count, x, x squared, y, x y, y squared (an
 * mdp_robust_line's sums and y squared, for the squared errors). */
typedef struct {
  double s0, sx, sxx, sy, sxy, syy;
} mdp_course_sums;

/* The slope of the least-squares line through the summed points
 * (mdp_robust_line_fit; 0 when it has none); in *sse (may be NULL) its
 * squared error. */
double mdp_course_sums_slope(const mdp_course_sums *s, double *sse);

#endif
