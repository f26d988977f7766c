/* Unit tests for plugin/server/relay.c, isolated from the server: the relay
 * runs on a real mdp_loop turned by the test, and its frames go to a fake
 * send function that records them and answers what each test says. Nothing
 * waits on a clock for its verdict: the test turns the loop until a reply
 * callback ran, and ctest's TIMEOUT fails a relay that never answers. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "loop/loop.h"
#include "relay/relay.h"

#define DUMP_TIMEOUT_MS 123456u

/* ------------------------------------------------------------ fake server */

static int send_rc;              /* what the fake send answers */
static unsigned sends;           /* frames it was given */
static uint64_t sent_to;         /* connection of the last one */
static Memdiag__V1__Frame *sent; /* a copy of the last one */

/* volatile: the compiler may assume malloc reads no global of ours */
static volatile int in_fake; /* the fake's own allocations never fail */

static int fake_send(uint64_t connection_id, const Memdiag__V1__Frame *f)
{
  size_t len = memdiag__v1__frame__get_packed_size(f);
  uint8_t *buf;

  in_fake = 1;
  buf = malloc(len ? len : 1);
  in_fake = 0;

  assert_non_null(buf);
  memdiag__v1__frame__pack(f, buf);
  if(sent)
    memdiag__v1__frame__free_unpacked(sent, NULL);
  sent = memdiag__v1__frame__unpack(NULL, len, buf);
  free(buf);
  assert_non_null(sent);
  sent_to = connection_id;
  sends++;
  return send_rc;
}

/* ------------------------------------------------------------ replies */

typedef struct {
  int calls;
  Memdiag__V1__Status status;
  char error[256];
  uint64_t request_id;
  uint64_t bytes;
  pthread_t thread;
} outcome;

static void done(const Memdiag__V1__Reply *r, void *arg)
{
  outcome *o = arg;

  o->calls++;
  o->status = r->has_status ? r->status : MEMDIAG__V1__STATUS__STATUS_OK;
  snprintf(o->error, sizeof(o->error), "%s", r->error ? r->error : "");
  o->request_id = r->request_id;
  o->bytes = r->has_bytes ? r->bytes : 0;
  o->thread = pthread_self();
}

static mdp_loop *loop;

static void turn_until_done(const outcome *o)
{
  while(o->calls == 0)
    mdp_loop_turn(loop, -1);
}

static Memdiag__V1__Request ping_request(Memdiag__V1__Ping *p)
{
  Memdiag__V1__Request r = MEMDIAG__V1__REQUEST__INIT;

  memdiag__v1__ping__init(p);
  r.op_case = MEMDIAG__V1__REQUEST__OP_PING;
  r.ping = p;
  return r;
}

/* What each test asks the worker: a ping, made afresh before each test. */
static Memdiag__V1__Ping ping;
static Memdiag__V1__Request req;

static int setup(void **state)
{
  (void)state;
  req = ping_request(&ping);
  assert_int_equal(mdp_loop_new(&loop), 0);
  mdp_relay_init(loop, fake_send, DUMP_TIMEOUT_MS);
  send_rc = 0;
  sends = 0;
  sent_to = 0;
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  /* Nothing may be left pending from one test to the next. */
  assert_int_equal(mdp_relay_shutdown(), 0);
  mdp_loop_free(loop);
  loop = NULL;
  if(sent)
    memdiag__v1__frame__free_unpacked(sent, NULL);
  sent = NULL;
  return 0;
}

static void worker_answers(uint64_t connection_id, uint64_t request_id, uint64_t bytes)
{
  Memdiag__V1__Reply r = MEMDIAG__V1__REPLY__INIT;

  r.has_request_id = 1;
  r.request_id = request_id;
  r.has_status = 1;
  r.status = MEMDIAG__V1__STATUS__STATUS_OK;
  r.has_bytes = 1;
  r.bytes = bytes;
  mdp_relay_on_reply(connection_id, &r);
}

