/* The hook's I/O thread: connect, hello, welcome, heartbeats, requests in,
 * replies out, reconnect with backoff. It never calls into the runtime and
 * takes h->io_lock around every OpenSSL call (see fork.c). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "md/text.h"

#define HEARTBEAT_DEFAULT_MS 10000u
#define HEARTBEAT_MIN_MS     50u
#define HEARTBEAT_MAX_MS     600000u
#define RESET_AFTER_MS       1000u
/* The plugin answers every heartbeat. Three intervals without any frame
 * from it means it is stopped or wedged even if its socket is open; the
 * floor keeps short test intervals from mistaking a busy host for that. */
#define SILENT_INTERVALS     3u
#define SILENT_MIN_MS        3000u

typedef struct {
  mdh_hook *h;
  md_tls_ctx *ctx;
  md_conn *conn;
  int fd;
  uint64_t connection_id;
  unsigned heartbeat_ms;
  uint64_t heartbeat_seq;
  uint64_t next_heartbeat_ms;
  uint64_t last_heard_ms; /* last whole frame from the plugin */
  unsigned silent_ms;     /* no frame for this long: the plugin is not serving us (0: the
                           * plugin does not answer heartbeats; never judged silent) */
  int goodbye;            /* the plugin refused us; already logged */
  int silent;             /* we gave up on a silent plugin; already logged */
  mdh_reply_node *outbox, *outbox_tail; /* replies taken from the queue, not yet sent */
  char err[256];
} session;

enum { WAIT_READY = 0, WAIT_TIMEOUT = 1, WAIT_STOP = 2 };

static int is_stopping(mdh_hook *h)
{
  int s;
  pthread_mutex_lock(&h->mu);
  s = h->stopping;
  pthread_mutex_unlock(&h->mu);
  return s;
}

static int remaining_ms(uint64_t deadline_ms)
{
  uint64_t now = md_now_ms();
  return now >= deadline_ms ? 0 : (int)(deadline_ms - now);
}

/* Wait until fd has one of events, the wake fd fires, an open stream's
 * pipe has bytes, or timeout_ms passes (fd < 0: no socket to watch). */
static int wait_io(mdh_hook *h, int fd, short events, int timeout_ms)
{
  struct pollfd p[3] = {
      {.fd = mdh_wake_fd(&h->wake), .events = POLLIN},
      {.fd = fd, .events = events},
      {.fd = fd >= 0 ? mdh_stream_poll_fd(h) : -1, .events = POLLIN},
  };
  int n = poll(p, 3, timeout_ms);
  if(n < 0)
    return errno == EINTR ? WAIT_READY : WAIT_TIMEOUT;
  if(p[0].revents & POLLIN) {
    mdh_wake_drain(&h->wake);
    if(is_stopping(h))
      return WAIT_STOP;
  }
  if((fd >= 0 && p[1].revents) || p[2].revents)
    return WAIT_READY;
  return n == 0 ? WAIT_TIMEOUT : WAIT_READY;
}

static void copy_conn_error(session *s)
{
  snprintf(s->err, sizeof s->err, "%s", md_conn_error(s->conn));
}

/* Run one non-blocking md_conn_* step under io_lock, retrying on EAGAIN
 * until done, the deadline, or a stop. */
typedef int (*conn_step)(md_conn *c, void *arg);

static int drive(session *s, conn_step step, void *arg, uint64_t deadline_ms)
{
  mdh_hook *h = s->h;
  for(;;) {
    short ev;
    int w, rc;
    pthread_mutex_lock(&h->io_lock);
    rc = step(s->conn, arg);
    ev = md_conn_events(s->conn);
    if(rc != MD_OK && rc != MD_EAGAIN)
      copy_conn_error(s);
    pthread_mutex_unlock(&h->io_lock);
    if(rc != MD_EAGAIN)
      return rc;
    if(remaining_ms(deadline_ms) == 0) {
      snprintf(s->err, sizeof s->err, "no answer within %u ms", h->handshake_timeout_ms);
      return MD_ETIMEDOUT;
    }
    w = wait_io(h, s->fd, ev ? ev : POLLIN, remaining_ms(deadline_ms));
    if(w == WAIT_STOP)
      return MD_ECLOSED;
  }
}

