/* The worker registry: connection IDs, names as they reach logs and
 * collectd, references that outlive removal, and capabilities. Workers are
 * this test process itself (its /proc files are real). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "config.h"
#include "mdt.h"
#include "workers/registry.h"

static mdp_worker_hello hello(const char *name)
{
  mdp_worker_hello h = {
      .pid = getpid(),
      .ppid = getppid(),
      .uid = getuid(),
      .gid = getgid(),
      .name = name,
      .runtime = "ruby",
      .runtime_version = "3.3.0",
      .dump_directory = "/var/tmp/dumps",
      .pidfd = -1,
  };
  return h;
}

static uint64_t add(const mdp_worker_hello *h)
{
  uint64_t id = 0;
  int proc_err = 1;
  assert_int_equal(mdp_registry_add(h, &id, &proc_err), 0);
  assert_int_equal(proc_err, 0);
  assert_true(id > 0);
  return id;
}

static int setup(void **state)
{
  mdp_detector_config d;
  (void)state;
  mdp_detector_config_init(&d);
  return mdp_registry_init(&d, MDP_MEM_RSS);
}

static int teardown(void **state)
{
  (void)state;
  mdp_registry_destroy();
  return 0;
}

static void ids_grow_and_are_never_reused(void **state)
{
  mdp_worker_hello h = hello("web");
  uint64_t a, b, c;
  mdp_worker_info info;

  (void)state;
  a = add(&h);
  b = add(&h);
  assert_int_equal(b, a + 1);
  assert_int_equal(mdp_registry_remove(b), 0);
  assert_int_equal(mdp_registry_remove(b), -ENOENT);
  c = add(&h);
  assert_int_equal(c, b + 1); /* b is gone for good */
  assert_int_equal(mdp_registry_info(b, &info), -ENOENT);
  assert_int_equal(mdp_registry_info(c, &info), 0);
  assert_int_equal(info.who.connection_id, c);
  assert_int_equal(mdp_registry_remove(0), -ENOENT);
}

static void hello_fields_are_copied(void **state)
{
  char name[] = "sidekiq";
  mdp_worker_hello h = hello(name);
  mdp_worker_info info;
  uint64_t id;

  (void)state;
  id = add(&h);
  /* The hello is borrowed: the registry keeps its own copies. */
  memset(name, 'x', sizeof(name) - 1);
  assert_int_equal(mdp_registry_info(id, &info), 0);
  assert_string_equal(info.who.name, "sidekiq");
  assert_string_equal(info.instance, "sidekiq");
  assert_string_equal(info.runtime, "ruby");
  assert_string_equal(info.runtime_version, "3.3.0");
  assert_string_equal(info.dump_directory, "/var/tmp/dumps");
  assert_int_equal(info.who.pid, getpid());
  assert_int_equal(info.who.uid, getuid());
  assert_true(info.connected_at > 0);
  /* sampled at registration (this process), not at the next interval */
  assert_true(info.sampled_at > 0);
  assert_true(info.last.rss > 0);
}

static void peer_names_are_made_safe(void **state)
{
  mdp_worker_hello h = hello("evil\n\x1b[31mname\x7f");
  mdp_worker_info info;
  uint64_t id;
  char longname[300];

  (void)state;
  id = add(&h);
  assert_int_equal(mdp_registry_info(id, &info), 0);
  /* Logs and notifications: control characters shown as '?'. */
  assert_string_equal(info.who.name, "evil??[31mname?");
  /* collectd's plugin_instance: only letters, digits and "._-". */
  assert_string_equal(info.instance, "evil___31mname_");

  h = hello("");
  id = add(&h);
  assert_int_equal(mdp_registry_info(id, &info), 0);
  assert_string_equal(info.who.name, "worker");

  memset(longname, 'n', sizeof(longname) - 1);
  longname[sizeof(longname) - 1] = '\0';
  h = hello(longname);
  id = add(&h);
  assert_int_equal(mdp_registry_info(id, &info), 0);
  assert_int_equal(strlen(info.who.name), sizeof(info.who.name) - 1);
  assert_true(strlen(info.instance) < sizeof(info.instance));
}

