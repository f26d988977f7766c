/* A small worker and operator client for the plugin's integration tests and
 * the sample-cost benchmark, written on mdproto only (no Ruby), so that the
 * plugin's own behaviour is tested apart from the hook's.
 *
 *   md-test-worker worker   [options]   hello, heartbeats, answers requests
 *   md-test-worker control  [options] list|status|ping ID|thread_dump ID|capture ID
 *   md-test-worker garbage  --socket P  bytes that are not TLS; waits for the close
 *
 * Options: --socket P --cert C --key K --ca A (or MEMDIAG_SOCKET, ...),
 * --name N, --claim-pid P (hello names another PID), --skip-hello,
 * --control-after-hello (a worker certificate sends a Control),
 * --show-heartbeats (print the plugin's heartbeat answers),
 * --allocate-mb M (touch M MiB so that RSS shows it), --big-hello N (a
 * hello with an N-byte name), --dump-frame N (thread_dump answers with a
 * Reply frame of exactly N bytes, the largest a MaxFrameSize of N lets
 * through), --control-flood N (after the hello, N Control frames sent
 * without reading the answers), --error-text T (ping and operations it
 * does not offer answered with an error saying T), --goodbye T (a Goodbye with reason T right after
 * the welcome, then exit), --fork N (N workers, one process each; the parent waits), --exit-after
 * S, --handoff-on-dump F (offers memory_dump; a memory_dump request makes the worker fork and
 * exit, leaving its connection to the child, which prints "handed off pid=C from=P" and
 * answers the request ok once file F exists), --bloated-hello N (a hello listing N empty
 * capabilities, sent whatever its size).
 *
 * Output: "welcome connection_id=N pid=P" once registered, with
 * --show-heartbeats "heartbeat back sequence=S sent=N rtt_us=U" for each
 * heartbeat the plugin answers (N: heartbeats sent so far, U: microseconds
 * from sending heartbeat S to reading its answer); for control,
 * one line "status=NAME" then a line per worker "worker id=N pid=P name=S
 * rss=B" or the reply's fields. Exit 0 on success, 3 when refused (Goodbye
 * or a non-ok status), 1 on other errors, 2 on usage errors. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "md/tls.h"

typedef struct {
  const char *socket, *cert, *key, *ca, *name, *error_text, *goodbye, *handoff;
  const char *cgroup_dir; /* --cgroup-dir D: with --fork, child k joins cgroup D/k first */
  long claim_pid;
  int skip_hello, control_after_hello, show_heartbeats;
  long allocate_mb, fork_n, exit_after, big_hello, dump_frame, control_flood, bloated_hello;
} opts;

static long dump_frame;        /* --dump-frame */
static const char *error_text; /* --error-text */
static const char *handoff;    /* --handoff-on-dump */
static uint64_t handed_off;    /* the memory_dump request the child still owes */

/* Send times of the last heartbeats, by sequence, for --show-heartbeats. */
#define BEAT_RING 64
static uint64_t beat_sent_us[BEAT_RING];

static uint64_t now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Join cgroup dir/k (its cgroup.procs), so that the worker registers from
 * inside it (tests/bench/sample-cost). */
static int join_cgroup(const char *dir, long k)
{
  char path[4096];
  FILE *f;
  int rc;

  snprintf(path, sizeof path, "%s/%ld/cgroup.procs", dir, k);
  f = fopen(path, "w");
  if(!f) {
    perror(path);
    return -1;
  }
  rc = fprintf(f, "%ld\n", (long)getpid()) < 0;
  return (fclose(f) != 0 || rc) ? -1 : 0;
}

static int usage(void)
{
  fprintf(stderr,
          "usage: md-test-worker worker|control [--socket P --cert C --key K --ca A] "
          "[--name N] [--claim-pid P] [--skip-hello] [--control-after-hello] [--show-heartbeats] "
          "[--allocate-mb M] [--fork N [--cgroup-dir D]] [--exit-after S] [verb args]\n");
  return 2;
}

