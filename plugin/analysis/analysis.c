/* The three-snapshot retained set; see analysis.h.
 *
 * Pass 1 keeps every object of dump 1 as 8 bytes (address, type,
 * generation, old flag). Pass 2 keeps the objects of dump 2 that dump 1 did
 * not hold ("candidates") and frees dump 1's set. Pass 3 looks each object
 * of dump 3 up among the candidates: a match is retained and is counted in
 * its group (class, type, allocation site as dump 2 recorded it), its class
 * and, for strings, its value. With two dumps pass 2 counts the new objects directly.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis_int.h"
#include "reader.h"
#include "scan.h"

static int failf(char *err, size_t errlen, int rc, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return rc;
}

/* Instances are counted under their class; other objects (classes,
 * modules, internal objects) under their type. */
static int counted_by_class(unsigned type)
{
  switch(type) {
  case MDP_T_CLASS:
  case MDP_T_MODULE:
  case MDP_T_ICLASS:
  case MDP_T_IMEMO:
  case MDP_T_NODE:
  case MDP_T_UNKNOWN: return 0;
  default: return 1;
  }
}

#define TYPE_KEY(t) ((1ull << 63) | (t))

static uint64_t class_key(const mdp_analysis_obj *o)
{
  return counted_by_class(o->type) && o->class_addr ? o->class_addr : TYPE_KEY(o->type);
}

static int add_live(mdp_ctx *c, unsigned d, const mdp_analysis_obj *o)
{
  mdp_analysis_rec *r = mdp_analysis_map_get(&c->live[d], class_key(o), 0, 1);
  if(!r)
    return -ENOMEM;
  r->a++;
  r->b += o->memsize;
  r->c = o->type;
  return 0;
}

static int note_class(mdp_ctx *c, unsigned d, const mdp_analysis_obj *o)
{
  uint32_t id = mdp_analysis_strtab_id(&c->names, o->name, o->name_len);
  if(!id)
    return -ENOMEM;
  mdp_analysis_rec *r = mdp_analysis_map_get(&c->cname[d], o->address, 0, 1);
  mdp_analysis_rec *n = mdp_analysis_map_get(&c->named[d], id, 0, 1);
  if(!r || !n)
    return -ENOMEM;
  r->a = id;
  n->a = o->address;
  return 0;
}

/* The site number of o's allocation site (0: none). */
static int site_of(mdp_ctx *c, const mdp_analysis_obj *o, uint32_t *site)
{
  *site = 0;
  if(!o->file)
    return 0;
  uint32_t file = mdp_analysis_strtab_id(&c->files, o->file, o->file_len);
  mdp_analysis_rec *r = file ? mdp_analysis_map_get(&c->sites, file, o->line, 1) : NULL;
  if(!r)
    return -ENOMEM;
  *site = (uint32_t)(r - c->sites.recs) + 1;
  return 0;
}

/* Allocated in the hook's own Ruby files (memdiag/hook/...): its work, not
 * the application's. */
static int hook_file(const char *f, size_t n)
{
  static const char key[] = "memdiag/hook";
  return f && (memmem(f, n, key, sizeof(key) - 1) || memmem(f, n, "memdiag_hook", 12));
}

/* A retained (or, with two dumps, new) object with its site number (0:
 * none). Counted in its group; kept for ownership when the graph is on. */
