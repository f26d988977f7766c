/* memdiag wire library (prefix md_): errors, frame encoding and decoding.
 *
 * A frame on the socket is a 4-byte big-endian length followed by one
 * protobuf-encoded memdiag.v1.Frame. The length is checked against a cap
 * before anything is allocated, so a hostile peer cannot make us allocate
 * more than the cap.
 *
 * Ownership: every Memdiag__V1__Frame returned by this library is owned by
 * the caller and released with md_frame_free(). Buffers returned by
 * md_frame_encode() are owned by the caller and released with free().
 */
#ifndef MD_WIRE_H
#define MD_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "memdiag.pb-c.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The wire library's outcomes: 0 is success; the others are negative and
 * start below -MD_ERR_BASE, so none of them is ever a negated errno (Linux's
 * errno values are below 200): a caller handed either can tell which it
 * holds, and md_strerror names both. */
#define MD_ERR_BASE 1000
typedef enum md_err {
  MD_OK = 0,
  MD_EAGAIN = -(MD_ERR_BASE + 1),  /* not done yet: wait for md_conn_events() and call again */
  MD_EIO = -(MD_ERR_BASE + 2),     /* socket error; errno-level detail in the message */
  MD_ETLS = -(MD_ERR_BASE + 3),    /* TLS failure (handshake, certificate, record) */
  MD_EPROTO = -(MD_ERR_BASE + 4),  /* the bytes are not a valid frame */
  MD_ETOOBIG = -(MD_ERR_BASE + 5), /* a frame longer than the cap */
  MD_ECLOSED = -(MD_ERR_BASE + 6), /* the peer closed the connection */
  MD_ENOMEM = -(MD_ERR_BASE + 7),
  MD_EINVAL = -(MD_ERR_BASE + 8), /* bad argument */
  MD_ETIMEDOUT = -(MD_ERR_BASE + 9),
  MD_EROLE = -(MD_ERR_BASE + 10),   /* the peer's certificate does not grant the needed role */
  MD_ECONFIG = -(MD_ERR_BASE + 11), /* certificate, key or CA file could not be loaded */
} md_err;

/* Static string for an md_err code or a negated errno (-ENOENT); never
 * NULL. */
const char *md_strerror(int err);

#define MD_FRAME_HEADER      4u
#define MD_FRAME_MAX_DEFAULT (16u * 1024u * 1024u)

/* Encode `frame` with its length prefix into a new buffer (*out, *out_len).
 * Returns MD_ETOOBIG if the encoded frame exceeds max_len. */
int md_frame_encode(const Memdiag__V1__Frame *frame, size_t max_len, uint8_t **out,
                    size_t *out_len);

/* Try to decode one frame from the start of buf[0..len).
 * Returns MD_OK and sets *out and *consumed; MD_EAGAIN if buf holds less
 * than a whole frame (nothing allocated); MD_ETOOBIG if the announced
 * length exceeds max_len; MD_EPROTO if the payload does not parse or the
 * frame carries no body. */
int md_frame_decode(const uint8_t *buf, size_t len, size_t max_len, Memdiag__V1__Frame **out,
                    size_t *consumed);

void md_frame_free(Memdiag__V1__Frame *frame);

/* Short name of the frame body ("hello", "request", ...) for logs. */
const char *md_frame_kind(const Memdiag__V1__Frame *frame);

/* Name of a Request's operation ("memory_dump", ...) or "none". */
const char *md_request_op_name(const Memdiag__V1__Request *req);

/* Name of a Status as used in the CLI and logs ("ok", "refused", ...). */
const char *md_status_name(Memdiag__V1__Status status);

#ifdef __cplusplus
}
#endif
#endif
