/* Fuzz target: the plugin's side of a stored result (server/rstream.c and
 * capture/stream_store.c, reached through server/hello.c and the relay):
 * the harness asks its worker for a result the plugin stores, then the
 * input plays the worker (server_harness.h).
 *
 * Input: one byte of set-up, then records (op, length, payload):
 *   set-up  bits 0-1 what is asked (md_fuzz_ask), bit 2 zstd level 1
 *           (else stored as sent), bits 3-5 the stream's credit window,
 *           64 << n bytes;
 *   op % 8  0 DumpChunk of the payload          1 DumpEnd matching the
 *           2 DumpEnd decoded from the payload    chunks sent so far
 *           3 Reply decoded from the payload    4 Reply OK, data = payload
 *           5 any Frame decoded from the payload (StreamCredit, Goodbye..)
 *           6 the loop turns (the writer catches up, credit is granted)
 *           7 payload: the worker's own file (transfer); empty: the
 *             worker's connection closes.
 * A decoded message without a request_id is given the request's. The
 * harness then ends the request and checks what is left in the folder. */
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "server_harness.h"

#define MAX_RECORDS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ProtobufCMessage *decode(const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t n)
{
  return protobuf_c_message_unpack(d, NULL, n, p);
}

/* A decoded DumpEnd (end) or Reply as the frame's body, given the
 * request's id when it has none. */
static void as_frame(Memdiag__V1__Frame *f, ProtobufCMessage *m, int end, uint64_t id)
{
  protobuf_c_boolean *has;
  uint64_t *rid;

  if(end) {
    f->body_case = MEMDIAG__V1__FRAME__BODY_DUMP_END;
    f->dump_end = (Memdiag__V1__DumpEnd *)m;
    has = &f->dump_end->has_request_id;
    rid = &f->dump_end->request_id;
  } else {
    f->body_case = MEMDIAG__V1__FRAME__BODY_REPLY;
    f->reply = (Memdiag__V1__Reply *)m;
    has = &f->reply->has_request_id;
    rid = &f->reply->request_id;
  }
  if(!*has) {
    *has = 1;
    *rid = id;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  uint8_t *sent;
  size_t n_sent = 0, off = 1;
  uint64_t id;

  if(size < 1)
    return 0;
  sent = malloc(size);
  if(!sent)
    abort();
  id = md_fuzz_stream_begin((md_fuzz_ask)(data[0] & 3), 64u << ((data[0] >> 3) & 7),
                            (data[0] & 4) ? 1 : 0);
  for(unsigned r = 0; r < MAX_RECORDS && off + 2 <= size; r++) {
    uint8_t op = data[off] % 8;
    size_t len = data[off + 1];
    const uint8_t *p = data + off + 2;
    Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
    Memdiag__V1__DumpChunk chunk = MEMDIAG__V1__DUMP_CHUNK__INIT;
    Memdiag__V1__DumpEnd end = MEMDIAG__V1__DUMP_END__INIT;
    Memdiag__V1__Reply reply = MEMDIAG__V1__REPLY__INIT;
    uint8_t sha[SHA256_DIGEST_LENGTH];
    ProtobufCMessage *m = NULL;

    if(len > size - off - 2)
      len = size - off - 2;
    off += 2 + len;
    switch(op) {
    case 0:
      chunk.has_request_id = 1;
      chunk.request_id = id;
      chunk.has_data = 1;
      chunk.data.data = (uint8_t *)p;
      chunk.data.len = len;
      memcpy(sent + n_sent, p, len);
      n_sent += len;
      f.body_case = MEMDIAG__V1__FRAME__BODY_DUMP_CHUNK;
      f.dump_chunk = &chunk;
      break;
    case 1:
      SHA256(sent, n_sent, sha);
      end.has_request_id = end.has_size = end.has_sha256 = 1;
      end.request_id = id;
      end.size = n_sent;
      end.sha256.data = sha;
      end.sha256.len = sizeof sha;
      f.body_case = MEMDIAG__V1__FRAME__BODY_DUMP_END;
      f.dump_end = &end;
      break;
    case 2:
    case 3:
      m = decode(op == 2 ? &memdiag__v1__dump_end__descriptor : &memdiag__v1__reply__descriptor, p,
                 len);
      if(m)
        as_frame(&f, m, op == 2, id);
      break;
    case 4:
      reply.has_request_id = reply.has_status = reply.has_data = 1;
      reply.request_id = id;
      reply.status = MEMDIAG__V1__STATUS__STATUS_OK;
      reply.data.data = (uint8_t *)p;
      reply.data.len = len;
      f.body_case = MEMDIAG__V1__FRAME__BODY_REPLY;
      f.reply = &reply;
      break;
    case 5:
      m = decode(&memdiag__v1__frame__descriptor, p, len);
      if(m)
        f = *(Memdiag__V1__Frame *)m;
      break;
    case 6: md_fuzz_stream_turn(); break;
    case 7:
      if(len)
        md_fuzz_stream_worker_file(p, len);
      else
        md_fuzz_stream_worker_gone();
      break;
    }
    if(f.body_case != MEMDIAG__V1__FRAME__BODY__NOT_SET)
      md_fuzz_stream_frame(&f);
    if(m)
      protobuf_c_message_free_unpacked(m, NULL);
  }
  md_fuzz_stream_end();
  free(sent);
  return 0;
}
