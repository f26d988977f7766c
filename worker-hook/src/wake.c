/* The I/O thread's wake-up (wake.h): one eventfd. */
#include "wake.h"

#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

int mdh_wake_open(mdh_wake *w)
{
  w->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  return w->fd < 0 ? -errno : 0;
}

void mdh_wake_signal(mdh_wake *w)
{
  uint64_t one = 1;
  ssize_t n = write(w->fd, &one, sizeof one);
  (void)n; /* a full eventfd counter already wakes the thread */
}

void mdh_wake_drain(mdh_wake *w)
{
  uint64_t v;
  ssize_t n = read(w->fd, &v, sizeof v);
  (void)n; /* nothing to read: nothing to reset */
}

int mdh_wake_fd(const mdh_wake *w) { return w->fd; }

void mdh_wake_close(mdh_wake *w)
{
  if(w->fd >= 0)
    close(w->fd);
  w->fd = -1;
}
