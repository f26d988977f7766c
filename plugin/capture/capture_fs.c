/* Capture folders, disk space and the manifest: see capture_fs.h. */
#include "capture_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

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

int mdp_capfs_ensure_root(const char *root)
{
  char path[4096];
  int rc = 0;
  size_t len = strlen(root);

  if(len == 0 || len >= sizeof(path))
    return -EINVAL;
  memcpy(path, root, len + 1);
  for(char *p = path + 1;; p++) {
    if(*p == '/' || *p == '\0') {
      char saved = *p;
      *p = '\0';
      if(mkdir(path, 0711) != 0 && errno != EEXIST) {
        rc = -errno;
        goto out;
      }
      *p = saved;
      if(!saved)
        break;
    }
  }
  struct stat st;
  if(stat(root, &st) != 0) {
    rc = -errno;
    goto out;
  }
  if(!S_ISDIR(st.st_mode))
    rc = -ENOTDIR;
out:
  return rc;
}

int mdp_capfs_make_folder(const char *root, const char *worker, pid_t pid, int64_t now_ms,
                          uid_t uid, gid_t gid, char *out, size_t outlen)
{
  char safe[72], base[128], name[160], when[32];
  int rc = 0, rootfd = -1, fd = -1;
  time_t t = (time_t)(now_ms / 1000);
  struct tm tm;

  mdp_capfs_sanitize(worker, safe, sizeof(safe));
  gmtime_r(&t, &tm);
  strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
  snprintf(base, sizeof(base), "%s-%d-%s", safe, (int)pid, when);

  rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if(rootfd < 0) {
    rc = -errno;
    goto out;
  }
  /* Two captures of one worker in one second get -2, -3...: a name is
   * never reused, so nothing already there (or planted there) is trusted. */
  for(int n = 1; n < 100; n++) {
    if(n == 1)
      snprintf(name, sizeof(name), "%s", base);
    else
      snprintf(name, sizeof(name), "%s-%d", base, n);
    if(mkdirat(rootfd, name, 0700) == 0)
      break;
    if(errno != EEXIST || n == 99) {
      rc = -errno;
      goto out;
    }
  }
  fd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if(fd < 0) {
    rc = -errno;
    goto out;
  }
  /* The umask may have narrowed mkdirat's mode; 0700 exactly is wanted. */
  if(fchmod(fd, 0700) != 0 || fchown(fd, uid, gid) != 0) {
    rc = -errno;
    goto out;
  }
  if((size_t)snprintf(out, outlen, "%s/%s", root, name) >= outlen)
    rc = -ENAMETOOLONG;
out:
  if(fd >= 0)
    close(fd);
  if(rootfd >= 0)
    close(rootfd);
  return rc;
}

int mdp_capfs_avail(const char *root, uint64_t *avail)
{
  struct statvfs vfs;
  if(statvfs(root, &vfs) != 0)
    return -errno;
  *avail = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
  return 0;
}

typedef struct capture_dir {
  char name[256];
  uint64_t bytes;
  struct timespec mtime;
} capture_dir_t;

/* Size of the regular files in one capture folder; -ENOENT when it is not
 * a capture folder (no manifest). */
