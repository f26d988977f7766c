/* One TLS connection: handshake, role check, buffered frame I/O.
 *
 * Reads drain the TLS layer until it wants more bytes, so a caller that
 * polls the fd never misses data OpenSSL already decrypted: md_conn_recv
 * only reports MD_EAGAIN after SSL_read said it needs the socket. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include "internal.h"

#define READ_CHUNK 16384u
/* Buffers grown past this for one large frame are given back once empty:
 * a connection that once carried a big dump keeps only a small buffer. */
#define KEEP_CAP   (4u * READ_CHUNK)

struct md_conn {
  md_tls_ctx *ctx;
  SSL *ssl;
  int fd;
  int handshake_done;
  int failed; /* a final error happened; nothing more works */
  short want; /* poll events the last TLS call asked for */
  size_t max_frame;
  /* Received bytes not yet decoded are rbuf[roff, rlen): frames are taken
   * from the front by moving roff, and the rest is moved down only when
   * the tail runs out of room, so a burst of small frames costs one move
   * per read, not one per frame. */
  uint8_t *rbuf;
  size_t roff, rlen, rcap;
  uint8_t *wbuf;
  size_t woff, wlen, wcap;
  md_role peer_role;
  char peer_name[128];
  char err[384];
};

int md_conn_new(md_conn **out, md_tls_ctx *ctx, int fd)
{
  md_conn *c;
  BIO *bio;
  int flags;

  if(!out || !ctx || fd < 0) {
    if(fd >= 0)
      close(fd);
    return MD_EINVAL;
  }
  *out = NULL;
  flags = fcntl(fd, F_GETFL);
  if(flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    close(fd);
    return MD_EIO;
  }
  c = calloc(1, sizeof(*c));
  if(!c) {
    close(fd);
    return MD_ENOMEM;
  }
  c->ctx = ctx;
  c->fd = fd;
  c->max_frame = MD_FRAME_MAX_DEFAULT;
  c->want = POLLIN | POLLOUT;
  c->ssl = SSL_new(ctx->ssl);
  bio = md_bio_socket_new(fd);
  if(!c->ssl || !bio) {
    BIO_free(bio);
    md_conn_free(c);
    return MD_ENOMEM;
  }
  SSL_set_bio(c->ssl, bio, bio);
  if(ctx->server)
    SSL_set_accept_state(c->ssl);
  else
    SSL_set_connect_state(c->ssl);
  *out = c;
  return MD_OK;
}

void md_conn_free(md_conn *c)
{
  if(!c)
    return;
  SSL_free(c->ssl);
  if(c->fd >= 0)
    close(c->fd);
  free(c->rbuf);
  free(c->wbuf);
  free(c);
}

int md_conn_fd(const md_conn *c) { return c->fd; }
void md_conn_set_max_frame(md_conn *c, size_t max_len) { c->max_frame = max_len; }
int md_conn_handshake_done(const md_conn *c) { return c->handshake_done; }
md_role md_conn_peer_role(const md_conn *c) { return c->peer_role; }
const char *md_conn_peer_name(const md_conn *c) { return c->peer_name; }
const char *md_conn_error(const md_conn *c) { return c->err; }
size_t md_conn_pending(const md_conn *c) { return c->wlen - c->woff; }

size_t md_conn_buffered(const md_conn *c) { return c->rcap; }

short md_conn_events(const md_conn *c)
{
  short ev = c->want;

  if(c->handshake_done) {
    ev |= POLLIN;
    if(c->wlen > c->woff)
      ev |= POLLOUT;
  }
  return ev;
}

static int fail(md_conn *c, int rc, const char *fmt, const char *detail)
{
  snprintf(c->err, sizeof(c->err), fmt, detail);
  c->failed = rc;
  return rc;
}

/* After SSL_ERROR_SYSCALL: did the peer go away (EOF, EPIPE, ECONNRESET)?
 * OpenSSL 3.0 leaves the reason in errno only; later releases (3.5 on
 * Debian 13) also queue it as a system-library error ("error:80000020:
 * system library::Broken pipe"), which is the same closed peer. */
static int peer_went_away(int ret)
{
  unsigned long q = ERR_peek_last_error();

  if(q == 0)
    return ret == 0 || errno == 0 || errno == ECONNRESET || errno == EPIPE;
  return ERR_GET_LIB(q) == ERR_LIB_SYS &&
         (ERR_GET_REASON(q) == EPIPE || ERR_GET_REASON(q) == ECONNRESET);
}

