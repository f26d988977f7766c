/* `memdiagctl replay`: runs the plugin's detector over a recorded series so
 * that thresholds can be tuned offline with the very code that runs online. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "detector/detector.h"
#include "detector/series_csv.h"
#include "sample/sample.h"

static const char usage[] =
    "usage: memdiagctl replay [--summary] [Key=Value ...] TRACE.csv\n"
    "Runs the leak detector over a series in collectd csv format (header line,\n"
    "then epoch,value in bytes) and prints one JSON line per capture it would\n"
    "start. Keys are the plugin's: MemoryLimit, CaptureSize, GrowthWindow,\n"
    "MinGrowthRate, Horizon, NearLimit, WarmupTime, ShortWindow.\n"
    "  --summary  also print a final JSON line with the first capture and its\n"
    "             lead time before the series reached MemoryLimit\n";

static void print_fire(const mdp_decision *d)
{
  printf("{\"time\":%.15g,\"reason\":\"%s\",\"rss\":%llu", d->time, d->reason,
         (unsigned long long)d->rss);
  if(strcmp(d->reason, MDP_REASON_GROWTH) == 0) {
    printf(",\"envelope\":%llu,\"slope_bytes_per_s\":%.1f,\"slope_recent_bytes_per_s\":%.1f,"
           "\"slope_before_bytes_per_s\":%.1f,\"samples\":%u,\"window_s\":%.15g",
           (unsigned long long)d->envelope, d->slope, d->slope_recent, d->slope_before, d->samples,
           d->window);
    if(d->time_to_limit >= 0)
      printf(",\"time_to_limit_s\":%.0f,\"projected_limit_time\":%.15g", d->time_to_limit,
             d->time + d->time_to_limit);
  }
  printf("}\n");
}

/* Gaps between samples kept to find the usual sampling interval. */
#define GAPS 63

typedef struct {
  unsigned long samples, captures;
  double first_time, limit_time, last_time;
  uint64_t first_rss;
  int limit_reached;
  double gaps[GAPS]; /* the first GAPS gaps between samples, s */
  unsigned ngaps;
} replay_summary;

static int by_value(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The usual sampling interval: the median of the first gaps (a pause or
 * two do not move it); 0 with none. */
static double usual_interval(replay_summary *s)
{
  if(!s->ngaps)
    return 0;
  qsort(s->gaps, s->ngaps, sizeof(s->gaps[0]), by_value);
  return s->gaps[s->ngaps / 2];
}

/* The plugin's start-up notice, for a recorded series sampled too sparsely
 * for the early path (detector.h, mdp_detector_interval_note). */
static void note_interval(const mdp_detector_config *cfg, double every)
{
  char note[256];
  if(mdp_detector_interval_note(cfg, every, note, sizeof(note)))
    fprintf(stderr, "memdiagctl replay: note: the series is sampled every %g s, which %s\n", every,
            note);
}

static void print_summary(const replay_summary *s, const mdp_detector *det)
{
  char state[96];
  mdp_detector_describe(det, state, sizeof(state));
  printf("{\"summary\":true,\"samples\":%lu,\"captures\":%lu", s->samples, s->captures);
  if(s->captures)
    printf(",\"first_capture_time\":%.15g,\"first_capture_rss\":%llu", s->first_time,
           (unsigned long long)s->first_rss);
  if(s->limit_reached)
    printf(",\"limit_reached_time\":%.15g", s->limit_time);
  if(s->captures && s->limit_reached)
    printf(",\"lead_time_s\":%.15g", s->limit_time - s->first_time);
  printf(",\"final_state\":\"%s\"}\n", state);
}

int mdctl_replay(int argc, char **argv)
{
  mdp_detector_config cfg;
  mdp_detector det;
  mdp_series_csv csv;
  replay_summary sum = {0};
  const char *path = NULL;
  char err[256];
  int summary = 0, rc;

  mdp_detector_config_init(&cfg);
  for(int i = 1; i < argc; i++) {
    char *arg = argv[i], *eq = strchr(arg, '=');
    if(strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      fputs(usage, stdout);
      return 0;
    }
    if(strcmp(arg, "--summary") == 0) {
      summary = 1;
    } else if(arg[0] == '-' && arg[1]) {
      fprintf(stderr, "memdiagctl replay: unknown option %s\n%s", arg, usage);
      return 2;
    } else if(eq && !memchr(arg, '/', (size_t)(eq - arg))) { /* a path may hold '=' */
      *eq = '\0';
      rc = mdp_detector_config_set(&cfg, arg, eq + 1, err, sizeof(err));
      *eq = '=';
      if(rc) {
        fprintf(stderr, "memdiagctl replay: %s\n", err);
        return 2;
      }
    } else if(path) {
      fprintf(stderr, "memdiagctl replay: one trace at a time (got %s and %s)\n", path, arg);
      return 2;
    } else {
      path = arg;
    }
  }
  if(!path) {
    fprintf(stderr, "memdiagctl replay: missing TRACE.csv\n%s", usage);
    return 2;
  }
  if(mdp_detector_config_check(&cfg, err, sizeof(err))) {
    fprintf(stderr, "memdiagctl replay: %s\n", err);
    return 2;
  }

  rc = mdp_series_csv_open(&csv, path);
  if(rc) {
    fprintf(stderr, "memdiagctl replay: %s\n", csv.err);
    return 1;
  }
  mdp_detector_init(&det, &cfg);
  for(;;) {
    mdp_sample s;
    mdp_decision d;

    rc = mdp_series_csv_next(&csv, &s);
    if(rc < 0) {
      fprintf(stderr, "memdiagctl replay: %s\n", csv.err);
      goto out;
    }
    if(rc == 0)
      break;
    rc = mdp_detector_feed(&det, &s, &d);
    if(rc < 0) {
      fprintf(stderr, "memdiagctl replay: %s:%lu: time %.15g goes backwards (previous %.15g)\n",
              path, csv.line, s.time, det.last_t);
      goto out;
    }
    if(sum.samples++ && sum.ngaps < GAPS)
      sum.gaps[sum.ngaps++] = s.time - sum.last_time;
    sum.last_time = s.time;
    if(!sum.limit_reached && cfg.memory_limit && s.value >= cfg.memory_limit) {
      sum.limit_reached = 1;
      sum.limit_time = s.time;
    }
    if(rc == 1) {
      if(!sum.captures++) {
        sum.first_time = d.time;
        sum.first_rss = d.rss;
      }
      print_fire(&d);
    }
  }
  note_interval(&cfg, usual_interval(&sum));
  if(summary)
    print_summary(&sum, &det);
  rc = fflush(stdout) ? -EIO : 0;
out:
  mdp_series_csv_close(&csv);
  return rc ? 1 : 0;
}
