/* Capture folders, disk space and the manifest: see capture_fs.h. */
#include "capfs.h"
#include "capfs_share.h"
#include "capfs_root.h"
#include "capfs_walk.h"
#include "md/text.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#ifdef MDP_CAPFS_TEST_HOOKS
void (*mdp_capfs_test_before_remove)(const char *name);
#endif

/* Tests only: tests/integration/server/slow_fs.c defines this to stand for
 * a hung disk (a delay before each walk to CaptureDirectory, folder made,
 * manifest written, prune and statvfs). No build of memdiag.so defines it,
 * so there it is NULL and nothing can enable it. */
extern void mdp_capfs_test_delay(const char *what) __attribute__((weak));

static void test_delay(const char *what)
{
  if(mdp_capfs_test_delay)
    mdp_capfs_test_delay(what);
}

/* ---------------------------------------------------------------- state */

/* A capture in progress: its folder stays open and is never pruned. */
typedef struct live {
  char name[256];
  int fd;
} live_t;

static pthread_mutex_t fs_lock = PTHREAD_MUTEX_INITIALIZER;
static int root_fd = -1;         /* CaptureDirectory, O_RDONLY|O_DIRECTORY */
static char root_path[PATH_MAX]; /* as opened, normalised */
static live_t *lives;            /* owned here, with each fd */
static size_t n_lives, cap_lives;

static void close_lives(void)
{
  for(size_t i = 0; i < n_lives; i++)
    close(lives[i].fd);
  free(lives);
  lives = NULL;
  n_lives = cap_lives = 0;
}

static void close_root(void)
{
  close_lives();
  if(root_fd >= 0)
    close(root_fd);
  root_fd = -1;
  root_path[0] = '\0';
}

void mdp_capfs_close(void)
{
  pthread_mutex_lock(&fs_lock);
  close_root();
  pthread_mutex_unlock(&fs_lock);
}

static live_t *find_live(const char *name)
{
  for(size_t i = 0; i < n_lives; i++)
    if(strcmp(lives[i].name, name) == 0)
      return &lives[i];
  return NULL;
}

static int add_live(const char *name, int fd)
{
  if(strlen(name) >= sizeof(lives[0].name))
    return -ENAMETOOLONG;
  if(n_lives == cap_lives) {
    size_t cap = cap_lives ? cap_lives * 2 : 8;
    live_t *n = realloc(lives, cap * sizeof(*n));
    if(!n)
      return -ENOMEM;
    lives = n;
    cap_lives = cap;
  }
  snprintf(lives[n_lives].name, sizeof(lives[n_lives].name), "%s", name);
  lives[n_lives++].fd = fd;
  return 0;
}

static void drop_live(live_t *l)
{
  close(l->fd);
  *l = lives[--n_lives];
}

/* ---------------------------------------------------------------- root */

/* Lock held. Opens path unless it is already the open root (and still
 * linked: a CaptureDirectory removed by hand is walked and made again). */
static int use_root(const char *root, char *err, size_t errlen)
{
  char norm[PATH_MAX];
  struct stat st;
  int rc = mdp_capfs_normalise(root, norm, sizeof(norm), err, errlen);
  if(rc)
    return rc;
  /* The one held is kept while it is still linked and still passes the
   * checks (root may have handed it to someone since). */
  if(root_fd >= 0 && strcmp(norm, root_path) == 0 && fstat(root_fd, &st) == 0 && st.st_nlink > 0 &&
     mdp_capfs_check_dir(root_fd, norm, err, errlen) == 0)
    return 0;
  int fd = mdp_capfs_walk(norm, err, errlen);
  if(fd < 0)
    return fd;
  if(strcmp(norm, root_path) != 0)
    close_lives(); /* folders of another root: out of reach by name */
  if(root_fd >= 0)
    close(root_fd);
  root_fd = fd;
  snprintf(root_path, sizeof(root_path), "%s", norm);
  return 0;
}

