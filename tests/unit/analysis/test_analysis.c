/* The three-snapshot analysis on small hand-made dumps (tests/data/dumps):
 * what is retained, address reuse, compaction, dumps without allocation
 * sites, two dumps, .zst input, long lines, broken dumps and the memory
 * limit. Each expectation follows from the dump lines, written by hand. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <zstd.h>

#include "analysis/analysis.h"
#include "dump_data.h"
#include "mdt.h"

static const char *const tmp = mdt_dir; /* mdt_dir_setup */
static char err[512];

static int run3(const char *set, mdp_analysis_result *res)
{
  char a[32], b[32], c[32];
  snprintf(a, sizeof(a), "%s-1.json", set);
  snprintf(b, sizeof(b), "%s-2.json", set);
  snprintf(c, sizeof(c), "%s-3.json", set);
  const char *paths[3] = {data(a), data(b), data(c)};
  return mdp_analysis_run(paths, 3, NULL, res, err, sizeof(err));
}

static const mdp_analysis_group *group(const mdp_analysis_result *res, const char *type)
{
  for(size_t i = 0; i < res->n_groups; i++)
    if(strcmp(res->groups[i].type, type) == 0)
      return &res->groups[i];
  return NULL;
}

static const mdp_analysis_group *named(const mdp_analysis_result *res, const char *cls)
{
  for(size_t i = 0; i < res->n_groups; i++)
    if(res->groups[i].class_name && strcmp(res->groups[i].class_name, cls) == 0)
      return &res->groups[i];
  return NULL;
}

static int has_caveat(const mdp_analysis_result *res, const char *code)
{
  for(unsigned i = 0; i < res->n_caveats; i++)
    if(strcmp(res->caveats[i].code, code) == 0)
      return 1;
  return 0;
}

static void test_retained_by_site(void **s)
{
  mdp_analysis_result res;
  (void)s;
  assert_int_equal(run3("basic", &res), 0);
  assert_int_equal(res.n_dumps, 3);
  assert_int_equal(res.n_groups, 3);
  /* By owned bytes: the Hash (160 B) owns the 2 strings it alone
   * references (80 B); then the 5 Cart::Line (200 B), then the strings,
   * which own only themselves. */
  assert_true(res.ownership);
  assert_string_equal(res.groups[0].class_name, "Hash");
  assert_string_equal(res.groups[0].file, "app/cache.rb");
  assert_int_equal(res.groups[0].line, 10);
  assert_int_equal(res.groups[0].bytes, 160);
  assert_int_equal(res.groups[0].owned, 240);
  assert_string_equal(res.groups[0].mostly_class, "String");
  assert_int_equal(res.groups[0].mostly_bytes, 80);
  assert_string_equal(res.groups[1].class_name, "Cart::Line");
  assert_string_equal(res.groups[1].type, "OBJECT");
  assert_string_equal(res.groups[1].file, "app/models/cart.rb");
  assert_int_equal(res.groups[1].line, 28);
  assert_int_equal(res.groups[1].site_source, MDP_ANALYSIS_SITE_TRACED);
  assert_int_equal(res.groups[1].count, 5);
  assert_int_equal(res.groups[1].bytes, 200);
  assert_int_equal(res.groups[1].owned, 200);
  assert_null(res.groups[1].mostly_type);
  assert_int_equal(res.groups[2].owned, 80);
  assert_int_equal(res.count, 8);
  assert_int_equal(res.bytes, 440);
  assert_string_equal(res.classes[0].class_name, "Cart::Line");
  assert_int_equal(res.classes[0].live_count[0], 1);
  assert_int_equal(res.classes[0].live_count[2], 5);
  assert_string_equal(res.files[0].file, "app/models/cart.rb");
  assert_int_equal(res.files[0].count, 7);
  assert_int_equal(res.n_strings, 1);
  assert_string_equal(res.strings[0].value, "sku-1");
  assert_int_equal(res.strings[0].count, 2);
  assert_int_equal(res.n_caveats, 0);
  assert_false(res.doubtful);
  mdp_analysis_result_free(&res);
}

