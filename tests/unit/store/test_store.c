/* The stream store: bytes in, a verified file out, or nothing at all. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/sha.h>
#include <zstd.h>

#include "store/store.h"
#include "mdt.h"

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  int done;
  mdp_store_result r;
  char name[256], error[256];
  size_t consumed;
} outcome;

static void on_consumed(void *arg, size_t n)
{
  outcome *o = arg;
  pthread_mutex_lock(&o->mu);
  o->consumed += n;
  pthread_mutex_unlock(&o->mu);
}

static void on_done(void *arg, const mdp_store_result *r)
{
  outcome *o = arg;
  pthread_mutex_lock(&o->mu);
  o->r = *r;
  snprintf(o->name, sizeof o->name, "%s", r->name ? r->name : "");
  snprintf(o->error, sizeof o->error, "%s", r->error ? r->error : "");
  o->done++;
  pthread_cond_broadcast(&o->cond);
  pthread_mutex_unlock(&o->mu);
}

static const mdp_store_events events = {.consumed = on_consumed, .done = on_done};

static void wait_done(outcome *o)
{
  pthread_mutex_lock(&o->mu);
  while(!o->done)
    pthread_cond_wait(&o->cond, &o->mu);
  pthread_mutex_unlock(&o->mu);
}

typedef struct {
  char dir[64];
  int dir_fd;
  mdp_store *store;
  outcome o;
} fixture;

static int setup(void **state)
{
  fixture *f = calloc(1, sizeof *f);
  mdt_tempdir(f->dir, sizeof f->dir, "store");
  f->dir_fd = open(f->dir, O_RDONLY | O_DIRECTORY);
  assert_true(f->dir_fd >= 0);
  assert_int_equal(mdp_store_start(&f->store, 8u << 20), 0);
  pthread_mutex_init(&f->o.mu, NULL);
  pthread_cond_init(&f->o.cond, NULL);
  *state = f;
  return 0;
}

/* Names in the folder, sorted, joined with ',' ("" when empty). */
static void listing(fixture *f, char *out, size_t outlen)
{
  struct dirent **list;
  int n = scandir(f->dir, &list, NULL, alphasort);
  out[0] = '\0';
  for(int i = 0; i < n; i++) {
    if(strcmp(list[i]->d_name, ".") && strcmp(list[i]->d_name, "..")) {
      if(out[0])
        strncat(out, ",", outlen - strlen(out) - 1);
      strncat(out, list[i]->d_name, outlen - strlen(out) - 1);
    }
    free(list[i]);
  }
  free(list);
}

static int teardown(void **state)
{
  fixture *f = *state;
  mdp_store_stop(f->store);
  close(f->dir_fd);
  assert_int_equal(mdt_rmtree(f->dir), 0);
  free(f);
  return 0;
}

static char *payload(size_t n)
{
  char *p = malloc(n);
  for(size_t i = 0; i < n; i++)
    p[i] = "{\"address\":\"0x7f\", \"type\":\"STRING\"}\n"[i % 36];
  return p;
}

static void write_in_chunks(mdp_store_stream *st, const char *p, size_t n)
{
  for(size_t off = 0; off < n; off += 100000)
    assert_int_equal(mdp_store_write(st, p + off, n - off < 100000 ? n - off : 100000), 0);
}

static int open_st(fixture *f, mdp_store_stream **st, const char *name, int level)
{
  mdp_store_target t = {.dir_fd = f->dir_fd, .name = name, .zstd_level = level};
  return mdp_store_open(f->store, st, &t, &events, &f->o);
}

static int compress(fixture *f, mdp_store_stream **st, const char *src, const char *name, int level,
                    uid_t owner)
{
  mdp_store_target t = {.dir_fd = f->dir_fd, .name = name, .zstd_level = level};
  mdp_store_source from = {.name = src, .owner = owner};
  return mdp_store_compress_file(f->store, st, &t, &from, &events, &f->o);
}

/* Streams the first `sent` bytes of p into `name` (zstd_level 0: not
 * compressed), then finishes the stream announcing n bytes and sha. */
static void stream(fixture *f, const char *name, int zstd_level, const char *p, size_t sent,
                   size_t n, const unsigned char sha[32])
{
  mdp_store_stream *st;

  assert_int_equal(open_st(f, &st, name, zstd_level), 0);
  write_in_chunks(st, p, sent);
  assert_int_equal(mdp_store_finish(st, n, sha, 32), 0);
}

static void read_file(fixture *f, const char *name, char **data, size_t *len)
{
  struct stat sb;
  int fd = openat(f->dir_fd, name, O_RDONLY);
  assert_true(fd >= 0);
  assert_int_equal(fstat(fd, &sb), 0);
  assert_int_equal(sb.st_mode & 0777, 0600);
  *len = (size_t)sb.st_size;
  *data = malloc(*len + 1);
  assert_int_equal(read(fd, *data, *len), (ssize_t)*len);
  close(fd);
}

