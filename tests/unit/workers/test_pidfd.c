/* pidfds for workers (issue 11, finding 2): the peer's pidfd from the
 * socket, and the fallback for kernels without SO_PEERPIDFD, which keeps a
 * pidfd only for a process that started before the connection was
 * accepted. How a process ended, told to a reader that is not its parent
 * (here its parent, which reads it the same way): running, a zombie's
 * exit code, a reaped process's status from the pidfd (Linux 6.15). */
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

static void stat_fields(void **state)
{
  char st;
  int code;
  (void)state;

  /* a comm with spaces and parentheses; exit code 9 (SIGKILL), field 52 */
  const char *zombie = "4242 (a b) (c)) Z 1 1 1 0 -1 4228172 16 0 0 0 0 0 0 0 20 0 1 0 "
                       "8996 0 0 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 "
                       "0 0 0 0 0 9\n";
  assert_int_equal(mdp_pidfd_parse_stat(zombie, &st, &code), 0);
  assert_int_equal(st, 'Z');
  assert_int_equal(code, 9);
  /* a kernel before 3.5: no field 52 */
  assert_int_equal(mdp_pidfd_parse_stat("1 (x) S 0 1 1 0 -1 0\n", &st, &code), -EINVAL);
  assert_int_equal(mdp_pidfd_parse_stat("garbage", &st, &code), -EINVAL);
}

/* Whether a process has begun to exit: a zombie, or PF_EXITING (0x4) in
 * the flags (field 9). On a cgroup v1 hierarchy the kernel shows a task
 * with PF_EXITING in the root cgroup, before it is a zombie: the plugin
 * took a worker the OOM killer was ending for one moved to the root, and
 * reported the kill at the root's charge with no limit
 * (containers_oom_memorylimit, now and then). */
static void exiting_from_stat(void **state)
{
  (void)state;
  /* running: flags 0x400100 (PF_RANDOMIZE | PF_FORKNOEXEC) */
  assert_int_equal(mdp_pidfd_parse_exiting("77 (ruby (w)) R 1 77 77 0 -1 4194560 9 0 0 0\n"), 0);
  /* exiting, not yet a zombie: 0x400104 */
  assert_int_equal(mdp_pidfd_parse_exiting("77 (ruby (w)) D 1 77 77 0 -1 4194564 9 0 0 0\n"), 1);
  assert_int_equal(mdp_pidfd_parse_exiting("77 (ruby) Z 1 77 77 0 -1 0 9\n"), 1);
  assert_int_equal(mdp_pidfd_parse_exiting("77 (ruby) S 1 77\n"), -EINVAL);
  assert_int_equal(mdp_pidfd_parse_exiting("garbage"), -EINVAL);
}

/* A child that exits as told once it reads a byte from fd. */
static pid_t child(int *ctl, int how)
{
  int p[2];
  assert_int_equal(pipe(p), 0);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if(pid == 0) {
    char c;
    close(p[1]);
    if(read(p[0], &c, 1) == 1 && how == 0)
      _exit(3);
    pause();
    _exit(0);
  }
  close(p[0]);
  *ctl = p[1];
  return pid;
}

/* Polls the exit of pid until it has a status (at most 5 s). */
static void wait_for_status(int fd, pid_t pid, mdp_exit_info *ex)
{
  struct timespec pause_ms = {0, 20 * 1000 * 1000};
  for(int i = 0; i < 250; i++) {
    mdp_pidfd_exit(fd, pid, getuid(), ex);
    if(ex->kind == MDP_EXIT_STATUS)
      return;
    nanosleep(&pause_ms, NULL);
  }
}

static void how_a_process_ended(void **state)
{
  (void)state;
  int ctl, status;
  mdp_exit_info ex;

  /* running: no exit code */
  pid_t pid = child(&ctl, 0);
  int fd = mdp_pidfd_open_started_before(pid, mdp_pidfd_boot_ms());
  assert_true(fd >= 0);
  mdp_pidfd_exit(fd, pid, getuid(), &ex);
  assert_int_equal(ex.kind, MDP_EXIT_RUNNING);
  assert_int_equal(mdp_pidfd_exiting(fd, pid), 0);
  /* exit(3), a zombie: its exit code from /proc/PID/stat */
  assert_int_equal(write(ctl, "x", 1), 1);
  wait_for_status(fd, pid, &ex);
  assert_int_equal(ex.kind, MDP_EXIT_STATUS);
  assert_true(WIFEXITED(ex.status) && WEXITSTATUS(ex.status) == 3);
  /* a zombie has begun to exit; a running process has not (above) */
  assert_int_equal(mdp_pidfd_exiting(fd, pid), 1);
  /* reaped: from the pidfd where the kernel keeps it (6.15), else unknown */
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_int_equal(mdp_pidfd_exiting(fd, pid), -ESRCH);
  mdp_pidfd_exit(fd, pid, getuid(), &ex);
  assert_true(ex.kind == MDP_EXIT_UNKNOWN ||
              (ex.kind == MDP_EXIT_STATUS && WIFEXITED(ex.status) && WEXITSTATUS(ex.status) == 3));
  close(fd);
  close(ctl);

  /* SIGKILLed: a zombie's code says so */
  pid = child(&ctl, 1);
  fd = mdp_pidfd_open_started_before(pid, mdp_pidfd_boot_ms());
  assert_true(fd >= 0);
  assert_int_equal(mdp_pidfd_signal(fd, SIGKILL), 0);
  wait_for_status(fd, pid, &ex);
  assert_int_equal(ex.kind, MDP_EXIT_STATUS);
  assert_true(WIFSIGNALED(ex.status) && WTERMSIG(ex.status) == SIGKILL);
  assert_int_equal(waitpid(pid, &status, 0), pid);
  close(fd);
  close(ctl);
  mdp_pidfd_exit(-1, pid, getuid(), &ex);
  assert_int_equal(ex.kind, MDP_EXIT_UNKNOWN);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(peer_of_a_socketpair_is_this_process),
      cmocka_unit_test(fallback_refuses_a_process_started_after_the_accept),
      cmocka_unit_test(stat_fields),
      cmocka_unit_test(exiting_from_stat),
      cmocka_unit_test(how_a_process_ended),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