/* 0x2010 is a String in dump 1 and a Cart::Line in dump 2 (type), 0x2018 a
 * Cart::Line of generation 3 then of generation 5, and 0x3200 a String of
 * generation 6 then of generation 8: none is taken for the old object. */
static void test_address_reuse(void **s)
{
  mdp_analysis_result res;
  (void)s;
  assert_int_equal(run3("basic", &res), 0);
  assert_int_equal(res.reused, 3);
  const mdp_analysis_group *str = group(&res, "STRING");
  assert_non_null(str);
  assert_int_equal(str->count, 2); /* not the String reusing 0x3200 */
  assert_int_equal(str->line, 29);
  mdp_analysis_result_free(&res);
}

/* 0x2000 held an untraced String in dump 1 (allocated before tracing
 * started) and a String of generation 7 in dump 2, newer than anything dump
 * 1 traced (3): another object in the reused slot, so retained. */
static void test_reuse_of_untraced_slot(void **s)
{
  mdp_analysis_result res;
  (void)s;
  assert_int_equal(run3("reuse", &res), 0);
  assert_int_equal(res.count, 1);
  assert_int_equal(res.reused, 1);
  assert_string_equal(res.groups[0].file, "app/x.rb");
  assert_int_equal(res.groups[0].line, 5);
  mdp_analysis_result_free(&res);
}

/* Without allocation tracing, type, class and a string's content tell
 * reuse apart: 0x2018 stays a Cart::Line and counts as the old one; 0x3200
 * is a String "temp" in dump 2 and "other" in dump 3: another string, not
 * retained. Groups have no site, and a caveat says so. */
static void test_missing_allocation_info(void **s)
{
  mdp_analysis_result res;
  (void)s;
  assert_int_equal(run3("untraced", &res), 0);
  /* untraced-1.json starts with a SHAPE record (Ruby 3.3), not an object */
  assert_int_equal(res.dumps[0].objects, 8);
  assert_true(has_caveat(&res, "no_sites"));
  assert_false(res.doubtful);
  for(size_t i = 0; i < res.n_groups; i++) {
    assert_null(res.groups[i].file);
    assert_int_equal(res.groups[i].site_source, MDP_ANALYSIS_SITE_NONE);
  }
  assert_int_equal(named(&res, "Cart::Line")->count, 4);
  assert_int_equal(group(&res, "STRING")->count, 2);
  assert_int_equal(res.reused, 2);
  assert_int_equal(res.n_files, 1);
  assert_null(res.files[0].file);
  mdp_analysis_result_free(&res);
}

/* A plan's last dump follows allocation_trace_stop, which clears the
 * sites: the retained objects keep the sites dump 2 recorded. */
static void test_sites_from_dump_2(void **s)
{
  mdp_analysis_result res;
  const char *paths[3] = {data("basic-1.json"), data("basic-2.json"), data("untraced-3.json")};
  (void)s;
  assert_int_equal(mdp_analysis_run(paths, 3, NULL, &res, err, sizeof(err)), 0);
  assert_false(has_caveat(&res, "no_sites"));
  const mdp_analysis_group *line = named(&res, "Cart::Line");
  assert_string_equal(line->file, "app/models/cart.rb");
  assert_int_equal(line->line, 28);
  assert_int_equal(line->count, 5);
  assert_int_equal(res.dumps[2].traced, 0);
  mdp_analysis_result_free(&res);
}

/* Dump 2 has Session 0x2000 (generation 3, older than dump 1's newest, 4)
 * at 0x5000, and Cart::Line's class at another address: compaction. */
static void test_compaction_caveat(void **s)
{
  mdp_analysis_result res;
  (void)s;
  assert_int_equal(run3("compact", &res), 0);
  assert_true(has_caveat(&res, "compaction"));
  assert_true(res.doubtful);
  assert_int_equal(res.moved, 1);
  for(size_t i = 0; i < res.n_groups; i++)
    assert_true(!res.groups[i].class_name || strcmp(res.groups[i].class_name, "Session") != 0);
  const mdp_analysis_group *g = group(&res, "OBJECT");
  assert_non_null(g);
  assert_string_equal(g->class_name, "Cart::Line");
  assert_int_equal(g->count, 1);
  /* dumps 2 and 3 have the same newest generation: no GC between them */
  assert_true(has_caveat(&res, "no_gc"));
  mdp_analysis_result_free(&res);
}

