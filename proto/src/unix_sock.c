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
  return md_unix_listen_as(path, mode, -1, backlog, err, errlen);
}

/* Splits path into its directory (opened, O_PATH) and last name. */
static int open_parent(const char *path, char *name, size_t namelen, char *err, size_t errlen)
{
  char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  size_t dl = slash ? (size_t)(slash - path) : 1;

  if(!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || strlen(base) >= namelen ||
     dl >= sizeof(dir)) {
    md_seterr(err, errlen, "socket path '%s' does not end in a file name", path);
    return MD_EINVAL;
  }
  if(!slash)
    memcpy(dir, ".", 2);
  else if(slash == path)
    memcpy(dir, "/", 2);
  else {
    memcpy(dir, path, dl);
    dir[dl] = '\0';
  }
  memcpy(name, base, strlen(base) + 1);
  int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if(dfd < 0) {
    md_seterr(err, errlen, "cannot open the directory of %s: %s", path, strerror(errno));
    return MD_EIO;
  }
  return dfd;
}

int md_unix_listen_as(const char *path, unsigned mode, long gid, int backlog, char *err,
                      size_t errlen)
{
  struct sockaddr_un sa;
  struct stat st;
  char name[256], via[sizeof(sa.sun_path)], node_path[64];
  int fd = -1, dfd = -1, node = -1, rc;

  rc = fill_addr(&sa, path, err, errlen);
  if(rc)
    return rc;
  dfd = open_parent(path, name, sizeof(name), err, errlen);
  if(dfd < 0)
    return dfd;
  rc = MD_EIO;
  if(fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if(!S_ISSOCK(st.st_mode)) {
      md_seterr(err, errlen, "%s exists and is not a socket; not removing it", path);
      rc = MD_EINVAL;
      goto out;
    }
    unlinkat(dfd, name, 0);
  }
  /* Bound in the directory opened above, whatever its path leads to now;
   * without /proc, by path. */
  if((size_t)snprintf(via, sizeof(via), "/proc/self/fd/%d/%s", dfd, name) < sizeof(via) &&
     access("/proc/self/fd", X_OK) == 0)
    memcpy(sa.sun_path, via, strlen(via) + 1);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if(fd < 0) {
    md_seterr(err, errlen, "socket: %s", strerror(errno));
    goto out;
  }
  if(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
    md_seterr(err, errlen, "cannot bind %s: %s", path, strerror(errno));
    goto out;
  }
  /* The name may have been swapped since the bind (a link to a file root
   * would then chmod): the node is opened without following anything and
   * must still be a socket of ours. */
  node = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if(node < 0 || fstat(node, &st) != 0 || !S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
    md_seterr(err, errlen, "%s was replaced right after it was bound; not changing its mode", path);
    goto out;
  }
  snprintf(node_path, sizeof(node_path), "/proc/self/fd/%d", node);
  if(mode && chmod(node_path, mode) < 0) {
    md_seterr(err, errlen, "cannot chmod %s: %s", path, strerror(errno));
    goto out;
  }
  if(gid >= 0 && fchownat(node, "", (uid_t)-1, (gid_t)gid, AT_EMPTY_PATH) < 0) {
    md_seterr(err, errlen, "cannot set the group of %s: %s", path, strerror(errno));
    goto out;
  }
  if(listen(fd, backlog > 0 ? backlog : 128) < 0) {
    md_seterr(err, errlen, "cannot listen on %s: %s", path, strerror(errno));
    goto out;
  }
  rc = fd;
  fd = -1;
out:
  if(fd >= 0)
    close(fd);
  if(node >= 0)
    close(node);
  close(dfd);
  return rc;
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
