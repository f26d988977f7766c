/* What the detector costs the collectd read callback: memory per worker and
 * CPU per sample, for many workers sampled every 10 s. Prints figures; it
 * asserts nothing (machines are noisy).
 *
 *   detector_cost_bench [--workers N] [--hours H] [--shape mix|fast|short]
 *
 * --shape fast is the worst case for the urgent rule's course fits: every
 * worker leaks 10-15 MiB/min from its start under a GC sawtooth, in step,
 * so every worker's early path fits its course at the same read (the mix
 * has few workers fitting at once). --shape short is the same under GC
 * teeth shorter than a course bucket (35-55 s, 40-76 MiB), whose period
 * every look searches for among the drops of every bucket
 * (detector_short.c).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "detector/detector.h"

#define MIB (1024.0 * 1024.0)

static double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A mix of the shapes the detector sees: stable with sawtooth, leaking,
 * cycling. */
static uint64_t sample(unsigned w, double t, uint32_t *rng)
{
  *rng ^= *rng << 13;
  *rng ^= *rng >> 17;
  *rng ^= *rng << 5;
  double noise = (double)(*rng % 8192) / 8192.0 * 4 * MIB;
  double base = 300 * MIB + (w % 7) * 20 * MIB + 40 * MIB * fmod(t, 300 + w % 60) / 300.0;
  switch(w % 3) {
  case 0: return (uint64_t)(base + noise);
  case 1: return (uint64_t)(base + noise + 0.5 * MIB * t / 60);
  default: return (uint64_t)(base + noise + 80 * MIB * sin(2 * M_PI * t / 7200));
  }
}

/* Every worker leaking fast from its start (10-15 MiB/min by worker) under
 * 20 MiB teeth of 150-210 s, or (short) teeth of 40-76 MiB every 35-55 s,
 * restarted when it reaches 1 GiB. */
static uint64_t sample_fast(unsigned w, double t, uint32_t *rng, int short_teeth)
{
  *rng ^= *rng << 13;
  *rng ^= *rng >> 17;
  *rng ^= *rng << 5;
  double noise = (double)(*rng % 8192) / 8192.0 * 4 * MIB;
  double rate = (10 + (w % 11) * 0.5) * MIB / 60;
  double life = 800 * MIB / rate, age = fmod(t, life);
  double period = short_teeth ? 35 + w % 21 : 150 + w % 61;
  double amp = short_teeth ? (40 + (w % 10) * 4) * MIB : 20 * MIB;
  return (uint64_t)(200 * MIB + rate * age + amp * fmod(age, period) / period + noise);
}

int main(int argc, char **argv)
{
  unsigned workers = 1000;
  double hours = 24;
  int fast = 0, short_teeth = 0, bad = 0;
  for(int i = 1; i < argc; i += 2) {
    if(i + 1 >= argc)
      bad = 1;
    else if(strcmp(argv[i], "--workers") == 0)
      workers = (unsigned)strtoul(argv[i + 1], NULL, 10);
    else if(strcmp(argv[i], "--hours") == 0)
      hours = strtod(argv[i + 1], NULL);
    else if(strcmp(argv[i], "--shape") == 0 && strcmp(argv[i + 1], "fast") == 0)
      fast = 1;
    else if(strcmp(argv[i], "--shape") == 0 && strcmp(argv[i + 1], "short") == 0)
      fast = short_teeth = 1;
    else if(strcmp(argv[i], "--shape") != 0 || strcmp(argv[i + 1], "mix") != 0)
      bad = 1;
  }
  if(bad || !workers || hours <= 0) {
    fprintf(stderr, "usage: %s [--workers N] [--hours H] [--shape mix|fast|short]\n", argv[0]);
    return 2;
  }

  mdp_detector_config cfg;
  mdp_detector_config_init(&cfg);
  cfg.memory_limit = (uint64_t)(1024 * MIB);
  mdp_detector *d = calloc(workers, sizeof(*d));
  if(!d)
    return 1;
  for(unsigned w = 0; w < workers; w++)
    mdp_detector_init(&d[w], &cfg);

  uint32_t rng = 2463534242u;
  unsigned long feeds = 0, fires = 0;
  double worst = 0, start = now();
  for(double t = 0; t < hours * 3600; t += 10) {
    double tick = now();
    for(unsigned w = 0; w < workers; w++) {
      uint64_t rss = fast ? sample_fast(w, t, &rng, short_teeth) : sample(w, t, &rng);
      fires += mdp_detector_feed(&d[w], &(mdp_sample){1.79e9 + t, rss}, NULL) == 1;
      feeds++;
    }
    double spent = now() - tick;
    if(spent > worst)
      worst = spent;
  }
  double total = now() - start;

  printf("detector memory per worker: %zu bytes\n", sizeof(mdp_detector));
  printf("shape: %s\n", short_teeth ? "short (every worker leaking 10-15 MiB/min under teeth of "
                                      "35-55 s, in step)"
                        : fast      ? "fast (every worker leaking 10-15 MiB/min, in step)"
                                    : "mix");
  printf("workers %u, %.1f h at 10 s: %lu samples, %lu captures\n", workers, hours, feeds, fires);
  printf("mean cost per sample: %.0f ns\n", total / (double)feeds * 1e9);
  printf("slowest read interval (all workers): %.3f ms\n", worst * 1e3);
  free(d);
  return 0;
}