static void test_two_dumps(void **s)
{
  mdp_analysis_result res;
  const char *paths[2] = {data("basic-1.json"), data("basic-2.json")};
  (void)s;
  assert_int_equal(mdp_analysis_run(paths, 2, NULL, &res, err, sizeof(err)), 0);
  assert_int_equal(res.n_dumps, 2);
  assert_true(has_caveat(&res, "two_dumps"));
  assert_int_equal(res.count, 9); /* the 8 retained and "temp", freed later */
  assert_int_equal(res.n_groups, 4);
  /* "temp", new in dump 2, is a group of its own */
  size_t tmp = 0;
  while(tmp < res.n_groups &&
        !(res.groups[tmp].file && !strcmp(res.groups[tmp].file, "lib/tmp.rb")))
    tmp++;
  assert_true(tmp < res.n_groups);
  assert_non_null(res.grew);
  assert_string_equal(res.grew[0].class_name, "Cart::Line");
  assert_int_equal(res.grew[0].live_count[1] - res.grew[0].live_count[0], 4);
  mdp_analysis_result_free(&res);
}

static const char *write_zst(const char *name, const char *from, int frames, size_t cut)
{
  static char path[512];
  FILE *in = fopen(from, "rb");
  assert_non_null(in);
  char plain[16384];
  size_t n = fread(plain, 1, sizeof(plain), in);
  fclose(in);
  snprintf(path, sizeof(path), "%s/%s", tmp, name);
  FILE *out = fopen(path, "wb");
  assert_non_null(out);
  /* Several frames, as a compressor streaming a dump may write. */
  size_t at = 0;
  for(int f = 0; f < frames; f++) {
    size_t part = f + 1 == frames ? n - at : n / (size_t)frames;
    char z[32768];
    size_t zn = ZSTD_compress(z, sizeof(z), plain + at, part, 3);
    assert_false(ZSTD_isError(zn));
    if(f + 1 == frames && cut)
      zn -= cut;
    assert_int_equal(fwrite(z, 1, zn, out), zn);
    at += part;
  }
  assert_int_equal(fclose(out), 0);
  return path;
}

static void test_zst_input(void **s)
{
  mdp_analysis_result plain, zst;
  char a[512], b[512];
  (void)s;
  assert_int_equal(run3("basic", &plain), 0);
  snprintf(a, sizeof(a), "%s", write_zst("heap-1.json.zst", data("basic-1.json"), 1, 0));
  snprintf(b, sizeof(b), "%s", write_zst("heap-2.json.zst", data("basic-2.json"), 3, 0));
  const char *paths[3] = {a, b, data("basic-3.json")};
  assert_int_equal(mdp_analysis_run(paths, 3, NULL, &zst, err, sizeof(err)), 0);
  assert_true(zst.dumps[0].compressed);
  assert_true(zst.dumps[1].compressed);
  assert_false(zst.dumps[2].compressed);
  assert_int_equal(zst.dumps[1].json_bytes, plain.dumps[1].json_bytes);
  assert_int_equal(zst.n_groups, plain.n_groups);
  assert_int_equal(zst.count, plain.count);
  assert_int_equal(zst.bytes, plain.bytes);
  assert_string_equal(zst.groups[1].class_name, "Cart::Line");
  mdp_analysis_result_free(&plain);
  mdp_analysis_result_free(&zst);
}

static void test_zst_truncated(void **s)
{
  mdp_analysis_result res;
  char b[512];
  (void)s;
  snprintf(b, sizeof(b), "%s", write_zst("cut.json.zst", data("basic-2.json"), 1, 20));
  const char *paths[3] = {data("basic-1.json"), b, data("basic-3.json")};
  assert_int_equal(mdp_analysis_run(paths, 3, NULL, &res, err, sizeof(err)), -EINVAL);
  assert_non_null(strstr(err, "cut.json.zst:"));
  assert_non_null(strstr(err, "truncated"));
}