static int connect_tls(const opts *o, md_tls_ctx **ctx, md_conn **c)
{
  md_tls_options to = {.certificate = o->cert,
                       .key = o->key,
                       .ca = o->ca,
                       .server = 0,
                       .allowed_peer_roles = MD_ROLE_PLUGIN};
  char err[512];
  int rc = md_tls_ctx_new(ctx, &to, err, sizeof(err));

  if(rc) {
    fprintf(stderr, "md-test-worker: TLS setup: %s\n", err);
    return 1;
  }
  /* Many workers starting at once can fill the listen backlog (AF_UNIX
   * connect then fails with EAGAIN), or be closed at accept while more than
   * 64 of their uid are still in their handshake: try again for a while, as
   * the hook does. */
  for(int attempt = 0; attempt < 100; attempt++) {
    rc = md_client_connect(c, *ctx, o->socket, 10000, err, sizeof(err));
    if(rc == 0 || (!strstr(err, "unavailable") && !strstr(err, "timed out") &&
                   !strstr(err, "peer closed the connection")))
      break;
    usleep(50000 + (useconds_t)(getpid() % 100) * 1000);
  }
  if(rc) {
    fprintf(stderr, "md-test-worker: connect %s: %s\n", o->socket, err);
    return 1;
  }
  return 0;
}

static int print_goodbye(const Memdiag__V1__Frame *f)
{
  printf("goodbye status=%s reason=%s\n",
         md_status_name(f->goodbye->has_status ? f->goodbye->status : 0),
         f->goodbye->reason ? f->goodbye->reason : "");
  fflush(stdout);
  return 3;
}

static int answer(md_conn *c, const Memdiag__V1__Request *req)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Reply r = MEMDIAG__V1__REPLY__INIT;
  static char dump[] = "test worker: main thread idle\n";

  r.has_request_id = 1;
  r.request_id = req->request_id;
  r.has_status = 1;
  switch(req->op_case) {
  case MEMDIAG__V1__REQUEST__OP_PING:
    r.status = MEMDIAG__V1__STATUS__STATUS_OK;
    if(error_text) {
      r.status = MEMDIAG__V1__STATUS__STATUS_ERROR;
      r.error = (char *)error_text;
      break;
    }
    if(req->ping->has_payload) {
      r.has_data = 1;
      r.data = req->ping->payload;
    }
    break;
  case MEMDIAG__V1__REQUEST__OP_THREAD_DUMP:
    r.status = MEMDIAG__V1__STATUS__STATUS_OK;
    r.has_data = 1;
    r.data.data = (uint8_t *)dump;
    r.data.len = sizeof(dump) - 1;
    if(dump_frame > 0) {
      int rc;
      uint8_t *fill = malloc((size_t)dump_frame);
      if(!fill)
        return 1;
      memset(fill, 'd', (size_t)dump_frame);
      r.data.data = fill;
      f.body_case = MEMDIAG__V1__FRAME__BODY_REPLY;
      f.reply = &r;
      /* The length prefix of the data shrinks with it: find the exact fit. */
      for(r.data.len = (size_t)dump_frame; r.data.len > 0; r.data.len--)
        if(memdiag__v1__frame__get_packed_size(&f) <= (size_t)dump_frame)
          break;
      rc = md_conn_send_wait(c, &f, 5000) ? 1 : 0;
      free(fill);
      return rc;
    }
    break;
  case MEMDIAG__V1__REQUEST__OP_SCHEDULER_DUMP:
    /* Never answers: lets tests see the plugin's own timeout. */
    return 0;
  case MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP:
    if(handoff) {
      /* The process that registered leaves; a child it forked keeps the
       * connection and answers later (issue 11: it must not get the
       * registered process's restart signal sent to whoever takes its PID). */
      pid_t parent = getpid();
      pid_t child = fork();
      if(child < 0)
        return 1;
      if(child > 0)
        _exit(0);
      handed_off = req->request_id;
      printf("handed off pid=%ld from=%ld\n", (long)getpid(), (long)parent);
      fflush(stdout);
      return 0;
    }
    /* fall through */
  default:
    r.status = MEMDIAG__V1__STATUS__STATUS_UNSUPPORTED;
    r.error = error_text ? (char *)error_text : "the test worker only answers ping and thread_dump";
    break;
  }
  f.body_case = MEMDIAG__V1__FRAME__BODY_REPLY;
  f.reply = &r;
  return md_conn_send_wait(c, &f, 5000) ? 1 : 0;
}