/* ------------------------------------------------------------ tests */

static void a_reply_reaches_the_caller_matched_by_id_and_connection(void **state)
{
  outcome o = {0};
  uint64_t id;

  (void)state;
  req.has_request_id = 1;
  req.request_id = 999;   /* ignored: the relay numbers its own */
  mdp_loop_turn(loop, 0); /* the test thread becomes the loop's */
  assert_int_equal(mdp_relay_request(7, &req, 0, done, &o), 0);
  assert_int_equal(sends, 1);
  assert_int_equal(sent_to, 7);
  assert_int_equal(sent->body_case, MEMDIAG__V1__FRAME__BODY_REQUEST);
  assert_int_equal(sent->request->op_case, MEMDIAG__V1__REQUEST__OP_PING);
  assert_true(sent->request->has_request_id);
  id = sent->request->request_id;
  assert_true(id != 999);
  assert_int_equal(sent->request->timeout_ms, 10000); /* the default for a ping */

  worker_answers(8, id, 1); /* same id, another worker: not ours */
  worker_answers(7, id + 1, 2);
  assert_int_equal(o.calls, 0);
  worker_answers(7, id, 42);
  assert_int_equal(o.calls, 1);
  assert_int_equal(o.status, MEMDIAG__V1__STATUS__STATUS_OK);
  assert_int_equal(o.bytes, 42);
  worker_answers(7, id, 43); /* a second answer is dropped */
  mdp_loop_turn(loop, 0);
  assert_int_equal(o.calls, 1);
}

static void no_such_worker_ends_with_unknown_connection_later(void **state)
{
  outcome o = {0};

  (void)state;
  send_rc = -ENOENT;
  mdp_loop_turn(loop, 0);
  assert_int_equal(mdp_relay_request(7, &req, 0, done, &o), 0);
  assert_int_equal(o.calls, 0); /* never inside the call */
  turn_until_done(&o);
  assert_int_equal(o.calls, 1);
  assert_int_equal(o.status, MEMDIAG__V1__STATUS__STATUS_UNKNOWN_CONNECTION);
  assert_non_null(strstr(o.error, "no worker with connection ID 7"));
}

static void a_frame_the_server_cannot_send_ends_with_an_error(void **state)
{
  outcome o = {0};

  (void)state;
  send_rc = -EMSGSIZE;
  assert_int_equal(mdp_relay_request(3, &req, 0, done, &o), 0);
  turn_until_done(&o);
  assert_int_equal(o.status, MEMDIAG__V1__STATUS__STATUS_ERROR);
  assert_non_null(strstr(o.error, "could not send the request to connection 3"));
}

static void a_departing_worker_ends_its_own_requests_only(void **state)
{
  outcome mine = {0}, other = {0};
  uint64_t other_id;

  (void)state;
  mdp_loop_turn(loop, 0);
  assert_int_equal(mdp_relay_request(5, &req, 0, done, &mine), 0);
  assert_int_equal(mdp_relay_request(6, &req, 0, done, &other), 0);
  other_id = sent->request->request_id;
  mdp_relay_worker_gone(5);
  assert_int_equal(mine.calls, 1);
  assert_int_equal(mine.status, MEMDIAG__V1__STATUS__STATUS_UNKNOWN_CONNECTION);
  assert_non_null(strstr(mine.error, "connection ID 5 went away before answering"));
  assert_int_equal(other.calls, 0);
  worker_answers(6, other_id, 1);
  assert_int_equal(other.calls, 1);
}

/* A connection failing while the request goes out (-EIO) is closing: the
 * request waits for the server to report the worker gone. */