static void test_malformed(void **s)
{
  mdp_analysis_result res;
  const char *paths[3] = {data("basic-1.json"), data("malformed.json"), data("basic-3.json")};
  (void)s;
  assert_int_equal(mdp_analysis_run(paths, 3, NULL, &res, err, sizeof(err)), -EINVAL);
  assert_non_null(strstr(err, "malformed.json:2: "));
  assert_int_equal(res.n_groups, 0);
}

static void test_truncated(void **s)
{
  mdp_analysis_result res;
  const char *paths[3] = {data("basic-1.json"), data("basic-2.json"), data("truncated.json")};
  (void)s;
  assert_int_equal(mdp_analysis_run(paths, 3, NULL, &res, err, sizeof(err)), -EINVAL);
  assert_non_null(strstr(err, "truncated.json:2: "));
  assert_non_null(strstr(err, "truncated"));
}

static void test_missing_and_symlink(void **s)
{
  mdp_analysis_result res;
  char link[512];
  (void)s;
  snprintf(link, sizeof(link), "%s/link.json", tmp);
  assert_int_equal(symlink(data("basic-1.json"), link), 0);
  const char *paths[2] = {link, data("basic-2.json")};
  assert_int_not_equal(mdp_analysis_run(paths, 2, NULL, &res, err, sizeof(err)), 0);
  assert_non_null(strstr(err, "link.json: cannot open"));
  const char *gone[2] = {data("basic-1.json"), data("no-such.json")};
  assert_int_equal(mdp_analysis_run(gone, 2, NULL, &res, err, sizeof(err)), -ENOENT);
  assert_non_null(strstr(err, "no-such.json"));
}

/* A line of 2.4 MB (an array of 200,000 references, a string of 1.5 MB):
 * its site, generation and size sit after the long middle. */
static void write_long(const char *path, int with_new)
{
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("{\"address\":\"0x1000\", \"type\":\"CLASS\", \"class\":\"0x1008\", \"name\":\"Big\", "
        "\"memsize\":500}\n",
        f);
  fputs("{\"address\":\"0x1010\", \"type\":\"CLASS\", \"class\":\"0x1008\", \"name\":\"String\", "
        "\"memsize\":500}\n",
        f);
  if(with_new) {
    fputs("{\"address\":\"0x2000\", \"type\":\"OBJECT\", \"class\":\"0x1000\", \"references\":[",
          f);
    for(int i = 0; i < 200000; i++)
      fprintf(f, "%s\"0x%x\"", i ? ", " : "", 0x100000 + 8 * i);
    fputs("], \"file\":\"lib/big.rb\", \"line\":7, \"generation\":9, \"memsize\":1600040, "
          "\"flags\":{\"old\":true}}\n",
          f);
    for(int k = 0; k < 2; k++) {
      fprintf(f,
              "{\"address\":\"0x30%d0\", \"type\":\"STRING\", \"class\":\"0x1010\", "
              "\"bytesize\":1500000, \"value\":\"",
              k);
      for(int i = 0; i < 1500000; i++)
        fputc('a' + i % 26, f);
      fputs("\", \"file\":\"lib/big.rb\", \"line\":8, \"generation\":9, \"memsize\":1500041}\n", f);
    }
    /* What Big's first, middle and last references name: its own, read
     * across the line's middle. */
    for(int i = 0; i < 200000; i += 99999)
      fprintf(f,
              "{\"address\":\"0x%x\", \"type\":\"STRING\", \"class\":\"0x1010\", "
              "\"bytesize\":1, \"value\":\"%c\", \"file\":\"lib/big.rb\", \"line\":9, "
              "\"generation\":9, \"memsize\":1000}\n",
              0x100000 + 8 * i, 'a' + i % 26);
  }
  assert_int_equal(fclose(f), 0);
}

