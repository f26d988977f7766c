/* Sampled allocation sites joined to the retained set: see sampled.h. */
#include "analysis/sampled.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "md/text.h"
#include "profile.pb-c.h"

static int read_file(const char *path, const mdp_sampled_opts *o, uint8_t **buf, size_t *len,
                     char *err, size_t errlen)
{
  struct stat st;
  ssize_t got;
  size_t off = 0;
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

  if(fd < 0) {
    int e = errno;
    md_seterr(err, errlen, "%s: %s", path, strerror(e));
    return e == ELOOP ? -EPERM : -e;
  }
  if(fstat(fd, &st) || !S_ISREG(st.st_mode)) {
    md_seterr(err, errlen, "%s: not a regular file", path);
    close(fd);
    return -EINVAL;
  }
  /* a hard link planted in a worker's folder could name any file */
  if(o && o->check_owner &&
     ((st.st_uid != o->owner && st.st_uid != geteuid()) || st.st_nlink != 1)) {
    md_seterr(err, errlen, "%s: not owned by the worker's user, or linked elsewhere", path);
    close(fd);
    return -EPERM;
  }
  if((uint64_t)st.st_size > MDP_SAMPLED_FILE_MAX) {
    md_seterr(err, errlen, "%s: larger than %zu MiB", path, MDP_SAMPLED_FILE_MAX >> 20);
    close(fd);
    return -EFBIG;
  }
  *len = (size_t)st.st_size;
  *buf = malloc(*len ? *len : 1);
  if(!*buf) {
    close(fd);
    return -ENOMEM;
  }
  while(off < *len && (got = read(fd, *buf + off, *len - off)) > 0)
    off += (size_t)got;
  close(fd);
  if(off != *len) {
    free(*buf);
    md_seterr(err, errlen, "%s: short read", path);
    return -EIO;
  }
  return 0;
}

/* A buffer: max bytes at most (in), the bytes and their length (out). */
typedef struct {
  uint8_t *buf;
  size_t len, max;
} bytes_t;

/* Decompresses in[0..n) into o, o->max bytes at most. */
static int gunzip(const uint8_t *in, size_t n, bytes_t *o, char *err, size_t errlen)
{
  uint8_t **out = &o->buf;
  size_t max = o->max;
  z_stream z;
  size_t cap = n * 4 + 4096 < max ? n * 4 + 4096 : max;
  int zrc;

  memset(&z, 0, sizeof z);
  if(inflateInit2(&z, 15 + 32) != Z_OK) /* gzip or zlib header */
    return -ENOMEM;
  *out = malloc(cap);
  if(!*out) {
    inflateEnd(&z);
    return -ENOMEM;
  }
  z.next_in = (Bytef *)in;
  z.avail_in = (uInt)n;
  for(;;) {
    z.next_out = *out + z.total_out;
    z.avail_out = (uInt)(cap - z.total_out);
    zrc = inflate(&z, Z_NO_FLUSH);
    if(zrc == Z_STREAM_END)
      break;
    if(zrc != Z_OK && zrc != Z_BUF_ERROR) {
      md_seterr(err, errlen, "not gzip data (%s)", z.msg ? z.msg : "inflate failed");
      goto bad;
    }
    if(z.avail_out == 0) {
      uint8_t *bigger;
      if(cap >= max) {
        md_seterr(err, errlen, "decompresses to more than %zu MiB", max >> 20);
        inflateEnd(&z);
        free(*out);
        return -EFBIG;
      }
      cap = cap * 2 < max ? cap * 2 : max;
      bigger = realloc(*out, cap);
      if(!bigger) {
        inflateEnd(&z);
        free(*out);
        return -ENOMEM;
      }
      *out = bigger;
    } else if(zrc == Z_BUF_ERROR) {
      md_seterr(err, errlen, "truncated gzip data");
      goto bad;
    }
  }
  o->len = z.total_out;
  inflateEnd(&z);
  return 0;
bad:
  inflateEnd(&z);
  free(*out);
  *out = NULL;
  return -EINVAL;
}

/* What reading a profile holds at once: the file, its decompressed bytes,
 * protobuf-c's unpacked message (through this allocator) and the set. */
typedef struct {
  uint64_t used, limit; /* limit 0: none */
} meter;

#define METER_HEAD 16 /* keeps malloc's alignment */

static int meter_take(meter *m, uint64_t n)
{
  if(m->limit && m->used + n > m->limit)
    return -1;
  m->used += n;
  return 0;
}

