/* memdiag plugin: the server: the listening socket, the table of
 * connections, their deadlines, and the thread that turns the loop; see
 * server.h. The protocol on a connection is in hello.c, sending and closing
 * in conn.c. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "server_config.h"
#include "bufcap.h"
#include "conn.h"
#include "hello.h"
#include "unauth.h"
#include "workers/pidfd.h"

#define TICK_MS 1000u /* deadlines and heartbeats are checked each second */

static mdp_conn_env env;
static mdp_loop *loop;
static md_tls_ctx *tls;
static int listen_fd = -1;
static mdp_loop_watch *listen_watch;
static pthread_t loop_thread;
static int running;
static uint64_t started_at;

static mdp_conn *conns;
static size_t nconns;
static uint64_t next_serial = 1;

uint64_t mdp_server_started_at(void) { return started_at; }

/* ------------------------------------------------------------ sending */

static mdp_conn *find_worker(uint64_t id)
{
  for(mdp_conn *c = conns; c; c = c->next)
    if(c->state == MDP_CONN_WORKER && c->worker_id == id && !c->dead && !c->closing)
      return c;
  return NULL;
}

static mdp_conn *find_serial(uint64_t serial)
{
  for(mdp_conn *c = conns; c; c = c->next)
    if(c->serial == serial && !c->dead && !c->closing)
      return c;
  return NULL;
}

int mdp_server_send_worker(uint64_t connection_id, const Memdiag__V1__Frame *f)
{
  mdp_conn *c = find_worker(connection_id);
  return c ? mdp_conn_send(c, f) : -ENOENT;
}

int mdp_server_send_operator(uint64_t serial, const Memdiag__V1__Frame *f)
{
  mdp_conn *c = find_serial(serial);
  return c && c->state == MDP_CONN_OPERATOR ? mdp_conn_send(c, f) : -ENOENT;
}

/* ------------------------------------------------------------ accepting */

/* Out of descriptors or memory, accept() fails while the connection stays
 * queued and the listening socket stays readable: polling it again at once
 * would spin the loop (and log each turn). It is left out of poll() until
 * this time instead, and the failure is logged once per episode. */
#define ACCEPT_RETRY_MS 1000u
static uint64_t accept_paused_until;
static int accept_failing;

static int conn_events(void *arg)
{
  mdp_conn *c = arg;
  return md_conn_events(c->mc);
}

static void conn_ready(short revents, void *arg) { mdp_hello_service(arg, revents); }

/* Connections from uid still in their handshake or waiting for a hello. */
static unsigned unauthenticated(uid_t uid)
{
  unsigned n = 0;
  for(mdp_conn *c = conns; c; c = c->next)
    if(!c->dead && c->uid == uid && (c->state == MDP_CONN_HANDSHAKE || c->state == MDP_CONN_HELLO))
      n++;
  return n;
}

static void accept_one(int fd, uint64_t accepted_boot_ms)
{
  mdp_conn *c;
  struct ucred cr;
  socklen_t len = sizeof(cr);
  int rc;

  if(getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0) {
    cr.pid = 0;
    cr.uid = (uid_t)-1;
  }
  if(nconns >= env.cfg->max_connections) {
    mdp_conn_warn("memdiag plugin: refusing a connection from pid %ld: MaxConnections (%u) reached",
                  (long)cr.pid, env.cfg->max_connections);
    close(fd);
    return;
  }
  if(!mdp_unauth_admit(cr.uid, unauthenticated(cr.uid))) {
    close(fd);
    return;
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
    return;
  }
  c->watch = mdp_loop_watch_add(loop, md_conn_fd(c->mc), conn_events, conn_ready, c);
  if(!c->watch) {
    ERROR("memdiag plugin: cannot set up a connection: out of memory");
    md_conn_free(c->mc);
    free(c);
    return;
  }
  c->env = &env;
  md_conn_set_max_frame(c->mc, env.cfg->max_frame < MDP_CONN_UNKNOWN_FRAME_MAX
                                   ? env.cfg->max_frame
                                   : MDP_CONN_UNKNOWN_FRAME_MAX);
  md_conn_peer_cred(c->mc, &c->pid, &c->uid, &c->gid);
  c->pidfd = mdp_pidfd_of_peer(fd, c->pid, accepted_boot_ms);
  c->pidfd_err = c->pidfd < 0 ? c->pidfd : 0;
  c->serial = next_serial++;
  c->state = MDP_CONN_HANDSHAKE;
  c->last_heard_ms = md_now_ms();
  c->deadline_ms = c->last_heard_ms + env.cfg->handshake_timeout_ms;
  snprintf(c->who, sizeof(c->who), "pid %ld uid %ld", (long)c->pid, (long)c->uid);
  c->next = conns;
  conns = c;
  nconns++;
}

