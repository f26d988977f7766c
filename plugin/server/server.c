/* memdiag plugin: the server thread. One poll() loop owns the listening
 * socket, every connection (TLS handshake, hello, heartbeats, frames),
 * posted tasks and timers; see server.h for the API other parts use. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"
#include "collectd/core/utils/common/common.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "md/tls.h"

#include "config.h"
#include "control.h"
#include "workers/registry.h"
#include "relay.h"
#include "server.h"
#include "capture/capture.h"

#define GOODBYE_FLUSH_MS   1000u
#define MAX_GONE_LISTENERS 8

typedef enum { C_HANDSHAKE, C_HELLO, C_WORKER, C_OPERATOR } conn_state;

typedef struct conn {
  struct conn *next;
  uint64_t serial;
  md_conn *mc;
  conn_state state;
  int dead;    /* freed at the end of this loop iteration */
  int closing; /* flushing a Goodbye, then dead */
  uint64_t deadline_ms;
  uint64_t last_heard_ms;
  uint64_t worker_id;
  pid_t pid;
  uid_t uid;
  gid_t gid;
  char who[192];
} conn;

typedef struct task {
  struct task *next;
  mdp_task_fn fn;
  void *arg;
} task;

typedef struct timer {
  struct timer *next;
  uint64_t id;
  uint64_t due_ms;
  mdp_task_fn fn;
  void *arg;
} timer;

static const mdp_config *cfg;
static md_tls_ctx *tls;
static int listen_fd = -1;
static int wake_fd = -1;
static pthread_t loop_thread;
static uint64_t started_at;

static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static task *qhead, *qtail;
static int accepting_tasks; /* qlock */
static int stop_requested;  /* qlock */

static conn *conns;
static size_t nconns;
static uint64_t next_serial = 1;
static timer *timers;
static uint64_t next_timer_id = 1; /* qlock */

static struct {
  mdp_gone_fn fn;
  void *arg;
} gone_listeners[MAX_GONE_LISTENERS];
static size_t n_gone_listeners;

/* ------------------------------------------------------------ tasks, timers */

int mdp_loop_on_thread(void)
{
  int on;

  pthread_mutex_lock(&qlock);
  on = accepting_tasks && pthread_equal(pthread_self(), loop_thread);
  pthread_mutex_unlock(&qlock);
  return on;
}

uint64_t mdp_loop_started_at(void) { return started_at; }

static void wake(void)
{
  uint64_t one = 1;
  ssize_t n = write(wake_fd, &one, sizeof(one));
  (void)n; /* the counter saturating still leaves the loop woken */
}

int mdp_server_post(mdp_task_fn fn, void *arg)
{
  task *t = malloc(sizeof(*t));
  int rc = 0;

  if(!t)
    return -ENOMEM;
  t->fn = fn;
  t->arg = arg;
  t->next = NULL;
  pthread_mutex_lock(&qlock);
  if(!accepting_tasks) {
    rc = -ESHUTDOWN;
  } else {
    if(qtail)
      qtail->next = t;
    else
      qhead = t;
    qtail = t;
  }
  pthread_mutex_unlock(&qlock);
  if(rc) {
    free(t);
    return rc;
  }
  wake();
  return 0;
}

/* Runs what was queued when called; tasks posted meanwhile wait for the
 * next round so that a task re-posting itself cannot starve the loop. */
static unsigned run_tasks(void)
{
  task *t;
  unsigned n = 0;

  pthread_mutex_lock(&qlock);
  t = qhead;
  qhead = qtail = NULL;
  pthread_mutex_unlock(&qlock);
  while(t) {
    task *next = t->next;
    t->fn(t->arg);
    free(t);
    t = next;
    n++;
  }
  return n;
}

static void timer_insert(timer *t)
{
  timer **pp = &timers;

  while(*pp && (*pp)->due_ms <= t->due_ms)
    pp = &(*pp)->next;
  t->next = *pp;
  *pp = t;
}

