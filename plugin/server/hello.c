/* memdiag plugin: the protocol on one server connection: handshake, hello
 * and Welcome, heartbeats, and frames handed to the server's hooks. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "server_config.h"
#include "md/text.h"
#include "hello.h"
#include "workers/identity.h"

static void forbid_control(mdp_conn *c, const Memdiag__V1__Control *ctl)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__ControlReply r = MEMDIAG__V1__CONTROL_REPLY__INIT;
  const char *why = "a worker certificate may not run operator requests";

  mdp_conn_warn("memdiag plugin: refused a control request from %s: %s", c->who, why);
  r.has_request_id = 1;
  r.request_id = ctl->request_id;
  r.has_status = 1;
  r.status = MEMDIAG__V1__STATUS__STATUS_FORBIDDEN;
  r.error = (char *)why;
  f.body_case = MEMDIAG__V1__FRAME__BODY_CONTROL_REPLY;
  f.control_reply = &r;
  mdp_conn_send(c, &f);
}

/* The registry keeps a worker's capabilities for its life and every
 * `workers` reply lists them: a hello of thousands of them would be
 * memory the peer chose, held per connection. Refused, naming the limit. */
static bool hello_bounded(mdp_conn *c, const Memdiag__V1__Hello *h)
{
  char reason[200] = "";
  if(h->n_capabilities > MDP_HELLO_CAPABILITIES_MAX)
    snprintf(reason, sizeof(reason), "hello lists %zu capabilities; at most %u are accepted",
             h->n_capabilities, MDP_HELLO_CAPABILITIES_MAX);
  for(size_t i = 0; !reason[0] && i < h->n_capabilities; i++)
    if(h->capabilities[i] && strlen(h->capabilities[i]) > MDP_HELLO_CAPABILITY_LEN_MAX)
      snprintf(reason, sizeof(reason),
               "hello capability %zu is %zu bytes long; at most %u are accepted", i + 1,
               strlen(h->capabilities[i]), MDP_HELLO_CAPABILITY_LEN_MAX);
  if(!reason[0])
    return true;
  mdp_conn_warn("memdiag plugin: refused worker hello from %s: %s", c->who, reason);
  mdp_conn_goodbye(c, MEMDIAG__V1__STATUS__STATUS_BAD_REQUEST, reason);
  return false;
}

