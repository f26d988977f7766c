/* Streamed dumps into files on a writer thread: see stream_store.h. */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <zstd.h>

#include "capfs.h"
#include "md/text.h"

typedef enum { JOB_OPEN, JOB_DATA, JOB_FINISH, JOB_ABORT, JOB_COPY } job_kind;

typedef struct job {
  struct job *next;
  mdp_store_stream *st;
  job_kind kind;
  size_t len;      /* JOB_DATA: bytes in data */
  uint64_t size;   /* JOB_FINISH */
  uint8_t sha[32]; /* JOB_FINISH */
  char why[200];   /* JOB_ABORT */
  uint8_t data[];  /* JOB_DATA */
} job;

/* Writer-thread state of one stream, except `ended` (set when the caller
 * queues its last job). */
struct mdp_store_stream {
  mdp_store *store;
  mdp_store_events events;
  void *arg;
  int dir_fd;     /* our duplicate of the folder */
  int fd;         /* the temporary file, -1 until opened or after failure */
  char name[256]; /* final name */
  char tmp[280];  /* temporary name, in the same folder */
  int level;
  ZSTD_CCtx *zc;
  EVP_MD_CTX *sha;
  uint64_t raw, stored, write_us;
  int failed; /* a write failed: the rest is consumed and dropped */
  int over;   /* it failed because a budget was crossed */
  char error[256];
  mdp_store_limits lim;
  uint64_t next_check; /* stored bytes at which free space is asked again */
  int ended;           /* caller side: finish or abort queued */
  char src[256];       /* JOB_COPY: the worker's file, removed once stored */
  uid_t src_owner;
  int src_fd;                         /* JOB_COPY: open once checked, -1 before */
  uint64_t copy_t0us;                 /* JOB_COPY: when the first slice began */
  struct mdp_store_stream *next_open; /* the store's list, under its mu */
};

struct mdp_store {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cond;
  pthread_cond_t idle; /* signalled when the queue is empty and no job runs */
  int busy;            /* the writer is running a job */
  job *head, *tail;
  size_t queued, max_queued;
  int stopping;
  mdp_store_stream *open; /* streams whose done event has not run */
};

/* Take a stream off the store's list (writer thread, before done). */
static void forget(mdp_store_stream *st)
{
  mdp_store_stream **p;
  pthread_mutex_lock(&st->store->mu);
  for(p = &st->store->open; *p; p = &(*p)->next_open)
    if(*p == st) {
      *p = st->next_open;
      break;
    }
  pthread_mutex_unlock(&st->store->mu);
}

