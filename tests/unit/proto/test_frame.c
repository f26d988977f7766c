/* Framing: round trips, and every malformed input is a clean error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "md/wire.h"

static void encode(const Memdiag__V1__Frame *f, uint8_t **buf, size_t *len)
{
  assert_int_equal(md_frame_encode(f, MD_FRAME_MAX_DEFAULT, buf, len), MD_OK);
}

static void roundtrip_request(void **state)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Request req = MEMDIAG__V1__REQUEST__INIT;
  Memdiag__V1__MemoryDump md = MEMDIAG__V1__MEMORY_DUMP__INIT;
  Memdiag__V1__Frame *out = NULL;
  uint8_t *buf;
  size_t len, used = 0;

  (void)state;
  md.path = "/var/tmp/worker-1-before.json";
  md.has_shapes = 1;
  md.shapes = 0;
  md.has_mode = 1;
  md.mode = MEMDIAG__V1__DUMP_MODE__DUMP_MODE_FORK;
  req.has_request_id = 1;
  req.request_id = 42;
  req.op_case = MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP;
  req.memory_dump = &md;
  f.body_case = MEMDIAG__V1__FRAME__BODY_REQUEST;
  f.request = &req;
  encode(&f, &buf, &len);
  assert_int_equal(md_frame_decode(buf, len, MD_FRAME_MAX_DEFAULT, &out, &used), MD_OK);
  assert_int_equal(used, len);
  assert_string_equal(md_frame_kind(out), "request");
  assert_string_equal(md_request_op_name(out->request), "memory_dump");
  assert_int_equal(out->request->request_id, 42);
  assert_string_equal(out->request->memory_dump->path, "/var/tmp/worker-1-before.json");
  assert_false(out->request->memory_dump->shapes);
  assert_int_equal(out->request->memory_dump->mode, MEMDIAG__V1__DUMP_MODE__DUMP_MODE_FORK);
  md_frame_free(out);
  free(buf);
}

static void defaults_apply_when_absent(void **state)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Request req = MEMDIAG__V1__REQUEST__INIT;
  Memdiag__V1__MemoryDump md = MEMDIAG__V1__MEMORY_DUMP__INIT;
  Memdiag__V1__Frame *out = NULL;
  uint8_t *buf;
  size_t len, used;

  (void)state;
  req.op_case = MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP;
  req.memory_dump = &md;
  f.body_case = MEMDIAG__V1__FRAME__BODY_REQUEST;
  f.request = &req;
  encode(&f, &buf, &len);
  assert_int_equal(md_frame_decode(buf, len, MD_FRAME_MAX_DEFAULT, &out, &used), MD_OK);
  /* A request that does not mention shapes keeps them, as the reference does. */
  assert_true(out->request->memory_dump->shapes);
  assert_int_equal(out->request->memory_dump->mode, MEMDIAG__V1__DUMP_MODE__DUMP_MODE_INLINE);
  md_frame_free(out);
  free(buf);
}

static void two_frames_back_to_back(void **state)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Hello hello = MEMDIAG__V1__HELLO__INIT;
  Memdiag__V1__Frame *out = NULL;
  uint8_t *a, *both;
  size_t alen, used, off = 0;

  (void)state;
  hello.name = "puma-worker";
  hello.has_pid = 1;
  hello.pid = 1234;
  f.body_case = MEMDIAG__V1__FRAME__BODY_HELLO;
  f.hello = &hello;
  encode(&f, &a, &alen);
  both = malloc(alen * 2);
  memcpy(both, a, alen);
  memcpy(both + alen, a, alen);
  for(int i = 0; i < 2; i++) {
    assert_int_equal(md_frame_decode(both + off, 2 * alen - off, MD_FRAME_MAX_DEFAULT, &out, &used),
                     MD_OK);
    assert_string_equal(out->hello->name, "puma-worker");
    assert_int_equal(out->hello->pid, 1234);
    md_frame_free(out);
    off += used;
  }
  assert_int_equal(off, 2 * alen);
  free(a);
  free(both);
}

static void truncated_frame_waits(void **state)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Welcome w = MEMDIAG__V1__WELCOME__INIT;
  Memdiag__V1__Frame *out = NULL;
  uint8_t *buf;
  size_t len, used;

  (void)state;
  w.has_connection_id = 1;
  w.connection_id = 7;
  f.body_case = MEMDIAG__V1__FRAME__BODY_WELCOME;
  f.welcome = &w;
  encode(&f, &buf, &len);
  for(size_t cut = 0; cut < len; cut++) {
    assert_int_equal(md_frame_decode(buf, cut, MD_FRAME_MAX_DEFAULT, &out, &used), MD_EAGAIN);
    assert_null(out);
  }
  free(buf);
}

