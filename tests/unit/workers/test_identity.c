/* A worker's identity from the kernel: NSpid, cgroup, mount namespace. */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "workers/identity.h"

static void test_nspid_last_entry(void **state)
{
  (void)state;
  assert_int_equal(mdp_identity_parse_nspid("Name:\truby\nNSpid:\t23701\t1\nPid:\t23701\n"), 1);
  assert_int_equal(mdp_identity_parse_nspid("NSpid:\t900\t45\t7\n"), 7);
  assert_int_equal(mdp_identity_parse_nspid("Name:\tx\nNSpid:\t4242\n"), 4242);
  /* before Linux 4.1 there is no NSpid line */
  assert_int_equal(mdp_identity_parse_nspid("Name:\tx\nPid:\t12\n"), 0);
  assert_int_equal(mdp_identity_parse_nspid(""), 0);
}

static void test_cgroup_v2_line_wins(void **state)
{
  char out[256];
  (void)state;
  mdp_identity_parse_cgroup("0::/kubepods/burstable/pod1234/cri-containerd-ab12\n", out,
                            sizeof out);
  assert_string_equal(out, "/kubepods/burstable/pod1234/cri-containerd-ab12");
  mdp_identity_parse_cgroup("12:memory:/docker/abc\n0::/system.slice/docker-abc.scope\n", out,
                            sizeof out);
  assert_string_equal(out, "/system.slice/docker-abc.scope");
  /* v1 only: the first line's path */
  mdp_identity_parse_cgroup("12:memory:/docker/abc\n11:cpu:/docker/abc\n", out, sizeof out);
  assert_string_equal(out, "/docker/abc");
  /* a path with control characters is shown cleaned */
  mdp_identity_parse_cgroup("0::/evil\033[2Jname\n", out, sizeof out);
  assert_string_equal(out, "/evil?[2Jname");
  mdp_identity_parse_cgroup("", out, sizeof out);
  assert_string_equal(out, "");
}

static void test_self_on_the_host(void **state)
{
  mdp_identity id;
  char err[200];
  (void)state;
  assert_int_equal(mdp_identity_read(getpid(), &id, err, sizeof err), 0);
  assert_int_equal(id.pid, getpid());
  assert_int_equal(id.ns_pid, getpid());
  assert_int_equal(id.same_mnt_ns, 1);
  assert_true(mdp_identity_matches(&id, getpid()));
  assert_false(mdp_identity_matches(&id, getpid() + 1));
  assert_false(mdp_identity_matches(&id, 0));
}

static void test_gone_process(void **state)
{
  mdp_identity id;
  char err[200] = "";
  pid_t pid = fork();
  (void)state;
  if(pid == 0)
    _exit(0);
  waitpid(pid, NULL, 0);
  assert_int_equal(mdp_identity_read(pid, &id, err, sizeof err), -ESRCH);
  assert_non_null(strstr(err, "/status"));
}

/* A process in its own PID and mount namespace, as a container makes it:
 * the kernel maps it to PID 1 there. Needs root (CAP_SYS_ADMIN). */
static void test_process_in_a_pid_namespace(void **state)
{
  int p[2], status;
  pid_t child, inner = 0;
  mdp_identity id;
  char err[200];
  (void)state;

  assert_int_equal(pipe(p), 0);
  child = fork();
  if(child == 0) {
    pid_t g;
    if(unshare(CLONE_NEWPID | CLONE_NEWNS) < 0)
      _exit(77);
    g = fork();
    if(g == 0) {
      pause();
      _exit(0);
    }
    if(write(p[1], &g, sizeof g) != sizeof g)
      _exit(1);
    waitpid(g, NULL, 0);
    _exit(0);
  }
  close(p[1]);
  if(read(p[0], &inner, sizeof inner) != sizeof inner) {
    waitpid(child, &status, 0);
    if(WIFEXITED(status) && WEXITSTATUS(status) == 77)
      skip();
    fail_msg("the namespaced child did not report its PID");
  }
  close(p[0]);
  assert_int_equal(mdp_identity_read(inner, &id, err, sizeof err), 0);
  kill(inner, SIGKILL);
  waitpid(child, &status, 0);
  assert_int_equal(id.pid, inner);
  assert_int_equal(id.ns_pid, 1);
  assert_int_equal(id.same_mnt_ns, 0);
  assert_true(mdp_identity_matches(&id, 1));
  assert_true(mdp_identity_matches(&id, inner));
  assert_false(mdp_identity_matches(&id, 2));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_nspid_last_entry),           cmocka_unit_test(test_cgroup_v2_line_wins),
      cmocka_unit_test(test_self_on_the_host),           cmocka_unit_test(test_gone_process),
      cmocka_unit_test(test_process_in_a_pid_namespace),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