static void timer_insert_task(void *arg) { timer_insert(arg); }

uint64_t mdp_server_timer_add(uint64_t delay_ms, mdp_task_fn fn, void *arg)
{
  timer *t = calloc(1, sizeof(*t));

  if(!t)
    return 0;
  pthread_mutex_lock(&qlock);
  t->id = next_timer_id++;
  pthread_mutex_unlock(&qlock);
  t->due_ms = md_now_ms() + delay_ms;
  t->fn = fn;
  t->arg = arg;
  if(mdp_loop_on_thread()) {
    timer_insert(t);
    return t->id;
  }
  if(mdp_server_post(timer_insert_task, t) != 0) {
    free(t);
    return 0;
  }
  return t->id;
}

static int timer_remove(uint64_t id)
{
  for(timer **pp = &timers; *pp; pp = &(*pp)->next) {
    if((*pp)->id == id) {
      timer *t = *pp;
      *pp = t->next;
      free(t);
      return 0;
    }
  }
  return -ENOENT;
}

static void timer_cancel_task(void *arg)
{
  uint64_t *id = arg;
  timer_remove(*id);
  free(id);
}

int mdp_server_timer_cancel(uint64_t timer_id)
{
  uint64_t *copy;
  int rc;

  if(mdp_loop_on_thread())
    return timer_remove(timer_id);
  copy = malloc(sizeof(*copy));
  if(!copy)
    return -ENOMEM;
  *copy = timer_id;
  rc = mdp_server_post(timer_cancel_task, copy);
  if(rc)
    free(copy);
  return rc;
}

/* Returns the next due time, or 0 when no timer is left. */
static uint64_t run_timers(uint64_t now)
{
  while(timers && timers->due_ms <= now) {
    timer *t = timers;
    timers = t->next;
    t->fn(t->arg);
    free(t);
  }
  return timers ? timers->due_ms : 0;
}

/* ------------------------------------------------------------ registry API */

int mdp_server_worker(uint64_t connection_id, mdp_worker_info *out)
{
  return mdp_registry_info(connection_id, out);
}

int mdp_server_worker_can(uint64_t connection_id, const char *op)
{
  return mdp_registry_can(connection_id, op);
}

int mdp_server_on_worker_gone(mdp_gone_fn fn, void *arg)
{
  if(n_gone_listeners == MAX_GONE_LISTENERS)
    return -ENOSPC;
  gone_listeners[n_gone_listeners].fn = fn;
  gone_listeners[n_gone_listeners].arg = arg;
  n_gone_listeners++;
  return 0;
}

/* ------------------------------------------------------------ connections */

/* What peers cause is logged, but a peer looping on bad connections must not
 * fill the disk: at most PEER_LOG_BURST such lines per minute, then one line
 * saying how many were left out. Loop thread only. */
#define PEER_LOG_BURST     30
#define PEER_LOG_WINDOW_MS 60000u

static uint64_t peer_log_window;
static unsigned peer_logged, peer_suppressed;

/* Also called every second, so that the summary is not held back until
 * the next bad connection. */
static void peer_log_roll(uint64_t now)
{
  if(now - peer_log_window < PEER_LOG_WINDOW_MS)
    return;
  if(peer_suppressed)
    WARNING("memdiag plugin: %u more refused or closed connections were not logged in the "
            "last minute",
            peer_suppressed);
  peer_log_window = now;
  peer_logged = peer_suppressed = 0;
}

static void peer_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void peer_warning(const char *fmt, ...)
{
  char msg[1024];
  va_list ap;

  peer_log_roll(md_now_ms());
  if(peer_logged >= PEER_LOG_BURST) {
    peer_suppressed++;
    return;
  }
  peer_logged++;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  WARNING("%s", msg);
}

static conn *find_worker(uint64_t id)
{
  for(conn *c = conns; c; c = c->next)
    if(c->state == C_WORKER && c->worker_id == id && !c->dead && !c->closing)
      return c;
  return NULL;
}

