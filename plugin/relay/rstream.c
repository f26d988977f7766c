/* memdiag plugin: results stored on the plugin's side; see rstream.h. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <unistd.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/sha.h>

#include "md/text.h"
#include "rstream.h"

#define DEFAULT_WINDOW (4u << 20)
/* Credit that lets a worker send the rest of a stream the plugin has given
 * up on: its chunks are dropped as they arrive (no rstream matches them). */
#define DRAIN_CREDIT   ((uint64_t)1 << 62)

/* Where the stored file stands: one state, changed by to() only.
 *   OPEN -> KEPT      the worker's DumpEnd came, whole and without error
 *   OPEN -> ENDING    abort (a failure, a timeout), or the inline data or
 *                     compression handed to the store at the Reply
 *   KEPT -> ENDING    finish (the Reply says OK) or abort (it does not)
 *   OPEN -> STORED    nothing was stored (the Reply failed, nothing to store)
 *   ENDING -> STORED  the store's done event ran
 *   OPEN, KEPT -> STORED  the store ended the stream itself (mdp_store_stop)
 * Once ENDING or STORED no byte, end or Reply touches the store's stream. */
typedef enum {
  RS_OPEN,   /* taking the result: streamed bytes go to the store; inline
              * data and compression wait for the Reply */
  RS_KEPT,   /* every byte is in: kept until the Reply says OK */
  RS_ENDING, /* finish, abort or compression given to the store */
  RS_STORED, /* the store is done with it, or nothing was stored */
} rs_state;

struct mdp_rstream {
  struct mdp_rstream *next;
  uint64_t connection_id, request_id;
  int streaming;           /* the worker sends the bytes (else: inline data) */
  char compress_from[128]; /* the worker's own file to compress, "" if none */
  uid_t compress_owner;
  int dir_fd; /* ours (dup), -1 once the store has it */
  char dir_path[512];
  char name[128];
  int level;
  mdp_store_limits limits;
  mdp_store_stream *st; /* NULL until opened */
  rs_state state;
  /* The worker's DumpEnd (size, SHA-256) in KEPT: the store is told to
   * finish only once the Reply says OK too, so that a failed request leaves
   * no file. */
  uint64_t end_size;
  uint8_t end_sha[32];
  size_t end_sha_len;
  /* Apart from the state, two facts of their own: the worker's side of the
   * stream is over (a DumpEnd came, with or without an error: in any state),
   * and the request's outcome has come (mdp_rstream_settle). */
  int end_frame;
  int settled;
  mdp_store_outcome outcome;
  uint64_t raw_bytes, stored_bytes;
  char store_error[256];
  uint64_t granted, received; /* bytes of credit given, bytes of chunks taken */
  int cancelled;              /* the worker was told to stop (the store failed) */
  Memdiag__V1__Reply *reply;  /* deep copy, owned */
  mdp_rstream_reply_fn done;
  void *arg;
};

static mdp_loop *loop;
static mdp_rstream_send_fn send_frame;
static mdp_store *store;
static uint32_t window = DEFAULT_WINDOW;
static mdp_rstream *streams;
static unsigned refused; /* changes of state to() refused */
static mdp_rstream_cancel_fn on_cancel;
static mdp_rstream_dropped_t dropped;

/* Streams freed before the worker sent their DumpEnd (a timeout, a failed
 * store): the rest of their bytes still comes, drained and dropped without
 * a word. The last few are enough (a worker has one stream at a time);
 * one that fell out is merely reported as unexpected. */
#define ENDED_MAX 32
static struct {
  uint64_t connection_id, request_id;
} ended[ENDED_MAX];
static unsigned ended_next;

static int was_stream(uint64_t connection_id, uint64_t request_id)
{
  for(unsigned i = 0; i < ENDED_MAX; i++)
    if(ended[i].connection_id == connection_id && ended[i].request_id == request_id)
      return 1;
  return 0;
}

void mdp_rstream_init(mdp_loop *l, mdp_rstream_send_fn send, mdp_store *s, uint32_t w)
{
  loop = l;
  send_frame = send;
  store = s;
  window = w ? w : DEFAULT_WINDOW;
}

