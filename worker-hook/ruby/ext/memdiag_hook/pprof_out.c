/* A heap profile in pprof's format: see pprof_out.h. The message tree is
 * built in a few flat arrays (one allocation each) and packed by protobuf-c
 * (profile.pb-c.h, generated at build time from proto/profile.proto). */
#include "pprof_out.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "profile.pb-c.h"

/* The profile's own strings come first; the table's follow them. */
enum {
  S_EMPTY,
  S_INUSE_OBJECTS,
  S_COUNT,
  S_INUSE_SPACE,
  S_BYTES,
  S_CLASS,
  S_ADDRESS,
  S_GENERATION,
  S_ALLOCATIONS,
  S_COMMENT,
  S_FIXED
};

typedef struct {
  Memdiag__Pprof__ValueType types[3];
  Memdiag__Pprof__ValueType *type_ptrs[2];
  char **strings;
  Memdiag__Pprof__Function *funcs;
  Memdiag__Pprof__Function **func_ptrs;
  Memdiag__Pprof__Line *lines;
  Memdiag__Pprof__Line **line_ptrs;
  Memdiag__Pprof__Location *locs;
  Memdiag__Pprof__Location **loc_ptrs;
  uint64_t *site_loc_ids; /* every site's location ids, in a row */
  size_t *site_first;
  Memdiag__Pprof__Sample *samples;
  Memdiag__Pprof__Sample **sample_ptrs;
  Memdiag__Pprof__Label *labels;
  Memdiag__Pprof__Label **label_ptrs;
  int64_t *values;
  int64_t comment;
} build;

static void build_free(build *b)
{
  free(b->strings);
  free(b->funcs);
  free(b->func_ptrs);
  free(b->lines);
  free(b->line_ptrs);
  free(b->locs);
  free(b->loc_ptrs);
  free(b->site_loc_ids);
  free(b->site_first);
  free(b->samples);
  free(b->sample_ptrs);
  free(b->labels);
  free(b->label_ptrs);
  free(b->values);
}

static void *array(size_t n, size_t size) { return calloc(n ? n : 1, size); }

static int build_strings(build *b, const mdh_pprof_input *in, size_t n_strs)
{
  static const char *const fixed[S_FIXED] = {
      [S_EMPTY] = "",
      [S_INUSE_OBJECTS] = "inuse_objects",
      [S_COUNT] = "count",
      [S_INUSE_SPACE] = "inuse_space",
      [S_BYTES] = "bytes",
      [S_CLASS] = "class",
      [S_ADDRESS] = "address",
      [S_GENERATION] = "generation",
      [S_ALLOCATIONS] = "allocations",
      [S_COMMENT] = "",
  };
  size_t i;
  b->strings = array(S_FIXED + n_strs, sizeof *b->strings);
  if(!b->strings)
    return -ENOMEM;
  for(i = 0; i < S_FIXED; i++)
    b->strings[i] = (char *)fixed[i];
  if(in->comment)
    b->strings[S_COMMENT] = (char *)in->comment;
  for(i = 0; i < n_strs; i++)
    b->strings[S_FIXED + i] = (char *)mdh_stab_string(in->table, (uint32_t)i, NULL);
  return 0;
}

static int build_locations(build *b, const mdh_stab *t)
{
  size_t i, n = mdh_stab_n_locs(t);
  b->funcs = array(n, sizeof *b->funcs);
  b->func_ptrs = array(n, sizeof *b->func_ptrs);
  b->lines = array(n, sizeof *b->lines);
  b->line_ptrs = array(n, sizeof *b->line_ptrs);
  b->locs = array(n, sizeof *b->locs);
  b->loc_ptrs = array(n, sizeof *b->loc_ptrs);
  if(!b->funcs || !b->func_ptrs || !b->lines || !b->line_ptrs || !b->locs || !b->loc_ptrs)
    return -ENOMEM;
  for(i = 0; i < n; i++) {
    const mdh_stab_loc *l = mdh_stab_location(t, (uint32_t)i);
    memdiag__pprof__function__init(&b->funcs[i]);
    b->funcs[i].id = i + 1;
    b->funcs[i].name = S_FIXED + (int64_t)l->label;
    b->funcs[i].system_name = S_FIXED + (int64_t)l->label;
    b->funcs[i].filename = S_FIXED + (int64_t)l->file;
    b->func_ptrs[i] = &b->funcs[i];
    memdiag__pprof__line__init(&b->lines[i]);
    b->lines[i].function_id = i + 1;
    b->lines[i].line = l->line;
    b->line_ptrs[i] = &b->lines[i];
    memdiag__pprof__location__init(&b->locs[i]);
    b->locs[i].id = i + 1;
    b->locs[i].n_line = 1;
    b->locs[i].line = &b->line_ptrs[i];
    b->loc_ptrs[i] = &b->locs[i];
  }
  return 0;
}

static int build_sites(build *b, const mdh_stab *t)
{
  size_t s, k, total = 0, n_sites = mdh_stab_n_sites(t);
  b->site_first = array(n_sites + 1, sizeof *b->site_first);
  if(!b->site_first)
    return -ENOMEM;
  for(s = 0; s < n_sites; s++) {
    size_t n;
    mdh_stab_site_locs(t, (uint32_t)s, &n);
    b->site_first[s] = total;
    total += n;
  }
  b->site_first[n_sites] = total;
  b->site_loc_ids = array(total, sizeof *b->site_loc_ids);
  if(!b->site_loc_ids)
    return -ENOMEM;
  for(s = 0; s < n_sites; s++) {
    size_t n;
    const uint32_t *ids = mdh_stab_site_locs(t, (uint32_t)s, &n);
    for(k = 0; k < n; k++)
      b->site_loc_ids[b->site_first[s] + k] = (uint64_t)ids[k] + 1;
  }
  return 0;
}