static int run_worker(const opts *o)
{
  md_tls_ctx *ctx = NULL;
  md_conn *c = NULL;
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Hello h = MEMDIAG__V1__HELLO__INIT;
  Memdiag__V1__Frame *in = NULL;
  char *caps[] = {"ping", "thread_dump", "scheduler_dump", "memory_dump"};
  uint32_t heartbeat_ms = 1000;
  uint64_t seq = 0, next_beat, end_at = 0;
  char *big = NULL, **bloat = NULL;
  int rc;

  if(o->allocate_mb > 0) {
    size_t n = (size_t)o->allocate_mb << 20;
    char *p = malloc(n);
    if(!p)
      return 1;
    memset(p, 0x5a, n); /* resident, and kept for the process's life */
    __asm__ volatile("" : : "r"(p) : "memory");
  }
  rc = connect_tls(o, &ctx, &c);
  if(rc)
    goto out;
  if(!o->skip_hello) {
    h.name = (char *)o->name;
    if(o->big_hello > 0) {
      /* A hello larger than the plugin's MaxFrameSize. */
      big = malloc((size_t)o->big_hello + 1);
      if(!big) {
        rc = 1;
        goto out;
      }
      memset(big, 'x', (size_t)o->big_hello);
      big[o->big_hello] = '\0';
      h.name = big;
    }
    h.has_pid = 1;
    h.pid = (uint32_t)(o->claim_pid ? o->claim_pid : getpid());
    h.has_ppid = 1;
    h.ppid = (uint32_t)getppid();
    h.runtime = "c-test";
    h.runtime_version = "1";
    h.n_capabilities = handoff ? 4 : 3;
    h.capabilities = caps;
    if(o->bloated_hello > 0) {
      /* Two bytes on the wire each, a pointer and a string once unpacked. */
      bloat = malloc((size_t)o->bloated_hello * sizeof(char *));
      if(!bloat) {
        rc = 1;
        goto out;
      }
      for(long k = 0; k < o->bloated_hello; k++)
        bloat[k] = "";
      h.n_capabilities = (size_t)o->bloated_hello;
      h.capabilities = bloat;
      md_conn_set_max_frame(c, 64u << 20);
    }
    f.body_case = MEMDIAG__V1__FRAME__BODY_HELLO;
    f.hello = &h;
    rc = md_conn_send_wait(c, &f, 5000) ? 1 : 0;
    if(rc)
      goto out;
  }
  for(long i = 0; i < o->control_flood; i++) {
    Memdiag__V1__Control ctl = MEMDIAG__V1__CONTROL__INIT;
    Memdiag__V1__ListWorkers lw = MEMDIAG__V1__LIST_WORKERS__INIT;
    Memdiag__V1__Frame cf = MEMDIAG__V1__FRAME__INIT;
    ctl.request_id = (uint64_t)i;
    ctl.op_case = MEMDIAG__V1__CONTROL__OP_LIST_WORKERS;
    ctl.list_workers = &lw;
    cf.body_case = MEMDIAG__V1__FRAME__BODY_CONTROL;
    cf.control = &ctl;
    rc = md_conn_send_wait(c, &cf, 5000);
    if(rc == MD_ECLOSED) {
      printf("closed by the plugin\n");
      rc = 0;
      goto out;
    }
    if(rc) {
      rc = 1;
      goto out;
    }
  }
  if(o->control_after_hello) {
    Memdiag__V1__Control ctl = MEMDIAG__V1__CONTROL__INIT;
    Memdiag__V1__ListWorkers lw = MEMDIAG__V1__LIST_WORKERS__INIT;
    Memdiag__V1__Frame cf = MEMDIAG__V1__FRAME__INIT;
    ctl.request_id = 7;
    ctl.op_case = MEMDIAG__V1__CONTROL__OP_LIST_WORKERS;
    ctl.list_workers = &lw;
    cf.body_case = MEMDIAG__V1__FRAME__BODY_CONTROL;
    cf.control = &ctl;
    rc = md_conn_send_wait(c, &cf, 5000) ? 1 : 0;
    if(rc)
      goto out;
  }
  if(o->exit_after > 0)
    end_at = md_now_ms() + (uint64_t)o->exit_after * 1000u;
  next_beat = md_now_ms() + heartbeat_ms;
  for(;;) {
    uint64_t now = md_now_ms();
    int wait = next_beat > now ? (int)(next_beat - now) : 0;

    if(end_at && now >= end_at) {
      rc = 0;
      goto out;
    }
    if(handed_off && access(handoff, F_OK) == 0) {
      Memdiag__V1__Frame rf = MEMDIAG__V1__FRAME__INIT;
      Memdiag__V1__Reply rr = MEMDIAG__V1__REPLY__INIT;
      rr.has_request_id = rr.has_status = 1;
      rr.request_id = handed_off;
      rr.status = MEMDIAG__V1__STATUS__STATUS_OK;
      rf.body_case = MEMDIAG__V1__FRAME__BODY_REPLY;
      rf.reply = &rr;
      handed_off = 0;
      if(md_conn_send_wait(c, &rf, 5000)) {
        rc = 1;
        goto out;
      }
    }
    rc = md_conn_recv_wait(c, &in, wait);
    if(rc == MD_ETIMEDOUT || rc == MD_EAGAIN) {
      Memdiag__V1__Heartbeat hb = MEMDIAG__V1__HEARTBEAT__INIT;
      Memdiag__V1__Frame hf = MEMDIAG__V1__FRAME__INIT;
      hb.has_sequence = 1;
      hb.sequence = ++seq;
      hf.body_case = MEMDIAG__V1__FRAME__BODY_HEARTBEAT;
      hf.heartbeat = &hb;
      beat_sent_us[seq % BEAT_RING] = now_us();
      if(!o->skip_hello && md_conn_send_wait(c, &hf, 5000)) {
        rc = 1;
        goto out;
      }
      next_beat = md_now_ms() + heartbeat_ms;
      continue;
    }
    if(rc == MD_ECLOSED) {
      printf("closed by the plugin\n");
      rc = 0;
      goto out;
    }
    if(rc) {
      fprintf(stderr, "md-test-worker: %s\n", md_conn_error(c));
      rc = 1;
      goto out;
    }
    switch(in->body_case) {
    case MEMDIAG__V1__FRAME__BODY_WELCOME:
      if(in->welcome->has_heartbeat_interval_ms && in->welcome->heartbeat_interval_ms)
        heartbeat_ms = in->welcome->heartbeat_interval_ms;
      printf("welcome connection_id=%" PRIu64 " pid=%ld\n", in->welcome->connection_id,
             (long)getpid());
      fflush(stdout);
      if(o->goodbye) {
        Memdiag__V1__Goodbye g = MEMDIAG__V1__GOODBYE__INIT;
        Memdiag__V1__Frame gf = MEMDIAG__V1__FRAME__INIT;
        g.reason = (char *)o->goodbye;
        gf.body_case = MEMDIAG__V1__FRAME__BODY_GOODBYE;
        gf.goodbye = &g;
        rc = md_conn_send_wait(c, &gf, 5000) ? 1 : 0;
        goto out;
      }
      break;
    case MEMDIAG__V1__FRAME__BODY_GOODBYE: rc = print_goodbye(in); goto out;
    case MEMDIAG__V1__FRAME__BODY_CONTROL_REPLY:
      printf("control_reply status=%s error=%s\n", md_status_name(in->control_reply->status),
             in->control_reply->error ? in->control_reply->error : "");
      fflush(stdout);
      break;
    case MEMDIAG__V1__FRAME__BODY_REQUEST:
      rc = answer(c, in->request);
      if(rc)
        goto out;
      break;
    case MEMDIAG__V1__FRAME__BODY_HEARTBEAT:
      if(!o->show_heartbeats)
        break;
      printf("heartbeat back sequence=%" PRIu64 " sent=%" PRIu64 " rtt_us=%" PRIu64 "\n",
             in->heartbeat->sequence, seq,
             seq - in->heartbeat->sequence < BEAT_RING
                 ? now_us() - beat_sent_us[in->heartbeat->sequence % BEAT_RING]
                 : 0);
      fflush(stdout);
      break;
    default: break;
    }
    md_frame_free(in);
    in = NULL;
  }
out:
  free(big);
  free(bloat);
  md_frame_free(in);
  md_conn_free(c);
  md_tls_ctx_free(ctx);
  return rc;
}