/* The one place a stream's state changes: a change the table in the
 * comment above does not list is refused (and counted). Returns whether it
 * was made. */
static bool to(mdp_rstream *rs, rs_state next)
{
  static const unsigned legal[] = {
      [RS_OPEN] = 1u << RS_KEPT | 1u << RS_ENDING | 1u << RS_STORED,
      [RS_KEPT] = 1u << RS_ENDING | 1u << RS_STORED,
      [RS_ENDING] = 1u << RS_STORED,
      [RS_STORED] = 0,
  };

  if(!(legal[rs->state] & 1u << next)) {
    refused++;
    return false;
  }
  rs->state = next;
  return true;
}

unsigned mdp_rstream_refused(void) { return refused; }

void mdp_rstream_on_cancel(mdp_rstream_cancel_fn fn) { on_cancel = fn; }

mdp_rstream_dropped_t mdp_rstream_dropped(void) { return dropped; }

unsigned mdp_rstream_live(void)
{
  unsigned n = 0;
  for(mdp_rstream *rs = streams; rs; rs = rs->next)
    n++;
  return n;
}

static mdp_rstream *find(uint64_t connection_id, uint64_t request_id)
{
  for(mdp_rstream *rs = streams; rs; rs = rs->next)
    if(rs->connection_id == connection_id && rs->request_id == request_id)
      return rs;
  return NULL;
}

static void unlink_rs(mdp_rstream *rs)
{
  for(mdp_rstream **p = &streams; *p; p = &(*p)->next)
    if(*p == rs) {
      *p = rs->next;
      return;
    }
}

static void free_rs(mdp_rstream *rs)
{
  unlink_rs(rs);
  if(rs->streaming && !rs->end_frame) {
    ended[ended_next].connection_id = rs->connection_id;
    ended[ended_next].request_id = rs->request_id;
    ended_next = (ended_next + 1) % ENDED_MAX;
  }
  if(rs->dir_fd >= 0)
    close(rs->dir_fd);
  if(rs->reply)
    memdiag__v1__reply__free_unpacked(rs->reply, NULL);
  free(rs);
}

/* ---- the store's events, moved onto the loop ---- */

typedef struct {
  mdp_rstream *rs;
  size_t bytes;
  int done, failed;
  mdp_store_result r;
  char name[128], error[256];
} store_event;

static void try_complete(mdp_rstream *rs);

/* More credit, or with `cancel` none: the worker is to stop the stream. */
static void grant(mdp_rstream *rs, uint64_t bytes, const char *cancel)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__StreamCredit c = MEMDIAG__V1__STREAM_CREDIT__INIT;

  c.has_request_id = 1;
  c.request_id = rs->request_id;
  c.has_bytes = !cancel;
  c.bytes = bytes;
  c.cancel = (char *)cancel;
  f.body_case = MEMDIAG__V1__FRAME__BODY_STREAM_CREDIT;
  f.stream_credit = &c;
  if(send_frame(rs->connection_id, &f) == 0)
    rs->granted += bytes;
}

static void end_store(mdp_rstream *rs, const char *why);

/* The worker is told to stop (no more credit, the reason) and the store
 * drops what it has; the relay is told too, so that a worker that keeps
 * streaming does not keep the request's caller waiting. */
static void cancel_stream(mdp_rstream *rs, const char *why)
{
  rs->cancelled = 1;
  grant(rs, 0, why);
  end_store(rs, why);
  if(on_cancel)
    on_cancel((mdp_rstream_key){.connection_id = rs->connection_id, .request_id = rs->request_id});
}

static void store_event_run(void *arg)
{
  store_event *e = arg;
  mdp_rstream *rs = e->rs;

  if(e->failed) {
    /* The store drops the rest: a worker still sending is told to stop
     * rather than send the whole dump for nothing (an older one ignores
     * it and its bytes are dropped here). */
    if(rs->streaming && rs->state == RS_OPEN && !rs->end_frame) {
      cancel_stream(rs, e->error);
    }
  } else if(!e->done) {
    if(rs->streaming && rs->state == RS_OPEN)
      grant(rs, e->bytes, NULL);
  } else {
    to(rs, RS_STORED);
    rs->outcome = e->r.outcome;
    rs->raw_bytes = e->r.raw_bytes;
    rs->stored_bytes = e->r.stored_bytes;
    snprintf(rs->store_error, sizeof rs->store_error, "%s", e->error);
    try_complete(rs);
  }
  free(e);
}