static int step_handshake(md_conn *c, void *arg)
{
  (void)arg;
  return md_conn_handshake(c);
}

static int step_flush(md_conn *c, void *arg)
{
  (void)arg;
  return md_conn_flush(c);
}

static int step_recv(md_conn *c, void *arg) { return md_conn_recv(c, (Memdiag__V1__Frame **)arg); }

static int send_frame(session *s, const Memdiag__V1__Frame *f)
{
  int rc;
  pthread_mutex_lock(&s->h->io_lock);
  rc = md_conn_send(s->conn, f);
  if(rc != MD_OK && rc != MD_EAGAIN)
    copy_conn_error(s);
  pthread_mutex_unlock(&s->h->io_lock);
  return rc == MD_EAGAIN ? MD_OK : rc;
}

static void log_goodbye(mdh_hook *h, const Memdiag__V1__Goodbye *g)
{
  mdh_log_failure(h, "the plugin said goodbye (%s): %s",
                  md_status_name(g->has_status ? g->status : MEMDIAG__V1__STATUS__STATUS_ERROR),
                  g->reason ? g->reason : "no reason given");
}

static int send_hello(session *s)
{
  mdh_hook *h = s->h;
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Hello hello = MEMDIAG__V1__HELLO__INIT;

  hello.name = h->name;
  hello.has_pid = 1;
  hello.pid = (uint32_t)getpid();
  hello.has_ppid = 1;
  hello.ppid = (uint32_t)getppid();
  hello.runtime = h->runtime;
  hello.runtime_version = h->runtime_version;
  hello.hook_version = h->hook_version;
  hello.capabilities = h->capabilities;
  hello.n_capabilities = h->n_capabilities;
  hello.dump_directory = h->dump_directory;
  f.body_case = MEMDIAG__V1__FRAME__BODY_HELLO;
  f.hello = &hello;
  return send_frame(s, &f);
}

/* Like md_unix_connect, but non-blocking from the start: connect(2) on
 * AF_UNIX blocks while the listener's backlog is full (a stopped or wedged
 * plugin), and an I/O thread blocked there never sees a stop, so mdh_stop()
 * and the worker's exit (which frees the hook) would wait for the plugin.
 * Non-blocking, a full backlog fails at once with EAGAIN and is retried
 * with the backoff. CLOEXEC: a worker that execs must not hand the plugin's
 * socket on. */
static int connect_plugin(const char *path, char *err, size_t errlen)
{
  struct sockaddr_un sa;
  int fd;

  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  if(!*path || strlen(path) >= sizeof sa.sun_path) {
    md_seterr(err, errlen, "socket path '%s' is empty or longer than %zu bytes", path,
              sizeof sa.sun_path - 1);
    return MD_EINVAL;
  }
  memcpy(sa.sun_path, path, strlen(path) + 1);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if(fd < 0) {
    md_seterr(err, errlen, "socket: %s", strerror(errno));
    return MD_EIO;
  }
  if(connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
    if(errno == EAGAIN)
      md_seterr(err, errlen,
                "cannot connect to %s: the plugin is not accepting connections "
                "(its backlog is full)",
                path);
    else
      md_seterr(err, errlen, "cannot connect to %s: %s", path, strerror(errno));
    close(fd);
    return MD_EIO;
  }
  return fd;
}

