/* memdiag plugin: results stored on the plugin's side (prefix mdp_rstream_).
 *
 * A request may come with a sink: "store the result as NAME in this folder".
 * For a heap dump (memory_dump, allocation_trace_stop) the worker is asked
 * to stream the bytes over its connection (DumpChunk ... DumpEnd); for the
 * small text results (GC profile, scheduler and thread dumps) it answers
 * inline and the plugin writes the data. Either way the file is written by
 * the stream store's thread (capture/stream_store.h), zstd-compressed when
 * the sink says so, verified, and renamed into place; the caller's reply
 * callback runs once both the worker's Reply and the file are settled, with
 * `path` naming the stored file. A failure of either ends the request with
 * an error and leaves no file: a streamed dump is verified and named only
 * once its DumpEnd has come and the Reply says OK.
 *
 * Flow control: the worker may send `window` bytes; each time the store has
 * written a chunk the plugin grants that many again (StreamCredit), so a
 * stream holds at most `window` bytes of the plugin's memory and never
 * makes the loop wait for the disk. The first byte past the sink's budget
 * (limits.max_raw) cancels the stream: a worker that streams without end
 * is stopped there, however fast it sends.
 *
 * Threading: loop thread only (the store's events are posted to the loop).
 * Ownership: each rstream belongs to this module from mdp_rstream_new until
 * its reply callback has run; sinks and frames are borrowed.
 */
#ifndef MDP_RSTREAM_H
#define MDP_RSTREAM_H

#include <stdint.h>
#include <sys/types.h>

#include "store/store.h"
#include "loop/loop.h"
#include "memdiag.pb-c.h"

/* Where a result goes. dir_fd is borrowed (duplicated by the store). */
typedef struct mdp_relay_sink {
  int dir_fd;
  const char *dir_path; /* for the reply's path and messages */
  const char *name;     /* plain file name, e.g. "heap-1.json.zst" */
  int zstd_level;       /* 0: stored as sent */
  /* DumpTransfer file: the worker writes this file in the folder itself;
   * once it has answered, the plugin compresses it into `name` and removes
   * it (only a regular file owned by compress_owner or root). NULL: the
   * result comes through the plugin. */
  const char *compress_from;
  uid_t compress_owner;
  /* What the result may cost (0 fields: no limit). A stream is cut off as
   * soon as its bytes pass limits.max_raw: the worker is told to stop
   * (StreamCredit cancel) and the request fails naming the budget. */
  mdp_store_limits limits;
} mdp_relay_sink;

typedef struct mdp_rstream mdp_rstream;
typedef void (*mdp_rstream_reply_fn)(const Memdiag__V1__Reply *reply, void *arg);
typedef int (*mdp_rstream_send_fn)(uint64_t connection_id, const Memdiag__V1__Frame *f);

/* Before the loop turns. store may be NULL: then every sink is refused. */
void mdp_rstream_init(mdp_loop *loop, mdp_rstream_send_fn send, mdp_store *store, uint32_t window);

/* Room for the streamed operation of a request: the caller's copy of the
 * request points into it once its stream fields are set. */
typedef struct {
  Memdiag__V1__MemoryDump md;
  Memdiag__V1__AllocationTraceStop tp;
  Memdiag__V1__HeapProfile hp;
} mdp_rstream_ops;

/* The request a result belongs to: the worker's connection and the relay's
 * request ID. */
typedef struct {
  uint64_t connection_id;
  uint64_t request_id;
} mdp_rstream_key;

/* A request with a sink is about to be sent as `req` (a copy the caller
 * owns): for a streamed op (memory_dump, allocation_trace_stop,
 * heap_profile), set its stream fields in `ops` (the caller's). Returns the
 * rstream, or NULL with err set (the request must not be sent). */
mdp_rstream *mdp_rstream_new(mdp_rstream_key key, const mdp_relay_sink *sink,
                             Memdiag__V1__Request *req, mdp_rstream_ops *ops, char *err,
                             size_t errlen);

/* The request's outcome (the worker's Reply or one the relay made up):
 * the rstream takes over; done(reply, arg) runs later, exactly once, on the
 * loop thread. reply is copied. */
void mdp_rstream_settle(mdp_rstream *rs, const Memdiag__V1__Reply *reply, mdp_rstream_reply_fn done,
                        void *arg);

/* A DumpChunk or DumpEnd from this worker. Returns 0 when it belongs to a
 * stream (taken, or dropped because the stream is over: a timeout, a
 * failure), -ENOENT when its request is unknown, -EINVAL when the request
 * is not a stream: the frame is dropped, the caller reports it. */
int mdp_rstream_on_frame(uint64_t connection_id, const Memdiag__V1__Frame *f);

/* The plugin has told the worker to stop this request's stream (its
 * budget, a failed store): the relay then waits only a short grace for the
 * worker's Reply (relay.c). Called on the loop thread, from within
 * mdp_rstream_on_frame or a store event; may be NULL. */
typedef void (*mdp_rstream_cancel_fn)(mdp_rstream_key key);
void mdp_rstream_on_cancel(mdp_rstream_cancel_fn fn);

/* Frames of streams the plugin gave up on (a cancel, a timeout, a failed
 * store) that arrived afterwards and were dropped, since the process began;
 * frames that fell out of the few streams remembered are not counted here
 * (the server reports them as unknown). */
typedef struct {
  uint64_t frames, bytes;
} mdp_rstream_dropped_t;
mdp_rstream_dropped_t mdp_rstream_dropped(void);

/* rstreams not yet finished (shutdown waits for them). */
unsigned mdp_rstream_live(void);

/* Changes of a stream's state refused as illegal since the process began
 * (rstream.c lists the legal ones): 0 unless rstream.c has a bug. */
unsigned mdp_rstream_refused(void);

#endif