static conn *find_serial(uint64_t serial)
{
  for(conn *c = conns; c; c = c->next)
    if(c->serial == serial && !c->dead && !c->closing)
      return c;
  return NULL;
}

static void drop(conn *c, const char *why)
{
  if(c->dead)
    return;
  c->dead = 1;
  if(c->state == C_WORKER)
    INFO("memdiag plugin: worker %" PRIu64 " (%s) gone: %s", c->worker_id, c->who, why);
}

static int send_frame(conn *c, const Memdiag__V1__Frame *f)
{
  int rc;

  /* A peer that asks but never reads would make the queue grow without
   * bound; more than one whole frame waiting means it is not reading. */
  if(md_conn_pending(c->mc) > cfg->max_frame) {
    peer_warning("memdiag plugin: closing connection to %s: it does not read what it is sent "
                 "(%zu bytes waiting)",
                 c->who, md_conn_pending(c->mc));
    drop(c, "does not read what it is sent");
    return -EIO;
  }
  rc = md_conn_send(c->mc, f);
  if(rc == MD_OK || rc == MD_EAGAIN)
    return 0;
  /* Refused before anything was queued: the connection is still good. */
  if(rc == MD_ETOOBIG) {
    WARNING("memdiag plugin: not sending a %s frame to %s: larger than MaxFrameSize (%" PRIu64
            " bytes)",
            md_frame_kind(f), c->who, cfg->max_frame);
    return -EMSGSIZE;
  }
  peer_warning("memdiag plugin: closing connection to %s: %s", c->who, md_conn_error(c->mc));
  drop(c, md_conn_error(c->mc)[0] ? md_conn_error(c->mc) : md_strerror(rc));
  return -EIO;
}

int mdp_loop_send_worker(uint64_t connection_id, const Memdiag__V1__Frame *f)
{
  conn *c = find_worker(connection_id);
  return c ? send_frame(c, f) : -ENOENT;
}

int mdp_loop_send_operator(uint64_t serial, const Memdiag__V1__Frame *f)
{
  conn *c = find_serial(serial);
  return c && c->state == C_OPERATOR ? send_frame(c, f) : -ENOENT;
}

/* Tell the peer why, then close once the Goodbye is out (or soon). */
static void goodbye(conn *c, Memdiag__V1__Status status, const char *reason)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Goodbye g = MEMDIAG__V1__GOODBYE__INIT;

  g.has_status = 1;
  g.status = status;
  g.reason = (char *)reason;
  f.body_case = MEMDIAG__V1__FRAME__BODY_GOODBYE;
  f.goodbye = &g;
  if(send_frame(c, &f) != 0)
    return;
  if(md_conn_pending(c->mc) == 0) {
    md_conn_shutdown(c->mc);
    drop(c, reason);
    return;
  }
  c->closing = 1;
  c->deadline_ms = md_now_ms() + GOODBYE_FLUSH_MS;
}

/* Out of descriptors or memory, accept() fails while the connection stays
 * queued and the listening socket stays readable: polling it again at once
 * would spin the loop (and log each turn). It is left out of poll() until
 * this time instead, and the failure is logged once per episode. */
#define ACCEPT_RETRY_MS 1000u
static uint64_t accept_paused_until;
static int accept_failing;

