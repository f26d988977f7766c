/* Sampled allocation sites joined to the retained set by address
 * (analysis/sampled.h), on the hand-made untraced dumps of tests/data/dumps
 * (untraced-N.json: no allocation sites; retained are the Cart::Line objects
 * at 0x2010, 0x3000, 0x3008 and 0x3010, the Strings at 0x3100 and 0x3108 and
 * the Hash at 0x3300), and a heap profile written here as the hook writes
 * one (a gzip'd pprof profile.proto) read back. What a user sees: the
 * groups' sites and their share, the summary's words, analysis.json. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "analysis/analysis.h"
#include "analysis/sampled.h"
#include "mdt.h"
#include "profile.pb-c.h"

static char err[512];

static const char *data(const char *name)
{
  static char paths[3][512];
  static unsigned next;
  char *p = paths[next++ % 3];
  snprintf(p, 512, "%s/%s", MEMDIAG_DUMPS_DIR, name);
  return p;
}

static int run(const mdp_analysis_samples *in, mdp_analysis_result *res)
{
  const char *paths[3] = {data("untraced-1.json"), data("untraced-2.json"),
                          data("untraced-3.json")};
  mdp_analysis_opts o = {.samples = in};
  return mdp_analysis_run(paths, 3, &o, res, err, sizeof(err));
}

static const mdp_analysis_group *named(const mdp_analysis_result *res, const char *cls)
{
  for(size_t i = 0; i < res->n_groups; i++)
    if(res->groups[i].class_name && strcmp(res->groups[i].class_name, cls) == 0)
      return &res->groups[i];
  return NULL;
}

/* The worker's last heap profile: where each sampled object was then. */
static const mdp_analysis_sample samples[] = {
    /* three of the four retained Cart::Line; two allocated on one line */
    {.address = 0x3000,
     .generation = 5,
     .class_name = "Cart::Line",
     .file = "app/cart.rb",
     .line = 28},
    {.address = 0x3008,
     .generation = 6,
     .class_name = "Cart::Line",
     .file = "app/cart.rb",
     .line = 28},
    {.address = 0x3010,
     .generation = 6,
     .class_name = "Cart::Line",
     .file = "app/other.rb",
     .line = 3},
    /* at a retained Cart::Line's address, but allocated after the middle
     * dump (GC 9 > 7): the slot was reused, the site is not the group's */
    {.address = 0x2010,
     .generation = 9,
     .class_name = "Cart::Line",
     .file = "app/late.rb",
     .line = 1},
    /* the Hash */
    {.address = 0x3300, .generation = 4, .class_name = "Hash", .file = "app/cache.rb", .line = 9},
    /* at a retained String's address, of another class */
    {.address = 0x3100, .generation = 4, .class_name = "Symbol", .file = "app/sym.rb", .line = 2},
    /* alive in every dump (old), and in none */
    {.address = 0x2018,
     .generation = 1,
     .class_name = "Cart::Line",
     .file = "app/old.rb",
     .line = 7},
    {.address = 0x9000, .generation = 8, .class_name = "Session", .file = "app/new.rb", .line = 4},
};
#define N_SAMPLES (sizeof(samples) / sizeof(samples[0]))

/* Each retained object gets its own sample's site; a group the site most
 * of its sampled members share, with the share. */