static void accept_all(short revents, void *unused)
{
  (void)revents;
  (void)unused;
  for(;;) {
    int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    uint64_t accepted_boot_ms = mdp_pidfd_boot_ms();

    if(fd < 0) {
      if(errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        if(!accept_failing)
          WARNING("memdiag plugin: accept on %s failed: %s; new connections wait until it "
                  "succeeds (raise collectd's open file limit if it says too many open files)",
                  env.cfg->socket, strerror(errno));
        accept_failing = 1;
        accept_paused_until = md_now_ms() + ACCEPT_RETRY_MS;
      } else if(errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
                errno != ECONNABORTED) {
        WARNING("memdiag plugin: accept on %s failed: %s", env.cfg->socket, strerror(errno));
      }
      return;
    }
    if(accept_failing) {
      accept_failing = 0;
      INFO("memdiag plugin: accepting connections on %s again", env.cfg->socket);
    }
    accept_one(fd, accepted_boot_ms);
  }
}

static int listen_events(void *unused)
{
  (void)unused;
  return md_now_ms() < accept_paused_until ? -1 : POLLIN;
}

/* ------------------------------------------------------------ each turn */

static void count_workers(uid_t uid, pid_t pid, unsigned *all, unsigned *of_uid, unsigned *of_pid)
{
  *all = *of_uid = *of_pid = 0;
  for(mdp_conn *c = conns; c; c = c->next) {
    if(c->dead || c->state != MDP_CONN_WORKER)
      continue;
    ++*all;
    *of_uid += c->uid == uid;
    *of_pid += c->pid == pid;
  }
}

/* What a uid's connections hold in their read buffers stays under
 * MDP_CONN_BUFFERED_UID_FRAMES x MaxFrameSize: past it, the one holding
 * most is closed (a partial frame of its own is all it loses). Operators
 * are not counted. Every uid is (bufcap.h); until issue 24 only the first
 * 64 a turn saw were, so a peer of any further uid held what it liked.
 * `held` has room for every connection (MaxConnections), made at start. */
static mdp_bufcap_entry *held;

static void check_buffered(void)
{
  size_t limit = (size_t)MDP_CONN_BUFFERED_UID_FRAMES * env.cfg->max_frame + (1u << 20);
  size_t n = 0, total = 0;

  for(mdp_conn *c = conns; c; c = c->next) {
    size_t bytes;
    if(c->dead || c->state == MDP_CONN_OPERATOR || !(bytes = md_conn_buffered(c->mc)))
      continue;
    total += bytes;
    held[n++] = (mdp_bufcap_entry){.uid = c->uid, .bytes = bytes, .conn = c};
  }
  if(total <= limit || mdp_bufcap_pick(held, n, limit) == 0)
    return; /* no uid can be over (the common case: nothing sorted) */
  for(size_t i = 0; i < n; i++) {
    mdp_conn *c = held[i].conn;
    if(!held[i].close)
      continue;
    mdp_conn_warn("memdiag plugin: closing connection from %s: the connections of uid %ld hold "
                  "%zu bytes of unread frames (at most %zu per uid)",
                  c->who, (long)held[i].uid, held[i].uid_had, limit);
    mdp_conn_drop(c, "holding too many unread bytes");
  }
}

