/* memdiag plugin: the request a plan step sends to its worker
 * (prefix mdp_capreq_). Pure: no I/O.
 *
 * Ownership: everything the request points to lives inside the
 * caller-owned mdp_capreq_t; it is valid as long as that is.
 */
#ifndef MDP_CAPTURE_REQUEST_H
#define MDP_CAPTURE_REQUEST_H

#include "capture.h"
#include "memdiag.pb-c.h"
#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mdp_capreq {
  Memdiag__V1__Request req;
  union {
    Memdiag__V1__MemoryDump md;
    Memdiag__V1__AllocationTraceStart ts;
    Memdiag__V1__AllocationTraceStop tp;
    Memdiag__V1__GarbageProfileStart gs;
    Memdiag__V1__GarbageProfileStop gp;
    Memdiag__V1__SchedulerDump sd;
    Memdiag__V1__ThreadDump td;
  } op;
  char path[MDP_CAPTURE_PATH_MAX + 80];
} mdp_capreq_t;

/* Fill out with the request for step s of a capture writing into dir.
 * Returns 0, or -EINVAL for a step that sends nothing (wait). */
int mdp_capreq_build(mdp_capreq_t *out, const mdp_step_t *s, const char *dir,
                     const mdp_capture_config_t *cfg);

#ifdef __cplusplus
}
#endif
#endif