static void *meter_alloc(void *arg, size_t n)
{
  meter *m = arg;
  uint8_t *p;
  if(meter_take(m, n + METER_HEAD))
    return NULL;
  p = malloc(n + METER_HEAD);
  if(!p) {
    m->used -= n + METER_HEAD;
    return NULL;
  }
  memcpy(p, &n, sizeof n);
  return p + METER_HEAD;
}

static void meter_free(void *arg, void *ptr)
{
  meter *m = arg;
  size_t n;
  if(!ptr)
    return;
  memcpy(&n, (uint8_t *)ptr - METER_HEAD, sizeof n);
  m->used -= n + METER_HEAD;
  free((uint8_t *)ptr - METER_HEAD);
}

static const char *str(const Memdiag__Pprof__Profile *p, int64_t i)
{
  return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : NULL;
}

/* Entry `id` of a table whose ids memdiag's hook numbers 1, 2, ...; any
 * other numbering is searched. */
#define FIND_BY_ID(arr, n, want, out)                                                              \
  do {                                                                                             \
    (out) = NULL;                                                                                  \
    if((want) >= 1 && (want) <= (n) && (arr)[(want)-1]->id == (want))                              \
      (out) = (arr)[(want)-1];                                                                     \
    else                                                                                           \
      for(size_t i_ = 0; i_ < (n) && !(out); i_++)                                                 \
        if((arr)[i_]->id == (want))                                                                \
          (out) = (arr)[i_];                                                                       \
  } while(0)

/* The leaf frame of a sample: its first location's first line. */
static void leaf(const Memdiag__Pprof__Profile *p, const Memdiag__Pprof__Sample *s, int64_t *file,
                 unsigned *line)
{
  const Memdiag__Pprof__Location *l;
  const Memdiag__Pprof__Function *f;
  *file = -1;
  *line = 0;
  if(!s->n_location_id)
    return;
  FIND_BY_ID(p->location, p->n_location, s->location_id[0], l);
  if(!l || !l->n_line)
    return;
  FIND_BY_ID(p->function, p->n_function, l->line[0]->function_id, f);
  if(!f)
    return;
  *file = f->filename;
  *line = l->line[0]->line > 0 ? (unsigned)l->line[0]->line : 0;
}

/* The set's copy of string i of the profile, made once (NULL: none or
 * empty; *bad gets -EFBIG over the limit, -ENOMEM without memory). */
static const char *keep(mdp_sampled_set *out, meter *m, const Memdiag__Pprof__Profile *p,
                        char **copies, int64_t i, int *bad)
{
  const char *s = str(p, i);
  size_t n;
  if(!s || !s[0])
    return NULL;
  if(copies[i])
    return copies[i];
  n = strlen(s) + 1;
  if(meter_take(m, n + sizeof(char *))) {
    *bad = -EFBIG;
    return NULL;
  }
  if(!(copies[i] = malloc(n))) {
    *bad = -ENOMEM;
    return NULL;
  }
  memcpy(copies[i], s, n);
  out->strs[out->n_strs++] = copies[i];
  out->bytes += n + sizeof(char *);
  return copies[i];
}

/* "key N" in comment c, key a whole word: "gc_count" is also the end of
 * "dump_gc_count", and must not be read from it (nor it from "gc_count").
 * Returns 1 with *v set, or 0. */
static int comment_count(const char *c, const char *key, uint64_t *v)
{
  size_t n = strlen(key);
  for(const char *at = c ? strstr(c, key) : NULL; at; at = strstr(at + 1, key)) {
    if(at > c && (at[-1] == '_' || isalnum((unsigned char)at[-1])))
      continue;
    if(at[n] == ' ' && isdigit((unsigned char)at[n + 1])) {
      *v = strtoull(at + n + 1, NULL, 10);
      return 1;
    }
  }
  return 0;
}

