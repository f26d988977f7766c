/* Reconnect delays: exponential with jitter, so that the workers of a host
 * do not all knock on a restarted plugin in the same millisecond. */
#include <stdlib.h>

#include "internal.h"

/* A delay uniformly drawn from [base/2, base]. */
unsigned mdh_backoff_jitter(unsigned base_ms, unsigned *seed)
{
  unsigned half = base_ms / 2;
  if(half == 0)
    return base_ms;
  return half + (unsigned)rand_r(seed) % (half + 1);
}

unsigned mdh_backoff_next(unsigned base_ms, unsigned min_ms, unsigned max_ms)
{
  unsigned next = base_ms < min_ms ? min_ms : base_ms;
  next = next > max_ms / 2 ? max_ms : next * 2;
  return next;
}
