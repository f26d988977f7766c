/* The analysis result as JSON and as a one-line summary, and finding the
 * dumps of a capture folder; see analysis.h. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"

/* Length of the well-formed UTF-8 sequence at s (1-4), 0 if there is none. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
  size_t len;
  unsigned cp;
  if(s[0] < 0x80)
    return 1;
  if(s[0] >= 0xc2 && s[0] <= 0xdf)
    len = 2, cp = s[0] & 0x1fu;
  else if(s[0] >= 0xe0 && s[0] <= 0xef)
    len = 3, cp = s[0] & 0x0fu;
  else if(s[0] >= 0xf0 && s[0] <= 0xf4)
    len = 4, cp = s[0] & 0x07u;
  else
    return 0;
  if(len > n)
    return 0;
  for(size_t i = 1; i < len; i++) {
    if((s[i] & 0xc0) != 0x80)
      return 0;
    cp = cp << 6 | (s[i] & 0x3fu);
  }
  if((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) || (len == 4 && cp < 0x10000) ||
     cp > 0x10ffff)
    return 0;
  return len;
}

/* A JSON string; bytes that are not UTF-8 become U+FFFD (the text is
 * for reading; the dump keeps the original). */
static void jstr(FILE *f, const char *s, size_t n)
{
  const unsigned char *p = (const unsigned char *)s;
  if(!s) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  for(size_t i = 0; i < n;) {
    unsigned char ch = p[i];
    size_t len;
    if(ch == '"' || ch == '\\') {
      fputc('\\', f);
      fputc(ch, f);
      i++;
    } else if(ch < 0x20 || ch == 0x7f) {
      fprintf(f, "\\u%04x", ch);
      i++;
    } else if((len = utf8_seq(p + i, n - i)) != 0) {
      fwrite(p + i, 1, len, f);
      i += len;
    } else {
      fputs("\\ufffd", f);
      i++;
    }
  }
  fputc('"', f);
}

static void jcstr(FILE *f, const char *s) { jstr(f, s, s ? strlen(s) : 0); }

const char *mdp_analysis_site_source_name(mdp_analysis_site_source s)
{
  switch(s) {
  case MDP_ANALYSIS_SITE_TRACED: return "traced";
  case MDP_ANALYSIS_SITE_SAMPLED: return "sampled";
  case MDP_ANALYSIS_SITE_NONE: break;
  }
  return "none";
}

static size_t limit(size_t n, size_t top) { return top && n > top ? top : n; }

void mdp_analysis_json_string(FILE *out, const char *s) { jcstr(out, s); }

/* lead (the separator and the key) then s as a JSON string. */
static void jfield(FILE *f, const char *lead, const char *s)
{
  fputs(lead, f);
  jcstr(f, s);
}

/* Ends the previous list and opens the one named key; returns how many of
 * its total entries to write. */
static size_t list_open(FILE *f, const char *key, size_t total, size_t top)
{
  fprintf(f, "],\n  \"%s\": [", key);
  return limit(total, top);
}

static void group_json(FILE *f, const mdp_analysis_group *g)
{
  jfield(f, "{\"type\": ", g->type);
  jfield(f, ", \"class\": ", g->class_name);
  jfield(f, ", \"file\": ", g->file);
  if(g->file)
    fprintf(f, ", \"line\": %u", g->line);
  else
    fputs(", \"line\": null", f);
  fprintf(f, ", \"site_source\": \"%s\"", mdp_analysis_site_source_name(g->site_source));
  fprintf(f, ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}", g->count, g->bytes);
}

int mdp_analysis_write_brief(FILE *f, const mdp_analysis_result *res, const char *summary,
                             size_t top)
{
  fputs("{\"status\": \"done\", \"file\": \"analysis.json\", \"summary\": ", f);
  jcstr(f, summary && *summary ? summary : NULL);
  fprintf(f,
          ", \"mode\": \"%s\", \"doubtful\": %s, \"count\": %" PRIu64 ", \"bytes\": %" PRIu64
          ", \"seconds\": %.3f, \"peak_memory\": %" PRIu64 ", \"top\": [",
          res->n_dumps == 2 ? "new" : "retained", res->doubtful ? "true" : "false", res->count,
          res->bytes, res->seconds, res->peak_memory);
  for(size_t i = 0; i < limit(res->n_groups, top); i++) {
    fputs(i ? ", " : "", f);
    group_json(f, &res->groups[i]);
  }
  fputs("], \"caveats\": [", f);
  for(unsigned i = 0; i < res->n_caveats; i++)
    fprintf(f, "%s\"%s\"", i ? ", " : "", res->caveats[i].code);
  fputs("]}", f);
  return ferror(f) ? -EIO : 0;
}

/* The live counts of a class entry in every dump, and the entry's end. */
static void class_tail(FILE *f, const mdp_analysis_result *res, const mdp_analysis_class *k)
{
  fputs(", \"live\": [", f);
  for(unsigned d = 0; d < res->n_dumps; d++)
    fprintf(f, "%s{\"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}", d ? ", " : "",
            k->live_count[d], k->live_bytes[d]);
  fputs("]}", f);
}

