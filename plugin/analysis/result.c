/* Building the analysis result from the passes' tables, and its caveats;
 * see analysis.h and analysis_int.h. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_int.h"
#include "scan.h"

#define TYPE_KEY_BIT (1ull << 63)

/* A name or file from the tables, unescaped into a new string. */
static char *decoded(const mdp_analysis_strtab *t, uint32_t id)
{
  size_t n;
  const char *s = mdp_analysis_strtab_str(t, id, &n);
  if(!s)
    return NULL;
  char *out = malloc(n + 1);
  if(out)
    mdp_analysis_unescape(s, n, out, n + 1);
  return out;
}

/* The name id of a class key in dump d (0: none). */
static uint32_t name_of(mdp_ctx *c, unsigned d, uint64_t key)
{
  if(key & TYPE_KEY_BIT)
    return 0;
  mdp_analysis_rec *r = mdp_analysis_map_get(&c->cname[d], key, 0, 0);
  return r ? (uint32_t)r->a : 0;
}

/* Classes are told apart by name; nameless ones by type. */
static uint64_t class_id(uint32_t name, unsigned type) { return name ? (uint64_t)name << 8 : type; }

static mdp_analysis_class *class_entry(mdp_ctx *c, mdp_analysis_map *idx, size_t *cap,
                                       uint32_t name, unsigned type)
{
  mdp_analysis_result *res = c->res;
  mdp_analysis_rec *r = mdp_analysis_map_get(idx, class_id(name, type), 0, 1);
  if(!r)
    return NULL;
  if(r->a)
    return &res->classes[r->a - 1];
  if(res->n_classes == *cap) {
    size_t ncap = *cap ? *cap * 2 : 64;
    mdp_analysis_class *a = realloc(res->classes, ncap * sizeof(*a));
    if(!a)
      return NULL;
    res->classes = a;
    *cap = ncap;
  }
  mdp_analysis_class *k = &res->classes[res->n_classes++];
  memset(k, 0, sizeof(*k));
  if(name && !(k->class_name = decoded(&c->names, name))) {
    res->n_classes--;
    return NULL;
  }
  k->type = name ? NULL : mdp_analysis_type_name(type);
  r->a = res->n_classes;
  return k;
}

/* Largest first by the first figure, then by the second. */
static int by_bytes(uint64_t ab, uint64_t bb, uint64_t ac, uint64_t bc)
{
  if(ab != bb)
    return ab > bb ? -1 : 1;
  if(ac != bc)
    return ac > bc ? -1 : 1;
  return 0;
}

static int cmp_group(const void *x, const void *y)
{
  const mdp_analysis_group *a = x, *b = y;
  return by_bytes(a->bytes, b->bytes, a->count, b->count);
}

static int cmp_class(const void *x, const void *y)
{
  const mdp_analysis_class *a = x, *b = y;
  return by_bytes(a->bytes, b->bytes, a->count, b->count);
}

static int64_t growth(const mdp_analysis_class *k, unsigned last)
{
  return (int64_t)(k->live_bytes[last] - k->live_bytes[0]);
}

static int cmp_grew(const void *x, const void *y, void *last)
{
  int64_t a = growth(x, *(unsigned *)last), b = growth(y, *(unsigned *)last);
  return a == b ? 0 : a > b ? -1 : 1;
}

static int cmp_file(const void *x, const void *y)
{
  const mdp_analysis_file *a = x, *b = y;
  return by_bytes(a->bytes, b->bytes, a->count, b->count);
}

static int cmp_string(const void *x, const void *y)
{
  const mdp_analysis_string *a = x, *b = y;
  return by_bytes(a->count, b->count, a->bytes, b->bytes);
}