/* Connect, handshake, hello, welcome. */
static int session_open(session *s)
{
  mdh_hook *h = s->h;
  uint64_t deadline = md_now_ms() + h->handshake_timeout_ms;
  Memdiag__V1__Frame *f = NULL;
  md_tls_options opts = {
      .certificate = h->certificate,
      .key = h->key,
      .ca = h->ca,
      .server = 0,
      .allowed_peer_roles = MD_ROLE_PLUGIN,
  };
  char detail[200] = "";
  int rc, fd;

  /* Loaded per connection so that renewed certificates are picked up. */
  pthread_mutex_lock(&h->io_lock);
  rc = md_tls_ctx_new(&s->ctx, &opts, detail, sizeof detail);
  pthread_mutex_unlock(&h->io_lock);
  if(rc) {
    snprintf(s->err, sizeof s->err, "cannot load the worker's certificates: %s", detail);
    goto out;
  }

  /* io_lock from socket() until conn_fd records it: a fork in between
   * (the fork prepare handler takes io_lock) would leave the child a copy
   * of the plugin's connection that its fork handler does not know to
   * close. The connect does not block. */
  pthread_mutex_lock(&h->io_lock);
  fd = connect_plugin(h->socket_path, detail, sizeof detail);
  if(fd < 0) {
    pthread_mutex_unlock(&h->io_lock);
    rc = fd;
    snprintf(s->err, sizeof s->err, "%s", detail); /* names the path */
    goto out;
  }
  rc = md_conn_new(&s->conn, s->ctx, fd);
  if(rc == MD_OK) {
    s->fd = fd;
    pthread_mutex_lock(&h->mu);
    h->conn_fd = fd;
    pthread_mutex_unlock(&h->mu);
  }
  pthread_mutex_unlock(&h->io_lock);
  if(rc) {
    snprintf(s->err, sizeof s->err, "%s", md_strerror(rc));
    goto out;
  }

  rc = drive(s, step_handshake, NULL, deadline);
  if(rc)
    goto out;
  rc = send_hello(s);
  if(rc)
    goto out;
  rc = drive(s, step_flush, NULL, deadline);
  if(rc)
    goto out;
  rc = drive(s, step_recv, &f, deadline);
  if(rc)
    goto out;
  if(f->body_case == MEMDIAG__V1__FRAME__BODY_GOODBYE) {
    log_goodbye(h, f->goodbye);
    s->goodbye = 1;
    rc = MD_ECLOSED;
    goto out;
  }
  if(f->body_case != MEMDIAG__V1__FRAME__BODY_WELCOME) {
    snprintf(s->err, sizeof s->err, "expected welcome, the plugin sent %s", md_frame_kind(f));
    rc = MD_EPROTO;
    goto out;
  }
  s->connection_id = f->welcome->connection_id;
  /* Settings for the runtime (the plugin's AllocationSampling) go through
   * the request queue, ahead of this connection's requests. */
  if(f->welcome->has_allocation_sampling) {
    mdh_request settings = {.connection_id = s->connection_id,
                            .op = MDH_OP_SETTINGS,
                            .has_sampling = 1,
                            .sampling_interval = f->welcome->allocation_sampling};
    pthread_mutex_lock(&h->mu);
    if(mdh_queue_push_request(h, &settings) == MDH_OK)
      pthread_cond_broadcast(&h->cond);
    pthread_mutex_unlock(&h->mu);
  }
  s->heartbeat_ms = f->welcome->has_heartbeat_interval_ms && f->welcome->heartbeat_interval_ms
                        ? f->welcome->heartbeat_interval_ms
                        : HEARTBEAT_DEFAULT_MS;
  if(s->heartbeat_ms < HEARTBEAT_MIN_MS)
    s->heartbeat_ms = HEARTBEAT_MIN_MS;
  if(s->heartbeat_ms > HEARTBEAT_MAX_MS)
    s->heartbeat_ms = HEARTBEAT_MAX_MS;
  s->next_heartbeat_ms = md_now_ms() + s->heartbeat_ms;
  s->last_heard_ms = md_now_ms();
  /* Only a plugin that says it answers heartbeats can be judged silent:
   * an older one never would, and we would leave it every few seconds. */
  s->silent_ms = 0;
  if(f->welcome->has_answers_heartbeats && f->welcome->answers_heartbeats) {
    s->silent_ms = SILENT_INTERVALS * s->heartbeat_ms;
    if(s->silent_ms < SILENT_MIN_MS)
      s->silent_ms = SILENT_MIN_MS;
  }
out:
  md_frame_free(f);
  return rc;
}

