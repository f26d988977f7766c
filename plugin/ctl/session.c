/* Connecting to the plugin and exchanging one control request. The error
 * texts here are what an operator sees, so they say which side refused and
 * what to check, rather than only OpenSSL's reason. */
#include "session.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "md/text.h"

static int contains(const char *haystack, const char *needle)
{
  return haystack && strstr(haystack, needle) != NULL;
}

/* The socket's state explains most connection failures better than the
 * connect() errno does. */
static void explain_socket(const char *socket, const char *detail, char *err, size_t errlen)
{
  struct stat st;

  if(stat(socket, &st) != 0 && errno == ENOENT)
    md_seterr(err, errlen,
              "cannot connect to %s: no such socket (is collectd running "
              "with the memdiag plugin? give --socket or MEMDIAG_SOCKET)",
              socket);
  else if(stat(socket, &st) == 0 && !S_ISSOCK(st.st_mode))
    md_seterr(err, errlen, "cannot connect to %s: not a socket", socket);
  else if(contains(detail, "refused"))
    md_seterr(err, errlen,
              "cannot connect to %s: nothing is listening (a stale socket "
              "left by a stopped collectd?)",
              socket);
  else if(contains(detail, "ermission denied"))
    md_seterr(err, errlen,
              "cannot connect to %s: permission denied (the plugin's "
              "SocketMode/SocketGroup decide who may connect)",
              socket);
  else
    md_seterr(err, errlen, "%s", detail);
}

/* A failure while verifying the plugin's certificate on our side, versus
 * an alert from the plugin rejecting ours. */
static void explain_tls(const mdctl_session *s, int rc, const char *detail, char *err,
                        size_t errlen)
{
  if(rc == MD_EROLE)
    md_seterr(err, errlen,
              "the peer at %s is not a memdiag plugin (its certificate's "
              "role is wrong): %s",
              s->socket, detail);
  else if(contains(detail, "certificate verify failed") ||
          contains(detail, "unable to get local issuer") ||
          contains(detail, "self-signed certificate") ||
          contains(detail, "self signed certificate"))
    md_seterr(err, errlen,
              "TLS refused: the plugin's certificate is not signed by your CA "
              "(%s): %s",
              s->ca, detail);
  else if(contains(detail, "alert unknown ca") || contains(detail, "alert bad certificate") ||
          contains(detail, "alert certificate required") ||
          contains(detail, "alert certificate expired") ||
          contains(detail, "alert decrypt error") || contains(detail, "alert handshake failure") ||
          contains(detail, "alert unsupported certificate"))
    md_seterr(err, errlen,
              "TLS refused by the plugin: it does not accept your certificate "
              "(signed by another CA, expired, or not an operator certificate): %s",
              detail);
  else
    md_seterr(err, errlen, "TLS with the plugin at %s failed: %s", s->socket, detail);
}

int mdctl_session_open(mdctl_session *s, const mdctl_session_opts *o, char *err, size_t errlen)
{
  const char *socket = o->socket;
  int timeout_ms = o->timeout_ms;
  char detail[512] = "";
  md_tls_options opts = {
      .certificate = o->cert,
      .key = o->key,
      .ca = o->ca,
      .server = 0,
      .allowed_peer_roles = MD_ROLE_PLUGIN,
  };
  int rc;

  memset(s, 0, sizeof(*s));
  s->socket = socket;
  s->ca = o->ca;
  rc = md_tls_ctx_new(&s->ctx, &opts, detail, sizeof(detail));
  if(rc) {
    md_seterr(err, errlen,
              "cannot load the operator certificate (--cert %s --key %s "
              "--ca %s): %s",
              o->cert, o->key, o->ca, detail);
    goto out;
  }
  rc = md_client_connect(&s->conn, s->ctx, socket, timeout_ms, detail, sizeof(detail));
  if(rc == MD_ETLS || rc == MD_EROLE)
    explain_tls(s, rc, detail, err, errlen);
  else if(rc == MD_ETIMEDOUT)
    md_seterr(err, errlen, "no TLS handshake with %s within %d s", socket, timeout_ms / 1000);
  else if(rc == MD_ECLOSED)
    md_seterr(err, errlen,
              "the plugin at %s closed the connection during the TLS "
              "handshake (it refused this certificate?): %s",
              socket, detail);
  else if(rc)
    explain_socket(socket, detail[0] ? detail : md_strerror(rc), err, errlen);
out:
  if(rc)
    mdctl_session_close(s);
  return rc;
}

