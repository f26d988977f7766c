/* mdh-test-server: the plugin's side of the worker protocol, small enough
 * to drive hook tests. It listens on an AF_UNIX socket with mutual TLS,
 * welcomes workers (connection IDs counting up from --first-id), answers
 * their heartbeats as the plugin does, and prints one JSON object per line
 * on stdout for every hello, heartbeat, reply, refusal and close. Requests
 * come from stdin lines:
 *
 *   request CONN OP [path=P] [shapes=true|false] [mode=inline|fork|auto]
 *                   [timeout=MS] [payload=TEXT] [keep=true|false]
 *   goodbye CONN [REASON...]      refuse a connection, then close it
 *   close CONN
 *   silence CONN                  neither read nor write it, keep it open
 *                                 (a wedged plugin)
 *   resume CONN
 *   quit
 *
 * and from --on-hello "OP [k=v...]" (repeatable), sent to every worker as
 * soon as it says hello. */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "json_out.h"
#include "md/tls.h"
#include "md/wire.h"

#define MAX_CLIENTS  64
#define MAX_ON_HELLO 16

typedef struct {
  md_conn *conn;
  uint64_t id; /* 0 until hello */
  int handshake_done;
  int silent; /* "silence": left out of poll, nothing sent */
} client;

static client clients[MAX_CLIENTS];
static md_tls_ctx *ctx;
static uint64_t next_id = 1, next_request_id = 1;
static unsigned heartbeat_ms = 1000;
static int legacy; /* --legacy: behave as a plugin that never answers heartbeats */
static long allocation_sampling = -1; /* --allocation-sampling N: sent in the welcome */
static const char *on_hello[MAX_ON_HELLO];
static int n_on_hello;
static volatile sig_atomic_t quit_flag;

static void on_signal(int sig)
{
  (void)sig;
  quit_flag = 1;
}

static void event_begin(const char *event) { printf("{\"event\":\"%s\"", event); }

static void event_end(void)
{
  fputs("}\n", stdout);
  fflush(stdout);
}

static void print_error(const char *event, uint64_t conn, const char *error)
{
  event_begin(event);
  if(conn)
    jo_kv_u64(stdout, "conn", conn);
  jo_kv_str(stdout, "error", error);
  event_end();
}

static client *find(uint64_t id)
{
  int i;
  for(i = 0; i < MAX_CLIENTS; i++)
    if(clients[i].conn && clients[i].id == id)
      return &clients[i];
  return NULL;
}

static void drop(client *c, const char *why)
{
  event_begin("closed");
  jo_kv_u64(stdout, "conn", c->id);
  jo_kv_str(stdout, "reason", why);
  event_end();
  md_conn_free(c->conn);
  memset(c, 0, sizeof *c);
}

static int send_now(client *c, const Memdiag__V1__Frame *f)
{
  int rc = md_conn_send_wait(c->conn, f, 5000);
  if(rc)
    drop(c, md_conn_error(c->conn));
  return rc;
}

static int parse_bool(const char *v)
{
  return strcmp(v, "false") != 0 && strcmp(v, "0") != 0 && strcmp(v, "no") != 0;
}

static Memdiag__V1__DumpMode parse_mode(const char *v)
{
  if(!strcmp(v, "fork"))
    return MEMDIAG__V1__DUMP_MODE__DUMP_MODE_FORK;
  if(!strcmp(v, "auto"))
    return MEMDIAG__V1__DUMP_MODE__DUMP_MODE_AUTO;
  return MEMDIAG__V1__DUMP_MODE__DUMP_MODE_INLINE;
}