/* Writer thread: hand over to the loop. The rstream outlives every event:
 * it is freed only after the done event has run there. */
static void post_event(store_event *e)
{
  if(!e)
    return; /* out of memory: a lost credit stalls the stream until its timeout */
  if(mdp_loop_post(loop, store_event_run, e) != 0) {
    /* the loop is gone (plugin stopping after the relay ended): nobody
     * waits for this stream any more */
    free(e);
  }
}

static void on_consumed(void *arg, size_t bytes)
{
  store_event *e = calloc(1, sizeof *e);
  if(e) {
    e->rs = arg;
    e->bytes = bytes;
  }
  post_event(e);
}

static void on_done(void *arg, const mdp_store_result *r)
{
  store_event *e = calloc(1, sizeof *e);
  if(!e) {
    /* the done event must arrive: retry until memory is back */
    while(!(e = calloc(1, sizeof *e)))
      usleep(1000);
  }
  e->rs = arg;
  e->done = 1;
  e->r = *r;
  snprintf(e->error, sizeof e->error, "%s", r->error ? r->error : "");
  post_event(e);
}

static void on_failed(void *arg, const char *why)
{
  store_event *e = calloc(1, sizeof *e);
  if(e) {
    e->rs = arg;
    e->failed = 1;
    snprintf(e->error, sizeof e->error, "%s", why);
  }
  post_event(e); /* out of memory: the worker sends the rest, dropped */
}

static const mdp_store_events events = {
    .consumed = on_consumed, .done = on_done, .failed = on_failed};

static int open_store(mdp_rstream *rs, char *err, size_t errlen)
{
  int rc;
  if(!store) {
    md_seterr(err, errlen, "the plugin cannot store results (no stream store)");
    return -ENOSYS;
  }
  mdp_store_target t = {
      .dir_fd = rs->dir_fd, .name = rs->name, .zstd_level = rs->level, .limits = rs->limits};
  rc = mdp_store_open(store, &rs->st, &t, &events, rs);
  if(rc) {
    md_seterr(err, errlen, "cannot store %s/%s: %s", rs->dir_path, rs->name, strerror(-rc));
    return rc;
  }
  close(rs->dir_fd);
  rs->dir_fd = -1;
  return 0;
}

/* The same fields of MemoryDump, AllocationTraceStop and HeapProfile: no path (the
 * worker writes nothing), a stream with the window as first credit. */
static void ask_stream(char **path, protobuf_c_boolean *has_stream, protobuf_c_boolean *stream,
                       protobuf_c_boolean *has_window, uint32_t *win)
{
  *path = NULL;
  *has_stream = *stream = 1;
  *has_window = 1;
  *win = window;
}

