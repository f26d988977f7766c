/* memdiag plugin: requests in flight to workers, their timeouts and replies. */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md/text.h"
#include "relay.h"
#include "rstream.h"

/* A ping or a start/stop toggle answers in moments; a heap dump of a large
 * busy worker may take minutes. The plugin waits a little longer than it
 * tells the worker so that the worker's own timeout reply can arrive. */
#define QUICK_TIMEOUT_MS       10000u
#define INLINE_DUMP_TIMEOUT_MS 60000u
#define GRACE_MS               1000u
/* After the plugin cancels a stream (its budget, a failed store) a worker
 * that obeys answers within moments; one that keeps streaming is not
 * waited for beyond this (RestartDeadline still added: a restart must not
 * signal a worker that may still be writing). */
#define CANCEL_GRACE_MS        5000u

typedef struct pending {
  struct pending *next;
  uint64_t request_id;
  uint64_t connection_id;
  uint64_t timer_id; /* its timeout; 0 once it fired */
  uint64_t due_ms;   /* when it fires (mdp_loop_now_ms) */
  uint32_t extra_ms; /* mdp_relay_opts.extra_ms */
  int cancelled;     /* its stream was cancelled: timer_id is the grace */
  mdp_reply_fn done;
  void *arg;
  Memdiag__V1__Status status; /* for replies the relay makes up */
  char error[200];
  mdp_rstream *rs; /* the result is stored by the plugin (rstream.h), or NULL */
  /* Its own node for ending it later: a reply made up by the relay reaches
   * the loop without allocating, so running out of memory never makes the
   * relay call back inside the call that registered the callback (where
   * the caller may hold a lock its callback takes). */
  mdp_loop_task later;
} pending;

static mdp_loop *loop;
static mdp_relay_send_fn send_frame;
static pending *in_flight;
static uint64_t next_request_id = 1;
static uint32_t dump_timeout_ms = 600000;
static int shutting_down;
static uint64_t late_replies; /* Replies to requests already ended */

static void stream_cancelled(mdp_rstream_key key);

void mdp_relay_init(mdp_loop *l, mdp_relay_send_fn send, uint32_t dump_ms)
{
  loop = l;
  send_frame = send;
  dump_timeout_ms = dump_ms;
  shutting_down = 0;
  mdp_rstream_on_cancel(l ? stream_cancelled : NULL);
}

uint32_t mdp_relay_default_timeout_ms(const Memdiag__V1__Request *req)
{
  switch(req->op_case) {
  case MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP:
  case MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_STOP: return dump_timeout_ms;
  case MEMDIAG__V1__REQUEST__OP_HEAP_PROFILE:
  case MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_STOP:
  case MEMDIAG__V1__REQUEST__OP_SCHEDULER_DUMP:
  case MEMDIAG__V1__REQUEST__OP_THREAD_DUMP: return INLINE_DUMP_TIMEOUT_MS;
  default: return QUICK_TIMEOUT_MS;
  }
}

static void finish(pending *p, const Memdiag__V1__Reply *from_worker)
{
  Memdiag__V1__Reply made = MEMDIAG__V1__REPLY__INIT;

  if(p->timer_id)
    mdp_loop_timer_cancel(loop, p->timer_id);
  if(!from_worker) {
    made.has_request_id = 1;
    made.request_id = p->request_id;
    made.has_status = 1;
    made.status = p->status;
    made.error = p->error;
    from_worker = &made;
  }
  if(p->rs)
    mdp_rstream_settle(p->rs, from_worker, p->done, p->arg); /* calls done when stored */
  else
    p->done(from_worker, p->arg);
  free(p);
}

static void finish_task(void *arg) { finish(arg, NULL); }

/* Callbacks never run inside the call that registered them. The post
 * cannot fail there: submit runs inside mdp_relay_request_to only on the
 * loop thread of an open loop (which only that thread can close); inside a
 * task of a closing loop, ending it at once is not inside the caller's
 * call. */
