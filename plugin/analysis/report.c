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

/* ", "file": F, "line": L", both null without a site. */
static void site_json(FILE *f, const char *file, unsigned line)
{
  jfield(f, ", \"file\": ", file);
  if(file)
    fprintf(f, ", \"line\": %u", line);
  else
    fputs(", \"line\": null", f);
}

static void group_json(FILE *f, const mdp_analysis_group *g)
{
  jfield(f, "{\"type\": ", g->type);
  jfield(f, ", \"class\": ", g->class_name);
  site_json(f, g->file, g->line);
  fprintf(f, ", \"site_source\": \"%s\"", mdp_analysis_site_source_name(g->site_source));
  if(g->site_source == MDP_ANALYSIS_SITE_SAMPLED)
    fprintf(f, ", \"site_samples\": %" PRIu64 ", \"sampled_members\": %" PRIu64, g->site_samples,
            g->site_sampled);
  fprintf(f, ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"owned\": %" PRIu64, g->count,
          g->bytes, g->owned);
  if(g->mostly_type) {
    jfield(f, ", \"mostly\": {\"class\": ", g->mostly_class);
    jfield(f, ", \"type\": ", g->mostly_type);
    fprintf(f, ", \"bytes\": %" PRIu64 "}}", g->mostly_bytes);
  } else {
    fputs(", \"mostly\": null}", f);
  }
}

static void step_json(FILE *f, const mdp_analysis_step *s)
{
  jfield(f, "{\"type\": ", s->type);
  jfield(f, ", \"name\": ", s->name);
  fprintf(f, ", \"address\": \"0x%" PRIx64 "\"}", s->address);
}

static void holder_json(FILE *f, const mdp_analysis_holder *h)
{
  if(h->obj.type) {
    jfield(f, "{\"type\": ", h->obj.type);
    jfield(f, ", \"class\": ", h->obj.name);
    fprintf(f, ", \"address\": \"0x%" PRIx64 "\"", h->obj.address);
  } else {
    fputs("{\"type\": null, \"class\": null, \"address\": null", f);
  }
  fprintf(f, ", \"old\": %s, \"refs\": %" PRIu64, h->old ? "true" : "false", h->refs);
  jfield(f, ", \"root\": ", h->root);
  fputs(", \"path\": [", f);
  for(size_t i = 0; i < h->path_len; i++) {
    fputs(i ? ", " : "", f);
    step_json(f, &h->path[i]);
  }
  fputs("]}", f);
}

static const char *verdict_name(mdp_analysis_verdict v)
{
  switch(v) {
  case MDP_ANALYSIS_VERDICT_RUBY: return "ruby_heap";
  case MDP_ANALYSIS_VERDICT_OUTSIDE: return "outside_ruby_heap";
  case MDP_ANALYSIS_VERDICT_NO_GROWTH: return "no_growth";
  case MDP_ANALYSIS_VERDICT_UNKNOWN: break;
  }
  return "unknown";
}