mdp_rstream *mdp_rstream_new(mdp_rstream_key key, const mdp_relay_sink *sink,
                             Memdiag__V1__Request *req, mdp_rstream_ops *ops, char *err,
                             size_t errlen)
{
  Memdiag__V1__MemoryDump *md_copy = &ops->md;
  Memdiag__V1__AllocationTraceStop *tp_copy = &ops->tp;
  Memdiag__V1__HeapProfile *hp_copy = &ops->hp;
  mdp_rstream *rs;

  if(!sink || !sink->name || !sink->dir_path || sink->dir_fd < 0) {
    md_seterr(err, errlen, "no folder to store the result in");
    return NULL;
  }
  rs = calloc(1, sizeof *rs);
  if(!rs) {
    md_seterr(err, errlen, "out of memory");
    return NULL;
  }
  rs->connection_id = key.connection_id;
  rs->request_id = key.request_id;
  rs->level = sink->zstd_level;
  rs->limits = sink->limits;
  snprintf(rs->dir_path, sizeof rs->dir_path, "%s", sink->dir_path);
  snprintf(rs->name, sizeof rs->name, "%s", sink->name);
  rs->dir_fd = fcntl(sink->dir_fd, F_DUPFD_CLOEXEC, 0);
  if(rs->dir_fd < 0) {
    md_seterr(err, errlen, "cannot use the folder %s: %s", sink->dir_path, strerror(errno));
    free(rs);
    return NULL;
  }
  if(sink->compress_from) {
    snprintf(rs->compress_from, sizeof rs->compress_from, "%s", sink->compress_from);
    rs->compress_owner = sink->compress_owner;
  } else if(req->op_case == MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP) {
    *md_copy = *req->memory_dump;
    ask_stream(&md_copy->path, &md_copy->has_stream, &md_copy->stream, &md_copy->has_stream_window,
               &md_copy->stream_window);
    req->memory_dump = md_copy;
    rs->streaming = 1;
  } else if(req->op_case == MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_STOP) {
    *tp_copy = *req->allocation_trace_stop;
    ask_stream(&tp_copy->path, &tp_copy->has_stream, &tp_copy->stream, &tp_copy->has_stream_window,
               &tp_copy->stream_window);
    req->allocation_trace_stop = tp_copy;
    rs->streaming = 1;
  } else if(req->op_case == MEMDIAG__V1__REQUEST__OP_HEAP_PROFILE) {
    *hp_copy = *req->heap_profile;
    ask_stream(&hp_copy->path, &hp_copy->has_stream, &hp_copy->stream, &hp_copy->has_stream_window,
               &hp_copy->stream_window);
    req->heap_profile = hp_copy;
    rs->streaming = 1;
  }
  if(rs->streaming) {
    rs->granted = window;
    if(open_store(rs, err, errlen)) {
      close(rs->dir_fd);
      free(rs);
      return NULL;
    }
  }
  rs->next = streams;
  streams = rs;
  return rs;
}

static void end_store(mdp_rstream *rs, const char *why)
{
  if(rs->st && rs->state < RS_ENDING && to(rs, RS_ENDING))
    mdp_store_abort(rs->st, why);
}

/* A frame of no stream of ours: -ENOENT for an unknown request (neither
 * pending nor a stream recently given up), -EINVAL for a request that is
 * not a stream. */
static int stray(uint64_t connection_id, uint64_t request_id, const mdp_rstream *rs, size_t bytes)
{
  if(rs)
    return -EINVAL;
  if(!was_stream(connection_id, request_id))
    return -ENOENT;
  dropped.frames++;
  dropped.bytes += bytes;
  return 0;
}

int mdp_rstream_on_frame(uint64_t connection_id, const Memdiag__V1__Frame *f)
{
  mdp_rstream *rs;

  if(f->body_case == MEMDIAG__V1__FRAME__BODY_DUMP_CHUNK) {
    const Memdiag__V1__DumpChunk *c = f->dump_chunk;
    rs = find(connection_id, c->request_id);
    if(!rs || !rs->streaming)
      return stray(connection_id, c->request_id, rs, c->data.len);
    rs->received += c->data.len; /* dropped ones too: the reply tells */
    if(rs->state != RS_OPEN)
      return 0; /* after a timeout, a failure or the end: dropped */
    if(rs->received > rs->granted) {
      /* a worker that ignores its credit is stopped as one past its
       * budget: told so, and not waited for beyond the relay's grace */
      cancel_stream(rs, "the worker sent more than the plugin allowed (flow control)");
      return 0;
    }
    if(rs->limits.max_raw && rs->received > rs->limits.max_raw) {
      char why[320];
      snprintf(why, sizeof why,
               "%s is over its budget: more than %" PRIu64
               " bytes sent (the worker's RSS x DumpSpaceFactor x 2)",
               rs->name, rs->limits.max_raw);
      cancel_stream(rs, why);
      return 0;
    }
    if(mdp_store_write(rs->st, c->data.data, c->data.len) != 0)
      end_store(rs, "the plugin could not queue the dump's bytes (out of memory)");
    return 0;
  }
  if(f->body_case == MEMDIAG__V1__FRAME__BODY_DUMP_END) {
    const Memdiag__V1__DumpEnd *e = f->dump_end;
    rs = find(connection_id, e->request_id);
    if(!rs || !rs->streaming)
      return stray(connection_id, e->request_id, rs, 0);
    if(rs->end_frame)
      return 0;
    rs->end_frame = 1;
    if(rs->state != RS_OPEN)
      return 0;
    if(e->error && e->error[0]) {
      char why[256];
      md_printable(why, sizeof why, e->error, MD_TEXT_UTF8);
      end_store(rs, why);
      return 0;
    }
    /* Kept until the Reply (mdp_rstream_settle): a worker may still fail
     * the request, time out or go away after its stream ended. */
    to(rs, RS_KEPT);
    rs->end_size = e->has_size ? e->size : 0;
    rs->end_sha_len = e->has_sha256 && e->sha256.len == sizeof rs->end_sha ? sizeof rs->end_sha : 0;
    if(rs->end_sha_len)
      memcpy(rs->end_sha, e->sha256.data, sizeof rs->end_sha);
  }
  return 0;
}

