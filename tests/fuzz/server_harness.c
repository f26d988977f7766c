/* The plugin's message handlers under fuzzing; see server_harness.h. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"
#include "collectd/core/daemon/utils_time.h"
#include "collectd/core/utils/common/common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/capture.h"
#include "store/fsq.h"
#include "config.h"
#include "loop/loop.h"
#include "server/conn.h"
#include "control/control.h"
#include "server/hello.h"
#include "relay/relay.h"
#include "server_harness.h"
#include "wiring.h"
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
  static atomic_int print = -1; /* the capture module's threads log too */
  char buf[1024];
  va_list ap;
  va_start(ap, format);
  vsnprintf(buf, sizeof buf, format, ap);
  va_end(ap);
  if(atomic_load(&print) < 0)
    atomic_store(&print, getenv("MD_FUZZ_LOG") != NULL);
  if(atomic_load(&print))
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

/* The registered worker, kept from run to run (server_harness.h). */
static mdp_conn *worker_conn;

/* The server's sends, which memdiag.c gives the relay and the rstreams:
 * the harness has at most one worker. */
int mdp_server_send_worker(uint64_t connection_id, const Memdiag__V1__Frame *f)
{
  if(!worker_conn || worker_conn->dead || worker_conn->worker_id != connection_id)
    return -ENOENT;
  return mdp_conn_send(worker_conn, f);
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

static void setup(void)
{
  static int ready;

  if(ready)
    return;
  ready = 1;
  mdp_config_init(&cfg);
  /* a directory that cannot be made: a capture is refused, not written */
  if(mdp_capture_config_set(&cfg.capture, "CaptureDirectory", "/proc/memdiag-fuzz", NULL, 0) ||
     mdp_loop_new(&loop) || mdp_registry_init(&cfg.detector, cfg.sampler.memory) ||
     mdp_capture_init(&cfg.capture, loop))
    abort();
  mdp_relay_init(loop, mdp_server_send_worker, cfg.relay.dump_timeout_ms);
  mdp_rstream_init(loop, mdp_server_send_worker, NULL, 0); /* fuzz_stream gives it a store */
  env.cfg = &cfg.server;
  env.hooks = mdp_wiring_server_hooks;
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
  c->uid = getuid();
  c->gid = getgid();
  /* No pidfd, as on a kernel without pidfd_open (server.c takes one at
   * accept): calloc's 0 would be taken for a pidfd on stdin. */
  c->pidfd = -1;
  c->pidfd_err = -ENOSYS;
  snprintf(c->who, sizeof c->who, "fuzz peer %llu", (unsigned long long)serial);
  return c;
}

/* What server.c's sweep does for a connection that is gone. */
static void conn_free(mdp_conn *c)
{
  if(!c)
    return;
  if(c == worker_conn)
    worker_conn = NULL;
  if(c->state == MDP_CONN_WORKER && c->worker_id)
    env.hooks.worker_gone(c->worker_id);
  for(unsigned i = 0; i < QUEUE_MAX; i++)
    md_frame_free(c->mc->in[i]);
  free(c->mc);
  free(c);
}

/* The loop's tasks until none is left, each time after the capture
 * module's file-system thread has run what it was given (capture folders,
 * manual folders: their answers reach the loop as tasks), so that a run's
 * allocations are released within it whatever the threads' timing. */
static void turn_loop(void)
{
  do
    mdp_fsq_wait_idle();
  while(mdp_loop_run_tasks(loop) > 0);
}

/* Queue a frame for the connection as the wire would deliver it: encoded,
 * then decoded into memory the handlers may keep or free; the server
 * serves it. turn: then run the tasks it posted, as the loop's turn would. */
static void deliver(mdp_conn *c, const Memdiag__V1__Frame *f, int turn)
{
  uint8_t *bytes = NULL;
  size_t len = 0, used = 0;
  Memdiag__V1__Frame *copy = NULL;

  if(c->mc->next_in == c->mc->n_in)
    c->mc->n_in = c->mc->next_in = 0; /* all taken: the queue starts over */
  if(c->mc->n_in >= QUEUE_MAX)
    abort();
  if(md_frame_encode(f, MD_FRAME_MAX_DEFAULT, &bytes, &len) != MD_OK)
    return; /* larger than a frame: the wire would never carry it */
  if(md_frame_decode(bytes, len, MD_FRAME_MAX_DEFAULT, &copy, &used) == MD_OK)
    c->mc->in[c->mc->n_in++] = copy;
  free(bytes);
  mdp_hello_service(c, POLLIN);
  if(turn)
    turn_loop();
}

/* The worker (registered once, again after a run ended its connection). */
static mdp_conn *the_worker(void)
{
  static char *caps[] = {"ping", "memory_dump", "allocation_trace_stop", "garbage_profile_start",
                         "thread_dump"};
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Hello h = MEMDIAG__V1__HELLO__INIT;

  if(worker_conn && worker_conn->state == MDP_CONN_WORKER && !worker_conn->dead &&
     !worker_conn->closing) {
    worker_conn->mc->last_request_id = 0;
    return worker_conn;
  }
  conn_free(worker_conn);
  worker_conn = conn_new(MD_ROLE_WORKER, 1);
  h.name = "fuzz-worker";
  h.has_pid = 1;
  h.pid = 1;
  h.runtime = "ruby";
  h.n_capabilities = sizeof caps / sizeof caps[0];
  h.capabilities = caps;
  h.dump_directory = "/proc/memdiag-fuzz";
  f.body_case = MEMDIAG__V1__FRAME__BODY_HELLO;
  f.hello = &h;
  deliver(worker_conn, &f, 1);
  return worker_conn;
}

/* The worker answers the last request it was sent: the relay ends it if
 * it is still pending and drops the reply otherwise. */
static void answer_last(void)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Reply reply = MEMDIAG__V1__REPLY__INIT;

  if(!worker_conn || !worker_conn->mc->last_request_id)
    return;
  reply.has_request_id = 1;
  reply.request_id = worker_conn->mc->last_request_id;
  reply.note = "fuzz";
  f.body_case = MEMDIAG__V1__FRAME__BODY_REPLY;
  f.reply = &reply;
  deliver(worker_conn, &f, 1);
  if(worker_conn)
    worker_conn->mc->last_request_id = 0;
}

