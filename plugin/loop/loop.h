/* memdiag plugin: an event loop (prefix mdp_loop_).
 *
 * One thread runs the loop; it polls registered descriptors, runs tasks
 * posted from any thread and one-shot timers. The loop knows nothing of its
 * users: no protocol, no workers, no logging of its own (errors go to the
 * error hook).
 *
 * Threading: mdp_loop_post, mdp_loop_post_task, mdp_loop_timer_add, mdp_loop_timer_cancel,
 * mdp_loop_stop and mdp_loop_on_thread may be called from any thread. The
 * watch functions, mdp_loop_turn, mdp_loop_run, mdp_loop_run_tasks and
 * mdp_loop_close belong to the loop's thread (the thread that created the
 * loop until mdp_loop_run is called, then the thread running it). Callbacks
 * run on the loop's thread, never inside the call that registered them, and
 * never while the loop holds its lock: a callback may call any mdp_loop_*
 * function.
 *
 * Ownership: the caller owns the loop (mdp_loop_new / mdp_loop_free). A
 * task's `arg` stays the caller's: the loop never frees it. A timer's `arg`
 * is handed to the timer: exactly one of its fn or its finalizer runs, once
 * (fn when the timer is due; the finalizer when it is cancelled or the loop
 * closes first), and whichever runs owns `arg` from then on. A NULL
 * finalizer means there is nothing to release. A watch's `arg` is borrowed.
 */
#ifndef MDP_LOOP_H
#define MDP_LOOP_H

#include <stdint.h>

typedef struct mdp_loop mdp_loop;
typedef struct mdp_loop_watch mdp_loop_watch;

typedef void (*mdp_loop_fn)(void *arg);

/* The poll() events wanted from a watched descriptor this turn (POLLIN,
 * POLLOUT; 0 still reports errors and hang-ups); a negative value leaves it
 * out of this turn's poll. */
typedef int (*mdp_loop_events_fn)(void *arg);
/* The descriptor is ready: revents as poll() returned them. */
typedef void (*mdp_loop_io_fn)(short revents, void *arg);

typedef struct mdp_loop_hooks {
  /* Runs once per turn, after the turn's events and tasks, before the loop
   * sleeps again (redis calls it beforesleep). May be NULL. */
  mdp_loop_fn before_sleep;
  /* poll() failed or memory ran out; the loop waits a second and goes on.
   * `what` names the call, err is an errno value. May be NULL. */
  void (*error)(const char *what, int err, void *arg);
  void *arg;
} mdp_loop_hooks;

/* A new loop, accepting tasks and timers at once (they run once the loop
 * turns). Returns 0 or a negative errno (-ENOMEM, eventfd's errno). */
int mdp_loop_new(mdp_loop **out);

/* Free a loop that is not running. Calls mdp_loop_close first if it was
 * not called. Watches still registered are freed (their arg is not). */
void mdp_loop_free(mdp_loop *loop);

void mdp_loop_set_hooks(mdp_loop *loop, const mdp_loop_hooks *hooks);

/* Run fn(arg) on the loop thread soon (FIFO). Returns 0, or -ENOMEM or
 * -ESHUTDOWN (the loop is closed): then fn is not called. */
int mdp_loop_post(mdp_loop *loop, mdp_loop_fn fn, void *arg);

/* A task node kept by the caller, for work that must reach the loop even
 * when memory has run out (a reply callback that is owed). Its fields are
 * the loop's from mdp_loop_post_task until fn starts; fn may free it. */
typedef struct mdp_loop_task {
  struct mdp_loop_task *next;
  mdp_loop_fn fn;
  void *arg;
  int loop_owned; /* 1: allocated by mdp_loop_post, freed after fn */
} mdp_loop_task;

/* As mdp_loop_post with the caller's node: it allocates nothing, so it
 * fails only with -ESHUTDOWN (the loop is closed; fn is not called). */
int mdp_loop_post_task(mdp_loop *loop, mdp_loop_task *t, mdp_loop_fn fn, void *arg);

/* One-shot timer: fn(arg) runs on the loop thread after delay_ms. Returns a
 * timer id (never 0), or 0 when the loop is closed or memory ran out: then
 * neither fn nor finalizer runs and the caller keeps arg. */
uint64_t mdp_loop_timer_add(mdp_loop *loop, uint64_t delay_ms, mdp_loop_fn fn,
                            mdp_loop_fn finalizer, void *arg);

/* Cancel a timer that has not run: its finalizer runs (on the calling
 * thread, before this returns) and fn never will. Returns 0, or -ENOENT when
 * it already ran, is running, was cancelled or never existed. */
int mdp_loop_timer_cancel(mdp_loop *loop, uint64_t timer_id);

/* Watch a descriptor (loop thread). events() is asked each turn which
 * events to poll for; ready() runs when some occurred. Watches are polled
 * and served newest first. Returns the watch, or NULL (out of memory). */
mdp_loop_watch *mdp_loop_watch_add(mdp_loop *loop, int fd, mdp_loop_events_fn events,
                                   mdp_loop_io_fn ready, void *arg);

/* Stop watching (loop thread, also from inside a ready() callback): no
 * callback of this watch runs afterwards. The descriptor is not closed. */
void mdp_loop_watch_remove(mdp_loop *loop, mdp_loop_watch *w);

/* One turn: poll (waiting at most max_wait_ms, or until the next timer is
 * due or a post wakes it; -1 waits without limit), serve ready descriptors,
 * run the timers due, then the tasks posted so far, then the before_sleep
 * hook. */
void mdp_loop_turn(mdp_loop *loop, int max_wait_ms);

/* Turn until mdp_loop_stop; the calling thread becomes the loop thread. */
void mdp_loop_run(mdp_loop *loop);

/* Ask mdp_loop_run to return after its current turn (any thread). */
void mdp_loop_stop(mdp_loop *loop);

/* Run the tasks queued now (not those they post). Returns how many ran. */
unsigned mdp_loop_run_tasks(mdp_loop *loop);

/* Stop accepting tasks and timers, run the tasks already queued, and drop
 * the timers not yet due, running their finalizers. Watches stay. */
void mdp_loop_close(mdp_loop *loop);

/* 1 when called on the loop thread of a loop that is not closed. */
int mdp_loop_on_thread(mdp_loop *loop);

/* Milliseconds of a monotonic clock, the one timers use. */
uint64_t mdp_loop_now_ms(void);

#endif
