/* A hostile worker for the security tests (issue 24): code running as the
 * application's user, holding the worker certificate, that answers the
 * plugin's requests to hurt the host rather than to help.
 *
 *   md-attack-peer MODE [--socket P --cert C --key K --ca A] [--name N]
 *                       [--allocate-mb M] [--count N] [--source PATH] [--flood 1]
 *                       [--go-file PATH]
 *
 * MODE:
 *   stream   a memory_dump request is answered with DumpChunks of zeros, as
 *            fast as the plugin's credit allows, without end (no DumpEnd, no
 *            Reply); a cancel is ignored. With --flood 1, after the cancel
 *            it sends a chunk every 10 ms whatever the credit says.
 *   sparse   a memory_dump request with a path gets a 15 TiB sparse file
 *            there and an OK reply (DumpTransfer file).
 *   plain    a memory_dump request with a path gets a 5 MiB file there and an
 *            OK reply: an honest worker beside the others.
 *   links    a memory_dump request with a path gets a 5 MiB file there, 40
 *            hard links to it, a subdirectory holding a copy, and the folder's
 *            mtime set to 2100; then an OK reply.
 *   rename   a memory_dump request with a path gets the file --source PATH
 *            (someone else's, on the same file system) renamed there and an
 *            OK reply (DumpTransfer file).
 *   refuse   a memory_dump request gets an ERROR reply.
 *   conns    --count N registered connections from this one process, each
 *            with its hello, held open (heartbeats) until killed; prints
 *            "registered K refused R".
 *   names    as conns, each connection with a name of its own (N-1, N-2,
 *            ...); requests are read and never answered, so a capture plan
 *            of each waits for its timeouts (with --allocate-mb past
 *            CaptureSize: one trigger per name).
 *   frames   --count N registered connections (its own TLS client, OpenSSL),
 *            each then sending the first --frame-mb M MiB of a frame of M
 *            MiB, less its last byte, and nothing more (no heartbeat: give the
 *            plugin a long HeartbeatInterval); prints "holding K partial
 *            frames of M MiB" once written as far as the plugin took them.
 *            With --go-file PATH, every connection registers first, prints
 *            "registered K", and the frames are sent once PATH exists.
 *
 * Prints "welcome connection_id=N pid=P" once the first connection is
 * registered, "request op=NAME" for each request. Exits 1 on setup errors. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>

#include "md/tls.h"
#include "md/wire.h"

#define CHUNK (64u * 1024u)

typedef struct {
  const char *socket, *cert, *key, *ca, *name, *mode, *source, *go_file;
  long allocate_mb, count, frame_mb, flood;
} opts;

static md_tls_ctx *ctx;

static int die(const char *what)
{
  fprintf(stderr, "md-attack-peer: %s\n", what);
  return 1;
}

static int connect_one(const opts *o, md_conn **c)
{
  char err[512];
  for(int attempt = 0; attempt < 50; attempt++) {
    int rc = md_client_connect(c, ctx, o->socket, 10000, err, sizeof err);
    if(rc == 0)
      return 0;
    if(!strstr(err, "unavailable") && !strstr(err, "timed out"))
      break;
    usleep(50000);
  }
  return -1;
}

/* Hello as name, and the Welcome (or a Goodbye: -1). */
static int hello(const char *name, md_conn *c, uint64_t *id)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT, *in = NULL;
  Memdiag__V1__Hello h = MEMDIAG__V1__HELLO__INIT;
  char *caps[] = {"ping", "memory_dump", "thread_dump"};
  int rc;

  h.name = (char *)name;
  h.has_pid = 1;
  h.pid = (uint32_t)getpid();
  h.runtime = "c-attack";
  h.runtime_version = "1";
  h.n_capabilities = 3;
  h.capabilities = caps;
  f.body_case = MEMDIAG__V1__FRAME__BODY_HELLO;
  f.hello = &h;
  if(md_conn_send_wait(c, &f, 5000))
    return -1;
  rc = md_conn_recv_wait(c, &in, 10000);
  if(rc || in->body_case != MEMDIAG__V1__FRAME__BODY_WELCOME) {
    md_frame_free(in);
    return -1;
  }
  *id = in->welcome->connection_id;
  md_frame_free(in);
  return 0;
}