static void print_reply(const Memdiag__V1__ControlReply *r)
{
  printf("status=%s\n", md_status_name(r->status));
  if(r->error)
    printf("error=%s\n", r->error);
  if(r->body_case == MEMDIAG__V1__CONTROL_REPLY__BODY_WORKERS) {
    for(size_t i = 0; i < r->workers->n_workers; i++) {
      const Memdiag__V1__WorkerInfo *w = r->workers->workers[i];
      printf("worker id=%" PRIu64 " pid=%u name=%s instance=%s rss=%" PRIu64 " detector=%s\n",
             w->connection_id, w->pid, w->name ? w->name : "", w->instance ? w->instance : "",
             w->rss, w->detector_state ? w->detector_state : "");
    }
  } else if(r->body_case == MEMDIAG__V1__CONTROL_REPLY__BODY_STATUS_REPORT) {
    printf("version=%s workers=%zu\n", r->status_report->version ? r->status_report->version : "",
           r->status_report->n_workers);
  } else if(r->body_case == MEMDIAG__V1__CONTROL_REPLY__BODY_REPLY) {
    const Memdiag__V1__Reply *rep = r->reply;
    printf("reply status=%s", md_status_name(rep->status));
    if(rep->has_data)
      printf(" data=%.*s", (int)rep->data.len, (const char *)rep->data.data);
    printf("\n");
  }
}

