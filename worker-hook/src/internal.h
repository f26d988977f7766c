/* Internals of libmemdiag-hook shared by its source files. */
#ifndef MDH_INTERNAL_H
#define MDH_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "md/tls.h"
#include "md/wire.h"
#include "memdiag/hook.h"
#include "wake.h"

/* A reply waiting for the I/O thread; owns frame (see mdh_reply_frame_free). */
typedef struct mdh_reply_node {
  struct mdh_reply_node *next;
  uint64_t connection_id;
  Memdiag__V1__Frame *frame;
} mdh_reply_node;

/* Rate limiter for the failure lines a retrying hook would otherwise print
 * every backoff step. */
typedef struct {
  uint64_t last_ms;
  unsigned suppressed;
  char last[512];
} mdh_logstate;

struct mdh_hook {
  /* configuration: copies owned by the hook, read-only after start */
  char *socket_path, *certificate, *key, *ca, *name;
  char *runtime, *runtime_version, *hook_version, *dump_directory;
  char **capabilities;
  size_t n_capabilities;
  unsigned backoff_min_ms, backoff_max_ms, handshake_timeout_ms, queue_capacity;
  pid_t pid; /* process that started the hook */

  pthread_t thread;
  int thread_started;
  mdh_wake wake; /* a signal wakes the I/O thread (wake.h) */

  /* Held by the I/O thread around every OpenSSL call, and by the fork
   * prepare handler, so a child never inherits OpenSSL state halfway
   * through an update. Lock order: io_lock before mu. */
  pthread_mutex_t io_lock;

  pthread_mutex_t mu; /* guards everything below */
  pthread_cond_t cond;
  mdh_request *reqs; /* ring of queue_capacity */
  unsigned req_head, req_n;
  mdh_reply_node *replies, *replies_tail;
  int stopping;
  unsigned wakeups;         /* pending mdh_wakeup() calls */
  uint64_t busy_request_id; /* popped, not yet replied */
  int conn_fd;              /* socket of the live connection, or -1 */
  _Atomic uint64_t connection_id;
  _Atomic uint64_t connections;
  int forked_away;

  struct mdh_stream *stream; /* the one open stream (stream.c), or NULL */

  mdh_logstate log;                 /* I/O thread only */
  struct mdh_hook *next_registered; /* fork registry (fork.c) */
};

/* log.c: "memdiag hook[pid] name: ..." on stderr. */
void mdh_log(mdh_hook *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same, but repeated failures are folded into one line per minute. */
void mdh_log_failure(mdh_hook *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void mdh_log_reset(mdh_hook *h);

/* backoff.c */
unsigned mdh_backoff_jitter(unsigned base_ms, unsigned *seed);
unsigned mdh_backoff_next(unsigned base_ms, unsigned min_ms, unsigned max_ms);

/* convert.c: wire <-> mdh types. */
/* Fill *out from a wire request. MDH_EINVAL when it names no operation. */
int mdh_request_from_wire(mdh_request *out, const Memdiag__V1__Request *in, uint64_t connection_id);
/* Build a reply frame owning copies of every field of r. NULL on ENOMEM. */
Memdiag__V1__Frame *mdh_reply_frame_new(const mdh_reply_t *r);
/* Error reply frame for request_id. NULL on ENOMEM. */
Memdiag__V1__Frame *mdh_reply_frame_error(uint64_t request_id, mdh_status status,
                                          const char *error);
void mdh_reply_frame_free(Memdiag__V1__Frame *frame);

/* queue.c (callers hold h->mu) */
int mdh_queue_push_request(mdh_hook *h, mdh_request *req); /* moves *req; MDH_ENOMEM when full */
int mdh_queue_pop_request(mdh_hook *h, mdh_request *out);
void mdh_queue_push_reply(mdh_hook *h, mdh_reply_node *node);
mdh_reply_node *mdh_queue_take_replies(mdh_hook *h);
/* Empties both queues; says how many requests and replies were dropped. */
void mdh_queue_drop_all(mdh_hook *h, unsigned *requests, unsigned *replies);
void mdh_reply_nodes_free(mdh_reply_node *n);
unsigned mdh_reply_nodes_count(const mdh_reply_node *n);

/* io.c */
void *mdh_io_main(void *arg);

/* stream.c (I/O thread side; the runtime side is in memdiag/hook.h).
 * mdh_stream_step sends at most one frame through send(arg, frame). */
typedef int (*mdh_stream_send_fn)(void *arg, const Memdiag__V1__Frame *f);
int mdh_stream_poll_fd(mdh_hook *h);    /* the pipe to poll for reading, or -1 */
int mdh_stream_wants_turn(mdh_hook *h); /* 1: step now without waiting for the pipe */
int mdh_stream_step(mdh_hook *h, uint64_t connection_id, mdh_stream_send_fn send, void *arg);
void mdh_stream_on_credit(mdh_hook *h, uint64_t connection_id, const Memdiag__V1__StreamCredit *c);
void mdh_stream_connection_lost(mdh_hook *h, const char *why);
void mdh_stream_forget_in_child(mdh_hook *h);
void mdh_stream_release(mdh_hook *h); /* mdh_stop */

/* fork.c */
int mdh_fork_register(mdh_hook *h);
void mdh_fork_unregister(mdh_hook *h);

#endif
