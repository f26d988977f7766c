/* TLS channel: certificates from conf/memdiag-certs, made at test time, on a
 * real AF_UNIX socketpair; refusals for foreign CA, no certificate, expired
 * certificate and wrong role. */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>
#include <openssl/ssl.h>

#include "md/tls.h"
#include "mdt.h"

static char dir[256];   /* CA "A": plugin, worker, operator, old (expired) */
static char other[300]; /* CA "B": a stranger's worker */

static void path(char *out, size_t len, const char *d, const char *file)
{
  snprintf(out, len, "%s/%s", d, file);
}

static md_tls_ctx *make_ctx(const char *d, const char *name, int server, unsigned roles)
{
  char cert[512], key[512], ca[512], err[512] = "";
  md_tls_options o;
  md_tls_ctx *ctx = NULL;

  snprintf(cert, sizeof(cert), "%s/%s.pem", d, name);
  snprintf(key, sizeof(key), "%s/%s.key", d, name);
  path(ca, sizeof(ca), dir, "ca.pem"); /* the local CA is the only one trusted */
  o = (md_tls_options){
      .certificate = cert, .key = key, .ca = ca, .server = server, .allowed_peer_roles = roles};
  if(md_tls_ctx_new(&ctx, &o, err, sizeof(err)) != MD_OK)
    fail_msg("ctx %s/%s: %s", d, name, err);
  return ctx;
}

/* Drive both handshakes on one thread until each side has a final result. */
static void handshake_pair(md_conn *s, md_conn *c, int *rs, int *rc)
{
  *rs = *rc = MD_EAGAIN;
  for(int i = 0; i < 1000 && (*rs == MD_EAGAIN || *rc == MD_EAGAIN); i++) {
    struct pollfd p[2] = {{md_conn_fd(s), md_conn_events(s), 0},
                          {md_conn_fd(c), md_conn_events(c), 0}};
    if(*rs == MD_EAGAIN)
      *rs = md_conn_handshake(s);
    if(*rc == MD_EAGAIN)
      *rc = md_conn_handshake(c);
    poll(p, 2, 50);
  }
}

static void pair(md_tls_ctx *sctx, md_tls_ctx *cctx, md_conn **s, md_conn **c)
{
  int sv[2];
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  assert_int_equal(md_conn_new(s, sctx, sv[0]), MD_OK);
  assert_int_equal(md_conn_new(c, cctx, sv[1]), MD_OK);
}

/* After a handshake one side may believe it succeeded (TLS 1.3 clients
 * finish first); the refusal then shows on its first read. */
static int first_read(md_conn *c)
{
  Memdiag__V1__Frame *f = NULL;
  int rc = md_conn_recv_wait(c, &f, 2000);
  md_frame_free(f);
  return rc;
}

