/* Sampled allocation sites joined to the retained set: see sampled.h. */
#include "analysis/sampled.h"

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

static int gunzip(const uint8_t *in, size_t n, uint8_t **out, size_t *out_len, char *err,
                  size_t errlen)
{
  z_stream z;
  size_t cap = n * 4 + 4096;
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
      if(cap >= MDP_SAMPLED_RAW_MAX) {
        md_seterr(err, errlen, "decompresses to more than %zu MiB", MDP_SAMPLED_RAW_MAX >> 20);
        inflateEnd(&z);
        free(*out);
        return -EFBIG;
      }
      cap *= 2;
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
  *out_len = z.total_out;
  inflateEnd(&z);
  return 0;
bad:
  inflateEnd(&z);
  free(*out);
  *out = NULL;
  return -EINVAL;
}

static const char *str(const Memdiag__Pprof__Profile *p, int64_t i)
{
  return i >= 0 && (size_t)i < p->n_string_table ? p->string_table[i] : NULL;
}

static char *dup_or_null(const char *s) { return s && s[0] ? strdup(s) : NULL; }

/* The leaf frame of a sample: its first location's first line. */
static int leaf(const Memdiag__Pprof__Profile *p, const Memdiag__Pprof__Sample *s,
                const char **file, unsigned *line)
{
  *file = NULL;
  *line = 0;
  if(!s->n_location_id)
    return 0;
  for(size_t i = 0; i < p->n_location; i++) {
    const Memdiag__Pprof__Location *l = p->location[i];
    if(l->id != s->location_id[0] || !l->n_line)
      continue;
    for(size_t k = 0; k < p->n_function; k++)
      if(p->function[k]->id == l->line[0]->function_id) {
        *file = str(p, p->function[k]->filename);
        *line = l->line[0]->line > 0 ? (unsigned)l->line[0]->line : 0;
        return 0;
      }
  }
  return 0;
}

static int take_samples(const Memdiag__Pprof__Profile *p, mdp_sampled_set *out)
{
  out->objs = calloc(p->n_sample ? p->n_sample : 1, sizeof *out->objs);
  if(!out->objs)
    return -ENOMEM;
  for(size_t i = 0; i < p->n_sample; i++) {
    const Memdiag__Pprof__Sample *s = p->sample[i];
    mdp_sampled_obj *o = &out->objs[out->n];
    const char *file, *cls = NULL;
    for(size_t k = 0; k < s->n_label; k++) {
      const char *key = str(p, s->label[k]->key);
      if(!key)
        continue;
      if(!strcmp(key, "class"))
        cls = str(p, s->label[k]->str);
      else if(!strcmp(key, "address"))
        o->address = (uint64_t)s->label[k]->num;
      else if(!strcmp(key, "generation"))
        o->generation = (uint32_t)s->label[k]->num;
    }
    o->count = s->n_value > 0 ? s->value[0] : 0;
    o->bytes = s->n_value > 1 ? s->value[1] : 0;
    leaf(p, s, &file, &o->line);
    o->file = dup_or_null(file);
    o->class_name = dup_or_null(cls);
    if((file && file[0] && !o->file) || (cls && cls[0] && !o->class_name))
      return -ENOMEM;
    out->n++;
  }
  /* "... gc_count N, ..." in the comment memdiag's hook writes */
  for(size_t i = 0; i < p->n_comment; i++) {
    const char *c = str(p, p->comment[i]), *at = c ? strstr(c, "gc_count ") : NULL;
    unsigned long long v;
    if(at && sscanf(at, "gc_count %llu", &v) == 1) {
      out->gc_count = v;
      out->has_gc_count = 1;
    }
  }
  return 0;
}

int mdp_sampled_load(const char *path, const mdp_sampled_opts *o, mdp_sampled_set *out, char *err,
                     size_t errlen)
{
  uint8_t *gz = NULL, *raw = NULL;
  size_t gz_len = 0, raw_len = 0;
  Memdiag__Pprof__Profile *p;
  int rc;

  memset(out, 0, sizeof *out);
  rc = read_file(path, o, &gz, &gz_len, err, errlen);
  if(rc)
    return rc;
  rc = gunzip(gz, gz_len, &raw, &raw_len, err, errlen);
  free(gz);
  if(rc)
    return rc;
  p = memdiag__pprof__profile__unpack(NULL, raw_len, raw);
  free(raw);
  if(!p) {
    md_seterr(err, errlen, "%s: not a pprof profile", path);
    return -EINVAL;
  }
  rc = take_samples(p, out);
  memdiag__pprof__profile__free_unpacked(p, NULL);
  if(rc)
    mdp_sampled_free(out);
  return rc;
}

void mdp_sampled_free(mdp_sampled_set *s)
{
  if(!s)
    return;
  for(size_t i = 0; i < s->n; i++) {
    free(s->objs[i].class_name);
    free(s->objs[i].file);
  }
  free(s->objs);
  memset(s, 0, sizeof *s);
}

static int same(const char *a, const char *b) { return a && b && !strcmp(a, b); }

/* The site most of the group's sampled members share (by samples, then
 * estimated bytes). */
static const mdp_sampled_obj *best_site(const mdp_analysis_group *g, const mdp_sampled_obj **m,
                                        size_t n, uint64_t *samples)
{
  const mdp_sampled_obj *best = NULL;
  uint64_t best_n = 0;
  int64_t best_bytes = 0;
  for(size_t i = 0; i < n; i++) {
    uint64_t k = 0;
    int64_t bytes = 0;
    if(!same(m[i]->class_name, g->class_name) || !m[i]->file)
      continue;
    for(size_t j = 0; j < n; j++)
      if(same(m[j]->class_name, g->class_name) && same(m[j]->file, m[i]->file) &&
         m[j]->line == m[i]->line) {
        k++;
        bytes += m[j]->bytes;
      }
    if(k > best_n || (k == best_n && bytes > best_bytes)) {
      best = m[i];
      best_n = k;
      best_bytes = bytes;
    }
  }
  *samples = best_n;
  return best;
}

int mdp_sampled_fill(mdp_analysis_result *res, const mdp_sampled_set *first,
                     const mdp_sampled_set *last)
{
  const mdp_sampled_obj **members;
  size_t n = 0;
  int filled = 0;

  if(!last || !last->n)
    return 0;
  members = calloc(last->n, sizeof *members);
  if(!members)
    return -ENOMEM;
  /* allocated after the first profile, alive at the last: retained */
  for(size_t i = 0; i < last->n; i++)
    if(!first || !first->has_gc_count || last->objs[i].generation > first->gc_count)
      members[n++] = &last->objs[i];
  for(size_t gi = 0; gi < res->n_groups; gi++) {
    mdp_analysis_group *g = &res->groups[gi];
    const mdp_sampled_obj *site;
    uint64_t k;
    if(g->file || !g->class_name)
      continue;
    site = best_site(g, members, n, &k);
    if(!site)
      continue;
    g->file = strdup(site->file);
    if(!g->file) {
      free(members);
      return -ENOMEM;
    }
    g->line = site->line;
    g->site_source = MDP_ANALYSIS_SITE_SAMPLED;
    g->site_samples = k;
    filled++;
  }
  free(members);
  return filled;
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
