/* The I/O thread's wake-up: an eventfd that any thread signals and the I/O
 * thread polls and drains. It sits below io.c and stream.c (as libuv's
 * async handle sits below its streams), so that the runtime side of a
 * stream (stream.c) and the public calls (hook.c) can wake the I/O thread
 * without calling into io.c, which calls into stream.c.
 *
 * Threading: mdh_wake_signal may be called from any thread, at any time
 * between mdh_wake_open and mdh_wake_close; mdh_wake_drain only from the
 * thread that polls mdh_wake_fd. Ownership: the descriptor belongs to the
 * mdh_wake value (in the hook); mdh_wake_close closes it once. */
#ifndef MDH_WAKE_H
#define MDH_WAKE_H

typedef struct {
  int fd; /* the eventfd, or -1 */
} mdh_wake;

/* A wake-up that holds no descriptor: mdh_wake_close on it does nothing. */
#define MDH_WAKE_NONE ((mdh_wake){.fd = -1})

/* Open the eventfd (non-blocking, close-on-exec). 0, or -errno. */
int mdh_wake_open(mdh_wake *w);
/* Wake the thread polling mdh_wake_fd. Never blocks: a full counter
 * already wakes it. */
void mdh_wake_signal(mdh_wake *w);
/* Reset after a wake-up was seen, so the next poll waits again. */
void mdh_wake_drain(mdh_wake *w);
/* The descriptor to poll for POLLIN, or -1 when closed. */
int mdh_wake_fd(const mdh_wake *w);
/* Close the descriptor (if any) and mark the wake-up closed. */
void mdh_wake_close(mdh_wake *w);

#endif