static void session_close(session *s, int polite)
{
  mdh_hook *h = s->h;
  unsigned requests, replies;

  mdh_stream_connection_lost(h, "the connection to the plugin closed during the stream");
  pthread_mutex_lock(&h->io_lock);
  pthread_mutex_lock(&h->mu);
  h->conn_fd = -1;
  atomic_store(&h->connection_id, 0);
  mdh_queue_drop_all(h, &requests, &replies);
  h->busy_request_id = 0;
  /* The runtime undoes what this connection started (see
   * MDH_OP_CONNECTION_CLOSED). The queue was just emptied, so it fits. On a
   * stop the runtime no longer takes requests, so none is queued. */
  if(s->connection_id && !polite) {
    mdh_request closed = {.connection_id = s->connection_id, .op = MDH_OP_CONNECTION_CLOSED};
    if(mdh_queue_push_request(h, &closed) == MDH_OK)
      pthread_cond_broadcast(&h->cond);
  }
  pthread_mutex_unlock(&h->mu);
  if(s->conn) {
    if(polite)
      md_conn_shutdown(s->conn);
    md_conn_free(s->conn);
  }
  md_tls_ctx_free(s->ctx);
  pthread_mutex_unlock(&h->io_lock);
  s->conn = NULL;
  s->ctx = NULL;
  s->fd = -1;
  replies += mdh_reply_nodes_count(s->outbox);
  mdh_reply_nodes_free(s->outbox);
  s->outbox = s->outbox_tail = NULL;
  /* the plugin has already ended these requests for its side */
  if((requests || replies) && !polite)
    mdh_log(h,
            "connection %llu closed with %u request%s not started and %u repl%s not sent; "
            "they are dropped",
            (unsigned long long)s->connection_id, requests, requests == 1 ? "" : "s", replies,
            replies == 1 ? "y" : "ies");
}

/* Replies the I/O thread makes itself go through the outbox too, so that
 * frames are only ever added to the connection when nothing is pending:
 * OpenSSL must retry a partial write with the very same buffer. */
static int reply_now(session *s, uint64_t request_id, mdh_status st, const char *msg)
{
  mdh_reply_node *n = calloc(1, sizeof *n);
  if(!n)
    return MD_ENOMEM;
  n->connection_id = s->connection_id;
  n->frame = mdh_reply_frame_error(request_id, st, msg);
  if(!n->frame) {
    free(n);
    return MD_ENOMEM;
  }
  if(s->outbox_tail)
    s->outbox_tail->next = n;
  else
    s->outbox = n;
  s->outbox_tail = n;
  return MD_OK;
}

static int on_request(session *s, const Memdiag__V1__Request *wire)
{
  mdh_hook *h = s->h;
  mdh_request req;
  char msg[96];
  int rc = mdh_request_from_wire(&req, wire, s->connection_id);

  if(rc == MDH_EINVAL)
    return reply_now(s, wire->request_id, MDH_STATUS_BAD_REQUEST,
                     "the request names no operation this hook knows");
  if(rc)
    return reply_now(s, wire->request_id, MDH_STATUS_ERROR, "out of memory");

  pthread_mutex_lock(&h->mu);
  rc = mdh_queue_push_request(h, &req);
  if(rc == MDH_OK)
    pthread_cond_broadcast(&h->cond);
  pthread_mutex_unlock(&h->mu);
  if(rc == MDH_OK)
    return MD_OK;
  mdh_request_clear(&req);
  snprintf(msg, sizeof msg, "%u requests are already waiting in this worker", h->queue_capacity);
  return reply_now(s, wire->request_id, MDH_STATUS_REFUSED, msg);
}