/* "OP [k=v ...]" (modified in place) -> request frame sent to c. */
static void send_request(client *c, char *spec)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Request r = MEMDIAG__V1__REQUEST__INIT;
  Memdiag__V1__Ping ping = MEMDIAG__V1__PING__INIT;
  Memdiag__V1__MemoryDump md = MEMDIAG__V1__MEMORY_DUMP__INIT;
  Memdiag__V1__AllocationTraceStart ats = MEMDIAG__V1__ALLOCATION_TRACE_START__INIT;
  Memdiag__V1__AllocationTraceStop atp = MEMDIAG__V1__ALLOCATION_TRACE_STOP__INIT;
  Memdiag__V1__GarbageProfileStart gps = MEMDIAG__V1__GARBAGE_PROFILE_START__INIT;
  Memdiag__V1__GarbageProfileStop gpp = MEMDIAG__V1__GARBAGE_PROFILE_STOP__INIT;
  Memdiag__V1__SchedulerDump sd = MEMDIAG__V1__SCHEDULER_DUMP__INIT;
  Memdiag__V1__ThreadDump td = MEMDIAG__V1__THREAD_DUMP__INIT;
  Memdiag__V1__HeapProfile hp = MEMDIAG__V1__HEAP_PROFILE__INIT;
  char *save = NULL, *op = strtok_r(spec, " \t", &save), *kv;
  char *path = NULL;

  if(!op) {
    print_error("bad_command", c->id, "request needs an operation");
    return;
  }
  r.has_request_id = 1;
  r.request_id = next_request_id++;
  while((kv = strtok_r(NULL, " \t", &save))) {
    char *eq = strchr(kv, '=');
    if(!eq)
      continue;
    *eq++ = '\0';
    if(!strcmp(kv, "path"))
      path = eq;
    else if(!strcmp(kv, "shapes"))
      md.has_shapes = atp.has_shapes = 1, md.shapes = atp.shapes = parse_bool(eq);
    else if(!strcmp(kv, "mode"))
      md.has_mode = atp.has_mode = 1, md.mode = atp.mode = parse_mode(eq);
    else if(!strcmp(kv, "timeout"))
      r.has_timeout_ms = 1, r.timeout_ms = (uint32_t)strtoul(eq, NULL, 10);
    else if(!strcmp(kv, "payload"))
      ping.has_payload = 1, ping.payload.data = (uint8_t *)eq, ping.payload.len = strlen(eq);
    else if(!strcmp(kv, "id"))
      r.request_id = strtoull(eq, NULL, 10);
    else if(!strcmp(kv, "keep"))
      ats.has_keep = gps.has_keep = 1, ats.keep = gps.keep = parse_bool(eq);
  }
  md.path = atp.path = gpp.path = sd.path = td.path = hp.path = path;

  if(!strcmp(op, "ping"))
    r.op_case = MEMDIAG__V1__REQUEST__OP_PING, r.ping = &ping;
  else if(!strcmp(op, "memory_dump"))
    r.op_case = MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP, r.memory_dump = &md;
  else if(!strcmp(op, "allocation_trace_start"))
    r.op_case = MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_START, r.allocation_trace_start = &ats;
  else if(!strcmp(op, "allocation_trace_stop"))
    r.op_case = MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_STOP, r.allocation_trace_stop = &atp;
  else if(!strcmp(op, "garbage_profile_start"))
    r.op_case = MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_START, r.garbage_profile_start = &gps;
  else if(!strcmp(op, "garbage_profile_stop"))
    r.op_case = MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_STOP, r.garbage_profile_stop = &gpp;
  else if(!strcmp(op, "scheduler_dump"))
    r.op_case = MEMDIAG__V1__REQUEST__OP_SCHEDULER_DUMP, r.scheduler_dump = &sd;
  else if(!strcmp(op, "thread_dump"))
    r.op_case = MEMDIAG__V1__REQUEST__OP_THREAD_DUMP, r.thread_dump = &td;
  else if(!strcmp(op, "heap_profile"))
    r.op_case = MEMDIAG__V1__REQUEST__OP_HEAP_PROFILE, r.heap_profile = &hp;
  else if(strcmp(op, "empty") != 0) { /* "empty": a request naming no operation */
    print_error("bad_command", c->id, op);
    return;
  }
  f.body_case = MEMDIAG__V1__FRAME__BODY_REQUEST;
  f.request = &r;
  if(send_now(c, &f) == MD_OK) {
    event_begin("sent");
    jo_kv_u64(stdout, "conn", c->id);
    jo_kv_u64(stdout, "request_id", r.request_id);
    jo_kv_str(stdout, "op", op);
    event_end();
  }
}

