/* Conversion between wire messages and the runtime-neutral mdh_request and
 * mdh_reply_t, so that runtimes never see protobuf-c types. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* A reply frame and its Reply in one allocation; strings and data are
 * separate copies owned by it. */
typedef struct {
  Memdiag__V1__Frame frame;
  Memdiag__V1__Reply reply;
} reply_frame;

static const char *const op_names[] = {
    [MDH_OP_PING] = "ping",
    [MDH_OP_MEMORY_DUMP] = "memory_dump",
    [MDH_OP_ALLOCATION_TRACE_START] = "allocation_trace_start",
    [MDH_OP_ALLOCATION_TRACE_STOP] = "allocation_trace_stop",
    [MDH_OP_GARBAGE_PROFILE_START] = "garbage_profile_start",
    [MDH_OP_GARBAGE_PROFILE_STOP] = "garbage_profile_stop",
    [MDH_OP_SCHEDULER_DUMP] = "scheduler_dump",
    [MDH_OP_THREAD_DUMP] = "thread_dump",
    [MDH_OP_CONNECTION_CLOSED] = "connection_closed",
    [MDH_OP_HEAP_PROFILE] = "heap_profile",
    [MDH_OP_SETTINGS] = "settings",
};

const char *mdh_op_name(mdh_op op)
{
  if((unsigned)op < sizeof op_names / sizeof op_names[0] && op_names[op])
    return op_names[op];
  return "none";
}

const char *mdh_mode_name(mdh_mode mode)
{
  switch(mode) {
  case MDH_MODE_INLINE: return "inline";
  case MDH_MODE_FORK: return "fork";
  case MDH_MODE_AUTO: return "auto";
  }
  return "inline";
}

void mdh_request_clear(mdh_request *req)
{
  if(!req)
    return;
  free(req->path);
  free(req->payload);
  memset(req, 0, sizeof *req);
}

static mdh_mode mode_from_wire(Memdiag__V1__DumpMode m)
{
  switch(m) {
  case MEMDIAG__V1__DUMP_MODE__DUMP_MODE_FORK: return MDH_MODE_FORK;
  case MEMDIAG__V1__DUMP_MODE__DUMP_MODE_AUTO: return MDH_MODE_AUTO;
  default: return MDH_MODE_INLINE;
  }
}

static int copy_path(mdh_request *out, const char *path)
{
  if(!path)
    return MDH_OK;
  out->path = strdup(path);
  return out->path ? MDH_OK : MDH_ENOMEM;
}

int mdh_request_from_wire(mdh_request *out, const Memdiag__V1__Request *in, uint64_t connection_id)
{
  int rc = MDH_OK;

  memset(out, 0, sizeof *out);
  out->connection_id = connection_id;
  out->id = in->request_id;
  out->timeout_ms = in->has_timeout_ms ? in->timeout_ms : 0;
  out->shapes = 1;

  switch(in->op_case) {
  case MEMDIAG__V1__REQUEST__OP_PING:
    out->op = MDH_OP_PING;
    if(in->ping->has_payload && in->ping->payload.len) {
      out->payload = malloc(in->ping->payload.len);
      if(!out->payload) {
        rc = MDH_ENOMEM;
        goto out;
      }
      memcpy(out->payload, in->ping->payload.data, in->ping->payload.len);
      out->payload_len = in->ping->payload.len;
    }
    break;
  case MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP:
    out->op = MDH_OP_MEMORY_DUMP;
    out->shapes = in->memory_dump->shapes ? 1 : 0;
    out->mode = mode_from_wire(in->memory_dump->mode);
    out->stream = in->memory_dump->has_stream && in->memory_dump->stream;
    out->stream_window = in->memory_dump->has_stream_window ? in->memory_dump->stream_window : 0;
    rc = copy_path(out, in->memory_dump->path);
    break;
  case MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_START:
    out->op = MDH_OP_ALLOCATION_TRACE_START;
    out->keep = in->allocation_trace_start->has_keep && in->allocation_trace_start->keep;
    break;
  case MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_STOP:
    out->op = MDH_OP_ALLOCATION_TRACE_STOP;
    out->shapes = in->allocation_trace_stop->shapes ? 1 : 0;
    out->mode = mode_from_wire(in->allocation_trace_stop->mode);
    out->stream = in->allocation_trace_stop->has_stream && in->allocation_trace_stop->stream;
    out->stream_window =
        in->allocation_trace_stop->has_stream_window ? in->allocation_trace_stop->stream_window : 0;
    rc = copy_path(out, in->allocation_trace_stop->path);
    break;
  case MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_START:
    out->op = MDH_OP_GARBAGE_PROFILE_START;
    out->keep = in->garbage_profile_start->has_keep && in->garbage_profile_start->keep;
    break;
  case MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_STOP:
    out->op = MDH_OP_GARBAGE_PROFILE_STOP;
    rc = copy_path(out, in->garbage_profile_stop->path);
    break;
  case MEMDIAG__V1__REQUEST__OP_SCHEDULER_DUMP:
    out->op = MDH_OP_SCHEDULER_DUMP;
    rc = copy_path(out, in->scheduler_dump->path);
    break;
  case MEMDIAG__V1__REQUEST__OP_THREAD_DUMP:
    out->op = MDH_OP_THREAD_DUMP;
    rc = copy_path(out, in->thread_dump->path);
    break;
  case MEMDIAG__V1__REQUEST__OP_HEAP_PROFILE:
    out->op = MDH_OP_HEAP_PROFILE;
    out->stream = in->heap_profile->has_stream && in->heap_profile->stream;
    out->stream_window = in->heap_profile->has_stream_window ? in->heap_profile->stream_window : 0;
    rc = copy_path(out, in->heap_profile->path);
    break;
  default: rc = MDH_EINVAL; break;
  }
out:
  if(rc)
    mdh_request_clear(out);
  return rc;
}

