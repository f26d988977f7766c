/* wire-rtt benchmark: see tests/bench/wire-rtt. A forked echo server
 * answers pings; the parent times round trips over TLS and over a raw
 * AF_UNIX socket carrying the same length-prefixed bytes. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "md/tls.h"

static const char *certs = ".";
static const char *dir = "/tmp";
static int iterations = 20000, handshakes = 200;
static size_t payload_len = 64;

static md_tls_ctx *ctx(const char *name, int server, unsigned roles)
{
  char cert[512], key[512], ca[512], err[512];
  md_tls_options o;
  md_tls_ctx *c = NULL;

  snprintf(cert, sizeof(cert), "%s/%s.pem", certs, name);
  snprintf(key, sizeof(key), "%s/%s.key", certs, name);
  snprintf(ca, sizeof(ca), "%s/ca.pem", certs);
  o = (md_tls_options){cert, key, ca, server, roles};
  if(md_tls_ctx_new(&c, &o, err, sizeof(err))) {
    fprintf(stderr, "wire-rtt: %s\n", err);
    exit(1);
  }
  return c;
}

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static void report(const char *what, uint64_t *us, int n)
{
  uint64_t sum = 0;
  qsort(us, (size_t)n, sizeof(*us), cmp_u64);
  for(int i = 0; i < n; i++)
    sum += us[i];
  printf("%-22s n=%-6d mean %8.2f us  p50 %6llu us  p99 %6llu us\n", what, n, (double)sum / n,
         (unsigned long long)us[n / 2], (unsigned long long)us[(n * 99) / 100]);
}

static double mean(const uint64_t *us, int n)
{
  uint64_t s = 0;
  for(int i = 0; i < n; i++)
    s += us[i];
  return (double)s / n;
}

/* ---- TLS echo server: one connection at a time, until killed ---- */
static void tls_server(int lfd)
{
  md_tls_ctx *sc = ctx("plugin", 1, MD_ROLE_WORKER | MD_ROLE_OPERATOR);
  for(;;) {
    int fd = -1;
    md_conn *c;
    while(fd < 0) {
      fd = accept(lfd, NULL, NULL);
      if(fd < 0 && errno != EAGAIN && errno != EINTR)
        _exit(1);
      if(fd < 0)
        usleep(200);
    }
    if(md_conn_new(&c, sc, fd) || md_conn_handshake_wait(c, 5000)) {
      md_conn_free(c);
      continue;
    }
    for(;;) {
      Memdiag__V1__Frame *f = NULL;
      if(md_conn_recv_wait(c, &f, -1))
        break;
      if(md_conn_send_wait(c, f, -1)) { /* echo the ping back */
        md_frame_free(f);
        break;
      }
      md_frame_free(f);
    }
    md_conn_free(c);
  }
}

/* ---- raw echo server: same length-prefixed bytes, no TLS ---- */
static int read_full(int fd, void *buf, size_t len)
{
  size_t got = 0;
  while(got < len) {
    ssize_t n = read(fd, (char *)buf + got, len - got);
    if(n <= 0)
      return -1;
    got += (size_t)n;
  }
  return 0;
}

static void raw_server(int lfd)
{
  char buf[4 + (1 << 16)];
  int fd = -1;
  while(fd < 0)
    fd = accept(lfd, NULL, NULL);
  /* accept() on a non-blocking listener yields a blocking socket on Linux */
  for(;;) {
    unsigned char *hdr = (unsigned char *)buf;
    size_t len;
    if(read_full(fd, hdr, 4))
      _exit(0);
    len = ((size_t)hdr[0] << 24) | ((size_t)hdr[1] << 16) | ((size_t)hdr[2] << 8) | hdr[3];
    if(len > sizeof(buf) - 4 || read_full(fd, buf + 4, len))
      _exit(1);
    /* One write, as the TLS side sends one record per frame. */
    if(write(fd, buf, len + 4) != (ssize_t)(len + 4))
      _exit(1);
  }
}

static pid_t spawn(void (*fn)(int), const char *sock)
{
  char err[256];
  int lfd = md_unix_listen(sock, 0600, 16, err, sizeof(err));
  pid_t pid;
  if(lfd < 0) {
    fprintf(stderr, "wire-rtt: %s\n", err);
    exit(1);
  }
  pid = fork();
  if(pid == 0) {
    fn(lfd);
    _exit(0);
  }
  close(lfd);
  return pid;
}

