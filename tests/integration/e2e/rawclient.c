/* e2e-rawclient: a peer that does what the real hook never would, so the
 * end-to-end tests can show that the plugin refuses it.
 *
 *   e2e-rawclient SOCKET CERT KEY CA hello NAME PID
 *
 * connects with the given certificate, sends a Hello claiming PID, and
 * prints the plugin's answer: "welcome ID", "goodbye STATUS REASON" or
 * "closed: WHY". Exit 0 on welcome, 3 when refused, 1 on other errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md/tls.h"

#define WAIT_MS 30000

int main(int argc, char **argv)
{
  md_tls_options opts = {0};
  md_tls_ctx *ctx = NULL;
  md_conn *conn = NULL;
  Memdiag__V1__Frame frame = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Hello hello = MEMDIAG__V1__HELLO__INIT;
  Memdiag__V1__Frame *in = NULL;
  char err[512];
  int rc, code = 1;

  if(argc != 8 || strcmp(argv[5], "hello") != 0) {
    fprintf(stderr, "usage: e2e-rawclient SOCKET CERT KEY CA hello NAME PID\n");
    return 2;
  }
  opts.certificate = argv[2];
  opts.key = argv[3];
  opts.ca = argv[4];
  opts.allowed_peer_roles = MD_ROLE_PLUGIN;
  rc = md_tls_ctx_new(&ctx, &opts, err, sizeof(err));
  if(rc) {
    fprintf(stderr, "e2e-rawclient: %s\n", err);
    goto out;
  }
  rc = md_client_connect(&conn, ctx, argv[1], WAIT_MS, err, sizeof(err));
  if(rc) {
    printf("closed: %s\n", err);
    code = 3;
    goto out;
  }
  hello.name = argv[6];
  hello.has_pid = 1;
  hello.pid = (uint32_t)strtoul(argv[7], NULL, 10);
  hello.runtime = "e2e-rawclient";
  frame.body_case = MEMDIAG__V1__FRAME__BODY_HELLO;
  frame.hello = &hello;
  rc = md_conn_send_wait(conn, &frame, WAIT_MS);
  if(rc == MD_OK)
    rc = md_conn_recv_wait(conn, &in, WAIT_MS);
  if(rc) {
    printf("closed: %s (%s)\n", md_strerror(rc), md_conn_error(conn));
    code = rc == MD_ETIMEDOUT ? 1 : 3;
    goto out;
  }
  if(in->body_case == MEMDIAG__V1__FRAME__BODY_WELCOME && in->welcome) {
    printf("welcome %llu\n", (unsigned long long)in->welcome->connection_id);
    code = 0;
  } else if(in->body_case == MEMDIAG__V1__FRAME__BODY_GOODBYE && in->goodbye) {
    printf("goodbye %s %s\n", md_status_name(in->goodbye->status),
           in->goodbye->reason ? in->goodbye->reason : "");
    code = 3;
  } else {
    printf("unexpected %s\n", md_frame_kind(in));
  }
out:
  md_frame_free(in);
  if(conn)
    md_conn_free(conn);
  if(ctx)
    md_tls_ctx_free(ctx);
  return code;
}
