/* Wire <-> runtime conversion in the hook: every operation's fields reach
 * the runtime as copies, and every reply field reaches the wire intact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "internal.h"

static void memory_dump_fields(void **state)
{
  Memdiag__V1__Request in = MEMDIAG__V1__REQUEST__INIT;
  Memdiag__V1__MemoryDump md = MEMDIAG__V1__MEMORY_DUMP__INIT;
  char path[] = "/var/tmp/w-1.json";
  mdh_request out;

  (void)state;
  md.path = path;
  md.shapes = 0;
  md.mode = MEMDIAG__V1__DUMP_MODE__DUMP_MODE_FORK;
  in.request_id = 42;
  in.has_timeout_ms = 1;
  in.timeout_ms = 1500;
  in.op_case = MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP;
  in.memory_dump = &md;
  assert_int_equal(mdh_request_from_wire(&out, &in, 7), MDH_OK);
  assert_int_equal(out.connection_id, 7);
  assert_int_equal(out.id, 42);
  assert_int_equal(out.op, MDH_OP_MEMORY_DUMP);
  assert_int_equal(out.timeout_ms, 1500);
  assert_int_equal(out.shapes, 0);
  assert_int_equal(out.mode, MDH_MODE_FORK);
  /* A copy: the frame it came from is freed before the runtime runs it. */
  assert_string_equal(out.path, path);
  assert_ptr_not_equal(out.path, path);
  mdh_request_clear(&out);
  assert_null(out.path);

  md.path = NULL;
  md.shapes = 1;
  md.mode = MEMDIAG__V1__DUMP_MODE__DUMP_MODE_AUTO;
  in.has_timeout_ms = 0;
  assert_int_equal(mdh_request_from_wire(&out, &in, 7), MDH_OK);
  assert_null(out.path);
  assert_int_equal(out.shapes, 1);
  assert_int_equal(out.mode, MDH_MODE_AUTO);
  assert_int_equal(out.timeout_ms, 0);
  mdh_request_clear(&out);
}

/* in converted for connection 1: valid, and the runtime's op. */
static void expect_op(const Memdiag__V1__Request *in, mdh_op op, mdh_request *out)
{
  assert_int_equal(mdh_request_from_wire(out, in, 1), MDH_OK);
  assert_int_equal(out->op, op);
}

/* Each operation's message in its own block: the request points at one at
 * a time. */
static void every_operation(void **state)
{
  Memdiag__V1__Request in = MEMDIAG__V1__REQUEST__INIT;
  mdh_request out;

  (void)state;
  {
    Memdiag__V1__AllocationTraceStart ats = MEMDIAG__V1__ALLOCATION_TRACE_START__INIT;
    ats.has_keep = 1;
    ats.keep = 1;
    in.op_case = MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_START;
    in.allocation_trace_start = &ats;
    expect_op(&in, MDH_OP_ALLOCATION_TRACE_START, &out);
    assert_int_equal(out.keep, 1);
    assert_string_equal(mdh_op_name(out.op), "allocation_trace_start");
    mdh_request_clear(&out);
  }
  {
    Memdiag__V1__AllocationTraceStop atp = MEMDIAG__V1__ALLOCATION_TRACE_STOP__INIT;
    atp.path = "t.json";
    atp.shapes = 1;
    in.op_case = MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_STOP;
    in.allocation_trace_stop = &atp;
    expect_op(&in, MDH_OP_ALLOCATION_TRACE_STOP, &out);
    assert_string_equal(out.path, "t.json");
    assert_int_equal(out.shapes, 1);
    mdh_request_clear(&out);
  }
  {
    Memdiag__V1__GarbageProfileStart gps = MEMDIAG__V1__GARBAGE_PROFILE_START__INIT;
    in.op_case = MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_START;
    in.garbage_profile_start = &gps; /* keep absent: ends with the connection */
    expect_op(&in, MDH_OP_GARBAGE_PROFILE_START, &out);
    assert_int_equal(out.keep, 0);
    mdh_request_clear(&out);
  }
  {
    Memdiag__V1__GarbageProfileStop gpp = MEMDIAG__V1__GARBAGE_PROFILE_STOP__INIT;
    gpp.path = "gc.json";
    in.op_case = MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_STOP;
    in.garbage_profile_stop = &gpp;
    expect_op(&in, MDH_OP_GARBAGE_PROFILE_STOP, &out);
    assert_string_equal(out.path, "gc.json");
    mdh_request_clear(&out);
  }
  {
    Memdiag__V1__SchedulerDump sd = MEMDIAG__V1__SCHEDULER_DUMP__INIT;
    in.op_case = MEMDIAG__V1__REQUEST__OP_SCHEDULER_DUMP;
    in.scheduler_dump = &sd;
    expect_op(&in, MDH_OP_SCHEDULER_DUMP, &out);
    assert_null(out.path); /* inline */
    mdh_request_clear(&out);
  }
  {
    Memdiag__V1__ThreadDump td = MEMDIAG__V1__THREAD_DUMP__INIT;
    td.path = "threads.txt";
    in.op_case = MEMDIAG__V1__REQUEST__OP_THREAD_DUMP;
    in.thread_dump = &td;
    expect_op(&in, MDH_OP_THREAD_DUMP, &out);
    assert_string_equal(out.path, "threads.txt");
    mdh_request_clear(&out);
  }
}

