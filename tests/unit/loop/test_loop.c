/* Unit tests for plugin/loop: tasks, timers and their finalizers, watches,
 * hooks, and waking a loop from another thread. Nothing here waits on a
 * clock for its verdict: a loop that failed to wake would hang, and ctest's
 * TIMEOUT turns that into a failure. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "loop/loop.h"

/* What ran, in order: each callback appends its tag. */
static char trail[64];

static void mark(char tag)
{
  size_t n = strlen(trail);
  assert_true(n + 1 < sizeof(trail));
  trail[n] = tag;
  trail[n + 1] = '\0';
}

static void task_mark(void *arg) { mark(*(const char *)arg); }

static void timer_fn(void *arg)
{
  char *tag = arg;
  mark(*tag);
  free(tag);
}

static void finalizer_fn(void *arg)
{
  char *tag = arg;
  mark((char)(*tag - 'a' + 'A')); /* finalizers leave upper case */
  free(tag);
}

static char *tag(char c)
{
  char *t = malloc(1);
  assert_non_null(t);
  *t = c;
  return t;
}

static int setup(void **state)
{
  mdp_loop *l;
  trail[0] = '\0';
  assert_int_equal(mdp_loop_new(&l), 0);
  *state = l;
  return 0;
}

static int teardown(void **state)
{
  mdp_loop_free(*state);
  return 0;
}

static void tasks_run_in_order_on_the_next_turn(void **state)
{
  mdp_loop *l = *state;
  static const char a = 'a', b = 'b';

  assert_int_equal(mdp_loop_post(l, task_mark, (void *)&a), 0);
  assert_int_equal(mdp_loop_post(l, task_mark, (void *)&b), 0);
  assert_string_equal(trail, ""); /* never inside the call */
  mdp_loop_turn(l, 0);
  assert_string_equal(trail, "ab");
  mdp_loop_turn(l, 0);
  assert_string_equal(trail, "ab"); /* each ran once */
}

/* A node the caller keeps (mdp_loop_post_task): queued in order with the
 * others, run once, and its fn may free it; a closed loop refuses it. */
typedef struct {
  mdp_loop_task node;
  char tag;
} own_task;

static void own_task_run(void *arg)
{
  own_task *t = arg;
  mark(t->tag);
  free(t);
}

static void a_task_in_the_callers_node_runs_once_in_order(void **state)
{
  mdp_loop *l = *state;
  static const char a = 'a';
  own_task *t = calloc(1, sizeof(*t));
  own_task late = {.tag = 'x'};

  assert_non_null(t);
  t->tag = 'n';
  assert_int_equal(mdp_loop_post(l, task_mark, (void *)&a), 0);
  assert_int_equal(mdp_loop_post_task(l, &t->node, own_task_run, t), 0);
  assert_string_equal(trail, "");
  mdp_loop_turn(l, 0);
  assert_string_equal(trail, "an");
  mdp_loop_turn(l, 0);
  assert_string_equal(trail, "an");
  mdp_loop_close(l);
  assert_int_equal(mdp_loop_post_task(l, &late.node, task_mark, &late.tag), -ESHUTDOWN);
  assert_string_equal(trail, "an");
}

static mdp_loop *repost_loop;
static int reposts;

static void repost(void *arg)
{
  mark('r');
  if(++reposts < 3)
    assert_int_equal(mdp_loop_post(repost_loop, repost, arg), 0);
}

static void a_task_posting_itself_waits_for_the_next_turn(void **state)
{
  repost_loop = *state;
  reposts = 0;
  assert_int_equal(mdp_loop_post(repost_loop, repost, NULL), 0);
  mdp_loop_turn(repost_loop, 0);
  assert_string_equal(trail, "r");
  mdp_loop_turn(repost_loop, 0);
  mdp_loop_turn(repost_loop, 0);
  assert_string_equal(trail, "rrr");
}

/* Turn until the trail is `want` long; a timer that never fires hangs. */
static void turn_until(mdp_loop *l, size_t want)
{
  while(strlen(trail) < want)
    mdp_loop_turn(l, -1);
}

static void timers_fire_in_due_order_and_fn_owns_the_data(void **state)
{
  mdp_loop *l = *state;

  assert_true(mdp_loop_timer_add(l, 30, timer_fn, finalizer_fn, tag('c')) != 0);
  assert_true(mdp_loop_timer_add(l, 0, timer_fn, finalizer_fn, tag('a')) != 0);
  assert_true(mdp_loop_timer_add(l, 10, timer_fn, finalizer_fn, tag('b')) != 0);
  turn_until(l, 3);
  assert_string_equal(trail, "abc"); /* no finalizer ran: fn freed each tag */
}

