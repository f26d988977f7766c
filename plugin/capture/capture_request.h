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

/* DumpTransfer: 1 when this capture's results go through the plugin
 * (streamed dumps, inline text written by the plugin), 0 when the worker
 * writes its files into the folder itself. auto streams when the worker
 * does not share collectd's mount namespace (same_mnt_ns 0 or unknown -1),
 * has no dump directory, or its dump directory does not hold capture_dir. */
int mdp_capreq_streams(int transfer, int same_mnt_ns, const char *dump_directory,
                       const char *capture_dir);

/* Make a request built by mdp_capreq_build ask for inline results (no
 * path) where the plugin stores them itself; dumps are turned into streams
 * by the relay. Returns 1 when the step's result is a heap dump (worth
 * compressing), else 0. */
int mdp_capreq_for_stream(mdp_capreq_t *cr);

#ifdef __cplusplus
}
#endif
#endif
