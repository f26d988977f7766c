/* memdiag plugin: the event loop (see loop.h). Tasks and timers live behind
 * one mutex so that any thread can add them; an eventfd wakes the poll. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "loop.h"

typedef mdp_loop_task task;

typedef struct timer {
  struct timer *next;
  uint64_t id;
  uint64_t due_ms;
  mdp_loop_fn fn, finalizer;
  void *arg;
} timer;

struct mdp_loop_watch {
  struct mdp_loop_watch *next;
  int fd;
  int removed; /* freed at the next safe point */
  mdp_loop_events_fn events;
  mdp_loop_io_fn ready;
  void *arg;
};

struct mdp_loop {
  int wake_fd;
  pthread_t owner;
  mdp_loop_hooks hooks;

  pthread_mutex_t lock; /* guards the fields down to `stop` */
  task *qhead, *qtail;
  timer *timers; /* by due time, then by insertion */
  uint64_t next_timer_id;
  int closed;
  int stop;

  /* Loop thread only. */
  mdp_loop_watch *watches;
  struct pollfd *pfd;
  mdp_loop_watch **pw;
  size_t pcap;
};

uint64_t mdp_loop_now_ms(void)
{
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int mdp_loop_new(mdp_loop **out)
{
  mdp_loop *l = calloc(1, sizeof(*l));

  *out = NULL;
  if(!l)
    return -ENOMEM;
  l->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if(l->wake_fd < 0) {
    int err = errno;
    free(l);
    return -err;
  }
  pthread_mutex_init(&l->lock, NULL);
  l->owner = pthread_self();
  l->next_timer_id = 1;
  *out = l;
  return 0;
}

void mdp_loop_free(mdp_loop *l)
{
  if(!l)
    return;
  mdp_loop_close(l);
  while(l->watches) {
    mdp_loop_watch *w = l->watches;
    l->watches = w->next;
    free(w);
  }
  free(l->pfd);
  free(l->pw);
  close(l->wake_fd);
  pthread_mutex_destroy(&l->lock);
  free(l);
}

void mdp_loop_set_hooks(mdp_loop *l, const mdp_loop_hooks *hooks) { l->hooks = *hooks; }

static void wake(mdp_loop *l)
{
  uint64_t one = 1;
  ssize_t n = write(l->wake_fd, &one, sizeof(one));
  (void)n; /* the counter saturating still leaves the loop woken */
}

int mdp_loop_on_thread(mdp_loop *l)
{
  int on;

  pthread_mutex_lock(&l->lock);
  on = !l->closed && pthread_equal(pthread_self(), l->owner);
  pthread_mutex_unlock(&l->lock);
  return on;
}

/* ------------------------------------------------------------ tasks */

static int enqueue(mdp_loop *l, task *t)
{
  int rc = 0;

  pthread_mutex_lock(&l->lock);
  if(l->closed) {
    rc = -ESHUTDOWN;
  } else {
    if(l->qtail)
      l->qtail->next = t;
    else
      l->qhead = t;
    l->qtail = t;
  }
  pthread_mutex_unlock(&l->lock);
  if(rc == 0)
    wake(l);
  return rc;
}

int mdp_loop_post(mdp_loop *l, mdp_loop_fn fn, void *arg)
{
  task *t = malloc(sizeof(*t));
  int rc;

  if(!t)
    return -ENOMEM;
  t->fn = fn;
  t->arg = arg;
  t->next = NULL;
  t->loop_owned = 1;
  rc = enqueue(l, t);
  if(rc)
    free(t);
  return rc;
}

int mdp_loop_post_task(mdp_loop *l, mdp_loop_task *t, mdp_loop_fn fn, void *arg)
{
  t->fn = fn;
  t->arg = arg;
  t->next = NULL;
  t->loop_owned = 0;
  return enqueue(l, t);
}

/* Runs what was queued when called; tasks posted meanwhile wait for the
 * next round so that a task re-posting itself cannot starve the loop. */
unsigned mdp_loop_run_tasks(mdp_loop *l)
{
  task *t;
  unsigned n = 0;

  pthread_mutex_lock(&l->lock);
  t = l->qhead;
  l->qhead = l->qtail = NULL;
  pthread_mutex_unlock(&l->lock);
  while(t) {
    task *next = t->next;
    int owned = t->loop_owned; /* a caller's node may be freed by its fn */
    t->fn(t->arg);
    if(owned)
      free(t);
    t = next;
    n++;
  }
  return n;
}

/* ------------------------------------------------------------ timers */

uint64_t mdp_loop_timer_add(mdp_loop *l, uint64_t delay_ms, mdp_loop_fn fn, mdp_loop_fn finalizer,
                            void *arg)
{
  timer *t = calloc(1, sizeof(*t));
  uint64_t id = 0;

  if(!t)
    return 0;
  t->due_ms = mdp_loop_now_ms() + delay_ms;
  t->fn = fn;
  t->finalizer = finalizer;
  t->arg = arg;
  pthread_mutex_lock(&l->lock);
  if(!l->closed) {
    timer **pp = &l->timers;
    while(*pp && (*pp)->due_ms <= t->due_ms)
      pp = &(*pp)->next;
    t->next = *pp;
    *pp = t;
    id = t->id = l->next_timer_id++;
  }
  pthread_mutex_unlock(&l->lock);
  if(!id) {
    free(t);
    return 0;
  }
  wake(l); /* the loop may sleep past the new due time */
  return id;
}

int mdp_loop_timer_cancel(mdp_loop *l, uint64_t id)
{
  timer *t = NULL;

  pthread_mutex_lock(&l->lock);
  for(timer **pp = &l->timers; *pp; pp = &(*pp)->next) {
    if((*pp)->id == id) {
      t = *pp;
      *pp = t->next;
      break;
    }
  }
  pthread_mutex_unlock(&l->lock);
  if(!t)
    return -ENOENT;
  if(t->finalizer)
    t->finalizer(t->arg);
  free(t);
  return 0;
}

/* The next due time, or 0 when no timer is left. */
static uint64_t next_due(mdp_loop *l)
{
  uint64_t next;

  pthread_mutex_lock(&l->lock);
  next = l->timers ? l->timers->due_ms : 0;
  pthread_mutex_unlock(&l->lock);
  return next;
}

/* Runs the timers due at `now`, one at a time so that a callback may add or
 * cancel timers; those it adds run on a later turn at the earliest. */
static void run_timers(mdp_loop *l, uint64_t now)
{
  for(;;) {
    timer *t = NULL;

    pthread_mutex_lock(&l->lock);
    if(l->timers && l->timers->due_ms <= now) {
      t = l->timers;
      l->timers = t->next;
    }
    pthread_mutex_unlock(&l->lock);
    if(!t)
      return;
    t->fn(t->arg);
    free(t);
  }
}

/* ------------------------------------------------------------ watches */

mdp_loop_watch *mdp_loop_watch_add(mdp_loop *l, int fd, mdp_loop_events_fn events,
                                   mdp_loop_io_fn ready, void *arg)
{
  mdp_loop_watch *w = calloc(1, sizeof(*w));

  if(!w)
    return NULL;
  w->fd = fd;
  w->events = events;
  w->ready = ready;
  w->arg = arg;
  w->next = l->watches;
  l->watches = w;
  return w;
}

void mdp_loop_watch_remove(mdp_loop *l, mdp_loop_watch *w)
{
  (void)l;
  if(w)
    w->removed = 1;
}

/* Free removed watches; never while this turn's array points at them. */
static void reap_watches(mdp_loop *l)
{
  mdp_loop_watch **pp = &l->watches;

  while(*pp) {
    mdp_loop_watch *w = *pp;
    if(w->removed) {
      *pp = w->next;
      free(w);
    } else {
      pp = &w->next;
    }
  }
}

static int grow(mdp_loop *l, size_t need)
{
  size_t cap = need * 2;
  struct pollfd *np;
  mdp_loop_watch **nw;

  if(need <= l->pcap)
    return 0;
  np = realloc(l->pfd, cap * sizeof(*np));
  if(!np)
    return -ENOMEM;
  l->pfd = np;
  nw = realloc(l->pw, cap * sizeof(*nw));
  if(!nw)
    return -ENOMEM;
  l->pw = nw;
  l->pcap = cap;
  return 0;
}

static void report(mdp_loop *l, const char *what, int err)
{
  if(l->hooks.error)
    l->hooks.error(what, err, l->hooks.arg);
  sleep(1);
}

/* ------------------------------------------------------------ turning */

void mdp_loop_turn(mdp_loop *l, int max_wait_ms)
{
  uint64_t now = mdp_loop_now_ms();
  uint64_t next_timer = next_due(l);
  size_t n = 1, count = 1;
  int wait = max_wait_ms;
  int ready;

  reap_watches(l);
  for(mdp_loop_watch *w = l->watches; w; w = w->next)
    count++;
  if(grow(l, count) != 0) {
    report(l, "realloc", ENOMEM);
    return;
  }
  l->pfd[0] = (struct pollfd){.fd = l->wake_fd, .events = POLLIN};
  for(mdp_loop_watch *w = l->watches; w; w = w->next) {
    int ev = w->events(w->arg);
    if(ev < 0)
      continue;
    l->pfd[n] = (struct pollfd){.fd = w->fd, .events = (short)ev};
    l->pw[n++] = w;
  }
  if(next_timer) {
    uint64_t until = next_timer > now ? next_timer - now : 0;
    if(wait < 0 || until < (uint64_t)wait)
      wait = (int)until;
  }
  ready = poll(l->pfd, n, wait);
  if(ready < 0 && errno != EINTR) {
    report(l, "poll", errno);
    return;
  }
  if(ready > 0 && (l->pfd[0].revents & POLLIN)) {
    uint64_t v;
    ssize_t r = read(l->wake_fd, &v, sizeof(v));
    (void)r;
  }
  for(size_t i = 1; ready > 0 && i < n; i++)
    if(l->pfd[i].revents && !l->pw[i]->removed)
      l->pw[i]->ready(l->pfd[i].revents, l->pw[i]->arg);
  run_timers(l, mdp_loop_now_ms());
  mdp_loop_run_tasks(l);
  if(l->hooks.before_sleep)
    l->hooks.before_sleep(l->hooks.arg);
}

void mdp_loop_run(mdp_loop *l)
{
  pthread_mutex_lock(&l->lock);
  l->owner = pthread_self();
  pthread_mutex_unlock(&l->lock);
  for(;;) {
    int stop;

    pthread_mutex_lock(&l->lock);
    stop = l->stop;
    pthread_mutex_unlock(&l->lock);
    if(stop)
      break;
    mdp_loop_turn(l, -1);
  }
}

void mdp_loop_stop(mdp_loop *l)
{
  pthread_mutex_lock(&l->lock);
  l->stop = 1;
  pthread_mutex_unlock(&l->lock);
  wake(l);
}

void mdp_loop_close(mdp_loop *l)
{
  timer *timers;

  pthread_mutex_lock(&l->lock);
  l->closed = 1;
  timers = l->timers;
  l->timers = NULL;
  pthread_mutex_unlock(&l->lock);
  mdp_loop_run_tasks(l);
  while(timers) {
    timer *t = timers;
    timers = t->next;
    if(t->finalizer)
      t->finalizer(t->arg);
    free(t);
  }
}