static void cancel_runs_the_finalizer_and_never_fn(void **state)
{
  mdp_loop *l = *state;
  uint64_t keep = mdp_loop_timer_add(l, 0, timer_fn, finalizer_fn, tag('k'));
  uint64_t gone = mdp_loop_timer_add(l, 0, timer_fn, finalizer_fn, tag('g'));

  assert_true(keep != 0 && gone != 0 && keep != gone);
  assert_int_equal(mdp_loop_timer_cancel(l, gone), 0);
  assert_string_equal(trail, "G"); /* at once, on the cancelling thread */
  assert_int_equal(mdp_loop_timer_cancel(l, gone), -ENOENT);
  turn_until(l, 2);
  assert_string_equal(trail, "Gk");
  assert_int_equal(mdp_loop_timer_cancel(l, keep), -ENOENT); /* already ran */
  assert_int_equal(mdp_loop_timer_cancel(l, 12345), -ENOENT);
}

static void close_finalizes_timers_runs_queued_tasks_and_refuses_more(void **state)
{
  mdp_loop *l = *state;
  static const char t = 't';
  uint64_t never = mdp_loop_timer_add(l, 3600000, timer_fn, finalizer_fn, tag('x'));

  assert_true(never != 0);
  assert_true(mdp_loop_timer_add(l, 3600000, timer_fn, NULL, NULL) != 0); /* nothing to free */
  assert_int_equal(mdp_loop_post(l, task_mark, (void *)&t), 0);
  mdp_loop_close(l);
  assert_string_equal(trail, "tX");
  assert_int_equal(mdp_loop_post(l, task_mark, (void *)&t), -ESHUTDOWN);
  assert_int_equal(mdp_loop_timer_add(l, 0, timer_fn, finalizer_fn, (void *)&t), 0);
  assert_int_equal(mdp_loop_timer_cancel(l, never), -ENOENT);
  assert_false(mdp_loop_on_thread(l));
  assert_string_equal(trail, "tX"); /* refused: neither fn nor finalizer ran */
}

static void free_finalizes_what_is_left(void **state)
{
  mdp_loop *l = *state;

  assert_true(mdp_loop_timer_add(l, 3600000, timer_fn, finalizer_fn, tag('y')) != 0);
  mdp_loop_free(l);
  *state = NULL;
  assert_string_equal(trail, "Y");
}

/* ------------------------------------------------------------ watches */

typedef struct {
  mdp_loop *loop;
  mdp_loop_watch *w;
  int fd;
  int want; /* what events() answers */
  int ready_calls;
  short revents;
  int remove_in_ready;
} pipe_watch;

static int pw_events(void *arg) { return ((pipe_watch *)arg)->want; }

static void pw_ready(short revents, void *arg)
{
  pipe_watch *p = arg;
  char buf[16];
  ssize_t n = read(p->fd, buf, sizeof(buf));
  (void)n;
  p->ready_calls++;
  p->revents = revents;
  if(p->remove_in_ready)
    mdp_loop_watch_remove(p->loop, p->w);
}

static void a_watched_descriptor_is_served_when_ready(void **state)
{
  mdp_loop *l = *state;
  int fds[2];
  pipe_watch p = {.loop = l, .want = POLLIN};

  assert_int_equal(pipe(fds), 0);
  p.fd = fds[0];
  p.w = mdp_loop_watch_add(l, fds[0], pw_events, pw_ready, &p);
  assert_non_null(p.w);
  mdp_loop_turn(l, 0);
  assert_int_equal(p.ready_calls, 0); /* nothing to read yet */
  assert_int_equal(write(fds[1], "x", 1), 1);
  mdp_loop_turn(l, -1);
  assert_int_equal(p.ready_calls, 1);
  assert_true(p.revents & POLLIN);

  /* Left out of the poll: ready data does not call it. */
  p.want = -1;
  assert_int_equal(write(fds[1], "x", 1), 1);
  mdp_loop_turn(l, 0);
  assert_int_equal(p.ready_calls, 1);

  /* Removed from inside its own callback: never called again. */
  p.want = POLLIN;
  p.remove_in_ready = 1;
  mdp_loop_turn(l, -1);
  assert_int_equal(p.ready_calls, 2);
  assert_int_equal(write(fds[1], "x", 1), 1);
  mdp_loop_turn(l, 0);
  mdp_loop_turn(l, 0);
  assert_int_equal(p.ready_calls, 2);
  close(fds[0]);
  close(fds[1]);
}

