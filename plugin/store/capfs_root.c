/* Opening CaptureDirectory without trusting its path: see capture_root.h. */
#include "capfs_root.h"
#include "capfs.h"

#include "md/text.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "/a//b/./c/" -> "/a/b/c". Relative paths and ".." are refused: the walk
 * below resolves nothing but plain names. */
int mdp_capfs_normalise(const char *in, char *out, size_t outlen, char *err, size_t errlen)
{
  size_t j = 0;
  if(!in || in[0] != '/') {
    md_seterr(err, errlen, "CaptureDirectory %s: must be an absolute path", in ? in : "(none)");
    return -EINVAL;
  }
  for(const char *p = in; *p;) {
    while(*p == '/')
      p++;
    size_t l = strcspn(p, "/");
    if(l == 0 || (l == 1 && p[0] == '.')) {
      p += l;
      continue;
    }
    if(l == 2 && p[0] == '.' && p[1] == '.') {
      md_seterr(err, errlen, "CaptureDirectory %s: must not contain \"..\"", in);
      return -EINVAL;
    }
    if(l > NAME_MAX || j + l + 2 > outlen) {
      md_seterr(err, errlen, "CaptureDirectory %s: path too long", in);
      return -ENAMETOOLONG;
    }
    out[j++] = '/';
    memcpy(out + j, p, l);
    j += l;
    p += l;
  }
  if(j == 0)
    out[j++] = '/';
  out[j] = '\0';
  return 0;
}

static const char *owner_name(uid_t uid, char *buf, size_t len)
{
  struct passwd pw, *found = NULL;
  char tmp[1024];
  if(getpwuid_r(uid, &pw, tmp, sizeof(tmp), &found) == 0 && found)
    snprintf(buf, len, "%s (uid %u)", found->pw_name, (unsigned)uid);
  else
    snprintf(buf, len, "uid %u", (unsigned)uid);
  return buf;
}

/* "CaptureDirectory /a/b" when the component is CaptureDirectory itself,
 * "CaptureDirectory /a/b: /a" for a directory above it. */
static const char *where(const char *root, const char *shown, char *buf, size_t len)
{
  if(strcmp(root, shown) == 0)
    snprintf(buf, len, "CaptureDirectory %s", root);
  else
    snprintf(buf, len, "CaptureDirectory %s: %s", root, shown);
  return buf;
}

/* One component of the walk, shown as `shown`: owned by root or by the
 * user collectd runs as, and writable by no one else, or else another user
 * could replace what lies below it. A sticky directory (/tmp) above
 * CaptureDirectory is fine: nobody but its owner may rename or remove
 * CaptureDirectory in it. */
/* Where a component lies: above CaptureDirectory (sticky is enough) or
 * CaptureDirectory itself. */
typedef enum { COMPONENT_ABOVE, COMPONENT_LAST } component_place;

static int check_component(int fd, const char *root, const char *shown, component_place place,
                           char *err, size_t errlen)
{
  bool last = place == COMPONENT_LAST;
  struct stat st;
  char who[300], at[2 * PATH_MAX + 32];
  if(fstat(fd, &st) != 0) {
    int e = errno;
    md_seterr(err, errlen, "%s: %s", where(root, shown, at, sizeof(at)), strerror(e));
    return -e;
  }
  if(!S_ISDIR(st.st_mode)) {
    md_seterr(err, errlen, "%s is not a directory", where(root, shown, at, sizeof(at)));
    return -ENOTDIR;
  }
  unsigned mode = (unsigned)(st.st_mode & 07777);
  if(st.st_uid != 0 && st.st_uid != geteuid()) {
    md_seterr(err, errlen, "%s is owned by %s, mode %04o (it must be root's%s)",
              where(root, shown, at, sizeof(at)), owner_name(st.st_uid, who, sizeof(who)), mode,
              geteuid() ? " or collectd's" : "");
    return -EPERM;
  }
  if((st.st_mode & (S_IWGRP | S_IWOTH)) && (last || !(st.st_mode & S_ISVTX))) {
    md_seterr(err, errlen, "%s has mode %04o, owner %s: writable by group or others%s",
              where(root, shown, at, sizeof(at)), mode, owner_name(st.st_uid, who, sizeof(who)),
              last ? "" : " and not sticky");
    return -EPERM;
  }
  return 0;
}

