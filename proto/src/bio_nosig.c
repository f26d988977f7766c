/* A minimal socket BIO that never raises SIGPIPE (see internal.h). */
#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>
#include <openssl/bio.h>

#include "internal.h"

static BIO_METHOD *method;
static pthread_once_t method_once = PTHREAD_ONCE_INIT;

static int nosig_write(BIO *b, const char *data, int len)
{
  ssize_t n;

  BIO_clear_retry_flags(b);
  n = send(BIO_get_fd(b, NULL), data, (size_t)len, MSG_NOSIGNAL);
  if(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    BIO_set_retry_write(b);
  return (int)n;
}

static int nosig_read(BIO *b, char *data, int len)
{
  ssize_t n;

  BIO_clear_retry_flags(b);
  n = recv(BIO_get_fd(b, NULL), data, (size_t)len, 0);
  if(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    BIO_set_retry_read(b);
  return (int)n;
}

static int nosig_puts(BIO *b, const char *s)
{
  int n = 0;
  while(s[n])
    n++;
  return nosig_write(b, s, n);
}

static long nosig_ctrl(BIO *b, int cmd, long num, void *ptr)
{
  switch(cmd) {
  case BIO_C_SET_FD:
    BIO_set_data(b, (void *)(intptr_t) * (int *)ptr);
    BIO_set_init(b, 1);
    (void)num;
    return 1;
  case BIO_C_GET_FD:
    if(!BIO_get_init(b))
      return -1;
    if(ptr)
      *(int *)ptr = (int)(intptr_t)BIO_get_data(b);
    return (long)(intptr_t)BIO_get_data(b);
  case BIO_CTRL_FLUSH:
  case BIO_CTRL_DUP: return 1;
  default: return 0;
  }
}

static void make_method(void)
{
  BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                               "memdiag socket");
  if(!m)
    return;
  BIO_meth_set_write(m, nosig_write);
  BIO_meth_set_read(m, nosig_read);
  BIO_meth_set_puts(m, nosig_puts);
  BIO_meth_set_ctrl(m, nosig_ctrl);
  method = m;
}

BIO *md_bio_socket_new(int fd)
{
  BIO *b;

  pthread_once(&method_once, make_method);
  if(!method)
    return NULL;
  b = BIO_new(method);
  if(!b)
    return NULL;
  BIO_set_fd(b, fd, BIO_NOCLOSE);
  return b;
}
