/* Fuzz target for frame decoding: any bytes either decode into a frame that
 * re-encodes, or are refused with an md_ error; never a crash and never an
 * allocation beyond the cap. The input is a stream of frames, as a
 * connection receives them (corpus/frame/: one or more encoded frames of
 * every kind). */
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
