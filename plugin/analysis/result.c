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
/* A raw group's site key (file << 32 | line) with bit 63 set: memdiag's
 * own objects that no site tells (allocation tracing's own table). */
#define HOOK_MASK    0x7fffffffu

/* A name or file from the tables, unescaped into a new string. */
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
  if(name && !(k->class_name = mdp_analysis_decoded(&c->names, name))) {
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

/* Groups merged by class name, type and site (raw groups are by class
 * address, which differs between dumps). */
typedef struct {
  mdp_analysis_map merged;
  uint32_t *of;  /* raw group -> merged */
  uint8_t *hook; /* raw group -> the hook's own file */
  size_t n_raw;
  uint64_t *count, *shallow, *owned; /* per merged; owned NULL without ownership */
  mdp_analysis_own own;
  int have_own;
} merge;

static int hook_site(mdp_ctx *c, uint32_t file)
{
  size_t n;
  const char *f = file ? mdp_analysis_strtab_str(&c->files, file, &n) : NULL;
  return f && (memmem(f, n, "memdiag/hook", 12) || memmem(f, n, "memdiag_hook", 12));
}

static int merge_groups(mdp_ctx *c, unsigned last, merge *mg)
{
  mdp_analysis_map_init(&mg->merged, &c->mem);
  mg->n_raw = c->groups.n;
  mg->of = mdp_analysis_alloc(&c->mem, (mg->n_raw ? mg->n_raw : 1) * 4);
  mg->hook = mdp_analysis_alloc(&c->mem, mg->n_raw ? mg->n_raw : 1);
  if(!mg->of || !mg->hook)
    return -ENOMEM;
  for(size_t i = 0; i < c->groups.n; i++) {
    mdp_analysis_rec *g = &c->groups.recs[i];
    unsigned type = (unsigned)((g->k1 ^ g->c) >> 56);
    uint32_t name = name_of(c, last, g->c);
    mdp_analysis_rec *m =
        mdp_analysis_map_get(&mg->merged, class_id(name, type) << 8 | type, g->k2, 1);
    if(!m)
      return -ENOMEM;
    m->c = name;
    mg->of[i] = (uint32_t)(m - mg->merged.recs);
    mg->hook[i] = (uint8_t)(g->k2 >> 63 || hook_site(c, (uint32_t)(g->k2 >> 32) & HOOK_MASK));
  }
  return 0;
}

static void merge_free(mdp_ctx *c, merge *mg)
{
  size_t n = mg->merged.n ? mg->merged.n : 1;
  mdp_analysis_own_free(&mg->own);
  if(!mg->have_own) {
    if(mg->count)
      mdp_analysis_release(&c->mem, mg->count, n * 8);
    if(mg->shallow)
      mdp_analysis_release(&c->mem, mg->shallow, n * 8);
  }
  if(mg->of)
    mdp_analysis_release(&c->mem, mg->of, (mg->n_raw ? mg->n_raw : 1) * 4);
  if(mg->hook)
    mdp_analysis_release(&c->mem, mg->hook, mg->n_raw ? mg->n_raw : 1);
  mdp_analysis_map_free(&mg->merged);
}

/* Counts per merged group: from the dominator tree when there is one
 * (the hook's objects and all they keep alive left out), else from the
 * raw groups (the hook's sites left out). */
static int count_groups(mdp_ctx *c, merge *mg)
{
  size_t n = mg->merged.n ? mg->merged.n : 1;
  mdp_analysis_result *res = c->res;
  if(!c->g.off && c->n_ret) {
    mg->own = (mdp_analysis_own){.g = &c->g,
                                 .ret = c->ret,
                                 .n_ret = c->n_ret,
                                 .merged = mg->of,
                                 .hook = mg->hook,
                                 .n_merged = mg->merged.n};
    if(mdp_analysis_own_run(&mg->own, &c->mem) == 0) {
      mg->have_own = 1;
      mg->count = mg->own.count;
      mg->shallow = mg->own.shallow;
      mg->owned = mg->own.owned;
      res->ownership = 1;
      res->hook_count = mg->own.hook_count;
      res->hook_bytes = mg->own.hook_bytes;
      return 0;
    }
    c->mem.over = 0;
    memset(&mg->own, 0, sizeof(mg->own));
  }
  mg->count = mdp_analysis_alloc(&c->mem, n * 8);
  mg->shallow = mdp_analysis_alloc(&c->mem, n * 8);
  if(!mg->count || !mg->shallow)
    return -ENOMEM;
  for(size_t i = 0; i < c->groups.n; i++) {
    mdp_analysis_rec *g = &c->groups.recs[i];
    if(mg->hook[i]) {
      res->hook_count += g->a;
      res->hook_bytes += g->b;
      continue;
    }
    mg->count[mg->of[i]] += g->a;
    mg->shallow[mg->of[i]] += g->b;
  }
  return 0;
}

static const mdp_analysis_rec *sort_recs;
static const uint64_t *sort_owned, *sort_top, *sort_shallow, *sort_count;

/* Owners first: by what a group keeps alive that no other retained object
 * does, then by all it owns, then by its own bytes. */
static int cmp_merged(const void *x, const void *y)
{
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  if(sort_top && sort_top[a] != sort_top[b])
    return sort_top[a] > sort_top[b] ? -1 : 1;
  uint64_t oa = sort_owned ? sort_owned[a] : sort_shallow[a];
  uint64_t ob = sort_owned ? sort_owned[b] : sort_shallow[b];
  if(oa != ob)
    return oa > ob ? -1 : 1;
  return by_bytes(sort_shallow[a], sort_shallow[b], sort_count[a], sort_count[b]);
}

/* What group m keeps alive besides itself, by class. */
static int mostly(mdp_ctx *c, merge *mg, uint32_t m, mdp_analysis_group *out)
{
  size_t n = mg->merged.n;
  uint64_t *bytes = mdp_analysis_alloc(&c->mem, n * 8);
  mdp_analysis_map byclass;
  const mdp_analysis_rec *best = NULL;
  if(!bytes)
    return -ENOMEM;
  mdp_analysis_map_init(&byclass, &c->mem);
  mdp_analysis_own_mostly(&mg->own, m, bytes);
  for(size_t k = 0; k < n; k++) {
    if(!bytes[k])
      continue;
    mdp_analysis_rec *r = mdp_analysis_map_get(&byclass, mg->merged.recs[k].k1, 0, 1);
    if(!r)
      break;
    r->a += bytes[k];
    r->b = mg->merged.recs[k].c;
    if(!best || r->a > best->a)
      best = r;
  }
  /* best points into byclass, which may have moved: look again */
  best = NULL;
  for(size_t i = 0; i < byclass.n; i++)
    if(!best || byclass.recs[i].a > best->a)
      best = &byclass.recs[i];
  if(best) {
    out->mostly_bytes = best->a;
    out->mostly_type = mdp_analysis_type_name((unsigned)(best->k1 & 0xff));
    if(best->b && !(out->mostly_class = mdp_analysis_decoded(&c->names, (uint32_t)best->b)))
      best = NULL;
  }
  mdp_analysis_map_free(&byclass);
  mdp_analysis_release(&c->mem, bytes, n * 8);
  return 0;
}

static int build_groups(mdp_ctx *c, merge *mg, uint32_t **order_out)
{
  mdp_analysis_result *res = c->res;
  size_t n = mg->merged.n;
  uint32_t *order = mdp_analysis_alloc(&c->mem, (n ? n : 1) * 4);
  if(!order)
    return -ENOMEM;
  *order_out = order;
  size_t k = 0;
  for(size_t i = 0; i < n; i++)
    if(mg->count[i])
      order[k++] = (uint32_t)i;
  sort_recs = mg->merged.recs;
  sort_owned = mg->owned;
  sort_top = mg->have_own ? mg->own.top_owned : NULL;
  sort_shallow = mg->shallow;
  sort_count = mg->count;
  qsort(order, k, 4, cmp_merged);
  res->groups = calloc(k ? k : 1, sizeof(*res->groups));
  if(!res->groups)
    return -ENOMEM;
  for(size_t i = 0; i < k; i++) {
    mdp_analysis_rec *m = &mg->merged.recs[order[i]];
    mdp_analysis_group *g = &res->groups[res->n_groups++];
    uint32_t file = (uint32_t)(m->k2 >> 32) & HOOK_MASK;
    g->type = mdp_analysis_type_name((unsigned)(m->k1 & 0xff));
    g->class_name = m->c ? mdp_analysis_decoded(&c->names, (uint32_t)m->c) : NULL;
    g->file = file ? mdp_analysis_decoded(&c->files, file) : NULL;
    g->line = (unsigned)(m->k2 & 0xffffffffu);
    g->site_source = file ? MDP_ANALYSIS_SITE_TRACED : MDP_ANALYSIS_SITE_NONE;
    g->count = mg->count[order[i]];
    g->bytes = mg->shallow[order[i]];
    g->owned = mg->owned ? mg->owned[order[i]] : g->bytes;
    res->count += g->count;
    res->bytes += g->bytes;
    if(file)
      c->retained_sited += g->count;
    if((m->c && !g->class_name) || (file && !g->file))
      return -ENOMEM;
    if(mg->have_own && i < 10 && mostly(c, mg, order[i], g))
      return -ENOMEM;
  }
  return 0;
}

/* The heap profile's samples give the site-less groups theirs (sampled.h):
 * raw group -> its index in res->groups + 1. */
static int sampled_sites(mdp_ctx *c, merge *mg, const uint32_t *order)
{
  size_t n = mg->merged.n ? mg->merged.n : 1, n_raw = mg->n_raw ? mg->n_raw : 1;
  uint32_t *pos = mdp_analysis_alloc(&c->mem, n * 4), *of_raw = NULL;
  int rc = -ENOMEM;
  if(pos && (of_raw = mdp_analysis_alloc(&c->mem, n_raw * 4)) != NULL) {
    for(size_t i = 0; i < c->res->n_groups; i++)
      pos[order[i]] = (uint32_t)i + 1;
    for(size_t r = 0; r < mg->n_raw; r++)
      of_raw[r] = pos[mg->of[r]];
    rc = mdp_sampled_join_sites(&c->sj, c->res, of_raw, mg->n_raw);
  }
  if(of_raw)
    mdp_analysis_release(&c->mem, of_raw, n_raw * 4);
  if(pos)
    mdp_analysis_release(&c->mem, pos, n * 4);
  return rc;
}

static int build_files(mdp_ctx *c, merge *mg)
{
  mdp_analysis_result *res = c->res;
  mdp_analysis_map files;
  int rc = -ENOMEM;
  mdp_analysis_map_init(&files, &c->mem);
  for(size_t i = 0; i < mg->merged.n; i++) {
    if(!mg->count[i])
      continue;
    mdp_analysis_rec *f =
        mdp_analysis_map_get(&files, (mg->merged.recs[i].k2 >> 32) & HOOK_MASK, 0, 1);
    if(!f)
      goto out;
    f->a += mg->count[i];
    f->b += mg->shallow[i];
  }
  res->files = calloc(files.n ? files.n : 1, sizeof(*res->files));
  if(!res->files)
    goto out;
  for(size_t i = 0; i < files.n; i++) {
    mdp_analysis_file *f = &res->files[res->n_files++];
    f->file = files.recs[i].k1 ? mdp_analysis_decoded(&c->files, (uint32_t)files.recs[i].k1) : NULL;
    f->count = files.recs[i].a;
    f->bytes = files.recs[i].b;
    if(files.recs[i].k1 && !f->file)
      goto out;
  }
  qsort(res->files, res->n_files, sizeof(*res->files), cmp_file);
  rc = 0;
out:
  mdp_analysis_map_free(&files);
  return rc;
}

/* Retained counts by class (the live counts are added by build_classes). */
static int retained_classes(mdp_ctx *c, merge *mg, mdp_analysis_map *cidx, size_t *ccap)
{
  for(size_t i = 0; i < mg->merged.n; i++) {
    mdp_analysis_rec *m = &mg->merged.recs[i];
    if(!mg->count[i])
      continue;
    mdp_analysis_class *k = class_entry(c, cidx, ccap, (uint32_t)m->c, (unsigned)(m->k1 & 0xff));
    if(!k)
      return -ENOMEM;
    k->count += mg->count[i];
    k->bytes += mg->shallow[i];
  }
  return 0;
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

/* The Ruby heap of each dump (its pages and what its objects hold beyond
 * their slots), and whether it explains the worker's RSS growth. */
static void verdict(mdp_ctx *c)
{
  mdp_analysis_result *res = c->res;
  unsigned last = res->n_dumps - 1;
  for(unsigned d = 0; d < res->n_dumps; d++) {
    mdp_analysis_dump *p = &res->dumps[d];
    uint64_t slots = p->objects * 40;
    p->heap = (p->pages << 16) + (p->memsize > slots ? p->memsize - slots : 0);
    p->rss = c->opts.rss[d];
  }
  res->heap_growth = (int64_t)res->dumps[last].heap - (int64_t)res->dumps[0].heap;
  if(!res->dumps[0].rss || !res->dumps[last].rss)
    return;
  res->rss_growth = (int64_t)res->dumps[last].rss - (int64_t)res->dumps[0].rss;
  if(res->rss_growth < (int64_t)MDP_ANALYSIS_RSS_MIN)
    res->verdict = MDP_ANALYSIS_VERDICT_NO_GROWTH;
  else if(res->heap_growth * 100 < res->rss_growth * MDP_ANALYSIS_HEAP_SHARE_PCT)
    res->verdict = MDP_ANALYSIS_VERDICT_OUTSIDE;
  else
    res->verdict = MDP_ANALYSIS_VERDICT_RUBY;
}

int mdp_analysis_build(mdp_ctx *c)
{
  mdp_analysis_map cidx;
  size_t ccap = 0;
  uint32_t *order = NULL;
  merge mg;
  int rc;

  memset(&mg, 0, sizeof(mg));
  mdp_analysis_map_init(&cidx, &c->mem);
  verdict(c);
  rc = merge_groups(c, c->res->n_dumps - 1, &mg);
  if(!rc)
    rc = count_groups(c, &mg);
  if(!rc)
    rc = build_groups(c, &mg, &order);
  if(!rc && c->sj.in)
    rc = sampled_sites(c, &mg, order);
  if(!rc && mg.have_own && c->res->n_groups)
    rc = mdp_analysis_holders(c, &mg.own, order[0]);
  if(!rc)
    rc = build_files(c, &mg);
  if(!rc)
    rc = retained_classes(c, &mg, &cidx, &ccap);
  if(!rc)
    rc = build_classes(c, &cidx, &ccap);
  if(order)
    mdp_analysis_release(&c->mem, order, (mg.merged.n ? mg.merged.n : 1) * 4);
  merge_free(c, &mg);
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
  if(res->count && !c->retained_sited && res->sampling.groups)
    caveat(res, "no_sites", 0,
           "the dumps carry no allocation sites (allocation tracing was off): retained objects "
           "are grouped by class and type only; %" PRIu64 " groups have the site their sampled "
           "objects share (site_source \"sampled\")",
           res->sampling.groups);
  else if(res->count && !c->retained_sited)
    caveat(res, "no_sites", 0,
           "the dumps carry no allocation sites (allocation tracing was off): retained objects "
           "are grouped by class and type only, sites unknown");
  else if(res->count && (c->retained_sited < res->count / 2 || !res->groups[0].file))
    caveat(res, "partial_sites", 0,
           "%" PRIu64 " of %" PRIu64 " retained objects have an allocation site%s (tracing "
           "started after the others were allocated, or they were allocated by C code)",
           c->retained_sited, res->count, res->groups[0].file ? "" : ", the top group none");
  if(c->unsure)
    caveat(res, "identity_unsure", 0,
           "%" PRIu64 " retained objects were told from other objects at the same address by "
           "type and class only: dump %u carries no allocation generation for them (tracing "
           "stopped) and they are no strings, whose content tells",
           c->unsure, n);
  /* A sample told these apart; as many unsampled objects may sit in reused
   * slots as each sample stands for, and are not. */
  if(res->sampling.reused_new || res->sampling.reused_later)
    caveat(res, "reused_slots", 0,
           "%" PRIu64 " retained objects were told new, and %" PRIu64 " objects of dump %u "
           "newer than dump 2, only by their samples: the earlier dump held an object of their "
           "type and class at their address. Unsampled objects in such reused slots are not "
           "told apart: groups may miss leaked objects and count others",
           res->sampling.reused_new, res->sampling.reused_later, n);
  if(c->g.cut)
    caveat(res, "references_cut", 0,
           "%" PRIu64 " objects' reference lists were read only in part (lines over 1 MiB): "
           "what they hold may be counted as held from outside",
           c->g.cut);
  if(res->count && !res->ownership)
    caveat(res, "no_ownership", 0,
           "ownership, holders and paths were not computed (%s): groups are ranked by their "
           "own bytes",
           c->opts.no_graph ? "not asked for" : "over the memory limit");
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
    free(res->groups[i].mostly_class);
  }
  for(size_t i = 0; i < res->n_holders; i++) {
    mdp_analysis_holder *h = &res->holders[i];
    free(h->obj.name);
    free(h->root);
    for(size_t j = 0; j < h->path_len; j++)
      free(h->path[j].name);
    free(h->path);
  }
  free(res->holders);
  for(size_t i = 0; i < res->sampling.n_objs; i++) {
    free(res->sampling.objs[i].class_name);
    free(res->sampling.objs[i].file);
  }
  free(res->sampling.objs);
  free(res->sampling.profile);
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