static void class_head(FILE *f, const mdp_analysis_class *k)
{
  jfield(f, "{\"class\": ", k->class_name);
  jfield(f, ", \"type\": ", k->type);
}

int mdp_analysis_write_json(FILE *f, const mdp_analysis_result *res, size_t top)
{
  unsigned last = res->n_dumps ? res->n_dumps - 1 : 0;
  size_t n;

  fprintf(f,
          "{\n  \"format\": \"memdiag-analysis/1\",\n  \"mode\": \"%s\",\n  \"doubtful\": %s,\n"
          "  \"count\": %" PRIu64 ",\n  \"bytes\": %" PRIu64 ",\n  \"moved\": %" PRIu64
          ",\n  \"reused_addresses\": %" PRIu64 ",\n  \"seconds\": %.3f,\n"
          "  \"peak_memory\": %" PRIu64 ",\n  \"dumps\": [",
          res->n_dumps == 2 ? "new" : "retained", res->doubtful ? "true" : "false", res->count,
          res->bytes, res->moved, res->reused, res->seconds, res->peak_memory);
  for(unsigned d = 0; d < res->n_dumps; d++) {
    const mdp_analysis_dump *p = &res->dumps[d];
    fputs(d ? ",\n    {\"path\": " : "\n    {\"path\": ", f);
    jcstr(f, p->path);
    fprintf(f,
            ", \"compressed\": %s, \"file_bytes\": %" PRIu64 ", \"json_bytes\": %" PRIu64
            ", \"lines\": %" PRIu64 ", \"objects\": %" PRIu64 ", \"memsize\": %" PRIu64
            ", \"traced\": %" PRIu64 ", \"max_generation\": %" PRIu32 "}",
            p->compressed ? "true" : "false", p->file_bytes, p->json_bytes, p->lines, p->objects,
            p->memsize, p->traced, p->max_generation);
  }
  fputs("],\n  \"retained\": [", f);
  n = limit(res->n_groups, top);
  for(size_t i = 0; i < n; i++) {
    fputs(i ? ",\n    " : "\n    ", f);
    group_json(f, &res->groups[i]);
  }
  n = list_open(f, "by_class", res->n_classes, top);
  for(size_t i = 0, w = 0; i < res->n_classes && w < n; i++) {
    const mdp_analysis_class *k = &res->classes[i];
    if(!k->count)
      break; /* sorted: the rest retained nothing */
    fputs(w++ ? ",\n    " : "\n    ", f);
    class_head(f, k);
    fprintf(f, ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64, k->count, k->bytes);
    class_tail(f, res, k);
  }
  n = list_open(f, "by_file", res->n_files, top);
  for(size_t i = 0; i < n; i++) {
    const mdp_analysis_file *p = &res->files[i];
    fputs(i ? ",\n    {\"file\": " : "\n    {\"file\": ", f);
    jcstr(f, p->file);
    fprintf(f, ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}", p->count, p->bytes);
  }
  n = list_open(f, "grew", res->n_grew, top);
  for(size_t i = 0; i < n; i++) {
    const mdp_analysis_class *k = &res->grew[i];
    fputs(i ? ",\n    " : "\n    ", f);
    class_head(f, k);
    fprintf(f, ", \"count_delta\": %" PRId64 ", \"bytes_delta\": %" PRId64,
            (int64_t)(k->live_count[last] - k->live_count[0]),
            (int64_t)(k->live_bytes[last] - k->live_bytes[0]));
    class_tail(f, res, k);
  }
  n = list_open(f, "strings", res->n_strings, top);
  for(size_t i = 0; i < n; i++) {
    const mdp_analysis_string *s = &res->strings[i];
    fputs(i ? ",\n    {\"value\": " : "\n    {\"value\": ", f);
    jstr(f, s->value, s->value_len);
    fprintf(f, ", \"length\": %" PRIu64 ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "}",
            s->length, s->count, s->bytes);
  }
  fputs("],\n  \"caveats\": [", f);
  for(unsigned i = 0; i < res->n_caveats; i++) {
    fprintf(f, "%s{\"code\": \"%s\", \"message\": ", i ? ",\n    " : "\n    ",
            res->caveats[i].code);
    jcstr(f, res->caveats[i].message);
    fputc('}', f);
  }
  fputs("]\n}\n", f);
  return ferror(f) ? -EIO : 0;
}

void mdp_analysis_thousands(uint64_t v, char *out, size_t len)
{
  char digits[32];
  int n = snprintf(digits, sizeof(digits), "%" PRIu64, v);
  size_t o = 0;
  for(int i = 0; i < n && o + 2 < len; i++) {
    if(i && (n - i) % 3 == 0)
      out[o++] = ',';
    out[o++] = digits[i];
  }
  out[o] = '\0';
}