static int run_control(const opts *o, int argc, char **argv)
{
  md_tls_ctx *ctx = NULL;
  md_conn *c = NULL;
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Control ctl = MEMDIAG__V1__CONTROL__INIT;
  Memdiag__V1__ListWorkers lw = MEMDIAG__V1__LIST_WORKERS__INIT;
  Memdiag__V1__StatusRequest sr = MEMDIAG__V1__STATUS_REQUEST__INIT;
  Memdiag__V1__Operate op = MEMDIAG__V1__OPERATE__INIT;
  Memdiag__V1__CaptureNow cn = MEMDIAG__V1__CAPTURE_NOW__INIT;
  Memdiag__V1__Request req = MEMDIAG__V1__REQUEST__INIT;
  Memdiag__V1__Ping ping = MEMDIAG__V1__PING__INIT;
  Memdiag__V1__ThreadDump td = MEMDIAG__V1__THREAD_DUMP__INIT;
  Memdiag__V1__SchedulerDump sd = MEMDIAG__V1__SCHEDULER_DUMP__INIT;
  Memdiag__V1__MemoryDump md = MEMDIAG__V1__MEMORY_DUMP__INIT;
  Memdiag__V1__Frame *in = NULL;
  const char *verb;
  int rc;

  if(argc < 1)
    return usage();
  verb = argv[0];
  ctl.has_request_id = 1;
  ctl.request_id = 42;
  if(strcmp(verb, "list") == 0) {
    ctl.op_case = MEMDIAG__V1__CONTROL__OP_LIST_WORKERS;
    ctl.list_workers = &lw;
  } else if(strcmp(verb, "status") == 0) {
    ctl.op_case = MEMDIAG__V1__CONTROL__OP_STATUS;
    ctl.status = &sr;
  } else if(argc >= 2 && strcmp(verb, "capture") == 0) {
    cn.has_connection_id = 1;
    cn.connection_id = strtoull(argv[1], NULL, 10);
    ctl.op_case = MEMDIAG__V1__CONTROL__OP_CAPTURE_NOW;
    ctl.capture_now = &cn;
  } else if(argc >= 2) {
    op.has_connection_id = 1;
    op.connection_id = strtoull(argv[1], NULL, 10);
    op.request = &req;
    req.has_request_id = 1;
    req.request_id = 5;
    if(argc >= 3) {
      req.has_timeout_ms = 1;
      req.timeout_ms = (uint32_t)strtoul(argv[2], NULL, 10);
    }
    if(strcmp(verb, "ping") == 0) {
      ping.has_payload = 1;
      ping.payload.data = (uint8_t *)"hi";
      ping.payload.len = 2;
      req.op_case = MEMDIAG__V1__REQUEST__OP_PING;
      req.ping = &ping;
    } else if(strcmp(verb, "thread_dump") == 0) {
      req.op_case = MEMDIAG__V1__REQUEST__OP_THREAD_DUMP;
      req.thread_dump = &td;
    } else if(strcmp(verb, "memory_dump") == 0) {
      req.op_case = MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP;
      req.memory_dump = &md;
    } else if(strcmp(verb, "scheduler_dump") == 0) {
      req.op_case = MEMDIAG__V1__REQUEST__OP_SCHEDULER_DUMP;
      req.scheduler_dump = &sd;
    } else {
      return usage();
    }
    ctl.op_case = MEMDIAG__V1__CONTROL__OP_OPERATE;
    ctl.operate = &op;
  } else {
    return usage();
  }
  rc = connect_tls(o, &ctx, &c);
  if(rc)
    goto out;
  f.body_case = MEMDIAG__V1__FRAME__BODY_CONTROL;
  f.control = &ctl;
  rc = md_conn_send_wait(c, &f, 5000);
  if(rc == 0)
    rc = md_conn_recv_wait(c, &in, 60000);
  if(rc) {
    fprintf(stderr, "md-test-worker: %s\n",
            md_conn_error(c)[0] ? md_conn_error(c) : md_strerror(rc));
    rc = 1;
    goto out;
  }
  if(in->body_case == MEMDIAG__V1__FRAME__BODY_GOODBYE) {
    rc = print_goodbye(in);
  } else if(in->body_case == MEMDIAG__V1__FRAME__BODY_CONTROL_REPLY) {
    print_reply(in->control_reply);
    rc = in->control_reply->status == MEMDIAG__V1__STATUS__STATUS_OK ? 0 : 3;
  } else {
    fprintf(stderr, "md-test-worker: unexpected %s frame\n", md_frame_kind(in));
    rc = 1;
  }
out:
  md_frame_free(in);
  md_conn_free(c);
  md_tls_ctx_free(ctx);
  return rc;
}

