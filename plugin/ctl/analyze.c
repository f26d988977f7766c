/* `memdiagctl analyze`: the three-snapshot retained set of a capture's heap
 * dumps, offline, with the very code the plugin runs after a capture. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/analysis.h"
#include "md/text.h"
#include "ctl.h"

static const char usage[] =
    "usage: memdiagctl analyze [--json] [--top N] [--max-memory MIB] DIR\n"
    "       memdiagctl analyze [--json] [--top N] [--max-memory MIB] DUMP DUMP [DUMP]\n"
    "Reads a capture folder (heap-N.json or heap-N.json.zst) or heap dumps given\n"
    "in the order they were taken, and prints the objects retained between them:\n"
    "in dump 2, not in dump 1 and still in dump 3 (with two dumps: new in dump 2),\n"
    "grouped by type, class and allocation site, largest first.\n"
    "  --json            the result as JSON (schema in docs/analysis.md)\n"
    "  --top N           entries of each list (default 10; 0: all)\n"
    "  --max-memory MIB  fail rather than use more memory than this\n";

/* Worker-controlled text (class names, files, string values) printed with
 * control characters as '?', so a dump cannot send terminal escapes. width
 * counts characters (UTF-8 continuation bytes take no column). */
static void put_text(const char *s, size_t n, int width)
{
  char buf[256];
  int w = 0;

  while(n) {
    size_t k = n < sizeof(buf) - 1 ? n : sizeof(buf) - 1;
    /* One byte out for each byte in: k bytes, however many were cleaned. */
    md_printable_n(buf, sizeof(buf), s, k, MD_TEXT_PLAIN);
    fwrite(buf, 1, k, stdout);
    for(size_t i = 0; i < k; i++)
      w += ((unsigned char)buf[i] & 0xc0) != 0x80;
    s += k;
    n -= k;
  }
  for(; w < width; w++)
    putchar(' ');
}

static void put_str(const char *s, int width) { put_text(s, strlen(s), width); }

static void size_text(uint64_t b, char *out, size_t len)
{
  if(b >= (1ull << 30))
    snprintf(out, len, "%.1f GiB", (double)b / (1 << 30));
  else if(b >= (1ull << 20))
    snprintf(out, len, "%.1f MiB", (double)b / (1 << 20));
  else if(b >= 1024)
    snprintf(out, len, "%.1f KiB", (double)b / 1024);
  else
    snprintf(out, len, "%" PRIu64 " B", b);
}

/* A class entry's name, "(TYPE)" for objects without one, and the line end. */
static void put_class(const mdp_analysis_class *k)
{
  if(k->class_name)
    put_str(k->class_name, 0);
  else
    printf("(%s)", k->type);
  putchar('\n');
}

static size_t upto(size_t n, size_t top) { return top && n > top ? top : n; }

static void count_bytes(uint64_t count, uint64_t bytes)
{
  char c[32], b[32];
  mdp_analysis_thousands(count, c, sizeof(c));
  size_text(bytes, b, sizeof(b));
  printf("  %12s %11s  ", c, b);
}

static void put_step(const mdp_analysis_step *s)
{
  if(s->name)
    put_str(s->name, 0);
  else
    printf("(%s)", s->type);
  if(strcmp(s->type, "CLASS") == 0 || strcmp(s->type, "MODULE") == 0)
    printf(" (%s)", s->type[0] == 'C' ? "class" : "module");
  printf(" 0x%" PRIx64, s->address);
}

/* The suspect in words, what holds it and the path from a GC root. */
static void print_holders(const mdp_analysis_result *res)
{
  char line[512];
  if(mdp_analysis_summary(res, line, sizeof(line))) {
    printf("\n");
    put_str(line, 0);
    putchar('\n');
  }
  if(!res->n_holders)
    return;
  printf("\nheld from outside the retained set by:\n");
  for(size_t i = 0; i < res->n_holders; i++) {
    const mdp_analysis_holder *h = &res->holders[i];
    char c[32];
    mdp_analysis_thousands(h->refs, c, sizeof(c));
    printf("  %12s refs  ", c);
    if(!h->obj.type) {
      printf("GC root \"");
      put_str(h->root ? h->root : "?", 0);
      puts("\"");
      continue;
    }
    put_step(&h->obj);
    printf("%s\n", h->old ? " (alive in every dump)" : "");
    if(!h->path_len)
      continue;
    printf("%21s path: root \"", "");
    put_str(h->root ? h->root : "?", 0);
    putchar('"');
    for(size_t j = 0; j < h->path_len; j++) {
      printf(" -> ");
      put_step(&h->path[j]);
    }
    putchar('\n');
  }
}

