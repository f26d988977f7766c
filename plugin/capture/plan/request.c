/* The request each plan step sends: see request.h. */
#include "request.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int mdp_request_build(mdp_request_t *out, const mdp_step_t *s, const mdp_request_opts *o)
{
  Memdiag__V1__Request *req = &out->req;

  memdiag__v1__request__init(req);
  /* Files always go into the capture folder, under the plan's own names:
   * the worker is never asked to write anywhere a trigger chose. */
  snprintf(out->path, sizeof(out->path), "%s/%.*s", o->dir, (int)mdp_step_plain_len(s), s->file);
  switch(s->kind) {
  case MDP_STEP_DUMP:
    memdiag__v1__memory_dump__init(&out->op.md);
    out->op.md.path = out->path;
    out->op.md.has_shapes = 1;
    out->op.md.shapes = o->shapes;
    out->op.md.has_mode = 1;
    out->op.md.mode = (Memdiag__V1__DumpMode)o->dump_mode;
    req->op_case = MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP;
    req->memory_dump = &out->op.md;
    return 0;
  case MDP_STEP_TRACE_STOP:
    memdiag__v1__allocation_trace_stop__init(&out->op.tp);
    out->op.tp.path = out->path;
    out->op.tp.has_shapes = 1;
    out->op.tp.shapes = o->shapes;
    out->op.tp.has_mode = 1; /* the dump after tracing stops, as DumpMode says */
    out->op.tp.mode = (Memdiag__V1__DumpMode)o->dump_mode;
    req->op_case = MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_STOP;
    req->allocation_trace_stop = &out->op.tp;
    return 0;
  case MDP_STEP_TRACE_START:
    memdiag__v1__allocation_trace_start__init(&out->op.ts);
    req->op_case = MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_START;
    req->allocation_trace_start = &out->op.ts;
    return 0;
  case MDP_STEP_GC_START:
    memdiag__v1__garbage_profile_start__init(&out->op.gs);
    req->op_case = MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_START;
    req->garbage_profile_start = &out->op.gs;
    return 0;
  case MDP_STEP_GC_STOP:
    memdiag__v1__garbage_profile_stop__init(&out->op.gp);
    out->op.gp.path = out->path;
    req->op_case = MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_STOP;
    req->garbage_profile_stop = &out->op.gp;
    return 0;
  case MDP_STEP_SCHEDULER:
    memdiag__v1__scheduler_dump__init(&out->op.sd);
    out->op.sd.path = out->path;
    req->op_case = MEMDIAG__V1__REQUEST__OP_SCHEDULER_DUMP;
    req->scheduler_dump = &out->op.sd;
    return 0;
  case MDP_STEP_THREADS:
    memdiag__v1__thread_dump__init(&out->op.td);
    out->op.td.path = out->path;
    req->op_case = MEMDIAG__V1__REQUEST__OP_THREAD_DUMP;
    req->thread_dump = &out->op.td;
    return 0;
  case MDP_STEP_HEAP_PROFILE:
    memdiag__v1__heap_profile__init(&out->op.hp);
    out->op.hp.path = out->path;
    req->op_case = MEMDIAG__V1__REQUEST__OP_HEAP_PROFILE;
    req->heap_profile = &out->op.hp;
    return 0;
  case MDP_STEP_WAIT: break;
  }
  return -EINVAL;
}

int mdp_request_streams(int transfer, mdp_request_where where)
{
  switch(transfer) {
  case MDP_TRANSFER_STREAM: return 1;
  case MDP_TRANSFER_FILE: return 0;
  default: return where != MDP_WHERE_HOLDS_CAPTURES;
  }
}

int mdp_request_for_stream(mdp_request_t *cr)
{
  Memdiag__V1__Request *req = &cr->req;
  switch(req->op_case) {
  case MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP:
  case MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_STOP:
  case MEMDIAG__V1__REQUEST__OP_HEAP_PROFILE: return 1;
  case MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_STOP: req->garbage_profile_stop->path = NULL; break;
  case MEMDIAG__V1__REQUEST__OP_SCHEDULER_DUMP: req->scheduler_dump->path = NULL; break;
  case MEMDIAG__V1__REQUEST__OP_THREAD_DUMP: req->thread_dump->path = NULL; break;
  default: break;
  }
  return 0;
}