int main(int argc, char **argv)
{
  char tls_sock[512], raw_sock[512], err[512];
  uint64_t *tls_us, *raw_us, *hs_us;
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Request req = MEMDIAG__V1__REQUEST__INIT;
  Memdiag__V1__Ping ping = MEMDIAG__V1__PING__INIT;
  uint8_t *enc;
  size_t enc_len;
  md_tls_ctx *cc;
  md_conn *c;
  pid_t tls_pid, raw_pid;
  int rfd;

  for(int i = 1; i < argc; i++) {
    if(!strcmp(argv[i], "--certs") && i + 1 < argc)
      certs = argv[++i];
    else if(!strcmp(argv[i], "--dir") && i + 1 < argc)
      dir = argv[++i];
    else if(!strcmp(argv[i], "--iterations") && i + 1 < argc)
      iterations = atoi(argv[++i]);
    else if(!strcmp(argv[i], "--handshakes") && i + 1 < argc)
      handshakes = atoi(argv[++i]);
    else if(!strcmp(argv[i], "--payload") && i + 1 < argc)
      payload_len = (size_t)atol(argv[++i]);
    else {
      fprintf(stderr, "wire-rtt: unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  if(iterations < 1 || handshakes < 1 || payload_len > 60000) {
    fprintf(stderr, "wire-rtt: iterations and handshakes must be >= 1, payload <= 60000\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  snprintf(tls_sock, sizeof(tls_sock), "%s/tls.sock", dir);
  snprintf(raw_sock, sizeof(raw_sock), "%s/raw.sock", dir);
  tls_pid = spawn(tls_server, tls_sock);
  raw_pid = spawn(raw_server, raw_sock);

  ping.has_payload = 1;
  ping.payload.len = payload_len;
  ping.payload.data = calloc(1, payload_len ? payload_len : 1);
  req.has_request_id = 1;
  req.op_case = MEMDIAG__V1__REQUEST__OP_PING;
  req.ping = &ping;
  f.body_case = MEMDIAG__V1__FRAME__BODY_REQUEST;
  f.request = &req;
  if(md_frame_encode(&f, MD_FRAME_MAX_DEFAULT, &enc, &enc_len))
    return 1;

  tls_us = calloc((size_t)iterations, sizeof(uint64_t));
  raw_us = calloc((size_t)iterations, sizeof(uint64_t));
  hs_us = calloc((size_t)handshakes, sizeof(uint64_t));
  cc = ctx("worker", 0, MD_ROLE_PLUGIN);

  for(int i = 0; i < handshakes; i++) {
    uint64_t t0 = md_now_us();
    if(md_client_connect(&c, cc, tls_sock, 5000, err, sizeof(err))) {
      fprintf(stderr, "wire-rtt: %s\n", err);
      return 1;
    }
    /* One ping so the server has finished its side before we hang up. */
    {
      Memdiag__V1__Frame *back = NULL;
      if(md_conn_send_wait(c, &f, 5000) || md_conn_recv_wait(c, &back, 5000))
        return 1;
      md_frame_free(back);
    }
    hs_us[i] = md_now_us() - t0;
    md_conn_free(c);
  }

  if(md_client_connect(&c, cc, tls_sock, 5000, err, sizeof(err))) {
    fprintf(stderr, "wire-rtt: %s\n", err);
    return 1;
  }
  rfd = md_unix_connect(raw_sock, err, sizeof(err));
  if(rfd < 0) {
    fprintf(stderr, "wire-rtt: %s\n", err);
    return 1;
  }
  /* Interleave the two so machine noise hits both alike. */
  for(int i = 0; i < iterations; i++) {
    Memdiag__V1__Frame *back = NULL;
    uint8_t echo[65536 + 4];
    uint64_t t0 = md_now_us();
    req.request_id = (uint64_t)i;
    if(md_conn_send_wait(c, &f, 5000) || md_conn_recv_wait(c, &back, 5000)) {
      fprintf(stderr, "wire-rtt: TLS ping failed: %s\n", md_conn_error(c));
      return 1;
    }
    tls_us[i] = md_now_us() - t0;
    md_frame_free(back);
    t0 = md_now_us();
    if(write(rfd, enc, enc_len) != (ssize_t)enc_len || read_full(rfd, echo, enc_len)) {
      fprintf(stderr, "wire-rtt: raw ping failed\n");
      return 1;
    }
    raw_us[i] = md_now_us() - t0;
  }
  printf("wire-rtt: payload %zu bytes, frame %zu bytes\n", payload_len, enc_len);
  report("raw unix round trip", raw_us, iterations);
  report("tls unix round trip", tls_us, iterations);
  report("tls connect+handshake", hs_us, handshakes);
  printf("ratio tls/raw (mean): %.2fx   target: <= 3x\n",
         mean(tls_us, iterations) / mean(raw_us, iterations));
  md_conn_free(c);
  close(rfd);
  kill(tls_pid, SIGTERM);
  kill(raw_pid, SIGTERM);
  waitpid(tls_pid, NULL, 0);
  waitpid(raw_pid, NULL, 0);
  free(enc);
  free(ping.payload.data);
  free(tls_us);
  free(raw_us);
  free(hs_us);
  md_tls_ctx_free(cc);
  return 0;
}
