/* Blocking wrappers: poll the connection's fd until done or timeout. */
#include <errno.h>
#include <poll.h>

#include "internal.h"

static int wait_ready(md_conn *c, uint64_t deadline_ms, int forever)
{
  struct pollfd p = {.fd = md_conn_fd(c), .events = md_conn_events(c)};
  int timeout = -1;
  int n;

  if(!forever) {
    uint64_t now = md_now_ms();
    if(now >= deadline_ms)
      return MD_ETIMEDOUT;
    timeout = (int)(deadline_ms - now);
  }
  n = poll(&p, 1, timeout);
  if(n < 0)
    return errno == EINTR ? MD_OK : MD_EIO;
  if(n == 0)
    return MD_ETIMEDOUT;
  return MD_OK;
}

int md_conn_handshake_wait(md_conn *c, int timeout_ms)
{
  uint64_t deadline = md_now_ms() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms);
  int rc;

  while((rc = md_conn_handshake(c)) == MD_EAGAIN) {
    rc = wait_ready(c, deadline, timeout_ms < 0);
    if(rc)
      return rc;
  }
  return rc;
}

int md_conn_send_wait(md_conn *c, const Memdiag__V1__Frame *frame, int timeout_ms)
{
  uint64_t deadline = md_now_ms() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms);
  int rc = md_conn_send(c, frame);

  while(rc == MD_EAGAIN) {
    rc = wait_ready(c, deadline, timeout_ms < 0);
    if(rc)
      return rc;
    rc = md_conn_flush(c);
  }
  return rc;
}

int md_conn_recv_wait(md_conn *c, Memdiag__V1__Frame **out, int timeout_ms)
{
  uint64_t deadline = md_now_ms() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms);
  int rc;

  while((rc = md_conn_recv(c, out)) == MD_EAGAIN) {
    if(md_conn_pending(c) > 0) {
      rc = md_conn_flush(c);
      if(rc && rc != MD_EAGAIN)
        return rc;
    }
    rc = wait_ready(c, deadline, timeout_ms < 0);
    if(rc)
      return rc;
  }
  return rc;
}