static int build_groups(mdp_ctx *c, unsigned last, mdp_analysis_map *cidx, size_t *ccap)
{
  mdp_analysis_result *res = c->res;
  mdp_analysis_map merged, files;
  int rc = -ENOMEM;

  mdp_analysis_map_init(&merged, &c->mem);
  mdp_analysis_map_init(&files, &c->mem);
  for(size_t i = 0; i < c->groups.n; i++) {
    mdp_analysis_rec *g = &c->groups.recs[i];
    unsigned type = (unsigned)((g->k1 ^ g->c) >> 56);
    uint32_t name = name_of(c, last, g->c);
    mdp_analysis_rec *m = mdp_analysis_map_get(&merged, class_id(name, type) << 8 | type, g->k2, 1);
    mdp_analysis_rec *f = mdp_analysis_map_get(&files, g->k2 >> 32, 0, 1);
    mdp_analysis_class *k = class_entry(c, cidx, ccap, name, type);
    if(!m || !f || !k)
      goto out;
    m->a += g->a;
    m->b += g->b;
    m->c = name;
    f->a += g->a;
    f->b += g->b;
    k->count += g->a;
    k->bytes += g->b;
  }
  res->groups = calloc(merged.n ? merged.n : 1, sizeof(*res->groups));
  res->files = calloc(files.n ? files.n : 1, sizeof(*res->files));
  if(!res->groups || !res->files)
    goto out;
  for(size_t i = 0; i < merged.n; i++) {
    mdp_analysis_rec *m = &merged.recs[i];
    mdp_analysis_group *g = &res->groups[res->n_groups++];
    uint32_t file = (uint32_t)(m->k2 >> 32);
    g->type = mdp_analysis_type_name((unsigned)(m->k1 & 0xff));
    g->class_name = m->c ? decoded(&c->names, (uint32_t)m->c) : NULL;
    g->file = file ? decoded(&c->files, file) : NULL;
    g->line = (unsigned)(m->k2 & 0xffffffffu);
    g->site_source = file ? MDP_ANALYSIS_SITE_TRACED : MDP_ANALYSIS_SITE_NONE;
    g->count = m->a;
    g->bytes = m->b;
    if((m->c && !g->class_name) || (file && !g->file))
      goto out;
  }
  for(size_t i = 0; i < files.n; i++) {
    mdp_analysis_file *f = &res->files[res->n_files++];
    f->file = files.recs[i].k1 ? decoded(&c->files, (uint32_t)files.recs[i].k1) : NULL;
    f->count = files.recs[i].a;
    f->bytes = files.recs[i].b;
    if(files.recs[i].k1 && !f->file)
      goto out;
  }
  qsort(res->groups, res->n_groups, sizeof(*res->groups), cmp_group);
  qsort(res->files, res->n_files, sizeof(*res->files), cmp_file);
  rc = 0;
out:
  mdp_analysis_map_free(&merged);
  mdp_analysis_map_free(&files);
  return rc;
}

static int build_classes(mdp_ctx *c, mdp_analysis_map *cidx, size_t *ccap)
{
  mdp_analysis_result *res = c->res;
  for(unsigned d = 0; d < res->n_dumps; d++) {
    for(size_t i = 0; i < c->live[d].n; i++) {
      mdp_analysis_rec *r = &c->live[d].recs[i];
      mdp_analysis_class *k = class_entry(c, cidx, ccap, name_of(c, d, r->k1), (unsigned)r->c);
      if(!k)
        return -ENOMEM;
      k->live_count[d] += r->a;
      k->live_bytes[d] += r->b;
    }
  }
  unsigned last = res->n_dumps - 1;
  size_t n = 0;
  for(size_t i = 0; i < res->n_classes; i++)
    n += growth(&res->classes[i], last) > 0;
  res->grew = calloc(n ? n : 1, sizeof(*res->grew));
  if(!res->grew)
    return -ENOMEM;
  for(size_t i = 0; i < res->n_classes; i++) {
    const mdp_analysis_class *k = &res->classes[i];
    if(growth(k, last) <= 0)
      continue;
    mdp_analysis_class *g = &res->grew[res->n_grew++];
    *g = *k;
    if(k->class_name && !(g->class_name = strdup(k->class_name)))
      return -ENOMEM;
  }
  qsort_r(res->grew, res->n_grew, sizeof(*res->grew), cmp_grew, &last);
  qsort(res->classes, res->n_classes, sizeof(*res->classes), cmp_class);
  return 0;
}

static int build_strings(mdp_ctx *c)
{
  mdp_analysis_result *res = c->res;
  res->strings = calloc(c->strings.n ? c->strings.n : 1, sizeof(*res->strings));
  if(!res->strings)
    return -ENOMEM;
  for(size_t i = 0; i < c->strings.n; i++) {
    mdp_analysis_rec *r = &c->strings.recs[i];
    mdp_analysis_string *s = &res->strings[res->n_strings++];
    size_t n;
    const char *text = mdp_analysis_strtab_str(&c->svals, (uint32_t)r->c, &n);
    s->value = malloc(n + 1);
    if(!s->value)
      return -ENOMEM;
    memcpy(s->value, text ? text : "", n);
    s->value[n] = '\0';
    s->value_len = n;
    s->length = r->k2;
    s->count = r->a;
    s->bytes = r->b;
  }
  qsort(res->strings, res->n_strings, sizeof(*res->strings), cmp_string);
  return 0;
}

