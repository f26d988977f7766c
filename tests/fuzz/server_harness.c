/* The plugin's message handlers under fuzzing; see server_harness.h. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"
#include "collectd/core/daemon/utils_time.h"
#include "collectd/core/utils/common/common.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/capture.h"
#include "config.h"
#include "loop/loop.h"
#include "server/conn.h"
#include "server/control.h"
#include "server/hello.h"
#include "server/relay.h"
#include "server_harness.h"
#include "workers/registry.h"

/* ---------------------------------------------------------------- collectd */

char *hostname_g = "fuzz";

cdtime_t cdtime(void) { return TIME_T_TO_CDTIME_T(1790000000); }
cdtime_t plugin_get_interval(void) { return TIME_T_TO_CDTIME_T(10); }
int plugin_dispatch_values(value_list_t const *vl)
{
  (void)vl;
  return 0;
}

int plugin_dispatch_notification(const notification_t *n)
{
  (void)n;
  return 0;
}

int plugin_thread_create(pthread_t *thread, void *(*start)(void *), void *arg, char const *name)
{
  (void)name;
  return pthread_create(thread, NULL, start, arg);
}

char *sstrncpy(char *dest, const char *src, size_t n)
{
  if(n == 0)
    return dest;
  strncpy(dest, src, n - 1);
  dest[n - 1] = '\0';
  return dest;
}

/* Formatted, so that a bad format or argument in a log line is caught;
 * printed with MD_FUZZ_LOG=1 in the environment (to see what an input
 * reached). */
void plugin_log(int level, const char *format, ...)
{
  static int print = -1;
  char buf[1024];
  va_list ap;
  va_start(ap, format);
  vsnprintf(buf, sizeof buf, format, ap);
  va_end(ap);
  if(print < 0)
    print = getenv("MD_FUZZ_LOG") != NULL;
  if(print)
    fprintf(stderr, "log %d: %s\n", level, buf);
}

/* ---------------------------------------------------------------- md_conn */

#define QUEUE_MAX 256

/* In place of the TLS connection (opaque in md/tls.h): frames to hand to
 * the plugin, and the last request sent to a worker. */
struct md_conn {
  md_role role;
  Memdiag__V1__Frame *in[QUEUE_MAX];
  unsigned n_in, next_in;
  uint64_t last_request_id; /* request_id of the last Request sent here */
};

int md_conn_handshake(md_conn *c)
{
  (void)c;
  return MD_OK;
}

md_role md_conn_peer_role(const md_conn *c) { return c->role; }
const char *md_conn_peer_name(const md_conn *c)
{
  return c->role == MD_ROLE_OPERATOR ? "memdiag operator" : "memdiag worker";
}
const char *md_conn_error(const md_conn *c)
{
  (void)c;
  return "";
}
size_t md_conn_pending(const md_conn *c)
{
  (void)c;
  return 0;
}
int md_conn_flush(md_conn *c)
{
  (void)c;
  return MD_OK;
}
void md_conn_shutdown(md_conn *c) { (void)c; }
void md_conn_set_max_frame(md_conn *c, size_t max_len)
{
  (void)c;
  (void)max_len;
}

int md_conn_recv(md_conn *c, Memdiag__V1__Frame **out)
{
  if(c->next_in >= c->n_in)
    return MD_EAGAIN;
  *out = c->in[c->next_in];
  c->in[c->next_in++] = NULL;
  return MD_OK;
}

/* Encoded as the real connection would, then dropped. */
int md_conn_send(md_conn *c, const Memdiag__V1__Frame *frame)
{
  uint8_t *bytes = NULL;
  size_t len = 0;
  int rc = md_frame_encode(frame, MD_FRAME_MAX_DEFAULT, &bytes, &len);

  if(rc)
    return rc;
  free(bytes);
  if(frame->body_case == MEMDIAG__V1__FRAME__BODY_REQUEST)
    c->last_request_id = frame->request->request_id;
  return MD_OK;
}

/* ---------------------------------------------------------------- plugin */

static mdp_config cfg;
static mdp_loop *loop;
static mdp_conn_env env;

/* The relay's and capture's way to a worker (memdiag.c gives the server's
 * mdp_server_send_worker): the harness has at most one worker. */
static mdp_conn *worker_conn;

static int send_worker(uint64_t connection_id, const Memdiag__V1__Frame *f)
{
  if(!worker_conn || worker_conn->dead || worker_conn->worker_id != connection_id)
    return -ENOENT;
  return mdp_conn_send(worker_conn, f);
}

int mdp_server_send_worker(uint64_t connection_id, const Memdiag__V1__Frame *f)
{
  return send_worker(connection_id, f);
}

int mdp_server_send_operator(uint64_t serial, const Memdiag__V1__Frame *f)
{
  uint8_t *bytes = NULL;
  size_t len = 0;
  (void)serial;
  if(md_frame_encode(f, MD_FRAME_MAX_DEFAULT, &bytes, &len) == MD_OK)
    free(bytes);
  return 0;
}