/* Bytes that are not TLS, then wait for the plugin to hang up. */
static int run_garbage(const opts *o)
{
  static const char junk[] = "GET / HTTP/1.0\r\n\r\n\x00\xff\x13\x37 not a memdiag frame";
  char err[256], buf[256];
  struct pollfd p;
  int fd = md_unix_connect(o->socket, err, sizeof(err));
  ssize_t n;

  if(fd < 0) {
    fprintf(stderr, "md-test-worker: connect %s: %s\n", o->socket, err);
    return 1;
  }
  p.fd = fd;
  p.events = POLLOUT;
  poll(&p, 1, 5000);
  if(write(fd, junk, sizeof(junk) - 1) < 0) {
    close(fd);
    return 1;
  }
  p.events = POLLIN;
  for(;;) {
    if(poll(&p, 1, 10000) <= 0) {
      fprintf(stderr, "md-test-worker: the plugin kept the connection open\n");
      close(fd);
      return 1;
    }
    n = read(fd, buf, sizeof(buf));
    if(n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
      break;
  }
  close(fd);
  printf("closed by the plugin\n");
  return 0;
}

int main(int argc, char **argv)
{
  opts o = {.socket = getenv("MEMDIAG_SOCKET"),
            .cert = getenv("MEMDIAG_CERT"),
            .key = getenv("MEMDIAG_KEY"),
            .ca = getenv("MEMDIAG_CA"),
            .name = "test-worker"};
  const char *mode;
  int i;

  if(argc < 2)
    return usage();
  mode = argv[1];
  for(i = 2; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if(strcmp(a, "--skip-hello") == 0) {
      o.skip_hello = 1;
      continue;
    }
    if(strcmp(a, "--control-after-hello") == 0) {
      o.control_after_hello = 1;
      continue;
    }
    if(strcmp(a, "--show-heartbeats") == 0) {
      o.show_heartbeats = 1;
      continue;
    }
    if(!v)
      return usage();
    i++;
    if(strcmp(a, "--socket") == 0)
      o.socket = v;
    else if(strcmp(a, "--cert") == 0)
      o.cert = v;
    else if(strcmp(a, "--key") == 0)
      o.key = v;
    else if(strcmp(a, "--ca") == 0)
      o.ca = v;
    else if(strcmp(a, "--name") == 0)
      o.name = v;
    else if(strcmp(a, "--claim-pid") == 0)
      o.claim_pid = atol(v);
    else if(strcmp(a, "--allocate-mb") == 0)
      o.allocate_mb = atol(v);
    else if(strcmp(a, "--fork") == 0)
      o.fork_n = atol(v);
    else if(strcmp(a, "--big-hello") == 0)
      o.big_hello = atol(v);
    else if(strcmp(a, "--dump-frame") == 0)
      o.dump_frame = atol(v);
    else if(strcmp(a, "--control-flood") == 0)
      o.control_flood = atol(v);
    else if(strcmp(a, "--error-text") == 0)
      o.error_text = v;
    else if(strcmp(a, "--goodbye") == 0)
      o.goodbye = v;
    else if(strcmp(a, "--exit-after") == 0)
      o.exit_after = atol(v);
    else if(strcmp(a, "--handoff-on-dump") == 0)
      o.handoff = v;
    else if(strcmp(a, "--cgroup-dir") == 0)
      o.cgroup_dir = v;
    else if(strcmp(a, "--bloated-hello") == 0)
      o.bloated_hello = atol(v);
    else
      return usage();
  }
  signal(SIGPIPE, SIG_IGN);
  dump_frame = o.dump_frame;
  error_text = o.error_text;
  handoff = o.handoff;
  if(o.socket && strcmp(mode, "garbage") == 0)
    return run_garbage(&o);
  if(!o.socket || !o.cert || !o.key || !o.ca)
    return usage();
  if(strcmp(mode, "control") == 0)
    return run_control(&o, argc - i, argv + i);
  if(strcmp(mode, "worker") != 0)
    return usage();
  if(o.fork_n > 0) {
    /* Each child is its own worker with its own connection and TLS state. */
    long started = 0;
    int status, failed = 0;
    for(long k = 0; k < o.fork_n; k++) {
      pid_t p = fork();
      if(p == 0) {
        if(o.cgroup_dir && join_cgroup(o.cgroup_dir, k) != 0)
          _exit(1);
        _exit(run_worker(&o));
      }
      if(p > 0)
        started++;
    }
    while(started-- > 0)
      if(wait(&status) > 0 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
        failed++;
    return failed ? 1 : 0;
  }
  return run_worker(&o);
}
