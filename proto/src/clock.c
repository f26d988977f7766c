/* Monotonic clock helpers: timeouts and durations never follow wall-clock jumps. */
#include <time.h>

#include "md/tls.h"

uint64_t md_now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t md_now_ms(void) { return md_now_us() / 1000u; }