static void send_goodbye(client *c, const char *reason)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Goodbye g = MEMDIAG__V1__GOODBYE__INIT;
  g.has_status = 1;
  g.status = MEMDIAG__V1__STATUS__STATUS_REFUSED;
  g.reason = (char *)(reason && *reason ? reason : "refused by the test server");
  f.body_case = MEMDIAG__V1__FRAME__BODY_GOODBYE;
  f.goodbye = &g;
  if(send_now(c, &f) == MD_OK)
    drop(c, "goodbye sent");
}

static void on_hello_frame(client *c, const Memdiag__V1__Hello *h)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Welcome w = MEMDIAG__V1__WELCOME__INIT;
  pid_t pid = 0;
  uid_t uid;
  gid_t gid;
  size_t i;
  int k;

  c->id = next_id++;
  md_conn_peer_cred(c->conn, &pid, &uid, &gid);
  event_begin("hello");
  jo_kv_u64(stdout, "conn", c->id);
  jo_kv_str(stdout, "name", h->name);
  jo_kv_u64(stdout, "pid", h->pid);
  jo_kv_u64(stdout, "ppid", h->ppid);
  jo_kv_u64(stdout, "peer_pid", (uint64_t)pid);
  jo_kv_str(stdout, "peer", md_conn_peer_name(c->conn));
  jo_kv_str(stdout, "runtime", h->runtime);
  jo_kv_str(stdout, "runtime_version", h->runtime_version);
  jo_kv_str(stdout, "hook_version", h->hook_version);
  jo_kv_str(stdout, "dump_directory", h->dump_directory);
  fputs(",\"capabilities\":[", stdout);
  for(i = 0; i < h->n_capabilities; i++) {
    if(i)
      fputc(',', stdout);
    jo_string(stdout, h->capabilities[i], strlen(h->capabilities[i]));
  }
  fputc(']', stdout);
  event_end();

  w.has_connection_id = 1;
  w.connection_id = c->id;
  w.has_heartbeat_interval_ms = 1;
  w.heartbeat_interval_ms = heartbeat_ms;
  w.has_answers_heartbeats = !legacy;
  w.answers_heartbeats = !legacy;
  w.has_allocation_sampling = allocation_sampling >= 0;
  w.allocation_sampling = allocation_sampling >= 0 ? (uint32_t)allocation_sampling : 0;
  f.body_case = MEMDIAG__V1__FRAME__BODY_WELCOME;
  f.welcome = &w;
  if(send_now(c, &f))
    return;
  for(k = 0; k < n_on_hello && c->conn; k++) {
    char spec[1024];
    snprintf(spec, sizeof spec, "%s", on_hello[k]);
    send_request(c, spec);
  }
}

static void on_reply_frame(client *c, const Memdiag__V1__Reply *r)
{
  event_begin("reply");
  jo_kv_u64(stdout, "conn", c->id);
  jo_kv_u64(stdout, "request_id", r->request_id);
  jo_kv_str(stdout, "status", md_status_name(r->status));
  jo_kv_str(stdout, "error", r->error);
  jo_kv_str(stdout, "path", r->path);
  if(r->has_data) {
    fputs(",\"data\":", stdout);
    jo_string(stdout, (const char *)r->data.data, r->data.len);
    jo_kv_u64(stdout, "data_bytes", r->data.len);
  }
  if(r->has_bytes)
    jo_kv_u64(stdout, "bytes", r->bytes);
  if(r->has_duration_us)
    jo_kv_u64(stdout, "duration_us", r->duration_us);
  if(r->has_pause_us)
    jo_kv_u64(stdout, "pause_us", r->pause_us);
  jo_kv_str(stdout, "note", r->note);
  jo_kv_str(stdout, "mode", r->mode);
  event_end();
}