/* The file `name` in the folder holds p (n bytes) compressed with zstd.
 * Returns the file's size. */
static size_t assert_holds_compressed(fixture *f, const char *name, const char *p, size_t n)
{
  char *stored, *back = malloc(n);
  size_t len, got;

  read_file(f, name, &stored, &len);
  got = ZSTD_decompress(back, n, stored, len);
  assert_false(ZSTD_isError(got));
  assert_int_equal(got, n);
  assert_memory_equal(back, p, n);
  free(back);
  free(stored);
  return len;
}

static void test_compressed_file_matches(void **state)
{
  fixture *f = *state;
  size_t n = 3u << 20, stored_len;
  char *p = payload(n), names[256];
  unsigned char sha[32];

  SHA256((const unsigned char *)p, n, sha);
  stream(f, "heap-1.json.zst", 1, p, n, n, sha);
  wait_done(&f->o);
  assert_int_equal(f->o.r.outcome, MDP_STORE_OK);
  assert_string_equal(f->o.name, "heap-1.json.zst");
  assert_int_equal(f->o.consumed, n);
  assert_int_equal(f->o.r.raw_bytes, n);
  listing(f, names, sizeof names);
  assert_string_equal(names, "heap-1.json.zst");

  stored_len = assert_holds_compressed(f, "heap-1.json.zst", p, n);
  assert_int_equal(stored_len, f->o.r.stored_bytes);
  assert_true(stored_len * 8 < n); /* repetitive JSON compresses well */
  free(p);
}

static void test_plain_file_when_level_0(void **state)
{
  fixture *f = *state;
  size_t n = 200000, len;
  char *p = payload(n), *stored;
  unsigned char sha[32];

  SHA256((const unsigned char *)p, n, sha);
  stream(f, "heap-1.json", 0, p, n, n, sha);
  wait_done(&f->o);
  assert_int_equal(f->o.r.outcome, MDP_STORE_OK);
  read_file(f, "heap-1.json", &stored, &len);
  assert_int_equal(len, n);
  assert_memory_equal(stored, p, n);
  free(stored);
  free(p);
}

static void expect_nothing_left(fixture *f, mdp_store_outcome outcome, const char *why)
{
  char names[256];
  wait_done(&f->o);
  assert_int_equal(f->o.r.outcome, outcome);
  if(!strstr(f->o.error, why))
    fail_msg("error '%s' does not say '%s'", f->o.error, why);
  listing(f, names, sizeof names);
  assert_string_equal(names, "");
}

/* A stream damaged on the way (`lost` bytes missing, or one bit flipped
 * after the worker hashed it) is a mismatch that leaves nothing. */
static void damaged_leaves_nothing(fixture *f, size_t lost, bool flipped, const char *why)
{
  size_t n = 500000;
  char *p = payload(n);
  unsigned char sha[32];

  SHA256((const unsigned char *)p, n, sha);
  if(flipped)
    p[1234] ^= 1;
  stream(f, "heap-2.json.zst", 1, p, n - lost, n, sha);
  expect_nothing_left(f, MDP_STORE_MISMATCH, why);
  free(p);
}

static void test_size_mismatch_leaves_nothing(void **state)
{
  damaged_leaves_nothing(*state, 1000, false, "says 500000");
}

static void test_checksum_mismatch_leaves_nothing(void **state)
{
  damaged_leaves_nothing(*state, 0, true, "another SHA-256");
}

static void test_abort_leaves_nothing(void **state)
{
  fixture *f = *state;
  char *p = payload(300000);
  mdp_store_stream *st;

  assert_int_equal(open_st(f, &st, "heap-3.json.zst", 1), 0);
  write_in_chunks(st, p, 300000);
  mdp_store_abort(st, "the worker died mid-stream");
  expect_nothing_left(f, MDP_STORE_ABORTED, "the worker died mid-stream");
  free(p);
}

static void test_stop_aborts_open_streams(void **state)
{
  fixture *f = *state;
  char *p = payload(300000), names[256];
  mdp_store_stream *st;

  assert_int_equal(open_st(f, &st, "heap-3.json.zst", 1), 0);
  write_in_chunks(st, p, 300000);
  mdp_store_stop(f->store);
  f->store = NULL;
  assert_int_equal(f->o.done, 1);
  assert_int_equal(f->o.r.outcome, MDP_STORE_ABORTED);
  assert_non_null(strstr(f->o.error, "stopping"));
  listing(f, names, sizeof names);
  assert_string_equal(names, "");
  free(p);
}

/* A file-size limit stands in for a full disk: the write fails, nothing
 * stays. (EFBIG and ENOSPC take the same path.) */