static void on_hello(mdp_conn *c, const Memdiag__V1__Hello *h)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Welcome w = MEMDIAG__V1__WELCOME__INIT;
  mdp_worker_hello wh;
  mdp_identity id_k;
  char idmsg[160];
  char reason[200];
  uint64_t id;
  int proc_err = 0;
  int rc;

  /* The kernel says who the peer is (SO_PEERCRED) and, for a worker in a
   * PID namespace, which PID it knows itself by (NSpid): the hello must
   * name one of those. */
  if(mdp_identity_read(c->pid, &id_k, idmsg, sizeof(idmsg)) != 0) {
    id_k.pid = id_k.ns_pid = c->pid;
    id_k.same_mnt_ns = -1;
  }
  if(!h->has_pid || !mdp_identity_matches(&id_k, (pid_t)h->pid)) {
    char ns[48] = "";
    if(id_k.ns_pid != id_k.pid)
      snprintf(ns, sizeof(ns), ", pid %ld in its namespace", (long)id_k.ns_pid);
    mdp_conn_warn(
        "memdiag plugin: refused worker hello from pid %ld (SO_PEERCRED%s): it claims pid %s%u",
        (long)c->pid, ns, h->has_pid ? "" : "(none) ", h->has_pid ? h->pid : 0);
    snprintf(reason, sizeof(reason), "hello claims pid %u but the socket peer is pid %ld%s",
             h->has_pid ? h->pid : 0, (long)c->pid, ns);
    mdp_conn_goodbye(c, MEMDIAG__V1__STATUS__STATUS_FORBIDDEN, reason);
    return;
  }
  if(c->pidfd_err == -ESRCH)
    goto gone;
  if(!hello_bounded(c, h))
    return;
  const char *limit = mdp_conn_worker_limit(c);
  if(limit) {
    mdp_conn_warn("memdiag plugin: refused worker hello from pid %ld uid %ld: %s", (long)c->pid,
                  (long)c->uid, limit);
    mdp_conn_goodbye(c, MEMDIAG__V1__STATUS__STATUS_FORBIDDEN, limit);
    return;
  }
  memset(&wh, 0, sizeof(wh));
  wh.pid = c->pid;
  wh.ns_pid = id_k.ns_pid;
  wh.cgroup = id_k.cgroup;
  wh.same_mnt_ns = id_k.same_mnt_ns;
  wh.ppid = h->has_ppid ? (pid_t)h->ppid : 0;
  wh.uid = c->uid;
  wh.gid = c->gid;
  wh.name = h->name;
  wh.certificate = md_conn_peer_name(c->mc);
  wh.runtime = h->runtime;
  wh.runtime_version = h->runtime_version;
  wh.dump_directory = h->dump_directory;
  wh.capabilities = h->capabilities;
  wh.n_capabilities = h->n_capabilities;
  wh.pidfd = c->pidfd;
  c->pidfd = -1; /* the registry's now, whatever happens */
  rc = c->env->hooks.worker_hello(&wh, &id, &proc_err);
  if(rc == -ESRCH)
    goto gone;
  if(rc) {
    ERROR("memdiag plugin: cannot register worker pid %ld: %s", (long)c->pid, strerror(-rc));
    mdp_conn_goodbye(c, MEMDIAG__V1__STATUS__STATUS_ERROR, "plugin out of memory");
    return;
  }
  c->state = MDP_CONN_WORKER;
  c->worker_id = id;
  c->deadline_ms = 0;
  md_conn_set_max_frame(c->mc, c->env->cfg->max_frame);
  snprintf(c->who, sizeof(c->who), "'%.100s' pid %ld", h->name && h->name[0] ? h->name : "worker",
           (long)c->pid);
  /* The name is the peer's text: no control characters into collectd's log. */
  md_printable_inplace(c->who, MD_TEXT_PLAIN);
  w.has_connection_id = 1;
  w.connection_id = id;
  w.has_heartbeat_interval_ms = 1;
  w.heartbeat_interval_ms = c->env->cfg->heartbeat_ms;
  w.has_answers_heartbeats = 1;
  w.answers_heartbeats = 1;
  /* AllocationSampling: unset, the workers keep their own setting */
  w.has_allocation_sampling = c->env->cfg->allocation_sampling >= 0;
  w.allocation_sampling =
      c->env->cfg->allocation_sampling >= 0 ? (uint32_t)c->env->cfg->allocation_sampling : 0;
  f.body_case = MEMDIAG__V1__FRAME__BODY_WELCOME;
  f.welcome = &w;
  if(mdp_conn_send(c, &f) == 0)
    INFO("memdiag plugin: worker %" PRIu64 " registered: %s", id, c->who);
  if(proc_err)
    WARNING("memdiag plugin: worker %" PRIu64 " (%s) cannot be sampled: /proc/%ld: %s "
            "(raise collectd's open file limit if it says too many open files)",
            id, c->who, (long)c->pid, strerror(-proc_err));
  return;
gone:
  /* The process that connected has exited (or its PID went to a process
   * started after the connection): whoever holds the connection now is
   * not the process SO_PEERCRED named, and would be sampled and signalled
   * as it. */
  mdp_conn_warn("memdiag plugin: refused worker hello from pid %ld (SO_PEERCRED): that process "
                "has exited; a connection it handed on cannot register",
                (long)c->pid);
  snprintf(reason, sizeof(reason), "the process that connected (pid %ld) has exited", (long)c->pid);
  mdp_conn_goodbye(c, MEMDIAG__V1__STATUS__STATUS_FORBIDDEN, reason);
}