/* Why an exchange with the plugin failed, for the operator. */
static void explain_exchange(const mdctl_session *s, int rc, int timeout_ms, char *err,
                             size_t errlen)
{
  if(rc == MD_ETIMEDOUT)
    md_seterr(err, errlen, "no answer from the plugin within %d s (raise --timeout?)",
              timeout_ms / 1000);
  else if(rc == MD_ETLS)
    explain_tls(s, rc, md_conn_error(s->conn), err, errlen);
  else if(rc == MD_ECLOSED)
    md_seterr(err, errlen,
              "the plugin closed the connection without answering: it "
              "probably refused this certificate (signed by another CA, expired, or not an "
              "operator certificate); collectd's log says why");
  else
    md_seterr(err, errlen, "talking to the plugin at %s failed: %s", s->socket,
              md_conn_error(s->conn));
}

/* 1 when `in` ends the wait: our ControlReply or the plugin's Goodbye. */
static int is_answer(const Memdiag__V1__Frame *in, uint64_t request_id)
{
  if(in->body_case == MEMDIAG__V1__FRAME__BODY_GOODBYE)
    return 1;
  return in->body_case == MEMDIAG__V1__FRAME__BODY_CONTROL_REPLY && in->control_reply &&
         (!in->control_reply->has_request_id || in->control_reply->request_id == request_id);
}

int mdctl_session_call(mdctl_session *s, Memdiag__V1__Control *control, int timeout_ms,
                       Memdiag__V1__Frame **out, char *err, size_t errlen)
{
  Memdiag__V1__Frame frame = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Frame *in = NULL;
  uint64_t deadline = md_now_ms() + (uint64_t)timeout_ms;
  int rc;

  *out = NULL;
  frame.body_case = MEMDIAG__V1__FRAME__BODY_CONTROL;
  frame.control = control;
  rc = md_conn_send_wait(s->conn, &frame, timeout_ms);
  /* Anything else (a heartbeat, a stale reply) is not our answer. */
  while(rc == MD_OK) {
    uint64_t now = md_now_ms();
    if(now >= deadline) {
      rc = MD_ETIMEDOUT;
      break;
    }
    rc = md_conn_recv_wait(s->conn, &in, (int)(deadline - now));
    if(rc || is_answer(in, control->request_id))
      break;
    md_frame_free(in);
    in = NULL;
  }
  if(rc) {
    explain_exchange(s, rc, timeout_ms, err, errlen);
    goto out;
  }
  if(in->body_case == MEMDIAG__V1__FRAME__BODY_GOODBYE) {
    Memdiag__V1__Goodbye *g = in->goodbye;
    md_seterr(err, errlen, "the plugin refused this connection (%s): %s",
              g && g->has_status ? md_status_name(g->status) : "goodbye",
              g && g->reason ? g->reason : "no reason given");
    rc = MD_EROLE;
    goto out;
  }
  *out = in;
  in = NULL;
out:
  if(in)
    md_frame_free(in);
  return rc;
}

void mdctl_session_close(mdctl_session *s)
{
  if(s->conn) {
    md_conn_shutdown(s->conn);
    md_conn_free(s->conn);
    s->conn = NULL;
  }
  if(s->ctx) {
    md_tls_ctx_free(s->ctx);
    s->ctx = NULL;
  }
}