int mdp_capfs_open_root(const char *root, char *err, size_t errlen)
{
  test_delay("open");
  pthread_mutex_lock(&fs_lock);
  int rc = use_root(root, err, errlen);
  pthread_mutex_unlock(&fs_lock);
  return rc;
}

int mdp_capfs_root_fd(const char *root, char *err, size_t errlen)
{
  test_delay("open");
  pthread_mutex_lock(&fs_lock);
  int rc = use_root(root, err, errlen);
  if(!rc) {
    rc = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
    if(rc < 0) {
      rc = -errno;
      md_seterr(err, errlen, "CaptureDirectory %s: %s", root, strerror(-rc));
    }
  }
  pthread_mutex_unlock(&fs_lock);
  return rc;
}

int mdp_capfs_check_root(const char *root, char *err, size_t errlen)
{
  char norm[PATH_MAX];
  test_delay("open");
  int rc = mdp_capfs_normalise(root, norm, sizeof(norm), err, errlen);
  if(rc)
    return rc;
  int fd = mdp_capfs_walk(norm, err, errlen);
  if(fd < 0)
    return fd;
  close(fd);
  return 0;
}

int mdp_capfs_ensure_root(const char *root) { return mdp_capfs_open_root(root, NULL, 0); }

/* Lock held. The name of a capture folder given by path, into name; false
 * when dir does not lie directly inside the open root. */
static bool folder_of(const char *dir, char *name, size_t len)
{
  char norm[PATH_MAX];
  size_t rl = strlen(root_path);
  if(root_fd < 0 || mdp_capfs_normalise(dir, norm, sizeof(norm), NULL, 0) != 0)
    return false;
  if(rl < 2 || strncmp(norm, root_path, rl) != 0 || norm[rl] != '/' || strchr(norm + rl + 1, '/'))
    return false;
  return (size_t)snprintf(name, len, "%s", norm + rl + 1) < len;
}

/* ---------------------------------------------------------------- folders */

