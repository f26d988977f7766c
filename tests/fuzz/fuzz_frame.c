/* Fuzz target for frame decoding: any bytes either decode into a frame that
 * re-encodes, or are refused with an md_ error; never a crash and never an
 * allocation beyond the cap. Built as a libFuzzer target with -DMD_LIBFUZZER,
 * otherwise as a self-contained driver over mutated valid frames. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  size_t off = 0;

  /* Walk the input as a stream, as the connection code does. */
  while(off < size) {
    Memdiag__V1__Frame *f = NULL;
    size_t used = 0;
    int rc = md_frame_decode(data + off, size - off, 1u << 20, &f, &used);
    if(rc != MD_OK)
      break;
    {
      uint8_t *again = NULL;
      size_t len = 0;
      if(md_frame_encode(f, 1u << 22, &again, &len) != MD_OK)
        abort();
      free(again);
      md_frame_kind(f);
      if(f->body_case == MEMDIAG__V1__FRAME__BODY_REQUEST)
        md_request_op_name(f->request);
    }
    md_frame_free(f);
    off += used;
  }
  return 0;
}

#ifndef MD_LIBFUZZER
static size_t seed_frame(uint8_t *buf, size_t cap, unsigned i)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__Hello h = MEMDIAG__V1__HELLO__INIT;
  Memdiag__V1__Request r = MEMDIAG__V1__REQUEST__INIT;
  Memdiag__V1__MemoryDump md = MEMDIAG__V1__MEMORY_DUMP__INIT;
  char *caps[] = {"memory_dump", "thread_dump"};
  uint8_t *enc;
  size_t len;

  if(i % 2) {
    h.name = "worker";
    h.has_pid = 1;
    h.pid = 4242;
    h.n_capabilities = 2;
    h.capabilities = caps;
    f.body_case = MEMDIAG__V1__FRAME__BODY_HELLO;
    f.hello = &h;
  } else {
    md.path = "/var/tmp/x.json";
    r.op_case = MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP;
    r.memory_dump = &md;
    f.body_case = MEMDIAG__V1__FRAME__BODY_REQUEST;
    f.request = &r;
  }
  if(md_frame_encode(&f, MD_FRAME_MAX_DEFAULT, &enc, &len) || len > cap)
    abort();
  memcpy(buf, enc, len);
  free(enc);
  return len;
}

int main(int argc, char **argv)
{
  unsigned long runs = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
  unsigned seed = 1;
  uint8_t buf[1024];

  for(unsigned long i = 0; i < runs; i++) {
    size_t len = seed_frame(buf, sizeof(buf), (unsigned)i);
    unsigned flips = 1 + (unsigned)(rand_r(&seed) % 8);
    for(unsigned k = 0; k < flips; k++)
      buf[(size_t)rand_r(&seed) % len] ^= (uint8_t)(1u << (rand_r(&seed) % 8));
    if(rand_r(&seed) % 4 == 0)
      len = (size_t)rand_r(&seed) % (len + 1);
    LLVMFuzzerTestOneInput(buf, len);
  }
  printf("fuzz_frame: %lu mutated frames decoded or refused without a crash\n", runs);
  return 0;
}
#endif