static void test_join_by_address(void **s)
{
  mdp_analysis_samples in = {.profile = "heap_profile-3.pb.gz",
                             .objs = samples,
                             .n = N_SAMPLES,
                             .has_before_gc = 1,
                             .before_gc = 7};
  mdp_analysis_result res;
  (void)s;
  assert_int_equal(run(&in, &res), 0);
  const mdp_analysis_group *line = named(&res, "Cart::Line"), *hash = named(&res, "Hash");
  const mdp_analysis_group *str = named(&res, "String");
  assert_non_null(line);
  assert_int_equal(line->count, 4);
  assert_int_equal(line->site_source, MDP_ANALYSIS_SITE_SAMPLED);
  assert_string_equal(line->file, "app/cart.rb");
  assert_int_equal(line->line, 28);
  assert_int_equal(line->site_samples, 2);
  assert_int_equal(line->site_sampled, 3);
  assert_non_null(hash);
  assert_string_equal(hash->file, "app/cache.rb");
  assert_int_equal(hash->site_samples, 1);
  assert_int_equal(hash->site_sampled, 1);
  assert_non_null(str);
  assert_null(str->file);
  assert_int_equal(str->site_source, MDP_ANALYSIS_SITE_NONE);

  assert_true(res.sampling.used);
  assert_string_equal(res.sampling.profile, "heap_profile-3.pb.gz");
  assert_int_equal(res.sampling.samples, N_SAMPLES);
  assert_int_equal(res.sampling.retained, 4);
  assert_int_equal(res.sampling.too_new, 1);
  assert_int_equal(res.sampling.other_class, 1);
  assert_int_equal(res.sampling.groups, 2);
  assert_int_equal(res.sampling.n_objs, 4);
  for(size_t i = 0; i < res.sampling.n_objs; i++) {
    const mdp_analysis_sampled *o = &res.sampling.objs[i];
    const mdp_analysis_group *g = &res.groups[o->group];
    assert_string_equal(g->class_name, o->class_name);
    if(o->address == 0x3010)
      assert_string_equal(o->file, "app/other.rb"); /* its own, not its group's */
  }

  /* the notification's words: the site says it was sampled, and on what */
  char line_text[256];
  assert_true(mdp_analysis_summary(&res, line_text, sizeof(line_text)) > 0);
  const mdp_analysis_group *top = &res.groups[0];
  char want[128];
  snprintf(want, sizeof(want), "%s:%u (sampled, %llu of %llu samples)", top->file, top->line,
           (unsigned long long)top->site_samples, (unsigned long long)top->site_sampled);
  assert_non_null(strstr(line_text, want));

  /* analysis.json says how each site was found */
  char *json = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&json, &len);
  assert_int_equal(mdp_analysis_write_json(f, &res, 0), 0);
  fclose(f);
  assert_non_null(strstr(json, "\"sampling\": {\"join\": \"address\", \"profile\": "
                               "\"heap_profile-3.pb.gz\", \"samples\": 8, \"retained\": 4, "
                               "\"too_new\": 1, \"other_class\": 1, \"groups\": 2"));
  assert_non_null(strstr(json, "\"file\": \"app/cart.rb\", \"line\": 28, \"site_source\": "
                               "\"sampled\", \"site_samples\": 2, \"sampled_members\": 3"));
  assert_non_null(strstr(json, "{\"address\": \"0x3010\", \"class\": \"Cart::Line\", \"file\": "
                               "\"app/other.rb\", \"line\": 3, \"group\": "));
  free(json);
  mdp_analysis_result_free(&res);
}

/* Without the middle profile's GC count a reused slot cannot be told: the
 * late sample counts, and the share says the site is less sure. */
static void test_join_without_middle_profile(void **s)
{
  mdp_analysis_samples in = {.objs = samples, .n = N_SAMPLES};
  mdp_analysis_result res;
  (void)s;
  assert_int_equal(run(&in, &res), 0);
  const mdp_analysis_group *line = named(&res, "Cart::Line");
  assert_string_equal(line->file, "app/cart.rb");
  assert_int_equal(line->site_samples, 2);
  assert_int_equal(line->site_sampled, 4);
  assert_int_equal(res.sampling.too_new, 0);
  assert_int_equal(res.sampling.retained, 5);
  mdp_analysis_result_free(&res);
}

/* No samples: no site, no sampling block, the summary says so. */
static void test_no_samples(void **s)
{
  mdp_analysis_result res;
  char text[256], *json = NULL;
  size_t len = 0;
  (void)s;
  assert_int_equal(run(NULL, &res), 0);
  assert_false(res.sampling.used);
  assert_null(named(&res, "Cart::Line")->file);
  assert_true(mdp_analysis_summary(&res, text, sizeof(text)) > 0);
  assert_null(strstr(text, "sampled"));
  assert_non_null(strstr(text, "allocation site unknown"));
  FILE *f = open_memstream(&json, &len);
  assert_int_equal(mdp_analysis_write_json(f, &res, 0), 0);
  fclose(f);
  assert_non_null(strstr(json, "\"sampling\": null"));
  free(json);
  mdp_analysis_result_free(&res);
}

/* ------------------------------------------------------ a profile on disk */

#define COMMENT_GC "memdiag heap profile: pid 1, gc_count 42, x"

/* A profile as memdiag's hook writes one: n samples, labels class, address
 * and generation, one leaf frame each, the GC counts in the comment. */
