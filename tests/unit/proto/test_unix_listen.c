/* md_unix_listen_as (issue 11, finding 8): the socket's mode and group are
 * set on the socket that was bound, never through a path someone could
 * swap. The test stands in for bind() (this executable's definition wins
 * over libc's) so that, right after the real bind, it can swap the new
 * socket for a symbolic link to a victim file: the worst moment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "md/tls.h"
#include "mdt.h"

static char dir[64], sock[128], victim[128];
static int swap_after_bind;

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
  long rc = syscall(SYS_bind, fd, sa, len);
  if(rc == 0 && swap_after_bind) {
    char moved[160];
    snprintf(moved, sizeof(moved), "%s.moved", sock);
    if(rename(sock, moved) != 0 || symlink(victim, sock) != 0)
      return -1;
  }
  return (int)rc;
}

static int setup(void **state)
{
  (void)state;
  mdt_tempdir(dir, sizeof(dir), "listen");
  snprintf(sock, sizeof(sock), "%s/plugin.sock", dir);
  snprintf(victim, sizeof(victim), "%s/victim", dir);
  mdt_write_text(victim, "");
  assert_int_equal(chmod(victim, 0600), 0);
  swap_after_bind = 0;
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  return mdt_rmtree(dir);
}

static void mode_and_group_are_set(void **state)
{
  char err[256];
  struct stat st;
  (void)state;
  long gid = geteuid() == 0 ? 65534 : (long)getegid();
  int fd = md_unix_listen_as(sock, 0660, gid, 8, err, sizeof(err));
  assert_true(fd >= 0);
  assert_int_equal(lstat(sock, &st), 0);
  assert_true(S_ISSOCK(st.st_mode));
  assert_int_equal(st.st_mode & 07777, 0660); /* exactly, whatever the umask */
  assert_int_equal((long)st.st_gid, gid);
  int c = md_unix_connect(sock, err, sizeof(err));
  assert_true(c >= 0);
  close(c);
  close(fd);
  /* A stale socket is replaced; anything else is left alone. */
  fd = md_unix_listen_as(sock, 0600, -1, 8, err, sizeof(err));
  assert_true(fd >= 0);
  close(fd);
  assert_int_equal(md_unix_listen_as(victim, 0600, -1, 8, err, sizeof(err)), MD_EINVAL);
}

static void a_socket_swapped_for_a_link_is_refused(void **state)
{
  char err[256];
  struct stat st;
  (void)state;
  swap_after_bind = 1;
  long gid = geteuid() == 0 ? 65534 : -1;
  int fd = md_unix_listen_as(sock, 0666, gid, 8, err, sizeof(err));
  swap_after_bind = 0;
  assert_true(fd < 0);
  assert_non_null(strstr(err, "was replaced"));
  assert_int_equal(stat(victim, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0600); /* the link was not followed */
  assert_int_equal(st.st_gid, getegid());
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(mode_and_group_are_set, setup, teardown),
      cmocka_unit_test_setup_teardown(a_socket_swapped_for_a_link_is_refused, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