/* Map an SSL_* result to MD_EAGAIN or a final error with its text. */
static int ssl_result(md_conn *c, int ret, const char *what)
{
  int e = SSL_get_error(c->ssl, ret);
  char detail[300];

  switch(e) {
  case SSL_ERROR_WANT_READ: c->want = POLLIN; return MD_EAGAIN;
  case SSL_ERROR_WANT_WRITE: c->want = POLLOUT; return MD_EAGAIN;
  case SSL_ERROR_ZERO_RETURN: return fail(c, MD_ECLOSED, "%s", "peer closed the connection");
  case SSL_ERROR_SYSCALL:
    if(peer_went_away(ret)) {
      ERR_clear_error();
      return fail(c, MD_ECLOSED, "%s", "peer closed the connection");
    }
    if(ERR_peek_error() == 0) {
      snprintf(detail, sizeof(detail), "%s: %s", what, strerror(errno));
      ERR_clear_error();
      return fail(c, MD_EIO, "%s", detail);
    }
    /* OpenSSL queued the reason: report it like any TLS error */
    __attribute__((fallthrough));
  default: {
    long vr = SSL_get_verify_result(c->ssl);
    char prefix[200];
    snprintf(prefix, sizeof(prefix), "%s failed", what);
    md_ssl_error_text(detail, sizeof(detail), prefix);
    if(vr != X509_V_OK) {
      size_t n = strlen(detail);
      snprintf(detail + n, sizeof(detail) - n, " (peer certificate: %s)",
               X509_verify_cert_error_string(vr));
    }
    return fail(c, MD_ETLS, "%s", detail);
  }
  }
}

static md_role role_of(X509 *cert)
{
  X509_NAME *subject = X509_get_subject_name(cert);
  int idx = -1;
  md_role role = MD_ROLE_NONE;

  /* Exactly one OU may name the role: a certificate carrying two role OUs
   * is ambiguous and grants nothing. */
  while((idx = X509_NAME_get_index_by_NID(subject, NID_organizationalUnitName, idx)) >= 0) {
    ASN1_STRING *s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, idx));
    const char *v = (const char *)ASN1_STRING_get0_data(s);
    int len = ASN1_STRING_length(s);
    md_role r = MD_ROLE_NONE;

    if(len == 6 && memcmp(v, "plugin", 6) == 0)
      r = MD_ROLE_PLUGIN;
    else if(len == 6 && memcmp(v, "worker", 6) == 0)
      r = MD_ROLE_WORKER;
    else if(len == 8 && memcmp(v, "operator", 8) == 0)
      r = MD_ROLE_OPERATOR;
    if(r != MD_ROLE_NONE) {
      if(role != MD_ROLE_NONE && role != r)
        return MD_ROLE_NONE;
      role = r;
    }
  }
  return role;
}

int md_conn_handshake(md_conn *c)
{
  int ret;
  X509 *peer;

  if(c->failed)
    return c->failed;
  if(c->handshake_done)
    return MD_OK;
  ERR_clear_error();
  errno = 0;
  ret = SSL_do_handshake(c->ssl);
  if(ret != 1)
    return ssl_result(c, ret, "TLS handshake");
  peer = SSL_get1_peer_certificate(c->ssl);
  if(!peer)
    return fail(c, MD_ETLS, "%s", "peer presented no certificate");
  X509_NAME_get_text_by_NID(X509_get_subject_name(peer), NID_commonName, c->peer_name,
                            sizeof(c->peer_name));
  c->peer_role = role_of(peer);
  X509_free(peer);
  if(!(c->peer_role & c->ctx->allowed_peer_roles)) {
    snprintf(c->err, sizeof(c->err),
             "peer certificate '%s' has role '%s', which is not allowed here", c->peer_name,
             md_role_name(c->peer_role));
    c->failed = MD_EROLE;
    return MD_EROLE;
  }
  c->handshake_done = 1;
  c->want = POLLIN;
  return MD_OK;
}

int md_conn_peer_cred(const md_conn *c, pid_t *pid, uid_t *uid, gid_t *gid)
{
  struct ucred cred;
  socklen_t len = sizeof(cred);

  if(getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred))
    return MD_EINVAL;
  if(pid)
    *pid = cred.pid;
  if(uid)
    *uid = cred.uid;
  if(gid)
    *gid = cred.gid;
  return MD_OK;
}

int md_conn_flush(md_conn *c)
{
  if(c->failed)
    return c->failed;
  if(!c->handshake_done)
    return MD_EAGAIN;
  while(c->woff < c->wlen) {
    size_t left = c->wlen - c->woff;
    int ret;

    ERR_clear_error();
    errno = 0;
    ret = SSL_write(c->ssl, c->wbuf + c->woff, left > INT32_MAX ? INT32_MAX : (int)left);
    if(ret <= 0)
      return ssl_result(c, ret, "TLS write");
    c->woff += (size_t)ret;
  }
  c->woff = c->wlen = 0;
  if(c->wcap > KEEP_CAP) {
    free(c->wbuf);
    c->wbuf = NULL;
    c->wcap = 0;
  }
  c->want = POLLIN;
  return MD_OK;
}

