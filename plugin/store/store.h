/* memdiag plugin: streamed dumps into files, off the server thread
 * (prefix mdp_store_).
 *
 * A worker in a container cannot write into the plugin's capture folder,
 * so it streams the dump over its connection (DumpChunk frames). The
 * server thread hands every chunk to the store, which has its own writer
 * thread: it creates a temporary file in the capture folder, compresses
 * with zstd as the bytes arrive (or not, level 0), and on the stream's end
 * checks size and SHA-256 against what the worker says it sent, fsyncs and
 * renames the file to its final name. A stream that fails for any reason
 * (the worker's error, a size or checksum mismatch, a full disk, an abort,
 * the store stopping) leaves no file behind, neither final nor temporary.
 *
 * Memory: the store holds at most the bytes queued and not yet written.
 * The server bounds that per stream with credit: it grants the worker more
 * only as the store reports bytes consumed (events.consumed).
 *
 * Budgets (mdp_store_limits): a stream may carry at most max_raw bytes and
 * its file hold at most max_stored on disk, and while the file grows the
 * writer asks the file system again (fstatvfs, every 4 MiB) whether
 * keep_free bytes are still free. The first limit crossed fails the stream
 * (its failed event, then done with MDP_STORE_OVER_BUDGET). A file copied
 * from the worker (mdp_store_compress_file) is refused before a byte is
 * read when it is sparse (it holds far fewer blocks than its size says) or
 * larger than max_raw, and it is copied in slices of at most 4 MiB, each a
 * job of its own: the writer takes the other streams' jobs in between, so
 * no one file holds the others back, and stopping the store ends it within
 * one slice. max_ms bounds the copy's time.
 *
 * Threading: mdp_store_* functions may be called from any thread but each
 * stream's calls must come from one thread in order (the server thread).
 * The events run on the writer thread: the caller must hand them over to
 * its own thread (they may not call mdp_store_* on the same stream).
 *
 * Ownership: the store owns every stream from mdp_store_open until its
 * `done` event has run; the caller's `arg` stays the caller's. Data passed
 * to mdp_store_write is copied.
 */
#ifndef MDP_STORE_H
#define MDP_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mdp_store mdp_store;
typedef struct mdp_store_stream mdp_store_stream;

typedef enum {
  MDP_STORE_OK = 0,
  MDP_STORE_FAILED,      /* the file system refused (see error) */
  MDP_STORE_MISMATCH,    /* size or checksum differ from the worker's */
  MDP_STORE_ABORTED,     /* the caller or the worker gave up */
  MDP_STORE_OVER_BUDGET, /* a limit of mdp_store_limits was crossed (see error) */
} mdp_store_outcome;

/* What one stream may cost; 0 in a field: no such limit. */
typedef struct {
  uint64_t max_raw;    /* bytes the worker may send (or its file may hold) */
  uint64_t max_stored; /* bytes the stored file may take on disk */
  uint64_t keep_free;  /* bytes the file system must keep free while it grows */
  uint64_t max_ms;     /* a copy from the worker's file: time limit */
} mdp_store_limits;

/* Where a stream goes. dir_fd is duplicated (the caller keeps its own). */
typedef struct {
  int dir_fd;
  const char *name; /* a plain file name, no '/', not starting with '.' */
  int zstd_level;   /* 0: the bytes as they come; else zstd (name ends .zst) */
  mdp_store_limits limits;
} mdp_store_target;

/* The worker's own file to compress (DumpTransfer file). */
typedef struct {
  const char *name; /* in the target's folder, no '/' */
  uid_t owner;      /* the only owner accepted (root only for a root worker) */
} mdp_store_source;

typedef struct {
  mdp_store_outcome outcome;
  const char *name;      /* final file name in the folder (OK only) */
  uint64_t raw_bytes;    /* bytes received */
  uint64_t stored_bytes; /* bytes on disk (compressed) */
  uint64_t write_us;     /* writer-thread time spent on this stream */
  const char *error;     /* why, when not OK */
} mdp_store_result;

typedef struct {
  /* bytes of this stream written out (credit may be granted again) */
  void (*consumed)(void *arg, size_t bytes);
  /* the stream is over; `r` is borrowed for the call. Runs exactly once. */
  void (*done)(void *arg, const mdp_store_result *r);
  /* Optional (NULL: none): the first failure of the stream (a write, the
   * compression), before done and while bytes may still be queued, which
   * are dropped; `why` is borrowed for the call. */
  void (*failed)(void *arg, const char *why);
} mdp_store_events;

/* Start the writer thread. max_queued: bytes accepted but not yet written,
 * over all streams (a safety net above the per-stream credit). Returns 0
 * or a negative errno. */
int mdp_store_start(mdp_store **out, size_t max_queued);

/* Stop the writer: every open stream ends ABORTED ("plugin stopping"),
 * its temporary file removed, its done event run; then free. NULL ok. */
void mdp_store_stop(mdp_store *s);

/* Open a stream writing t->name in the folder t->dir_fd, within
 * t->limits. The file is created by the writer thread, 0600, owned by the
 * plugin's user (0640 and the reader group when there is one: capfs.h,
 * "Sharing"), never following or replacing an existing entry. Returns 0
 * or a negative errno (nothing opened, no event will run). */
int mdp_store_open(mdp_store *s, mdp_store_stream **out, const mdp_store_target *t,
                   const mdp_store_events *events, void *arg);

/* A stream whose bytes come from a file the worker wrote in the same
 * folder (DumpTransfer file): the writer thread opens src->name without
 * following links, accepts only a regular file of src->owner's
 * with one link (never root's for a worker that is not root), not sparse and within t->limits,
 * compresses it into t->name as above and, once that file is in place, removes the source. Size and
 * checksum are the file's own. No mdp_store_write or mdp_store_finish: the done event ends it. */
int mdp_store_compress_file(mdp_store *s, mdp_store_stream **out, const mdp_store_target *t,
                            const mdp_store_source *src, const mdp_store_events *events, void *arg);

/* Queue bytes for the stream. -ENOBUFS when the store is over max_queued
 * (the caller gave more credit than it should: abort the stream). */
int mdp_store_write(mdp_store_stream *st, const void *data, size_t len);

/* The worker says the stream is complete: size bytes with this SHA-256
 * (32 bytes). The writer verifies both, then fsyncs and renames. */
int mdp_store_finish(mdp_store_stream *st, uint64_t size, const uint8_t *sha256, size_t sha256_len);

/* Give up on the stream (the worker's error, a lost connection, a timeout):
 * the file is removed and done runs with ABORTED and `why`. */
void mdp_store_abort(mdp_store_stream *st, const char *why);

/* Wait until the writer has run every job queued so far (their events
 * have been called, their memory released). For tests and the fuzz
 * harness, which need a run's outcome not to depend on the threads'
 * timing; the plugin never waits for the disk. */
void mdp_store_wait_idle(mdp_store *s);

#ifdef __cplusplus
}
#endif
#endif