static void test_long_lines(void **s)
{
  mdp_analysis_result res;
  char a[512], b[512];
  (void)s;
  snprintf(a, sizeof(a), "%s/long-1.json", tmp);
  snprintf(b, sizeof(b), "%s/long-2.json", tmp);
  write_long(a, 0);
  write_long(b, 1);
  const char *paths[3] = {a, b, b};
  assert_int_equal(mdp_analysis_run(paths, 3, NULL, &res, err, sizeof(err)), 0);
  assert_int_equal(res.n_groups, 3);
  assert_string_equal(res.groups[0].class_name, "String");
  assert_string_equal(res.groups[0].file, "lib/big.rb");
  assert_int_equal(res.groups[0].line, 8);
  assert_int_equal(res.groups[0].bytes, 3000082);
  assert_string_equal(res.groups[1].class_name, "Big");
  assert_int_equal(res.groups[1].line, 7);
  assert_int_equal(res.groups[1].bytes, 1600040);
  assert_int_equal(res.groups[1].owned, 1600040 + 3000);
  assert_int_equal(res.groups[2].line, 9);
  assert_int_equal(res.groups[2].owned, 3000);
  assert_false(has_caveat(&res, "references_cut"));
  assert_int_equal(res.dumps[1].max_generation, 9);
  assert_int_equal(res.n_strings, 1);
  assert_int_equal(res.strings[0].count, 2);
  assert_int_equal(res.strings[0].length, 1500000);
  assert_memory_equal(res.strings[0].value, "abcdef", 6);
  mdp_analysis_result_free(&res);
}

static void test_memory_limit(void **s)
{
  mdp_analysis_result res;
  const char *paths[3] = {data("basic-1.json"), data("basic-2.json"), data("basic-3.json")};
  mdp_analysis_opts opts = {.memory_limit = 512 << 10};
  (void)s;
  assert_int_equal(mdp_analysis_run(paths, 3, &opts, &res, err, sizeof(err)), -ENOMEM);
  assert_non_null(strstr(err, "memory limit"));
  opts.memory_limit = 64 << 20;
  assert_int_equal(mdp_analysis_run(paths, 3, &opts, &res, err, sizeof(err)), 0);
  assert_true(res.peak_memory > 0 && res.peak_memory <= opts.memory_limit);
  mdp_analysis_result_free(&res);
}

/* The plugin reads only dumps the worker owns, or files it wrote itself
 * with one link (a hard link planted to one of its files has two), and
 * stops when told to. */
static void test_owner_and_cancel(void **s)
{
  mdp_analysis_result res;
  char copy[512], planted[512], cmd[1200];
  atomic_int stop = 1;
  mdp_analysis_opts opts = {.check_owner = 1, .owner = getuid() + 1};
  (void)s;
  snprintf(copy, sizeof(copy), "%s/own-1.json", tmp);
  snprintf(planted, sizeof(planted), "%s/planted.json", tmp);
  snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", data("basic-1.json"), copy);
  assert_int_equal(system(cmd), 0);
  const char *paths[3] = {copy, data("basic-2.json"), data("basic-3.json")};
  assert_int_equal(mdp_analysis_run(paths, 3, &opts, &res, err, sizeof(err)), 0);
  mdp_analysis_result_free(&res);
  assert_int_equal(link(copy, planted), 0);
  assert_int_equal(mdp_analysis_run(paths, 3, &opts, &res, err, sizeof(err)), -EPERM);
  assert_non_null(strstr(err, "own-1.json: not owned by uid"));
  opts.owner = getuid();
  assert_int_equal(mdp_analysis_run(paths, 3, &opts, &res, err, sizeof(err)), 0);
  mdp_analysis_result_free(&res);
  opts.cancel = &stop;
  assert_int_equal(mdp_analysis_run(paths, 3, &opts, &res, err, sizeof(err)), -ECANCELED);
}

