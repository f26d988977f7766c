/* Human names for protocol enums, shared by logs, the CLI and tests. */
#include "md/wire.h"

const char *md_frame_kind(const Memdiag__V1__Frame *frame)
{
  if(!frame)
    return "none";
  switch(frame->body_case) {
  case MEMDIAG__V1__FRAME__BODY_HELLO: return "hello";
  case MEMDIAG__V1__FRAME__BODY_WELCOME: return "welcome";
  case MEMDIAG__V1__FRAME__BODY_HEARTBEAT: return "heartbeat";
  case MEMDIAG__V1__FRAME__BODY_REQUEST: return "request";
  case MEMDIAG__V1__FRAME__BODY_REPLY: return "reply";
  case MEMDIAG__V1__FRAME__BODY_CONTROL: return "control";
  case MEMDIAG__V1__FRAME__BODY_CONTROL_REPLY: return "control_reply";
  case MEMDIAG__V1__FRAME__BODY_GOODBYE: return "goodbye";
  case MEMDIAG__V1__FRAME__BODY_DUMP_CHUNK: return "dump_chunk";
  case MEMDIAG__V1__FRAME__BODY_DUMP_END: return "dump_end";
  case MEMDIAG__V1__FRAME__BODY_STREAM_CREDIT: return "stream_credit";
  default: return "unknown";
  }
}

const char *md_request_op_name(const Memdiag__V1__Request *req)
{
  if(!req)
    return "none";
  switch(req->op_case) {
  case MEMDIAG__V1__REQUEST__OP_PING: return "ping";
  case MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP: return "memory_dump";
  case MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_START: return "allocation_trace_start";
  case MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_STOP: return "allocation_trace_stop";
  case MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_START: return "garbage_profile_start";
  case MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_STOP: return "garbage_profile_stop";
  case MEMDIAG__V1__REQUEST__OP_SCHEDULER_DUMP: return "scheduler_dump";
  case MEMDIAG__V1__REQUEST__OP_THREAD_DUMP: return "thread_dump";
  case MEMDIAG__V1__REQUEST__OP_HEAP_PROFILE: return "heap_profile";
  default: return "none";
  }
}

const char *md_status_name(Memdiag__V1__Status status)
{
  switch(status) {
  case MEMDIAG__V1__STATUS__STATUS_OK: return "ok";
  case MEMDIAG__V1__STATUS__STATUS_ERROR: return "error";
  case MEMDIAG__V1__STATUS__STATUS_REFUSED: return "refused";
  case MEMDIAG__V1__STATUS__STATUS_TIMEOUT: return "timeout";
  case MEMDIAG__V1__STATUS__STATUS_UNKNOWN_CONNECTION: return "unknown_connection";
  case MEMDIAG__V1__STATUS__STATUS_UNSUPPORTED: return "unsupported";
  case MEMDIAG__V1__STATUS__STATUS_FORBIDDEN: return "forbidden";
  case MEMDIAG__V1__STATUS__STATUS_BAD_REQUEST: return "bad_request";
  default: return "unknown";
  }
}