static void print_verdict(const mdp_analysis_result *res)
{
  char a[32], b[32];
  if(res->hook_count) {
    mdp_analysis_thousands(res->hook_count, a, sizeof(a));
    size_text(res->hook_bytes, b, sizeof(b));
    printf("left out: %s objects (%s) of memdiag's own (the hook, allocation tracing)\n", a, b);
  }
  if(res->verdict == MDP_ANALYSIS_VERDICT_UNKNOWN)
    return;
  size_text((uint64_t)(res->rss_growth < 0 ? -res->rss_growth : res->rss_growth), a, sizeof(a));
  size_text((uint64_t)(res->heap_growth < 0 ? -res->heap_growth : res->heap_growth), b, sizeof(b));
  printf("RSS %s%s, Ruby heap %s%s from dump 1 to dump %u: %s\n\n", res->rss_growth < 0 ? "-" : "+",
         a, res->heap_growth < 0 ? "-" : "+", b, res->n_dumps,
         res->verdict == MDP_ANALYSIS_VERDICT_OUTSIDE ? "growth outside the Ruby heap"
         : res->verdict == MDP_ANALYSIS_VERDICT_RUBY  ? "the Ruby heap explains it"
                                                      : "too little growth to tell");
}

static void print_human(const mdp_analysis_result *res, size_t top)
{
  char a[32], b[32];

  printf("%s: %u dumps\n",
         res->n_dumps == 3 ? "retained objects (in dump 2, not in dump 1, still in dump 3)"
                           : "new objects (in dump 2, not in dump 1)",
         res->n_dumps);
  for(unsigned d = 0; d < res->n_dumps; d++) {
    const mdp_analysis_dump *p = &res->dumps[d];
    mdp_analysis_thousands(p->objects, a, sizeof(a));
    size_text(p->json_bytes, b, sizeof(b));
    printf("  dump %u: ", d + 1);
    put_str(p->path, 0);
    printf("  %s of JSON, %s objects%s\n", b, a, p->compressed ? " (zstd)" : "");
  }
  mdp_analysis_thousands(res->count, a, sizeof(a));
  size_text(res->bytes, b, sizeof(b));
  printf("total: %s objects, %s%s; analysed in %.2f s\n", a, b,
         res->doubtful ? " (doubtful: see the caveats)" : "", res->seconds);

  print_verdict(res);
  printf("  %12s %11s  %11s  %-8s %-32s %s\n", "COUNT", "BYTES", "OWNED", "TYPE", "CLASS",
         "ALLOCATED AT");
  for(size_t i = 0; i < upto(res->n_groups, top); i++) {
    const mdp_analysis_group *g = &res->groups[i];
    count_bytes(g->count, g->bytes);
    size_text(g->owned, b, sizeof(b));
    printf("%11s  %-8s ", b, g->type);
    put_str(g->class_name ? g->class_name : "-", 32);
    putchar(' ');
    if(g->file) {
      put_str(g->file, 0);
      printf(":%u\n", g->line);
    } else
      puts("(unknown)");
  }
  print_holders(res);
  if(res->n_classes && res->classes[0].count) {
    printf("\nby class:\n");
    for(size_t i = 0; i < upto(res->n_classes, top) && res->classes[i].count; i++) {
      const mdp_analysis_class *k = &res->classes[i];
      count_bytes(k->count, k->bytes);
      put_class(k);
    }
  }
  if(res->n_files) {
    printf("\nby file:\n");
    for(size_t i = 0; i < upto(res->n_files, top); i++) {
      count_bytes(res->files[i].count, res->files[i].bytes);
      put_str(res->files[i].file ? res->files[i].file : "(unknown)", 0);
      putchar('\n');
    }
  }
  if(res->n_grew) {
    unsigned last = res->n_dumps - 1;
    printf("\ngrew from dump 1 to dump %u (live objects):\n", last + 1);
    for(size_t i = 0; i < upto(res->n_grew, top); i++) {
      const mdp_analysis_class *k = &res->grew[i];
      char ca[40], cb[40];
      uint64_t lc = k->live_count[last], fc = k->live_count[0];
      mdp_analysis_thousands(lc >= fc ? lc - fc : fc - lc, a, sizeof(a));
      size_text(k->live_bytes[last] - k->live_bytes[0], b, sizeof(b));
      snprintf(ca, sizeof(ca), "%s%s", lc >= fc ? "+" : "-", a);
      snprintf(cb, sizeof(cb), "+%s", b);
      printf("  %12s %11s  ", ca, cb);
      put_class(k);
    }
  }
  if(res->n_strings) {
    printf("\nrepeated retained strings:\n");
    for(size_t i = 0; i < upto(res->n_strings, top); i++) {
      const mdp_analysis_string *s = &res->strings[i];
      count_bytes(s->count, s->bytes);
      putchar('"');
      put_text(s->value, s->value_len > 80 ? 80 : s->value_len, 0);
      printf("\"%s\n", s->value_len > 80 || s->length > s->value_len ? "..." : "");
    }
  }
  if(res->n_caveats) {
    printf("\ncaveats:\n");
    for(unsigned i = 0; i < res->n_caveats; i++) {
      printf("  - ");
      put_str(res->caveats[i].message, 0);
      putchar('\n');
    }
  }
}

