/* A worker that floods the plugin with heartbeats (issue 12 item 2 test).
 *
 *   md-flood-peer SOCKET CERT KEY CA
 *
 * Registers like a worker (hello with its own PID), prints "welcome
 * connection_id=N" and "flooding", then writes heartbeat frames without
 * pause and never reads, until killed. The frames are encoded once and
 * written in 64 KiB blocks straight through OpenSSL, so sending one costs
 * the flooder a few nanoseconds while decoding it costs the plugin far
 * more: the plugin's socket never runs dry, which is what a loop without a
 * per-connection budget cannot survive. Exit 1 on any error before the
 * flood, 0 when the plugin closes the connection. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h" /* the SSL_CTX inside md_tls_ctx */
#include "md/tls.h"
#include "md/wire.h"

#define BLOCK (64u * 1024u)

static int die(const char *what)
{
  fprintf(stderr, "md-flood-peer: %s\n", what);
  return 1;
}

static int write_all(SSL *ssl, const uint8_t *buf, size_t len)
{
  while(len > 0) {
    int n = SSL_write(ssl, buf, (int)len);
    if(n <= 0)
      return -1;
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

static int send_hello(SSL *ssl)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Hello h = MEMDIAG__V1__HELLO__INIT;
  uint8_t *enc;
  size_t len;
  int rc;

  h.has_pid = 1;
  h.pid = (uint32_t)getpid();
  h.name = "flooder";
  h.runtime = "c-test";
  h.runtime_version = "1";
  f.body_case = MEMDIAG__V1__FRAME__BODY_HELLO;
  f.hello = &h;
  if(md_frame_encode(&f, MD_FRAME_MAX_DEFAULT, &enc, &len))
    return -1;
  rc = write_all(ssl, enc, len);
  free(enc);
  return rc;
}

static int read_welcome(SSL *ssl)
{
  uint8_t buf[4096];
  size_t have = 0;

  for(;;) {
    Memdiag__V1__Frame *f = NULL;
    size_t used = 0;
    int n, rc = md_frame_decode(buf, have, sizeof(buf), &f, &used);

    if(rc == MD_OK) {
      int ok = f->body_case == MEMDIAG__V1__FRAME__BODY_WELCOME;
      if(ok)
        printf("welcome connection_id=%" PRIu64 "\n", f->welcome->connection_id);
      md_frame_free(f);
      return ok ? 0 : -1;
    }
    if(rc != MD_EAGAIN || have == sizeof(buf))
      return -1;
    n = SSL_read(ssl, buf + have, (int)(sizeof(buf) - have));
    if(n <= 0)
      return -1;
    have += (size_t)n;
  }
}

/* BLOCK bytes of whole heartbeat frames (the tail padded with more). */
static uint8_t *heartbeat_block(size_t *len)
{
  uint8_t *block = malloc(BLOCK + 64);
  uint64_t seq = 1000000;

  *len = 0;
  while(block && *len < BLOCK) {
    Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
    Memdiag__V1__Heartbeat hb = MEMDIAG__V1__HEARTBEAT__INIT;
    uint8_t *enc;
    size_t n;

    hb.has_sequence = 1;
    hb.sequence = seq++;
    f.body_case = MEMDIAG__V1__FRAME__BODY_HEARTBEAT;
    f.heartbeat = &hb;
    if(md_frame_encode(&f, 64, &enc, &n)) {
      free(block);
      return NULL;
    }
    memcpy(block + *len, enc, n);
    *len += n;
    free(enc);
  }
  return block;
}

int main(int argc, char **argv)
{
  md_tls_options to = {.server = 0, .allowed_peer_roles = MD_ROLE_PLUGIN};
  md_tls_ctx *ctx;
  char err[512];
  uint8_t *block;
  size_t block_len;
  SSL *ssl;
  int fd;

  if(argc != 5)
    return die("usage: md-flood-peer SOCKET CERT KEY CA");
  signal(SIGPIPE, SIG_IGN);
  to.certificate = argv[2];
  to.key = argv[3];
  to.ca = argv[4];
  if(md_tls_ctx_new(&ctx, &to, err, sizeof(err)))
    return die(err);
  fd = md_unix_connect(argv[1], err, sizeof(err));
  if(fd < 0)
    return die(err);
  /* A deep queue (as root beyond wmem_max): the plugin needs far longer to
   * drain it than this process needs to be scheduled and top it up. */
  {
    int big = 64 * 1024 * 1024;
    if(setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &big, sizeof(big)) != 0)
      setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
  }
  /* Blocking from here: the flood waits only for the plugin to read. */
  if(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
    return die(strerror(errno));
  ssl = SSL_new(ctx->ssl);
  if(!ssl || SSL_set_fd(ssl, fd) != 1 || SSL_connect(ssl) != 1)
    return die("TLS handshake failed");
  if(send_hello(ssl) || read_welcome(ssl))
    return die("no welcome");
  block = heartbeat_block(&block_len);
  if(!block)
    return die("out of memory");
  printf("flooding\n");
  fflush(stdout);
  while(write_all(ssl, block, block_len) == 0)
    ;
  return 0;
}