static void good_pair_exchanges_frames(void **state)
{
  md_tls_ctx *sctx = make_ctx(dir, "plugin", 1, MD_ROLE_WORKER | MD_ROLE_OPERATOR);
  md_tls_ctx *cctx = make_ctx(dir, "worker", 0, MD_ROLE_PLUGIN);
  md_conn *s, *c;
  int rs, rc;
  pid_t pid;
  uid_t uid;
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT, *got = NULL;
  Memdiag__V1__Hello hello = MEMDIAG__V1__HELLO__INIT;
  Memdiag__V1__Reply reply = MEMDIAG__V1__REPLY__INIT;
  size_t big = 3u * 1024u * 1024u;
  uint8_t *payload = malloc(big);

  (void)state;
  pair(sctx, cctx, &s, &c);
  handshake_pair(s, c, &rs, &rc);
  assert_int_equal(rs, MD_OK);
  assert_int_equal(rc, MD_OK);
  assert_int_equal(md_conn_peer_role(s), MD_ROLE_WORKER);
  assert_int_equal(md_conn_peer_role(c), MD_ROLE_PLUGIN);
  assert_string_equal(md_conn_peer_name(s), "memdiag worker");
  assert_int_equal(md_conn_peer_cred(s, &pid, &uid, NULL), MD_OK);
  assert_int_equal(pid, getpid());

  hello.name = "w1";
  hello.has_pid = 1;
  hello.pid = (uint32_t)getpid();
  f.body_case = MEMDIAG__V1__FRAME__BODY_HELLO;
  f.hello = &hello;
  assert_int_equal(md_conn_send_wait(c, &f, 2000), MD_OK);
  assert_int_equal(md_conn_recv_wait(s, &got, 2000), MD_OK);
  assert_string_equal(got->hello->name, "w1");
  md_frame_free(got);

  /* A frame larger than the socket buffer: partial writes interleave with reads. */
  for(size_t i = 0; i < big; i++)
    payload[i] = (uint8_t)(i * 31u);
  reply.has_data = 1;
  reply.data.data = payload;
  reply.data.len = big;
  f.body_case = MEMDIAG__V1__FRAME__BODY_REPLY;
  f.reply = &reply;
  rc = md_conn_send(s, &f);
  assert_true(rc == MD_OK || rc == MD_EAGAIN);
  got = NULL;
  for(int i = 0; i < 10000 && !got; i++) {
    int r = md_conn_recv(c, &got);
    assert_true(r == MD_OK || r == MD_EAGAIN);
    if(md_conn_pending(s)) {
      r = md_conn_flush(s);
      assert_true(r == MD_OK || r == MD_EAGAIN);
    }
  }
  assert_non_null(got);
  assert_int_equal(got->reply->data.len, big);
  assert_memory_equal(got->reply->data.data, payload, big);
  md_frame_free(got);
  free(payload);

  md_conn_shutdown(c);
  md_conn_free(c);
  assert_int_equal(first_read(s), MD_ECLOSED);
  md_conn_free(s);
  md_tls_ctx_free(sctx);
  md_tls_ctx_free(cctx);
}

static void expect_refused(md_tls_ctx *sctx, md_tls_ctx *cctx, int server_rc, const char *needle)
{
  md_conn *s, *c;
  int rs, rc;

  pair(sctx, cctx, &s, &c);
  handshake_pair(s, c, &rs, &rc);
  assert_int_equal(rs, server_rc);
  if(needle && !strstr(md_conn_error(s), needle))
    fail_msg("server error '%s' does not mention '%s'", md_conn_error(s), needle);
  /* Whatever the client believed, it gets nothing through. */
  if(rc == MD_OK) {
    md_conn_free(s);
    s = NULL;
    assert_int_not_equal(first_read(c), MD_OK);
  }
  md_conn_free(s);
  md_conn_free(c);
}

static void foreign_ca_refused(void **state)
{
  md_tls_ctx *sctx = make_ctx(dir, "plugin", 1, MD_ROLE_WORKER);
  md_tls_ctx *cctx = make_ctx(other, "worker", 0, MD_ROLE_PLUGIN);
  (void)state;
  expect_refused(sctx, cctx, MD_ETLS, "certificate");
  md_tls_ctx_free(sctx);
  md_tls_ctx_free(cctx);
}

static void expired_certificate_refused(void **state)
{
  md_tls_ctx *sctx = make_ctx(dir, "plugin", 1, MD_ROLE_WORKER);
  md_tls_ctx *cctx = make_ctx(dir, "old", 0, MD_ROLE_PLUGIN);
  (void)state;
  expect_refused(sctx, cctx, MD_ETLS, "expired");
  md_tls_ctx_free(sctx);
  md_tls_ctx_free(cctx);
}

static void worker_is_not_an_operator(void **state)
{
  md_tls_ctx *sctx = make_ctx(dir, "plugin", 1, MD_ROLE_OPERATOR);
  md_tls_ctx *cctx = make_ctx(dir, "worker", 0, MD_ROLE_PLUGIN);
  (void)state;
  expect_refused(sctx, cctx, MD_EROLE, "role 'worker'");
  md_tls_ctx_free(sctx);
  md_tls_ctx_free(cctx);
}

static void client_checks_server_role(void **state)
{
  /* A peer holding an operator certificate cannot pose as the plugin. */
  md_tls_ctx *sctx = make_ctx(dir, "operator", 1, MD_ROLE_WORKER);
  md_tls_ctx *cctx = make_ctx(dir, "worker", 0, MD_ROLE_PLUGIN);
  md_conn *s, *c;
  int rs, rc;

  (void)state;
  pair(sctx, cctx, &s, &c);
  handshake_pair(s, c, &rs, &rc);
  /* Refused either by the role check or, earlier, because its certificate
   * was not issued for serving (memdiag-certs gives serverAuth to plugins only). */
  assert_true(rc == MD_EROLE || rc == MD_ETLS);
  md_conn_free(s);
  md_conn_free(c);
  md_tls_ctx_free(sctx);
  md_tls_ctx_free(cctx);
}