static void post_finish(pending *p)
{
  if(mdp_loop_post_task(loop, &p->later, finish_task, p) != 0)
    finish(p, NULL);
}

static void finish_later(pending *p, Memdiag__V1__Status status, const char *fmt, uint64_t id)
{
  p->status = status;
  snprintf(p->error, sizeof(p->error), fmt, id);
  post_finish(p);
}

/* Unlink everything matching into a private list first: callbacks may
 * submit new requests while we walk. */
static pending *take(int (*match)(const pending *, uint64_t), uint64_t key)
{
  pending *taken = NULL;

  for(pending **pp = &in_flight; *pp;) {
    pending *p = *pp;
    if(match(p, key)) {
      *pp = p->next;
      p->next = taken;
      taken = p;
    } else {
      pp = &p->next;
    }
  }
  return taken;
}

static int match_conn(const pending *p, uint64_t id) { return p->connection_id == id; }
static int match_request(const pending *p, uint64_t id) { return p->request_id == id; }
static int match_all(const pending *p, uint64_t unused)
{
  (void)p;
  (void)unused;
  return 1;
}

static unsigned finish_list(pending *list, Memdiag__V1__Status status, const char *fmt)
{
  unsigned n = 0;

  while(list) {
    pending *p = list;
    list = p->next;
    p->status = status;
    snprintf(p->error, sizeof(p->error), fmt, p->connection_id);
    finish(p, NULL);
    n++;
  }
  return n;
}

/* A request's timer: the worker did not answer in time. */
static void expire(void *arg)
{
  pending *p = take(match_request, (uint64_t)(uintptr_t)arg);

  if(p)
    p->timer_id = 0; /* it is running now */
  finish_list(p, MEMDIAG__V1__STATUS__STATUS_TIMEOUT,
              "worker with connection ID %" PRIu64 " did not answer in time");
}

/* p: allocated by the caller (the relay's from here on). */
static void submit(pending *p, uint64_t connection_id, const Memdiag__V1__Request *req,
                   const mdp_relay_opts *opts, mdp_reply_fn done, void *arg)
{
  Memdiag__V1__Frame frame = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Request copy = *req;
  uint32_t timeout_ms = opts->timeout_ms;
  mdp_rstream_ops ops;
  int rc;

  p->request_id = next_request_id++;
  p->connection_id = connection_id;
  p->done = done;
  p->arg = arg;
  if(shutting_down) {
    finish_later(p, MEMDIAG__V1__STATUS__STATUS_ERROR,
                 "plugin shutting down (connection %" PRIu64 ")", connection_id);
    return;
  }
  if(timeout_ms == 0)
    timeout_ms = req->has_timeout_ms && req->timeout_ms ? req->timeout_ms
                                                        : mdp_relay_default_timeout_ms(req);
  /* The plugin waits a little longer than it tells the worker. */
  p->extra_ms = opts->extra_ms;
  p->due_ms = mdp_loop_now_ms() + (uint64_t)timeout_ms + GRACE_MS + opts->extra_ms;
  p->timer_id = mdp_loop_timer_add(loop, (uint64_t)timeout_ms + GRACE_MS + opts->extra_ms, expire,
                                   NULL, (void *)(uintptr_t)p->request_id);
  if(!p->timer_id) {
    finish_later(p, MEMDIAG__V1__STATUS__STATUS_ERROR,
                 "could not time the request to connection %" PRIu64 " (out of memory)",
                 connection_id);
    return;
  }
  copy.has_request_id = 1;
  copy.request_id = p->request_id;
  copy.has_timeout_ms = 1;
  copy.timeout_ms = timeout_ms;
  if(opts->sink) {
    char why[300];
    p->rs = mdp_rstream_new(
        (mdp_rstream_key){.connection_id = connection_id, .request_id = p->request_id}, opts->sink,
        &copy, &ops, why, sizeof(why));
    if(!p->rs) {
      p->status = MEMDIAG__V1__STATUS__STATUS_ERROR;
      md_seterr(p->error, sizeof(p->error), "%s", why);
      post_finish(p);
      return;
    }
  }
  frame.body_case = MEMDIAG__V1__FRAME__BODY_REQUEST;
  frame.request = &copy;
  rc = send_frame(connection_id, &frame);
  if(rc == -ENOENT) {
    finish_later(p, MEMDIAG__V1__STATUS__STATUS_UNKNOWN_CONNECTION,
                 "no worker with connection ID %" PRIu64
                 " (it may have exited or reconnected: list workers again)",
                 connection_id);
    return;
  }
  if(rc != 0 && rc != -EIO) {
    finish_later(p, MEMDIAG__V1__STATUS__STATUS_ERROR,
                 "could not send the request to connection %" PRIu64, connection_id);
    return;
  }
  /* On -EIO the connection is closing; mdp_relay_worker_gone ends it. */
  p->next = in_flight;
  in_flight = p;
}