static void heap_json(FILE *f, const mdp_analysis_result *res)
{
  fprintf(f,
          "{\"verdict\": \"%s\", \"rss_growth\": %" PRId64 ", \"heap_growth\": %" PRId64
          ", \"share_pct\": %d, \"threshold_pct\": %d}",
          verdict_name(res->verdict), res->rss_growth, res->heap_growth,
          res->rss_growth > 0 ? (int)(res->heap_growth * 100 / res->rss_growth) : 0,
          MDP_ANALYSIS_HEAP_SHARE_PCT);
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
  fputs("], \"holder\": ", f);
  if(res->n_holders)
    holder_json(f, &res->holders[0]);
  else
    fputs("null", f);
  fputs(", \"heap\": ", f);
  heap_json(f, res);
  fputs(", \"caveats\": [", f);
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

/* How the heap profile's samples were joined (sampled.h); null: none. */
static void sampling_json(FILE *f, const mdp_analysis_sampling *sp, size_t top)
{
  if(!sp->used) {
    fputs("null", f);
    return;
  }
  jfield(f, "{\"join\": \"address\", \"profile\": ", sp->profile);
  fprintf(f,
          ", \"samples\": %" PRIu64 ", \"retained\": %" PRIu64 ", \"too_new\": %" PRIu64
          ", \"other_class\": %" PRIu64 ", \"groups\": %" PRIu64 ", \"reused_new\": %" PRIu64
          ", \"reused_later\": %" PRIu64 ", \"objects\": [",
          sp->samples, sp->retained, sp->too_new, sp->other_class, sp->groups, sp->reused_new,
          sp->reused_later);
  for(size_t i = 0; i < limit(sp->n_objs, top); i++) {
    const mdp_analysis_sampled *o = &sp->objs[i];
    fprintf(f, "%s{\"address\": \"0x%" PRIx64 "\"", i ? ",\n      " : "\n      ", o->address);
    jfield(f, ", \"class\": ", o->class_name);
    site_json(f, o->file, o->line);
    if(o->group == SIZE_MAX)
      fputs(", \"group\": null}", f);
    else
      fprintf(f, ", \"group\": %zu}", o->group);
  }
  fputs("]}", f);
}

int mdp_analysis_write_json(FILE *f, const mdp_analysis_result *res, size_t top)
{
  unsigned last = res->n_dumps ? res->n_dumps - 1 : 0;
  size_t n;

  fprintf(f,
          "{\n  \"format\": \"memdiag-analysis/1\",\n  \"mode\": \"%s\",\n  \"doubtful\": %s,\n"
          "  \"count\": %" PRIu64 ",\n  \"bytes\": %" PRIu64 ",\n  \"moved\": %" PRIu64
          ",\n  \"reused_addresses\": %" PRIu64 ",\n  \"seconds\": %.3f,\n"
          "  \"peak_memory\": %" PRIu64 ",\n  \"ownership\": %s,\n"
          "  \"hook\": {\"count\": %" PRIu64 ", \"bytes\": %" PRIu64 "},\n  \"heap\": ",
          res->n_dumps == 2 ? "new" : "retained", res->doubtful ? "true" : "false", res->count,
          res->bytes, res->moved, res->reused, res->seconds, res->peak_memory,
          res->ownership ? "true" : "false", res->hook_count, res->hook_bytes);
  heap_json(f, res);
  fputs(",\n  \"sampling\": ", f);
  sampling_json(f, &res->sampling, top);
  fputs(",\n  \"holders\": [", f);
  for(size_t i = 0; i < limit(res->n_holders, top); i++) {
    fputs(i ? ",\n    " : "\n    ", f);
    holder_json(f, &res->holders[i]);
  }
  fputs("],\n  \"dumps\": [", f);
  for(unsigned d = 0; d < res->n_dumps; d++) {
    const mdp_analysis_dump *p = &res->dumps[d];
    fputs(d ? ",\n    {\"path\": " : "\n    {\"path\": ", f);
    jcstr(f, p->path);
    fprintf(f,
            ", \"compressed\": %s, \"file_bytes\": %" PRIu64 ", \"json_bytes\": %" PRIu64
            ", \"lines\": %" PRIu64 ", \"objects\": %" PRIu64 ", \"memsize\": %" PRIu64
            ", \"traced\": %" PRIu64 ", \"max_generation\": %" PRIu32 ", \"pages\": %" PRIu64
            ", \"heap\": %" PRIu64 ", \"rss\": %" PRIu64 "}",
            p->compressed ? "true" : "false", p->file_bytes, p->json_bytes, p->lines, p->objects,
            p->memsize, p->traced, p->max_generation, p->pages, p->heap, p->rss);
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

void mdp_analysis_size_text(uint64_t b, char *out, size_t len)
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

static void signed_size(int64_t b, char *out, size_t len)
{
  char t[24];
  mdp_analysis_size_text((uint64_t)(b < 0 ? -b : b), t, sizeof(t));
  snprintf(out, len, "%s%s", b < 0 ? "-" : "+", t);
}

/* What a GC root kind holds, in words. */
static const char *root_words(const char *kind)
{
  static const struct {
    const char *kind, *words;
  } k[] = {
      {"vm", "the VM"},
      {"global_tbl", "global variables"},
      {"machine_context", "a thread's stack"},
      {"global_list", "C globals"},
      {"end_proc", "at_exit blocks"},
      {"finalizers", "finalizers"},
      {"obj_to_id", "object ids"},
  };
  for(size_t i = 0; kind && i < sizeof(k) / sizeof(k[0]); i++)
    if(strcmp(kind, k[i].kind) == 0)
      return k[i].words;
  return kind ? kind : "a GC root";
}

static int is_class(const mdp_analysis_step *s)
{
  return s->type && (strcmp(s->type, "CLASS") == 0 || strcmp(s->type, "MODULE") == 0);
}

/* One object of a holder's chain: the holder itself (first) or one that
 * holds the next (a class or module: its constants). */
static void step_words(const mdp_analysis_step *s, int first, char *out, size_t len)
{
  const char *name = s->name ? s->name : s->type;
  if(is_class(s))
    snprintf(out, len, first ? "%.60s (%s)" : "%.60s's constants", name,
             strcmp(s->type, "CLASS") == 0 ? "class" : "module");
  else
    snprintf(out, len, "%.60s", name);
}

size_t mdp_analysis_holder_text(const mdp_analysis_result *res, char *buf, size_t len)
{
  char w[128];
  size_t n;
  if(!len)
    return 0;
  buf[0] = '\0';
  if(!res->n_holders)
    return 0;
  const mdp_analysis_holder *h = &res->holders[0];
  if(!h->obj.type) {
    n = (size_t)snprintf(buf, len, "held by %s", root_words(h->root));
    return n >= len ? len - 1 : n;
  }
  step_words(&h->obj, 1, w, sizeof(w));
  n = (size_t)snprintf(buf, len, "held by %s", w);
  if(n >= len)
    return len - 1;
  /* Upwards from the holder; the VM root goes without saying. */
  for(size_t i = h->path_len >= 2 ? h->path_len - 1 : 0; i-- > 0;) {
    step_words(&h->path[i], 0, w, sizeof(w));
    size_t k = strlen(w) + 5;
    if(n + k >= len)
      return n;
    n += (size_t)snprintf(buf + n, len - n, " \xe2\x86\x90 %s", w);
    if(is_class(&h->path[i]) && i == 0)
      return n;
  }
  if(h->root && strcmp(h->root, "vm") != 0) {
    const char *r = root_words(h->root);
    if(n + strlen(r) + 5 < len)
      n += (size_t)snprintf(buf + n, len - n, " \xe2\x86\x90 %s", r);
  }
  return n;
}

static size_t clip(int n, size_t len) { return n < 0 ? 0 : (size_t)n >= len ? len - 1 : (size_t)n; }

static size_t outside(const mdp_analysis_result *res, char *buf, size_t len)
{
  char rss[32], heap[32];
  signed_size(res->rss_growth, rss, sizeof(rss));
  signed_size(res->heap_growth, heap, sizeof(heap));
  int share = res->rss_growth > 0 ? (int)(res->heap_growth * 100 / res->rss_growth) : 0;
  return clip(snprintf(buf, len,
                       "growth outside the Ruby heap: RSS %s, Ruby heap %s (%d%%) from dump 1 "
                       "to %u; see the memory map and malloc statistics in the capture",
                       rss, heap, share < 0 ? 0 : share, res->n_dumps),
              len);
}

size_t mdp_analysis_summary(const mdp_analysis_result *res, char *buf, size_t len)
{
  char count[32], size[32], head[200], held[160];
  const mdp_analysis_group *g;
  int n;

  if(!len)
    return 0;
  buf[0] = '\0';
  if(res->verdict == MDP_ANALYSIS_VERDICT_OUTSIDE)
    return outside(res, buf, len);
  if(!res->n_groups)
    return 0;
  g = &res->groups[0];
  mdp_analysis_thousands(g->count, count, sizeof(count));
  const char *cls = g->class_name ? g->class_name : g->type;
  const char *more = g->class_name && strlen(g->class_name) > 60 ? "..." : "";
  const char *objects = g->class_name ? "" : " objects";
  const char *doubt = res->doubtful ? " (doubtful)" : "";
  if(g->owned > g->bytes && g->mostly_type) {
    char most[80];
    mdp_analysis_size_text(g->owned, size, sizeof(size));
    snprintf(most, sizeof(most), "%.40s%s", g->mostly_class ? g->mostly_class : g->mostly_type,
             g->mostly_class ? "" : " objects");
    n = snprintf(head, sizeof(head), "leak suspect%s: %s \xc3\x97 %.60s%s%s owning %s, mostly %s",
                 doubt, count, cls, more, objects, size, most);
  } else {
    mdp_analysis_size_text(g->bytes, size, sizeof(size));
    n = snprintf(head, sizeof(head), "leak suspect%s: %s \xc3\x97 %.60s%s%s (+%s)", doubt, count,
                 cls, more, objects, size);
  }
  if(n < 0)
    return 0;
  const char *from = g->owned > g->bytes && g->mostly_type ? ", from " : " from ";
  size_t hl = mdp_analysis_holder_text(res, held, sizeof(held));
  /* The holder after the site, when both fit; else as much as fits. */
  if(!g->file) {
    if(hl && (size_t)n + 28 + 2 + hl < len)
      return clip(snprintf(buf, len, "%s, allocation site unknown; %s", head, held), len);
    if(hl && (size_t)n + 2 + hl < len)
      return clip(snprintf(buf, len, "%s; %s", head, held), len);
    return clip(snprintf(buf, len, "%s, allocation site unknown", head), len);
  }
  /* " from " FILE ":" LINE, the file cut from the left to fit; a sampled
   * site says so, and how many of the group's samples it rests on. */
  char where[80];
  int wl = g->site_source == MDP_ANALYSIS_SITE_SAMPLED
               ? snprintf(where, sizeof(where), ":%u (sampled, %" PRIu64 " of %" PRIu64 " samples)",
                          g->line, g->site_samples, g->site_sampled)
               : snprintf(where, sizeof(where), ":%u", g->line);
  size_t flen = strlen(g->file);
  size_t tail_room = hl ? hl + 2 : 0;
  if(hl && (size_t)n + 6 + (size_t)wl + 4 + tail_room > len - 1 && g->owned > g->bytes &&
     g->mostly_type) {
    /* No room for the holder: what the owner mostly holds goes first, the
     * owner, its size, its site and what holds it stay. */
    mdp_analysis_size_text(g->owned, size, sizeof(size));
    n = snprintf(head, sizeof(head), "leak suspect%s: %s \xc3\x97 %.60s%s%s owning %s", doubt,
                 count, cls, more, objects, size);
    if(n < 0)
      return 0;
  }
  if((size_t)n + 6 + (size_t)wl + 4 + tail_room > len - 1)
    tail_room = 0, hl = 0;
  if((size_t)n + 6 + (size_t)wl + 4 > len - 1)
    return clip(snprintf(buf, len, "%s", head), len);
  size_t room = len - 1 - (size_t)n - 6 - (size_t)wl - tail_room;
  const char *sep = hl ? "; " : "";
  if(flen <= room)
    n = snprintf(buf, len, "%s%s%s%s%s%s", head, from, g->file, where, sep, hl ? held : "");
  else {
    const char *tail = g->file + flen - (room > 3 ? room - 3 : 0);
    while((*tail & 0xc0) == 0x80) /* not inside a UTF-8 sequence */
      tail++;
    n = snprintf(buf, len, "%s%s...%s%s%s%s", head, from, tail, where, sep, hl ? held : "");
  }
  return clip(n, len);
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