static void same_name_instances_differ_by_pid(void **state)
{
  mdp_worker_hello h = hello("puma");
  mdp_worker_info a, b, c;
  uint64_t ia, ib, ic;
  char want[64];

  (void)state;
  ia = add(&h);
  ib = add(&h);
  assert_int_equal(mdp_registry_info(ia, &a), 0);
  assert_int_equal(mdp_registry_info(ib, &b), 0);
  snprintf(want, sizeof(want), "puma-%ld", (long)getpid());
  assert_string_equal(a.instance, "puma");
  assert_string_equal(b.instance, want);
  /* Once the first is gone, its series name is free again. */
  assert_int_equal(mdp_registry_remove(ia), 0);
  assert_int_equal(mdp_registry_remove(ib), 0);
  ic = add(&h);
  assert_int_equal(mdp_registry_info(ic, &c), 0);
  assert_string_equal(c.instance, "puma");
}

static void unreadable_proc_is_reported(void **state)
{
  mdp_worker_hello h = hello("ghost");
  uint64_t id = 0;
  int proc_err = 0;

  (void)state;
  h.pid = INT_MAX; /* above any pid_max: no such /proc entry */
  assert_int_equal(mdp_registry_add(&h, &id, &proc_err), 0);
  assert_int_equal(proc_err, -ENOENT);
  /* Registered all the same: it is listed and can still be asked to dump. */
  assert_true(id > 0);
  assert_int_equal(mdp_registry_remove(id), 0);
}

/* Issue 11, finding 2: signals go through the pidfd of the process that
 * registered, so a process that exited is never confused with whoever holds
 * its PID next, and a worker whose connecting process is already gone is
 * not registered at all. */
static void signals_go_through_the_pidfd(void **state)
{
  mdp_worker_hello h = hello("signalled");
  uint64_t id = 0;
  int proc_err = 0, status = 0;

  (void)state;
  pid_t live = mdt_child_waiting();
  h.pid = live;
  h.pidfd = (int)syscall(SYS_pidfd_open, live, 0);
  assert_true(h.pidfd >= 0);
  assert_int_equal(mdp_registry_add(&h, &id, &proc_err), 0);
  assert_int_equal(mdp_registry_signal(id, SIGUSR1), 0);
  assert_int_equal(waitpid(live, &status, 0), live);
  assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR1);
  /* Exited and reaped: the pidfd says so, and nobody is signalled. */
  assert_int_equal(mdp_registry_signal(id, SIGUSR1), -ESRCH);
  assert_int_equal(mdp_registry_signal(id + 1000, SIGUSR1), -ENOENT);
  assert_int_equal(mdp_registry_remove(id), 0);

  /* A process that exited before its hello registers nobody. */
  pid_t gone = mdt_child_waiting();
  h.pid = gone;
  h.pidfd = (int)syscall(SYS_pidfd_open, gone, 0);
  assert_true(h.pidfd >= 0);
  kill(gone, SIGKILL);
  assert_int_equal(waitpid(gone, &status, 0), gone);
  assert_int_equal(mdp_registry_add(&h, &id, &proc_err), -ESRCH);

  /* No pidfd (a kernel without them): nothing is sent by PID. */
  h = hello("no-pidfd");
  assert_int_equal(mdp_registry_add(&h, &id, &proc_err), 0);
  assert_int_equal(mdp_registry_signal(id, 0), -EBADF);
  assert_int_equal(mdp_registry_remove(id), 0);
}

static void capabilities(void **state)
{
  char *caps[] = {"memory_dump", "thread_dump"};
  mdp_worker_hello h = hello("w");
  mdp_worker_info info;
  uint64_t id;

  (void)state;
  h.capabilities = caps;
  h.n_capabilities = 2;
  id = add(&h);
  assert_int_equal(mdp_registry_can(id, "memory_dump"), 1);
  assert_int_equal(mdp_registry_can(id, "thread_dump"), 1);
  assert_int_equal(mdp_registry_can(id, "scheduler_dump"), 0);
  assert_int_equal(mdp_registry_can(id, "memory_dum"), 0);
  assert_int_equal(mdp_registry_can(id + 1000, "memory_dump"), 0);
  assert_int_equal(mdp_registry_info(id, &info), 0);
  assert_int_equal(info.n_capabilities, 2);
}