static void ping_payload_is_copied(void **state)
{
  Memdiag__V1__Request in = MEMDIAG__V1__REQUEST__INIT;
  Memdiag__V1__Ping ping = MEMDIAG__V1__PING__INIT;
  uint8_t bytes[] = {0, 1, 2, 0xff};
  mdh_request out;

  (void)state;
  ping.has_payload = 1;
  ping.payload.data = bytes;
  ping.payload.len = sizeof(bytes);
  in.op_case = MEMDIAG__V1__REQUEST__OP_PING;
  in.ping = &ping;
  assert_int_equal(mdh_request_from_wire(&out, &in, 3), MDH_OK);
  assert_int_equal(out.op, MDH_OP_PING);
  assert_int_equal(out.payload_len, sizeof(bytes));
  assert_memory_equal(out.payload, bytes, sizeof(bytes));
  assert_ptr_not_equal(out.payload, bytes);
  mdh_request_clear(&out);
  ping.payload.len = 0;
  assert_int_equal(mdh_request_from_wire(&out, &in, 3), MDH_OK);
  assert_null(out.payload);
  mdh_request_clear(&out);
}

static void no_operation_is_invalid(void **state)
{
  Memdiag__V1__Request in = MEMDIAG__V1__REQUEST__INIT;
  mdh_request out;

  (void)state;
  in.request_id = 9;
  assert_int_equal(mdh_request_from_wire(&out, &in, 1), MDH_EINVAL);
  /* Nothing left to free, nothing half-filled. */
  assert_int_equal(out.id, 0);
  assert_null(out.path);
  assert_string_equal(mdh_op_name((mdh_op)0), "none");
  assert_string_equal(mdh_op_name((mdh_op)1000), "none");
}

/* The frame as the plugin receives it: encoded and decoded again. */
static Memdiag__V1__Frame *over_the_wire(Memdiag__V1__Frame *f)
{
  uint8_t *buf;
  size_t len, used;
  Memdiag__V1__Frame *back = NULL;

  assert_int_equal(md_frame_encode(f, MD_FRAME_MAX_DEFAULT, &buf, &len), MD_OK);
  assert_int_equal(md_frame_decode(buf, len, MD_FRAME_MAX_DEFAULT, &back, &used), MD_OK);
  assert_int_equal(used, len);
  free(buf);
  return back;
}

