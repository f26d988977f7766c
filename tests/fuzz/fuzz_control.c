/* Fuzz target: the plugin's handling of a control frame (server_harness.h). */
#include "server_harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  return md_fuzz_server_run(MD_FUZZ_CONTROL, data, size);
}
