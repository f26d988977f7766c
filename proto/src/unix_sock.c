/* AF_UNIX helpers for both ends of the channel. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "md/text.h"
#include "md/tls.h"

static int fill_addr(struct sockaddr_un *sa, const char *path, char *err, size_t errlen)
{
  memset(sa, 0, sizeof(*sa));
  sa->sun_family = AF_UNIX;
  if(!path || !*path || strlen(path) >= sizeof(sa->sun_path)) {
    md_seterr(err, errlen, "socket path '%s' is empty or longer than %zu bytes", path ? path : "",
              sizeof(sa->sun_path) - 1);
    return MD_EINVAL;
  }
  memcpy(sa->sun_path, path, strlen(path) + 1);
  return MD_OK;
}

int md_unix_connect(const char *path, char *err, size_t errlen)
{
  struct sockaddr_un sa;
  int fd, rc;

  rc = fill_addr(&sa, path, err, errlen);
  if(rc)
    return rc;
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if(fd < 0) {
    md_seterr(err, errlen, "socket: %s", strerror(errno));
    return MD_EIO;
  }
  /* Connecting on AF_UNIX completes or fails at once; non-blocking comes
   * after, for the TLS layer. */
  if(connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
    md_seterr(err, errlen, "cannot connect to %s: %s", path, strerror(errno));
    close(fd);
    return MD_EIO;
  }
  return fd;
}

int md_unix_listen(const char *path, unsigned mode, int backlog, char *err, size_t errlen)
{
  struct sockaddr_un sa;
  struct stat st;
  int fd, rc;

  rc = fill_addr(&sa, path, err, errlen);
  if(rc)
    return rc;
  if(lstat(path, &st) == 0) {
    if(!S_ISSOCK(st.st_mode)) {
      md_seterr(err, errlen, "%s exists and is not a socket; not removing it", path);
      return MD_EINVAL;
    }
    unlink(path);
  }
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if(fd < 0) {
    md_seterr(err, errlen, "socket: %s", strerror(errno));
    return MD_EIO;
  }
  if(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
    md_seterr(err, errlen, "cannot bind %s: %s", path, strerror(errno));
    goto fail;
  }
  if(mode && chmod(path, mode) < 0) {
    md_seterr(err, errlen, "cannot chmod %s: %s", path, strerror(errno));
    goto fail;
  }
  if(listen(fd, backlog > 0 ? backlog : 128) < 0) {
    md_seterr(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
    goto fail;
  }
  return fd;

fail:
  close(fd);
  return MD_EIO;
}

int md_client_connect(md_conn **out, md_tls_ctx *ctx, const char *path, int timeout_ms, char *err,
                      size_t errlen)
{
  md_conn *c = NULL;
  int fd, rc;

  *out = NULL;
  fd = md_unix_connect(path, err, errlen);
  if(fd < 0)
    return fd;
  rc = md_conn_new(&c, ctx, fd);
  if(rc) {
    md_seterr(err, errlen, "%s", md_strerror(rc));
    return rc;
  }
  rc = md_conn_handshake_wait(c, timeout_ms);
  if(rc) {
    md_seterr(err, errlen, "%s", rc == MD_ETIMEDOUT ? "TLS handshake timed out" : md_conn_error(c));
    md_conn_free(c);
    return rc;
  }
  *out = c;
  return MD_OK;
}
