/* pidfds for workers (issue 11, finding 2): the peer's pidfd from the
 * socket, and the fallback for kernels without SO_PEERPIDFD, which keeps a
 * pidfd only for a process that started before the connection was
 * accepted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mdt.h"
#include "workers/pidfd.h"

static void peer_of_a_socketpair_is_this_process(void **state)
{
  int sv[2];
  (void)state;
  assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  int fd = mdp_pidfd_of_peer(sv[0], getpid(), mdp_pidfd_boot_ms());
  assert_true(fd >= 0);
  assert_int_equal(mdp_pidfd_alive(fd), 1);
  assert_int_equal(mdp_pidfd_signal(fd, 0), 0);
  close(fd);
  close(sv[0]);
  close(sv[1]);
}

static void fallback_refuses_a_process_started_after_the_accept(void **state)
{
  (void)state;
  uint64_t accepted = mdp_pidfd_boot_ms();
  struct timespec pause_ms = {0, 50 * 1000 * 1000}; /* beyond the 10 ms tick */
  nanosleep(&pause_ms, NULL);
  pid_t later = mdt_child_waiting();
  /* Started after the "accept": it only holds the PID, it is not the peer. */
  assert_int_equal(mdp_pidfd_open_started_before(later, accepted), -ESRCH);
  int fd = mdp_pidfd_open_started_before(later, mdp_pidfd_boot_ms());
  assert_true(fd >= 0);
  assert_int_equal(mdp_pidfd_signal(fd, SIGKILL), 0);
  int status;
  assert_int_equal(waitpid(later, &status, 0), later);
  assert_true(WIFSIGNALED(status));
  /* Gone and reaped: nothing to signal, and no pidfd for its PID. */
  assert_int_equal(mdp_pidfd_signal(fd, SIGKILL), -ESRCH);
  assert_int_equal(mdp_pidfd_alive(fd), 0);
  assert_int_equal(mdp_pidfd_open_started_before(later, mdp_pidfd_boot_ms()), -ESRCH);
  close(fd);
  assert_int_equal(mdp_pidfd_signal(-1, 0), -EBADF);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(peer_of_a_socketpair_is_this_process),
      cmocka_unit_test(fallback_refuses_a_process_started_after_the_accept),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