static void accept_all(void)
{
  for(;;) {
    int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    conn *c;
    int rc;

    if(fd < 0) {
      if(errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        if(!accept_failing)
          WARNING("memdiag plugin: accept on %s failed: %s; new connections wait until it "
                  "succeeds (raise collectd's open file limit if it says too many open files)",
                  cfg->socket, strerror(errno));
        accept_failing = 1;
        accept_paused_until = md_now_ms() + ACCEPT_RETRY_MS;
      } else if(errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
                errno != ECONNABORTED) {
        WARNING("memdiag plugin: accept on %s failed: %s", cfg->socket, strerror(errno));
      }
      return;
    }
    if(accept_failing) {
      accept_failing = 0;
      INFO("memdiag plugin: accepting connections on %s again", cfg->socket);
    }
    if(nconns >= cfg->max_connections) {
      struct ucred cr;
      socklen_t len = sizeof(cr);
      if(getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
        cr.pid = 0;
      peer_warning(
          "memdiag plugin: refusing a connection from pid %ld: MaxConnections (%u) reached",
          (long)cr.pid, cfg->max_connections);
      close(fd);
      continue;
    }
    c = calloc(1, sizeof(*c));
    if(!c) {
      close(fd);
      return;
    }
    rc = md_conn_new(&c->mc, tls, fd);
    if(rc) {
      ERROR("memdiag plugin: cannot set up a connection: %s", md_strerror(rc));
      free(c);
      continue;
    }
    md_conn_set_max_frame(c->mc, cfg->max_frame);
    md_conn_peer_cred(c->mc, &c->pid, &c->uid, &c->gid);
    c->serial = next_serial++;
    c->state = C_HANDSHAKE;
    c->last_heard_ms = md_now_ms();
    c->deadline_ms = c->last_heard_ms + cfg->handshake_timeout_ms;
    snprintf(c->who, sizeof(c->who), "pid %ld uid %ld", (long)c->pid, (long)c->uid);
    c->next = conns;
    conns = c;
    nconns++;
  }
}

static void forbid_control(conn *c, const Memdiag__V1__Control *ctl)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__ControlReply r = MEMDIAG__V1__CONTROL_REPLY__INIT;
  const char *why = "a worker certificate may not run operator requests";

  peer_warning("memdiag plugin: refused a control request from %s: %s", c->who, why);
  r.has_request_id = 1;
  r.request_id = ctl->request_id;
  r.has_status = 1;
  r.status = MEMDIAG__V1__STATUS__STATUS_FORBIDDEN;
  r.error = (char *)why;
  f.body_case = MEMDIAG__V1__FRAME__BODY_CONTROL_REPLY;
  f.control_reply = &r;
  send_frame(c, &f);
}

static void on_hello(conn *c, const Memdiag__V1__Hello *h)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Welcome w = MEMDIAG__V1__WELCOME__INIT;
  mdp_worker_hello wh;
  char reason[160];
  uint64_t id;
  int proc_err = 0;
  int rc;

  if(!h->has_pid || (pid_t)h->pid != c->pid) {
    peer_warning(
        "memdiag plugin: refused worker hello from pid %ld (SO_PEERCRED): it claims pid %s%u",
        (long)c->pid, h->has_pid ? "" : "(none) ", h->has_pid ? h->pid : 0);
    snprintf(reason, sizeof(reason), "hello claims pid %u but the socket peer is pid %ld",
             h->has_pid ? h->pid : 0, (long)c->pid);
    goodbye(c, MEMDIAG__V1__STATUS__STATUS_FORBIDDEN, reason);
    return;
  }
  memset(&wh, 0, sizeof(wh));
  wh.pid = c->pid;
  wh.ppid = h->has_ppid ? (pid_t)h->ppid : 0;
  wh.uid = c->uid;
  wh.gid = c->gid;
  wh.name = h->name;
  wh.runtime = h->runtime;
  wh.runtime_version = h->runtime_version;
  wh.dump_directory = h->dump_directory;
  wh.capabilities = h->capabilities;
  wh.n_capabilities = h->n_capabilities;
  rc = mdp_registry_add(&wh, &id, &proc_err);
  if(rc) {
    ERROR("memdiag plugin: cannot register worker pid %ld: %s", (long)c->pid, strerror(-rc));
    goodbye(c, MEMDIAG__V1__STATUS__STATUS_ERROR, "plugin out of memory");
    return;
  }
  c->state = C_WORKER;
  c->worker_id = id;
  c->deadline_ms = 0;
  snprintf(c->who, sizeof(c->who), "'%.100s' pid %ld", h->name && h->name[0] ? h->name : "worker",
           (long)c->pid);
  /* The name is the peer's text: no control characters into collectd's log. */
  for(char *p = c->who; *p; p++)
    if((unsigned char)*p < 0x20 || *p == 0x7f)
      *p = '?';
  w.has_connection_id = 1;
  w.connection_id = id;
  w.has_heartbeat_interval_ms = 1;
  w.heartbeat_interval_ms = cfg->heartbeat_ms;
  w.has_answers_heartbeats = 1;
  w.answers_heartbeats = 1;
  f.body_case = MEMDIAG__V1__FRAME__BODY_WELCOME;
  f.welcome = &w;
  if(send_frame(c, &f) == 0)
    INFO("memdiag plugin: worker %" PRIu64 " registered: %s", id, c->who);
  if(proc_err)
    WARNING("memdiag plugin: worker %" PRIu64 " (%s) cannot be sampled: /proc/%ld: %s "
            "(raise collectd's open file limit if it says too many open files)",
            id, c->who, (long)c->pid, strerror(-proc_err));
}