static int add_retained(mdp_ctx *c, const mdp_analysis_obj *o, uint32_t site, uint32_t *number)
{
  uint64_t k2 = site ? c->sites.recs[site - 1].k1 << 32 | c->sites.recs[site - 1].k2 : 0;
  /* Allocation tracing's own table (a DATA object whose memsize is every
   * record): the capture's cost, not the application's. */
  static const char tracer[] = "ObjectTracing/allocation_info_tracer";
  if(o->type == MDP_T_DATA && o->struct_len == sizeof(tracer) - 1 &&
     memcmp(o->struct_name, tracer, sizeof(tracer) - 1) == 0)
    k2 |= 1ull << 63;
  mdp_analysis_rec *g =
      mdp_analysis_map_get(&c->groups, class_key(o) ^ (uint64_t)o->type << 56, k2, 1);
  if(!g)
    return -ENOMEM;
  g->a++;
  g->b += o->memsize;
  g->c = class_key(o);
  mdp_sampled_join_note(&c->sj, o->address, (uint32_t)(g - c->groups.recs));
  *number = MDP_G_NONE;
  if(!c->g.off) {
    if(c->n_ret == c->ret_cap) {
      size_t cap = c->ret_cap ? c->ret_cap * 2 : 1024;
      mdp_analysis_ret *r =
          mdp_analysis_realloc(&c->mem, c->ret, c->ret_cap * sizeof(*r), cap * sizeof(*r));
      if(!r) {
        c->mem.over = 0;
        c->g.off = 1;
        mdp_analysis_graph_free(&c->g);
      } else {
        c->ret = r;
        c->ret_cap = cap;
      }
    }
    if(!c->g.off) {
      c->ret[c->n_ret] = (mdp_analysis_ret){
          .group = (uint32_t)(g - c->groups.recs), .size = o->memsize, .node = (uint32_t)c->g.n};
      *number = (uint32_t)c->n_ret++;
    }
  }
  if(site) {
    size_t fl;
    const char *f = mdp_analysis_strtab_str(&c->files, (uint32_t)c->sites.recs[site - 1].k1, &fl);
    if(hook_file(f, fl)) {
      c->hook_sited++;
      return 0;
    }
  }
  if(o->type != MDP_T_STRING || !o->value)
    return 0;
  /* Strings seen once cost 8 bytes (a hash in a set); a record and the
   * text are kept from the second sighting on. */
  uint64_t h = mdp_analysis_hash(o->value, o->value_len) ^ o->bytesize;
  mdp_analysis_rec *s = mdp_analysis_map_get(&c->strings, h, o->bytesize, 0);
  if(!s) {
    uint64_t e = (h | (1ull << 63)) & ~((1ull << 19) - 1);
    if(mdp_analysis_objset_get(&c->seen, e, NULL) == 0)
      return mdp_analysis_objset_put(&c->seen, e, 0);
    s = mdp_analysis_map_get(&c->strings, h, o->bytesize, 1);
    if(!s)
      return -ENOMEM;
    char text[MDP_ANALYSIS_STRING_MAX + 1];
    size_t n = mdp_analysis_unescape(o->value, o->value_len, text, sizeof(text));
    s->c = mdp_analysis_strtab_id(&c->svals, text, n);
    if(!s->c)
      return -ENOMEM;
    s->a = 1;
    s->b = o->memsize;
  }
  s->a++;
  s->b += o->memsize;
  return 0;
}

static int check_addr(const mdp_analysis_obj *o)
{
  return o->address >= MDP_OBJ_ADDR_LIMIT || (o->address & 7) ? -1 : 0;
}

/* Allocated after the earlier dump was taken, by its generation: newer
 * than anything traced there (or tracing started after it). An untraced
 * object at the same address in the earlier dump was another one: Ruby
 * reuses freed slots all the time. */
static int newer(const mdp_analysis_dump *earlier, const mdp_analysis_obj *o)
{
  return o->has_gen && o->generation > earlier->max_generation;
}

/* What an object keeps for life, beside its address and type: its class
 * and, for a String, its length and first bytes. Another object in a
 * reused slot differs here even when the dump's allocation data is stale
 * (tracing stopped: Ruby no longer drops a freed object's record, and the
 * next object at its address shows it). */
static uint32_t signature(const mdp_analysis_obj *o)
{
  uint64_t h = o->class_addr * 0x9E3779B97F4A7C15ull;
  if(o->type == MDP_T_STRING) {
    h ^= o->bytesize * 0xff51afd7ed558ccdull;
    if(o->value)
      h ^= mdp_analysis_hash(o->value, o->value_len < 64 ? o->value_len : 64);
  }
  return (uint32_t)(h ^ h >> 32);
}

/* The name of the class at class_addr as dump d has it, else as an earlier
 * dump had it: a dump may list a class after its instances, and a named
 * class keeps its address. NULL: none known. */
static const char *class_name_of(mdp_ctx *c, unsigned d, uint64_t class_addr, size_t *len)
{
  for(unsigned k = d + 1; k-- > 0;) {
    mdp_analysis_rec *r = mdp_analysis_map_get(&c->cname[k], class_addr, 0, 0);
    if(r)
      return mdp_analysis_strtab_str(&c->names, (uint32_t)r->a, len);
  }
  return NULL;
}