static uint64_t now_us(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Caller holds s->mu. */
static void append(mdp_store *s, job *j)
{
  if(s->tail)
    s->tail->next = j;
  else
    s->head = j;
  s->tail = j;
}

static int push(mdp_store *s, job *j)
{
  pthread_mutex_lock(&s->mu);
  if(s->stopping && j->kind != JOB_ABORT) {
    pthread_mutex_unlock(&s->mu);
    free(j);
    return -ESHUTDOWN;
  }
  if(j->kind == JOB_DATA) {
    if(s->queued + j->len > s->max_queued) {
      pthread_mutex_unlock(&s->mu);
      free(j);
      return -ENOBUFS;
    }
    s->queued += j->len;
  }
  append(s, j);
  pthread_cond_signal(&s->cond);
  pthread_mutex_unlock(&s->mu);
  return 0;
}

/* ---- writer thread ---- */

/* Remove the temporary file, if any: nothing of a failed stream stays. */
static void discard(mdp_store_stream *st)
{
  if(st->fd >= 0) {
    close(st->fd);
    st->fd = -1;
    unlinkat(st->dir_fd, st->tmp, 0);
  }
}

/* fmt has two %s: the file's name, then detail. The first failure wins. */
static void fail(mdp_store_stream *st, const char *fmt, const char *detail)
{
  if(!st->failed) {
    st->failed = 1;
    md_seterr(st->error, sizeof st->error, fmt, st->name, detail);
    discard(st);
    /* the rest of the stream is dropped: its sender may stop now */
    if(st->events.failed)
      st->events.failed(st->arg, st->error);
    return;
  }
  discard(st);
}

static int over_budget(mdp_store_stream *st, const char *detail)
{
  fail(st, "%s is over its budget: %s", detail);
  st->over = 1;
  return -1;
}

#define ROOM_CHECK_EVERY (4u << 20)

/* After a write: within max_stored, and KeepFree still free (asked of the
 * file system again every ROOM_CHECK_EVERY bytes). */
static int check_room(mdp_store_stream *st)
{
  char detail[160];
  struct statvfs vfs;

  if(st->lim.max_stored && st->stored > st->lim.max_stored) {
    snprintf(detail, sizeof detail, "more than %llu bytes on disk (the room left for the dump)",
             (unsigned long long)st->lim.max_stored);
    return over_budget(st, detail);
  }
  if(!st->lim.keep_free || st->stored < st->next_check)
    return 0;
  st->next_check = st->stored + ROOM_CHECK_EVERY;
  if(fstatvfs(st->fd, &vfs) == 0 &&
     (uint64_t)vfs.f_bavail * (uint64_t)vfs.f_frsize < st->lim.keep_free) {
    snprintf(detail, sizeof detail,
             "the capture file system has less than KeepFree (%llu bytes) left after %llu bytes",
             (unsigned long long)st->lim.keep_free, (unsigned long long)st->stored);
    return over_budget(st, detail);
  }
  return 0;
}

static int check_raw(mdp_store_stream *st)
{
  char detail[160];
  if(!st->lim.max_raw || st->raw <= st->lim.max_raw)
    return 0;
  snprintf(detail, sizeof detail,
           "more than %llu bytes sent (the worker's RSS x DumpSpaceFactor x 2)",
           (unsigned long long)st->lim.max_raw);
  return over_budget(st, detail);
}

static int write_all(mdp_store_stream *st, const void *p, size_t n)
{
  const char *c = p;
  while(n > 0) {
    ssize_t w = write(st->fd, c, n);
    if(w < 0 && errno == EINTR)
      continue;
    if(w < 0) {
      fail(st, "writing %s failed: %s", strerror(errno));
      return -1;
    }
    c += w;
    n -= (size_t)w;
    st->stored += (uint64_t)w;
  }
  return check_room(st);
}

/* Compress (or copy) in; with end set, flush the zstd frame. */
static void put(mdp_store_stream *st, const void *data, size_t len, int end)
{
  uint8_t out[64 * 1024];
  ZSTD_inBuffer in = {data, len, 0};

  if(st->failed)
    return;
  if(!st->zc) {
    write_all(st, data, len);
    return;
  }
  for(;;) {
    ZSTD_outBuffer ob = {out, sizeof out, 0};
    size_t left = ZSTD_compressStream2(st->zc, &ob, &in, end ? ZSTD_e_end : ZSTD_e_continue);
    if(ZSTD_isError(left)) {
      fail(st, "compressing %s failed: %s", ZSTD_getErrorName(left));
      return;
    }
    if(ob.pos && write_all(st, out, ob.pos))
      return;
    if(end ? left == 0 : in.pos == in.size)
      return;
  }
}

static void do_open(mdp_store_stream *st)
{
  snprintf(st->tmp, sizeof st->tmp, ".%s.partial", st->name);
  st->fd = openat(st->dir_fd, st->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if(st->fd < 0) {
    int e = errno;
    st->tmp[0] = '\0'; /* nothing of ours to remove */
    st->failed = 1;
    md_seterr(st->error, sizeof st->error, "cannot create %s in the capture folder: %s", st->name,
              strerror(e));
    return;
  }
  int rc = mdp_capfs_share_new(st->fd); /* CaptureCommandUser's group may read it */
  if(rc)
    fail(st, "cannot give %s to CaptureCommandUser's group: %s", strerror(-rc));
  if(st->level > 0) {
    st->zc = ZSTD_createCCtx();
    if(!st->zc || ZSTD_isError(ZSTD_CCtx_setParameter(st->zc, ZSTD_c_compressionLevel, st->level)))
      fail(st, "cannot set up compression for %s: %s", "out of memory");
  }
}

static void finish_file(mdp_store_stream *st, const job *j, mdp_store_result *r)
{
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned dlen = 0;

  put(st, NULL, 0, 1);
  if(st->failed)
    return;
  EVP_DigestFinal_ex(st->sha, digest, &dlen);
  if(j->size != st->raw || dlen != sizeof j->sha || memcmp(digest, j->sha, dlen) != 0) {
    char detail[128];
    snprintf(detail, sizeof detail, "the worker sent %llu bytes and says %llu%s",
             (unsigned long long)st->raw, (unsigned long long)j->size,
             j->size == st->raw ? ", with another SHA-256" : "");
    fail(st, "%s is not what the worker sent: %s", detail);
    r->outcome = MDP_STORE_MISMATCH;
    return;
  }
  if(fsync(st->fd) < 0) {
    fail(st, "fsync of %s failed: %s", strerror(errno));
    return;
  }
  close(st->fd);
  st->fd = -1;
  /* never replace a file that is already there under the final name */
  if(renameat2(st->dir_fd, st->tmp, st->dir_fd, st->name, RENAME_NOREPLACE) < 0) {
    int e = errno;
    unlinkat(st->dir_fd, st->tmp, 0);
    st->failed = 1;
    md_seterr(st->error, sizeof st->error, "cannot name the dump %s: %s", st->name, strerror(e));
    return;
  }
  fsync(st->dir_fd);
  r->outcome = MDP_STORE_OK;
  r->name = st->name;
}

#define COPY_SLICE (4u << 20) /* bytes of a worker's file copied per job */

/* Open the worker's file and check it first: a regular file of its own
 * with one link, not sparse (its holes would hold the writer for hours). */
static int open_source(mdp_store_stream *st)
{
  static const int flags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  char detail[200];
  struct stat sb;
  int fd = openat(st->dir_fd, st->src, flags);

  if(fd < 0) {
    fail(st, "cannot read the dump for %s: %s", strerror(errno));
    return -1;
  }
  if(fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode) || sb.st_uid != st->src_owner || sb.st_nlink != 1) {
    close(fd);
    fail(st, "not compressing into %s: %s",
         "the worker's file is not a regular file of its own with one link");
    return -1;
  }
  if(sb.st_size > (off_t)COPY_SLICE && (uint64_t)sb.st_blocks * 512u < (uint64_t)sb.st_size / 2) {
    close(fd);
    snprintf(detail, sizeof detail, "the worker's file is sparse (%llu bytes long, %llu on disk)",
             (unsigned long long)sb.st_size, (unsigned long long)sb.st_blocks * 512u);
    fail(st, "not compressing into %s: %s", detail);
    st->over = 1;
    return -1;
  }
  if(st->lim.max_raw && (uint64_t)sb.st_size > st->lim.max_raw) {
    close(fd);
    snprintf(detail, sizeof detail, "the worker's file holds %llu bytes, more than %llu",
             (unsigned long long)sb.st_size, (unsigned long long)st->lim.max_raw);
    return over_budget(st, detail);
  }
  st->src_fd = fd;
  st->copy_t0us = now_us();
  return 0;
}

/* One slice of the worker's file: 1 when more is to come (the job goes to
 * the back of the queue), 0 once read (j is then the finish) or failed. */
static int copy_slice(mdp_store *s, mdp_store_stream *st, job *j)
{
  static uint8_t buf[256 * 1024]; /* writer thread only */
  EVP_MD_CTX *copy;
  size_t done = 0;
  int stopping;

  if(st->src_fd < 0 && !st->failed && open_source(st) != 0)
    goto end;
  pthread_mutex_lock(&s->mu);
  stopping = s->stopping;
  pthread_mutex_unlock(&s->mu);
  if(stopping) {
    fail(st, "compressing %s stopped: %s", "the plugin is stopping");
    goto end;
  }
  if(st->lim.max_ms && now_us() - st->copy_t0us > st->lim.max_ms * 1000u) {
    char detail[96];
    snprintf(detail, sizeof detail, "the copy took longer than %llu ms",
             (unsigned long long)st->lim.max_ms);
    over_budget(st, detail);
    goto end;
  }
  while(!st->failed && done < COPY_SLICE) {
    ssize_t n = read(st->src_fd, buf, sizeof buf);
    if(n < 0 && errno == EINTR)
      continue;
    if(n < 0) {
      fail(st, "reading the worker's dump for %s failed: %s", strerror(errno));
      break;
    }
    if(n == 0)
      goto end;
    st->raw += (uint64_t)n;
    done += (size_t)n;
    if(check_raw(st))
      break;
    EVP_DigestUpdate(st->sha, buf, (size_t)n);
    put(st, buf, (size_t)n, 0);
  }
  if(!st->failed)
    return 1;
end:
  if(st->src_fd >= 0)
    close(st->src_fd);
  st->src_fd = -1;
  j->kind = JOB_FINISH;
  j->size = st->raw;
  copy = EVP_MD_CTX_new();
  if(copy && EVP_MD_CTX_copy_ex(copy, st->sha) == 1) {
    unsigned len = 0;
    EVP_DigestFinal_ex(copy, j->sha, &len);
  }
  EVP_MD_CTX_free(copy);
  return 0;
}

static void end_stream(mdp_store_stream *st, job *j)
{
  mdp_store_result r = {.outcome = MDP_STORE_FAILED};

  if(j->kind == JOB_FINISH) {
    finish_file(st, j, &r);
    if(r.outcome == MDP_STORE_OK && st->src[0])
      unlinkat(st->dir_fd, st->src, 0);
  } else {
    r.outcome = MDP_STORE_ABORTED;
    if(!st->failed)
      md_seterr(st->error, sizeof st->error, "%s", j->why);
    st->failed = 1;
  }
  if(st->failed && r.outcome == MDP_STORE_OK)
    r.outcome = MDP_STORE_FAILED;
  if(st->over && r.outcome != MDP_STORE_OK)
    r.outcome = MDP_STORE_OVER_BUDGET;
  discard(st);
  r.raw_bytes = st->raw;
  r.stored_bytes = st->stored;
  r.write_us = st->write_us;
  r.error = r.outcome == MDP_STORE_OK ? NULL : st->error;
  forget(st);
  st->events.done(st->arg, &r);
  ZSTD_freeCCtx(st->zc);
  EVP_MD_CTX_free(st->sha);
  close(st->dir_fd);
  free(st);
}

/* Returns 1 when the job was put back in the queue (a copy goes on). */
static int run_job(mdp_store *s, job *j)
{
  mdp_store_stream *st = j->st;
  uint64_t t0 = now_us();

  switch(j->kind) {
  case JOB_OPEN: do_open(st); break;
  case JOB_DATA:
    st->raw += j->len;
    if(!st->failed && check_raw(st) == 0) {
      EVP_DigestUpdate(st->sha, j->data, j->len);
      put(st, j->data, j->len, 0);
    }
    pthread_mutex_lock(&s->mu);
    s->queued -= j->len;
    pthread_mutex_unlock(&s->mu);
    st->write_us += now_us() - t0;
    st->events.consumed(st->arg, j->len);
    return 0;
  case JOB_COPY:
    if(copy_slice(s, st, j)) {
      st->write_us += now_us() - t0;
      j->next = NULL;
      pthread_mutex_lock(&s->mu);
      append(s, j);
      pthread_mutex_unlock(&s->mu);
      return 1;
    }
    /* the file is read (or the stream failed): it ends */
    end_stream(st, j);
    return 0;
  case JOB_FINISH:
  case JOB_ABORT: end_stream(st, j); return 0;
  }
  st->write_us += now_us() - t0;
  return 0;
}

static void *writer_main(void *arg)
{
  mdp_store *s = arg;

  pthread_mutex_lock(&s->mu);
  for(;;) {
    job *j;
    while(!s->head && !s->stopping)
      pthread_cond_wait(&s->cond, &s->mu);
    j = s->head;
    if(!j)
      break; /* stopping and nothing left */
    s->head = j->next;
    if(!s->head)
      s->tail = NULL;
    s->busy = 1;
    pthread_mutex_unlock(&s->mu);
    if(!run_job(s, j))
      free(j);
    pthread_mutex_lock(&s->mu);
    s->busy = 0;
    if(!s->head)
      pthread_cond_broadcast(&s->idle);
  }
  pthread_mutex_unlock(&s->mu);
  return NULL;
}

/* ---- caller side ---- */
int mdp_store_start(mdp_store **out, size_t max_queued)
{
  mdp_store *s = calloc(1, sizeof *s);
  int rc;

  *out = NULL;
  if(!s)
    return -ENOMEM;
  s->max_queued = max_queued;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cond, NULL);
  pthread_cond_init(&s->idle, NULL);
  rc = pthread_create(&s->thread, NULL, writer_main, s);
  if(rc) {
    pthread_cond_destroy(&s->idle);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mu);
    free(s);
    return -rc;
  }
  *out = s;
  return 0;
}