static void echo_heartbeat(client *c, const Memdiag__V1__Heartbeat *in)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Heartbeat hb = MEMDIAG__V1__HEARTBEAT__INIT;
  hb.has_sequence = 1;
  hb.sequence = in->sequence;
  f.body_case = MEMDIAG__V1__FRAME__BODY_HEARTBEAT;
  f.heartbeat = &hb;
  send_now(c, &f);
}

static void set_silent(client *c, int silent)
{
  c->silent = silent;
  event_begin(silent ? "silenced" : "resumed");
  jo_kv_u64(stdout, "conn", c->id);
  event_end();
}

static void service(client *c)
{
  Memdiag__V1__Frame *f;
  int rc;

  if(!c->handshake_done) {
    rc = md_conn_handshake(c->conn);
    if(rc == MD_EAGAIN)
      return;
    if(rc) {
      print_error("handshake_failed", 0, md_conn_error(c->conn));
      md_conn_free(c->conn);
      memset(c, 0, sizeof *c);
      return;
    }
    c->handshake_done = 1;
  }
  while(c->conn && (rc = md_conn_recv(c->conn, &f)) == MD_OK) {
    switch(f->body_case) {
    case MEMDIAG__V1__FRAME__BODY_HELLO: on_hello_frame(c, f->hello); break;
    case MEMDIAG__V1__FRAME__BODY_HEARTBEAT:
      event_begin("heartbeat");
      jo_kv_u64(stdout, "conn", c->id);
      jo_kv_u64(stdout, "sequence", f->heartbeat->sequence);
      jo_kv_u64(stdout, "busy_request_id", f->heartbeat->busy_request_id);
      event_end();
      if(!legacy)
        echo_heartbeat(c, f->heartbeat);
      break;
    case MEMDIAG__V1__FRAME__BODY_REPLY: on_reply_frame(c, f->reply); break;
    default: print_error("unexpected_frame", c->id, md_frame_kind(f)); break;
    }
    md_frame_free(f);
  }
  if(c->conn && rc != MD_EAGAIN)
    drop(c, rc == MD_ECLOSED ? "peer closed" : md_conn_error(c->conn));
}

static void on_command(char *line)
{
  char *save = NULL, *verb = strtok_r(line, " \t\n", &save);
  char *conn_s, *rest;
  client *c;

  if(!verb)
    return;
  if(!strcmp(verb, "quit")) {
    quit_flag = 1;
    return;
  }
  conn_s = strtok_r(NULL, " \t\n", &save);
  rest = strtok_r(NULL, "\n", &save);
  c = conn_s ? find(strtoull(conn_s, NULL, 10)) : NULL;
  if(!c) {
    print_error("bad_command", 0, "no such connection");
    return;
  }
  if(c->silent && strcmp(verb, "resume") && strcmp(verb, "close")) {
    print_error("bad_command", c->id, "connection is silenced");
    return;
  }
  if(!strcmp(verb, "request") && rest)
    send_request(c, rest);
  else if(!strcmp(verb, "goodbye"))
    send_goodbye(c, rest);
  else if(!strcmp(verb, "close"))
    drop(c, "closed by command");
  else if(!strcmp(verb, "silence"))
    set_silent(c, 1);
  else if(!strcmp(verb, "resume"))
    set_silent(c, 0);
  else
    print_error("bad_command", c->id, verb);
}

static void accept_one(int lfd)
{
  int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), i;
  if(fd < 0)
    return;
  for(i = 0; i < MAX_CLIENTS; i++)
    if(!clients[i].conn)
      break;
  if(i == MAX_CLIENTS || md_conn_new(&clients[i].conn, ctx, fd)) {
    if(i == MAX_CLIENTS)
      close(fd);
    print_error("accept_failed", 0, "too many clients or out of memory");
    return;
  }
  service(&clients[i]);
}

static void usage(void)
{
  fprintf(stderr, "usage: mdh-test-server --socket PATH --cert PEM --key PEM --ca PEM\n"
                  "         [--heartbeat-ms N] [--first-id N] [--on-hello 'OP k=v...'] [--legacy]\n"
                  "         [--allocation-sampling N]\n");
  exit(2);
}