static int take_samples(const Memdiag__Pprof__Profile *p, meter *m, mdp_sampled_set *out)
{
  size_t table = p->n_string_table ? p->n_string_table : 1;
  uint64_t need = (uint64_t)(p->n_sample ? p->n_sample : 1) * sizeof *out->objs;
  char **copies;
  int bad = 0;

  if(meter_take(m, need + table * sizeof(char *)))
    return -EFBIG;
  out->bytes = need;
  out->objs = calloc(p->n_sample ? p->n_sample : 1, sizeof *out->objs);
  out->strs = calloc(table, sizeof *out->strs);
  copies = calloc(table, sizeof *copies);
  if(!out->objs || !out->strs || !copies) {
    free(copies);
    return -ENOMEM;
  }
  for(size_t i = 0; i < p->n_sample && !bad; i++) {
    const Memdiag__Pprof__Sample *s = p->sample[i];
    mdp_analysis_sample *o = &out->objs[out->n];
    int64_t file, cls = -1;
    for(size_t k = 0; k < s->n_label; k++) {
      const char *key = str(p, s->label[k]->key);
      if(!key)
        continue;
      if(!strcmp(key, "class"))
        cls = s->label[k]->str;
      else if(!strcmp(key, "address"))
        o->address = (uint64_t)s->label[k]->num;
      else if(!strcmp(key, "generation"))
        o->generation = (uint32_t)s->label[k]->num;
    }
    o->count = s->n_value > 0 ? s->value[0] : 0;
    o->bytes = s->n_value > 1 ? s->value[1] : 0;
    leaf(p, s, &file, &o->line);
    o->file = keep(out, m, p, copies, file, &bad);
    o->class_name = keep(out, m, p, copies, cls, &bad);
    out->n++;
  }
  free(copies);
  if(bad)
    return bad;
  /* "..., gc_count N, dump_gc_count M, ..." in the comment memdiag's hook
   * writes (dump_gc_count since the hook recorded it) */
  for(size_t i = 0; i < p->n_comment; i++) {
    const char *c = str(p, p->comment[i]);
    out->has_gc_count |= comment_count(c, "gc_count", &out->gc_count);
    out->has_dump_gc_count |= comment_count(c, "dump_gc_count", &out->dump_gc_count);
  }
  return 0;
}

static int too_big(const char *path, const meter *m, char *err, size_t errlen)
{
  md_seterr(err, errlen, "%s: reading it needs more than %llu KiB", path,
            (unsigned long long)(m->limit >> 10));
  return -EFBIG;
}

int mdp_sampled_load(const char *path, const mdp_sampled_opts *o, mdp_sampled_set *out, char *err,
                     size_t errlen)
{
  uint8_t *gz = NULL, *raw = NULL;
  size_t gz_len = 0, raw_len = 0, raw_max = MDP_SAMPLED_RAW_MAX;
  meter m = {.limit = o ? o->memory_limit : 0};
  ProtobufCAllocator pa = {.alloc = meter_alloc, .free = meter_free, .allocator_data = &m};
  Memdiag__Pprof__Profile *p;
  int rc;

  memset(out, 0, sizeof *out);
  rc = read_file(path, o, &gz, &gz_len, err, errlen);
  if(rc)
    return rc;
  if(meter_take(&m, gz_len)) {
    free(gz);
    return too_big(path, &m, err, errlen);
  }
  if(m.limit && m.limit - m.used < raw_max)
    raw_max = (size_t)(m.limit - m.used);
  bytes_t unz = {.max = raw_max};
  rc = gunzip(gz, gz_len, &unz, err, errlen);
  raw = unz.buf;
  raw_len = unz.len;
  free(gz);
  m.used -= gz_len;
  if(rc == -EFBIG && m.limit)
    return too_big(path, &m, err, errlen);
  if(rc)
    return rc;
  m.used += raw_len;
  p = memdiag__pprof__profile__unpack(&pa, raw_len, raw);
  free(raw);
  m.used -= raw_len;
  if(!p) {
    if(m.limit && m.used + raw_len > m.limit)
      return too_big(path, &m, err, errlen);
    md_seterr(err, errlen, "%s: not a pprof profile", path);
    return -EINVAL;
  }
  rc = take_samples(p, &m, out);
  memdiag__pprof__profile__free_unpacked(p, &pa);
  if(rc) {
    mdp_sampled_free(out);
    if(rc == -EFBIG)
      return too_big(path, &m, err, errlen);
    md_seterr(err, errlen, "%s: out of memory", path);
  }
  return rc;
}

void mdp_sampled_free(mdp_sampled_set *s)
{
  if(!s)
    return;
  for(size_t i = 0; i < s->n_strs; i++)
    free(s->strs[i]);
  free(s->strs);
  free(s->objs);
  memset(s, 0, sizeof *s);
}