static void write_profile(const char *path, size_t n, const char *comment_text)
{
  const char *const strs[] = {"",           "inuse_objects", "count",   "inuse_space",
                              "bytes",      "class",         "address", "generation",
                              "Cart::Line", "app/cart.rb",   "add",     comment_text};
  Memdiag__Pprof__Profile p = MEMDIAG__PPROF__PROFILE__INIT;
  Memdiag__Pprof__Function fn = MEMDIAG__PPROF__FUNCTION__INIT, *fns[1] = {&fn};
  Memdiag__Pprof__Line ln = MEMDIAG__PPROF__LINE__INIT, *lns[1] = {&ln};
  Memdiag__Pprof__Location loc = MEMDIAG__PPROF__LOCATION__INIT, *locs[1] = {&loc};
  Memdiag__Pprof__Sample *ss = calloc(n, sizeof(*ss)), **sp = calloc(n, sizeof(*sp));
  Memdiag__Pprof__Label *lb = calloc(n * 3, sizeof(*lb)), **lp = calloc(n * 3, sizeof(*lp));
  int64_t vals[2] = {64, 2560}, comment = 11;
  uint64_t loc_id = 1;
  assert_non_null(ss);
  assert_non_null(lb);
  fn.id = 1;
  fn.name = 10;
  fn.filename = 9;
  ln.function_id = 1;
  ln.line = 28;
  loc.id = 1;
  loc.n_line = 1;
  loc.line = lns;
  for(size_t i = 0; i < n; i++) {
    memdiag__pprof__sample__init(&ss[i]);
    for(int k = 0; k < 3; k++) {
      memdiag__pprof__label__init(&lb[i * 3 + k]);
      lp[i * 3 + k] = &lb[i * 3 + k];
      lb[i * 3 + k].key = 5 + k;
    }
    lb[i * 3].str = 8;
    lb[i * 3 + 1].num = (int64_t)(0x10000 + i * 40);
    lb[i * 3 + 2].num = 40;
    ss[i].n_label = 3;
    ss[i].label = &lp[i * 3];
    ss[i].n_value = 2;
    ss[i].value = vals;
    ss[i].n_location_id = 1;
    ss[i].location_id = &loc_id;
    sp[i] = &ss[i];
  }
  p.n_sample = n;
  p.sample = sp;
  p.n_location = 1;
  p.location = locs;
  p.n_function = 1;
  p.function = fns;
  p.n_string_table = sizeof(strs) / sizeof(strs[0]);
  p.string_table = (char **)strs;
  p.n_comment = 1;
  p.comment = &comment;
  size_t len = memdiag__pprof__profile__get_packed_size(&p);
  uint8_t *buf = malloc(len ? len : 1);
  memdiag__pprof__profile__pack(&p, buf);
  gzFile gz = gzopen(path, "wb");
  assert_non_null(gz);
  assert_int_equal(gzwrite(gz, buf, (unsigned)len), (int)len);
  gzclose(gz);
  free(buf);
  free(ss);
  free(sp);
  free(lb);
  free(lp);
}

static void test_load_profile(void **s)
{
  char path[600];
  mdp_sampled_set set;
  mdp_sampled_opts o = {0};
  (void)s;
  snprintf(path, sizeof(path), "%s/heap_profile-3.pb.gz", mdt_dir);
  write_profile(path, 1000, COMMENT_GC);
  assert_int_equal(mdp_sampled_load(path, &o, &set, err, sizeof(err)), 0);
  assert_int_equal(set.n, 1000);
  assert_true(set.has_gc_count);
  assert_int_equal(set.gc_count, 42);
  assert_false(set.has_dump_gc_count); /* an older hook's: before_gc is gc_count */
  assert_int_equal(set.objs[7].address, 0x10000 + 7 * 40);
  assert_int_equal(set.objs[7].generation, 40);
  assert_int_equal(set.objs[7].count, 64);
  assert_int_equal(set.objs[7].bytes, 2560);
  assert_string_equal(set.objs[7].class_name, "Cart::Line");
  assert_string_equal(set.objs[7].file, "app/cart.rb");
  assert_int_equal(set.objs[7].line, 28);
  /* each name once: the samples share it */
  assert_ptr_equal(set.objs[0].file, set.objs[999].file);
  assert_int_equal(set.n_strs, 2);
  assert_true(set.bytes >= 1000 * sizeof(mdp_analysis_sample));
  mdp_analysis_samples in = mdp_sampled_for_analysis(&set, &set, NULL, "p");
  assert_true(in.has_before_gc);
  assert_int_equal(in.before_gc, 42);
  mdp_sampled_free(&set);

  /* a memory limit the samples cannot fit in is refused, and says so */
  o.memory_limit = 16 << 10;
  assert_int_equal(mdp_sampled_load(path, &o, &set, err, sizeof(err)), -EFBIG);
  assert_non_null(strstr(err, "needs more than"));
  assert_int_equal(set.n, 0);
  unlink(path);

  /* not a profile */
  FILE *f = fopen(path, "w");
  fputs("not gzip", f);
  fclose(f);
  assert_int_equal(mdp_sampled_load(path, NULL, &set, err, sizeof(err)), -EINVAL);
  unlink(path);
}

