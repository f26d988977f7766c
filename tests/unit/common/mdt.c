/* memdiag unit-test helpers; see mdt.h. */
#include "mdt.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

void mdt_tempdir(char *dir, size_t len, const char *stem)
{
  assert_true((size_t)snprintf(dir, len, "/tmp/md-%s-XXXXXX", stem) < len);
  assert_non_null(mkdtemp(dir));
}

char mdt_dir[64];

int mdt_dir_setup(void **state)
{
  (void)state;
  mdt_tempdir(mdt_dir, sizeof(mdt_dir), "unit");
  return 0;
}

int mdt_dir_teardown(void **state)
{
  (void)state;
  return mdt_rmtree(mdt_dir);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

int mdt_rmtree(const char *dir)
{
  return nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

void mdt_write_text(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  assert_int_equal(fclose(f), 0);
}

void mdt_write_bytes(const char *dir, const char *name, size_t bytes)
{
  char path[1200];
  if((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
    fail_msg("path too long");
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  for(size_t i = 0; i < bytes; i++)
    fputc('x', f);
  fclose(f);
}

void mdt_assert_rewrites(void (*fn)(const char *, char *, size_t), size_t outlen,
                         const char *const (*pairs)[2], size_t n)
{
  char out[256];

  assert_true(outlen <= sizeof(out));
  for(size_t i = 0; i < n; i++) {
    fn(pairs[i][0], out, outlen);
    assert_string_equal(out, pairs[i][1]);
  }
}

pid_t mdt_child_waiting(void)
{
  pid_t pid = fork();
  assert_true(pid >= 0);
  if(pid == 0) {
    pause();
    _exit(0);
  }
  return pid;
}
