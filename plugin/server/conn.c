/* memdiag plugin: sending on and closing one server connection, and the
 * rate-limited log of what peers cause. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "server_config.h"
#include "conn.h"

#define GOODBYE_FLUSH_MS   1000u
#define PEER_LOG_BURST     30
#define PEER_LOG_WINDOW_MS 60000u

static uint64_t peer_log_window;
static unsigned peer_logged, peer_suppressed;

void mdp_conn_log_roll(uint64_t now)
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

void mdp_conn_warn(const char *fmt, ...)
{
  char msg[1024];
  va_list ap;

  mdp_conn_log_roll(md_now_ms());
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

void mdp_conn_drop(mdp_conn *c, const char *why)
{
  if(c->dead)
    return;
  c->dead = 1;
  if(c->state == MDP_CONN_WORKER)
    INFO("memdiag plugin: worker %" PRIu64 " (%s) gone: %s", c->worker_id, c->who, why);
}

static unsigned operator_slots(unsigned max_connections)
{
  return max_connections / 4 < MDP_CONN_OPERATOR_SLOTS ? max_connections / 4
                                                       : MDP_CONN_OPERATOR_SLOTS;
}

const char *mdp_conn_worker_limit(const mdp_conn *c)
{
  unsigned max = c->env->cfg->max_connections, slots = operator_slots(max);
  unsigned all = 0, of_uid = 0, of_pid = 0;

  if(!c->env->count_workers)
    return NULL;
  c->env->count_workers(c->uid, c->pid, &all, &of_uid, &of_pid);
  if(of_pid >= MDP_CONN_PER_PID)
    return "too many connections from this process (at most 4 registered per pid)";
  if(of_uid >= max - slots - (max - slots) / 4)
    return "too many connections from this uid (at most three quarters of the workers' slots)";
  if(all >= max - slots)
    return "MaxConnections reached for workers (the last slots are kept for operators)";
  return NULL;
}

int mdp_conn_send(mdp_conn *c, const Memdiag__V1__Frame *f)
{
  uint64_t max_frame = c->env->cfg->max_frame;
  int rc;

  /* A peer that asks but never reads would make the queue grow without
   * bound; more than one whole frame waiting means it is not reading. */
  if(md_conn_pending(c->mc) > max_frame) {
    mdp_conn_warn("memdiag plugin: closing connection to %s: it does not read what it is sent "
                  "(%zu bytes waiting)",
                  c->who, md_conn_pending(c->mc));
    mdp_conn_drop(c, "does not read what it is sent");
    return -EIO;
  }
  rc = md_conn_send(c->mc, f);
  if(rc == MD_OK || rc == MD_EAGAIN)
    return 0;
  /* Refused before anything was queued: the connection is still good. */
  if(rc == MD_ETOOBIG) {
    WARNING("memdiag plugin: not sending a %s frame to %s: larger than MaxFrameSize (%" PRIu64
            " bytes)",
            md_frame_kind(f), c->who, max_frame);
    return -EMSGSIZE;
  }
  mdp_conn_warn("memdiag plugin: closing connection to %s: %s", c->who, md_conn_error(c->mc));
  mdp_conn_drop(c, md_conn_error(c->mc)[0] ? md_conn_error(c->mc) : md_strerror(rc));
  return -EIO;
}

void mdp_conn_goodbye(mdp_conn *c, Memdiag__V1__Status status, const char *reason)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Goodbye g = MEMDIAG__V1__GOODBYE__INIT;

  g.has_status = 1;
  g.status = status;
  g.reason = (char *)reason;
  f.body_case = MEMDIAG__V1__FRAME__BODY_GOODBYE;
  f.goodbye = &g;
  if(mdp_conn_send(c, &f) != 0)
    return;
  if(md_conn_pending(c->mc) == 0) {
    md_conn_shutdown(c->mc);
    mdp_conn_drop(c, reason);
    return;
  }
  c->closing = 1;
  c->deadline_ms = md_now_ms() + GOODBYE_FLUSH_MS;
}