/* A worker connection the run closed is swept as server.c would. */
static void end_run(void)
{
  if(worker_conn && (worker_conn->dead || worker_conn->closing))
    conn_free(worker_conn);
  turn_loop();
}

static void reply_noop(const Memdiag__V1__Reply *reply, void *arg)
{
  (void)reply;
  (void)arg;
}

int md_fuzz_server_burst(unsigned n, unsigned *first_call, int *more, unsigned *calls)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Heartbeat hb = MEMDIAG__V1__HEARTBEAT__INIT;
  mdp_conn *c;

  setup();
  if(n > QUEUE_MAX)
    return -1;
  c = the_worker();
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
  end_run();
  return 0;
}

/* The input as the frame body of the target's kind, or NULL. */
static ProtobufCMessage *decode_body(md_fuzz_kind kind, const uint8_t *data, size_t size,
                                     Memdiag__V1__Frame *f)
{
  static const struct {
    const ProtobufCMessageDescriptor *desc;
    Memdiag__V1__Frame__BodyCase body;
  } kinds[] = {
      [MD_FUZZ_HELLO] = {&memdiag__v1__hello__descriptor, MEMDIAG__V1__FRAME__BODY_HELLO},
      [MD_FUZZ_HEARTBEAT] = {&memdiag__v1__heartbeat__descriptor,
                             MEMDIAG__V1__FRAME__BODY_HEARTBEAT},
      [MD_FUZZ_REPLY] = {&memdiag__v1__reply__descriptor, MEMDIAG__V1__FRAME__BODY_REPLY},
      [MD_FUZZ_CONTROL] = {&memdiag__v1__control__descriptor, MEMDIAG__V1__FRAME__BODY_CONTROL},
  };
  ProtobufCMessage *m = protobuf_c_message_unpack(kinds[kind].desc, NULL, size, data);

  if(m) {
    f->body_case = kinds[kind].body;
    /* The bodies are one union of pointers to message structs, which all
     * have one representation (C11 6.2.5p28): any member carries it. */
    f->hello = (Memdiag__V1__Hello *)m;
  }
  return m;
}

/* Connection IDs count up as workers register: 1 in a Control names the
 * worker of this run, so that the corpus reaches it on every run. */
static void name_the_worker(Memdiag__V1__Control *ctl, uint64_t id)
{
  if(ctl->op_case == MEMDIAG__V1__CONTROL__OP_OPERATE && ctl->operate->connection_id == 1)
    ctl->operate->connection_id = id;
  if(ctl->op_case == MEMDIAG__V1__CONTROL__OP_CAPTURE_NOW && ctl->capture_now->connection_id == 1)
    ctl->capture_now->connection_id = id;
}