static void check_deadlines(uint64_t now)
{
  uint64_t silent = 3u * (uint64_t)env.cfg->heartbeat_ms;

  mdp_conn_log_roll(now);
  mdp_unauth_roll(unauthenticated);
  check_buffered();
  for(mdp_conn *c = conns; c; c = c->next) {
    if(c->dead)
      continue;
    if(c->deadline_ms && now >= c->deadline_ms) {
      if(c->closing)
        mdp_conn_drop(c, "refused");
      else {
        mdp_conn_warn("memdiag plugin: closing connection from %s: no %s within %u ms", c->who,
                      c->state == MDP_CONN_HANDSHAKE ? "TLS handshake" : "hello",
                      env.cfg->handshake_timeout_ms);
        mdp_conn_drop(c, "timed out");
      }
    } else if(c->state == MDP_CONN_WORKER && now - c->last_heard_ms > silent) {
      char why[96];
      snprintf(why, sizeof(why), "silent for %" PRIu64 " ms (3 heartbeat intervals)",
               now - c->last_heard_ms);
      WARNING("memdiag plugin: forgetting worker %" PRIu64 " (%s): %s", c->worker_id, c->who, why);
      mdp_conn_drop(c, why);
    }
  }
}

static void sweep(void)
{
  mdp_conn **pp = &conns;

  while(*pp) {
    mdp_conn *c = *pp;
    if(!c->dead) {
      pp = &c->next;
      continue;
    }
    *pp = c->next;
    nconns--;
    mdp_loop_watch_remove(loop, c->watch);
    md_conn_free(c->mc);
    if(c->pidfd >= 0)
      close(c->pidfd);
    if(c->state == MDP_CONN_WORKER)
      env.hooks.worker_gone(c->worker_id);
    free(c);
    /* worker_gone may have changed the list: start over. */
    pp = &conns;
  }
}

/* Connections stopped at their budget have frames read but not served:
 * poll cannot see those, so they are served again next turn by a task
 * (posting it also keeps the next poll from sleeping). */
static int resume_posted;

static void resume(void *unused)
{
  (void)unused;
  resume_posted = 0;
  /* New connections go to the head of the list and none is freed before
   * sweep(): walking it while serving is safe. */
  for(mdp_conn *c = conns; c; c = c->next)
    if(c->more && !c->dead)
      mdp_hello_service(c, 0);
}

static void before_sleep(void *unused)
{
  (void)unused;
  check_deadlines(md_now_ms());
  sweep();
  if(resume_posted)
    return;
  for(mdp_conn *c = conns; c; c = c->next) {
    if(c->more && !c->dead) {
      if(mdp_loop_post(loop, resume, NULL) == 0)
        resume_posted = 1;
      return;
    }
  }
}

/* Wakes the loop each second so that deadlines are checked while idle. */
static void tick(void *unused)
{
  (void)unused;
  mdp_loop_timer_add(loop, TICK_MS, tick, NULL, NULL);
}

static void loop_error(const char *what, int err, void *unused)
{
  (void)unused;
  if(err == ENOMEM)
    ERROR("memdiag plugin: out of memory in the server loop");
  else
    ERROR("memdiag plugin: %s failed: %s", what, strerror(err));
}

static void *loop_main(void *unused)
{
  (void)unused;
  mdp_loop_run(loop);
  /* In-flight work ends with an error; its callbacks may post more work,
   * which runs too, within reason. */
  for(int round = 0; round < 100; round++) {
    unsigned n = env.hooks.stopping();
    n += mdp_loop_run_tasks(loop);
    if(n == 0)
      break;
  }
  mdp_loop_close(loop);
  for(mdp_conn *c = conns; c; c = c->next) {
    md_conn_shutdown(c->mc);
    c->dead = 1;
  }
  sweep();
  return NULL;
}

