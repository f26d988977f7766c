/* The course points under teeth shorter than a bucket: see
 * detector_short.h. Pure code, as the rest of the detector. */
#include <math.h>
#include <string.h>

#include "detector_means.h"
#include "detector_short.h"
#include "robust.h"

#define CB MDP_DETECTOR_COURSE_BUCKETS

/* Nearly every bucket (SHORT_SHARE of those with samples, SHORT_DROPS or
 * more) holds a drop, and their median fall is SHORT_FALL or more (as
 * MEAN_FALL in detector_points.c: real drops). A bucket's largest fall is
 * one of its teeth's, so the drops seen are whole numbers of teeth apart,
 * at times known to a sampling interval (each trough is the first sample
 * after its drop). drops_periodic (detector_points.c) asks the gaps for
 * one period and its multiples and finds none (gaps of one and of two
 * teeth); short_period asks for the longest period, from SHORT_LEAST
 * sampling intervals up to SHORT_MOST buckets, whose line every drop seen
 * but one in SHORT_ODD lies on within SHORT_SLACK of an interval. A period
 * of under SHORT_LEAST intervals is not looked for: its teeth are a few
 * samples, an interval off is most of a tooth, and random falls fit as
 * well. Before, no period was found, each point was its bucket's mean
 * less its largest sample, and with where the samples fell in the teeth
 * changing bucket by bucket the points scattered by half a tooth: under
 * 74 MiB teeth of 41 s a 13 MiB/min leak rose 34, 12, 11, 9, 15, 8, 7, 36,
 * -2, 27, -8 MiB a point and was captured at minute 25.8, asked by minute
 * 16.1 (held-out-9006 fast-leak-053 of the 9001-9060 draws; 13.8 since the
 * seventh stop of 2026-12-07). */
#define SHORT_SHARE 0.8
#define SHORT_DROPS 6
#define SHORT_FALL  8.0 /* mdp_detector_unit */
#define SHORT_LEAST 3.5
#define SHORT_MOST  1.5
#define SHORT_SLACK 0.6
#define SHORT_ODD   8

/* The drops as teeth: their troughs' times x, each one's tooth number on a
 * candidate period, and which lie on its line. */
typedef struct {
  const double *x;
  double tooth[CB];
  unsigned char on[CB];
  unsigned n;
  double dt, slack;
} teeth;

/* The teeth's line (o + p * tooth), least squares through those on it;
 * returns how many of all lie within the slack of it (0: no line). */
static unsigned teeth_line(const teeth *t, double *o, double *p)
{
  mdp_robust_line l = {0};
  for(unsigned i = 0; i < t->n; i++)
    if(t->on[i])
      mdp_robust_line_add(&l, t->tooth[i], t->x[i]);
  if(!mdp_robust_line_fit(&l, 2, p, o))
    return 0;
  unsigned near = 0;
  for(unsigned i = 0; i < t->n; i++)
    near += fabs(t->x[i] - *o - *p * t->tooth[i]) <= t->slack;
  return near;
}

/* When the first tooth fell, for teeth of period p whose troughs (those on
 * the line) each came up to an interval after their drop: the middle of
 * the times every such trough allows (its drop no later than it, and
 * within an interval before it), not the least-squares line's less half an
 * interval (o, kept when no time fits every trough). A sample a second or
 * two after a drop whose line stood that much later counts at the end of
 * its tooth, not its start: a whole tooth's ramp on one sample of six. */
static double teeth_origin(const teeth *t, double p, double o)
{
  double lo = -INFINITY, hi = INFINITY;
  for(unsigned i = 0; i < t->n; i++) {
    if(!t->on[i])
      continue;
    lo = fmax(lo, t->x[i] - p * t->tooth[i] - t->dt);
    hi = fmin(hi, t->x[i] - p * t->tooth[i]);
  }
  return hi >= lo ? (lo + hi) / 2 : o - t->dt / 2;
}