static void a_closing_connection_ends_through_worker_gone(void **state)
{
  outcome o = {0};

  (void)state;
  send_rc = -EIO;
  mdp_loop_turn(loop, 0);
  assert_int_equal(mdp_relay_request(4, &req, 0, done, &o), 0);
  mdp_loop_turn(loop, 0);
  assert_int_equal(o.calls, 0);
  mdp_relay_worker_gone(4);
  assert_int_equal(o.calls, 1);
  assert_int_equal(o.status, MEMDIAG__V1__STATUS__STATUS_UNKNOWN_CONNECTION);
}

static void a_silent_worker_times_out_once(void **state)
{
  outcome o = {0};
  uint64_t id;

  (void)state;
  mdp_loop_turn(loop, 0);
  assert_int_equal(mdp_relay_request(9, &req, 1, done, &o), 0);
  assert_int_equal(sent->request->timeout_ms, 1); /* what the worker is told */
  id = sent->request->request_id;
  turn_until_done(&o);
  assert_int_equal(o.status, MEMDIAG__V1__STATUS__STATUS_TIMEOUT);
  assert_non_null(strstr(o.error, "connection ID 9 did not answer in time"));
  worker_answers(9, id, 1); /* too late: dropped */
  mdp_relay_worker_gone(9);
  assert_int_equal(o.calls, 1);
}

static void shutdown_ends_what_is_pending_and_what_comes_later(void **state)
{
  outcome a = {0}, b = {0}, late = {0};

  (void)state;
  mdp_loop_turn(loop, 0);
  assert_int_equal(mdp_relay_request(1, &req, 0, done, &a), 0);
  assert_int_equal(mdp_relay_request(2, &req, 0, done, &b), 0);
  assert_int_equal(mdp_relay_shutdown(), 2);
  assert_int_equal(a.calls + b.calls, 2);
  assert_int_equal(a.status, MEMDIAG__V1__STATUS__STATUS_ERROR);
  assert_non_null(strstr(a.error, "plugin shutting down"));
  sends = 0;
  assert_int_equal(mdp_relay_request(1, &req, 0, done, &late), 0);
  assert_int_equal(sends, 0); /* not sent */
  turn_until_done(&late);
  assert_non_null(strstr(late.error, "plugin shutting down"));
}

static void timeouts_come_from_the_caller_the_request_or_the_operation(void **state)
{
  Memdiag__V1__MemoryDump md = MEMDIAG__V1__MEMORY_DUMP__INIT;
  Memdiag__V1__ThreadDump td = MEMDIAG__V1__THREAD_DUMP__INIT;
  outcome o[3] = {{0}};

  (void)state;
  mdp_loop_turn(loop, 0);
  req.has_timeout_ms = 1;
  req.timeout_ms = 2500;
  assert_int_equal(mdp_relay_request(1, &req, 0, done, &o[0]), 0);
  assert_int_equal(sent->request->timeout_ms, 2500);
  assert_int_equal(mdp_relay_request(1, &req, 700, done, &o[1]), 0);
  assert_int_equal(sent->request->timeout_ms, 700);

  req.has_timeout_ms = 0;
  req.timeout_ms = 0;
  req.op_case = MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP;
  req.memory_dump = &md;
  assert_int_equal(mdp_relay_default_timeout_ms(&req), DUMP_TIMEOUT_MS);
  assert_int_equal(mdp_relay_request(1, &req, 0, done, &o[2]), 0);
  assert_int_equal(sent->request->timeout_ms, DUMP_TIMEOUT_MS);
  req.op_case = MEMDIAG__V1__REQUEST__OP_THREAD_DUMP;
  req.thread_dump = &td;
  assert_int_equal(mdp_relay_default_timeout_ms(&req), 60000);
  mdp_relay_worker_gone(1);
  assert_int_equal(o[0].calls + o[1].calls + o[2].calls, 3);
}

static void bad_arguments_are_refused_without_a_callback(void **state)
{
  outcome o = {0};

  (void)state;
  assert_int_equal(mdp_relay_request(1, NULL, 0, done, &o), -EINVAL);
  assert_int_equal(mdp_relay_request(1, &req, 0, NULL, &o), -EINVAL);
  mdp_loop_turn(loop, 0);
  assert_int_equal(o.calls, 0);
  assert_int_equal(sends, 0);
}