/* ------------------------------------------------------------ lifecycle */

/* SocketGroup as a gid (a name or a number); -1 when unset. */
static long socket_gid(const char *group)
{
  char *end;
  unsigned long gid;
  struct group *gr;

  if(!group)
    return -1;
  errno = 0;
  gid = strtoul(group, &end, 10);
  if(errno || *end != '\0') {
    gr = getgrnam(group);
    if(!gr) {
      ERROR("memdiag plugin: SocketGroup \"%s\": no such group", group);
      return -2;
    }
    gid = gr->gr_gid;
  }
  return (long)gid;
}

static int listen_on(const mdp_server_config *cfg)
{
  char err[512] = "";
  long gid = socket_gid(cfg->socket_group);

  if(gid == -2)
    return -EINVAL;
  /* Workers of a preforking server start together: a short backlog would
   * refuse some of them. Mode and group are set on the socket bound, never
   * through its path again (md/tls.h). */
  listen_fd = md_unix_listen_as(cfg->socket, cfg->socket_mode, gid, SOMAXCONN, err, sizeof(err));
  if(listen_fd < 0) {
    ERROR("memdiag plugin: Socket \"%s\"%s%s: %s", cfg->socket, gid >= 0 ? ", SocketGroup " : "",
          gid >= 0 ? cfg->socket_group : "", err);
    return -EINVAL;
  }
  listen_watch = mdp_loop_watch_add(loop, listen_fd, listen_events, accept_all, NULL);
  return listen_watch ? 0 : -ENOMEM;
}

int mdp_server_start(const mdp_server_config *cfg, mdp_loop *l, const mdp_server_hooks *hooks)
{
  md_tls_options o = {0};
  mdp_loop_hooks lh = {.before_sleep = before_sleep, .error = loop_error};
  char err[512] = "";
  char cwd[PATH_MAX];
  int rc;

  env.cfg = cfg;
  env.hooks = *hooks;
  free(held);
  held = calloc(cfg->max_connections ? cfg->max_connections : 1, sizeof(*held));
  if(!held) {
    ERROR("memdiag plugin: cannot start the server: out of memory");
    return -ENOMEM;
  }
  env.count_workers = count_workers;
  loop = l;
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
  rc = listen_on(cfg);
  if(rc)
    goto fail;
  mdp_loop_set_hooks(loop, &lh);
  if(!mdp_loop_timer_add(loop, TICK_MS, tick, NULL, NULL)) {
    rc = -ENOMEM;
    goto fail;
  }
  started_at = (uint64_t)time(NULL);
  rc = plugin_thread_create(&loop_thread, loop_main, NULL, "memdiag server");
  if(rc) {
    ERROR("memdiag plugin: cannot start the server thread: %s", strerror(rc));
    rc = -rc;
    goto fail;
  }
  running = 1;
  INFO("memdiag plugin: listening on %s%s%s (mode %04o)",
       cfg->socket[0] == '/' ? "" : (getcwd(cwd, sizeof(cwd)) ? cwd : "."),
       cfg->socket[0] == '/' ? "" : "/", cfg->socket, cfg->socket_mode);
  return 0;
fail:
  free(held);
  held = NULL;
  mdp_loop_watch_remove(loop, listen_watch);
  listen_watch = NULL;
  if(listen_fd >= 0) {
    close(listen_fd);
    unlink(cfg->socket);
    listen_fd = -1;
  }
  md_tls_ctx_free(tls);
  tls = NULL;
  return rc;
}

void mdp_server_stop(void)
{
  if(!running)
    return;
  running = 0;
  mdp_loop_stop(loop);
  pthread_join(loop_thread, NULL);
  mdp_loop_watch_remove(loop, listen_watch);
  listen_watch = NULL;
  close(listen_fd);
  unlink(env.cfg->socket);
  listen_fd = -1;
  md_tls_ctx_free(tls);
  tls = NULL;
  free(held);
  held = NULL;
}
