/* Shared by the allocation sampler's two files (sampler.c: sampling;
 * sampler_profile.c: Sampler.profile and the pruning). Internal to the
 * extension.
 * Threading: the GVL guards all of it, as in sampler.h.
 *
 * Ownership: the state owns the table (tab) and the timer. turn_off() in
 * sampler.c frees the table: for Sampler.stop, start(0), a start after a
 * failure, and as fail()'s postponed job (the second half of a failure
 * inside an event), which does nothing once a start has cleared the
 * failure, lest it stop the sampling that start began. A table turned off
 * while a prune walks it (walking) is freed by that prune when it ends. A
 * forked child forgets the inherited table without freeing it.
 * stop_timer() deletes the timer (turn_off, Sampler.pause, the VM's end). */
#ifndef MDH_SAMPLER_INTERNAL_H
#define MDH_SAMPLER_INTERNAL_H

#include <ruby.h>
#include <time.h>

#include "sample_table.h"

/* A sample taken in the NEWOBJ handler, finished (object id, table) in a
 * postponed job once Ruby is out of the allocation. */
typedef struct {
  VALUE obj, klass;
  uint32_t site, generation, weight;
  int set;
} mdh_sampler_pending;

typedef struct {
  VALUE tp_new, holder;
  timer_t timer; /* fires the arming signal at the thread that made it */
  int have_timer;
  int signal_ok;      /* the arming signal's handler is ours */
  mdh_stab *tab;      /* NULL until the first sample */
  unsigned rate;      /* samples a second wanted; 0 = off */
  int armed;          /* the NEWOBJ tracepoint is enabled */
  unsigned countdown; /* armed: allocations to let pass before the sample */
  int busy;           /* building a profile or pruning: no sample */
  mdh_stab *walking;  /* the table a prune walks while it calls Ruby */
  int failed;         /* turned off by a failure; reason says why */
  char reason[256];
  uint64_t rng;          /* xorshift64* state */
  size_t last_allocated; /* total_allocated_objects at the last sample */
  size_t pruned_live;    /* entries after the last prune */
  mdh_sampler_pending pending;
  double cpu_last, tokens; /* cpu_allows(): the process's CPU seconds, samples due */
  uint64_t samples, dropped, freed, compactions, moved;
  uint64_t gated; /* armings skipped: the process had not used the CPU time for them */
  VALUE sym_total_allocated;
  ID id2ref;
} mdh_sampler_state;

extern mdh_sampler_state mdh_sampler_g;

/* The table's entries as a gzip'd pprof profile (a binary String); an
 * empty one while sampling is off. The caller prunes freed entries first.
 * Its comment gives the GC count now ("gc_count N") and, when
 * has_dump_gc_count, the count when the last heap dump was taken
 * ("dump_gc_count N"), by which the plugin's analysis tells a sample
 * allocated after that dump (plugin/analysis/sampled.h). */
VALUE mdh_sampler_profile(int has_dump_gc_count, size_t dump_gc_count);

/* Drops the table's entries whose objects were freed (sampler_profile.c).
 * It asks Ruby (ObjectSpace._id2ref) about each, and Ruby code can run
 * meanwhile (a TracePoint on :raise, another thread): a turn_off() then
 * leaves the walked table to the walk to free, no sample enters it, and a
 * prune within the prune does nothing. */
int mdh_sampler_prune(void); /* 0, or -ENOMEM: the caller turns sampling off */

/* Sampler.stats -> Hash: the state, the rate, the table's and the
 * counters' figures (sampler_profile.c). */
VALUE mdh_sampler_stats(VALUE self);

#endif