static Memdiag__V1__Reply *copy_reply(const Memdiag__V1__Reply *r)
{
  size_t len = memdiag__v1__reply__get_packed_size(r);
  uint8_t *buf = malloc(len ? len : 1);
  Memdiag__V1__Reply *out;
  if(!buf)
    return NULL;
  memdiag__v1__reply__pack(r, buf);
  out = memdiag__v1__reply__unpack(NULL, len, buf);
  free(buf);
  return out;
}

/* Inline data to store: written through the same store, so the loop never
 * touches the disk. */
static int store_inline(mdp_rstream *rs)
{
  const Memdiag__V1__Reply *r = rs->reply;
  unsigned char sha[SHA256_DIGEST_LENGTH];
  char err[300];

  if(open_store(rs, err, sizeof err)) {
    md_seterr(rs->store_error, sizeof rs->store_error, "%s", err);
    return -1;
  }
  to(rs, RS_ENDING);
  SHA256(r->data.data, r->data.len, sha);
  if(mdp_store_write(rs->st, r->data.data, r->data.len) != 0) {
    mdp_store_abort(rs->st, "out of memory");
    return 0;
  }
  mdp_store_finish(rs->st, r->data.len, sha, sizeof sha);
  return 0;
}

static int compress(mdp_rstream *rs)
{
  mdp_store_target t = {
      .dir_fd = rs->dir_fd, .name = rs->name, .zstd_level = rs->level, .limits = rs->limits};
  mdp_store_source from = {.name = rs->compress_from, .owner = rs->compress_owner};
  return mdp_store_compress_file(store, &rs->st, &t, &from, &events, rs);
}

void mdp_rstream_settle(mdp_rstream *rs, const Memdiag__V1__Reply *reply, mdp_rstream_reply_fn done,
                        void *arg)
{
  rs->settled = 1;
  rs->done = done;
  rs->arg = arg;
  rs->reply = copy_reply(reply);
  if(!rs->reply) {
    end_store(rs, "out of memory");
  } else if(rs->streaming) {
    if(rs->state == RS_KEPT && rs->reply->status == MEMDIAG__V1__STATUS__STATUS_OK) {
      /* the stream and the request both succeeded: verify and name it */
      to(rs, RS_ENDING);
      mdp_store_finish(rs->st, rs->end_size, rs->end_sha_len ? rs->end_sha : NULL, rs->end_sha_len);
    } else if(rs->state == RS_KEPT) {
      end_store(rs, "the request failed after the end of its stream");
    } else if(rs->state == RS_OPEN) {
      /* a reply before the stream's end (an error, a timeout, the worker
       * gone): nothing more will come that is worth keeping */
      end_store(rs, rs->reply->status == MEMDIAG__V1__STATUS__STATUS_OK
                        ? "the worker answered before the end of its stream"
                        : "the request failed before the end of the stream");
      /* After a timeout the worker is still writing the dump and would wait
       * for credit forever, serving no other request: let it send the rest,
       * which is dropped on arrival. */
      grant(rs, DRAIN_CREDIT, NULL);
    }
  } else if(rs->compress_from[0]) {
    if(rs->reply->status != MEMDIAG__V1__STATUS__STATUS_OK) {
      to(rs, RS_STORED); /* the worker's file is not there to compress */
    } else if(!store || compress(rs) != 0) {
      /* the worker's uncompressed file stays, and the reply names it */
      rs->st = NULL;
      to(rs, RS_STORED);
    } else {
      to(rs, RS_ENDING);
    }
  } else if(rs->reply->status == MEMDIAG__V1__STATUS__STATUS_OK && rs->reply->has_data) {
    if(store_inline(rs) != 0)
      to(rs, RS_STORED); /* nothing was opened: complete with the error */
  } else {
    to(rs, RS_STORED); /* nothing to store */
  }
  if(!rs->st && rs->state != RS_STORED)
    to(rs, RS_STORED);
  try_complete(rs);
}

