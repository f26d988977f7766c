/* memdiag plugin: folders for operators' dumps without a path.
 *
 * `memdiagctl memory_dump connection_id=N` (and allocation_trace_stop)
 * without `path` is stored by the plugin, not the worker:
 * CaptureDirectory/manual/<worker>-<pid>-<UTC>/, root's, 0700, made and
 * opened relative to descriptors so that nothing a worker or local user
 * controls can redirect it, on the fs thread (store/fsq.h): the operator's
 * request waits for the disk, the server thread does not. Manual folders
 * hold no capture.json: pruning never removes them (they are the
 * operator's).
 *
 * A manual dump has the budget of a capture's (issue 24): it is refused
 * when the space it is assumed to need (RSS x DumpSpaceFactor, a quarter of
 * that with zstd) and KeepFree are not free, and the stream may carry at
 * most twice RSS x DumpSpaceFactor and store at most what is free beyond
 * KeepFree (capture.h: mdp_capture_folder_t). */
#include "collectd/core/daemon/collectd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "store/capfs.h"
#include "store/fsq.h"
#include "md/text.h"
#include "capst.h"

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

/* One request's folder: made by work on the fs thread, handed to the
 * caller by done on the loop thread. */
typedef struct {
  mdp_fsq_job job;
  mdp_capture_folder_fn cb;
  void *arg;
  mdp_worker_id who;
  char root[MDP_CAPTURE_PATH_MAX], err[600];
  char dir[MDP_CAPTURE_PATH_MAX + 200]; /* root, "/manual/" and the name */
  int level, rc, dir_fd;
  uint64_t rss, keep_free;
  double space_factor;
  mdp_store_limits limits; /* set by manual_work */
} manual_job;

/* The dump's budget from the file system of manual_fd; -ENOSPC (err says
 * why) when the dump is assumed not to fit beside KeepFree. */
static int budget(manual_job *j, int manual_fd)
{
  struct statvfs vfs;
  mdp_plan_params_t p = {
      .space_factor = j->space_factor, .zstd_dumps = j->level > 0, .streamed = true};
  uint64_t need = mdp_plan_dump_need(&p, j->rss), avail;

  if(fstatvfs(manual_fd, &vfs) != 0) {
    int e = errno;
    md_seterr(j->err, sizeof(j->err), "statvfs %s/manual: %s", j->root, strerror(e));
    return -e;
  }
  avail = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
  if(avail < need || avail - need < j->keep_free) {
    md_seterr(j->err, sizeof(j->err),
              "not enough free space in %s for a manual dump: it needs %.1f MiB (RSS %.1f MiB x "
              "DumpSpaceFactor %.1f%s) + KeepFree %.1f MiB, %.1f MiB available",
              j->root, (double)need / 1048576, (double)j->rss / 1048576, j->space_factor,
              j->level ? " x 0.25, zstd" : "", (double)j->keep_free / 1048576,
              (double)avail / 1048576);
    return -ENOSPC;
  }
  j->limits.max_raw = (uint64_t)((double)j->rss * j->space_factor * 2);
  j->limits.max_stored = avail - j->keep_free;
  j->limits.keep_free = j->keep_free;
  return 0;
}

static void manual_work(mdp_fsq_job *job)
{
  manual_job *j = (manual_job *)job;
  char safe[96], name[160], why[512];
  const char *root = j->root;
  int root_fd = -1, manual_fd = -1, rc;
  struct timespec ts;
  struct tm tm;

  j->dir_fd = -1;
  /* The descriptor capture_fs checked, not the path again. */
  root_fd = mdp_capfs_root_fd(root, why, sizeof(why));
  if(root_fd < 0) {
    md_seterr(j->err, sizeof(j->err), "%s", why);
    rc = root_fd;
    goto out;
  }
  manual_fd = sub_dir(root_fd, "manual", why, sizeof(why));
  if(manual_fd < 0) {
    rc = manual_fd;
    md_seterr(j->err, sizeof(j->err), "CaptureDirectory %s: %s", root, why);
    goto out;
  }
  rc = budget(j, manual_fd);
  if(rc)
    goto out;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  mdp_capfs_sanitize(j->who.name, safe, sizeof(safe));
  snprintf(name, sizeof(name), "%s-%ld-%04d%02d%02dT%02d%02d%02d.%03ldZ", safe, (long)j->who.pid,
           tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
           ts.tv_nsec / 1000000);
  if(mkdirat(manual_fd, name, 0700) < 0) {
    rc = -errno;
    md_seterr(j->err, sizeof(j->err), "cannot make %s/manual/%s: %s", root, name, strerror(errno));
    goto out;
  }
  j->dir_fd = openat(manual_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if(j->dir_fd < 0) {
    rc = -errno;
    md_seterr(j->err, sizeof(j->err), "cannot open %s/manual/%s: %s", root, name, strerror(errno));
    goto out;
  }
  snprintf(j->dir, sizeof(j->dir), "%s/manual/%s", root, name);
  rc = 0;
out:
  if(manual_fd >= 0)
    close(manual_fd);
  if(root_fd >= 0)
    close(root_fd);
  j->rc = rc;
}

static void manual_done(mdp_fsq_job *job)
{
  manual_job *j = (manual_job *)job;

  mdp_capture_folder_t f = {
      .dir = j->dir, .dir_fd = j->dir_fd, .zstd_level = j->level, .limits = j->limits};
  j->cb(j->arg, j->rc, j->rc ? NULL : &f, j->err);
  if(j->dir_fd >= 0)
    close(j->dir_fd);
  free(j);
}

int mdp_capture_manual_folder(const mdp_capture_manual_t *m, char *err, size_t errlen)
{
  manual_job *j = calloc(1, sizeof(*j));
  int rc;

  if(!j) {
    md_seterr(err, errlen, "plugin out of memory");
    return -ENOMEM;
  }
  j->cb = m->cb;
  j->arg = m->arg;
  j->who = m->who;
  j->rss = m->rss;
  mdp_capst_lock();
  const mdp_capture_config_t *cfg = mdp_capst_cfg();
  snprintf(j->root, sizeof(j->root), "%s", cfg->directory);
  j->level = cfg->dump_compression ? cfg->dump_compression_level : 0;
  j->keep_free = cfg->keep_free;
  j->space_factor = cfg->dump_space_factor;
  mdp_capst_unlock();
  j->job.work = manual_work;
  j->job.done = manual_done;
  rc = mdp_fsq_submit(&j->job);
  if(rc) {
    free(j);
    md_seterr(err, errlen,
              rc == -EAGAIN ? "the capture file-system thread is busy (is the disk of "
                              "CaptureDirectory slow or hung?): try again later"
                            : "the capture module is not running");
  }
  return rc;
}