/* The answer tells the worker that this loop still runs: a plugin that is
 * stopped or wedged but keeps the socket open sends nothing, and the worker
 * reconnects elsewhere. Output still waiting to be written already proves
 * that to a worker once it reads, and a worker that does not read must not
 * make the queue grow. */
static void echo_heartbeat(conn *c, const Memdiag__V1__Heartbeat *in)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Heartbeat hb = MEMDIAG__V1__HEARTBEAT__INIT;

  if(md_conn_pending(c->mc) > 0)
    return;
  hb.has_sequence = in->has_sequence;
  hb.sequence = in->sequence;
  f.body_case = MEMDIAG__V1__FRAME__BODY_HEARTBEAT;
  f.heartbeat = &hb;
  send_frame(c, &f);
}

static void on_frame(conn *c, const Memdiag__V1__Frame *f)
{
  c->last_heard_ms = md_now_ms();
  if(f->body_case == MEMDIAG__V1__FRAME__BODY_GOODBYE) {
    char why[200];
    /* The reason is the peer's text: no control characters into the log. */
    snprintf(why, sizeof(why), "%s",
             f->goodbye->reason && f->goodbye->reason[0] ? f->goodbye->reason : "said goodbye");
    for(char *p = why; *p; p++)
      if((unsigned char)*p < 0x20 || *p == 0x7f)
        *p = '?';
    drop(c, why);
    return;
  }
  if(c->state == C_OPERATOR) {
    if(f->body_case == MEMDIAG__V1__FRAME__BODY_CONTROL) {
      mdp_control_handle(c->serial, c->who, f->control);
    } else if(f->body_case == MEMDIAG__V1__FRAME__BODY_HELLO) {
      peer_warning(
          "memdiag plugin: refused hello from %s: an operator certificate may not register "
          "as a worker",
          c->who);
      goodbye(c, MEMDIAG__V1__STATUS__STATUS_FORBIDDEN,
              "an operator certificate may not register as a worker");
    } else {
      peer_warning("memdiag plugin: closing connection to %s: unexpected %s frame", c->who,
                   md_frame_kind(f));
      goodbye(c, MEMDIAG__V1__STATUS__STATUS_BAD_REQUEST, "operators send control frames only");
    }
    return;
  }
  switch(f->body_case) {
  case MEMDIAG__V1__FRAME__BODY_CONTROL: forbid_control(c, f->control); return;
  case MEMDIAG__V1__FRAME__BODY_HELLO:
    if(c->state == C_HELLO) {
      on_hello(c, f->hello);
      return;
    }
    break;
  case MEMDIAG__V1__FRAME__BODY_HEARTBEAT:
    if(c->state == C_WORKER) {
      echo_heartbeat(c, f->heartbeat);
      return;
    }
    break;
  case MEMDIAG__V1__FRAME__BODY_REPLY:
    if(c->state == C_WORKER) {
      mdp_relay_on_reply(c->worker_id, f->reply);
      return;
    }
    break;
  default: break;
  }
  peer_warning("memdiag plugin: closing connection to %s: unexpected %s frame%s", c->who,
               md_frame_kind(f), c->state == C_HELLO ? " before hello" : "");
  goodbye(c, MEMDIAG__V1__STATUS__STATUS_BAD_REQUEST,
          c->state == C_HELLO ? "send hello first" : "unexpected frame");
}