int main(int argc, char **argv)
{
  static const struct option longopts[] = {
      {"socket", required_argument, NULL, 's'},
      {"cert", required_argument, NULL, 'c'},
      {"key", required_argument, NULL, 'k'},
      {"ca", required_argument, NULL, 'a'},
      {"heartbeat-ms", required_argument, NULL, 'h'},
      {"first-id", required_argument, NULL, 'f'},
      {"on-hello", required_argument, NULL, 'o'},
      {"legacy", no_argument, NULL, 'l'},
      {"allocation-sampling", required_argument, NULL, 'A'},
      {NULL, 0, NULL, 0},
  };
  md_tls_options opts = {.server = 1, .allowed_peer_roles = MD_ROLE_WORKER};
  const char *sock = NULL;
  char err[256], line[4096];
  size_t used = 0;
  int opt, lfd, stdin_open = 1;

  while((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
    switch(opt) {
    case 's': sock = optarg; break;
    case 'c': opts.certificate = optarg; break;
    case 'k': opts.key = optarg; break;
    case 'a': opts.ca = optarg; break;
    case 'h': heartbeat_ms = (unsigned)strtoul(optarg, NULL, 10); break;
    case 'f': next_id = strtoull(optarg, NULL, 10); break;
    case 'l': legacy = 1; break;
    case 'A': allocation_sampling = strtol(optarg, NULL, 10); break;
    case 'o':
      if(n_on_hello == MAX_ON_HELLO)
        usage();
      on_hello[n_on_hello++] = optarg;
      break;
    default: usage();
    }
  }
  if(!sock || !opts.certificate || !opts.key || !opts.ca)
    usage();
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  signal(SIGPIPE, SIG_IGN);

  if(md_tls_ctx_new(&ctx, &opts, err, sizeof err)) {
    fprintf(stderr, "mdh-test-server: %s\n", err);
    return 1;
  }
  lfd = md_unix_listen(sock, 0600, 16, err, sizeof err);
  if(lfd < 0) {
    fprintf(stderr, "mdh-test-server: %s\n", err);
    return 1;
  }
  event_begin("listening");
  jo_kv_str(stdout, "socket", sock);
  jo_kv_u64(stdout, "pid", (uint64_t)getpid());
  event_end();

  while(!quit_flag) {
    struct pollfd p[MAX_CLIENTS + 2];
    int map[MAX_CLIENTS + 2], n = 0, i;

    p[n].fd = lfd, p[n].events = POLLIN, map[n++] = -1;
    if(stdin_open)
      p[n].fd = 0, p[n].events = POLLIN, map[n++] = -2;
    for(i = 0; i < MAX_CLIENTS; i++)
      if(clients[i].conn && !clients[i].silent) {
        p[n].fd = md_conn_fd(clients[i].conn);
        p[n].events = (short)(md_conn_events(clients[i].conn) | POLLIN);
        map[n++] = i;
      }
    if(poll(p, (nfds_t)n, 500) < 0) {
      if(errno == EINTR)
        continue;
      break;
    }
    for(i = 0; i < n; i++) {
      if(!p[i].revents)
        continue;
      if(map[i] == -1) {
        accept_one(lfd);
      } else if(map[i] == -2) {
        ssize_t got = read(0, line + used, sizeof line - 1 - used);
        char *nl;
        if(got <= 0) {
          stdin_open = 0;
          continue;
        }
        used += (size_t)got;
        line[used] = '\0';
        while((nl = strchr(line, '\n'))) {
          *nl = '\0';
          on_command(line);
          used -= (size_t)(nl + 1 - line);
          memmove(line, nl + 1, used + 1);
        }
        if(used == sizeof line - 1)
          used = 0; /* an overlong line is dropped */
      } else if(clients[map[i]].conn) {
        service(&clients[map[i]]);
      }
    }
  }
  for(int i = 0; i < MAX_CLIENTS; i++)
    if(clients[i].conn) {
      md_conn_shutdown(clients[i].conn);
      md_conn_free(clients[i].conn);
    }
  close(lfd);
  unlink(sock);
  md_tls_ctx_free(ctx);
  event_begin("exit");
  event_end();
  return 0;
}
