/* memdiag TLS channel (prefix md_): mutual TLS 1.3 over a stream socket.
 *
 * Both sides present a certificate signed by the configured CA. The role a
 * certificate grants is its subject's organizationalUnitName (OU): "plugin",
 * "worker" or "operator" (conf/memdiag-certs writes them). The library
 * refuses a peer whose certificate chain does not verify, that presents no
 * certificate, or whose role is not one of those the caller allows.
 *
 * Everything is non-blocking friendly: md_conn_* calls never block on a
 * non-blocking fd; they return MD_EAGAIN and md_conn_events() says which
 * poll events to wait for. The *_wait helpers poll internally for blocking
 * callers (the CLI, tests, the hook's I/O thread).
 *
 * Ownership: md_tls_ctx is owned by its creator, freed with md_tls_ctx_free()
 * after every md_conn made from it is freed. md_conn owns its fd from
 * md_conn_new() on (even on failure) and closes it in md_conn_free().
 */
#ifndef MD_TLS_H
#define MD_TLS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "md/wire.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  MD_ROLE_NONE = 0,
  MD_ROLE_PLUGIN = 1 << 0,
  MD_ROLE_WORKER = 1 << 1,
  MD_ROLE_OPERATOR = 1 << 2,
} md_role;

const char *md_role_name(md_role role);

typedef struct md_tls_ctx md_tls_ctx;

typedef struct {
  const char *certificate;     /* PEM file */
  const char *key;             /* PEM file */
  const char *ca;              /* PEM file: the only CA trusted for peers */
  int server;                  /* 1: accepts connections; 0: connects */
  unsigned allowed_peer_roles; /* bitmask of md_role the peer may hold */
} md_tls_options;

/* On failure returns MD_ECONFIG/MD_ENOMEM and writes a message to err. */
int md_tls_ctx_new(md_tls_ctx **out, const md_tls_options *opts, char *err, size_t errlen);
void md_tls_ctx_free(md_tls_ctx *ctx);

typedef struct md_conn md_conn;

/* Wrap a connected stream socket. Takes ownership of fd. The fd is made
 * non-blocking. */
int md_conn_new(md_conn **out, md_tls_ctx *ctx, int fd);
void md_conn_free(md_conn *c);

int md_conn_fd(const md_conn *c);
void md_conn_set_max_frame(md_conn *c, size_t max_len);

/* Drive the handshake. MD_OK once done and the peer's role is allowed;
 * MD_EAGAIN to be called again when md_conn_events() is ready; MD_ETLS or
 * MD_EROLE on refusal (md_conn_error() says why). */
int md_conn_handshake(md_conn *c);
int md_conn_handshake_done(const md_conn *c);

/* poll() events the connection is waiting for (POLLIN and/or POLLOUT). */
short md_conn_events(const md_conn *c);

md_role md_conn_peer_role(const md_conn *c);
/* Peer's certificate subject CN, or "" before the handshake. */
const char *md_conn_peer_name(const md_conn *c);
/* SO_PEERCRED of an AF_UNIX peer. MD_EINVAL on other sockets. */
int md_conn_peer_cred(const md_conn *c, pid_t *pid, uid_t *uid, gid_t *gid);

/* Queue a frame for sending and write as much as the socket takes.
 * MD_OK: fully written. MD_EAGAIN: queued; call md_conn_flush() when
 * writable. Errors are final. */
int md_conn_send(md_conn *c, const Memdiag__V1__Frame *frame);
int md_conn_flush(md_conn *c);
/* Bytes queued but not yet written. */
size_t md_conn_pending(const md_conn *c);
/* Bytes of memory the connection holds for what it received (its read
 * buffer, a partial frame included). */
size_t md_conn_buffered(const md_conn *c);

/* Read and decode the next frame. MD_OK with *out (caller frees with
 * md_frame_free); MD_EAGAIN when no whole frame is available yet;
 * MD_ECLOSED on orderly close; other errors are final. Call again after
 * MD_OK: more frames may already be buffered. */
int md_conn_recv(md_conn *c, Memdiag__V1__Frame **out);

/* Text of the last error on this connection (never NULL). */
const char *md_conn_error(const md_conn *c);

/* Blocking helpers: poll until done or timeout_ms (<0: forever). */
int md_conn_handshake_wait(md_conn *c, int timeout_ms);
int md_conn_send_wait(md_conn *c, const Memdiag__V1__Frame *frame, int timeout_ms);
int md_conn_recv_wait(md_conn *c, Memdiag__V1__Frame **out, int timeout_ms);

/* Send close_notify if possible (best effort, never blocks). */
void md_conn_shutdown(md_conn *c);

/* ---- sockets ---- */

/* Connect a non-blocking AF_UNIX stream socket to path. Returns the fd or a
 * negative md error; errno-level detail in err. */
int md_unix_connect(const char *path, char *err, size_t errlen);

/* Create, bind and listen on an AF_UNIX socket at path (removes a stale
 * socket file first; refuses to remove anything that is not a socket).
 * mode: permission bits for the socket file (0 keeps umask's). */
int md_unix_listen(const char *path, unsigned mode, int backlog, char *err, size_t errlen);

/* The same, and the socket file's group set to gid unless gid < 0. Root
 * runs this, so nothing is done by path after the bind: the directory is
 * opened once, the socket bound through that descriptor
 * (/proc/self/fd/N/name), and its mode and group set on the file found
 * there without following a link, after checking it is a socket of ours.
 * A socket swapped for anything else is refused (MD_EIO, err says so) and
 * nothing else is changed. */
int md_unix_listen_as(const char *path, unsigned mode, long gid, int backlog, char *err,
                      size_t errlen);

/* Convenience for blocking clients: connect + TLS handshake. */
int md_client_connect(md_conn **out, md_tls_ctx *ctx, const char *path, int timeout_ms, char *err,
                      size_t errlen);

/* Monotonic clock in milliseconds and microseconds. */
uint64_t md_now_ms(void);
uint64_t md_now_us(void);

#ifdef __cplusplus
}
#endif
#endif