int mdp_store_open(mdp_store *s, mdp_store_stream **out, const mdp_store_target *t,
                   const mdp_store_events *events, void *arg)
{
  mdp_store_stream *st;
  const char *name = t ? t->name : NULL;
  job *j;
  int rc;

  *out = NULL;
  if(!s || !t || !name || !*name || strchr(name, '/') || name[0] == '.' ||
     strlen(name) >= sizeof st->name || !events || !events->done || !events->consumed)
    return -EINVAL;
  st = calloc(1, sizeof *st);
  j = calloc(1, sizeof *j);
  if(!st || !j) {
    free(st);
    free(j);
    return -ENOMEM;
  }
  st->store = s;
  st->events = *events;
  st->arg = arg;
  st->fd = -1;
  st->src_fd = -1;
  st->level = t->zstd_level;
  st->lim = t->limits;
  st->next_check = ROOM_CHECK_EVERY;
  snprintf(st->name, sizeof st->name, "%s", name);
  st->sha = EVP_MD_CTX_new();
  st->dir_fd = fcntl(t->dir_fd, F_DUPFD_CLOEXEC, 0);
  if(!st->sha || st->dir_fd < 0 || EVP_DigestInit_ex(st->sha, EVP_sha256(), NULL) != 1) {
    rc = st->dir_fd < 0 ? -errno : -ENOMEM;
    if(st->dir_fd >= 0)
      close(st->dir_fd);
    EVP_MD_CTX_free(st->sha);
    free(st);
    free(j);
    return rc;
  }
  j->st = st;
  j->kind = JOB_OPEN;
  pthread_mutex_lock(&s->mu);
  st->next_open = s->open;
  s->open = st;
  pthread_mutex_unlock(&s->mu);
  rc = push(s, j);
  if(rc) {
    forget(st);
    close(st->dir_fd);
    EVP_MD_CTX_free(st->sha);
    free(st);
    return rc;
  }
  *out = st;
  return 0;
}