int md_conn_send(md_conn *c, const Memdiag__V1__Frame *frame)
{
  uint8_t *enc;
  size_t len;
  int rc;

  if(c->failed)
    return c->failed;
  rc = md_frame_encode(frame, c->max_frame, &enc, &len);
  if(rc)
    return rc;
  if(c->woff > 0 && c->woff == c->wlen)
    c->woff = c->wlen = 0;
  if(c->wlen + len > c->wcap) {
    size_t cap = c->wcap ? c->wcap : 4096;
    uint8_t *nb;
    while(cap < c->wlen + len)
      cap *= 2;
    nb = realloc(c->wbuf, cap);
    if(!nb) {
      free(enc);
      return MD_ENOMEM;
    }
    c->wbuf = nb;
    c->wcap = cap;
  }
  memcpy(c->wbuf + c->wlen, enc, len);
  c->wlen += len;
  free(enc);
  return md_conn_flush(c);
}

/* Give back a receive buffer grown for one large frame once it is empty. */
static void shrink_rbuf(md_conn *c)
{
  uint8_t *nb;

  if(c->roff < c->rlen)
    return;
  c->roff = c->rlen = 0;
  if(c->rcap <= KEEP_CAP)
    return;
  nb = realloc(c->rbuf, READ_CHUNK * 2);
  if(nb) {
    c->rbuf = nb;
    c->rcap = READ_CHUNK * 2;
  }
}

static int decode_buffered(md_conn *c, Memdiag__V1__Frame **out)
{
  size_t used = 0;
  int rc;

  /* (no arithmetic on a buffer not yet allocated) */
  rc = md_frame_decode(c->rbuf ? c->rbuf + c->roff : c->rbuf, c->rlen - c->roff, c->max_frame, out,
                       &used);

  if(rc == MD_OK) {
    c->roff += used;
    shrink_rbuf(c);
  } else if(rc == MD_ETOOBIG) {
    return fail(c, rc, "%s", "peer sent a frame larger than the size limit");
  } else if(rc == MD_EPROTO) {
    return fail(c, rc, "%s", "peer sent bytes that are not a memdiag frame");
  }
  return rc;
}

/* Room for one more read at the end of rbuf: move the undecoded bytes to
 * the front first (once per read at most), grow only when that is not
 * enough. */
static int make_room(md_conn *c)
{
  size_t cap;
  uint8_t *nb;

  if(c->rcap - c->rlen >= READ_CHUNK)
    return MD_OK;
  if(c->roff > 0) {
    memmove(c->rbuf, c->rbuf + c->roff, c->rlen - c->roff);
    c->rlen -= c->roff;
    c->roff = 0;
    if(c->rcap - c->rlen >= READ_CHUNK)
      return MD_OK;
  }
  cap = c->rcap ? c->rcap * 2 : READ_CHUNK * 2;
  if(cap > c->max_frame + MD_FRAME_HEADER + READ_CHUNK)
    cap = c->max_frame + MD_FRAME_HEADER + READ_CHUNK;
  if(cap <= c->rcap)
    return fail(c, MD_ETOOBIG, "%s", "receive buffer limit reached");
  nb = realloc(c->rbuf, cap);
  if(!nb)
    return MD_ENOMEM;
  c->rbuf = nb;
  c->rcap = cap;
  return MD_OK;
}

int md_conn_recv(md_conn *c, Memdiag__V1__Frame **out)
{
  int rc;

  if(!out)
    return MD_EINVAL;
  *out = NULL;
  if(c->failed)
    return c->failed;
  if(!c->handshake_done) {
    rc = md_conn_handshake(c);
    if(rc)
      return rc;
  }
  for(;;) {
    int ret;

    rc = decode_buffered(c, out);
    if(rc != MD_EAGAIN)
      return rc;
    rc = make_room(c);
    if(rc)
      return rc;
    ERR_clear_error();
    errno = 0;
    ret = SSL_read(c->ssl, c->rbuf + c->rlen, (int)(c->rcap - c->rlen));
    if(ret <= 0) {
      rc = ssl_result(c, ret, "TLS read");
      if(rc == MD_ECLOSED && c->rlen > c->roff)
        snprintf(c->err, sizeof(c->err), "peer closed the connection mid-frame");
      return rc;
    }
    c->rlen += (size_t)ret;
  }
}

void md_conn_shutdown(md_conn *c)
{
  if(!c || !c->handshake_done || c->failed)
    return;
  ERR_clear_error();
  SSL_shutdown(c->ssl);
  ERR_clear_error();
}
