/* memdiag plugin: the request a plan step sends to its worker
 * (prefix mdp_request_). Pure: no I/O.
 *
 * Ownership: everything the request points to lives inside the
 * caller-owned mdp_request_t; it is valid as long as that is.
 */
#ifndef MDP_REQUEST_H
#define MDP_REQUEST_H

#include <stdbool.h>

#include "memdiag.pb-c.h"
#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A capture folder's path and a step's file name in it. */
#define MDP_REQUEST_PATH_MAX (4096 + 80)

/* What a step's request says besides the step: the capture's folder and
 * the capture keys that shape a dump. */
typedef struct mdp_request_opts {
  const char *dir; /* the capture folder */
  bool shapes;     /* DumpShapes */
  int dump_mode;   /* DumpMode: MEMDIAG__V1__DUMP_MODE__* */
} mdp_request_opts;

typedef struct mdp_request {
  Memdiag__V1__Request req;
  union {
    Memdiag__V1__MemoryDump md;
    Memdiag__V1__AllocationTraceStart ts;
    Memdiag__V1__AllocationTraceStop tp;
    Memdiag__V1__GarbageProfileStart gs;
    Memdiag__V1__GarbageProfileStop gp;
    Memdiag__V1__SchedulerDump sd;
    Memdiag__V1__ThreadDump td;
    Memdiag__V1__HeapProfile hp;
  } op;
  char path[MDP_REQUEST_PATH_MAX];
} mdp_request_t;

/* Fill out with the request for step s of a capture writing into o->dir.
 * Returns 0, or -EINVAL for a step that sends nothing (wait). */
int mdp_request_build(mdp_request_t *out, const mdp_step_t *s, const mdp_request_opts *o);

/* How a dump reaches the capture folder (DumpTransfer). */
enum {
  MDP_TRANSFER_AUTO = 0, /* stream unless the worker can write into the folder itself */
  MDP_TRANSFER_STREAM,   /* over the worker's connection, stored by the plugin */
  MDP_TRANSFER_FILE,     /* the worker writes the file (same host, same mounts) */
};

/* Where the worker may write, as the caller found it (the plan does no
 * I/O): whether it shares collectd's mount namespace and whether its dump
 * directory holds CaptureDirectory. */
typedef enum {
  MDP_WHERE_APART = 1,      /* another mount namespace, or not known */
  MDP_WHERE_NO_DIR,         /* same namespace, no dump directory, or one outside CaptureDirectory */
  MDP_WHERE_HOLDS_CAPTURES, /* same namespace, its dump directory holds CaptureDirectory */
} mdp_request_where;

/* DumpTransfer: 1 when this capture's results go through the plugin
 * (streamed dumps, inline text written by the plugin), 0 when the worker
 * writes its files into the folder itself. auto streams unless the worker
 * can write into the capture folder (MDP_WHERE_HOLDS_CAPTURES). */
int mdp_request_streams(int transfer, mdp_request_where where);

/* Make a request built by mdp_request_build ask for inline results (no
 * path) where the plugin stores them itself; dumps are turned into streams
 * by the relay. Returns 1 when the step's result is a heap dump (worth
 * compressing), else 0. */
int mdp_request_for_stream(mdp_request_t *cr);

#ifdef __cplusplus
}
#endif
#endif
