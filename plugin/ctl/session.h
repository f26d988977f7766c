/* memdiagctl's connection to the plugin (prefix mdctl_session_): mutual TLS
 * with an operator certificate, one Control out, its ControlReply back.
 *
 * Ownership: the session owns its TLS context and connection and releases
 * both in mdctl_session_close(). A reply frame returned by
 * mdctl_session_call() belongs to the caller (md_frame_free()).
 */
#ifndef MDCTL_SESSION_H
#define MDCTL_SESSION_H

#include <stddef.h>

#include "md/tls.h"

typedef struct {
  md_tls_ctx *ctx;
  md_conn *conn;
  const char *socket;
  const char *ca;
} mdctl_session;

/* Where the plugin is and who the operator is (borrowed: the strings must
 * outlive the session). */
typedef struct {
  const char *socket;
  const char *cert;
  const char *key;
  const char *ca;
  int timeout_ms; /* for the TLS handshake */
} mdctl_session_opts;

/* Load the operator certificate and connect. On failure returns a negative
 * md error and explains it (which file, which side refused) in err. */
int mdctl_session_open(mdctl_session *s, const mdctl_session_opts *o, char *err, size_t errlen);

/* Send `control` and wait up to timeout_ms for the ControlReply carrying
 * its request_id. *out is the whole frame; its control_reply is the answer.
 * A Goodbye from the plugin (e.g. this certificate may not operate) is
 * MD_EROLE with the plugin's reason in err. */
int mdctl_session_call(mdctl_session *s, Memdiag__V1__Control *control, int timeout_ms,
                       Memdiag__V1__Frame **out, char *err, size_t errlen);

void mdctl_session_close(mdctl_session *s);

#endif