int md_fuzz_server_run(md_fuzz_kind kind, const uint8_t *data, size_t size)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  ProtobufCMessage *m;
  mdp_conn *to, *worker;

  setup();
  m = decode_body(kind, data, size, &f);
  if(!m)
    return 0;
  /* A Hello comes on a connection of its own; the rest on the worker's,
   * or (Control) an operator's. */
  worker = kind == MD_FUZZ_HELLO ? NULL : the_worker();
  to = kind == MD_FUZZ_HELLO     ? (worker_conn = conn_new(MD_ROLE_WORKER, 1))
       : kind == MD_FUZZ_CONTROL ? conn_new(MD_ROLE_OPERATOR, 2)
                                 : worker;
  if(kind == MD_FUZZ_REPLY) {
    Memdiag__V1__Request req = MEMDIAG__V1__REQUEST__INIT;
    Memdiag__V1__Ping ping = MEMDIAG__V1__PING__INIT;
    req.op_case = MEMDIAG__V1__REQUEST__OP_PING;
    req.ping = &ping;
    if(mdp_relay_request(worker->worker_id, &req, 0, reply_noop, NULL) == 0)
      mdp_loop_run_tasks(loop);
    /* Half the inputs answer the pending request; the others name
     * whatever request_id they carry. */
    if(size % 2 == 0) {
      f.reply->has_request_id = 1;
      f.reply->request_id = worker->mc->last_request_id;
    }
  } else if(kind == MD_FUZZ_CONTROL) {
    name_the_worker(f.control, worker->worker_id);
  }
  deliver(to, &f, 1);
  /* An operation relayed to the worker, or the ping the input did not
   * answer: the worker answers it. */
  answer_last();
  protobuf_c_message_free_unpacked(m, NULL);
  if(to != worker)
    conn_free(to);
  end_run();
  return 0;
}

/* ---------------------------------------------------------------- streams */

/* The store's writer thread runs, as in the plugin; its events reach the
 * loop only when the harness turns it (md_fuzz_stream_turn), after
 * waiting for the writer to run everything queued (mdp_store_wait_idle).
 * So what a run does is the same whatever the threads' timing: the credit
 * a stream has, when its end is seen, the order of events; and every
 * allocation of a run is released within it (libFuzzer looks for leaks
 * when a run's mallocs and frees differ). */
static mdp_store *store;
static int dir_fd = -1;
static char dir_path[256];
static const char *result_name;
static md_fuzz_ask asked;
static uint64_t stream_request;
static unsigned replies;
static int worker_answered;    /* a Reply frame was delivered this run */
static int reply_names_result; /* the last reply is OK and names the stored file */

#define WORKER_FILE "worker-dump.json"

void md_fuzz_stream_turn(void)
{
  do
    mdp_store_wait_idle(store);
  while(mdp_loop_run_tasks(loop) > 0);
}

/* Every entry of the folder removed; returns a bit set: 1 the stored
 * result, 2 the worker's file, 4 anything else (a temporary file). */