/* The middle profile's comment as the hook writes it after a heap dump:
 * the GC count at the dump (dump_gc_count 5) and, later, when the profile
 * was written (gc_count 8): the worker collected while its forked dump
 * wrote. Read from a file as the plugin reads one. */
static mdp_sampled_set load_middle(const char *comment_text)
{
  char path[600];
  mdp_sampled_set set;
  snprintf(path, sizeof(path), "%s/heap_profile-2.pb.gz", mdt_dir);
  write_profile(path, 1, comment_text);
  assert_int_equal(mdp_sampled_load(path, NULL, &set, err, sizeof(err)), 0);
  unlink(path);
  return set;
}

/* Each count is read as itself: "gc_count" ends "dump_gc_count", in either
 * order. */
static void test_dump_gc_count_read(void **s)
{
  mdp_sampled_set set;
  (void)s;
  set = load_middle("memdiag heap profile: pid 1, gc_count 8, dump_gc_count 5, 3 live samples");
  assert_true(set.has_gc_count);
  assert_int_equal(set.gc_count, 8);
  assert_true(set.has_dump_gc_count);
  assert_int_equal(set.dump_gc_count, 5);
  mdp_sampled_free(&set);
  set = load_middle("dump_gc_count 5, gc_count 8");
  assert_int_equal(set.gc_count, 8);
  assert_int_equal(set.dump_gc_count, 5);
  mdp_sampled_free(&set);
  set = load_middle("memdiag heap profile: pid 1, dump_gc_count 5, 3 live samples");
  assert_false(set.has_gc_count);
  assert_true(set.has_dump_gc_count);
  mdp_sampled_free(&set);
}

/* before_gc is the GC count at the middle dump when its profile says it,
 * not the later one when the profile was written: a sample allocated in
 * between (generation 6, at retained Cart::Lines' addresses) is another
 * object in a slot freed after the dump, too new. Under CPU load that gap
 * named a decoy's line for a group (21 of 31 samples). */
static void test_before_gc_is_the_dump_gc_count(void **s)
{
  mdp_analysis_sample objs[N_SAMPLES];
  mdp_sampled_set last = {.objs = objs, .n = N_SAMPLES}, middle;
  mdp_analysis_samples in;
  mdp_analysis_result res;
  const mdp_analysis_group *line;
  (void)s;
  memcpy(objs, samples, sizeof(objs));

  middle = load_middle("memdiag heap profile: pid 1, gc_count 8, dump_gc_count 5, 3 live samples");
  in = mdp_sampled_for_analysis(&last, &middle, NULL, "heap_profile-3.pb.gz");
  assert_true(in.has_before_gc);
  assert_int_equal(in.before_gc, 5);
  assert_int_equal(run(&in, &res), 0);
  /* generations 6, 6 and 9 > 5; the one at 0x3000 (5) is the dump's */
  assert_int_equal(res.sampling.too_new, 3);
  assert_int_equal(res.sampling.retained, 2);
  line = named(&res, "Cart::Line");
  assert_string_equal(line->file, "app/cart.rb");
  assert_int_equal(line->site_samples, 1);
  assert_int_equal(line->site_sampled, 1);
  mdp_analysis_result_free(&res);
  mdp_sampled_free(&middle);

  /* an older hook's profile: only gc_count, the bound as before */
  middle = load_middle("memdiag heap profile: pid 1, gc_count 8, 3 live samples");
  in = mdp_sampled_for_analysis(&last, &middle, NULL, "heap_profile-3.pb.gz");
  assert_true(in.has_before_gc);
  assert_int_equal(in.before_gc, 8);
  assert_int_equal(run(&in, &res), 0);
  assert_int_equal(res.sampling.too_new, 1); /* generation 9 only */
  assert_int_equal(res.sampling.retained, 4);
  assert_int_equal(named(&res, "Cart::Line")->site_sampled, 3);
  mdp_analysis_result_free(&res);
  mdp_sampled_free(&middle);
}