static void test_json(void **s)
{
  mdp_analysis_result res;
  char *text = NULL;
  size_t len = 0;
  (void)s;
  assert_int_equal(run3("basic", &res), 0);
  FILE *f = open_memstream(&text, &len);
  assert_int_equal(mdp_analysis_write_json(f, &res, 2), 0);
  fclose(f);
  assert_non_null(strstr(text,
                         "\"retained\": [\n    {\"type\": \"HASH\", \"class\": "
                         "\"Hash\", \"file\": \"app/cache.rb\", \"line\": 10, "
                         "\"site_source\": \"traced\", \"count\": 1, \"bytes\": 160, "
                         "\"owned\": 240, \"mostly\": {\"class\": \"String\", \"type\": "
                         "\"STRING\", \"bytes\": 80}},\n    {\"type\": \"OBJECT\", \"class\": "
                         "\"Cart::Line\", \"file\": \"app/models/cart.rb\", \"line\": 28, "
                         "\"site_source\": \"traced\", \"count\": 5, \"bytes\": 200, "
                         "\"owned\": 200, \"mostly\": null}"));
  assert_null(strstr(text, "\"line\": 29")); /* --top 2 */
  /* The Hash is referenced by the VM root directly. */
  assert_non_null(strstr(text, "\"holders\": [\n    {\"type\": null, \"class\": null, "
                               "\"address\": null, \"old\": false, \"refs\": 1, \"root\": \"vm\""));
  assert_non_null(strstr(text, "\"ownership\": true"));
  assert_non_null(strstr(text, "\"by_class\": ["));
  assert_non_null(strstr(text, "\"strings\": [\n    {\"value\": \"sku-1\""));
  assert_non_null(strstr(text, "\"caveats\": []"));
  assert_non_null(strstr(text, "\"mode\": \"retained\""));
  free(text);
  mdp_analysis_result_free(&res);
}

static void test_summary(void **s)
{
  mdp_analysis_result res;
  char line[256];
  (void)s;
  assert_int_equal(run3("basic", &res), 0);
  size_t n = mdp_analysis_summary(&res, line, sizeof(line));
  assert_string_equal(line, "leak suspect: 1 \xc3\x97 Hash owning 240 B, mostly String, from "
                            "app/cache.rb:10; held by the VM");
  assert_int_equal(n, strlen(line));
  /* A long path is cut from the left, the line number kept; a group that
   * owns nothing but itself says its own size. */
  size_t holders = res.n_holders; /* hidden from the summary, then freed */
  res.n_holders = 0;
  free(res.groups[0].class_name);
  res.groups[0].class_name = strdup("Cart::Line");
  res.groups[0].owned = res.groups[0].bytes;
  free(res.groups[0].file);
  res.groups[0].file = malloc(400);
  memset(res.groups[0].file, 'd', 399);
  memcpy(res.groups[0].file + 399 - 8, "/cart.rb", 9);
  res.groups[0].count = 48213;
  res.groups[0].bytes = 47ull << 20;
  n = mdp_analysis_summary(&res, line, sizeof(line));
  assert_true(n <= 255);
  assert_int_equal(strlen(line), n);
  assert_memory_equal(line, "leak suspect: 48,213 \xc3\x97 Cart::Line (+47 MiB) from ...", 53);
  assert_string_equal(line + n - 11, "/cart.rb:10");
  res.n_holders = holders;
  mdp_analysis_result_free(&res);
}

/* owner-N.json: two Session objects (app/session.rb:12) each own an Array
 * (4000 B) of two strings, and share a third string, which neither owns;
 * a Hash in Store's constants (Store in Object's) holds them. The hook's
 * IMEMO (memdiag/hook/ops/scheduler_dump.rb) and the string it holds are
 * left out; a String whose dump 3 record is stale (same site and
 * generation, another value) and a Hash whose dump 3 site contradicts
 * dump 2's are other objects at reused addresses. */