static void snapshot_outlives_removal(void **state)
{
  mdp_worker_hello h = hello("a");
  mdp_worker **w;
  uint64_t ids[3];
  size_t n;
  mdp_sampler_reading s = {.rss = 1000, .pss = 0, .private_bytes = 0, .swap = 0}, got;
  double t;
  char text[96];

  (void)state;
  for(int i = 0; i < 3; i++)
    ids[i] = add(&h);
  n = mdp_registry_snapshot(&w);
  assert_int_equal(n, 3);
  for(size_t i = 0; i < n; i++)
    assert_int_equal(w[i]->who.connection_id, ids[i]); /* connection ID order */
  /* Removed while the read thread still holds it: the entry stays valid
   * (valgrind would see a use after free otherwise). */
  assert_int_equal(mdp_registry_remove(ids[1]), 0);
  mdp_registry_detector_text(w[1], text, sizeof(text));
  assert_string_equal(text, "not sampled yet");
  mdp_registry_store(w[1], &s, 1790000000.5, "growing");
  mdp_registry_last(w[1], &got, &t);
  assert_int_equal(got.rss, 1000);
  assert_true(t == 1790000000.5);
  mdp_registry_detector_text(w[1], text, sizeof(text));
  assert_string_equal(text, "growing");
  assert_string_equal(w[1]->who.name, "a");
  mdp_registry_release(w, n);

  n = mdp_registry_snapshot(&w);
  assert_int_equal(n, 2);
  assert_int_equal(w[0]->who.connection_id, ids[0]);
  assert_int_equal(w[1]->who.connection_id, ids[2]);
  mdp_registry_release(w, n);
}

static void sanitise(void **state)
{
  static const char *const names[][2] = {
      {"web.1_a-b", "web.1_a"}, /* cut to fit 8 bytes */
      {"a/b c", "a_b_c"},
      {"", "worker"},
      {"../..", ".._.."},
  };
  (void)state;
  mdt_assert_rewrites(mdp_registry_sanitise, 8, names, sizeof(names) / sizeof(names[0]));
}

/* The server thread adds and removes while the read thread snapshots. */
static void *churn(void *arg)
{
  mdp_worker_hello h = hello("churn");
  (void)arg;
  for(int i = 0; i < 2000; i++) {
    uint64_t id;
    int proc_err;
    if(mdp_registry_add(&h, &id, &proc_err) == 0)
      mdp_registry_remove(id);
  }
  return NULL;
}

static void concurrent_snapshots(void **state)
{
  pthread_t t;
  mdp_worker_hello h = hello("steady");
  uint64_t steady = add(&h);

  (void)state;
  assert_int_equal(pthread_create(&t, NULL, churn, NULL), 0);
  for(int i = 0; i < 2000; i++) {
    mdp_worker **w;
    size_t n = mdp_registry_snapshot(&w), found = 0;
    assert_true(n != (size_t)-1);
    for(size_t k = 0; k < n; k++) {
      assert_true(k == 0 || w[k - 1]->who.connection_id < w[k]->who.connection_id);
      found += w[k]->who.connection_id == steady;
      assert_true(strcmp(w[k]->who.name, "churn") == 0 || strcmp(w[k]->who.name, "steady") == 0);
    }
    assert_int_equal(found, 1);
    mdp_registry_release(w, n);
  }
  pthread_join(t, NULL);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(ids_grow_and_are_never_reused, setup, teardown),
      cmocka_unit_test_setup_teardown(hello_fields_are_copied, setup, teardown),
      cmocka_unit_test_setup_teardown(peer_names_are_made_safe, setup, teardown),
      cmocka_unit_test_setup_teardown(same_name_instances_differ_by_pid, setup, teardown),
      cmocka_unit_test_setup_teardown(unreadable_proc_is_reported, setup, teardown),
      cmocka_unit_test_setup_teardown(capabilities, setup, teardown),
      cmocka_unit_test_setup_teardown(signals_go_through_the_pidfd, setup, teardown),
      cmocka_unit_test_setup_teardown(snapshot_outlives_removal, setup, teardown),
      cmocka_unit_test(sanitise),
      cmocka_unit_test_setup_teardown(concurrent_snapshots, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
