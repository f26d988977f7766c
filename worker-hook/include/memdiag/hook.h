/* libmemdiag-hook (prefix mdh_): the runtime-neutral core of the worker hook.
 *
 * A hook owns one I/O thread. That thread connects to the plugin's AF_UNIX
 * socket over mutual TLS, says hello, keeps the connection alive with
 * heartbeats, reconnects with jittered exponential backoff when the plugin
 * goes away, and moves requests and replies between the socket and two
 * queues. It never calls into the runtime: the runtime pops requests with
 * mdh_next_request() from a thread of its own and answers with mdh_reply().
 * A hook that cannot connect keeps retrying and logs to stderr (rate
 * limited); it never stops the worker.
 *
 * Fork: the library registers pthread_atfork handlers. In a child every hook
 * inherited from the parent is dropped: its file descriptors are closed, no
 * TLS call is made on its session, and every mdh_* call on it returns
 * MDH_EFORKED (mdh_stop() releases what is safe to release). Starting a new
 * hook in the child is the runtime binding's decision (a dump child must not
 * register), so the library never does it on its own.
 *
 * Ownership: an mdh_hook is owned by the caller of mdh_start() and released
 * by mdh_stop(). mdh_start() copies every string of the config. An
 * mdh_request filled by mdh_next_request() is owned by the caller and
 * released with mdh_request_clear(). mdh_reply() copies the reply.
 */
#ifndef MEMDIAG_HOOK_H
#define MEMDIAG_HOOK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MDH_VERSION "0.1.0"

/* The hook's outcomes: 0 is success; the others are negative and start
 * below -MDH_ERR_BASE, so that none is ever a negated errno (Linux's are
 * below 200) nor one of the wire library's MD_* codes (-1001 ...). */
#define MDH_ERR_BASE 2000
typedef enum mdh_err {
  MDH_OK = 0,
  MDH_ETIMEDOUT = -(MDH_ERR_BASE + 1), /* no request within the timeout */
  MDH_EINTR = -(MDH_ERR_BASE + 2),     /* mdh_wakeup() interrupted the wait */
  MDH_ESTOPPED = -(MDH_ERR_BASE + 3),  /* mdh_stop() was called */
  MDH_ENOMEM = -(MDH_ERR_BASE + 4),
  MDH_EINVAL = -(MDH_ERR_BASE + 5),
  MDH_EFORKED = -(MDH_ERR_BASE + 6), /* the hook belongs to the parent of this process */
  MDH_ETHREAD = -(MDH_ERR_BASE + 7), /* the I/O thread could not be started */
  MDH_ESTALE = -(MDH_ERR_BASE + 8),  /* the reply's connection is gone; reply dropped */
} mdh_err;

/* Static text for an mdh_err code; never NULL. */
const char *mdh_strerror(int err);

typedef struct mdh_hook mdh_hook;
typedef struct mdh_stream mdh_stream;

typedef struct {
  const char *socket_path; /* the plugin's AF_UNIX socket */
  const char *certificate; /* PEM, OU=worker */
  const char *key;
  const char *ca;      /* the only CA trusted for the plugin */
  const char *name;    /* operator-facing name */
  const char *runtime; /* "ruby" */
  const char *runtime_version;
  const char *hook_version;        /* NULL: MDH_VERSION */
  const char *dump_directory;      /* NULL: none announced */
  const char *const *capabilities; /* operation names */
  size_t n_capabilities;
  unsigned backoff_min_ms;       /* 0: 100 */
  unsigned backoff_max_ms;       /* 0: 30000 */
  unsigned handshake_timeout_ms; /* connect + TLS + welcome; 0: 5000 */
  unsigned queue_capacity;       /* pending requests; 0: 16 */
} mdh_config;

typedef enum {
  MDH_OP_PING = 1,
  MDH_OP_MEMORY_DUMP,
  MDH_OP_ALLOCATION_TRACE_START,
  MDH_OP_ALLOCATION_TRACE_STOP,
  MDH_OP_GARBAGE_PROFILE_START,
  MDH_OP_GARBAGE_PROFILE_STOP,
  MDH_OP_SCHEDULER_DUMP,
  MDH_OP_THREAD_DUMP,
  /* Not from the plugin: the hook queues it itself when a connection it
   * was welcomed on ends for any reason but mdh_shutdown() (the plugin
   * crashed, restarted, closed it or went silent). connection_id names the
   * connection that ended; id is 0. The runtime undoes what requests of that
   * connection started and left running (profilers, tracing) unless they
   * asked to be kept, and does not reply. It is queued after every request
   * of that connection, so it comes before any request of the next one. */
  MDH_OP_CONNECTION_CLOSED,
  MDH_OP_HEAP_PROFILE,
  /* Not from the plugin: queued after a welcome that carries settings for
   * the runtime (has_sampling, sampling_interval). id is 0; no reply. */
  MDH_OP_SETTINGS,
} mdh_op;