int mdp_analysis_build(mdp_ctx *c)
{
  mdp_analysis_map cidx;
  size_t ccap = 0;
  int rc;

  mdp_analysis_map_init(&cidx, &c->mem);
  rc = build_groups(c, c->res->n_dumps - 1, &cidx, &ccap);
  if(!rc)
    rc = build_classes(c, &cidx, &ccap);
  mdp_analysis_map_free(&cidx);
  if(!rc)
    rc = build_strings(c);
  return rc;
}

static void caveat(mdp_analysis_result *res, const char *code, int doubt, const char *fmt, ...)
{
  va_list ap;
  if(res->n_caveats == MDP_ANALYSIS_CAVEATS_MAX)
    return;
  mdp_analysis_caveat *k = &res->caveats[res->n_caveats++];
  k->code = code;
  va_start(ap, fmt);
  vsnprintf(k->message, sizeof(k->message), fmt, ap);
  va_end(ap);
  res->doubtful |= doubt;
}

void mdp_analysis_caveats(mdp_ctx *c)
{
  mdp_analysis_result *res = c->res;
  unsigned n = res->n_dumps;

  for(unsigned d = 1; d < n; d++) {
    if(!c->moved[d] && !c->classes_moved[d] && !c->pinned[d] && !c->moved_slots[d])
      continue;
    res->moved += c->moved[d];
    caveat(res, "compaction", 1,
           "the heap was compacted before dump %u (%" PRIu64 " objects and %" PRIu64
           " classes found moved, %" PRIu64 " pinned): objects were matched by allocation "
           "generation where they have one and moved ones left out; moved objects without one "
           "count as new, so the retained set may hold objects that are not new",
           d + 1, c->moved[d], c->classes_moved[d], c->pinned[d]);
  }
  for(unsigned d = 1; d < n; d++) {
    uint32_t a = res->dumps[d - 1].max_generation, b = res->dumps[d].max_generation;
    if(!a || !b)
      continue;
    if(b < a)
      caveat(res, "gc_order", 1,
             "dump %u's newest allocation generation (GC %u) is older than dump %u's (GC %u): "
             "the dumps are not in the order they were taken, or come from different processes",
             d + 1, b, d, a);
    else if(a == b)
      caveat(res, "no_gc", 1,
             "no garbage collection ran between dumps %u and %u (GC %u in both): objects that "
             "were already garbage count as retained",
             d, d + 1, a);
  }
  if(c->old1 >= 50 && c->old_common < c->old1 / 2)
    caveat(res, "few_common", 1,
           "only %" PRIu64 " of dump 1's %" PRIu64 " old objects are in dump 2 at the same "
           "address: a compaction, or dumps of different processes",
           c->old_common, c->old1);
  if(res->count && !c->retained_sited)
    caveat(res, "no_sites", 0,
           "the dumps carry no allocation sites (allocation tracing was off): retained objects "
           "are grouped by class and type only, sites unknown");
  else if(res->count && c->retained_sited < res->count / 2)
    caveat(res, "partial_sites", 0,
           "%" PRIu64 " of %" PRIu64 " retained objects have an allocation site (tracing "
           "started after the others were allocated)",
           c->retained_sited, res->count);
  if(n == 2)
    caveat(res, "two_dumps", 0,
           "two dumps: these are the objects new since the first dump; a third dump would show "
           "which of them stay");
}

void mdp_analysis_result_free(mdp_analysis_result *res)
{
  for(unsigned d = 0; d < MDP_ANALYSIS_DUMPS_MAX; d++)
    free(res->dumps[d].path);
  for(size_t i = 0; i < res->n_groups; i++) {
    free(res->groups[i].class_name);
    free(res->groups[i].file);
  }
  for(size_t i = 0; i < res->n_classes; i++)
    free(res->classes[i].class_name);
  for(size_t i = 0; i < res->n_grew; i++)
    free(res->grew[i].class_name);
  for(size_t i = 0; i < res->n_files; i++)
    free(res->files[i].file);
  for(size_t i = 0; i < res->n_strings; i++)
    free(res->strings[i].value);
  free(res->groups);
  free(res->classes);
  free(res->grew);
  free(res->files);
  free(res->strings);
  memset(res, 0, sizeof(*res));
}