static int make_in_root(const char *name, uid_t uid, gid_t gid)
{
  int fd = openat(root_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if(fd < 0)
    return -errno;
  int rc = mdp_capfs_own_folder(fd, uid, gid);
  if(rc) {
    close(fd);
    return rc;
  }
  rc = add_live(name, fd);
  if(rc)
    close(fd);
  return rc;
}

int mdp_capfs_make_folder(const char *root, const mdp_capfs_folder *f, char *out, size_t outlen)
{
  const char *worker = f->worker;
  pid_t pid = f->pid;
  uid_t uid = f->uid;
  gid_t gid = f->gid;
  char safe[72], base[128], name[160], when[32];
  int rc = 0;
  time_t t = (time_t)(f->now_ms / 1000);
  struct tm tm;

  mdp_capfs_sanitize(worker, safe, sizeof(safe));
  gmtime_r(&t, &tm);
  strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
  snprintf(base, sizeof(base), "%s-%d-%s", safe, (int)pid, when);

  test_delay("mkdir");
  pthread_mutex_lock(&fs_lock);
  rc = use_root(root, NULL, 0);
  if(rc)
    goto out;
  /* Two captures of one worker in one second get -2, -3...: a name is
   * never reused, so nothing already there (or planted there) is trusted. */
  for(int n = 1; n < 100; n++) {
    if(n == 1)
      snprintf(name, sizeof(name), "%s", base);
    else
      snprintf(name, sizeof(name), "%s-%d", base, n);
    if(mkdirat(root_fd, name, 0700) == 0)
      break;
    if(errno != EEXIST || n == 99) {
      rc = -errno;
      goto out;
    }
  }
  rc = make_in_root(name, uid, gid);
  if(rc) {
    unlinkat(root_fd, name, AT_REMOVEDIR);
    goto out;
  }
  if((size_t)snprintf(out, outlen, "%s/%s", root_path, name) >= outlen) {
    drop_live(find_live(name));
    unlinkat(root_fd, name, AT_REMOVEDIR);
    rc = -ENAMETOOLONG;
  }
out:
  pthread_mutex_unlock(&fs_lock);
  return rc;
}

void mdp_capfs_release(const char *dir)
{
  char name[NAME_MAX + 1];
  pthread_mutex_lock(&fs_lock);
  live_t *l = folder_of(dir, name, sizeof(name)) ? find_live(name) : NULL;
  if(l)
    drop_live(l);
  pthread_mutex_unlock(&fs_lock);
}

int mdp_capfs_discard(const char *dir)
{
  char name[NAME_MAX + 1];
  int rc = -EINVAL;
  pthread_mutex_lock(&fs_lock);
  if(folder_of(dir, name, sizeof(name))) {
    live_t *l = find_live(name);
    if(l)
      drop_live(l);
    rc = unlinkat(root_fd, name, AT_REMOVEDIR) == 0 ? 0 : -errno;
  }
  pthread_mutex_unlock(&fs_lock);
  return rc;
}

int mdp_capfs_avail(const char *path, uint64_t *avail)
{
  struct statvfs vfs;
  char name[NAME_MAX + 1], norm[PATH_MAX];
  int rc = 0;

  test_delay("statvfs");
  pthread_mutex_lock(&fs_lock);
  bool ours = root_fd >= 0 && (folder_of(path, name, sizeof(name)) ||
                               (mdp_capfs_normalise(path, norm, sizeof(norm), NULL, 0) == 0 &&
                                strcmp(norm, root_path) == 0));
  if(ours ? fstatvfs(root_fd, &vfs) != 0 : statvfs(path, &vfs) != 0)
    rc = -errno;
  else
    *avail = (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize;
  pthread_mutex_unlock(&fs_lock);
  return rc;
}

/* ---------------------------------------------------------------- pruning */

typedef struct capture_dir {
  char name[256];
  uint64_t bytes;
  struct timespec when; /* from the name memdiag gave it; the mtime only for other names */
  bool prunable;        /* nothing in it that remove_folder refuses (a directory) */
} capture_dir_t;

/* Bytes on disk of one capture folder; -ENOENT when it is not a capture
 * folder (no manifest). Allocated blocks, not st_size: a worker's sparse
 * file in its own folder must not push others' captures out; each file
 * once, however many names it has (seen spans every folder). */
static int folder_bytes(const char *name, mdp_capfs_inodes *seen, capture_dir_t *c)
{
  struct stat st;
  int fd = openat(root_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

  if(fd < 0)
    return -errno;
  if(fstatat(fd, MDP_CAPFS_MANIFEST, &st, AT_SYMLINK_NOFOLLOW) != 0) {
    close(fd);
    return -ENOENT;
  }
  if(fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return -e;
  }
  if(!mdp_capfs_name_time(name, &c->when))
    c->when = st.st_mtim;
  c->bytes = 0;
  bool has_dir = false;
  mdp_capfs_tree_bytes(fd, 0, seen, &c->bytes, &has_dir);
  c->prunable = !has_dir;
  return 0;
}

/* The directory `name` below `at`, to read through its own fd (extra open
 * flags in `flags`). NULL with errno set if either step fails. */
static DIR *open_dir_at(int at, const char *name, int flags)
{
  int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | flags);
  if(fd < 0)
    return NULL;
  DIR *d = fdopendir(fd);
  if(!d) {
    int err = errno;
    close(fd);
    errno = err;
  }
  return d;
}

/* Lock held, root open. */
static int list_captures(capture_dir_t **out, size_t *n)
{
  int rc = 0;
  DIR *d = NULL;
  capture_dir_t *v = NULL;
  size_t cnt = 0, cap = 0;

  mdp_capfs_inodes seen = {NULL, 0, 0};

  d = open_dir_at(root_fd, ".", 0);
  if(!d)
    return -errno;
  for(struct dirent *e; (e = readdir(d));) {
    capture_dir_t c;
    if(e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(c.name))
      continue;
    if(folder_bytes(e->d_name, &seen, &c) != 0)
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
  free(seen.v);
  if(d)
    closedir(d);
  return rc;
}

int mdp_capfs_usage(const char *root, uint64_t *used)
{
  capture_dir_t *v = NULL;
  size_t n = 0;
  pthread_mutex_lock(&fs_lock);
  int rc = use_root(root, NULL, 0);
  if(!rc)
    rc = list_captures(&v, &n);
  pthread_mutex_unlock(&fs_lock);
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
  if(x->when.tv_sec != y->when.tv_sec)
    return x->when.tv_sec < y->when.tv_sec ? -1 : 1;
  if(x->when.tv_nsec != y->when.tv_nsec)
    return x->when.tv_nsec < y->when.tv_nsec ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Lock held, root open: everything happens below root_fd, so whatever the
 * path of CaptureDirectory has become, nothing outside it is touched. */
static int remove_folder(const char *name)
{
  int rc = 0;
  DIR *d = NULL;

  d = open_dir_at(root_fd, name, O_NOFOLLOW);
  if(!d)
    return -errno;
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
  if(unlinkat(root_fd, name, AT_REMOVEDIR) != 0)
    rc = -errno;
out:
  if(d)
    closedir(d);
  return rc;
}

static bool kept(const char *name, const char *const *keep, size_t n_keep)
{
  size_t rl = strlen(root_path);
  if(find_live(name))
    return true;
  for(size_t i = 0; i < n_keep; i++) {
    const char *k = keep[i];
    if(strncmp(k, root_path, rl) == 0 && k[rl] == '/' && strcmp(k + rl + 1, name) == 0)
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

  test_delay("prune");
  pthread_mutex_lock(&fs_lock);
  int rc = use_root(root, NULL, 0);
  if(!rc)
    rc = list_captures(&v, &n);
  if(rc)
    goto out;
  /* A folder that cannot be removed (the worker made a directory in it)
   * is not counted: others' captures are never removed to make room for
   * it, nor are later dumps refused for it. */
  for(size_t i = 0; i < n; i++)
    if(v[i].prunable || kept(v[i].name, keep, n_keep))
      total += v[i].bytes;
  qsort(v, n, sizeof(*v), by_age);
  for(size_t i = 0; i < n && total > limit; i++) {
    if(kept(v[i].name, keep, n_keep) || !v[i].prunable)
      continue;
#ifdef MDP_CAPFS_TEST_HOOKS
    if(mdp_capfs_test_before_remove)
      mdp_capfs_test_before_remove(v[i].name);
#endif
    if(remove_folder(v[i].name) != 0) {
      total -= v[i].bytes; /* it stays, and no other goes for it */
      continue;
    }
    total -= v[i].bytes;
    gone++;
  }
out:
  pthread_mutex_unlock(&fs_lock);
  if(used)
    *used = total;
  if(removed)
    *removed = gone;
  free(v);
  return rc;
}

/* ---------------------------------------------------------------- manifest */

/* Lock held. The capture's own descriptor while it runs; afterwards the
 * folder is opened below the root descriptor. *owned says whether the
 * caller closes the result. */
static int folder_fd(const char *name, bool *owned)
{
  live_t *l = find_live(name);
  *owned = l == NULL;
  if(l)
    return l->fd;
  int fd = openat(root_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  return fd >= 0 ? fd : -errno;
}

/* Lock held. The folder name of dir, opening its parent as the root when
 * it is not inside the open one (a manifest written before any folder was
 * made, as the tests do). */
static int name_in_root(const char *dir, char *name, size_t len)
{
  char parent[PATH_MAX];
  if(folder_of(dir, name, len))
    return 0;
  const char *slash = strrchr(dir, '/');
  if(!slash || slash == dir || (size_t)(slash - dir) >= sizeof(parent))
    return -EINVAL;
  memcpy(parent, dir, (size_t)(slash - dir));
  parent[slash - dir] = '\0';
  int rc = use_root(parent, NULL, 0);
  if(rc)
    return rc;
  return folder_of(dir, name, len) ? 0 : -EINVAL;
}

int mdp_capfs_folder_fd(const char *dir)
{
  char name[NAME_MAX + 1];
  bool owned = false;
  pthread_mutex_lock(&fs_lock);
  int fd = name_in_root(dir, name, sizeof(name));
  if(fd == 0) {
    fd = folder_fd(name, &owned);
    if(fd >= 0 && !owned) {
      int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
      fd = copy >= 0 ? copy : -errno;
    }
  }
  pthread_mutex_unlock(&fs_lock);
  return fd;
}

/* Writes `name` in the capture folder `dir` through `tmp`, with what fill
 * writes, and renames it into place only once it is all on disk. The
 * folder's own name goes to `folder` (the caller may need it after). The
 * folder belongs to the worker: whatever it left under our temporary name
 * goes, and O_EXCL|O_NOFOLLOW makes sure we write a fresh file. Called with
 * fs_lock held. */
/* A file replace_in_folder writes: its name, the temporary name it is
 * written under, and what fills it. */
typedef struct {
  const char *name, *tmp;
  int (*fill)(FILE *f, void *arg);
  void *arg;
} folder_file;

static int replace_in_folder(const char *dir, char *folder, size_t folder_len,
                             const folder_file *file)
{
  const char *name = file->name, *tmp = file->tmp;
  int rc, dfd = -1, fd = -1;
  bool owned = false;
  FILE *f = NULL;

  rc = name_in_root(dir, folder, folder_len);
  if(rc)
    goto out;
  dfd = folder_fd(folder, &owned);
  if(dfd < 0) {
    rc = dfd;
    goto out;
  }
  if(unlinkat(dfd, tmp, 0) != 0 && errno != ENOENT) {
    rc = -errno;
    goto out;
  }
  fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if(fd < 0 || (rc = mdp_capfs_share_new(fd)) != 0 || !(f = fdopen(fd, "w"))) {
    rc = rc ? rc : -errno;
    goto out;
  }
  fd = -1;
  rc = file->fill(f, file->arg);
  if(!rc && (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) != 0))
    rc = errno ? -errno : -EIO;
  if(fclose(f) != 0 && !rc)
    rc = -errno;
  f = NULL;
  if(!rc && renameat(dfd, tmp, dfd, name) != 0)
    rc = -errno;
out:
  if(fd >= 0)
    close(fd);
  if(rc && dfd >= 0)
    unlinkat(dfd, tmp, 0);
  if(dfd >= 0 && owned)
    close(dfd);
  return rc;
}

int mdp_capfs_write_manifest(const char *dir, const mdp_capfs_manifest_writer *w)
{
  static const char tmp[] = "." MDP_CAPFS_MANIFEST ".tmp";
  char name[NAME_MAX + 1] = "";
  int rc;

  test_delay("manifest");
  pthread_mutex_lock(&fs_lock);
  rc = replace_in_folder(
      dir, name, sizeof(name),
      &(folder_file){.name = MDP_CAPFS_MANIFEST, .tmp = tmp, .fill = w->fill, .arg = w->arg});
  /* The plan is over: the folder is an ordinary capture from now on. */
  live_t *l = w->stage == MDP_CAPFS_FINISHED && name[0] ? find_live(name) : NULL;
  if(l)
    drop_live(l);
  pthread_mutex_unlock(&fs_lock);
  return rc;
}

int mdp_capfs_write_file(const char *dir, const char *name, int (*fill)(FILE *f, void *arg),
                         void *arg)
{
  char folder[NAME_MAX + 1] = "", tmp[NAME_MAX + 1];
  int rc;

  if(snprintf(tmp, sizeof(tmp), ".%s.tmp", name) >= (int)sizeof(tmp) || strchr(name, '/'))
    return -EINVAL;
  pthread_mutex_lock(&fs_lock);
  rc = replace_in_folder(dir, folder, sizeof(folder),
                         &(folder_file){.name = name, .tmp = tmp, .fill = fill, .arg = arg});
  pthread_mutex_unlock(&fs_lock);
  return rc;
}
