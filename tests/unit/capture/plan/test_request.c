/* The request each plan step sends: operation, file in the capture folder,
 * dump mode and shapes from the config. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "capture/capture.h"
#include "capture/plan/request.h"

/* The request options of a capture into dir with cfg's dump keys. */
#define REQ(d)                                                                                     \
  (&(mdp_request_opts){.dir = (d), .shapes = cfg.dump_shapes, .dump_mode = cfg.dump_mode})

static mdp_step_t step(mdp_step_kind_t kind, const char *file)
{
  mdp_step_t s;
  memset(&s, 0, sizeof(s));
  s.kind = kind;
  strcpy(s.file, file);
  return s;
}

static void dump_uses_mode_shapes_and_folder(void **state)
{
  (void)state;
  mdp_capture_config_t cfg;
  mdp_request_t r;
  mdp_capture_config_init(&cfg);
  cfg.dump_shapes = false;
  cfg.dump_mode = MEMDIAG__V1__DUMP_MODE__DUMP_MODE_FORK;
  mdp_step_t s = step(MDP_STEP_DUMP, "heap-2.json");
  assert_int_equal(mdp_request_build(&r, &s, REQ("/var/tmp/memdiag/w-1-X")), 0);
  assert_int_equal(r.req.op_case, MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP);
  assert_string_equal(r.req.memory_dump->path, "/var/tmp/memdiag/w-1-X/heap-2.json");
  assert_true(r.req.memory_dump->has_shapes);
  assert_false(r.req.memory_dump->shapes);
  assert_int_equal(r.req.memory_dump->mode, MEMDIAG__V1__DUMP_MODE__DUMP_MODE_FORK);
}

static void every_step_maps_to_its_operation(void **state)
{
  (void)state;
  mdp_capture_config_t cfg;
  mdp_request_t r;
  mdp_capture_config_init(&cfg);
  struct {
    mdp_step_kind_t kind;
    const char *file;
    int op;
  } cases[] = {
      {MDP_STEP_TRACE_START, "", MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_START},
      {MDP_STEP_TRACE_STOP, "heap-2.json", MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_STOP},
      {MDP_STEP_GC_START, "", MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_START},
      {MDP_STEP_GC_STOP, "gc.txt", MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_STOP},
      {MDP_STEP_SCHEDULER, "scheduler.txt", MEMDIAG__V1__REQUEST__OP_SCHEDULER_DUMP},
      {MDP_STEP_THREADS, "threads.txt", MEMDIAG__V1__REQUEST__OP_THREAD_DUMP},
  };
  for(size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    mdp_step_t s = step(cases[i].kind, cases[i].file);
    assert_int_equal(mdp_request_build(&r, &s, REQ("/c")), 0);
    assert_int_equal(r.req.op_case, cases[i].op);
  }
  mdp_step_t s = step(MDP_STEP_GC_STOP, "gc.txt");
  assert_int_equal(mdp_request_build(&r, &s, REQ("/c")), 0);
  assert_string_equal(r.req.garbage_profile_stop->path, "/c/gc.txt");
  s = step(MDP_STEP_TRACE_STOP, "heap-2.json");
  assert_int_equal(mdp_request_build(&r, &s, REQ("/c")), 0);
  assert_string_equal(r.req.allocation_trace_stop->path, "/c/heap-2.json");
  assert_true(r.req.allocation_trace_stop->shapes);
  s = step(MDP_STEP_WAIT, "");
  assert_int_equal(mdp_request_build(&r, &s, REQ("/c")), -EINVAL);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(dump_uses_mode_shapes_and_folder),
      cmocka_unit_test(every_step_maps_to_its_operation),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