static void try_complete(mdp_rstream *rs)
{
  Memdiag__V1__Reply out, oom = MEMDIAG__V1__REPLY__INIT;
  char path[700], note[512], error[400];

  if(!rs->settled || rs->state != RS_STORED)
    return;
  if(!rs->reply) {
    oom.has_request_id = 1;
    oom.request_id = rs->request_id;
    oom.has_status = 1;
    oom.status = MEMDIAG__V1__STATUS__STATUS_ERROR;
    oom.error = "memdiag plugin: out of memory";
    out = oom;
  } else {
    out = *rs->reply;
  }
  if(rs->cancelled && out.status != MEMDIAG__V1__STATUS__STATUS_UNKNOWN_CONNECTION) {
    /* the worker's failure, if any, is the cancel's echo: name the cause;
     * a timeout the relay made up (the worker kept streaming) is no echo */
    int timed_out = out.status == MEMDIAG__V1__STATUS__STATUS_TIMEOUT && out.error;
    snprintf(error, sizeof error,
             "the result could not be stored: %s; the plugin stopped the stream after %" PRIu64
             " bytes%s%s",
             rs->store_error[0] ? rs->store_error : "unknown error", rs->received,
             timed_out ? "; " : "", timed_out ? out.error : "");
    out.has_status = 1;
    out.status = MEMDIAG__V1__STATUS__STATUS_ERROR;
    out.error = error;
    out.path = NULL;
  } else if(out.status == MEMDIAG__V1__STATUS__STATUS_OK && rs->compress_from[0] &&
            (!rs->st || rs->outcome != MDP_STORE_OK)) {
    /* compression is a saving, not the evidence: the worker's file stays */
    snprintf(note, sizeof note, "%s%snot compressed: %s", out.note && out.note[0] ? out.note : "",
             out.note && out.note[0] ? "; " : "",
             rs->store_error[0] ? rs->store_error : "the plugin could not start the compression");
    out.note = note;
  } else if(out.status == MEMDIAG__V1__STATUS__STATUS_OK && (rs->st || rs->store_error[0])) {
    if(rs->st && rs->outcome == MDP_STORE_OK) {
      snprintf(path, sizeof path, "%s/%s", rs->dir_path, rs->name);
      out.path = path;
      out.has_data = 0;
      if(rs->streaming || rs->level) {
        snprintf(note, sizeof note, "%s%sstored by the plugin as %s: %" PRIu64 " bytes%s",
                 out.note && out.note[0] ? out.note : "", out.note && out.note[0] ? "; " : "",
                 rs->name, rs->stored_bytes, rs->level ? " (zstd)" : "");
        out.note = note;
      }
      out.has_bytes = 1;
      out.bytes = rs->raw_bytes;
    } else {
      snprintf(error, sizeof error, "the result could not be stored: %s",
               rs->store_error[0] ? rs->store_error : "unknown error");
      out.has_status = 1;
      out.status = MEMDIAG__V1__STATUS__STATUS_ERROR;
      out.error = error;
      out.path = NULL;
    }
  }
  unlink_rs(rs);
  rs->done(&out, rs->arg);
  free_rs(rs);
}