/* memdiag.c takes the loop away before freeing it: a late request (from a
 * thread that has not stopped yet) ends at once and touches no loop. */
static void without_a_loop_a_request_ends_at_once(void **state)
{
  outcome o = {0};

  (void)state;
  mdp_relay_init(NULL, NULL, DUMP_TIMEOUT_MS);
  assert_int_equal(mdp_relay_request(1, &req, 0, done, &o), -ESHUTDOWN);
  assert_int_equal(o.calls, 0); /* refused: never called back */
  assert_int_equal(sends, 0);
}

/* ------------------------------------------------ allocation failures */

/* The test binary is linked with --wrap=malloc,--wrap=calloc: allocations
 * made by the relay and the loop (not by protobuf-c or libc themselves)
 * can be made to fail. fail_at N: the Nth allocation from now fails, and
 * with fail_rest every one after it too. */
static volatile int fail_at, fail_rest, fail_count;
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);

static int should_fail(void)
{
  if(!fail_at || in_fake)
    return 0;
  fail_count++;
  return fail_count == fail_at || (fail_rest && fail_count > fail_at);
}

void *__wrap_malloc(size_t n) { return should_fail() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { return should_fail() ? NULL : __real_calloc(n, size); }

/* A caller that holds its own lock while asking, and a callback that takes
 * that lock (capture/run.c: send_step and on_reply): an error-checking
 * mutex says EDEADLK where the callback would deadlock. */
static pthread_mutex_t caller_lock;
static int inside_call;

typedef struct {
  outcome o;
  int lock_rc;
  int during_call;
} locked_outcome;

static void locked_done(const Memdiag__V1__Reply *r, void *arg)
{
  locked_outcome *lo = arg;

  lo->during_call = inside_call;
  lo->lock_rc = pthread_mutex_lock(&caller_lock);
  if(lo->lock_rc == 0)
    pthread_mutex_unlock(&caller_lock);
  done(r, &lo->o);
}

static void out_of_memory_never_calls_back_inside_the_request(void **state)
{
  pthread_mutexattr_t attr;
  unsigned answered = 0, refused = 0;

  (void)state;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
  pthread_mutex_init(&caller_lock, &attr);
  mdp_loop_turn(loop, 0);
  for(int rest = 0; rest <= 1; rest++) {
    for(int at = 1; at <= 6; at++) {
      locked_outcome lo = {0};
      int rc;

      send_rc = -ENOENT; /* ends without a worker: no reply to wait for */
      assert_int_equal(pthread_mutex_lock(&caller_lock), 0);
      inside_call = 1;
      fail_count = 0;
      fail_rest = rest;
      fail_at = at;
      rc = mdp_relay_request(3, &req, 0, locked_done, &lo);
      fail_at = 0;
      inside_call = 0;
      pthread_mutex_unlock(&caller_lock);
      if(rc != 0) {
        assert_int_equal(rc, -ENOMEM);
        mdp_loop_turn(loop, 0);
        assert_int_equal(lo.o.calls, 0);
        refused++;
        continue;
      }
      turn_until_done(&lo.o);
      assert_int_equal(lo.o.calls, 1);
      assert_int_equal(lo.during_call, 0);
      assert_int_equal(lo.lock_rc, 0);
      /* a made-up error (the timer could not be set) or the real outcome */
      assert_true(lo.o.status == MEMDIAG__V1__STATUS__STATUS_ERROR ||
                  lo.o.status == MEMDIAG__V1__STATUS__STATUS_UNKNOWN_CONNECTION);
      answered++;
    }
  }
  /* Both ways were taken: refused at once, and answered later. */
  assert_true(refused > 0);
  assert_true(answered > 0);
  pthread_mutex_destroy(&caller_lock);
  pthread_mutexattr_destroy(&attr);
}

/* A request made on another thread: its outcome and what the call
 * returned. */
typedef struct {
  outcome *o;
  int rc;
} thread_call;

/* The test thread becomes the loop's; fn asks from a thread of its own. */
static void call_from_thread(void *(*fn)(void *), thread_call *tc)
{
  pthread_t t;

  mdp_loop_turn(loop, 0);
  assert_int_equal(pthread_create(&t, NULL, fn, tc), 0);
  pthread_join(t, NULL);
}

/* From another thread out of memory is a refusal, never a callback on the
 * caller's thread. */

static void *request_without_memory(void *arg)
{
  thread_call *ot = arg;
  Memdiag__V1__Ping own_ping;
  Memdiag__V1__Request own = ping_request(&own_ping);

  for(int at = 1; at <= 3 && ot->rc == 0; at++) {
    fail_count = 0;
    fail_rest = 1;
    fail_at = at;
    ot->rc = mdp_relay_request(3, &own, 0, done, ot->o);
    fail_at = 0;
  }
  return NULL;
}

static void out_of_memory_from_another_thread_is_refused(void **state)
{
  outcome o = {0};
  thread_call ot = {.o = &o};

  (void)state;
  call_from_thread(request_without_memory, &ot);
  assert_int_equal(ot.rc, -ENOMEM);
  assert_int_equal(o.calls, 0);
  mdp_loop_turn(loop, 0);
  assert_int_equal(o.calls, 0);
}

/* From another thread the caller's request may be gone before the loop
 * runs: the relay carries a copy, sends it on the loop thread, and the
 * callback runs there. */
static void *request_from_thread(void *arg)
{
  thread_call *ft = arg;
  Memdiag__V1__Request *req = calloc(1, sizeof(*req));
  Memdiag__V1__MemoryDump *md = calloc(1, sizeof(*md));
  char *path = strdup("/var/tmp/heap.json");

  assert_true(req && md && path);
  memdiag__v1__request__init(req);
  memdiag__v1__memory_dump__init(md);
  md->path = path;
  req->op_case = MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP;
  req->memory_dump = md;
  ft->rc = mdp_relay_request(11, req, 0, done, ft->o);
  memset(path, 'x', strlen(path)); /* the caller's copy is gone */
  free(path);
  free(md);
  free(req);
  return NULL;
}

static void a_request_from_another_thread_is_copied_and_answered_on_the_loop(void **state)
{
  outcome o = {0};
  thread_call ft = {.o = &o};

  (void)state;
  call_from_thread(request_from_thread, &ft);
  assert_int_equal(ft.rc, 0);
  while(sends == 0)
    mdp_loop_turn(loop, -1);
  assert_int_equal(sent_to, 11);
  assert_int_equal(sent->request->op_case, MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP);
  assert_string_equal(sent->request->memory_dump->path, "/var/tmp/heap.json");
  worker_answers(11, sent->request->request_id, 5);
  assert_int_equal(o.calls, 1);
  assert_true(pthread_equal(o.thread, pthread_self()));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(a_reply_reaches_the_caller_matched_by_id_and_connection,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(no_such_worker_ends_with_unknown_connection_later, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_frame_the_server_cannot_send_ends_with_an_error, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_departing_worker_ends_its_own_requests_only, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_closing_connection_ends_through_worker_gone, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_silent_worker_times_out_once, setup, teardown),
      cmocka_unit_test_setup_teardown(shutdown_ends_what_is_pending_and_what_comes_later, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(timeouts_come_from_the_caller_the_request_or_the_operation,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(bad_arguments_are_refused_without_a_callback, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(without_a_loop_a_request_ends_at_once, setup, teardown),
      cmocka_unit_test_setup_teardown(out_of_memory_never_calls_back_inside_the_request, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(out_of_memory_from_another_thread_is_refused, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(
          a_request_from_another_thread_is_copied_and_answered_on_the_loop, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