mdp_analysis_samples mdp_sampled_for_analysis(const mdp_sampled_set *last,
                                              const mdp_sampled_set *middle,
                                              const mdp_sampled_set *first, const char *profile)
{
  mdp_analysis_samples a = {.profile = profile, .objs = last->objs, .n = last->n};
  /* The count at the middle dump itself, not when its profile was written
   * after it: a worker under CPU load collected several times while its
   * forked dump wrote, and a newer object in a slot freed meanwhile passed
   * for the dump's (a decoy site named with 21 of 31 samples, 1 run in 4
   * of heap_profile_sampled_sites under 3 busy loops). An older hook's
   * profile has only its own count, the bound used before. */
  if(middle && (middle->has_dump_gc_count || middle->has_gc_count)) {
    a.has_before_gc = 1;
    a.before_gc = middle->has_dump_gc_count ? middle->dump_gc_count : middle->gc_count;
    a.before_gc_exact = middle->has_dump_gc_count;
  }
  /* The first dump's count bounds "allocated after it" from below: the
   * later gc_count of an older hook's profile only tells fewer objects new.
   * The last dump's bounds "allocated by it" from above, so only its own
   * count will do: a sample allocated while the dump wrote may sit in a
   * slot freed after the fork, and says nothing of the dump's object. */
  if(first && (first->has_dump_gc_count || first->has_gc_count)) {
    a.has_first_gc = 1;
    a.first_gc = first->has_dump_gc_count ? first->dump_gc_count : first->gc_count;
  }
  if(last->has_dump_gc_count) {
    a.has_last_gc = 1;
    a.last_gc = last->dump_gc_count;
  }
  return a;
}

/* ---------------------------------------------------------------- the join */

static uint64_t key_of(uint64_t address) { return mdp_obj_pack(address, 0, 0, 0, 0); }

int mdp_sampled_join_init(mdp_sampled_join *j, mdp_analysis_mem *mem,
                          const mdp_analysis_samples *in)
{
  memset(j, 0, sizeof *j);
  j->mem = mem;
  if(!in || !in->n)
    return 0;
  j->in = in;
  j->group = mdp_analysis_alloc(mem, in->n * sizeof *j->group);
  if(!j->group || mdp_analysis_objset_init(&j->at, mem, in->n, 1))
    return -ENOMEM;
  for(size_t i = 0; i < in->n; i++) {
    uint64_t a = in->objs[i].address;
    if(a && !(a & 7) && a < MDP_OBJ_ADDR_LIMIT && mdp_analysis_objset_put(&j->at, key_of(a), i))
      return -ENOMEM;
  }
  return 0;
}

void mdp_sampled_join_note(mdp_sampled_join *j, uint64_t address, uint32_t raw_group)
{
  uint64_t i;
  if(j->in && address < MDP_OBJ_ADDR_LIMIT && mdp_analysis_objset_get(&j->at, key_of(address), &i))
    j->group[i] = raw_group + 1;
}

const mdp_analysis_sample *mdp_sampled_join_newer(const mdp_sampled_join *j, uint64_t address,
                                                  unsigned d)
{
  const mdp_analysis_samples *in = j->in;
  const mdp_analysis_sample *s;
  uint64_t i, after, by;
  if(!in || address >= MDP_OBJ_ADDR_LIMIT || !mdp_analysis_objset_get(&j->at, key_of(address), &i))
    return NULL;
  /* Every object of a dump was live at its fork's GC count; another object
   * at one of their addresses needs a collection to free the slot, so its
   * generation is greater. The upper bound must be the later dump's own
   * count: a later one lets through an object allocated after that dump. */
  if(d == 1 && in->has_first_gc && in->has_before_gc && in->before_gc_exact) {
    after = in->first_gc;
    by = in->before_gc;
  } else if(d == 2 && in->has_before_gc && in->has_last_gc) {
    after = in->before_gc;
    by = in->last_gc;
  } else {
    return NULL;
  }
  s = &in->objs[i];
  return s->generation > after && s->generation <= by ? s : NULL;
}

void mdp_sampled_join_free(mdp_sampled_join *j)
{
  if(j->in) {
    mdp_analysis_objset_free(&j->at);
    if(j->group)
      mdp_analysis_release(j->mem, j->group, j->in->n * sizeof *j->group);
  }
  memset(j, 0, sizeof *j);
}

static int same(const char *a, const char *b) { return a && b && !strcmp(a, b); }

/* A retained object's sample, by its group then its site. */
typedef struct {
  size_t group;
  const mdp_analysis_sample *s;
} member;

static int cmp_str(const char *a, const char *b)
{
  return !a || !b ? (a != NULL) - (b != NULL) : strcmp(a, b);
}

