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

/* A retained (or, with two dumps, new) object. Its site is the one dump 2
 * recorded (site), else its own: a plan's last dump follows
 * allocation_trace_stop, which clears the sites. */
static int add_retained(mdp_ctx *c, const mdp_analysis_obj *o, uint32_t site)
{
  int rc;
  if(!site && (rc = site_of(c, o, &site)) != 0)
    return rc;
  uint64_t k2 = site ? c->sites.recs[site - 1].k1 << 32 | c->sites.recs[site - 1].k2 : 0;
  mdp_analysis_rec *g =
      mdp_analysis_map_get(&c->groups, class_key(o) ^ (uint64_t)o->type << 56, k2, 1);
  if(!g)
    return -ENOMEM;
  g->a++;
  g->b += o->memsize;
  g->c = class_key(o);
  c->res->count++;
  c->res->bytes += o->memsize;
  if(site)
    c->retained_sited++;
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

/* One object of dump d. */
static int object(mdp_ctx *c, unsigned d, const mdp_analysis_obj *o)
{
  uint64_t e = mdp_obj_pack(o->address, o->type, o->has_gen, o->generation, o->old);
  uint64_t found;
  uint32_t site;
  int rc;

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
      c->old_common += MDP_OBJ_OLD(found);
      return 0;
    }
    if(found)
      c->res->reused++;
    /* Allocated before dump 1 was taken, yet not where dump 1 had it:
     * it moved (compaction), and is no new object. */
    if(o->has_gen && o->generation < c->res->dumps[0].max_generation) {
      c->moved[1]++;
      return 0;
    }
    if(c->res->n_dumps == 2)
      return add_retained(c, o, 0);
    if((rc = site_of(c, o, &site)) != 0)
      return rc;
    return mdp_analysis_objset_put(&c->cand, e, site);
  }
  found = mdp_analysis_objset_get(&c->cand, e, &site);
  if(found && mdp_obj_same(found, e) && !(MDP_OBJ_GEN(found) == 0 && newer(&c->res->dumps[1], o)))
    return add_retained(c, o, site);
  if(found)
    c->res->reused++;
  /* Allocated between dumps 1 and 2, so dump 2 held it: not where it was. */
  if(o->has_gen && o->generation > c->res->dumps[0].max_generation &&
     o->generation < c->res->dumps[1].max_generation)
    c->moved[2]++;
  return 0;
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
    /* Roots and Ruby 3.3's SHAPE records are no heap objects; slots in
     * the middle of a move or freed are none either. */
    if(!o.address || o.type == MDP_T_SHAPE || o.type == MDP_T_ROOT || o.type == MDP_T_MOVED ||
       o.type == MDP_T_NONE || o.type == MDP_T_ZOMBIE) {
      c->moved_slots[d] += o.type == MDP_T_MOVED;
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
    if((rc = object(c, d, &o)) != 0)
      goto out;
  }
  if(rc < 0) {
    failf(err, errlen, rc, "%s", r.err);
    goto out;
  }
  rc = 0;
  if(!dump->objects)
    rc = failf(err, errlen, -EINVAL, "%s: no heap objects in this file", path);
out:
  dump->file_bytes = r.file_bytes;
  dump->json_bytes = r.json_bytes;
  mdp_analysis_charge(&c->mem, -(int64_t)charged);
  mdp_analysis_reader_close(&r);
  if(rc == -ENOMEM || (rc && rc != -ECANCELED && c->mem.over))
    rc =
        failf(err, errlen, -ENOMEM, "%s: the analysis needs more than its memory limit of %llu MiB",
              path, (unsigned long long)(c->mem.limit >> 20));
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
  for(unsigned d = 0; d < MDP_ANALYSIS_DUMPS_MAX; d++) {
    mdp_analysis_map_init(&c.live[d], &c.mem);
    mdp_analysis_map_init(&c.cname[d], &c.mem);
    mdp_analysis_map_init(&c.named[d], &c.mem);
  }
  if(mdp_analysis_objset_init(&c.s1, &c.mem, 0, 0) ||
     mdp_analysis_objset_init(&c.cand, &c.mem, 0, 1) ||
     mdp_analysis_objset_init(&c.seen, &c.mem, 0, 0)) {
    rc = failf(err, errlen, -ENOMEM, "out of memory");
    goto out;
  }
  for(unsigned d = 0; d < n; d++) {
    if((rc = pass(&c, d, paths[d], err, errlen)) != 0)
      goto out;
    if(d == 1)
      mdp_analysis_objset_free(&c.s1);
    if(d > 0)
      c.classes_moved[d] = classes_moved(&c, d);
  }
  rc = mdp_analysis_build(&c);
  if(rc) {
    failf(err, errlen, rc, "the analysis needs more than its memory limit of %llu MiB",
          (unsigned long long)(c.mem.limit >> 20));
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