void mdp_relay_on_reply(uint64_t connection_id, const Memdiag__V1__Reply *reply)
{
  for(pending **pp = &in_flight; *pp; pp = &(*pp)->next) {
    pending *p = *pp;
    if(p->request_id == reply->request_id && p->connection_id == connection_id) {
      *pp = p->next;
      finish(p, reply);
      return;
    }
  }
  /* A reply after its timeout, or after the grace of a cancelled stream:
   * the caller was already told; dropped. */
  late_replies++;
}

uint64_t mdp_relay_late_replies(void) { return late_replies; }

/* The grace after a cancel is over: the worker kept streaming. */
static void cancel_expired(void *arg)
{
  pending *p = take(match_request, (uint64_t)(uintptr_t)arg);

  if(!p)
    return;
  p->timer_id = 0;
  p->status = MEMDIAG__V1__STATUS__STATUS_TIMEOUT;
  snprintf(p->error, sizeof(p->error),
           "worker with connection ID %" PRIu64 " did not end its stream within %u s of the "
           "cancel: the plugin stopped waiting for it and drops what it still sends",
           p->connection_id, CANCEL_GRACE_MS / 1000);
  finish(p, NULL);
}

/* The stream of a pending request was cancelled (rstream.h): its timeout
 * becomes the grace, unless that would be later. The request stays in
 * flight: the worker's Reply, its going away or the grace end it. */
static void stream_cancelled(mdp_rstream_key key)
{
  uint64_t grace = (uint64_t)CANCEL_GRACE_MS, timer;

  for(pending *p = in_flight; p; p = p->next) {
    if(p->request_id != key.request_id || p->connection_id != key.connection_id)
      continue;
    if(p->cancelled || !p->timer_id)
      return;
    grace += p->extra_ms;
    if(mdp_loop_now_ms() + grace >= p->due_ms)
      return; /* its own timeout comes first */
    timer = mdp_loop_timer_add(loop, grace, cancel_expired, NULL, (void *)(uintptr_t)p->request_id);
    if(!timer)
      return; /* out of memory: its own timeout ends it */
    mdp_loop_timer_cancel(loop, p->timer_id);
    p->timer_id = timer;
    p->due_ms = mdp_loop_now_ms() + grace;
    p->cancelled = 1;
    return;
  }
}

void mdp_relay_worker_gone(uint64_t connection_id)
{
  finish_list(take(match_conn, connection_id), MEMDIAG__V1__STATUS__STATUS_UNKNOWN_CONNECTION,
              "worker with connection ID %" PRIu64 " went away before answering");
}

unsigned mdp_relay_shutdown(void)
{
  shutting_down = 1;
  /* results still being stored end through the store's events, which the
   * loop runs between calls */
  return finish_list(take(match_all, 0), MEMDIAG__V1__STATUS__STATUS_ERROR,
                     "plugin shutting down (connection %" PRIu64 ")") +
         mdp_rstream_live();
}

int mdp_relay_on_stream(uint64_t connection_id, const Memdiag__V1__Frame *f)
{
  return mdp_rstream_on_frame(connection_id, f);
}

/* ------------------------------------------------------------ any thread */