static void a_hang_up_is_reported_with_no_events_asked(void **state)
{
  mdp_loop *l = *state;
  int fds[2];
  pipe_watch p = {.loop = l, .want = 0};

  assert_int_equal(pipe(fds), 0);
  p.fd = fds[0];
  p.w = mdp_loop_watch_add(l, fds[0], pw_events, pw_ready, &p);
  close(fds[1]);
  mdp_loop_turn(l, -1);
  assert_int_equal(p.ready_calls, 1);
  assert_true(p.revents & POLLHUP);
  mdp_loop_watch_remove(l, p.w);
  close(fds[0]);
}

static int sleeps;
static void count_sleep(void *arg)
{
  (void)arg;
  sleeps++;
}

static void before_sleep_runs_once_per_turn_after_tasks(void **state)
{
  mdp_loop *l = *state;
  mdp_loop_hooks h = {.before_sleep = count_sleep};
  static const char a = 'a';

  sleeps = 0;
  mdp_loop_set_hooks(l, &h);
  assert_int_equal(mdp_loop_post(l, task_mark, (void *)&a), 0);
  mdp_loop_turn(l, 0);
  mdp_loop_turn(l, 0);
  assert_int_equal(sleeps, 2);
  assert_string_equal(trail, "a");
}

/* ------------------------------------------------------------ threads */

typedef struct {
  mdp_loop *loop;
  int on_thread_there;
} other;

static void *check_from_other(void *arg)
{
  other *o = arg;
  o->on_thread_there = mdp_loop_on_thread(o->loop);
  return NULL;
}

static void stop_task(void *arg) { mdp_loop_stop(arg); }

static void *runner(void *arg)
{
  mdp_loop_run(arg);
  return NULL;
}

static void on_thread_is_the_turning_thread_only(void **state)
{
  mdp_loop *l = *state;
  other o = {.loop = l};
  pthread_t t;

  mdp_loop_turn(l, 0);
  assert_true(mdp_loop_on_thread(l));
  assert_int_equal(pthread_create(&t, NULL, check_from_other, &o), 0);
  pthread_join(t, NULL);
  assert_false(o.on_thread_there);
}

static void a_post_from_another_thread_wakes_a_running_loop(void **state)
{
  mdp_loop *l = *state;
  pthread_t t;

  /* The loop sleeps without limit: only the wake-up gets the task run, and
   * the task stops the loop, so a missing wake-up hangs the test. */
  assert_int_equal(pthread_create(&t, NULL, runner, l), 0);
  assert_int_equal(mdp_loop_post(l, stop_task, l), 0);
  pthread_join(t, NULL);
  assert_false(mdp_loop_on_thread(l)); /* this is not the loop's thread */
}

static void *stopper(void *arg)
{
  mdp_loop_stop(arg);
  return NULL;
}

static void stop_from_another_thread_ends_run(void **state)
{
  mdp_loop *l = *state;
  pthread_t t;

  assert_int_equal(pthread_create(&t, NULL, stopper, l), 0);
  mdp_loop_run(l); /* returns once the other thread asked */
  pthread_join(t, NULL);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(tasks_run_in_order_on_the_next_turn, setup, teardown),
      cmocka_unit_test_setup_teardown(a_task_in_the_callers_node_runs_once_in_order, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_task_posting_itself_waits_for_the_next_turn, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(timers_fire_in_due_order_and_fn_owns_the_data, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(cancel_runs_the_finalizer_and_never_fn, setup, teardown),
      cmocka_unit_test_setup_teardown(close_finalizes_timers_runs_queued_tasks_and_refuses_more,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(free_finalizes_what_is_left, setup, teardown),
      cmocka_unit_test_setup_teardown(a_watched_descriptor_is_served_when_ready, setup, teardown),
      cmocka_unit_test_setup_teardown(a_hang_up_is_reported_with_no_events_asked, setup, teardown),
      cmocka_unit_test_setup_teardown(before_sleep_runs_once_per_turn_after_tasks, setup, teardown),
      cmocka_unit_test_setup_teardown(on_thread_is_the_turning_thread_only, setup, teardown),
      cmocka_unit_test_setup_teardown(a_post_from_another_thread_wakes_a_running_loop, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(stop_from_another_thread_ends_run, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