static void oversized_frame_refused_before_allocation(void **state)
{
  /* Announces 4 GiB - 1; only the header is present. */
  uint8_t hdr[4] = {0xff, 0xff, 0xff, 0xff};
  uint8_t small[8] = {0, 0, 0, 200, 1, 2, 3, 4};
  Memdiag__V1__Frame *out = NULL;
  size_t used;

  (void)state;
  assert_int_equal(md_frame_decode(hdr, sizeof(hdr), MD_FRAME_MAX_DEFAULT, &out, &used),
                   MD_ETOOBIG);
  /* The cap is the caller's: 200 bytes over a 100-byte cap is refused. */
  assert_int_equal(md_frame_decode(small, sizeof(small), 100, &out, &used), MD_ETOOBIG);
  assert_null(out);
}

static void encode_refuses_over_cap(void **state)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Reply r = MEMDIAG__V1__REPLY__INIT;
  uint8_t *buf = NULL;
  size_t len;
  static uint8_t big[4096];

  (void)state;
  r.has_data = 1;
  r.data.data = big;
  r.data.len = sizeof(big);
  f.body_case = MEMDIAG__V1__FRAME__BODY_REPLY;
  f.reply = &r;
  assert_int_equal(md_frame_encode(&f, 1024, &buf, &len), MD_ETOOBIG);
  assert_null(buf);
}

static void empty_and_bodyless_frames_rejected(void **state)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  uint8_t zero[4] = {0, 0, 0, 0};
  /* A valid protobuf (field 99, varint 1) that sets no body. */
  uint8_t unknown[7] = {0, 0, 0, 3, 0x98, 0x06, 0x01};
  Memdiag__V1__Frame *out = NULL;
  uint8_t *buf = NULL;
  size_t len, used;

  (void)state;
  assert_int_equal(md_frame_encode(&f, MD_FRAME_MAX_DEFAULT, &buf, &len), MD_EINVAL);
  assert_int_equal(md_frame_decode(zero, sizeof(zero), MD_FRAME_MAX_DEFAULT, &out, &used),
                   MD_EPROTO);
  assert_int_equal(md_frame_decode(unknown, sizeof(unknown), MD_FRAME_MAX_DEFAULT, &out, &used),
                   MD_EPROTO);
  assert_null(out);
}

static void garbage_never_crashes(void **state)
{
  uint8_t buf[512];
  unsigned seed = 12345;
  int parsed = 0, refused = 0;

  (void)state;
  for(int i = 0; i < 100000; i++) {
    Memdiag__V1__Frame *out = NULL;
    size_t used, n = 4 + (size_t)(rand_r(&seed) % (sizeof(buf) - 4));
    int rc;

    for(size_t j = 0; j < n; j++)
      buf[j] = (uint8_t)rand_r(&seed);
    /* Keep the announced length within the buffer half the time, so the
     * protobuf parser itself sees garbage, not only the length check. */
    if(i & 1) {
      size_t body = n - 4;
      buf[0] = 0;
      buf[1] = 0;
      buf[2] = (uint8_t)(body >> 8);
      buf[3] = (uint8_t)body;
    }
    rc = md_frame_decode(buf, n, MD_FRAME_MAX_DEFAULT, &out, &used);
    if(rc == MD_OK) {
      parsed++;
      assert_true(used <= n);
      md_frame_free(out);
    } else {
      assert_true(rc == MD_EPROTO || rc == MD_ETOOBIG || rc == MD_EAGAIN);
      assert_null(out);
      refused++;
    }
  }
  assert_true(refused > 0);
  (void)parsed;
}

static void names_are_stable(void **state)
{
  (void)state;
  assert_string_equal(md_status_name(MEMDIAG__V1__STATUS__STATUS_REFUSED), "refused");
  assert_string_equal(md_strerror(MD_ETOOBIG), "frame exceeds the size limit");
  assert_string_equal(md_frame_kind(NULL), "none");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(roundtrip_request),
      cmocka_unit_test(defaults_apply_when_absent),
      cmocka_unit_test(two_frames_back_to_back),
      cmocka_unit_test(truncated_frame_waits),
      cmocka_unit_test(oversized_frame_refused_before_allocation),
      cmocka_unit_test(encode_refuses_over_cap),
      cmocka_unit_test(empty_and_bodyless_frames_rejected),
      cmocka_unit_test(garbage_never_crashes),
      cmocka_unit_test(names_are_stable),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