/* The worker's RSS when each dump ended, as the capture's manifest
 * (capture.json in dir) recorded it: a step's "file" then its "memory". */
static void manifest_rss(const char *dir, const char *const *paths, unsigned n, uint64_t *rss)
{
  char path[4096], *text;
  snprintf(path, sizeof(path), "%s/capture.json", dir);
  FILE *f = fopen(path, "r");
  if(!f)
    return;
  text = malloc(1 << 20);
  size_t len = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
  fclose(f);
  if(!text)
    return;
  text[len] = '\0';
  for(unsigned i = 0; i < n; i++) {
    const char *base = strrchr(paths[i], '/');
    base = base ? base + 1 : paths[i];
    size_t bl = strlen(base);
    if(bl > 4 && !strcmp(base + bl - 4, ".zst"))
      bl -= 4;
    char key[300];
    snprintf(key, sizeof(key), "\"file\": \"%.*s", (int)bl, base);
    const char *at = strstr(text, key);
    if(!at)
      continue;
    const char *next = strstr(at, "{\"step\"");
    static const char mkey[] = "\"memory\": {\"rss\": ";
    const char *mem = strstr(at, mkey);
    if(mem && (!next || mem < next))
      rss[i] = strtoull(mem + sizeof(mkey) - 1, NULL, 10);
  }
  free(text);
}

static int parse_count(const char *s, uint64_t max, uint64_t *out)
{
  char *end;
  if(*s < '0' || *s > '9')
    return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if(errno || *end || v > max)
    return -1;
  *out = v;
  return 0;
}

int mdctl_analyze(int argc, char **argv)
{
  const char *given[MDP_ANALYSIS_DUMPS_MAX + 1];
  char *found[MDP_ANALYSIS_DUMPS_MAX] = {NULL};
  const char *paths[MDP_ANALYSIS_DUMPS_MAX];
  mdp_analysis_opts opts = {0};
  mdp_analysis_result res;
  unsigned n = 0, nfound = 0;
  uint64_t top = 10, mib;
  char err[512];
  int json = 0, rc;
  struct stat st;

  for(int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if(strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
      fputs(usage, stdout);
      return 0;
    }
    if(strcmp(arg, "--json") == 0) {
      json = 1;
    } else if(strcmp(arg, "--top") == 0 || strcmp(arg, "--max-memory") == 0) {
      uint64_t *dst = arg[2] == 't' ? &top : &mib;
      if(i + 1 >= argc || parse_count(argv[i + 1], 1u << 30, dst)) {
        fprintf(stderr, "memdiagctl analyze: %s takes a whole number\n%s", arg, usage);
        return 2;
      }
      if(dst == &mib)
        opts.memory_limit = mib << 20;
      i++;
    } else if(arg[0] == '-' && arg[1]) {
      fprintf(stderr, "memdiagctl analyze: unknown option %s\n%s", arg, usage);
      return 2;
    } else if(n == MDP_ANALYSIS_DUMPS_MAX) {
      fprintf(stderr, "memdiagctl analyze: at most three dumps\n%s", usage);
      return 2;
    } else {
      given[n++] = arg;
    }
  }
  if(n == 0) {
    fprintf(stderr, "memdiagctl analyze: missing a capture folder or dumps\n%s", usage);
    return 2;
  }
  if(n == 1) {
    if(stat(given[0], &st) != 0 || !S_ISDIR(st.st_mode)) {
      fprintf(stderr,
              "memdiagctl analyze: %s is not a capture folder; give a folder or two or three "
              "dumps\n",
              given[0]);
      return 2;
    }
    if(mdp_analysis_find_dumps(given[0], found, &nfound, err, sizeof(err))) {
      fprintf(stderr, "memdiagctl analyze: %s\n", err);
      return 1;
    }
    n = nfound;
    for(unsigned i = 0; i < n; i++)
      paths[i] = found[i];
    manifest_rss(given[0], paths, n, opts.rss);
  } else {
    for(unsigned i = 0; i < n; i++)
      paths[i] = given[i];
  }
  rc = mdp_analysis_run(paths, n, &opts, &res, err, sizeof(err));
  for(unsigned i = 0; i < nfound; i++)
    free(found[i]);
  if(rc) {
    fprintf(stderr, "memdiagctl analyze: %s\n", err);
    return 1;
  }
  if(json)
    rc = mdp_analysis_write_json(stdout, &res, (size_t)top);
  else
    print_human(&res, (size_t)top);
  mdp_analysis_result_free(&res);
  if(rc || fflush(stdout)) {
    fprintf(stderr, "memdiagctl analyze: cannot write the result: %s\n", strerror(errno));
    return 1;
  }
  return 0;
}