int mdp_store_write(mdp_store_stream *st, const void *data, size_t len)
{
  job *j;
  if(!st || st->ended)
    return -EINVAL;
  if(len == 0)
    return 0;
  j = malloc(sizeof *j + len);
  if(!j)
    return -ENOMEM;
  memset(j, 0, sizeof *j);
  j->st = st;
  j->kind = JOB_DATA;
  j->len = len;
  memcpy(j->data, data, len);
  return push(st->store, j);
}

static int push_end(mdp_store_stream *st, job *j)
{
  st->ended = 1;
  j->st = st;
  /* an end is always accepted: the stream must end to free itself */
  pthread_mutex_lock(&st->store->mu);
  append(st->store, j);
  pthread_cond_signal(&st->store->cond);
  pthread_mutex_unlock(&st->store->mu);
  return 0;
}

int mdp_store_finish(mdp_store_stream *st, uint64_t size, const uint8_t *sha256, size_t sha256_len)
{
  job *j;
  if(!st || st->ended)
    return -EINVAL;
  j = calloc(1, sizeof *j);
  if(!j) {
    mdp_store_abort(st, "out of memory");
    return -ENOMEM;
  }
  j->kind = JOB_FINISH;
  j->size = size;
  if(sha256 && sha256_len == sizeof j->sha)
    memcpy(j->sha, sha256, sizeof j->sha);
  else
    j->size = ~size; /* no usable checksum: the check fails */
  return push_end(st, j);
}

