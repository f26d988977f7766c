/* Length-prefixed framing of memdiag.v1.Frame.
 *
 * The announced length is checked against the cap before any allocation,
 * and a frame without a body is rejected: an empty protobuf parses, but it
 * is never something a peer meant to send. */
#include <stdlib.h>
#include <string.h>

#include "md/wire.h"

int md_frame_encode(const Memdiag__V1__Frame *frame, size_t max_len, uint8_t **out, size_t *out_len)
{
  size_t body;
  uint8_t *buf;

  if(!frame || !out || !out_len)
    return MD_EINVAL;
  if(frame->body_case == MEMDIAG__V1__FRAME__BODY__NOT_SET)
    return MD_EINVAL;
  body = memdiag__v1__frame__get_packed_size(frame);
  if(body > max_len || body > UINT32_MAX)
    return MD_ETOOBIG;
  buf = malloc(MD_FRAME_HEADER + body);
  if(!buf)
    return MD_ENOMEM;
  buf[0] = (uint8_t)(body >> 24);
  buf[1] = (uint8_t)(body >> 16);
  buf[2] = (uint8_t)(body >> 8);
  buf[3] = (uint8_t)body;
  memdiag__v1__frame__pack(frame, buf + MD_FRAME_HEADER);
  *out = buf;
  *out_len = MD_FRAME_HEADER + body;
  return MD_OK;
}

int md_frame_decode(const uint8_t *buf, size_t len, size_t max_len, Memdiag__V1__Frame **out,
                    size_t *consumed)
{
  size_t body;
  Memdiag__V1__Frame *f;

  if(!out || !consumed || (!buf && len))
    return MD_EINVAL;
  if(len < MD_FRAME_HEADER)
    return MD_EAGAIN;
  body = ((size_t)buf[0] << 24) | ((size_t)buf[1] << 16) | ((size_t)buf[2] << 8) | (size_t)buf[3];
  if(body > max_len)
    return MD_ETOOBIG;
  if(body == 0)
    return MD_EPROTO;
  if(len - MD_FRAME_HEADER < body)
    return MD_EAGAIN;
  f = memdiag__v1__frame__unpack(NULL, body, buf + MD_FRAME_HEADER);
  if(!f)
    return MD_EPROTO;
  if(f->body_case == MEMDIAG__V1__FRAME__BODY__NOT_SET) {
    memdiag__v1__frame__free_unpacked(f, NULL);
    return MD_EPROTO;
  }
  *out = f;
  *consumed = MD_FRAME_HEADER + body;
  return MD_OK;
}

void md_frame_free(Memdiag__V1__Frame *frame)
{
  if(frame)
    memdiag__v1__frame__free_unpacked(frame, NULL);
}
