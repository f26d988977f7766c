/* Shared by the fuzz targets of the plugin's message handlers
 * (fuzz_hello, fuzz_heartbeat, fuzz_reply, fuzz_control): the server's
 * protocol code (server/hello.c, conn.c, control.c), the relay, registry,
 * sampler, capture and loop, linked as the plugin links them, with the TLS
 * connection replaced by an in-memory one (below) and collectd's symbols
 * defined by the harness (recording stand-ins). server.c (accept, poll) and memdiag.c (collectd
 * callbacks) are left out; the harness wires the hooks as memdiag.c does.
 *
 * The in-memory md_conn hands the protocol code whole frames queued by the
 * harness and encodes (then drops) every frame the plugin sends, so what
 * the handlers build is checked by the encoder too. Input bytes are one
 * protobuf message of the target's kind: anything that does not decode is
 * simply not delivered (the frame decoder has its own target).
 *
 * Ownership: everything a run creates is released before it returns (the
 * worker is unregistered, pending requests ended, tasks run), so that a
 * leak in a handler shows as one. */
#ifndef MD_FUZZ_SERVER_HARNESS_H
#define MD_FUZZ_SERVER_HARNESS_H

#include <stddef.h>
#include <stdint.h>

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

#endif