static void reply_fields_reach_the_wire(void **state)
{
  char path[] = "/var/tmp/w-1.json", note[] = "fork took 9 ms";
  const uint8_t data[] = {'a', 0, 'b'};
  mdh_reply_t r = {
      .connection_id = 5,
      .request_id = 77,
      .status = MDH_STATUS_OK,
      .path = path,
      .data = data,
      .data_len = sizeof(data),
      .has_bytes = 1,
      .bytes = 123456789,
      .has_duration_us = 1,
      .duration_us = 2500,
      .has_pause_us = 1,
      .pause_us = 13000,
      .note = note,
      .mode = "fork",
  };
  Memdiag__V1__Frame *f, *back;

  (void)state;
  f = mdh_reply_frame_new(&r);
  assert_non_null(f);
  /* Copies: the runtime's strings may go as soon as mdh_reply returns. */
  path[0] = note[0] = 'X';
  back = over_the_wire(f);
  mdh_reply_frame_free(f);
  assert_int_equal(back->body_case, MEMDIAG__V1__FRAME__BODY_REPLY);
  assert_int_equal(back->reply->request_id, 77);
  assert_int_equal(back->reply->status, MEMDIAG__V1__STATUS__STATUS_OK);
  assert_string_equal(back->reply->path, "/var/tmp/w-1.json");
  assert_string_equal(back->reply->note, "fork took 9 ms");
  assert_string_equal(back->reply->mode, "fork");
  assert_true(back->reply->has_data);
  assert_int_equal(back->reply->data.len, sizeof(data));
  assert_memory_equal(back->reply->data.data, data, sizeof(data));
  assert_int_equal(back->reply->bytes, 123456789);
  assert_int_equal(back->reply->duration_us, 2500);
  assert_int_equal(back->reply->pause_us, 13000);
  assert_true(back->reply->error == NULL || back->reply->error[0] == '\0');
  md_frame_free(back);
}

static void statuses_and_empty_data(void **state)
{
  static const struct {
    mdh_status in;
    Memdiag__V1__Status out;
  } map[] = {
      {MDH_STATUS_OK, MEMDIAG__V1__STATUS__STATUS_OK},
      {MDH_STATUS_ERROR, MEMDIAG__V1__STATUS__STATUS_ERROR},
      {MDH_STATUS_REFUSED, MEMDIAG__V1__STATUS__STATUS_REFUSED},
      {MDH_STATUS_TIMEOUT, MEMDIAG__V1__STATUS__STATUS_TIMEOUT},
      {MDH_STATUS_UNSUPPORTED, MEMDIAG__V1__STATUS__STATUS_UNSUPPORTED},
      {MDH_STATUS_BAD_REQUEST, MEMDIAG__V1__STATUS__STATUS_BAD_REQUEST},
      {(mdh_status)99, MEMDIAG__V1__STATUS__STATUS_ERROR},
  };
  (void)state;
  for(size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
    /* Inline output that happens to be empty is still data, not "none". */
    mdh_reply_t r = {.request_id = i, .status = map[i].in, .data = (const uint8_t *)""};
    Memdiag__V1__Frame *f = mdh_reply_frame_new(&r), *back;
    assert_non_null(f);
    back = over_the_wire(f);
    mdh_reply_frame_free(f);
    assert_int_equal(back->reply->status, map[i].out);
    assert_true(back->reply->has_data);
    assert_int_equal(back->reply->data.len, 0);
    assert_false(back->reply->has_bytes);
    assert_false(back->reply->has_pause_us);
    md_frame_free(back);
  }
}

static void error_reply(void **state)
{
  Memdiag__V1__Frame *f, *back;

  (void)state;
  f = mdh_reply_frame_error(12, MDH_STATUS_REFUSED, "tracing already active");
  assert_non_null(f);
  back = over_the_wire(f);
  mdh_reply_frame_free(f);
  assert_int_equal(back->reply->request_id, 12);
  assert_int_equal(back->reply->status, MEMDIAG__V1__STATUS__STATUS_REFUSED);
  assert_string_equal(back->reply->error, "tracing already active");
  assert_false(back->reply->has_data);
  md_frame_free(back);
  mdh_reply_frame_free(NULL); /* as free(NULL) */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(memory_dump_fields),
      cmocka_unit_test(every_operation),
      cmocka_unit_test(ping_payload_is_copied),
      cmocka_unit_test(no_operation_is_invalid),
      cmocka_unit_test(reply_fields_reach_the_wire),
      cmocka_unit_test(statuses_and_empty_data),
      cmocka_unit_test(error_reply),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