/* The answer tells the worker that this loop still runs: a plugin that is
 * stopped or wedged but keeps the socket open sends nothing, and the worker
 * reconnects elsewhere. Output still waiting to be written already proves
 * that to a worker once it reads, and a worker that does not read must not
 * make the queue grow. */
static void echo_heartbeat(mdp_conn *c, const Memdiag__V1__Heartbeat *in)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Heartbeat hb = MEMDIAG__V1__HEARTBEAT__INIT;

  if(md_conn_pending(c->mc) > 0)
    return;
  hb.has_sequence = in->has_sequence;
  hb.sequence = in->sequence;
  f.body_case = MEMDIAG__V1__FRAME__BODY_HEARTBEAT;
  f.heartbeat = &hb;
  mdp_conn_send(c, &f);
}

/* A DumpChunk or DumpEnd of no stream the plugin knows is dropped; the
 * worker (an old hook, a bug) keeps its connection, and its log says so
 * once, not once per chunk. */
static void on_stream_frame(mdp_conn *c, const Memdiag__V1__Frame *f)
{
  uint64_t id = f->body_case == MEMDIAG__V1__FRAME__BODY_DUMP_CHUNK ? f->dump_chunk->request_id
                                                                    : f->dump_end->request_id;
  int rc = c->env->hooks.worker_stream(c->worker_id, f);

  if(rc == 0 || c->stray_warned)
    return;
  c->stray_warned = 1;
  mdp_conn_warn("memdiag plugin: dropped a %s from %s (connection %" PRIu64 ") for request %" PRIu64
                ", %s; further ones on this connection are dropped without a word",
                md_frame_kind(f), c->who, c->worker_id, id,
                rc == -EINVAL ? "which is not a stream" : "which the plugin does not know");
}

static void on_operator_frame(mdp_conn *c, const Memdiag__V1__Frame *f)
{
  if(f->body_case == MEMDIAG__V1__FRAME__BODY_CONTROL) {
    c->env->hooks.control(c->serial, c->who, f->control);
  } else if(f->body_case == MEMDIAG__V1__FRAME__BODY_HELLO) {
    mdp_conn_warn("memdiag plugin: refused hello from %s: an operator certificate may not "
                  "register as a worker",
                  c->who);
    mdp_conn_goodbye(c, MEMDIAG__V1__STATUS__STATUS_FORBIDDEN,
                     "an operator certificate may not register as a worker");
  } else {
    mdp_conn_warn("memdiag plugin: closing connection to %s: unexpected %s frame", c->who,
                  md_frame_kind(f));
    mdp_conn_goodbye(c, MEMDIAG__V1__STATUS__STATUS_BAD_REQUEST,
                     "operators send control frames only");
  }
}

static void on_frame(mdp_conn *c, const Memdiag__V1__Frame *f)
{
  c->last_heard_ms = md_now_ms();
  if(f->body_case == MEMDIAG__V1__FRAME__BODY_GOODBYE) {
    char why[200];
    /* The reason is the peer's text: no control characters into the log. */
    md_printable(why, sizeof(why),
                 f->goodbye->reason && f->goodbye->reason[0] ? f->goodbye->reason : "said goodbye",
                 MD_TEXT_PLAIN);
    mdp_conn_drop(c, why);
    return;
  }
  if(c->state == MDP_CONN_OPERATOR) {
    on_operator_frame(c, f);
    return;
  }
  switch(f->body_case) {
  case MEMDIAG__V1__FRAME__BODY_CONTROL: forbid_control(c, f->control); return;
  case MEMDIAG__V1__FRAME__BODY_HELLO:
    if(c->state == MDP_CONN_HELLO) {
      on_hello(c, f->hello);
      return;
    }
    break;
  case MEMDIAG__V1__FRAME__BODY_HEARTBEAT:
    if(c->state == MDP_CONN_WORKER) {
      echo_heartbeat(c, f->heartbeat);
      return;
    }
    break;
  case MEMDIAG__V1__FRAME__BODY_REPLY:
    if(c->state == MDP_CONN_WORKER) {
      c->env->hooks.worker_reply(c->worker_id, f->reply);
      return;
    }
    break;
  case MEMDIAG__V1__FRAME__BODY_DUMP_CHUNK:
  case MEMDIAG__V1__FRAME__BODY_DUMP_END:
    if(c->state == MDP_CONN_WORKER) {
      on_stream_frame(c, f);
      return;
    }
    break;
  default: break;
  }
  mdp_conn_warn("memdiag plugin: closing connection to %s: unexpected %s frame%s", c->who,
                md_frame_kind(f), c->state == MDP_CONN_HELLO ? " before hello" : "");
  mdp_conn_goodbye(c, MEMDIAG__V1__STATUS__STATUS_BAD_REQUEST,
                   c->state == MDP_CONN_HELLO ? "send hello first" : "unexpected frame");
}