static int has_caveat(const mdp_analysis_result *res, const char *code)
{
  for(unsigned i = 0; i < res->n_caveats; i++)
    if(strcmp(res->caveats[i].code, code) == 0)
      return 1;
  return 0;
}

/* 0x2018 is a Cart::Line in all three dumps, taken for one object without
 * allocation data. A sample there of its class allocated after dump 1 (GC
 * 5 > first_gc 3) and by dump 2 (at most before_gc 7) shows another one
 * in the reused slot, new in dump 2: retained, with its sampled site. A
 * worker that churns the class it leaks puts most of its leak in such
 * slots (heap_profile_sampled_sites: 14 of 15). */
static void test_sample_tells_reused_slot(void **s)
{
  mdp_analysis_sample objs[] = {{.address = 0x2018,
                                 .generation = 5,
                                 .class_name = "Cart::Line",
                                 .file = "app/leak.rb",
                                 .line = 11}};
  mdp_analysis_samples in = {.objs = objs,
                             .n = 1,
                             .has_before_gc = 1,
                             .before_gc_exact = 1,
                             .before_gc = 7,
                             .has_first_gc = 1,
                             .first_gc = 3};
  mdp_analysis_result res;
  const mdp_analysis_group *line;
  (void)s;
  assert_int_equal(run(&in, &res), 0);
  line = named(&res, "Cart::Line");
  assert_int_equal(line->count, 5); /* the 4 of test_missing_allocation_info, and 0x2018 */
  assert_int_equal(line->site_source, MDP_ANALYSIS_SITE_SAMPLED);
  assert_string_equal(line->file, "app/leak.rb");
  assert_int_equal(line->line, 11);
  assert_int_equal(res.sampling.reused_new, 1);
  assert_int_equal(res.sampling.reused_later, 0);
  assert_int_equal(res.sampling.retained, 1);
  assert_int_equal(res.sampling.objs[0].address, 0x2018);
  assert_int_equal(res.reused, 3);
  assert_true(has_caveat(&res, "reused_slots"));
  assert_false(res.doubtful);
  char *json = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&json, &len);
  assert_int_equal(mdp_analysis_write_json(f, &res, 0), 0);
  fclose(f);
  assert_non_null(strstr(json, "\"groups\": 1, \"reused_new\": 1, \"reused_later\": 0"));
  free(json);
  mdp_analysis_result_free(&res);

  /* The old behaviour wherever the sample does not show a newer object of
   * its class: 0x2018 is dump 1's Cart::Line, not retained. */
  struct {
    uint32_t generation;
    const char *class_name;
    int has_first_gc, exact;
  } same[] = {
      {3, "Cart::Line", 1, 1}, /* allocated by dump 1 (GC 3): the old object */
      {8, "Cart::Line", 1, 1}, /* after dump 2: another object since */
      {5, "Session", 1, 1},    /* another class than the dump's object */
      {5, "Cart::Line", 0, 1}, /* dump 1's GC count unknown (no first profile) */
      {5, "Cart::Line", 1, 0}, /* before_gc the middle profile's later gc_count */
  };
  for(size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
    objs[0].generation = same[i].generation;
    objs[0].class_name = same[i].class_name;
    in.has_first_gc = same[i].has_first_gc;
    in.before_gc_exact = same[i].exact;
    assert_int_equal(run(&in, &res), 0);
    line = named(&res, "Cart::Line");
    assert_int_equal(line->count, 4);
    assert_int_equal(line->site_source, MDP_ANALYSIS_SITE_NONE);
    assert_int_equal(res.sampling.reused_new, 0);
    assert_int_equal(res.reused, 2);
    assert_false(has_caveat(&res, "reused_slots"));
    mdp_analysis_result_free(&res);
  }
  /* no samples at all: the same */
  assert_int_equal(run(NULL, &res), 0);
  assert_int_equal(named(&res, "Cart::Line")->count, 4);
  mdp_analysis_result_free(&res);
}

/* The same between dumps 2 and 3: 0x2010 is a String in dump 1 and a
 * Cart::Line in dumps 2 and 3, taken for one retained object. A sample
 * there allocated after dump 2 (GC 9 > 7) and by dump 3 (at most last_gc
 * 10) is another Cart::Line in the reused slot: left out. After dump 3
 * (GC 11), or without dump 3's own GC count, it tells nothing of dump 3's
 * object, which stays retained (the sample too_new, as before). */
