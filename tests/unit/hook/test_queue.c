/* The hook's two queues: requests in a fixed ring (full means refused, not
 * grown), replies in a list; both emptied when a connection ends. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "internal.h"

static mdh_hook *hook_with_capacity(unsigned cap)
{
  mdh_hook *h = calloc(1, sizeof(*h));
  assert_non_null(h);
  h->queue_capacity = cap;
  h->reqs = calloc(cap, sizeof(*h->reqs));
  assert_non_null(h->reqs);
  return h;
}

static void hook_free(mdh_hook *h)
{
  unsigned a, b;
  mdh_queue_drop_all(h, &a, &b);
  free(h->reqs);
  free(h);
}

static mdh_request request(uint64_t id, const char *path)
{
  mdh_request r;
  memset(&r, 0, sizeof(r));
  r.id = id;
  r.op = MDH_OP_MEMORY_DUMP;
  r.path = path ? strdup(path) : NULL;
  return r;
}

static mdh_reply_node *reply_node(uint64_t id)
{
  mdh_reply_node *n = calloc(1, sizeof(*n));
  assert_non_null(n);
  n->frame = mdh_reply_frame_error(id, MDH_STATUS_ERROR, "x");
  assert_non_null(n->frame);
  return n;
}

static void fifo_across_the_ring_edge(void **state)
{
  mdh_hook *h = hook_with_capacity(3);
  mdh_request r, out;
  uint64_t next_out = 1;

  (void)state;
  /* Keep the ring nearly full while the head walks round it three times. */
  for(uint64_t id = 1; id <= 10; id++) {
    r = request(id, "a.json");
    assert_int_equal(mdh_queue_push_request(h, &r), MDH_OK);
    /* Ownership moved into the queue: the caller's copy is emptied. */
    assert_null(r.path);
    assert_int_equal(r.id, 0);
    if(id >= 3) { /* two waiting, a third in the last free slot */
      assert_int_equal(mdh_queue_pop_request(h, &out), MDH_OK);
      assert_int_equal(out.id, next_out++);
      assert_string_equal(out.path, "a.json");
      mdh_request_clear(&out);
    }
  }
  while(mdh_queue_pop_request(h, &out) == MDH_OK) {
    assert_int_equal(out.id, next_out++);
    mdh_request_clear(&out);
  }
  assert_int_equal(next_out, 11);
  assert_int_equal(h->req_n, 0);
  hook_free(h);
}

static void full_ring_refuses_and_keeps_the_request(void **state)
{
  mdh_hook *h = hook_with_capacity(2);
  mdh_request r, out;

  (void)state;
  for(uint64_t id = 1; id <= 2; id++) {
    r = request(id, NULL);
    assert_int_equal(mdh_queue_push_request(h, &r), MDH_OK);
  }
  r = request(3, "kept.json");
  assert_int_equal(mdh_queue_push_request(h, &r), MDH_ENOMEM);
  /* Refused: still the caller's, untouched, for it to answer and free. */
  assert_int_equal(r.id, 3);
  assert_string_equal(r.path, "kept.json");
  mdh_request_clear(&r);
  assert_int_equal(mdh_queue_pop_request(h, &out), MDH_OK);
  assert_int_equal(out.id, 1);
  hook_free(h);
}

static void empty_pop_times_out(void **state)
{
  mdh_hook *h = hook_with_capacity(1);
  mdh_request out;

  (void)state;
  memset(&out, 0x5a, sizeof(out));
  assert_int_equal(mdh_queue_pop_request(h, &out), MDH_ETIMEDOUT);
  hook_free(h);
}

static void replies_keep_their_order(void **state)
{
  mdh_hook *h = hook_with_capacity(1);
  mdh_reply_node *taken;

  (void)state;
  assert_null(mdh_queue_take_replies(h));
  for(uint64_t id = 1; id <= 3; id++)
    mdh_queue_push_reply(h, reply_node(id));
  taken = mdh_queue_take_replies(h);
  assert_int_equal(mdh_reply_nodes_count(taken), 3);
  assert_int_equal(taken->frame->reply->request_id, 1);
  assert_int_equal(taken->next->next->frame->reply->request_id, 3);
  assert_null(mdh_queue_take_replies(h));
  /* The list is reusable after a take. */
  mdh_queue_push_reply(h, reply_node(4));
  assert_int_equal(mdh_reply_nodes_count(h->replies), 1);
  mdh_reply_nodes_free(taken);
  hook_free(h);
}

static void drop_all_counts_what_it_drops(void **state)
{
  mdh_hook *h = hook_with_capacity(4);
  mdh_request r, out;
  unsigned reqs = 99, reps = 99;

  (void)state;
  for(uint64_t id = 1; id <= 3; id++) {
    r = request(id, "p.json");
    assert_int_equal(mdh_queue_push_request(h, &r), MDH_OK);
  }
  mdh_queue_push_reply(h, reply_node(7));
  mdh_queue_push_reply(h, reply_node(8));
  mdh_queue_drop_all(h, &reqs, &reps);
  assert_int_equal(reqs, 3);
  assert_int_equal(reps, 2);
  assert_int_equal(mdh_queue_pop_request(h, &out), MDH_ETIMEDOUT);
  assert_null(mdh_queue_take_replies(h));
  mdh_queue_drop_all(h, &reqs, &reps);
  assert_int_equal(reqs, 0);
  assert_int_equal(reps, 0);
  hook_free(h);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(fifo_across_the_ring_edge),
      cmocka_unit_test(full_ring_refuses_and_keeps_the_request),
      cmocka_unit_test(empty_pop_times_out),
      cmocka_unit_test(replies_keep_their_order),
      cmocka_unit_test(drop_all_counts_what_it_drops),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