/* o, of dump d, matched the object dump d - 1 had at its address, yet the
 * last profile's sample there, of o's class, was allocated after dump d - 1
 * and by dump d (mdp_sampled_join_newer): o is that newer object. Ruby
 * gives a freed slot to the next object of its size, often of the same
 * class (a worker that leaks a class it also churns), and dumps without
 * allocation data cannot tell it from the old one; only sampled objects
 * are told, the others stay taken for the old (the reused_slots caveat). */
static int sampled_newer(mdp_ctx *c, unsigned d, const mdp_analysis_obj *o)
{
  const mdp_analysis_sample *s = mdp_sampled_join_newer(&c->sj, o->address, d);
  const char *name;
  size_t n;
  if(!s || !s->class_name || !counted_by_class(o->type))
    return 0;
  name = class_name_of(c, d, o->class_addr, &n);
  return name && strlen(s->class_name) == n && memcmp(name, s->class_name, n) == 0;
}

static uint32_t class_id(mdp_ctx *c, uint64_t class_addr)
{
  if(!class_addr || c->g.off)
    return 0;
  mdp_analysis_rec *r = mdp_analysis_map_get(&c->clsid, class_addr, 0, 1);
  return r ? (uint32_t)(r - c->clsid.recs) + 1 : 0;
}

/* An object of the last dump: a node of the graph, retained or not, old
 * (in dump 1 too) or not. */
static void node(mdp_ctx *c, const mdp_analysis_obj *o, uint64_t e, uint32_t number)
{
  if(c->g.off)
    return;
  unsigned flag = 0;
  uint32_t aux = number;
  if(number != MDP_G_NONE) {
    flag = MDP_G_RETAINED;
  } else {
    uint64_t f1 = mdp_analysis_objset_get(&c->s1, e, NULL);
    if(f1 && mdp_obj_same(f1, e))
      flag = MDP_G_OLD;
    aux = class_id(c, o->class_addr);
  }
  mdp_analysis_graph_node(&c->g, o->address, o->type, flag, aux);
}

/* One object of dump d. */
static int object(mdp_ctx *c, unsigned d, const mdp_analysis_obj *o)
{
  uint64_t e = mdp_obj_pack(o->address, o->type, o->has_gen, o->generation, o->old);
  uint64_t found, aux;
  uint32_t site, number = MDP_G_NONE;
  int rc, last = d + 1 == c->res->n_dumps;

  if((rc = add_live(c, d, o)) != 0)
    return rc;
  if((o->type == MDP_T_CLASS || o->type == MDP_T_MODULE) && o->name &&
     (rc = note_class(c, d, o)) != 0)
    return rc;
  if(d == 0) {
    c->old1 += o->old;
    return mdp_analysis_objset_put(&c->s1, e, 0);
  }
  if(d == 1) {
    found = mdp_analysis_objset_get(&c->s1, e, NULL);
    if(found && mdp_obj_same(found, e) &&
       !(MDP_OBJ_GEN(found) == 0 && newer(&c->res->dumps[0], o))) {
      if(!sampled_newer(c, d, o)) {
        c->old_common += MDP_OBJ_OLD(found);
        goto done;
      }
      c->res->sampling.reused_new++;
    }
    if(found)
      c->res->reused++;
    /* Allocated before dump 1 was taken, yet not where dump 1 had it:
     * it moved (compaction), and is no new object. */
    if(o->has_gen && o->generation < c->res->dumps[0].max_generation) {
      c->moved[1]++;
      goto done;
    }
    if((rc = site_of(c, o, &site)) != 0)
      return rc;
    if(last) {
      if((rc = add_retained(c, o, site, &number)) != 0)
        return rc;
      goto done;
    }
    return mdp_analysis_objset_put(&c->cand, e, (uint64_t)signature(o) << 32 | site);
  }
  found = mdp_analysis_objset_get(&c->cand, e, &aux);
  site = (uint32_t)aux;
  if(found && mdp_obj_same(found, e) && !(MDP_OBJ_GEN(found) == 0 && newer(&c->res->dumps[1], o))) {
    uint32_t here = 0;
    if((uint32_t)(aux >> 32) != signature(o)) {
      c->res->reused++;
      goto done;
    }
    /* Sites come from dump 2 only: tracing may have stopped before dump
     * 3, whose records are then stale. One that names another site shows
     * another object at the address. */
    if(o->file && (rc = site_of(c, o, &here)) != 0)
      return rc;
    if(here && site && here != site) {
      c->contradicted++;
      c->res->reused++;
      goto done;
    }
    if(sampled_newer(c, d, o)) {
      c->res->sampling.reused_later++;
      c->res->reused++;
      goto done;
    }
    if(o->type != MDP_T_STRING && MDP_OBJ_GEN(found) && !o->has_gen)
      c->unsure++;
    if((rc = add_retained(c, o, site, &number)) != 0)
      return rc;
    goto done;
  }
  if(found)
    c->res->reused++;
  /* Allocated between dumps 1 and 2, so dump 2 held it: not where it was. */
  if(o->has_gen && o->generation > c->res->dumps[0].max_generation &&
     o->generation < c->res->dumps[1].max_generation)
    c->moved[2]++;
done:
  if(last)
    node(c, o, e, number);
  return 0;
}

