/* A result the plugin stores from a worker's stream (server/rstream.c with
 * the real stream store, through hello.c as a connection reaches it) is
 * named in the capture folder only when both the stream and the request
 * succeed: a request that fails after its stream ended leaves no file.
 * Runs on the fuzz harness's in-memory connection (tests/fuzz/
 * server_harness.h), which also aborts when a temporary file is left or
 * a stored file is not what the reply says. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/sha.h>

#include "server_harness.h"

static const char dump[] = "{\"address\":\"0x7f00\", \"type\":\"STRING\", \"bytesize\":40}\n";

static void send_frame(Memdiag__V1__Frame__BodyCase body, void *msg)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  f.body_case = body;
  f.dump_chunk = msg; /* one pointer of the body's union */
  md_fuzz_stream_frame(&f);
}

/* The whole dump streamed and ended; sha_ok 0: a checksum that differs. */
static uint64_t stream_dump(int sha_ok)
{
  Memdiag__V1__DumpChunk chunk = MEMDIAG__V1__DUMP_CHUNK__INIT;
  Memdiag__V1__DumpEnd end = MEMDIAG__V1__DUMP_END__INIT;
  uint8_t sha[SHA256_DIGEST_LENGTH];
  uint64_t id = md_fuzz_stream_begin(MD_FUZZ_ASK_DUMP, 4096, 1);

  assert_true(id != 0);
  chunk.has_request_id = chunk.has_data = 1;
  chunk.request_id = id;
  chunk.data.data = (uint8_t *)dump;
  chunk.data.len = strlen(dump);
  send_frame(MEMDIAG__V1__FRAME__BODY_DUMP_CHUNK, &chunk);
  SHA256((const uint8_t *)dump, strlen(dump), sha);
  sha[0] ^= sha_ok ? 0 : 1;
  end.has_request_id = end.has_size = end.has_sha256 = 1;
  end.request_id = id;
  end.size = strlen(dump);
  end.sha256.data = sha;
  end.sha256.len = sizeof sha;
  send_frame(MEMDIAG__V1__FRAME__BODY_DUMP_END, &end);
  md_fuzz_stream_turn(); /* the writer has every byte and the end */
  return id;
}

static void reply(uint64_t id, Memdiag__V1__Status status)
{
  Memdiag__V1__Reply r = MEMDIAG__V1__REPLY__INIT;
  r.has_request_id = r.has_status = 1;
  r.request_id = id;
  r.status = status;
  send_frame(MEMDIAG__V1__FRAME__BODY_REPLY, &r);
}

static void stream_and_ok_reply_store_the_result(void **state)
{
  (void)state;
  reply(stream_dump(1), MEMDIAG__V1__STATUS__STATUS_OK);
  assert_int_equal(md_fuzz_stream_end(), 1);
}

static void error_reply_after_the_stream_leaves_no_file(void **state)
{
  (void)state;
  reply(stream_dump(1), MEMDIAG__V1__STATUS__STATUS_ERROR);
  assert_int_equal(md_fuzz_stream_end(), 0);
}

static void worker_gone_after_the_stream_leaves_no_file(void **state)
{
  (void)state;
  stream_dump(1);
  md_fuzz_stream_worker_gone();
  assert_int_equal(md_fuzz_stream_end(), 0);
}

static void checksum_mismatch_stores_nothing(void **state)
{
  (void)state;
  reply(stream_dump(0), MEMDIAG__V1__STATUS__STATUS_OK);
  assert_int_equal(md_fuzz_stream_end(), 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(stream_and_ok_reply_store_the_result),
      cmocka_unit_test(error_reply_after_the_stream_leaves_no_file),
      cmocka_unit_test(worker_gone_after_the_stream_leaves_no_file),
      cmocka_unit_test(checksum_mismatch_stores_nothing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
