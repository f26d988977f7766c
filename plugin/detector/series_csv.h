/* Reader for a series in collectd's csv format (prefix mdp_series_csv_):
 * a header line ("epoch,value"), then one "epoch,value" line per sample,
 * value in bytes. Empty lines are skipped, and so are "nan" values
 * (collectd writes them for samples it could not read).
 *
 * Ownership: mdp_series_csv is caller-owned; open() opens the file and
 * close() closes it (safe on a reader that failed to open).
 */
#ifndef MDP_SERIES_CSV_H
#define MDP_SERIES_CSV_H

#include <stdint.h>
#include <stdio.h>

#include "sample/sample.h"

typedef struct {
  FILE *f;
  const char *path;   /* points at the caller's string */
  unsigned long line; /* line number of the last line read */
  char err[256];      /* "PATH:LINE: what is wrong" after an error */
} mdp_series_csv;

/* Opens path and reads the header. Returns 0, or a negative errno with
 * r->err set (unreadable file, missing or wrong header). */
int mdp_series_csv_open(mdp_series_csv *r, const char *path);

/* Reads the next sample: 1 with *out set, 0 at the end, or -EINVAL for a
 * malformed line (r->err names the line) or -EIO. */
int mdp_series_csv_next(mdp_series_csv *r, mdp_sample *out);

void mdp_series_csv_close(mdp_series_csv *r);

#endif