static void test_ownership_and_holder(void **s)
{
  mdp_analysis_result res;
  char line[256];
  (void)s;
  assert_int_equal(run3("owner", &res), 0);
  assert_true(res.ownership);
  const mdp_analysis_group *g = &res.groups[0];
  assert_string_equal(g->class_name, "Session");
  assert_string_equal(g->file, "app/session.rb");
  assert_int_equal(g->line, 12);
  assert_int_equal(g->count, 2);
  assert_int_equal(g->bytes, 80);
  assert_int_equal(g->owned, 80 + 8000 + 160);
  assert_string_equal(g->mostly_class, "Array");
  assert_int_equal(g->mostly_bytes, 8000);
  /* the shared string is held by two owners: its own top-level group */
  const mdp_analysis_group *shared = NULL;
  for(size_t i = 0; i < res.n_groups; i++)
    if(res.groups[i].file && res.groups[i].line == 15)
      shared = &res.groups[i];
  assert_non_null(shared);
  assert_int_equal(shared->owned, 40);
  /* the hook's objects are counted apart, not in any group */
  assert_int_equal(res.hook_count, 2);
  assert_int_equal(res.hook_bytes, 80);
  for(size_t i = 0; i < res.n_groups; i++)
    assert_true(!res.groups[i].file || !strstr(res.groups[i].file, "memdiag/hook"));
  assert_int_equal(res.count, 12);
  /* 0x3000 (String then Session), 0x3700 twice (a string of dump 1, then
   * a stale record in dump 3), 0x3800 (another site) */
  assert_int_equal(res.reused, 4);
  assert_null(group(&res, "HASH"));
  /* the holder: the Hash alive in every dump, with a reference to each */
  assert_true(res.n_holders >= 1);
  const mdp_analysis_holder *h = &res.holders[0];
  assert_string_equal(h->obj.type, "HASH");
  assert_string_equal(h->obj.name, "Hash");
  assert_int_equal(h->obj.address, 0x2000);
  assert_true(h->old);
  assert_int_equal(h->refs, 2);
  assert_string_equal(h->root, "vm");
  assert_int_equal(h->path_len, 3);
  assert_string_equal(h->path[0].name, "Object");
  assert_string_equal(h->path[0].type, "CLASS");
  assert_string_equal(h->path[1].name, "Store");
  assert_string_equal(h->path[1].type, "MODULE");
  assert_int_equal(h->path[2].address, 0x2000);
  mdp_analysis_summary(&res, line, sizeof(line));
  assert_string_equal(line, "leak suspect: 2 \xc3\x97 Session owning 8 KiB, mostly Array, from "
                            "app/session.rb:12; held by Hash \xe2\x86\x90 Store's constants "
                            "\xe2\x86\x90 Object's constants");
  mdp_analysis_result_free(&res);
}

/* Without the graph (opts.no_graph) groups rank by their own bytes, and a
 * caveat says so; the hook's objects are still left out by their site. */
static void test_no_graph(void **s)
{
  mdp_analysis_result res;
  mdp_analysis_opts opts = {.no_graph = 1};
  const char *paths[3] = {data("owner-1.json"), data("owner-2.json"), data("owner-3.json")};
  (void)s;
  assert_int_equal(mdp_analysis_run(paths, 3, &opts, &res, err, sizeof(err)), 0);
  assert_false(res.ownership);
  assert_true(has_caveat(&res, "no_ownership"));
  assert_string_equal(res.groups[0].class_name, "Array");
  assert_int_equal(res.groups[0].owned, res.groups[0].bytes);
  assert_int_equal(res.n_holders, 0);
  assert_int_equal(res.hook_count, 1);
  mdp_analysis_result_free(&res);
}

/* The top group (a Hash with no site) has none: partial_sites, though
 * most retained objects have one. */
static void test_partial_sites_top_group(void **s)
{
  mdp_analysis_result res;
  (void)s;
  assert_int_equal(run3("partial", &res), 0);
  assert_string_equal(res.groups[0].class_name, "Hash");
  assert_null(res.groups[0].file);
  assert_int_equal(res.groups[0].owned, 520);
  assert_true(has_caveat(&res, "partial_sites"));
  mdp_analysis_result_free(&res);
}

/* RSS grew 50 MiB between the dumps while the Ruby heap grew a few KiB:
 * growth outside the Ruby heap, which the summary says instead of a class. */