static int folder_bytes(int rootfd, const char *name, uint64_t *bytes, struct timespec *mtime)
{
  int rc = 0, fd = -1;
  DIR *d = NULL;
  struct stat st;

  fd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if(fd < 0) {
    rc = -errno;
    goto out;
  }
  if(fstatat(fd, MDP_CAPFS_MANIFEST, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    rc = -ENOENT;
    goto out;
  }
  if(fstat(fd, &st) != 0) {
    rc = -errno;
    goto out;
  }
  *mtime = st.st_mtim;
  d = fdopendir(fd);
  if(!d) {
    rc = -errno;
    goto out;
  }
  fd = -1;
  *bytes = 0;
  for(struct dirent *e; (e = readdir(d));) {
    if(fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      *bytes += (uint64_t)st.st_size;
  }
out:
  if(d)
    closedir(d);
  if(fd >= 0)
    close(fd);
  return rc;
}

static int list_captures(const char *root, capture_dir_t **out, size_t *n)
{
  int rc = 0, rootfd = -1;
  DIR *d = NULL;
  capture_dir_t *v = NULL;
  size_t cnt = 0, cap = 0;

  rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if(rootfd < 0) {
    rc = -errno;
    goto out;
  }
  int scanfd = dup(rootfd);
  if(scanfd < 0) {
    rc = -errno;
    goto out;
  }
  d = fdopendir(scanfd);
  if(!d) {
    rc = -errno;
    close(scanfd);
    goto out;
  }
  for(struct dirent *e; (e = readdir(d));) {
    capture_dir_t c;
    if(e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(c.name))
      continue;
    if(folder_bytes(rootfd, e->d_name, &c.bytes, &c.mtime) != 0)
      continue;
    snprintf(c.name, sizeof(c.name), "%s", e->d_name);
    if(cnt == cap) {
      size_t ncap = cap ? cap * 2 : 16;
      capture_dir_t *nv = realloc(v, ncap * sizeof(*nv));
      if(!nv) {
        rc = -ENOMEM;
        goto out;
      }
      v = nv;
      cap = ncap;
    }
    v[cnt++] = c;
  }
  *out = v;
  *n = cnt;
  v = NULL;
out:
  free(v);
  if(d)
    closedir(d);
  if(rootfd >= 0)
    close(rootfd);
  return rc;
}

int mdp_capfs_usage(const char *root, uint64_t *used)
{
  capture_dir_t *v = NULL;
  size_t n = 0;
  int rc = list_captures(root, &v, &n);
  if(rc)
    return rc;
  *used = 0;
  for(size_t i = 0; i < n; i++)
    *used += v[i].bytes;
  free(v);
  return 0;
}

static int by_age(const void *a, const void *b)
{
  const capture_dir_t *x = a, *y = b;
  if(x->mtime.tv_sec != y->mtime.tv_sec)
    return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
  if(x->mtime.tv_nsec != y->mtime.tv_nsec)
    return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

static int remove_folder(const char *root, const char *name)
{
  int rc = 0, rootfd = -1, fd = -1;
  DIR *d = NULL;

  rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if(rootfd < 0) {
    rc = -errno;
    goto out;
  }
  fd = openat(rootfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if(fd < 0) {
    rc = -errno;
    goto out;
  }
  d = fdopendir(fd);
  if(!d) {
    rc = -errno;
    goto out;
  }
  fd = -1;
  /* All or nothing: a folder holding a directory is left whole rather than
   * emptied of its evidence and kept. */
  for(struct dirent *e; (e = readdir(d));) {
    struct stat st;
    if(strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if(fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode)) {
      rc = -ENOTEMPTY;
      goto out;
    }
  }
  rewinddir(d);
  for(struct dirent *e; (e = readdir(d));) {
    if(strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    /* unlinkat never follows a symlink: a link the worker left removes
     * the link, not its target. */
    if(unlinkat(dirfd(d), e->d_name, 0) != 0 && errno != ENOENT) {
      rc = -errno;
      goto out;
    }
  }
  if(unlinkat(rootfd, name, AT_REMOVEDIR) != 0)
    rc = -errno;
out:
  if(d)
    closedir(d);
  if(fd >= 0)
    close(fd);
  if(rootfd >= 0)
    close(rootfd);
  return rc;
}

static bool kept(const char *root, const char *name, const char *const *keep, size_t n_keep)
{
  size_t rl = strlen(root);
  for(size_t i = 0; i < n_keep; i++) {
    const char *k = keep[i];
    if(strncmp(k, root, rl) == 0 && k[rl] == '/' && strcmp(k + rl + 1, name) == 0)
      return true;
  }
  return false;
}

int mdp_capfs_prune(const char *root, uint64_t limit, const char *const *keep, size_t n_keep,
                    uint64_t *used, unsigned *removed)
{
  capture_dir_t *v = NULL;
  size_t n = 0;
  uint64_t total = 0;
  unsigned gone = 0;
  int rc = list_captures(root, &v, &n);
  if(rc)
    goto out;
  for(size_t i = 0; i < n; i++)
    total += v[i].bytes;
  qsort(v, n, sizeof(*v), by_age);
  for(size_t i = 0; i < n && total > limit; i++) {
    if(kept(root, v[i].name, keep, n_keep))
      continue;
    /* A folder that cannot be removed whole (the worker made a directory
     * in it) stays; the next oldest goes instead. */
    if(remove_folder(root, v[i].name) != 0)
      continue;
    total -= v[i].bytes;
    gone++;
  }
out:
  if(used)
    *used = total;
  if(removed)
    *removed = gone;
  free(v);
  return rc;
}

/* ---------------------------------------------------------------- manifest */

static void json_str(FILE *f, const char *s)
{
  if(!s) {
    fputs("null", f);
    return;
  }
  fputc('"', f);
  for(const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch(*p) {
    case '"': fputs("\\\"", f); break;
    case '\\': fputs("\\\\", f); break;
    case '\n': fputs("\\n", f); break;
    case '\r': fputs("\\r", f); break;
    case '\t': fputs("\\t", f); break;
    default:
      if(*p < 0x20 || *p == 0x7f)
        fprintf(f, "\\u%04x", *p);
      else
        fputc(*p, f);
    }
  }
  fputc('"', f);
}

/* Empty strings are written as null: "no error" reads better than "". */
static void json_opt(FILE *f, const char *s) { json_str(f, s && s[0] ? s : NULL); }

static void json_time(FILE *f, int64_t ms)
{
  if(ms <= 0) {
    fputs("null", f);
    return;
  }
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  char buf[32];
  gmtime_r(&t, &tm);
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  fprintf(f, "\"%s.%03dZ\"", buf, (int)(ms % 1000));
}

static const char *signal_name(int sig)
{
  static char buf[16];
  const char *abbrev = sigabbrev_np(sig);
  if(abbrev)
    return abbrev;
  snprintf(buf, sizeof(buf), "%d", sig);
  return buf;
}

static void write_step(FILE *f, const mdp_step_t *s)
{
  fputs("    {\"step\": ", f);
  json_str(f, mdp_step_name(s->kind));
  fputs(", \"file\": ", f);
  json_opt(f, s->file);
  fputs(", \"status\": ", f);
  json_str(f, mdp_step_status_name(s->status));
  fputs(", \"error\": ", f);
  json_opt(f, s->error);
  fprintf(f, ", \"bytes\": %" PRIu64, s->bytes);
  fprintf(f, ", \"duration_ms\": %.3f", (double)s->duration_us / 1000.0);
  fprintf(f, ", \"worker_pause_ms\": %.3f", (double)s->pause_us / 1000.0);
  fputs(", \"mode\": ", f);
  json_opt(f, s->mode);
  fputs(", \"note\": ", f);
  json_opt(f, s->note);
  fputs(", \"started\": ", f);
  json_time(f, s->started_ms);
  fputs(", \"finished\": ", f);
  json_time(f, s->finished_ms);
  fputs("}", f);
}

static void write_manifest(FILE *f, const mdp_manifest_info_t *in, const mdp_plan_t *plan)
{
  fputs("{\n  \"format\": \"memdiag-capture/1\",\n  \"worker\": {\"name\": ", f);
  json_str(f, in->worker);
  fprintf(f, ", \"pid\": %d, \"connection_id\": %" PRIu64 ", \"uid\": %u, \"gid\": %u},\n",
          (int)in->pid, in->connection_id, (unsigned)in->uid, (unsigned)in->gid);
  fputs("  \"directory\": ", f);
  json_str(f, in->directory);
  fputs(",\n  \"trigger\": {\"reason\": ", f);
  json_str(f, plan->reason);
  fprintf(f, ", \"manual\": %s, \"rss\": %" PRIu64 ", \"samples\": [",
          in->manual ? "true" : "false", plan->trigger_rss);
  for(size_t i = 0; i < plan->n_samples; i++)
    fprintf(f, "%s{\"time\": %.3f, \"rss\": %" PRIu64 "}", i ? ", " : "", plan->samples[i].time,
            plan->samples[i].value);
  fputs("]},\n  \"plan\": ", f);
  json_opt(f, in->plan_text);
  fputs(",\n  \"started\": ", f);
  json_time(f, plan->started_ms);
  fputs(",\n  \"finished\": ", f);
  json_time(f, plan->finished ? plan->finished_ms : 0);
  fputs(",\n  \"end\": ", f);
  json_opt(f, plan->finished ? plan->end : NULL);
  fprintf(f, ",\n  \"complete\": %s,\n", plan->finished && plan->complete ? "true" : "false");
  fputs("  \"restart\": ", f);
  if(in->restart_signal) {
    fputs("{\"signal\": ", f);
    json_str(f, signal_name(in->restart_signal));
    fputs(", \"limit_reached\": ", f);
    json_time(f, plan->limit_ms);
    fputs(", \"sent\": ", f);
    json_time(f, in->signalled_ms);
    fputs(", \"error\": ", f);
    json_opt(f, in->signal_error);
    fputs("}", f);
  } else {
    fputs("null", f);
  }
  fputs(",\n  \"steps\": [\n", f);
  for(size_t i = 0; i < plan->n_steps; i++) {
    write_step(f, &plan->steps[i]);
    fputs(i + 1 < plan->n_steps ? ",\n" : "\n", f);
  }
  fputs("  ]\n}\n", f);
}

int mdp_capfs_write_manifest(const char *dir, const mdp_manifest_info_t *info,
                             const mdp_plan_t *plan)
{
  static const char tmp[] = "." MDP_CAPFS_MANIFEST ".tmp";
  int rc = 0, dfd = -1, fd = -1;
  FILE *f = NULL;

  dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if(dfd < 0) {
    rc = -errno;
    goto out;
  }
  /* The folder belongs to the worker: whatever it left under our temporary
   * name goes, and O_EXCL|O_NOFOLLOW makes sure we write a fresh file. */
  if(unlinkat(dfd, tmp, 0) != 0 && errno != ENOENT) {
    rc = -errno;
    goto out;
  }
  fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if(fd < 0) {
    rc = -errno;
    goto out;
  }
  f = fdopen(fd, "w");
  if(!f) {
    rc = -errno;
    goto out;
  }
  fd = -1;
  write_manifest(f, info, plan);
  if(fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0) {
    rc = errno ? -errno : -EIO;
    goto out;
  }
  if(fclose(f) != 0) {
    f = NULL;
    rc = -errno;
    goto out;
  }
  f = NULL;
  if(renameat(dfd, tmp, dfd, MDP_CAPFS_MANIFEST) != 0)
    rc = -errno;
out:
  if(f)
    fclose(f);
  if(fd >= 0)
    close(fd);
  if(rc && dfd >= 0)
    unlinkat(dfd, tmp, 0);
  if(dfd >= 0)
    close(dfd);
  return rc;
}