static void after_handshake(mdp_conn *c)
{
  md_role role = md_conn_peer_role(c->mc);
  char who[sizeof(c->who)];

  snprintf(who, sizeof(who), "%s certificate '%s' pid %ld", md_role_name(role),
           md_conn_peer_name(c->mc), (long)c->pid);
  memcpy(c->who, who, sizeof(who));
  if(role == MD_ROLE_OPERATOR) {
    c->state = MDP_CONN_OPERATOR;
    c->deadline_ms = 0;
    md_conn_set_max_frame(c->mc, c->env->cfg->max_frame);
  } else {
    c->state = MDP_CONN_HELLO; /* the handshake deadline now covers the hello too */
  }
}

void mdp_hello_service(mdp_conn *c, short revents)
{
  Memdiag__V1__Frame *f;
  unsigned frames = 0;
  size_t bytes = 0;
  int rc = MD_EAGAIN;

  if(c->dead)
    return;
  if(c->closing) {
    rc = md_conn_flush(c->mc);
    if(rc != MD_EAGAIN)
      mdp_conn_drop(c, "refused");
    return;
  }
  if(c->state == MDP_CONN_HANDSHAKE) {
    rc = md_conn_handshake(c->mc);
    if(rc == MD_EAGAIN)
      return;
    if(rc) {
      mdp_conn_warn("memdiag plugin: refused connection from %s: %s", c->who, md_conn_error(c->mc));
      mdp_conn_drop(c, "TLS handshake failed");
      return;
    }
    after_handshake(c);
  }
  if((revents & POLLOUT) && md_conn_pending(c->mc)) {
    rc = md_conn_flush(c->mc);
    if(rc && rc != MD_EAGAIN) {
      mdp_conn_warn("memdiag plugin: closing connection to %s: %s", c->who, md_conn_error(c->mc));
      mdp_conn_drop(c, md_conn_error(c->mc));
      return;
    }
  }
  c->more = 0;
  while(!c->dead && !c->closing) {
    /* A peer sending without pause must not keep the loop here: past its
     * share of this turn it waits for the next one (the server resumes it
     * without waiting for poll, which cannot see bytes already read). */
    if(frames >= MDP_CONN_TURN_FRAMES || bytes >= MDP_CONN_TURN_BYTES) {
      c->more = 1;
      return;
    }
    rc = md_conn_recv(c->mc, &f);
    if(rc != MD_OK)
      break;
    frames++;
    bytes += memdiag__v1__frame__get_packed_size(f);
    on_frame(c, f);
    md_frame_free(f);
  }
  if(c->dead || c->closing || rc == MD_EAGAIN)
    return;
  if(rc == MD_ECLOSED) {
    mdp_conn_drop(c, "connection closed");
    return;
  }
  mdp_conn_warn("memdiag plugin: closing connection to %s: %s", c->who, md_conn_error(c->mc));
  mdp_conn_drop(c, md_conn_error(c->mc));
}