int mdp_capfs_check_dir(int fd, const char *root, char *err, size_t errlen)
{
  return check_component(fd, root, root, COMPONENT_LAST, err, errlen);
}

/* Why openat(dir, name, O_NOFOLLOW|O_DIRECTORY) failed with errno e, in
 * words; `at` names the component (where()). */
static int walk_error(int dirfd, const char *name, int e, const char *at, char *err, size_t errlen)
{
  struct stat st;
  if((e == ELOOP || e == ENOTDIR) && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if(S_ISLNK(st.st_mode)) {
      md_seterr(err, errlen,
                "%s is a symbolic link (memdiag follows none to CaptureDirectory: configure the "
                "real path)",
                at);
      return -ELOOP;
    }
    md_seterr(err, errlen, "%s is not a directory", at);
    return -ENOTDIR;
  }
  md_seterr(err, errlen, "%s: %s", at, strerror(e));
  return -e;
}

/* Walk from "/" to path (normalised), creating missing components, and
 * return a descriptor of the last one (>= 0) or a negative errno. */
int mdp_capfs_walk(const char *path, char *err, size_t errlen)
{
  char shown[PATH_MAX];
  int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  int rc;
  if(fd < 0) {
    md_seterr(err, errlen, "CaptureDirectory %s: /: %s", path, strerror(errno));
    return -errno;
  }
  snprintf(shown, sizeof(shown), "/");
  rc = check_component(fd, path, shown, path[1] == '\0' ? COMPONENT_LAST : COMPONENT_ABOVE, err,
                       errlen);
  for(const char *p = path + 1; !rc && *p;) {
    char name[NAME_MAX + 1];
    size_t l = strcspn(p, "/");
    memcpy(name, p, l);
    name[l] = '\0';
    p += l;
    if(*p == '/')
      p++;
    memcpy(shown, path, (size_t)(p - path));
    shown[p - path] = '\0';
    if(p > path + 1 && shown[p - path - 1] == '/')
      shown[p - path - 1] = '\0';
    int next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if(next < 0 && errno == ENOENT) {
      if(mkdirat(fd, name, 0711) != 0 && errno != EEXIST) {
        int e = errno;
        md_seterr(err, errlen, "CaptureDirectory %s: cannot create %s: %s", path, shown,
                  strerror(e));
        rc = -e;
        break;
      }
      next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if(next < 0) {
      char at[2 * PATH_MAX + 32];
      int e = errno;
      rc = walk_error(fd, name, e, where(path, shown, at, sizeof(at)), err, errlen);
      break;
    }
    close(fd);
    fd = next;
    rc = check_component(fd, path, shown, *p == '\0' ? COMPONENT_LAST : COMPONENT_ABOVE, err,
                         errlen);
  }
  if(!rc) {
    /* O_PATH cannot list; "." of the checked descriptor is the same
     * directory, whatever happened to its path since. */
    int dir = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if(dir < 0) {
      md_seterr(err, errlen, "CaptureDirectory %s: %s", path, strerror(errno));
      rc = -errno;
    } else {
      close(fd);
      return dir;
    }
  }
  close(fd);
  return rc;
}

/* ---------------------------------------------------------------- names and paths */

void mdp_capfs_sanitize(const char *in, char *out, size_t outlen)
{
  size_t j = 0;
  if(!outlen)
    return;
  for(size_t i = 0; in && in[i] && j + 1 < outlen && j < 64; i++) {
    char c = in[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.';
    if(j == 0 && c == '.')
      ok = false;
    out[j++] = ok ? c : '_';
  }
  if(j == 0 && outlen > 6) {
    memcpy(out, "worker", 6);
    j = 6;
  }
  out[j] = '\0';
}

static bool prefix_of(const char *path, const char *dir)
{
  size_t l = strlen(dir);
  while(l > 1 && dir[l - 1] == '/')
    l--;
  if(l == 1 && dir[0] == '/')
    return path[0] == '/';
  return strncmp(path, dir, l) == 0 && (path[l] == '\0' || path[l] == '/');
}

bool mdp_capfs_inside(const char *path, const char *dir)
{
  char rp[PATH_MAX], rd[PATH_MAX];
  const char *p = realpath(path, rp) ? rp : path;
  const char *d = realpath(dir, rd) ? rd : dir;
  return prefix_of(p, d) || prefix_of(path, dir);
}