static int empty_folder(void)
{
  DIR *d;
  struct dirent *e;
  int seen = 0, fd = dup(dir_fd);

  if(fd < 0 || !(d = fdopendir(fd)))
    abort();
  rewinddir(d); /* the offset is shared with dir_fd's */
  while((e = readdir(d))) {
    if(!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
      continue;
    seen |= !strcmp(e->d_name, result_name ? result_name : "") ? 1
            : !strcmp(e->d_name, WORKER_FILE)                  ? 2
                                                               : 4;
    if(unlinkat(dir_fd, e->d_name, 0) != 0)
      abort();
  }
  closedir(d);
  return seen;
}

static void stream_cleanup(void)
{
  mdp_store_stop(store);
  empty_folder();
  rmdir(dir_path);
}

static void stream_setup(void)
{
  const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";

  setup();
  if(store)
    return;
  /* on tmpfs when there is one: a stored result is fsynced */
  if(access("/dev/shm", W_OK) == 0)
    base = "/dev/shm";
  snprintf(dir_path, sizeof dir_path, "%s/memdiag-fuzz-XXXXXX", base);
  if(!mkdtemp(dir_path) || (dir_fd = open(dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
     mdp_store_start(&store, 1u << 20) != 0) {
    fprintf(stderr, "fuzz harness: cannot make a folder for results in %s\n", base);
    abort();
  }
  atexit(stream_cleanup);
}

static char last_error[512];

static void stream_done(const Memdiag__V1__Reply *reply, void *arg)
{
  char want[sizeof dir_path + 32];

  (void)arg;
  replies++;
  snprintf(last_error, sizeof last_error, "%s", reply->error ? reply->error : "");
  snprintf(want, sizeof want, "%s/%s", dir_path, result_name);
  reply_names_result =
      reply->status == MEMDIAG__V1__STATUS__STATUS_OK && reply->path && !strcmp(reply->path, want);
}

uint64_t md_fuzz_stream_begin(md_fuzz_ask ask, uint32_t window, int zstd_level)
{
  Memdiag__V1__Request req = MEMDIAG__V1__REQUEST__INIT;
  Memdiag__V1__MemoryDump md = MEMDIAG__V1__MEMORY_DUMP__INIT;
  Memdiag__V1__AllocationTraceStop tp = MEMDIAG__V1__ALLOCATION_TRACE_STOP__INIT;
  Memdiag__V1__ThreadDump td = MEMDIAG__V1__THREAD_DUMP__INIT;
  mdp_relay_sink sink = {.dir_path = dir_path, .zstd_level = zstd_level};

  stream_setup();
  mdp_rstream_init(loop, mdp_server_send_worker, store, window);
  asked = ask;
  replies = 0;
  last_error[0] = '\0';
  worker_answered = 0;
  reply_names_result = 0;
  stream_request = 0;
  result_name = zstd_level ? "result.zst" : "result";
  sink.dir_fd = dir_fd;
  sink.name = result_name;
  req.op_case = MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP;
  req.memory_dump = &md;
  if(ask == MD_FUZZ_ASK_TRACE) {
    req.op_case = MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_STOP;
    req.allocation_trace_stop = &tp;
  } else if(ask == MD_FUZZ_ASK_THREADS) {
    req.op_case = MEMDIAG__V1__REQUEST__OP_THREAD_DUMP;
    req.thread_dump = &td;
  } else if(ask == MD_FUZZ_ASK_TRANSFER) {
    sink.compress_from = WORKER_FILE;
    sink.compress_owner = getuid();
  }
  /* on the loop's thread: submitted (or failed) within the call */
  if(mdp_relay_request_to(the_worker()->worker_id, &req, 0, &sink, stream_done, NULL) != 0)
    abort();
  if(worker_conn)
    stream_request = worker_conn->mc->last_request_id;
  return stream_request;
}

void md_fuzz_stream_frame(const Memdiag__V1__Frame *f)
{
  if(f->body_case == MEMDIAG__V1__FRAME__BODY_REPLY)
    worker_answered = 1;
  if(worker_conn)
    deliver(worker_conn, f, 0);
}

void md_fuzz_stream_worker_gone(void) { conn_free(worker_conn); }

void md_fuzz_stream_wait(unsigned ms)
{
  uint64_t until = mdp_loop_now_ms() + ms;

  for(uint64_t now; (now = mdp_loop_now_ms()) < until;)
    mdp_loop_turn(loop, (int)(until - now));
  md_fuzz_stream_turn();
}

const char *md_fuzz_stream_error(void) { return last_error; }

/* Only before the worker answers, as the hook writes it: afterwards the
 * store's writer may be compressing it (the two would race). */
void md_fuzz_stream_worker_file(const uint8_t *data, size_t len)
{
  int fd;

  if(worker_answered)
    return;
  fd = openat(dir_fd, WORKER_FILE, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  if(fd < 0 || write(fd, data, len) != (ssize_t)len)
    abort();
  close(fd);
}

int md_fuzz_stream_end(void)
{
  int seen;

  /* a connection the input closed is swept; a live worker answers */
  if(worker_conn && (worker_conn->dead || worker_conn->closing))
    conn_free(worker_conn);
  md_fuzz_stream_turn();
  if(!replies)
    answer_last();
  md_fuzz_stream_turn();
  if(replies != 1 || mdp_rstream_live() != 0 || mdp_rstream_refused() != 0) {
    fprintf(stderr,
            "fuzz harness: %u replies for one request, %u streams left, %u illegal changes of a "
            "stream's state\n",
            replies, mdp_rstream_live(), mdp_rstream_refused());
    abort();
  }
  seen = empty_folder();
  if(getenv("MD_FUZZ_LOG"))
    fprintf(stderr, "stream: %s; folder had%s%s%s%s\n",
            reply_names_result ? "stored, the reply names it" : "not stored",
            seen & 1 ? " result" : "", seen & 2 ? " worker-file" : "", seen & 4 ? " temporary" : "",
            seen ? "" : " nothing");
  /* Nothing of a stream stays but its result, and only when the reply
   * names it; a compressed transfer leaves no copy of the worker's file. */
  if((seen & 4) || ((seen & 1) && !reply_names_result) ||
     (reply_names_result && asked == MD_FUZZ_ASK_TRANSFER && (seen & 2))) {
    fprintf(stderr, "fuzz harness: folder after the request: %s%s%s(reply %s the result)\n",
            seen & 1 ? "result " : "", seen & 2 ? "worker file " : "",
            seen & 4 ? "temporary file " : "", reply_names_result ? "names" : "does not name");
    abort();
  }
  return reply_names_result;
}
