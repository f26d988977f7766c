/* Robust statistics for the detector's fits: see robust.h. */
#include "robust.h"

/* k-th smallest of v[0..n) (reorders v). Quickselect: the read callback
 * re-fits every worker's windows, and a full sort was most of its cost. */
static double select_kth(double *v, int n, int k)
{
  int lo = 0, hi = n - 1;
  while(lo < hi) {
    double pivot = v[lo + (hi - lo) / 2];
    int i = lo, j = hi;
    while(i <= j) {
      while(v[i] < pivot)
        i++;
      while(v[j] > pivot)
        j--;
      if(i <= j) {
        double tmp = v[i];
        v[i++] = v[j];
        v[j--] = tmp;
      }
    }
    /* v[lo..j] <= pivot <= v[i..hi], and what lies between equals it. */
    if(k <= j)
      hi = j;
    else if(k >= i)
      lo = i;
    else
      break;
  }
  return v[k];
}

double mdp_robust_median(double *v, unsigned n)
{
  double hi = select_kth(v, (int)n, (int)(n / 2));
  if(n % 2)
    return hi;
  /* The lower middle is the largest of what quickselect left below. */
  double lo = v[0];
  for(unsigned i = 1; i < n / 2; i++)
    if(v[i] > lo)
      lo = v[i];
  return (lo + hi) / 2.0;
}

void mdp_robust_sort(double *v, unsigned n)
{
  for(unsigned i = 1; i < n; i++)
    for(unsigned j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double x = v[j];
      v[j] = v[j - 1];
      v[j - 1] = x;
    }
}

int mdp_robust_line_fit(const mdp_robust_line *l, unsigned least, double *slope, double *intercept)
{
  double den = l->n * l->sxx - l->sx * l->sx;
  if(l->n < least || !(den > 0))
    return 0;
  double b = (l->n * l->sxy - l->sx * l->sy) / den;
  if(slope)
    *slope = b;
  if(intercept)
    *intercept = (l->sy - b * l->sx) / l->n;
  return 1;
}
