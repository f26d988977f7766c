/* The kernel's log read for OOM kills: which /dev/kmsg records name an OOM
 * kill of which PID and when (the lines of kernels 4.x to 6.x), which do
 * not (the reaper's line, a PID in a continuation line, other text), and
 * a read of the real log, which this process can or cannot answer from. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "workers/kmsg.h"

static int parse(const char *rec, pid_t *pid, uint64_t *ts)
{
  return mdp_kmsg_parse_oom(rec, strlen(rec), pid, ts);
}

static void oom_kill_lines(void **state)
{
  pid_t pid = 0;
  uint64_t ts = 0;
  (void)state;

  /* a memory cgroup's limit (5.x, 6.x) */
  assert_int_equal(parse("3,1043,794271511,-;Memory cgroup out of memory: Killed process 13829 "
                         "(ruby) total-vm:321440kB, anon-rss:105728kB, file-rss:9984kB, "
                         "shmem-rss:0kB, UID:0 pgtables:400kB oom_score_adj:0\n",
                         &pid, &ts),
                   1);
  assert_int_equal(pid, 13829);
  assert_true(ts == 794271511u);
  /* the whole machine's; a comm with a space */
  assert_int_equal(
      parse("3,7,12,c;Out of memory: Killed process 77 (puma: cluster) total-vm:1kB\n", &pid, &ts),
      1);
  assert_int_equal(pid, 77);
  /* 4.x's wording */
  assert_int_equal(parse("3,1,5,-;Killed process 5 (a) total-vm:1kB, anon-rss:1kB\n", &pid, &ts),
                   1);
  assert_int_equal(pid, 5);
  /* oom_kill_allocating_task */
  assert_int_equal(
      parse("3,2,5,-;Out of memory (oom_kill_allocating_task): Killed process 9 (a)\n", &pid, &ts),
      1);
  assert_int_equal(pid, 9);
}

/* Only the OOM killer's own line: not what root wrote into /dev/kmsg (its
 * facility is LOG_USER's, or any but the kernel's: echo "Killed process
 * PID (x)" > /dev/kmsg was taken for an OOM kill of PID), nor a kernel line
 * that quotes a name someone chose. */
static void lines_not_the_oom_killers(void **state)
{
  pid_t pid = 0;
  uint64_t ts = 0;
  (void)state;

  assert_int_equal(parse("12,8,9,-;Killed process 4242 (forged) total-vm:1kB\n", &pid, &ts), 0);
  assert_int_equal(
      parse("14,8,9,-;Out of memory: Killed process 4242 (x) total-vm:1kB\n", &pid, &ts), 0);
  assert_int_equal(parse("131,8,9,-;Killed process 4242 (x)\n", &pid, &ts), 0);
  assert_int_equal(parse("4,8,9,-;process 'sh' launched '/tmp/Killed process 4242 (x' with NULL "
                         "argv: empty string added\n",
                         &pid, &ts),
                   0);
  assert_int_equal(parse("4,8,9,-;cgroup: Killed process 4242 (x)\n", &pid, &ts), 0);
  assert_int_equal(pid, 0);
}

static void other_lines(void **state)
{
  pid_t pid = 0;
  uint64_t ts = 0;
  (void)state;

  assert_int_equal(
      parse("6,2,9,-;oom_reaper: reaped process 13829 (ruby), now anon-rss:0kB\n", &pid, &ts), 0);
  assert_int_equal(
      parse("6,3,9,-;oom-kill:constraint=CONSTRAINT_MEMCG,task=ruby,pid=13829,uid=0\n", &pid, &ts),
      0);
  /* only the message counts, not a continuation line */
  assert_int_equal(parse("6,4,9,-;hello\n Killed process 13829 (ruby)\n", &pid, &ts), 0);
  assert_int_equal(parse("6,5,9,-;Killed process 12x (ruby)\n", &pid, &ts), 0);
  assert_int_equal(parse("6,6,9,-;Killed process 0 (ruby)\n", &pid, &ts), 0);
  assert_int_equal(parse("6,7,9,-;Killed process 99999999999 (ruby)\n", &pid, &ts), 0);
  /* not a record */
  assert_int_equal(parse("Killed process 12 (ruby)\n", &pid, &ts), 0);
  assert_int_equal(parse("6,x,9,-;Killed process 12 (ruby)\n", &pid, &ts), 0);
  assert_int_equal(parse("", &pid, &ts), 0);
}

static void the_real_log(void **state)
{
  (void)state;
  /* this process was never OOM-killed; the log says so or cannot answer */
  int rc = mdp_kmsg_oom_killed(getpid(), 0);
  assert_true(rc == MDP_KMSG_NOT_NAMED || rc < 0);
  assert_true(mdp_kmsg_now_us() > 0);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(oom_kill_lines),
      cmocka_unit_test(other_lines),
      cmocka_unit_test(lines_not_the_oom_killers),
      cmocka_unit_test(the_real_log),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