void mdp_store_abort(mdp_store_stream *st, const char *why)
{
  job *j;
  if(!st || st->ended)
    return;
  /* retry until memory is back: the stream must end exactly once */
  while(!(j = calloc(1, sizeof *j)))
    usleep(1000);
  j->kind = JOB_ABORT;
  md_seterr(j->why, sizeof j->why, "%s", why ? why : "aborted");
  push_end(st, j);
}

void mdp_store_stop(mdp_store *s)
{
  mdp_store_stream *st;
  if(!s)
    return;
  /* Streams the caller never ended end here. The caller's thread is the
   * one stopping, so no other call on these streams can race. */
  pthread_mutex_lock(&s->mu);
  s->stopping = 1;
  for(st = s->open; st; st = st->next_open)
    if(!st->ended) {
      job *j = calloc(1, sizeof *j);
      if(!j)
        continue; /* out of memory: this stream cannot end, its temporary file stays */
      st->ended = 1;
      j->st = st;
      j->kind = JOB_ABORT;
      md_seterr(j->why, sizeof j->why, "the plugin is stopping");
      append(s, j);
    }
  pthread_cond_signal(&s->cond);
  pthread_mutex_unlock(&s->mu);
  pthread_join(s->thread, NULL);
  pthread_cond_destroy(&s->idle);
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

void mdp_store_wait_idle(mdp_store *s)
{
  pthread_mutex_lock(&s->mu);
  while(s->head || s->busy)
    pthread_cond_wait(&s->idle, &s->mu);
  pthread_mutex_unlock(&s->mu);
}

int mdp_store_compress_file(mdp_store *s, mdp_store_stream **out, const mdp_store_target *t,
                            const mdp_store_source *from, const mdp_store_events *events, void *arg)
{
  const char *src = from ? from->name : NULL;
  job *j;
  int rc;

  if(!t || !src || !*src || strchr(src, '/') || strlen(src) >= sizeof((*out)->src) || !t->name ||
     !strcmp(src, t->name))
    return -EINVAL;
  rc = mdp_store_open(s, out, t, events, arg);
  if(rc)
    return rc;
  snprintf((*out)->src, sizeof((*out)->src), "%s", src);
  (*out)->src_owner = from->owner;
  j = calloc(1, sizeof *j);
  if(!j) {
    mdp_store_abort(*out, "out of memory");
    return 0;
  }
  j->kind = JOB_COPY;
  return push_end(*out, j);
}