/* Read every frame available. MD_OK when the socket has no more for now. */
static int read_frames(session *s)
{
  for(;;) {
    Memdiag__V1__Frame *f = NULL;
    int rc;
    pthread_mutex_lock(&s->h->io_lock);
    rc = md_conn_recv(s->conn, &f);
    if(rc != MD_OK && rc != MD_EAGAIN)
      copy_conn_error(s);
    pthread_mutex_unlock(&s->h->io_lock);
    if(rc == MD_EAGAIN)
      return MD_OK;
    if(rc)
      return rc;
    s->last_heard_ms = md_now_ms();
    switch(f->body_case) {
    case MEMDIAG__V1__FRAME__BODY_REQUEST: rc = on_request(s, f->request); break;
    case MEMDIAG__V1__FRAME__BODY_STREAM_CREDIT:
      mdh_stream_on_credit(s->h, s->connection_id, f->stream_credit);
      break;
    case MEMDIAG__V1__FRAME__BODY_GOODBYE:
      log_goodbye(s->h, f->goodbye);
      s->goodbye = 1;
      rc = MD_ECLOSED;
      break;
    default:
      /* heartbeat answers only prove the plugin is alive (above); newer
       * plugins may send frames this hook does not know */
      break;
    }
    md_frame_free(f);
    if(rc)
      return rc;
  }
}

static size_t pending_bytes(session *s)
{
  size_t n;
  pthread_mutex_lock(&s->h->io_lock);
  n = md_conn_pending(s->conn);
  pthread_mutex_unlock(&s->h->io_lock);
  return n;
}

static int send_replies(session *s)
{
  mdh_hook *h = s->h;
  mdh_reply_node *taken;
  int rc = MD_OK;

  pthread_mutex_lock(&h->mu);
  taken = mdh_queue_take_replies(h);
  pthread_mutex_unlock(&h->mu);
  if(taken) {
    if(s->outbox_tail)
      s->outbox_tail->next = taken;
    else
      s->outbox = taken;
    while(taken->next)
      taken = taken->next;
    s->outbox_tail = taken;
  }
  while(s->outbox && rc == MD_OK && pending_bytes(s) == 0) {
    mdh_reply_node *n = s->outbox;
    s->outbox = n->next;
    if(!s->outbox)
      s->outbox_tail = NULL;
    n->next = NULL;
    if(n->connection_id == s->connection_id)
      rc = send_frame(s, n->frame);
    mdh_reply_nodes_free(n);
  }
  return rc;
}

static int send_stream_frame(void *arg, const Memdiag__V1__Frame *f) { return send_frame(arg, f); }

/* One chunk (or the end) of an open stream, when nothing else is queued:
 * heartbeats and replies interleave with a long stream. */
static int pump_stream(session *s)
{
  if(pending_bytes(s) != 0)
    return MD_OK;
  return mdh_stream_step(s->h, s->connection_id, send_stream_frame, s);
}

static int send_heartbeat(session *s)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Heartbeat hb = MEMDIAG__V1__HEARTBEAT__INIT;

  hb.has_sequence = 1;
  hb.sequence = ++s->heartbeat_seq;
  hb.has_busy_request_id = 1;
  pthread_mutex_lock(&s->h->mu);
  hb.busy_request_id = s->h->busy_request_id;
  pthread_mutex_unlock(&s->h->mu);
  f.body_case = MEMDIAG__V1__FRAME__BODY_HEARTBEAT;
  f.heartbeat = &hb;
  s->next_heartbeat_ms = md_now_ms() + s->heartbeat_ms;
  return send_frame(s, &f);
}

/* MD_ETIMEDOUT (logged) once the plugin has sent nothing for silent_ms. */
static int check_silence(session *s, int *timeout)
{
  uint64_t now = md_now_ms(), quiet = now - s->last_heard_ms;
  int left;

  if(s->silent_ms == 0)
    return MD_OK;
  if(quiet >= s->silent_ms) {
    s->silent = 1;
    mdh_log(s->h, "plugin silent for %llu ms on connection %llu; reconnecting",
            (unsigned long long)quiet, (unsigned long long)s->connection_id);
    return MD_ETIMEDOUT;
  }
  left = (int)(s->silent_ms - quiet);
  if(left < *timeout)
    *timeout = left;
  return MD_OK;
}