static int cmp_member(const void *x, const void *y)
{
  const member *a = x, *b = y;
  int c;
  if(a->group != b->group)
    return a->group < b->group ? -1 : 1;
  if((c = cmp_str(a->s->file, b->s->file)) != 0)
    return c;
  return a->s->line < b->s->line ? -1 : a->s->line > b->s->line;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* Members m[0..n) of one group, sorted by site: the site most share. */
static int group_site(mdp_analysis_group *g, const member *m, size_t n)
{
  size_t best = 0, best_n = 0;
  for(size_t i = 0; i < n;) {
    size_t k = i;
    while(k < n && !cmp_member(&m[i], &m[k]))
      k++;
    if(m[i].s->file && k - i > best_n) {
      best = i;
      best_n = k - i;
    }
    i = k;
  }
  if(!best_n || g->file)
    return 0;
  if(!(g->file = strdup(m[best].s->file)))
    return -ENOMEM;
  g->line = m[best].s->line;
  g->site_source = MDP_ANALYSIS_SITE_SAMPLED;
  g->site_samples = best_n;
  g->site_sampled = n;
  return 1;
}

/* The samples found in the retained set, in res->sampling and in m. */
static int accept(mdp_sampled_join *j, mdp_analysis_result *res, const uint32_t *of_raw,
                  size_t n_raw, member *m, size_t *n_m)
{
  mdp_analysis_sampling *sp = &res->sampling;
  for(size_t i = 0; i < j->in->n; i++) {
    const mdp_analysis_sample *s = &j->in->objs[i];
    uint32_t r = j->group[i];
    size_t gi;
    if(!r || r > n_raw)
      continue;
    gi = of_raw[r - 1] ? of_raw[r - 1] - 1 : SIZE_MAX;
    if(j->in->has_before_gc && s->generation > j->in->before_gc) {
      sp->too_new++;
      continue;
    }
    if(gi != SIZE_MAX && res->groups[gi].class_name && s->class_name &&
       !same(res->groups[gi].class_name, s->class_name)) {
      sp->other_class++;
      continue;
    }
    mdp_analysis_sampled *o = &sp->objs[sp->n_objs++];
    o->address = s->address;
    o->line = s->line;
    o->group = gi;
    o->class_name = dup_or_null(s->class_name);
    o->file = dup_or_null(s->file);
    if((s->class_name && !o->class_name) || (s->file && !o->file))
      return -ENOMEM;
    sp->retained++;
    if(gi != SIZE_MAX)
      m[(*n_m)++] = (member){.group = gi, .s = s};
  }
  return 0;
}

int mdp_sampled_join_sites(mdp_sampled_join *j, mdp_analysis_result *res, const uint32_t *of_raw,
                           size_t n_raw)
{
  mdp_analysis_sampling *sp = &res->sampling;
  member *m;
  size_t n_m = 0, n_found = 0;
  int rc;

  if(!j->in)
    return 0;
  sp->used = 1;
  sp->samples = j->in->n;
  if(j->in->profile && !(sp->profile = strdup(j->in->profile)))
    return -ENOMEM;
  for(size_t i = 0; i < j->in->n; i++)
    n_found += j->group[i] != 0;
  sp->objs = calloc(n_found ? n_found : 1, sizeof *sp->objs);
  m = mdp_analysis_alloc(j->mem, (n_found ? n_found : 1) * sizeof *m);
  if(!sp->objs || !m) {
    if(m)
      mdp_analysis_release(j->mem, m, (n_found ? n_found : 1) * sizeof *m);
    return -ENOMEM;
  }
  rc = accept(j, res, of_raw, n_raw, m, &n_m);
  qsort(m, n_m, sizeof *m, cmp_member);
  for(size_t i = 0; i < n_m && !rc;) {
    size_t k = i;
    while(k < n_m && m[k].group == m[i].group)
      k++;
    rc = group_site(&res->groups[m[i].group], m + i, k - i);
    if(rc > 0)
      sp->groups++;
    rc = rc < 0 ? rc : 0;
    i = k;
  }
  mdp_analysis_release(j->mem, m, (n_found ? n_found : 1) * sizeof *m);
  return rc;
}

int mdp_sampled_profile_for(const char *dump_path, char *out, size_t len)
{
  const char *base = strrchr(dump_path, '/');
  unsigned nr;
  char tail[8] = "";
  int dir_len, n;

  base = base ? base + 1 : dump_path;
  dir_len = (int)(base - dump_path);
  if(sscanf(base, "heap-%u.json%7s", &nr, tail) < 1 || (tail[0] && strcmp(tail, ".zst")))
    return -EINVAL;
  n = snprintf(out, len, "%.*sheap_profile-%u.pb.gz", dir_len, dump_path, nr);
  return n < 0 || (size_t)n >= len ? -EINVAL : 0;
}