typedef struct {
  uint64_t connection_id;
  mdp_relay_opts opts; /* opts.sink: NULL or &sink */
  mdp_reply_fn done;
  void *arg;
  Memdiag__V1__Request *req;
  mdp_relay_sink sink; /* dir_fd and strings below are the task's own */
  char dir_path[512], name[128];
} request_task;

static void request_task_run(void *arg)
{
  request_task *rt = arg;
  pending *p = calloc(1, sizeof(*p));

  /* In a task of its own, not inside the caller's call: the callback may
   * run now. */
  if(!p) {
    Memdiag__V1__Reply oom = MEMDIAG__V1__REPLY__INIT;
    oom.has_status = 1;
    oom.status = MEMDIAG__V1__STATUS__STATUS_ERROR;
    oom.error = "memdiag plugin: out of memory";
    rt->done(&oom, rt->arg);
  } else {
    submit(p, rt->connection_id, rt->req, &rt->opts, rt->done, rt->arg);
  }
  memdiag__v1__request__free_unpacked(rt->req, NULL);
  if(rt->opts.sink)
    close(rt->sink.dir_fd);
  free(rt);
}

int mdp_relay_request(uint64_t connection_id, const Memdiag__V1__Request *req, uint32_t timeout_ms,
                      mdp_reply_fn done, void *arg)
{
  return mdp_relay_request_with(connection_id, req, &(mdp_relay_opts){.timeout_ms = timeout_ms},
                                done, arg);
}

int mdp_relay_request_to(uint64_t connection_id, const Memdiag__V1__Request *req,
                         uint32_t timeout_ms, const mdp_relay_sink *sink, mdp_reply_fn done,
                         void *arg)
{
  return mdp_relay_request_with(
      connection_id, req, &(mdp_relay_opts){.timeout_ms = timeout_ms, .sink = sink}, done, arg);
}

int mdp_relay_request_with(uint64_t connection_id, const Memdiag__V1__Request *req,
                           const mdp_relay_opts *opts, mdp_reply_fn done, void *arg)
{
  request_task *rt;
  uint8_t *buf;
  size_t len;
  int rc;

  if(!req || !opts || !done)
    return -EINVAL;
  if(loop && mdp_loop_on_thread(loop)) {
    pending *p = calloc(1, sizeof(*p));
    if(!p)
      return -ENOMEM;
    submit(p, connection_id, req, opts, done, arg);
    return 0;
  }
  if(!loop)
    return -ESHUTDOWN;
  /* From another thread the caller's request may be gone before the loop
   * runs: carry a deep copy (packed and unpacked) across. */
  len = memdiag__v1__request__get_packed_size(req);
  buf = malloc(len ? len : 1);
  rt = calloc(1, sizeof(*rt));
  if(!buf || !rt) {
    free(buf);
    free(rt);
    return -ENOMEM;
  }
  memdiag__v1__request__pack(req, buf);
  rt->req = memdiag__v1__request__unpack(NULL, len, buf);
  free(buf);
  if(!rt->req) {
    free(rt);
    return -ENOMEM;
  }
  rt->connection_id = connection_id;
  rt->opts = *opts;
  rt->done = done;
  rt->arg = arg;
  if(opts->sink) {
    const mdp_relay_sink *sink = opts->sink;
    rt->sink = *sink;
    rt->sink.dir_fd = fcntl(sink->dir_fd, F_DUPFD_CLOEXEC, 0);
    snprintf(rt->dir_path, sizeof(rt->dir_path), "%s", sink->dir_path ? sink->dir_path : "");
    snprintf(rt->name, sizeof(rt->name), "%s", sink->name ? sink->name : "");
    rt->sink.dir_path = rt->dir_path;
    rt->sink.name = rt->name;
    rt->opts.sink = &rt->sink;
  }
  rc = mdp_loop_post(loop, request_task_run, rt);
  if(rc) {
    memdiag__v1__request__free_unpacked(rt->req, NULL);
    if(rt->opts.sink && rt->sink.dir_fd >= 0)
      close(rt->sink.dir_fd);
    free(rt);
  }
  return rc;
}