static void size_text(uint64_t b, char *out, size_t len)
{
  if(b >= (10ull << 20))
    snprintf(out, len, "%" PRIu64 " MiB", (b + (1u << 19)) >> 20);
  else if(b >= (1ull << 20))
    snprintf(out, len, "%.1f MiB", (double)b / (1 << 20));
  else if(b >= 1024)
    snprintf(out, len, "%" PRIu64 " KiB", (b + 512) >> 10);
  else
    snprintf(out, len, "%" PRIu64 " B", b);
}

size_t mdp_analysis_summary(const mdp_analysis_result *res, char *buf, size_t len)
{
  char count[32], size[32], head[160];
  const mdp_analysis_group *g;
  int n;

  if(!len)
    return 0;
  buf[0] = '\0';
  if(!res->n_groups)
    return 0;
  g = &res->groups[0];
  mdp_analysis_thousands(g->count, count, sizeof(count));
  size_text(g->bytes, size, sizeof(size));
  n = snprintf(head, sizeof(head), "leak suspect%s: %s \xc3\x97 %.60s%s%s (+%s)",
               res->doubtful ? " (doubtful)" : "", count, g->class_name ? g->class_name : g->type,
               g->class_name ? "" : " objects",
               g->class_name && strlen(g->class_name) > 60 ? "..." : "", size);
  if(n < 0)
    return 0;
  if(!g->file) {
    n = snprintf(buf, len, "%s, allocation site unknown", head);
    return n < 0 ? 0 : (size_t)n >= len ? len - 1 : (size_t)n;
  }
  /* " from " FILE ":" LINE, the file cut from the left to fit. */
  char where[16];
  int wl = snprintf(where, sizeof(where), ":%u", g->line);
  size_t flen = strlen(g->file);
  size_t room = len - 1 - (size_t)n - 6 - (size_t)wl;
  if((size_t)n + 6 + (size_t)wl + 4 > len - 1) {
    n = snprintf(buf, len, "%s", head);
    return (size_t)n >= len ? len - 1 : (size_t)n;
  }
  if(flen <= room)
    n = snprintf(buf, len, "%s from %s%s", head, g->file, where);
  else {
    const char *tail = g->file + flen - (room - 3);
    while((*tail & 0xc0) == 0x80) /* not inside a UTF-8 sequence */
      tail++;
    n = snprintf(buf, len, "%s from ...%s%s", head, tail, where);
  }
  return n < 0 ? 0 : (size_t)n >= len ? len - 1 : (size_t)n;
}

static int dump_number(const char *name, unsigned *num)
{
  unsigned v = 0;
  const char *p = name + 5;
  if(strncmp(name, "heap-", 5) != 0 || *p < '1' || *p > '9')
    return -1;
  for(; *p >= '0' && *p <= '9'; p++) {
    if(v > 100000)
      return -1;
    v = v * 10 + (unsigned)(*p - '0');
  }
  if(strcmp(p, ".json") != 0 && strcmp(p, ".json.zst") != 0)
    return -1;
  *num = v;
  return 0;
}

static int cmp_uint(const void *a, const void *b)
{
  unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
  return x < y ? -1 : x > y;
}

int mdp_analysis_find_dumps(const char *dir, char *paths[MDP_ANALYSIS_DUMPS_MAX], unsigned *n,
                            char *err, size_t errlen)
{
  unsigned nums[256], count = 0, pick[MDP_ANALYSIS_DUMPS_MAX];
  struct dirent *e;
  DIR *d = opendir(dir);

  *n = 0;
  if(!d) {
    int rc = -errno;
    snprintf(err, errlen, "%s: cannot open the capture folder: %s", dir, strerror(errno));
    return rc;
  }
  while((e = readdir(d)) != NULL && count < sizeof(nums) / sizeof(nums[0])) {
    unsigned v;
    if(dump_number(e->d_name, &v))
      continue;
    int dup = 0;
    for(unsigned i = 0; i < count; i++)
      dup |= nums[i] == v;
    if(!dup)
      nums[count++] = v;
  }
  closedir(d);
  if(count < 2) {
    snprintf(err, errlen,
             "%s: %s heap dump (heap-N.json or heap-N.json.zst); the analysis needs two or three",
             dir, count ? "only one" : "no");
    return -ENOENT;
  }
  qsort(nums, count, sizeof(nums[0]), cmp_uint);
  pick[0] = nums[0];
  pick[1] = count == 2 ? nums[1] : nums[(count - 1) / 2];
  pick[2] = nums[count - 1];
  *n = count == 2 ? 2 : 3;
  for(unsigned i = 0; i < *n; i++) {
    /* The plain file when both exist: it needs no decompression. */
    char plain[4096];
    snprintf(plain, sizeof(plain), "%s/heap-%u.json", dir, pick[i]);
    size_t need = strlen(plain) + 5;
    paths[i] = malloc(need);
    if(!paths[i]) {
      for(unsigned j = 0; j < i; j++)
        free(paths[j]);
      snprintf(err, errlen, "out of memory");
      return -ENOMEM;
    }
    if(access(plain, F_OK) == 0)
      snprintf(paths[i], need, "%s", plain);
    else
      snprintf(paths[i], need, "%s.zst", plain);
  }
  return 0;
}
