/* The allocation sampler's state (sampler_internal.h), in a file of its
 * own so that sampler.c and sampler_profile.c both use it and neither uses
 * the other's. */
#include "sampler_internal.h"

mdh_sampler_state mdh_sampler_g;