static void no_certificate_refused(void **state)
{
  md_tls_ctx *sctx = make_ctx(dir, "plugin", 1, MD_ROLE_WORKER);
  SSL_CTX *raw = SSL_CTX_new(TLS_client_method());
  SSL *ssl;
  md_conn *s;
  int sv[2], rs = MD_EAGAIN;
  char ca[512];

  (void)state;
  path(ca, sizeof(ca), dir, "ca.pem");
  SSL_CTX_load_verify_locations(raw, ca, NULL);
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
  assert_int_equal(md_conn_new(&s, sctx, sv[0]), MD_OK);
  ssl = SSL_new(raw);
  SSL_set_fd(ssl, sv[1]);
  SSL_set_connect_state(ssl);
  for(int i = 0; i < 1000 && rs == MD_EAGAIN; i++) {
    SSL_do_handshake(ssl);
    rs = md_conn_handshake(s);
    poll(NULL, 0, 1);
  }
  assert_int_equal(rs, MD_ETLS);
  SSL_free(ssl);
  close(sv[1]);
  SSL_CTX_free(raw);
  md_conn_free(s);
  md_tls_ctx_free(sctx);
}

static void garbage_bytes_are_a_clean_error(void **state)
{
  md_tls_ctx *sctx = make_ctx(dir, "plugin", 1, MD_ROLE_WORKER);
  md_conn *s;
  int sv[2], rs = MD_EAGAIN;
  const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";

  (void)state;
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  assert_int_equal(md_conn_new(&s, sctx, sv[0]), MD_OK);
  assert_int_equal(write(sv[1], junk, sizeof(junk)), (ssize_t)sizeof(junk));
  for(int i = 0; i < 100 && rs == MD_EAGAIN; i++)
    rs = md_conn_handshake(s);
  assert_int_equal(rs, MD_ETLS);
  assert_true(strlen(md_conn_error(s)) > 0);
  close(sv[1]);
  md_conn_free(s);
  md_tls_ctx_free(sctx);
}

static void bad_files_are_config_errors(void **state)
{
  md_tls_options o = {.certificate = "/nonexistent/plugin.pem",
                      .key = "/nonexistent/k",
                      .ca = "/nonexistent/ca",
                      .server = 1,
                      .allowed_peer_roles = MD_ROLE_WORKER};
  md_tls_ctx *ctx = NULL;
  char err[512] = "";

  (void)state;
  assert_int_equal(md_tls_ctx_new(&ctx, &o, err, sizeof(err)), MD_ECONFIG);
  assert_null(ctx);
  assert_non_null(strstr(err, "/nonexistent/plugin.pem"));
}

static int run(const char *cmd)
{
  int rc = system(cmd);
  if(rc != 0)
    fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
  return rc;
}

static int setup(void **state)
{
  char cmd[1024];
  (void)state;
  mdt_tempdir(dir, sizeof(dir), "tls");
  snprintf(other, sizeof(other), "%s/other", dir);
  snprintf(cmd, sizeof(cmd),
           "sh %s %s >/dev/null && sh %s %s --add-expired old worker"
           " && sh %s %s >/dev/null",
           MD_CERTS_SCRIPT, dir, MD_CERTS_SCRIPT, dir, MD_CERTS_SCRIPT, other);
  return run(cmd);
}

static int teardown(void **state)
{
  (void)state;
  return mdt_rmtree(dir);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(good_pair_exchanges_frames),
      cmocka_unit_test(foreign_ca_refused),
      cmocka_unit_test(expired_certificate_refused),
      cmocka_unit_test(worker_is_not_an_operator),
      cmocka_unit_test(client_checks_server_role),
      cmocka_unit_test(no_certificate_refused),
      cmocka_unit_test(garbage_bytes_are_a_clean_error),
      cmocka_unit_test(bad_files_are_config_errors),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
