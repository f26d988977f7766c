/* The scheduler tests' fixture: the scheduler under test (freed after each
 * test by teardown) and the reason of its last refusal. Each test file has
 * its own copy. */
#ifndef MDT_SCHED_FIXTURE_H
#define MDT_SCHED_FIXTURE_H

#include "capture/plan/sched.h"

static mdp_sched_t s;
static char why[256];

static int teardown(void **state)
{
  (void)state;
  mdp_sched_free(&s);
  return 0;
}

#endif