static void test_outside_ruby_heap(void **s)
{
  mdp_analysis_result res;
  mdp_analysis_opts opts = {.rss = {100u << 20, 120u << 20, 150u << 20}};
  const char *paths[3] = {data("owner-1.json"), data("owner-2.json"), data("owner-3.json")};
  char line[256];
  (void)s;
  assert_int_equal(mdp_analysis_run(paths, 3, &opts, &res, err, sizeof(err)), 0);
  assert_int_equal(res.verdict, MDP_ANALYSIS_VERDICT_OUTSIDE);
  assert_int_equal(res.rss_growth, 50 << 20);
  assert_int_equal(res.dumps[0].pages, 1);
  assert_int_equal(res.heap_growth, (int64_t)res.dumps[2].heap - (int64_t)res.dumps[0].heap);
  assert_true(res.heap_growth > 0 && res.heap_growth < (1 << 20));
  mdp_analysis_summary(&res, line, sizeof(line));
  assert_memory_equal(line, "growth outside the Ruby heap: RSS +50 MiB, Ruby heap +", 54);
  assert_null(strstr(line, "Session"));
  mdp_analysis_result_free(&res);
  /* 5 MiB more RSS is still not the heap's; 1000 bytes is too little to tell */
  opts.rss[2] = opts.rss[0] + (5u << 20);
  opts.rss[0] = 100u << 20;
  assert_int_equal(mdp_analysis_run(paths, 3, &opts, &res, err, sizeof(err)), 0);
  assert_int_equal(res.verdict, MDP_ANALYSIS_VERDICT_OUTSIDE);
  mdp_analysis_result_free(&res);
  opts.rss[2] = opts.rss[0] + 1000;
  assert_int_equal(mdp_analysis_run(paths, 3, &opts, &res, err, sizeof(err)), 0);
  assert_int_equal(res.verdict, MDP_ANALYSIS_VERDICT_NO_GROWTH);
  mdp_analysis_result_free(&res);
}

static void touch(const char *name)
{
  char path[512];
  snprintf(path, sizeof(path), "%s/cap/%s", tmp, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fclose(f);
}

static void test_find_dumps(void **s)
{
  char dir[512], *paths[3] = {NULL};
  unsigned n;
  (void)s;
  snprintf(dir, sizeof(dir), "%s/cap", tmp);
  assert_int_equal(mkdir(dir, 0700), 0);
  touch("heap-1.json");
  touch("capture.json");
  assert_int_equal(mdp_analysis_find_dumps(dir, paths, &n, err, sizeof(err)), -ENOENT);
  assert_non_null(strstr(err, "only one heap dump"));
  touch("heap-2.json.zst");
  touch("heap-3.json.tmp");
  assert_int_equal(mdp_analysis_find_dumps(dir, paths, &n, err, sizeof(err)), 0);
  assert_int_equal(n, 2);
  assert_non_null(strstr(paths[1], "/heap-2.json.zst"));
  free(paths[0]), free(paths[1]);
  touch("heap-3.json");
  touch("heap-10.json");
  assert_int_equal(mdp_analysis_find_dumps(dir, paths, &n, err, sizeof(err)), 0);
  assert_int_equal(n, 3);
  assert_non_null(strstr(paths[0], "/heap-1.json"));
  assert_non_null(strstr(paths[1], "/heap-2.json.zst"));
  assert_non_null(strstr(paths[2], "/heap-10.json"));
  for(int i = 0; i < 3; i++)
    free(paths[i]);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_retained_by_site),
      cmocka_unit_test(test_address_reuse),
      cmocka_unit_test(test_reuse_of_untraced_slot),
      cmocka_unit_test(test_missing_allocation_info),
      cmocka_unit_test(test_sites_from_dump_2),
      cmocka_unit_test(test_compaction_caveat),
      cmocka_unit_test(test_two_dumps),
      cmocka_unit_test(test_zst_input),
      cmocka_unit_test(test_zst_truncated),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_truncated),
      cmocka_unit_test(test_missing_and_symlink),
      cmocka_unit_test(test_long_lines),
      cmocka_unit_test(test_memory_limit),
      cmocka_unit_test(test_owner_and_cancel),
      cmocka_unit_test(test_json),
      cmocka_unit_test(test_summary),
      cmocka_unit_test(test_find_dumps),
      cmocka_unit_test(test_ownership_and_holder),
      cmocka_unit_test(test_no_graph),
      cmocka_unit_test(test_partial_sites_top_group),
      cmocka_unit_test(test_outside_ruby_heap),
  };
  return cmocka_run_group_tests(tests, mdt_dir_setup, mdt_dir_teardown);
}
