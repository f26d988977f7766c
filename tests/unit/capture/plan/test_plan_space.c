/* The space a heap dump is assumed to need (DumpSpaceFactor, with
 * DumpCompression and DumpTransfer), the plan's decision on it, and the
 * names a plan gives dumps the plugin compresses: every message names the
 * file the folder would hold (heap-1.json.zst), the worker the plain file
 * it writes itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "capture/capture.h"
#include "capture/plan/request.h"
#include "capture/plan/plan.h"

/* The request options of a capture into dir with cfg's dump keys. */
#define REQ(d)                                                                                     \
  (&(mdp_request_opts){.dir = (d), .shapes = cfg.dump_shapes, .dump_mode = cfg.dump_mode})

#define GiB (1024ull * 1024 * 1024)
#define MiB (1024ull * 1024)

static mdp_plan_params_t params(bool zstd, bool streamed)
{
  mdp_plan_params_t p = {.interval_ms = 1000, .space_factor = 3, .zstd_dumps = zstd};
  p.streamed = streamed;
  return p;
}

static void need_follows_compression_and_transfer(void **state)
{
  (void)state;
  mdp_plan_params_t p = params(false, true);
  assert_int_equal(mdp_plan_dump_need(&p, GiB), 3 * GiB);
  p = params(false, false);
  assert_int_equal(mdp_plan_dump_need(&p, GiB), 3 * GiB);
  /* streamed: only the compressed file is on disk, a quarter of the dump */
  p = params(true, true);
  assert_int_equal(mdp_plan_dump_need(&p, GiB), 3 * GiB / 4);
  /* the worker's own file, then the compressed copy beside it */
  p = params(true, false);
  assert_int_equal(mdp_plan_dump_need(&p, GiB), 3 * GiB + 3 * GiB / 4);
  p.space_factor = 0;
  assert_int_equal(mdp_plan_dump_need(&p, GiB), 0);
}

/* One dump step answered with `avail` bytes free; returns the step. */
static const mdp_step_t *one_dump(mdp_plan_t *plan, const mdp_plan_params_t *p, uint64_t rss,
                                  uint64_t avail, mdp_actions_t *acts)
{
  mdp_step_kind_t kind = MDP_STEP_DUMP;
  mdp_plan_trigger_t t = {.reason = "test", .rss = rss};
  mdp_plan_init(plan, p, &kind, 1, &t);
  acts->n = 0;
  mdp_plan_begin(plan, 0, acts);
  assert_int_equal(plan->state, MDP_PLAN_WAITING_SPACE);
  assert_int_equal(acts->a[acts->n - 1].kind, MDP_ACT_CHECK_SPACE);
  assert_int_equal(acts->a[acts->n - 1].bytes, mdp_plan_dump_need(p, rss));
  acts->n = 0;
  mdp_plan_space(plan, 1, avail, 0, acts);
  return &plan->steps[0];
}

static void streamed_zstd_dump_fits_where_raw_would_not(void **state)
{
  (void)state;
  mdp_plan_t plan;
  mdp_actions_t acts;
  mdp_plan_params_t p = params(true, true);

  /* 1 GiB free, RSS 1 GiB: 3 GiB raw would be refused, 768 MiB fits */
  const mdp_step_t *s = one_dump(&plan, &p, GiB, GiB, &acts);
  assert_int_equal(s->status, MDP_SS_RUNNING);
  assert_int_equal(acts.a[0].kind, MDP_ACT_SEND);

  p = params(false, true);
  s = one_dump(&plan, &p, GiB, GiB, &acts);
  assert_int_equal(s->status, MDP_SS_SKIPPED);
}

static void clearly_too_little_is_still_refused(void **state)
{
  (void)state;
  mdp_plan_t plan;
  mdp_actions_t acts;
  mdp_plan_params_t p = params(true, true);

  const mdp_step_t *s = one_dump(&plan, &p, GiB, 500 * MiB, &acts);
  assert_int_equal(s->status, MDP_SS_SKIPPED);
  assert_non_null(strstr(s->error, "dump needs 768.0M (RSS 1.0G x 3.0 x 0.25, zstd)"));

  /* DumpTransfer file: the worker's whole file comes first */
  p = params(true, false);
  s = one_dump(&plan, &p, GiB, 3 * GiB + 512 * MiB, &acts);
  assert_int_equal(s->status, MDP_SS_SKIPPED);
  assert_non_null(strstr(s->error, "x 1.25, zstd beside the worker's file"));
  bool notified = false;
  for(size_t i = 0; i < acts.n; i++)
    if(acts.a[i].kind == MDP_ACT_NOTIFY &&
       strstr(acts.a[i].message, "dump (heap-1.json.zst) skipped: not enough free space"))
      notified = true;
  assert_true(notified);
}

static void failed_dump_names_the_compressed_file(void **state)
{
  (void)state;
  mdp_plan_t plan;
  mdp_actions_t acts;
  mdp_plan_params_t p = params(true, true);
  mdp_reply_t rep = {.status = MDP_REPLY_ERROR, .error = "No space left on device"};
  bool named = false;

  one_dump(&plan, &p, MiB, GiB, &acts);
  assert_string_equal(plan.steps[0].file, "heap-1.json.zst");
  acts.n = 0;
  mdp_plan_reply(&plan, 2, &rep, &acts);
  for(size_t i = 0; i < acts.n; i++)
    if(acts.a[i].kind == MDP_ACT_NOTIFY &&
       strstr(acts.a[i].message, "dump (heap-1.json.zst) failed: No space left on device"))
      named = true;
  assert_true(named);

  /* DumpCompression none: the plain name */
  p = params(false, true);
  one_dump(&plan, &p, MiB, GiB, &acts);
  assert_string_equal(plan.steps[0].file, "heap-1.json");
}

static void worker_writes_the_plain_file(void **state)
{
  (void)state;
  mdp_capture_config_t cfg;
  mdp_request_t r;
  mdp_step_t s;

  mdp_capture_config_init(&cfg);
  memset(&s, 0, sizeof(s));
  s.kind = MDP_STEP_DUMP;
  strcpy(s.file, "heap-3.json.zst");
  assert_int_equal(mdp_step_plain_len(&s), strlen("heap-3.json"));
  assert_int_equal(mdp_request_build(&r, &s, REQ("/c")), 0);
  assert_string_equal(r.req.memory_dump->path, "/c/heap-3.json");
  strcpy(s.file, "heap-3.json");
  assert_int_equal(mdp_step_plain_len(&s), strlen("heap-3.json"));
  strcpy(s.file, ".zst");
  assert_int_equal(mdp_step_plain_len(&s), 4);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(need_follows_compression_and_transfer),
      cmocka_unit_test(streamed_zstd_dump_fits_where_raw_would_not),
      cmocka_unit_test(clearly_too_little_is_still_refused),
      cmocka_unit_test(failed_dump_names_the_compressed_file),
      cmocka_unit_test(worker_writes_the_plain_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