uint64_t mdp_server_started_at(void) { return 1790000000; }

static int worker_hello(const mdp_worker_hello *hello, uint64_t *id, int *proc_err)
{
  return mdp_registry_add(hello, id, proc_err);
}

static void worker_gone(uint64_t id)
{
  mdp_registry_remove(id);
  mdp_relay_worker_gone(id);
  mdp_capture_worker_gone(id);
}

static void setup(void)
{
  mdp_config_init(&cfg);
  /* a directory that cannot be made: a capture is refused, not written */
  if(mdp_capture_config_set(&cfg.capture, "CaptureDirectory", "/proc/memdiag-fuzz", NULL, 0) ||
     mdp_loop_new(&loop) || mdp_registry_init(&cfg.detector, cfg.memory) ||
     mdp_capture_init(&cfg.capture, loop))
    abort();
  mdp_relay_init(loop, send_worker, cfg.dump_timeout_ms);
  env.cfg = &cfg;
  env.hooks.worker_hello = worker_hello;
  env.hooks.worker_gone = worker_gone;
  env.hooks.worker_reply = mdp_relay_on_reply;
  env.hooks.control = mdp_control_handle;
  env.hooks.stopping = mdp_relay_shutdown;
}

static mdp_conn *conn_new(md_role role, uint64_t serial)
{
  mdp_conn *c = calloc(1, sizeof *c);
  if(!c || !(c->mc = calloc(1, sizeof *c->mc)))
    abort();
  c->mc->role = role;
  c->env = &env;
  c->serial = serial;
  c->state = MDP_CONN_HANDSHAKE;
  /* The peer's pid (SO_PEERCRED in the plugin): 1, which always exists,
   * so that a corpus Hello naming pid 1 registers on any machine. */
  c->pid = 1;
  c->pidfd = -1; /* as on a kernel without pidfds: nothing is signalled */
  c->uid = getuid();
  /* No pidfd, as on a kernel without pidfd_open (server.c takes one at
   * accept): calloc's 0 would be taken for a pidfd on stdin. */
  c->pidfd = -1;
  c->pidfd_err = -ENOSYS;
  c->gid = getgid();
  snprintf(c->who, sizeof c->who, "fuzz peer %llu", (unsigned long long)serial);
  return c;
}

/* What server.c's sweep does for a connection that is gone. */
static void conn_free(mdp_conn *c)
{
  if(!c)
    return;
  if(c->state == MDP_CONN_WORKER && c->worker_id)
    env.hooks.worker_gone(c->worker_id);
  for(unsigned i = 0; i < QUEUE_MAX; i++)
    md_frame_free(c->mc->in[i]);
  free(c->mc);
  free(c);
}

/* Queue a frame for the connection as the wire would deliver it: encoded,
 * then decoded into memory the handlers may keep or free. */
static void deliver(mdp_conn *c, const Memdiag__V1__Frame *f)
{
  uint8_t *bytes = NULL;
  size_t len = 0, used = 0;
  Memdiag__V1__Frame *copy = NULL;

  if(c->mc->n_in >= QUEUE_MAX)
    abort();
  if(md_frame_encode(f, MD_FRAME_MAX_DEFAULT, &bytes, &len) != MD_OK)
    return; /* larger than a frame: the wire would never carry it */
  if(md_frame_decode(bytes, len, MD_FRAME_MAX_DEFAULT, &copy, &used) == MD_OK)
    c->mc->in[c->mc->n_in++] = copy;
  free(bytes);
  mdp_hello_service(c, POLLIN);
  mdp_loop_run_tasks(loop);
}

static void deliver_hello(mdp_conn *c, Memdiag__V1__Hello *h)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  f.body_case = MEMDIAG__V1__FRAME__BODY_HELLO;
  f.hello = h;
  deliver(c, &f);
}

static mdp_conn *registered_worker(void)
{
  static char *caps[] = {"ping", "memory_dump", "garbage_profile_start", "thread_dump"};
  Memdiag__V1__Hello h = MEMDIAG__V1__HELLO__INIT;
  mdp_conn *c = conn_new(MD_ROLE_WORKER, 1);

  h.name = "fuzz-worker";
  h.has_pid = 1;
  h.pid = 1;
  h.runtime = "ruby";
  h.n_capabilities = sizeof caps / sizeof caps[0];
  h.capabilities = caps;
  h.dump_directory = "/proc/memdiag-fuzz";
  deliver_hello(c, &h);
  return c;
}

static void reply_noop(const Memdiag__V1__Reply *reply, void *arg)
{
  (void)reply;
  (void)arg;
}