static void after_handshake(conn *c)
{
  md_role role = md_conn_peer_role(c->mc);
  char who[sizeof(c->who)];

  snprintf(who, sizeof(who), "%s certificate '%s' pid %ld", md_role_name(role),
           md_conn_peer_name(c->mc), (long)c->pid);
  memcpy(c->who, who, sizeof(who));
  if(role == MD_ROLE_OPERATOR) {
    c->state = C_OPERATOR;
    c->deadline_ms = 0;
  } else {
    c->state = C_HELLO; /* the handshake deadline now covers the hello too */
  }
}

static void service(conn *c, short revents)
{
  Memdiag__V1__Frame *f;
  int rc = MD_EAGAIN;

  if(c->dead)
    return;
  if(c->closing) {
    rc = md_conn_flush(c->mc);
    if(rc != MD_EAGAIN)
      drop(c, "refused");
    return;
  }
  if(c->state == C_HANDSHAKE) {
    rc = md_conn_handshake(c->mc);
    if(rc == MD_EAGAIN)
      return;
    if(rc) {
      peer_warning("memdiag plugin: refused connection from %s: %s", c->who, md_conn_error(c->mc));
      drop(c, "TLS handshake failed");
      return;
    }
    after_handshake(c);
  }
  if((revents & POLLOUT) && md_conn_pending(c->mc)) {
    rc = md_conn_flush(c->mc);
    if(rc && rc != MD_EAGAIN) {
      peer_warning("memdiag plugin: closing connection to %s: %s", c->who, md_conn_error(c->mc));
      drop(c, md_conn_error(c->mc));
      return;
    }
  }
  while(!c->dead && !c->closing && (rc = md_conn_recv(c->mc, &f)) == MD_OK) {
    on_frame(c, f);
    md_frame_free(f);
  }
  if(c->dead || c->closing || rc == MD_EAGAIN)
    return;
  if(rc == MD_ECLOSED) {
    drop(c, "connection closed");
    return;
  }
  peer_warning("memdiag plugin: closing connection to %s: %s", c->who, md_conn_error(c->mc));
  drop(c, md_conn_error(c->mc));
}

static void check_deadlines(uint64_t now)
{
  uint64_t silent = 3u * (uint64_t)cfg->heartbeat_ms;

  peer_log_roll(now);
  for(conn *c = conns; c; c = c->next) {
    if(c->dead)
      continue;
    if(c->deadline_ms && now >= c->deadline_ms) {
      if(c->closing)
        drop(c, "refused");
      else {
        peer_warning("memdiag plugin: closing connection from %s: no %s within %u ms", c->who,
                     c->state == C_HANDSHAKE ? "TLS handshake" : "hello",
                     cfg->handshake_timeout_ms);
        drop(c, "timed out");
      }
    } else if(c->state == C_WORKER && now - c->last_heard_ms > silent) {
      char why[96];
      snprintf(why, sizeof(why), "silent for %" PRIu64 " ms (3 heartbeat intervals)",
               now - c->last_heard_ms);
      WARNING("memdiag plugin: forgetting worker %" PRIu64 " (%s): %s", c->worker_id, c->who, why);
      drop(c, why);
    }
  }
}

static void worker_gone(uint64_t id)
{
  mdp_registry_remove(id);
  mdp_relay_worker_gone(id);
  mdp_capture_worker_gone(id);
  for(size_t i = 0; i < n_gone_listeners; i++)
    gone_listeners[i].fn(id, gone_listeners[i].arg);
}