/* The period (buckets; 0: none) and in *origin when the first tooth fell. */
static double short_period(const mdp_detector_short_drops *dr, double *origin)
{
  teeth t = {dr->x, {0}, {0}, dr->n, dr->dt, SHORT_SLACK * dr->dt};
  double best = 0, least = SHORT_LEAST * dr->dt;
  unsigned need = dr->n - dr->n / SHORT_ODD;
  for(unsigned i = 1; i < dr->n; i++) {
    for(unsigned whole = 1; whole <= 3; whole++) {
      double cand = (dr->x[i] - dr->x[i - 1]) / whole, o, p;
      if(cand < least || cand > SHORT_MOST || cand <= best)
        continue;
      t.tooth[0] = 0;
      for(unsigned j = 1; j < dr->n; j++)
        t.tooth[j] = t.tooth[j - 1] + fmax(floor((dr->x[j] - dr->x[j - 1]) / cand + 0.5), 1);
      memset(t.on, 1, dr->n);
      if(teeth_line(&t, &o, &p) < need)
        continue;
      for(unsigned j = 0; j < dr->n; j++)
        t.on[j] = fabs(dr->x[j] - o - p * t.tooth[j]) <= t.slack;
      if(teeth_line(&t, &o, &p) < need || p < least || p > SHORT_MOST)
        continue;
      best = p;
      *origin = teeth_origin(&t, p, o);
    }
  }
  return best;
}

/* The teeth found: their period and ramp (per bucket) and when the first
 * fell (buckets from the ring's first). */
typedef struct {
  double period, ramp, origin;
} short_saw;

/* What the teeth add to each bucket's mean: the ramp times the mean phase
 * of its samples, taken evenly spaced dt apart about their mean time (a
 * bucket keeps no sample's own). */
static void short_lift(const mdp_detector *d, unsigned m, double dt, const short_saw *s,
                       double *lift)
{
  for(unsigned k = 0; k < m; k++) {
    const mdp_detector_point *b = mdp_detector_course_bucket(d, m, k);
    double n = b->count, phases = 0;
    lift[k] = 0;
    if(!(n > 0))
      continue;
    double mid = k + b->sum_at / n;
    for(double j = 0; j < n; j++) {
      double at = mid + (j - (n - 1) / 2) * dt - s->origin;
      phases += at - s->period * floor(at / s->period);
    }
    lift[k] = s->ramp * phases / n;
  }
}

int mdp_detector_short_gate(const mdp_detector *d, const mdp_detector_short_drops *dr)
{
  double falls[CB];
  if(dr->n < SHORT_DROPS || dr->n < SHORT_SHARE * dr->filled || dr->n > CB)
    return 0;
  memcpy(falls, dr->falls, dr->n * sizeof(falls[0]));
  return !(mdp_robust_median(falls, dr->n) < SHORT_FALL * mdp_detector_unit(d));
}

int mdp_detector_short_points(const mdp_detector *d, unsigned m, const mdp_detector_short_drops *dr,
                              double *y, const unsigned char *have, mdp_detector_saw *si)
{
  double lift[CB];
  if(dr->n > CB) /* the gate's bound, for the arrays */
    return 0;
  short_saw s = {0, 0, 0};
  s.period = short_period(dr, &s.origin);
  /* The ramp the falls gave back with what the envelope's trend took off
   * them (dr->lost): mdp_detector_saw_ramp; 0 when the period is not
   * longer than the two intervals a fall is measured over. */
  double fell = dr->lost;
  for(unsigned i = 0; i < dr->n; i++)
    fell += dr->falls[i];
  s.ramp = mdp_detector_saw_ramp(fell, dr->n, s.period, dr->dt);
  if(!(s.ramp > 0))
    return 0;
  short_lift(d, m, dr->dt, &s, lift);
  si->period = s.period;
  si->ramp = s.ramp;
  /* The teeth climb s.ramp * dt between two samples: part of every
   * bucket's largest jump, not a cache's. */
  si->rise = s.ramp * dr->dt;
  mdp_detector_means_less(d, m, y, have, lift, si);
  return 1;
}