typedef enum {
  MDH_MODE_INLINE = 0,
  MDH_MODE_FORK = 1,
  MDH_MODE_AUTO = 2,
} mdh_mode;

/* Operation name as used on the wire and in the Ruby binding. */
const char *mdh_op_name(mdh_op op);
const char *mdh_mode_name(mdh_mode mode);

typedef struct {
  uint64_t connection_id; /* connection the request came on */
  uint64_t id;            /* request_id, echoed in the reply */
  mdh_op op;
  uint32_t timeout_ms; /* 0: the operation's default */
  char *path;          /* NULL when the request names none */
  int shapes;          /* memory_dump, allocation_trace_stop */
  mdh_mode mode;       /* memory_dump */
  int keep;            /* allocation_trace_start, garbage_profile_start: outlive the connection */
  uint8_t *payload;    /* ping */
  size_t payload_len;
  int stream;                 /* memory_dump, allocation_trace_stop, heap_profile: send the bytes
                               * over the connection (mdh_stream_open) */
  uint32_t stream_window;     /* bytes the plugin accepts before its first credit */
  int has_sampling;           /* settings: the welcome named an allocation sampling */
  uint32_t sampling_interval; /* settings: allocations sampled a second; 0 off */
} mdh_request;

void mdh_request_clear(mdh_request *req);

typedef enum {
  MDH_STATUS_OK = 0,
  MDH_STATUS_ERROR = 1,
  MDH_STATUS_REFUSED = 2,
  MDH_STATUS_TIMEOUT = 3,
  MDH_STATUS_UNSUPPORTED = 5,
  MDH_STATUS_BAD_REQUEST = 7,
} mdh_status;

/* Absent fields are NULL (strings, data) or have their has_ flag 0. */
typedef struct {
  uint64_t connection_id; /* from the request */
  uint64_t request_id;
  mdh_status status;
  const char *error;
  const char *path;
  const uint8_t *data;
  size_t data_len;
  int has_bytes, has_duration_us, has_pause_us;
  uint64_t bytes, duration_us, pause_us;
  const char *note;
  const char *mode;
} mdh_reply_t;

/* Validate and copy the config, start the I/O thread. The I/O thread
 * connects in the background: a plugin that is not there is not an error. */
int mdh_start(mdh_hook **out, const mdh_config *config);

/* Wait up to timeout_ms (<0: forever) for the next request and move it into
 * *req. MDH_ETIMEDOUT, MDH_EINTR (mdh_wakeup) and MDH_ESTOPPED leave *req
 * zeroed. The request counts as running until its reply is queued: the
 * heartbeat reports it as busy. */
int mdh_next_request(mdh_hook *hook, mdh_request *req, int timeout_ms);

/* Make one mdh_next_request() wait (current or next) return MDH_EINTR.
 * Safe from any thread; meant for a runtime's "unblock" callback. */
void mdh_wakeup(mdh_hook *hook);

/* Queue a reply for the I/O thread to send. A reply whose data would not
 * fit in one frame is replaced by an error reply saying so. MDH_ESTALE when
 * the connection the request came on has closed since (the plugin forgot
 * the request with it); the hook logs that line on stderr. */
int mdh_reply(mdh_hook *hook, const mdh_reply_t *reply);

/* Streams. For a request with `stream` set, mdh_stream_open() makes a pipe
 * and returns its write end (owned by the caller, close-on-exec): write the
 * dump into it (from this process or a forked child), close every copy you
 * hold, then call mdh_stream_finish() with error NULL on success or a short
 * reason. It waits (call it without the runtime's lock) until the hook has
 * sent every byte and the end of the stream (size, SHA-256), then returns
 * MDH_OK and the size, or MDH_ESTALE when the connection failed first (why
 * says so). Reply to the request only after mdh_stream_finish(). One stream
 * at a time: a second open gets MDH_EINVAL; MDH_ESTALE when the request's
 * connection has closed. */
int mdh_stream_open(mdh_hook *hook, const mdh_request *req, int *write_fd);
int mdh_stream_finish(mdh_hook *hook, uint64_t request_id, const char *error, uint64_t *bytes,
                      char *why, size_t whylen);

/* Connection ID of the current connection; 0 while not connected. */
uint64_t mdh_connection_id(const mdh_hook *hook);

/* Number of welcomes received so far (reconnections + 1). */
uint64_t mdh_connections(const mdh_hook *hook);

/* Stop the I/O thread (close_notify, close) and make every current and
 * future mdh_next_request() return MDH_ESTOPPED. The hook stays valid, so a
 * runtime thread still waiting on it can return before mdh_stop() frees it.
 * Idempotent. */
void mdh_shutdown(mdh_hook *hook);

/* mdh_shutdown() and free the hook; no other thread may still use it. On a
 * hook inherited across fork only plain memory is released. NULL is a
 * no-op. */
void mdh_stop(mdh_hook *hook);

/* 1 when this hook was inherited from a parent process (see Fork above). */
int mdh_forked_away(const mdh_hook *hook);

#ifdef __cplusplus
}
#endif
#endif