static void sweep(void)
{
  conn **pp = &conns;

  while(*pp) {
    conn *c = *pp;
    if(!c->dead) {
      pp = &c->next;
      continue;
    }
    *pp = c->next;
    nconns--;
    md_conn_free(c->mc);
    if(c->state == C_WORKER)
      worker_gone(c->worker_id);
    free(c);
    /* worker_gone callbacks may have changed the list: start over. */
    pp = &conns;
  }
}

/* ------------------------------------------------------------ the loop */

static int poll_timeout(uint64_t now, uint64_t next_timer, uint64_t next_request)
{
  uint64_t wait = 1000; /* deadlines and heartbeats are checked each second */

  if(next_timer && next_timer - now < wait)
    wait = next_timer > now ? next_timer - now : 0;
  if(next_request && next_request - now < wait)
    wait = next_request > now ? next_request - now : 0;
  return (int)wait;
}

static int should_stop(void)
{
  int stop;

  pthread_mutex_lock(&qlock);
  stop = stop_requested;
  pthread_mutex_unlock(&qlock);
  return stop;
}

static void shutdown_loop(void)
{
  /* Requests end with an error; their callbacks may post more work, which
   * runs too, within reason. */
  for(int round = 0; round < 100; round++) {
    unsigned n = mdp_relay_shutdown();
    n += run_tasks();
    if(n == 0)
      break;
  }
  pthread_mutex_lock(&qlock);
  accepting_tasks = 0;
  pthread_mutex_unlock(&qlock);
  run_tasks();
  while(timers) {
    timer *t = timers;
    timers = t->next;
    free(t);
  }
  for(conn *c = conns; c; c = c->next) {
    md_conn_shutdown(c->mc);
    c->dead = 1;
  }
  sweep();
}

static void *loop_main(void *unused)
{
  struct pollfd *pfd = NULL;
  conn **pconn = NULL;
  size_t pcap = 0;

  (void)unused;
  while(!should_stop()) {
    uint64_t now = md_now_ms();
    uint64_t next_timer = run_timers(now);
    uint64_t next_request = mdp_relay_expire(now);
    size_t n = 2;
    int ready;

    if(nconns + 2 > pcap) {
      size_t ncap = (nconns + 2) * 2;
      struct pollfd *np = realloc(pfd, ncap * sizeof(*np));
      conn **nc = np ? realloc(pconn, ncap * sizeof(*nc)) : NULL;
      if(np)
        pfd = np;
      if(!np || !nc) {
        ERROR("memdiag plugin: out of memory in the server loop");
        sleep(1);
        continue;
      }
      pconn = nc;
      pcap = ncap;
    }
    pfd[0] = (struct pollfd){.fd = wake_fd, .events = POLLIN};
    pfd[1] = (struct pollfd){.fd = now < accept_paused_until ? -1 : listen_fd, .events = POLLIN};
    for(conn *c = conns; c; c = c->next) {
      pfd[n] = (struct pollfd){.fd = md_conn_fd(c->mc), .events = md_conn_events(c->mc)};
      pconn[n++] = c;
    }
    ready = poll(pfd, n, poll_timeout(now, next_timer, next_request));
    if(ready < 0 && errno != EINTR) {
      ERROR("memdiag plugin: poll failed: %s", strerror(errno));
      sleep(1);
      continue;
    }
    if(ready > 0 && (pfd[0].revents & POLLIN)) {
      uint64_t v;
      ssize_t r = read(wake_fd, &v, sizeof(v));
      (void)r;
    }
    for(size_t i = 2; ready > 0 && i < n; i++)
      if(pfd[i].revents)
        service(pconn[i], pfd[i].revents);
    if(ready > 0 && (pfd[1].revents & POLLIN))
      accept_all();
    run_tasks();
    check_deadlines(md_now_ms());
    sweep();
  }
  shutdown_loop();
  free(pfd);
  free(pconn);
  return NULL;
}

