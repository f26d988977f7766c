/* A heap profile in pprof's format (prefix mdh_pprof_): plain C, no Ruby.
 *
 * mdh_pprof_encode() turns the sampler's table and a list of live samples
 * into a serialised profile.proto (proto/profile.proto): sample types
 * inuse_objects/count and inuse_space/bytes (the default), one Location and
 * one Function per interned (file, label, line), one Sample per sampled
 * object with string label "class" and numeric labels "address" and
 * "generation" (the GC count at its allocation), which is what memdiag's
 * analysis joins to a heap dump. mdh_pprof_gzip() compresses it the way
 * pprof files are stored.
 *
 * Threading: none; the table must not change during the call.
 * Ownership: *out is malloc'd and owned by the caller. Errors are negative
 * errno values. */
#ifndef MDH_PPROF_OUT_H
#define MDH_PPROF_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "sample_table.h"

typedef struct {
  uint32_t site;       /* mdh_stab site id */
  uint32_t class_name; /* mdh_stab string id */
  int64_t count;       /* estimated objects this sample stands for */
  int64_t bytes;       /* estimated bytes */
  uint64_t addr;
  uint32_t generation;
} mdh_pprof_sample;

typedef struct {
  const mdh_stab *table;
  const mdh_pprof_sample *samples;
  size_t n_samples;
  int64_t period;     /* mean allocations between two samples */
  int64_t time_nanos; /* when the profile was taken (unix epoch) */
  const char *comment;
} mdh_pprof_input;

int mdh_pprof_encode(const mdh_pprof_input *in, uint8_t **out, size_t *len);
int mdh_pprof_gzip(const uint8_t *in, size_t n, uint8_t **out, size_t *out_len);

#endif
