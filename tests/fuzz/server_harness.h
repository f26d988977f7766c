/* Shared by the fuzz targets of the plugin's message handlers
 * (fuzz_hello, fuzz_heartbeat, fuzz_reply, fuzz_control, fuzz_stream): the
 * server's protocol code (server/hello.c, conn.c, control.c), the relay
 * and its result streams, registry, sampler, capture, stream store and
 * loop, linked as the plugin links them, with the TLS connection replaced
 * by an in-memory one (below) and collectd's symbols defined by the
 * harness (recording stand-ins). server.c (accept, poll) and memdiag.c
 * (collectd callbacks) are left out; the server's hooks are the plugin's
 * own table (plugin/wiring.h).
 *
 * The in-memory md_conn hands the protocol code whole frames queued by the
 * harness and encodes (then drops) every frame the plugin sends, so what
 * the handlers build is checked by the encoder too. Input bytes are one
 * protobuf message of the target's kind: anything that does not decode is
 * simply not delivered (the frame decoder has its own target).
 *
 * One worker stays registered from run to run (its registration, which
 * reads /proc, is the hello target's subject and would otherwise be most
 * of every other run's time); a run that ends its connection (a Goodbye,
 * a bad frame) frees it, and the next run registers a new one. Each run
 * leaves nothing pending: a request the input left unanswered is answered
 * by the harness's worker before the run returns.
 *
 * Ownership: everything a run creates is released before it returns
 * (pending requests ended, tasks run, a closed connection's worker
 * unregistered), so that a leak in a handler shows as one. */
#ifndef MD_FUZZ_SERVER_HARNESS_H
#define MD_FUZZ_SERVER_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "memdiag.pb-c.h"

typedef enum {
  MD_FUZZ_HELLO,     /* the input is the Hello of a new worker connection */
  MD_FUZZ_HEARTBEAT, /* a Heartbeat from a registered worker */
  MD_FUZZ_REPLY,     /* a Reply from a worker with a request pending */
  MD_FUZZ_CONTROL,   /* a Control from an operator, a worker registered */
} md_fuzz_kind;

int md_fuzz_server_run(md_fuzz_kind kind, const uint8_t *data, size_t size);

/* For tests/unit/server: n heartbeats (at most 256) arrive at once on a
 * registered worker's connection. *first_call: how many the first
 * mdp_hello_service call took; *more: whether it said input is left;
 * *calls: calls needed to take them all. */
int md_fuzz_server_burst(unsigned n, unsigned *first_call, int *more, unsigned *calls);

/* ---- for fuzz_stream: one request whose result the plugin stores ---- */

/* What the stream target asks the worker for. */
typedef enum {
  MD_FUZZ_ASK_DUMP,     /* memory_dump, streamed (DumpChunk ... DumpEnd) */
  MD_FUZZ_ASK_TRACE,    /* allocation_trace_stop, streamed */
  MD_FUZZ_ASK_THREADS,  /* thread_dump, answered inline and stored */
  MD_FUZZ_ASK_TRANSFER, /* memory_dump the worker writes itself, then compressed */
} md_fuzz_ask;

/* Start a request of this kind with a sink in the harness's folder (a
 * temporary directory on tmpfs when there is one): window is the stream's
 * credit, zstd_level the sink's. Returns the request_id the worker sees,
 * or 0 when the relay refused it (the run has nothing more to do). */
uint64_t md_fuzz_stream_begin(md_fuzz_ask ask, uint32_t window, int zstd_level);

/* A frame from the worker, as the wire delivers it. The loop does not turn
 * (no store event is taken) until md_fuzz_stream_turn. */
void md_fuzz_stream_frame(const Memdiag__V1__Frame *f);

/* The loop turns: the store's writer finishes what was queued, then the
 * events it posted run, until nothing is left to run. */
void md_fuzz_stream_turn(void);

/* The worker's connection closes (a crash, a lost heartbeat). */
void md_fuzz_stream_worker_gone(void);

/* The transfer request's file, as the worker would have written it
 * (ignored once a Reply was delivered: the worker writes it first). */
void md_fuzz_stream_worker_file(const uint8_t *data, size_t len);

/* End the run: the worker answers if it has not, the loop turns until the
 * request is over; aborts when the reply callback did not run exactly
 * once, a stream is left, a temporary file is left in the folder, or the
 * stored file and the reply disagree. The folder is emptied. Returns 1
 * when the result was stored and the reply names it, else 0. */
int md_fuzz_stream_end(void);

/* The loop turns for ms milliseconds by the clock (timers run), then as
 * md_fuzz_stream_turn. */
void md_fuzz_stream_wait(unsigned ms);

/* The error of the last reply the request's caller got ("" if none). */
const char *md_fuzz_stream_error(void);

#endif