/* ------------------------------------------------------------ lifecycle */

static int set_group(const char *path, const char *group)
{
  char *end;
  unsigned long gid;
  struct group *gr;

  errno = 0;
  gid = strtoul(group, &end, 10);
  if(errno || *end != '\0') {
    gr = getgrnam(group);
    if(!gr) {
      ERROR("memdiag plugin: SocketGroup \"%s\": no such group", group);
      return -EINVAL;
    }
    gid = gr->gr_gid;
  }
  if(chown(path, (uid_t)-1, (gid_t)gid) != 0) {
    ERROR("memdiag plugin: SocketGroup \"%s\": chown %s: %s", group, path, strerror(errno));
    return -errno;
  }
  return 0;
}

int mdp_server_start(const mdp_config *config)
{
  md_tls_options o = {0};
  char err[512] = "";
  char cwd[PATH_MAX];
  int rc;

  cfg = config;
  mdp_relay_configure(cfg->dump_timeout_ms);
  o.certificate = cfg->tls_certificate;
  o.key = cfg->tls_key;
  o.ca = cfg->tls_ca;
  o.server = 1;
  o.allowed_peer_roles = MD_ROLE_WORKER | MD_ROLE_OPERATOR;
  rc = md_tls_ctx_new(&tls, &o, err, sizeof(err));
  if(rc) {
    ERROR(
        "memdiag plugin: TLS setup failed (TLSCertificate \"%s\", TLSKey \"%s\", TLSCA \"%s\"): %s",
        o.certificate, o.key, o.ca, err);
    rc = -EINVAL;
    goto fail;
  }
  /* Workers of a preforking server start together: a short backlog would
   * refuse some of them. */
  listen_fd = md_unix_listen(cfg->socket, cfg->socket_mode, SOMAXCONN, err, sizeof(err));
  if(listen_fd < 0) {
    ERROR("memdiag plugin: Socket \"%s\": %s", cfg->socket, err);
    rc = -EINVAL;
    goto fail;
  }
  if(cfg->socket_group) {
    rc = set_group(cfg->socket, cfg->socket_group);
    if(rc)
      goto fail;
  }
  wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if(wake_fd < 0) {
    rc = -errno;
    ERROR("memdiag plugin: eventfd: %s", strerror(errno));
    goto fail;
  }
  started_at = (uint64_t)time(NULL);
  pthread_mutex_lock(&qlock);
  accepting_tasks = 1;
  stop_requested = 0;
  rc = plugin_thread_create(&loop_thread, loop_main, NULL, "memdiag server");
  if(rc)
    accepting_tasks = 0;
  pthread_mutex_unlock(&qlock);
  if(rc) {
    ERROR("memdiag plugin: cannot start the server thread: %s", strerror(rc));
    rc = -rc;
    goto fail;
  }
  INFO("memdiag plugin: listening on %s%s%s (mode %04o)",
       cfg->socket[0] == '/' ? "" : (getcwd(cwd, sizeof(cwd)) ? cwd : "."),
       cfg->socket[0] == '/' ? "" : "/", cfg->socket, cfg->socket_mode);
  return 0;
fail:
  if(listen_fd >= 0) {
    close(listen_fd);
    unlink(cfg->socket);
    listen_fd = -1;
  }
  if(wake_fd >= 0)
    close(wake_fd);
  wake_fd = -1;
  md_tls_ctx_free(tls);
  tls = NULL;
  return rc;
}

void mdp_server_stop(void)
{
  int running;

  pthread_mutex_lock(&qlock);
  running = accepting_tasks;
  stop_requested = 1;
  pthread_mutex_unlock(&qlock);
  if(!running)
    return;
  wake();
  pthread_join(loop_thread, NULL);
  close(listen_fd);
  unlink(cfg->socket);
  listen_fd = -1;
  close(wake_fd);
  wake_fd = -1;
  md_tls_ctx_free(tls);
  tls = NULL;
}
