/* A DumpChunk or DumpEnd that belongs to no stream (an unknown request, a
 * request answered inline) is dropped with one log line per connection,
 * naming the peer and the connection, and the worker keeps its connection;
 * the rest of a stream the plugin gave up on (drained after a failure) is
 * dropped without a word. The plugin's server code on the fuzz harness's
 * in-memory connection (tests/fuzz/server_harness.h); the harness's
 * plugin_log prints to stderr (MD_FUZZ_LOG), which the test reads back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "relay/relay.h"
#include "server_harness.h"

static FILE *log_file; /* stderr, redirected */

/* Lines of the log so far that hold `needle`. */
static int logged(const char *needle)
{
  char line[2048];
  int n = 0;

  fflush(stderr);
  rewind(log_file);
  while(fgets(line, sizeof line, log_file))
    if(strstr(line, "memdiag plugin: ") && strstr(line, needle))
      n++;
  fseek(log_file, 0, SEEK_END);
  return n;
}

static void chunk_of(uint64_t id, size_t len)
{
  static uint8_t data[16384];
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__DumpChunk c = MEMDIAG__V1__DUMP_CHUNK__INIT;
  memset(data, ' ', sizeof data);
  c.has_request_id = c.has_data = 1;
  c.request_id = id;
  c.data.data = data;
  c.data.len = len < sizeof data ? len : sizeof data;
  f.body_case = MEMDIAG__V1__FRAME__BODY_DUMP_CHUNK;
  f.dump_chunk = &c;
  md_fuzz_stream_frame(&f);
}

static void chunk(uint64_t id) { chunk_of(id, 3); }

static void end(uint64_t id)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__DumpEnd e = MEMDIAG__V1__DUMP_END__INIT;
  e.has_request_id = 1;
  e.request_id = id;
  e.error = "the writer failed";
  f.body_case = MEMDIAG__V1__FRAME__BODY_DUMP_END;
  f.dump_end = &e;
  md_fuzz_stream_frame(&f);
}

static void reply(uint64_t id, Memdiag__V1__Status status, const char *data)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Reply r = MEMDIAG__V1__REPLY__INIT;
  r.has_request_id = r.has_status = 1;
  r.request_id = id;
  r.status = status;
  if(data) {
    r.has_data = 1;
    r.data.data = (uint8_t *)data;
    r.data.len = strlen(data);
  }
  f.body_case = MEMDIAG__V1__FRAME__BODY_REPLY;
  f.reply = &r;
  md_fuzz_stream_frame(&f);
}

static void drained_stream_is_silent_unknown_request_logged_once(void **state)
{
  (void)state;
  uint64_t id = md_fuzz_stream_begin(MD_FUZZ_ASK_DUMP, 4096, 1);

  assert_true(id != 0);
  chunk(id);
  /* failed before its end: the plugin lets the worker drain the rest */
  reply(id, MEMDIAG__V1__STATUS__STATUS_TIMEOUT, NULL);
  md_fuzz_stream_turn();
  assert_int_equal(md_fuzz_stream_end(), 0);
  chunk(id);
  chunk(id);
  end(id);
  assert_int_equal(logged("dropped a"), 0);

  chunk(id + 1000);
  assert_int_equal(logged("dropped a dump_chunk from 'fuzz-worker' pid 1 (connection "), 1);
  assert_int_equal(logged("which the plugin does not know"), 1);
  chunk(id + 1001);
  end(id + 1001);
  assert_int_equal(logged("dropped a"), 1);
}

static void chunk_of_an_inline_request_logged_once_connection_kept(void **state)
{
  (void)state;
  md_fuzz_stream_worker_gone(); /* a new connection: its own log line */
  uint64_t id = md_fuzz_stream_begin(MD_FUZZ_ASK_THREADS, 4096, 0);
  char conn[64];

  assert_true(id != 0);
  chunk(id);
  assert_int_equal(logged("which is not a stream"), 1);
  chunk(id);
  end(id);
  assert_int_equal(logged("dropped a"), 2);
  /* the connection stays: the request's inline answer is stored */
  reply(id, MEMDIAG__V1__STATUS__STATUS_OK, "thread dump\n");
  assert_int_equal(md_fuzz_stream_end(), 1);
  snprintf(conn, sizeof conn, "for request %llu, which is not", (unsigned long long)id);
  assert_int_equal(logged(conn), 1);
}

/* Issue 24: a worker that streams on after the plugin stopped its stream
 * (here: past its credit, which cancels it as a budget does) kept the
 * request's caller waiting until the request's time limit. Now the caller
 * is answered a short grace (5 s) after the cancel, naming the cause; what
 * the worker sends later is dropped and counted, and the connection
 * stays. */
static void a_worker_streaming_on_after_the_cancel_is_not_waited_for(void **state)
{
  (void)state;
  uint64_t id = md_fuzz_stream_begin(MD_FUZZ_ASK_DUMP, 4096, 0);
  mdp_rstream_dropped_t before = mdp_rstream_dropped();
  uint64_t late_before = mdp_relay_late_replies();
  int warned = logged("dropped a");

  assert_true(id != 0);
  chunk_of(id, 4000);
  chunk_of(id, 4000); /* past the window: cancelled */
  md_fuzz_stream_turn();
  chunk_of(id, 4000); /* within the grace: dropped */
  md_fuzz_stream_wait(1000);
  assert_string_equal(md_fuzz_stream_error(), ""); /* not answered yet */
  md_fuzz_stream_wait(4500);
  assert_non_null(strstr(md_fuzz_stream_error(), "more than the plugin allowed (flow control)"));
  assert_non_null(
      strstr(md_fuzz_stream_error(), "did not end its stream within 5 s of the cancel"));
  /* the worker goes on: its chunks, its end and its Reply are dropped */
  chunk_of(id, 4000);
  chunk_of(id, 4000);
  end(id);
  reply(id, MEMDIAG__V1__STATUS__STATUS_OK, NULL);
  md_fuzz_stream_turn();
  assert_int_equal(mdp_rstream_dropped().frames - before.frames, 3);
  assert_int_equal(mdp_rstream_dropped().bytes - before.bytes, 8000);
  assert_int_equal(mdp_relay_late_replies() - late_before, 1);
  assert_int_equal(logged("dropped a"), warned);
  assert_int_equal(md_fuzz_stream_end(), 0); /* one reply, no file, no stream left */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(drained_stream_is_silent_unknown_request_logged_once),
      cmocka_unit_test(chunk_of_an_inline_request_logged_once_connection_kept),
      cmocka_unit_test(a_worker_streaming_on_after_the_cancel_is_not_waited_for),
  };
  int saved = dup(2);

  /* before the harness's first log line, which reads it once */
  setenv("MD_FUZZ_LOG", "1", 1);
  log_file = tmpfile();
  if(!log_file || saved < 0 || dup2(fileno(log_file), 2) < 0)
    return 1;
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  /* cmocka's report went to the file too: show it */
  fflush(stderr);
  dup2(saved, 2);
  rewind(log_file);
  for(int ch; (ch = fgetc(log_file)) != EOF;)
    fputc(ch, stderr);
  return rc;
}