/* The references of a line of the last dump, into the graph. */
static void references(mdp_ctx *c, const mdp_analysis_line *l, const mdp_analysis_obj *o,
                       uint64_t line)
{
  if(l->tail && c->g.ref_line == line && c->g.ref_in) {
    if(!c->g.ref_done) /* read across the middle: the rest is in the tail */
      mdp_analysis_graph_refs(&c->g, l->tail, l->tail_len);
    return;
  }
  if(!o->refs)
    return;
  c->g.cut += o->refs_open;
  mdp_analysis_graph_refs(&c->g, o->refs, o->refs_len);
}

/* Why an allocation failed that the limit did not refuse: memory_limit 0
 * (AnalyzeMaxMemory 0, memdiagctl analyze --max-memory 0) sets none. */
static const char *nomem_why(const mdp_analysis_mem *m)
{
  return m->limit ? "below the analysis' memory limit" : "no memory limit was set";
}

static int pass(mdp_ctx *c, unsigned d, const char *path, char *err, size_t errlen)
{
  mdp_analysis_dump *dump = &c->res->dumps[d];
  mdp_analysis_reader r;
  mdp_analysis_line l;
  mdp_analysis_obj o;
  const char *why;
  size_t charged = 0;
  int rc;

  dump->path = strdup(path);
  if(!dump->path)
    return failf(err, errlen, -ENOMEM, "out of memory");
  rc = mdp_analysis_reader_open(&r, path);
  if(rc) {
    failf(err, errlen, rc, "%s", r.err);
    mdp_analysis_reader_close(&r);
    return rc;
  }
  dump->compressed = r.compressed;
  int graph = d + 1 == c->res->n_dumps && !c->g.off;
  if(graph) {
    r.middle = mdp_analysis_graph_middle;
    r.middle_arg = &c->g;
    if(!r.compressed) {
      /* some 250-400 bytes a line: a low guess, grown by a quarter */
      off_t size = lseek(r.fd, 0, SEEK_END);
      lseek(r.fd, 0, SEEK_SET);
      if(size > 0)
        mdp_analysis_graph_expect(&c->g, (size_t)size / 256);
    }
  }
  if(c->opts.check_owner) {
    struct stat st;
    /* The worker's own file, or one the plugin wrote itself (a streamed
     * dump): a hard link planted to another file of ours has more links. */
    if(fstat(r.fd, &st) != 0 ||
       !(st.st_uid == c->opts.owner || (st.st_uid == geteuid() && st.st_nlink == 1))) {
      rc = failf(err, errlen, -EPERM, "%s: not owned by uid %u; not read", path,
                 (unsigned)c->opts.owner);
      goto out;
    }
  }
  if(d == 0 && !r.compressed) {
    /* Ruby writes some 150-300 bytes an object: size the set once. */
    off_t size = lseek(r.fd, 0, SEEK_END);
    lseek(r.fd, 0, SEEK_SET);
    mdp_analysis_objset_free(&c->s1);
    if(size > 0 && mdp_analysis_objset_init(&c->s1, &c->mem, (size_t)size / 160, 0)) {
      rc = -ENOMEM;
      goto out;
    }
  }
  while((rc = mdp_analysis_reader_next(&r, &l)) == 1) {
    if((dump->lines & 0xffff) == 0 && c->opts.cancel && atomic_load(c->opts.cancel)) {
      rc = failf(err, errlen, -ECANCELED, "%s: analysis cancelled", path);
      goto out;
    }
    if(!dump->lines++) {
      charged = mdp_analysis_reader_footprint(&r);
      if(mdp_analysis_charge(&c->mem, (int64_t)charged)) {
        charged = 0;
        rc = -ENOMEM;
        goto out;
      }
    }
    if(mdp_analysis_scan(&l, &o, &why)) {
      rc = failf(err, errlen, -EINVAL, "%s:%llu: %s", path, (unsigned long long)r.line, why);
      goto out;
    }
    if(graph && !c->g.off)
      references(c, &l, &o, r.line);
    /* Roots and Ruby 3.3's SHAPE records are no heap objects; slots in
     * the middle of a move or freed are none either. */
    if(!o.address || o.type == MDP_T_SHAPE || o.type == MDP_T_ROOT || o.type == MDP_T_MOVED ||
       o.type == MDP_T_NONE || o.type == MDP_T_ZOMBIE) {
      c->moved_slots[d] += o.type == MDP_T_MOVED;
      if(graph && o.type == MDP_T_ROOT)
        mdp_analysis_graph_root(&c->g, o.root, o.root_len);
      else if(graph)
        mdp_analysis_graph_skip(&c->g);
      continue;
    }
    if(check_addr(&o)) {
      rc = failf(err, errlen, -EINVAL,
                 "%s:%llu: address 0x%llx is not an 8-aligned address below 2^48 "
                 "(not a heap dump of this platform)",
                 path, (unsigned long long)r.line, (unsigned long long)o.address);
      goto out;
    }
    dump->objects++;
    dump->memsize += o.memsize;
    dump->traced += o.file != NULL;
    if(o.has_gen && o.generation > dump->max_generation)
      dump->max_generation = o.generation;
    c->pinned[d] += o.pinned;
    if(!mdp_analysis_map_get(&c->pages, o.address >> 16, 0, 1)) {
      rc = -ENOMEM;
      goto out;
    }
    if((rc = object(c, d, &o)) != 0)
      goto out;
  }
  dump->pages = c->pages.n;
  if(rc < 0) {
    failf(err, errlen, rc, "%s", r.err);
    goto out;
  }
  rc = 0;
  if(!dump->objects)
    rc = failf(err, errlen, -EINVAL, "%s: no heap objects in this file", path);
out:
  mdp_analysis_map_free(&c->pages);
  dump->file_bytes = r.file_bytes;
  dump->json_bytes = r.json_bytes;
  mdp_analysis_charge(&c->mem, -(int64_t)charged);
  mdp_analysis_reader_close(&r);
  if(rc && rc != -ECANCELED && c->mem.over)
    rc =
        failf(err, errlen, -ENOMEM, "%s: the analysis needs more than its memory limit of %llu MiB",
              path, (unsigned long long)(c->mem.limit >> 20));
  else if(rc == -ENOMEM) /* under the limit, or none (0): the system said no */
    rc = failf(err, errlen, -ENOMEM, "%s: out of memory (%s)", path, nomem_why(&c->mem));
  return rc;
}