enum { LABELS_PER_SAMPLE = 3 };

static int build_samples(build *b, const mdh_pprof_input *in)
{
  size_t i, n = in->n_samples, n_sites = mdh_stab_n_sites(in->table);
  b->samples = array(n, sizeof *b->samples);
  b->sample_ptrs = array(n, sizeof *b->sample_ptrs);
  b->labels = array(n * LABELS_PER_SAMPLE, sizeof *b->labels);
  b->label_ptrs = array(n * LABELS_PER_SAMPLE, sizeof *b->label_ptrs);
  b->values = array(n * 2, sizeof *b->values);
  if(!b->samples || !b->sample_ptrs || !b->labels || !b->label_ptrs || !b->values)
    return -ENOMEM;
  for(i = 0; i < n; i++) {
    const mdh_pprof_sample *s = &in->samples[i];
    Memdiag__Pprof__Sample *out = &b->samples[i];
    Memdiag__Pprof__Label *l = &b->labels[i * LABELS_PER_SAMPLE];
    size_t k;

    if(s->site >= n_sites || s->class_name >= mdh_stab_n_strings(in->table))
      return -EINVAL;
    memdiag__pprof__sample__init(out);
    out->n_location_id = b->site_first[s->site + 1] - b->site_first[s->site];
    out->location_id = b->site_loc_ids + b->site_first[s->site];
    out->n_value = 2;
    out->value = b->values + i * 2;
    out->value[0] = s->count;
    out->value[1] = s->bytes;
    for(k = 0; k < LABELS_PER_SAMPLE; k++) {
      memdiag__pprof__label__init(&l[k]);
      b->label_ptrs[i * LABELS_PER_SAMPLE + k] = &l[k];
    }
    l[0].key = S_CLASS;
    l[0].str = S_FIXED + (int64_t)s->class_name;
    l[1].key = S_ADDRESS;
    l[1].num = (int64_t)s->addr;
    l[2].key = S_GENERATION;
    l[2].num = s->generation;
    out->n_label = LABELS_PER_SAMPLE;
    out->label = &b->label_ptrs[i * LABELS_PER_SAMPLE];
    b->sample_ptrs[i] = out;
  }
  return 0;
}

int mdh_pprof_encode(const mdh_pprof_input *in, uint8_t **out, size_t *len)
{
  Memdiag__Pprof__Profile p = MEMDIAG__PPROF__PROFILE__INIT;
  build b;
  size_t n_strs = mdh_stab_n_strings(in->table);
  int rc;

  memset(&b, 0, sizeof b);
  *out = NULL;
  *len = 0;
  rc = build_strings(&b, in, n_strs);
  if(!rc)
    rc = build_locations(&b, in->table);
  if(!rc)
    rc = build_sites(&b, in->table);
  if(!rc)
    rc = build_samples(&b, in);
  if(rc)
    goto done;

  memdiag__pprof__value_type__init(&b.types[0]);
  b.types[0].type = S_INUSE_OBJECTS;
  b.types[0].unit = S_COUNT;
  memdiag__pprof__value_type__init(&b.types[1]);
  b.types[1].type = S_INUSE_SPACE;
  b.types[1].unit = S_BYTES;
  memdiag__pprof__value_type__init(&b.types[2]);
  b.types[2].type = S_ALLOCATIONS;
  b.types[2].unit = S_COUNT;
  b.type_ptrs[0] = &b.types[0];
  b.type_ptrs[1] = &b.types[1];
  p.n_sample_type = 2;
  p.sample_type = b.type_ptrs;
  p.default_sample_type = S_INUSE_SPACE;
  p.period_type = &b.types[2];
  p.period = in->period;
  p.time_nanos = in->time_nanos;
  p.n_string_table = S_FIXED + n_strs;
  p.string_table = b.strings;
  p.n_function = p.n_location = mdh_stab_n_locs(in->table);
  p.function = b.func_ptrs;
  p.location = b.loc_ptrs;
  p.n_sample = in->n_samples;
  p.sample = b.sample_ptrs;
  if(in->comment) {
    b.comment = S_COMMENT;
    p.n_comment = 1;
    p.comment = &b.comment;
  }

  *len = memdiag__pprof__profile__get_packed_size(&p);
  *out = malloc(*len ? *len : 1);
  if(!*out) {
    rc = -ENOMEM;
    *len = 0;
    goto done;
  }
  memdiag__pprof__profile__pack(&p, *out);
done:
  build_free(&b);
  return rc;
}

int mdh_pprof_gzip(const uint8_t *in, size_t n, uint8_t **out, size_t *out_len)
{
  z_stream z;
  uLong cap;
  int zrc;

  *out = NULL;
  *out_len = 0;
  if(n > UINT32_MAX)
    return -EFBIG;
  memset(&z, 0, sizeof z);
  /* 15 + 16: a gzip header and trailer, as pprof files have */
  if(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return -ENOMEM;
  cap = deflateBound(&z, (uLong)n) + 32;
  *out = malloc(cap);
  if(!*out) {
    deflateEnd(&z);
    return -ENOMEM;
  }
  z.next_in = (Bytef *)in;
  z.avail_in = (uInt)n;
  z.next_out = *out;
  z.avail_out = (uInt)cap;
  zrc = deflate(&z, Z_FINISH);
  *out_len = z.total_out;
  deflateEnd(&z);
  if(zrc != Z_STREAM_END) {
    free(*out);
    *out = NULL;
    *out_len = 0;
    return -EIO;
  }
  return 0;
}