static int send_frame(md_conn *c, Memdiag__V1__Frame *f) { return md_conn_send_wait(c, f, 30000); }

static int reply(md_conn *c, uint64_t request_id, Memdiag__V1__Status status, uint64_t bytes)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Reply r = MEMDIAG__V1__REPLY__INIT;
  r.has_request_id = r.has_status = 1;
  r.request_id = request_id;
  r.status = status;
  if(status != MEMDIAG__V1__STATUS__STATUS_OK)
    r.error = "refused by md-attack-peer";
  r.has_bytes = 1;
  r.bytes = bytes;
  f.body_case = MEMDIAG__V1__FRAME__BODY_REPLY;
  f.reply = &r;
  return send_frame(c, &f);
}

static void heartbeat(md_conn *c, uint64_t *seq)
{
  Memdiag__V1__Heartbeat hb = MEMDIAG__V1__HEARTBEAT__INIT;
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  hb.has_sequence = 1;
  hb.sequence = ++*seq;
  f.body_case = MEMDIAG__V1__FRAME__BODY_HEARTBEAT;
  f.heartbeat = &hb;
  md_conn_send(c, &f);
  md_conn_flush(c);
}

static int write_block(int fd, size_t n)
{
  static char buf[CHUNK];
  memset(buf, '{', sizeof buf);
  while(n > 0) {
    size_t k = n < sizeof buf ? n : sizeof buf;
    if(write(fd, buf, k) != (ssize_t)k)
      return -1;
    n -= k;
  }
  return 0;
}