static void test_write_failure_leaves_nothing(void **state)
{
  fixture *f = *state;
  size_t n = 2u << 20;
  char *p = payload(n);
  unsigned char sha[32];
  struct rlimit old, lim = {.rlim_cur = 100000, .rlim_max = RLIM_INFINITY};

  signal(SIGXFSZ, SIG_IGN);
  getrlimit(RLIMIT_FSIZE, &old);
  lim.rlim_max = old.rlim_max;
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
  SHA256((const unsigned char *)p, n, sha);
  stream(f, "heap-1.json", 0, p, n, n, sha);
  expect_nothing_left(f, MDP_STORE_FAILED, "writing heap-1.json failed");
  setrlimit(RLIMIT_FSIZE, &old);
  free(p);
}

static void test_existing_file_is_not_replaced(void **state)
{
  fixture *f = *state;
  char *p = payload(1000), *stored;
  unsigned char sha[32];
  size_t len;
  int fd = openat(f->dir_fd, "heap-1.json", O_WRONLY | O_CREAT, 0600);

  assert_int_equal(write(fd, "theirs", 6), 6);
  close(fd);
  SHA256((const unsigned char *)p, 1000, sha);
  stream(f, "heap-1.json", 0, p, 1000, 1000, sha);
  wait_done(&f->o);
  assert_int_equal(f->o.r.outcome, MDP_STORE_FAILED);
  read_file(f, "heap-1.json", &stored, &len);
  assert_int_equal(len, 6);
  free(stored);
  free(p);
}

static void test_refuses_names_with_a_path(void **state)
{
  fixture *f = *state;
  mdp_store_stream *st;
  assert_int_equal(open_st(f, &st, "../escape", 0), -EINVAL);
  assert_int_equal(open_st(f, &st, ".hidden", 0), -EINVAL);
  assert_int_equal(open_st(f, &st, "", 0), -EINVAL);
}

/* DumpTransfer file: the worker's own file compressed, then removed. */
static void test_compress_worker_file(void **state)
{
  fixture *f = *state;
  size_t n = 1u << 20;
  char *p = payload(n), names[256];
  int fd = openat(f->dir_fd, "heap-1.json", O_WRONLY | O_CREAT | O_EXCL, 0600);
  mdp_store_stream *st;

  assert_int_equal(write(fd, p, n), (ssize_t)n);
  close(fd);
  assert_int_equal(compress(f, &st, "heap-1.json", "heap-1.json.zst", 1, getuid()), 0);
  wait_done(&f->o);
  assert_int_equal(f->o.r.outcome, MDP_STORE_OK);
  assert_int_equal(f->o.r.raw_bytes, n);
  listing(f, names, sizeof names);
  assert_string_equal(names, "heap-1.json.zst");
  assert_holds_compressed(f, "heap-1.json.zst", p, n);
  free(p);
}

/* A worker that swaps its dump for a link to a file it may not read gets
 * nothing compressed: root never reads through a link, and the link stays. */
static void test_compress_refuses_a_link(void **state)
{
  fixture *f = *state;
  char names[256];
  mdp_store_stream *st;

  assert_int_equal(symlinkat("/etc/shadow", f->dir_fd, "heap-1.json"), 0);
  assert_int_equal(compress(f, &st, "heap-1.json", "heap-1.json.zst", 1, 65534), 0);
  wait_done(&f->o);
  assert_int_equal(f->o.r.outcome, MDP_STORE_FAILED);
  listing(f, names, sizeof names);
  assert_string_equal(names, "heap-1.json");
}

/* A file someone else owns is not the worker's dump. */
static void test_compress_refuses_another_owner(void **state)
{
  fixture *f = *state;
  char names[256];
  mdp_store_stream *st;
  int fd = openat(f->dir_fd, "heap-1.json", O_WRONLY | O_CREAT | O_EXCL, 0600);

  assert_int_equal(write(fd, "{}\n", 3), 3);
  assert_int_equal(fchown(fd, 4242, 4242), 0);
  close(fd);
  assert_int_equal(compress(f, &st, "heap-1.json", "heap-1.json.zst", 1, 65534), 0);
  wait_done(&f->o);
  assert_int_equal(f->o.r.outcome, MDP_STORE_FAILED);
  assert_non_null(strstr(f->o.error, "not a regular file of its own"));
  listing(f, names, sizeof names);
  assert_string_equal(names, "heap-1.json");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_compressed_file_matches, setup, teardown),
      cmocka_unit_test_setup_teardown(test_plain_file_when_level_0, setup, teardown),
      cmocka_unit_test_setup_teardown(test_size_mismatch_leaves_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_checksum_mismatch_leaves_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_abort_leaves_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_stop_aborts_open_streams, setup, teardown),
      cmocka_unit_test_setup_teardown(test_write_failure_leaves_nothing, setup, teardown),
      cmocka_unit_test_setup_teardown(test_existing_file_is_not_replaced, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refuses_names_with_a_path, setup, teardown),
      cmocka_unit_test_setup_teardown(test_compress_worker_file, setup, teardown),
      cmocka_unit_test_setup_teardown(test_compress_refuses_a_link, setup, teardown),
      cmocka_unit_test_setup_teardown(test_compress_refuses_another_owner, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