/* The connected state. Returns when the connection ends or on stop. */
static int session_run(session *s)
{
  mdh_hook *h = s->h;
  for(;;) {
    short ev;
    size_t pending;
    int rc, w, timeout;

    rc = send_replies(s);
    if(rc)
      return rc;
    if(md_now_ms() >= s->next_heartbeat_ms && pending_bytes(s) == 0) {
      rc = send_heartbeat(s);
      if(rc)
        return rc;
    }
    pthread_mutex_lock(&h->io_lock);
    rc = md_conn_pending(s->conn) ? md_conn_flush(s->conn) : MD_OK;
    if(rc != MD_OK && rc != MD_EAGAIN)
      copy_conn_error(s);
    pending = md_conn_pending(s->conn);
    ev = md_conn_events(s->conn);
    pthread_mutex_unlock(&h->io_lock);
    if(rc != MD_OK && rc != MD_EAGAIN)
      return rc;

    /* TLS may hold decrypted records that poll() cannot see: read first */
    rc = read_frames(s);
    if(rc)
      return rc;
    rc = pump_stream(s);
    if(rc)
      return rc;
    pending = pending_bytes(s);

    /* while a frame is half written the heartbeat waits for POLLOUT */
    timeout = pending                                 ? 1000
              : s->outbox || mdh_stream_wants_turn(h) ? 0
                                                      : remaining_ms(s->next_heartbeat_ms);
    rc = check_silence(s, &timeout);
    if(rc)
      return rc;
    w = wait_io(h, s->fd, (short)(POLLIN | ev | (pending ? POLLOUT : 0)), timeout);
    if(w == WAIT_STOP)
      return MD_OK;
  }
}

void *mdh_io_main(void *arg)
{
  mdh_hook *h = arg;
  unsigned base = h->backoff_min_ms;
  unsigned seed = (unsigned)getpid() ^ (unsigned)md_now_us();

  while(!is_stopping(h)) {
    session s = {.h = h, .fd = -1};
    unsigned delay;
    int rc = session_open(&s);

    if(rc == MD_OK) {
      uint64_t since = md_now_ms();
      mdh_log_reset(h);
      mdh_log(h, "connected to %s as connection %llu", h->socket_path,
              (unsigned long long)s.connection_id);
      pthread_mutex_lock(&h->mu);
      atomic_store(&h->connection_id, s.connection_id);
      atomic_fetch_add(&h->connections, 1);
      pthread_mutex_unlock(&h->mu);
      rc = session_run(&s);
      /* A plugin that restarts gets its workers back at once; one that
       * accepts and drops us again and again gets the growing backoff. */
      if(!s.goodbye && md_now_ms() - since >= RESET_AFTER_MS)
        base = h->backoff_min_ms;
      if(!is_stopping(h) && !s.goodbye && !s.silent)
        mdh_log(h, "connection %llu lost (%s%s%s); reconnecting",
                (unsigned long long)s.connection_id, md_strerror(rc), s.err[0] ? ": " : "", s.err);
    } else if(!is_stopping(h) && !s.goodbye) {
      mdh_log_failure(h, "%s; retrying", s.err[0] ? s.err : md_strerror(rc));
    }
    session_close(&s, is_stopping(h));
    if(is_stopping(h))
      break;
    delay = mdh_backoff_jitter(base, &seed);
    base = mdh_backoff_next(base, h->backoff_min_ms, h->backoff_max_ms);
    {
      uint64_t until = md_now_ms() + delay;
      while(wait_io(h, -1, 0, remaining_ms(until)) != WAIT_STOP && remaining_ms(until) > 0)
        ;
    }
  }
  return NULL;
}
