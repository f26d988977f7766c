/* memdiag plugin: folders for operators' dumps without a path.
 *
 * `memdiagctl memory_dump connection_id=N` (and allocation_trace_stop)
 * without `path` is stored by the plugin, not the worker:
 * CaptureDirectory/manual/<worker>-<pid>-<UTC>/, root's, 0700, made and
 * opened relative to descriptors so that nothing a worker or local user
 * controls can redirect it. Manual folders hold no capture.json: pruning
 * never removes them (they are the operator's). */
#include "collectd/core/daemon/collectd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "capture_fs.h"
#include "md/text.h"
#include "run.h"

/* Open (making it if missing) the directory `name` in dir_fd: a real
 * directory owned by us and writable by nobody else. */
static int sub_dir(int dir_fd, const char *name, char *err, size_t errlen)
{
  struct stat sb;
  int fd;

  if(mkdirat(dir_fd, name, 0700) < 0 && errno != EEXIST) {
    md_seterr(err, errlen, "cannot make %s: %s", name, strerror(errno));
    return -errno;
  }
  fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if(fd < 0) {
    int e = errno;
    md_seterr(err, errlen, "cannot open %s (a symbolic link or not a directory?): %s", name,
              strerror(e));
    return -e;
  }
  if(fstat(fd, &sb) < 0 || sb.st_uid != geteuid() || (sb.st_mode & 022)) {
    md_seterr(err, errlen, "%s is not the plugin's own (owner %ld, mode %04o): not used", name,
              (long)sb.st_uid, (unsigned)(sb.st_mode & 07777));
    close(fd);
    return -EPERM;
  }
  return fd;
}

int mdp_capture_manual_folder(const char *worker, pid_t pid, char *dir, size_t dirlen, int *dir_fd,
                              int *zstd_level, char *err, size_t errlen)
{
  char root[MDP_CAPTURE_PATH_MAX], safe[96], name[160], why[512];
  int root_fd = -1, manual_fd = -1, rc;
  struct timespec ts;
  struct tm tm;

  *dir_fd = -1;
  pthread_mutex_lock(&mdp_capst.lock);
  snprintf(root, sizeof(root), "%s", mdp_capst.cfg.directory);
  *zstd_level = mdp_capst.cfg.dump_compression ? mdp_capst.cfg.dump_compression_level : 0;
  pthread_mutex_unlock(&mdp_capst.lock);

  /* The descriptor capture_fs checked, not the path again. */
  root_fd = mdp_capfs_root_fd(root, why, sizeof(why));
  if(root_fd < 0) {
    md_seterr(err, errlen, "%s", why);
    return root_fd;
  }
  manual_fd = sub_dir(root_fd, "manual", why, sizeof(why));
  if(manual_fd < 0) {
    rc = manual_fd;
    md_seterr(err, errlen, "CaptureDirectory %s: %s", root, why);
    goto out;
  }
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  mdp_capfs_sanitize(worker, safe, sizeof(safe));
  snprintf(name, sizeof(name), "%s-%ld-%04d%02d%02dT%02d%02d%02d.%03ldZ", safe, (long)pid,
           tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
           ts.tv_nsec / 1000000);
  if(mkdirat(manual_fd, name, 0700) < 0) {
    rc = -errno;
    md_seterr(err, errlen, "cannot make %s/manual/%s: %s", root, name, strerror(errno));
    goto out;
  }
  *dir_fd = openat(manual_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if(*dir_fd < 0) {
    rc = -errno;
    md_seterr(err, errlen, "cannot open %s/manual/%s: %s", root, name, strerror(errno));
    goto out;
  }
  snprintf(dir, dirlen, "%s/manual/%s", root, name);
  rc = 0;
out:
  if(manual_fd >= 0)
    close(manual_fd);
  if(root_fd >= 0)
    close(root_fd);
  return rc;
}