int md_fuzz_server_burst(unsigned n, unsigned *first_call, int *more, unsigned *calls)
{
  static int ready;
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Heartbeat hb = MEMDIAG__V1__HEARTBEAT__INIT;
  mdp_conn *c;

  if(!ready) {
    setup();
    ready = 1;
  }
  if(n > QUEUE_MAX)
    return -1;
  c = worker_conn = registered_worker();
  f.body_case = MEMDIAG__V1__FRAME__BODY_HEARTBEAT;
  f.heartbeat = &hb;
  hb.has_sequence = 1;
  c->mc->n_in = c->mc->next_in = 0;
  for(unsigned i = 0; i < n; i++) {
    uint8_t *bytes = NULL;
    size_t len = 0, used = 0;
    hb.sequence = i + 1;
    if(md_frame_encode(&f, MD_FRAME_MAX_DEFAULT, &bytes, &len) ||
       md_frame_decode(bytes, len, MD_FRAME_MAX_DEFAULT, &c->mc->in[c->mc->n_in++], &used))
      abort();
    free(bytes);
  }
  mdp_hello_service(c, POLLIN);
  *first_call = c->mc->next_in;
  *more = c->more;
  *calls = 1;
  while(c->mc->next_in < c->mc->n_in && *calls < 1000) {
    mdp_hello_service(c, POLLIN);
    (*calls)++;
  }
  conn_free(c);
  worker_conn = NULL;
  mdp_loop_run_tasks(loop);
  return 0;
}

int md_fuzz_server_run(md_fuzz_kind kind, const uint8_t *data, size_t size)
{
  static int ready;
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  mdp_conn *operator= NULL;

  if(!ready) {
    setup();
    ready = 1;
  }

  if(kind == MD_FUZZ_HELLO) {
    Memdiag__V1__Hello *h = memdiag__v1__hello__unpack(NULL, size, data);
    if(h) {
      worker_conn = conn_new(MD_ROLE_WORKER, 1);
      deliver_hello(worker_conn, h);
      memdiag__v1__hello__free_unpacked(h, NULL);
    }
  } else {
    worker_conn = registered_worker();
  }

  if(kind == MD_FUZZ_HEARTBEAT) {
    Memdiag__V1__Heartbeat *hb = memdiag__v1__heartbeat__unpack(NULL, size, data);
    if(hb) {
      f.body_case = MEMDIAG__V1__FRAME__BODY_HEARTBEAT;
      f.heartbeat = hb;
      deliver(worker_conn, &f);
      memdiag__v1__heartbeat__free_unpacked(hb, NULL);
    }
  } else if(kind == MD_FUZZ_REPLY) {
    Memdiag__V1__Reply *r = memdiag__v1__reply__unpack(NULL, size, data);
    if(r) {
      Memdiag__V1__Request req = MEMDIAG__V1__REQUEST__INIT;
      Memdiag__V1__Ping ping = MEMDIAG__V1__PING__INIT;
      req.op_case = MEMDIAG__V1__REQUEST__OP_PING;
      req.ping = &ping;
      if(mdp_relay_request(worker_conn->worker_id, &req, 0, reply_noop, NULL) == 0)
        mdp_loop_run_tasks(loop);
      /* Half the inputs answer the pending request; the others name
       * whatever request_id they carry. */
      if(size % 2 == 0) {
        r->has_request_id = 1;
        r->request_id = worker_conn->mc->last_request_id;
      }
      f.body_case = MEMDIAG__V1__FRAME__BODY_REPLY;
      f.reply = r;
      deliver(worker_conn, &f);
      memdiag__v1__reply__free_unpacked(r, NULL);
    }
  } else if(kind == MD_FUZZ_CONTROL) {
    Memdiag__V1__Control *ctl = memdiag__v1__control__unpack(NULL, size, data);
    if(ctl) {
      /* Connection IDs count up across runs: 1 in the input names this
       * run's worker, so that the corpus reaches it on every run. */
      if(ctl->op_case == MEMDIAG__V1__CONTROL__OP_OPERATE && ctl->operate->connection_id == 1)
        ctl->operate->connection_id = worker_conn->worker_id;
      if(ctl->op_case == MEMDIAG__V1__CONTROL__OP_CAPTURE_NOW &&
         ctl->capture_now->connection_id == 1)
        ctl->capture_now->connection_id = worker_conn->worker_id;
      operator= conn_new(MD_ROLE_OPERATOR, 2);
      f.body_case = MEMDIAG__V1__FRAME__BODY_CONTROL;
      f.control = ctl;
      deliver(operator, & f);
      /* An operation relayed to the worker: the worker answers it. */
      if(worker_conn->mc->last_request_id) {
        Memdiag__V1__Frame rf = MEMDIAG__V1__FRAME__INIT;
        Memdiag__V1__Reply reply = MEMDIAG__V1__REPLY__INIT;
        reply.has_request_id = 1;
        reply.request_id = worker_conn->mc->last_request_id;
        reply.note = "fuzz";
        rf.body_case = MEMDIAG__V1__FRAME__BODY_REPLY;
        rf.reply = &reply;
        deliver(worker_conn, &rf);
      }
      memdiag__v1__control__free_unpacked(ctl, NULL);
    }
  }

  conn_free(operator);
  conn_free(worker_conn);
  worker_conn = NULL;
  mdp_loop_run_tasks(loop);
  return 0;
}