static Memdiag__V1__Status status_to_wire(mdh_status s)
{
  switch(s) {
  case MDH_STATUS_OK: return MEMDIAG__V1__STATUS__STATUS_OK;
  case MDH_STATUS_REFUSED: return MEMDIAG__V1__STATUS__STATUS_REFUSED;
  case MDH_STATUS_TIMEOUT: return MEMDIAG__V1__STATUS__STATUS_TIMEOUT;
  case MDH_STATUS_UNSUPPORTED: return MEMDIAG__V1__STATUS__STATUS_UNSUPPORTED;
  case MDH_STATUS_BAD_REQUEST: return MEMDIAG__V1__STATUS__STATUS_BAD_REQUEST;
  case MDH_STATUS_ERROR: break;
  }
  return MEMDIAG__V1__STATUS__STATUS_ERROR;
}

static reply_frame *reply_frame_alloc(uint64_t request_id, mdh_status status)
{
  reply_frame *rf = calloc(1, sizeof *rf);
  if(!rf)
    return NULL;
  memdiag__v1__frame__init(&rf->frame);
  memdiag__v1__reply__init(&rf->reply);
  rf->frame.body_case = MEMDIAG__V1__FRAME__BODY_REPLY;
  rf->frame.reply = &rf->reply;
  rf->reply.has_request_id = 1;
  rf->reply.request_id = request_id;
  rf->reply.has_status = 1;
  rf->reply.status = status_to_wire(status);
  return rf;
}

static int dup_opt(char **dst, const char *src)
{
  if(!src)
    return MDH_OK;
  *dst = strdup(src);
  return *dst ? MDH_OK : MDH_ENOMEM;
}

void mdh_reply_frame_free(Memdiag__V1__Frame *frame)
{
  reply_frame *rf = (reply_frame *)frame; /* frame is the first member */
  if(!rf)
    return;
  free(rf->reply.error);
  free(rf->reply.path);
  free(rf->reply.note);
  free(rf->reply.mode);
  free(rf->reply.data.data);
  free(rf);
}

Memdiag__V1__Frame *mdh_reply_frame_error(uint64_t request_id, mdh_status status, const char *error)
{
  reply_frame *rf = reply_frame_alloc(request_id, status);
  if(!rf)
    return NULL;
  if(dup_opt(&rf->reply.error, error)) {
    mdh_reply_frame_free(&rf->frame);
    return NULL;
  }
  return &rf->frame;
}

Memdiag__V1__Frame *mdh_reply_frame_new(const mdh_reply_t *r)
{
  int rc;
  reply_frame *rf = reply_frame_alloc(r->request_id, r->status);
  if(!rf)
    return NULL;
  rc = dup_opt(&rf->reply.error, r->error);
  if(rc)
    goto out;
  rc = dup_opt(&rf->reply.path, r->path);
  if(rc)
    goto out;
  rc = dup_opt(&rf->reply.note, r->note);
  if(rc)
    goto out;
  rc = dup_opt(&rf->reply.mode, r->mode);
  if(rc)
    goto out;
  if(r->data) {
    rf->reply.has_data = 1;
    rf->reply.data.len = r->data_len;
    /* malloc(0) may return NULL; keep a valid pointer for empty data */
    rf->reply.data.data = malloc(r->data_len ? r->data_len : 1);
    if(!rf->reply.data.data) {
      rc = MDH_ENOMEM;
      goto out;
    }
    memcpy(rf->reply.data.data, r->data, r->data_len);
  }
  rf->reply.has_bytes = r->has_bytes ? 1 : 0;
  rf->reply.bytes = r->bytes;
  rf->reply.has_duration_us = r->has_duration_us ? 1 : 0;
  rf->reply.duration_us = r->duration_us;
  rf->reply.has_pause_us = r->has_pause_us ? 1 : 0;
  rf->reply.pause_us = r->pause_us;
out:
  if(rc) {
    mdh_reply_frame_free(&rf->frame);
    return NULL;
  }
  return &rf->frame;
}