/* Named classes of dump d that dump d-1 had elsewhere, and whose old
 * address no longer holds them (a reloaded class leaves the old one). */
static uint64_t classes_moved(mdp_ctx *c, unsigned d)
{
  uint64_t moved = 0;
  for(size_t i = 0; i < c->named[d].n; i++) {
    mdp_analysis_rec *now = &c->named[d].recs[i];
    mdp_analysis_rec *before = mdp_analysis_map_get(&c->named[d - 1], now->k1, 0, 0);
    if(!before || before->a == now->a)
      continue;
    mdp_analysis_rec *at_old = mdp_analysis_map_get(&c->cname[d], before->a, 0, 0);
    if(!at_old || at_old->a != now->k1)
      moved++;
  }
  return moved;
}

int mdp_analysis_run(const char *const *paths, unsigned n, const mdp_analysis_opts *opts,
                     mdp_analysis_result *res, char *err, size_t errlen)
{
  struct timespec t0, t1;
  mdp_ctx c;
  int rc;

  memset(res, 0, sizeof(*res));
  if(n < 2 || n > MDP_ANALYSIS_DUMPS_MAX)
    return failf(err, errlen, -EINVAL, "the analysis takes two or three dumps, not %u", n);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  memset(&c, 0, sizeof(c));
  c.res = res;
  if(opts)
    c.opts = *opts;
  c.mem.limit = c.opts.memory_limit;
  res->n_dumps = n;
  mdp_analysis_strtab_init(&c.files, &c.mem);
  mdp_analysis_strtab_init(&c.names, &c.mem);
  mdp_analysis_strtab_init(&c.svals, &c.mem);
  mdp_analysis_map_init(&c.groups, &c.mem);
  mdp_analysis_map_init(&c.sites, &c.mem);
  mdp_analysis_map_init(&c.strings, &c.mem);
  mdp_analysis_map_init(&c.clsid, &c.mem);
  mdp_analysis_map_init(&c.pages, &c.mem);
  mdp_analysis_graph_init(&c.g, &c.mem);
  c.g.off = c.opts.no_graph;
  for(unsigned d = 0; d < MDP_ANALYSIS_DUMPS_MAX; d++) {
    mdp_analysis_map_init(&c.live[d], &c.mem);
    mdp_analysis_map_init(&c.cname[d], &c.mem);
    mdp_analysis_map_init(&c.named[d], &c.mem);
  }
  if(mdp_sampled_join_init(&c.sj, &c.mem, c.opts.samples) ||
     mdp_analysis_objset_init(&c.s1, &c.mem, 0, 0) ||
     mdp_analysis_objset_init(&c.cand, &c.mem, 0, 1) ||
     mdp_analysis_objset_init(&c.seen, &c.mem, 0, 0)) {
    rc = failf(err, errlen, -ENOMEM, "out of memory");
    goto out;
  }
  for(unsigned d = 0; d < n; d++) {
    if((rc = pass(&c, d, paths[d], err, errlen)) != 0)
      goto out;
    if(d > 0)
      c.classes_moved[d] = classes_moved(&c, d);
  }
  /* Dump 1's set served the last pass (alive in every dump): the graph
   * needs the room now. */
  mdp_analysis_objset_free(&c.s1);
  mdp_analysis_objset_free(&c.cand);
  mdp_analysis_objset_free(&c.seen);
  mdp_analysis_graph_resolve(&c.g);
  rc = mdp_analysis_build(&c);
  if(rc && c.mem.over) {
    failf(err, errlen, rc, "the analysis needs more than its memory limit of %llu MiB",
          (unsigned long long)(c.mem.limit >> 20));
    goto out;
  }
  if(rc) {
    failf(err, errlen, rc, "out of memory (%s)", nomem_why(&c.mem));
    goto out;
  }
  mdp_analysis_caveats(&c);
out:
  mdp_analysis_objset_free(&c.s1);
  mdp_analysis_objset_free(&c.cand);
  mdp_analysis_objset_free(&c.seen);
  mdp_analysis_strtab_free(&c.files);
  mdp_analysis_strtab_free(&c.names);
  mdp_analysis_strtab_free(&c.svals);
  mdp_analysis_map_free(&c.groups);
  mdp_analysis_map_free(&c.sites);
  mdp_analysis_map_free(&c.strings);
  mdp_analysis_map_free(&c.clsid);
  mdp_analysis_map_free(&c.pages);
  mdp_analysis_graph_free(&c.g);
  mdp_sampled_join_free(&c.sj);
  if(c.ret)
    mdp_analysis_release(&c.mem, c.ret, c.ret_cap * sizeof(*c.ret));
  for(unsigned d = 0; d < MDP_ANALYSIS_DUMPS_MAX; d++) {
    mdp_analysis_map_free(&c.live[d]);
    mdp_analysis_map_free(&c.cname[d]);
    mdp_analysis_map_free(&c.named[d]);
  }
  res->peak_memory = c.mem.peak;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  res->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
  if(rc)
    mdp_analysis_result_free(res);
  return rc;
}