/* DumpTransfer file: what lands at path, by mode. */
static int plant(const opts *o, const char *path, uint64_t *bytes)
{
  const char *mode = o->mode;
  char dir[4096], other[4200];
  struct stat sb;
  if(strcmp(mode, "rename") == 0) {
    if(!o->source || rename(o->source, path) != 0 || lstat(path, &sb) != 0)
      return -1;
    *bytes = (uint64_t)sb.st_size;
    return 0;
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600);
  if(fd < 0)
    return -1;
  if(strcmp(mode, "sparse") == 0) {
    *bytes = 15ull << 40;
    if(ftruncate(fd, (off_t)*bytes) != 0 || write(fd, "{", 1) != 1) {
      close(fd);
      return -1;
    }
    close(fd);
    return 0;
  }
  *bytes = 5u << 20;
  if(write_block(fd, (size_t)*bytes)) {
    close(fd);
    return -1;
  }
  close(fd);
  if(strcmp(mode, "plain") == 0)
    return 0;
  snprintf(dir, sizeof dir, "%s", path);
  *strrchr(dir, '/') = '\0';
  for(int i = 1; i <= 40; i++) {
    snprintf(other, sizeof other, "%s/link-%d.json", dir, i);
    if(link(path, other) != 0)
      return -1;
  }
  snprintf(other, sizeof other, "%s/sub", dir);
  if(mkdir(other, 0700) != 0)
    return -1;
  snprintf(other, sizeof other, "%s/sub/copy.json", dir);
  fd = open(other, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if(fd < 0 || write_block(fd, 1u << 20)) {
    if(fd >= 0)
      close(fd);
    return -1;
  }
  close(fd);
  struct timespec t[2] = {{.tv_sec = 4102444800}, {.tv_sec = 4102444800}}; /* 2100-01-01 */
  return utimensat(AT_FDCWD, dir, t, 0);
}

/* One worker connection: answer requests the way `mode` says, forever. */
static int serve(const opts *o, md_conn *c)
{
  static uint8_t zeros[CHUNK];
  uint64_t seq = 0, streaming = 0, credit = 0, sent = 0, next_beat = md_now_ms() + 1000;
  int flooding = 0; /* --flood 1 after a cancel: credit no longer counts */

  for(;;) {
    Memdiag__V1__Frame *in = NULL;
    int rc;

    if(md_now_ms() >= next_beat) {
      heartbeat(c, &seq);
      next_beat = md_now_ms() + 1000;
    }
    if(flooding && credit < CHUNK)
      credit = CHUNK; /* one chunk a turn, as if granted */
    while(streaming && credit >= CHUNK) {
      Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
      Memdiag__V1__DumpChunk ch = MEMDIAG__V1__DUMP_CHUNK__INIT;
      ch.has_request_id = ch.has_data = 1;
      ch.request_id = streaming;
      ch.data.data = zeros;
      ch.data.len = CHUNK;
      f.body_case = MEMDIAG__V1__FRAME__BODY_DUMP_CHUNK;
      f.dump_chunk = &ch;
      if(send_frame(c, &f))
        return die("the plugin closed the connection while streaming");
      credit -= CHUNK;
      sent += CHUNK;
      if(md_now_ms() >= next_beat || flooding)
        break;
    }
    rc = md_conn_recv_wait(c, &in, flooding ? 10 : 200);
    if(rc == MD_ETIMEDOUT || rc == MD_EAGAIN)
      continue;
    if(rc) {
      printf("closed sent=%" PRIu64 "\n", sent);
      return 0;
    }
    if(in->body_case == MEMDIAG__V1__FRAME__BODY_STREAM_CREDIT) {
      const Memdiag__V1__StreamCredit *sc = in->stream_credit;
      if(sc->cancel) {
        printf("cancel ignored after %" PRIu64 " bytes: %s\n", sent, sc->cancel);
        fflush(stdout);
        flooding = o->flood > 0;
      }
      if(sc->has_bytes)
        credit += sc->bytes;
    } else if(in->body_case == MEMDIAG__V1__FRAME__BODY_REQUEST) {
      const Memdiag__V1__Request *req = in->request;
      printf("request op=%d\n", (int)req->op_case);
      fflush(stdout);
      if(req->op_case == MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP) {
        const Memdiag__V1__MemoryDump *md = req->memory_dump;
        uint64_t bytes = 0;
        if(md->stream && strcmp(o->mode, "stream") == 0) {
          streaming = req->request_id;
          credit = md->has_stream_window ? md->stream_window : 0;
        } else if(strcmp(o->mode, "refuse") == 0) {
          reply(c, req->request_id, MEMDIAG__V1__STATUS__STATUS_ERROR, 0);
        } else if(md->path && plant(o, md->path, &bytes) == 0) {
          reply(c, req->request_id, MEMDIAG__V1__STATUS__STATUS_OK, bytes);
        } else {
          fprintf(stderr, "md-attack-peer: cannot plant %s: %s\n", md->path ? md->path : "(none)",
                  strerror(errno));
        }
      } else if(req->op_case == MEMDIAG__V1__REQUEST__OP_PING) {
        reply(c, req->request_id, MEMDIAG__V1__STATUS__STATUS_OK, 0);
      }
    }
    md_frame_free(in);
  }
}

/* Many registered connections from this process, held open. */
static int hold_many(const opts *o)
{
  md_conn **cs = calloc((size_t)o->count, sizeof *cs);
  struct pollfd *pf = calloc((size_t)o->count, sizeof *pf);
  long ok = 0, refused = 0;
  uint64_t seq = 0, id;

  if(!cs || !pf)
    return die("out of memory");
  for(long i = 0; i < o->count; i++) {
    char name[160];
    if(strcmp(o->mode, "names") == 0)
      snprintf(name, sizeof name, "%.128s-%ld", o->name, i + 1);
    else
      snprintf(name, sizeof name, "%.128s", o->name);
    if(connect_one(o, &cs[ok]) || hello(name, cs[ok], &id)) {
      if(cs[ok])
        md_conn_free(cs[ok]);
      cs[ok] = NULL;
      refused++;
      continue;
    }
    if(ok == 0) {
      printf("welcome connection_id=%" PRIu64 " pid=%ld\n", id, (long)getpid());
      fflush(stdout);
    }
    ok++;
  }
  printf("registered %ld refused %ld\n", ok, refused);
  fflush(stdout);

  for(;;) {
    for(long i = 0; i < ok; i++) {
      Memdiag__V1__Frame *in = NULL;
      if(!cs[i])
        continue;
      heartbeat(cs[i], &seq);
      while(md_conn_recv(cs[i], &in) == 0)
        md_frame_free(in);
    }
    sleep(1);
  }
}

/* ---------------------------------------------------------------- frames */

static int ssl_write_all(SSL *s, const uint8_t *p, size_t n)
{
  while(n > 0) {
    int k = SSL_write(s, p, n > (1u << 20) ? (int)(1u << 20) : (int)n);
    if(k <= 0)
      return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static int ssl_read_all(SSL *s, uint8_t *p, size_t n)
{
  while(n > 0) {
    int k = SSL_read(s, p, (int)n);
    if(k <= 0)
      return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

/* A TLS connection of its own, its hello and Welcome: the connection, or
 * NULL. */
static SSL *register_one(const opts *o, SSL_CTX *sc, long i)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT, *in = NULL;
  Memdiag__V1__Hello h = MEMDIAG__V1__HELLO__INIT;
  char err[256], name[160];
  uint8_t *enc = NULL, hdr[4];
  size_t enc_len = 0, blen, used = 0;
  int fd = md_unix_connect(o->socket, err, sizeof err);
  SSL *s;

  struct timeval tv = {.tv_sec = 10};
  if(fd < 0)
    return NULL;
  /* a connection the plugin neither reads nor closes is given up */
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  s = SSL_new(sc);
  if(!s || SSL_set_fd(s, fd) != 1 || SSL_connect(s) != 1)
    return NULL;
  snprintf(name, sizeof name, "%.128s-%ld", o->name, i + 1);
  h.name = name;
  h.has_pid = 1;
  h.pid = (uint32_t)getpid();
  h.runtime = "c-attack";
  h.runtime_version = "1";
  f.body_case = MEMDIAG__V1__FRAME__BODY_HELLO;
  f.hello = &h;
  if(md_frame_encode(&f, 1u << 16, &enc, &enc_len) || ssl_write_all(s, enc, enc_len))
    return NULL;
  free(enc);
  if(ssl_read_all(s, hdr, 4))
    return NULL;
  blen = ((size_t)hdr[0] << 24) | ((size_t)hdr[1] << 16) | ((size_t)hdr[2] << 8) | hdr[3];
  uint8_t *buf = malloc(4 + blen);
  if(!buf || (memcpy(buf, hdr, 4), ssl_read_all(s, buf + 4, blen)) ||
     md_frame_decode(buf, 4 + blen, 1u << 20, &in, &used) ||
     in->body_case != MEMDIAG__V1__FRAME__BODY_WELCOME) {
    free(buf);
    return NULL;
  }
  if(i == 0)
    printf("welcome connection_id=%" PRIu64 " pid=%ld\n", in->welcome->connection_id,
           (long)getpid());
  md_frame_free(in);
  free(buf);
  return s;
}

/* Most of a frame: all of it but its last byte. */
static int partial_frame(SSL *s, const uint8_t *body, size_t len)
{
  uint8_t hdr[4];

  if(!s)
    return -1;
  hdr[0] = (uint8_t)(len >> 24);
  hdr[1] = (uint8_t)(len >> 16);
  hdr[2] = (uint8_t)(len >> 8);
  hdr[3] = (uint8_t)len;
  return ssl_write_all(s, hdr, 4) || ssl_write_all(s, body, len - 1) ? -1 : 0;
}

static int hold_frames(const opts *o)
{
  SSL_CTX *sc = SSL_CTX_new(TLS_client_method());
  size_t len = ((size_t)o->frame_mb << 20) - 16;
  uint8_t *body = calloc(1, len);
  long held = 0;
  SSL **conns = calloc((size_t)o->count, sizeof *conns);

  if(!sc || !body || !conns || SSL_CTX_use_certificate_chain_file(sc, o->cert) != 1 ||
     SSL_CTX_use_PrivateKey_file(sc, o->key, SSL_FILETYPE_PEM) != 1 ||
     SSL_CTX_load_verify_locations(sc, o->ca, NULL) != 1)
    return die("cannot set up TLS");
  SSL_CTX_set_min_proto_version(sc, TLS1_3_VERSION);
  SSL_CTX_set_verify(sc, SSL_VERIFY_PEER, NULL);
  signal(SIGPIPE, SIG_IGN); /* a connection the plugin closed fails its write */
  if(o->go_file) {
    long registered = 0;
    for(long i = 0; i < o->count; i++)
      registered += (conns[i] = register_one(o, sc, i)) != NULL;
    printf("registered %ld\n", registered);
    while(access(o->go_file, F_OK) != 0)
      usleep(20000);
    for(long i = 0; i < o->count; i++)
      held += partial_frame(conns[i], body, len) == 0;
  } else {
    for(long i = 0; i < o->count; i++)
      held += partial_frame(register_one(o, sc, i), body, len) == 0;
  }
  printf("holding %ld partial frames of %ld MiB\n", held, o->frame_mb);
  for(;;)
    pause();
}

int main(int argc, char **argv)
{
  opts o = {.socket = getenv("MEMDIAG_SOCKET"),
            .cert = getenv("MEMDIAG_CERT"),
            .key = getenv("MEMDIAG_KEY"),
            .ca = getenv("MEMDIAG_CA"),
            .name = "attacker",
            .count = 1};
  md_tls_options to = {.server = 0, .allowed_peer_roles = MD_ROLE_PLUGIN};
  char err[512];
  md_conn *c = NULL;
  uint64_t id;

  if(argc < 2)
    return die(
        "usage: md-attack-peer stream|sparse|plain|links|rename|refuse|conns|names [options]");
  o.mode = argv[1];
  for(int i = 2; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if(!strcmp(k, "--socket"))
      o.socket = v;
    else if(!strcmp(k, "--cert"))
      o.cert = v;
    else if(!strcmp(k, "--key"))
      o.key = v;
    else if(!strcmp(k, "--ca"))
      o.ca = v;
    else if(!strcmp(k, "--name"))
      o.name = v;
    else if(!strcmp(k, "--allocate-mb"))
      o.allocate_mb = strtol(v, NULL, 10);
    else if(!strcmp(k, "--count"))
      o.count = strtol(v, NULL, 10);
    else if(!strcmp(k, "--frame-mb"))
      o.frame_mb = strtol(v, NULL, 10);
    else if(!strcmp(k, "--source"))
      o.source = v;
    else if(!strcmp(k, "--go-file"))
      o.go_file = v;
    else if(!strcmp(k, "--flood"))
      o.flood = strtol(v, NULL, 10);
    else
      return die("unknown option");
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  if(o.allocate_mb > 0) {
    size_t n = (size_t)o.allocate_mb << 20;
    char *p = malloc(n);
    if(!p)
      return die("out of memory");
    memset(p, 0x5a, n);
    __asm__ volatile("" : : "r"(p) : "memory");
  }
  to.certificate = o.cert;
  to.key = o.key;
  to.ca = o.ca;
  if(md_tls_ctx_new(&ctx, &to, err, sizeof err))
    return die(err);
  if(!strcmp(o.mode, "frames") && o.frame_mb > 0)
    return hold_frames(&o);
  if(!strcmp(o.mode, "conns") || !strcmp(o.mode, "names"))
    return hold_many(&o);
  if(connect_one(&o, &c) || hello(o.name, c, &id))
    return die("cannot register");
  printf("welcome connection_id=%" PRIu64 " pid=%ld\n", id, (long)getpid());
  return serve(&o, c);
}