static void test_sample_tells_slot_reused_after_dump_2(void **s)
{
  mdp_analysis_sample objs[] = {
      {.address = 0x2010, .generation = 9, .class_name = "Cart::Line", .file = "app/late.rb"}};
  mdp_analysis_samples in = {.objs = objs,
                             .n = 1,
                             .has_before_gc = 1,
                             .before_gc_exact = 1,
                             .before_gc = 7,
                             .has_last_gc = 1,
                             .last_gc = 10};
  mdp_analysis_result res;
  (void)s;
  assert_int_equal(run(&in, &res), 0);
  assert_int_equal(named(&res, "Cart::Line")->count, 3);
  assert_int_equal(res.sampling.reused_later, 1);
  assert_int_equal(res.sampling.too_new, 0);
  assert_int_equal(res.reused, 3);
  assert_true(has_caveat(&res, "reused_slots"));
  mdp_analysis_result_free(&res);

  objs[0].generation = 11;
  assert_int_equal(run(&in, &res), 0);
  assert_int_equal(named(&res, "Cart::Line")->count, 4);
  assert_int_equal(res.sampling.reused_later, 0);
  assert_int_equal(res.sampling.too_new, 1);
  mdp_analysis_result_free(&res);

  objs[0].generation = 9;
  in.has_last_gc = 0;
  assert_int_equal(run(&in, &res), 0);
  assert_int_equal(named(&res, "Cart::Line")->count, 4);
  assert_int_equal(res.sampling.too_new, 1);
  assert_false(has_caveat(&res, "reused_slots"));
  mdp_analysis_result_free(&res);
}

/* first_gc from the first profile (dump_gc_count, else an older hook's
 * later gc_count: a higher bound tells fewer objects new); last_gc only
 * from the last profile's own dump_gc_count. */
static void test_first_and_last_gc(void **s)
{
  mdp_sampled_set last, middle, first;
  mdp_analysis_samples in;
  (void)s;
  last = load_middle("memdiag heap profile: pid 1, gc_count 12, dump_gc_count 10, 1 live samples");
  middle = load_middle("memdiag heap profile: pid 1, gc_count 8, dump_gc_count 7, 1 live samples");
  first = load_middle("memdiag heap profile: pid 1, gc_count 4, dump_gc_count 3, 1 live samples");
  in = mdp_sampled_for_analysis(&last, &middle, &first, "heap_profile-3.pb.gz");
  assert_true(in.has_first_gc && in.has_before_gc && in.before_gc_exact && in.has_last_gc);
  assert_int_equal(in.first_gc, 3);
  assert_int_equal(in.before_gc, 7);
  assert_int_equal(in.last_gc, 10);
  mdp_sampled_free(&last);
  mdp_sampled_free(&middle);
  mdp_sampled_free(&first);

  last = load_middle("memdiag heap profile: pid 1, gc_count 12, 1 live samples");
  middle = load_middle("memdiag heap profile: pid 1, gc_count 8, 1 live samples");
  first = load_middle("memdiag heap profile: pid 1, gc_count 4, 1 live samples");
  in = mdp_sampled_for_analysis(&last, &middle, &first, "heap_profile-3.pb.gz");
  assert_true(in.has_first_gc);
  assert_int_equal(in.first_gc, 4);
  assert_false(in.before_gc_exact);
  assert_false(in.has_last_gc);
  in = mdp_sampled_for_analysis(&last, &middle, NULL, "heap_profile-3.pb.gz");
  assert_false(in.has_first_gc);
  mdp_sampled_free(&last);
  mdp_sampled_free(&middle);
  mdp_sampled_free(&first);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_join_by_address),
      cmocka_unit_test(test_join_without_middle_profile),
      cmocka_unit_test(test_no_samples),
      cmocka_unit_test_setup_teardown(test_load_profile, mdt_dir_setup, mdt_dir_teardown),
      cmocka_unit_test_setup_teardown(test_dump_gc_count_read, mdt_dir_setup, mdt_dir_teardown),
      cmocka_unit_test_setup_teardown(test_before_gc_is_the_dump_gc_count, mdt_dir_setup,
                                      mdt_dir_teardown),
      cmocka_unit_test(test_sample_tells_reused_slot),
      cmocka_unit_test(test_sample_tells_slot_reused_after_dump_2),
      cmocka_unit_test_setup_teardown(test_first_and_last_gc, mdt_dir_setup, mdt_dir_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
