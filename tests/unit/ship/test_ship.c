/* CaptureCommand (plugin/capture/command.c): its keys, and real programs
 * (sh scripts written to a temp dir) run by the runner thread: the folder
 * and environment they get, exit status, timeout and the kill of what they
 * left running, output logged printable and capped, one at a time in
 * order, the user drop, exec failures, shutdown and a full queue. SIGCHLD
 * is ignored first, as collectd does. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture/capture.h"
#include "ship/ship.h"
#include "mdt.h"

#define MAX_RESULTS 80

static struct {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  char log[256 * 1024];
  size_t loglen;
  size_t log_lines;
  int n;
  struct {
    bool ok;
    char folder[256];
    char summary[512];
  } res[MAX_RESULTS];
} rec = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

static char dir[64];

static void on_log(int level, const char *line, void *ctx)
{
  (void)level;
  (void)ctx;
  pthread_mutex_lock(&rec.lock);
  int n = snprintf(rec.log + rec.loglen, sizeof(rec.log) - rec.loglen, "%s\n", line);
  if(n > 0 && (size_t)n < sizeof(rec.log) - rec.loglen)
    rec.loglen += (size_t)n;
  rec.log_lines++;
  pthread_mutex_unlock(&rec.lock);
}

static void on_finished(const mdp_ship_result_t *r, void *ctx)
{
  (void)ctx;
  pthread_mutex_lock(&rec.lock);
  if(rec.n < MAX_RESULTS) {
    rec.res[rec.n].ok = r->ok;
    snprintf(rec.res[rec.n].folder, sizeof(rec.res[0].folder), "%s", r->folder);
    snprintf(rec.res[rec.n].summary, sizeof(rec.res[0].summary), "%s", r->summary);
  }
  rec.n++;
  pthread_cond_broadcast(&rec.cond);
  pthread_mutex_unlock(&rec.lock);
}

static const mdp_ship_hooks_t hooks = {.log = on_log, .finished = on_finished};

/* Waits for n results; the bound only keeps a broken build from hanging. */
static void wait_results(int n)
{
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 120;
  pthread_mutex_lock(&rec.lock);
  while(rec.n < n)
    if(pthread_cond_timedwait(&rec.cond, &rec.lock, &until) == ETIMEDOUT)
      break;
  int got = rec.n;
  pthread_mutex_unlock(&rec.lock);
  assert_int_equal(got, n);
}

static void path(char *buf, size_t len, const char *name)
{
  snprintf(buf, len, "%s/%s", dir, name);
}

/* Writes an executable sh script; its body may use %s for the temp dir. */
static void script(const char *name, const char *body)
{
  char p[256];
  path(p, sizeof(p), name);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fprintf(f, "#!/bin/sh\n");
  fprintf(f, body, dir);
  fclose(f);
  assert_int_equal(chmod(p, 0755), 0);
}

static void start(const char *name, double timeout_s, const char *user)
{
  mdp_ship_config_t cfg;
  char err[256] = "";
  mdp_ship_config_init(&cfg);
  path(cfg.program, sizeof(cfg.program), name);
  cfg.timeout_ms = (uint64_t)(timeout_s * 1000);
  snprintf(cfg.user, sizeof(cfg.user), "%s", user ? user : "");
  assert_int_equal(mdp_ship_config_check(&cfg, err, sizeof(err)), 0);
  assert_int_equal(mdp_ship_start(&cfg, &hooks, err, sizeof(err)), 0);
}

static void submit(const char *folder, const char *worker, const char *reason, bool complete)
{
  mdp_ship_job_t j = {
      .folder = folder, .worker = worker, .pid = 4242, .reason = reason, .complete = complete};
  assert_int_equal(mdp_ship_submit(&j), 0);
}

static bool logged(const char *needle)
{
  pthread_mutex_lock(&rec.lock);
  bool found = strstr(rec.log, needle) != NULL;
  pthread_mutex_unlock(&rec.lock);
  return found;
}

#define assert_logged(s)                                                                           \
  do {                                                                                             \
    if(!logged(s))                                                                                 \
      fail_msg("log lacks \"%s\"; log:\n%s", s, rec.log);                                          \
  } while(0)

static int setup(void **state)
{
  (void)state;
  mdt_tempdir(dir, sizeof(dir), "cmd-test");
  chmod(dir, 0755); /* the user-drop test's program must be reachable */
  pthread_mutex_lock(&rec.lock);
  rec.loglen = 0;
  rec.log[0] = '\0';
  rec.log_lines = 0;
  rec.n = 0;
  pthread_mutex_unlock(&rec.lock);
  return 0;
}

static int teardown(void **state)
{
  (void)state;
  mdp_ship_stop();
  return mdt_rmtree(dir);
}

/* A process that is gone, or a zombie nobody has reaped yet. */
static bool dead(pid_t pid)
{
  char p[64], buf[512];
  snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
  FILE *f = fopen(p, "r");
  if(!f)
    return true;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *close_paren = strrchr(buf, ')');
  return close_paren && close_paren[1] == ' ' && close_paren[2] == 'Z';
}

/* SIGKILL takes effect when the process next runs: give it that moment.
 * The bound only keeps a broken build from hanging. */
static bool becomes_dead(pid_t pid)
{
  for(int i = 0; i < 400 && !dead(pid); i++)
    usleep(25 * 1000);
  return dead(pid);
}

static pid_t read_pid(const char *name)
{
  char p[256];
  path(p, sizeof(p), name);
  FILE *f = fopen(p, "r");
  int pid = 0;
  assert_non_null(f);
  assert_int_equal(fscanf(f, "%d", &pid), 1);
  fclose(f);
  return (pid_t)pid;
}

/* ---------------------------------------------------------------- tests */

static void test_keys(void **state)
{
  mdp_capture_config_t c;
  char err[256] = "", p[256];
  (void)state;
  mdp_capture_config_init(&c);
  assert_string_equal(c.command.program, "");
  assert_int_equal(c.command.timeout_ms, 3600 * 1000);
  assert_int_equal(mdp_capture_config_check(&c, err, sizeof(err)), 0);

  assert_int_equal(mdp_ship_config_set(&c.command, "capturecommand", "ship.sh", err, sizeof(err)),
                   -EINVAL);
  assert_non_null(strstr(err, "CaptureCommand \"ship.sh\" is not an absolute path"));
  assert_int_equal(
      mdp_ship_config_set(&c.command, "CaptureCommandTimeout", "90s", err, sizeof(err)), 0);
  assert_int_equal(c.command.timeout_ms, 90000);
  assert_int_equal(mdp_ship_config_set(&c.command, "CaptureCommandTimeout", "-1", err, sizeof(err)),
                   -EINVAL);
  assert_non_null(strstr(err, "CaptureCommandTimeout"));
  assert_int_equal(mdp_ship_config_set(&c.command, "CaptureCommandUser", "", err, sizeof(err)),
                   -EINVAL);

  /* a user without a command is a mistake, not silently ignored */
  assert_int_equal(
      mdp_ship_config_set(&c.command, "CaptureCommandUser", "nobody", err, sizeof(err)), 0);
  assert_int_equal(mdp_capture_config_check(&c, err, sizeof(err)), -EINVAL);
  assert_non_null(strstr(err, "CaptureCommandUser is set but CaptureCommand is not"));

  path(p, sizeof(p), "missing.sh");
  assert_int_equal(mdp_ship_config_set(&c.command, "CaptureCommand", p, err, sizeof(err)), 0);
  assert_int_equal(mdp_capture_config_check(&c, err, sizeof(err)), -EINVAL);
  assert_non_null(strstr(err, "missing.sh"));

  script("plain.sh", "exit 0\n");
  path(p, sizeof(p), "plain.sh");
  chmod(p, 0644);
  assert_int_equal(mdp_ship_config_set(&c.command, "CaptureCommand", p, err, sizeof(err)), 0);
  assert_int_equal(mdp_capture_config_check(&c, err, sizeof(err)), -EINVAL);
  assert_non_null(strstr(err, "not an executable file"));
  chmod(p, 0755);
  assert_int_equal(mdp_capture_config_check(&c, err, sizeof(err)), 0);

  assert_int_equal(
      mdp_ship_config_set(&c.command, "CaptureCommandUser", "no-such-user-md", err, sizeof(err)),
      0);
  assert_int_equal(mdp_capture_config_check(&c, err, sizeof(err)), -EINVAL);
  assert_non_null(strstr(err, "CaptureCommandUser \"no-such-user-md\": no such user"));
  assert_int_equal(mdp_ship_config_set(&c.command, "CaptureCommandUser", "65534", err, sizeof(err)),
                   0);
  assert_int_equal(mdp_capture_config_check(&c, err, sizeof(err)), 0);
}

static void test_folder_environment_and_descriptors(void **state)
{
  (void)state;
  /* a descriptor collectd holds without close-on-exec */
  int fd = open("/dev/null", O_RDONLY);
  assert_true(fd >= 0);
  assert_true(dup2(fd, 50) == 50);
  close(fd);
  setenv("MDCMD_SECRET", "collectd's environment", 1);
  script("env.sh", "echo \"arg=$1 argc=$#\"\n"
                   "echo \"worker=$MEMDIAG_WORKER pid=$MEMDIAG_PID status=$MEMDIAG_STATUS\"\n"
                   "echo \"reason=$MEMDIAG_REASON folder=$MEMDIAG_FOLDER\"\n"
                   "echo \"secret=${MDCMD_SECRET-unset} cwd=$(pwd)\"\n"
                   "echo \"path=$PATH\"\n"
                   "[ -e /proc/$$/fd/50 ] && echo leaked-fd-50\n"
                   "read line && echo \"stdin=$line\"\n"
                   "echo to-stderr >&2\n"
                   "exit 0\n");
  start("env.sh", 60, NULL);
  submit("/var/tmp/memdiag/web-4242-20261130T120000Z", "web\033[2J", "growth\nforged line", false);
  wait_results(1);
  close(50);
  unsetenv("MDCMD_SECRET");
  assert_true(rec.res[0].ok);
  assert_string_equal(rec.res[0].summary, "exited with status 0");
  assert_logged("CaptureCommand for worker web?[2J (pid 4242): arg=/var/tmp/memdiag/"
                "web-4242-20261130T120000Z argc=1");
  assert_logged(": worker=web?[2J pid=4242 status=incomplete");
  assert_logged(": reason=growth?forged line folder=/var/tmp/memdiag/web-4242-20261130T120000Z");
  assert_logged(": secret=unset cwd=/");
  assert_logged(": path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  assert_logged(": to-stderr");
  assert_false(logged("leaked-fd-50"));
  assert_false(logged("stdin="));
}

static void test_exit_status_and_signal(void **state)
{
  (void)state;
  script("exit.sh", "case \"$1\" in *three) exit 3;; *term) kill -TERM $$;; esac\n");
  start("exit.sh", 60, NULL);
  submit("/f/three", "w", "r", true);
  submit("/f/term", "w", "r", true);
  wait_results(2);
  assert_false(rec.res[0].ok);
  assert_string_equal(rec.res[0].summary, "exited with status 3");
  assert_false(rec.res[1].ok);
  assert_string_equal(rec.res[1].summary, "killed by SIGTERM");
}

static void test_timeout_kills_the_group(void **state)
{
  (void)state;
  script("slow.sh", "sleep 300 &\necho $! > %1$s/bg.pid\necho $$ > %1$s/sh.pid\n"
                    "echo started\nwait\n");
  start("slow.sh", 1, NULL);
  submit("/f/slow", "w", "r", true);
  wait_results(1);
  assert_false(rec.res[0].ok);
  assert_string_equal(rec.res[0].summary,
                      "timed out after 1 s (CaptureCommandTimeout) and was killed");
  assert_logged(": started");
  assert_true(becomes_dead(read_pid("sh.pid")));
  assert_true(becomes_dead(read_pid("bg.pid")));
}

static void test_what_it_leaves_running_is_killed(void **state)
{
  (void)state;
  script("leave.sh", "sleep 300 &\necho $! > %s/bg.pid\nexit 0\n");
  start("leave.sh", 60, NULL);
  submit("/f/leave", "w", "r", true);
  wait_results(1);
  assert_true(rec.res[0].ok);
  assert_true(becomes_dead(read_pid("bg.pid")));
}

static void test_output_printable_and_capped(void **state)
{
  char want[64];
  (void)state;
  script("loud.sh", "printf 'title \\033]0;owned\\007 end\\r\\n'\n"
                    "head -c 3000 /dev/zero | tr '\\0' x; echo\n"
                    "i=0; while [ $i -lt 300 ]; do echo line $i; i=$((i+1)); done\n");
  start("loud.sh", 60, NULL);
  submit("/f/loud", "w", "r", true);
  wait_results(1);
  assert_true(rec.res[0].ok);
  assert_logged(": title ?]0;owned? end\n");
  /* 3000 x: pieces of MDP_SHIP_LINE_MAX, then the rest */
  assert_int_equal(MDP_SHIP_LINE_MAX, 1024);
  assert_logged(
      "(pid 4242): xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
  /* 1 title + 3 pieces + 96 numbered lines logged, 204 dropped */
  assert_logged(": line 95\n");
  assert_false(logged(": line 96\n"));
  snprintf(want, sizeof(want), ": %d more output lines not logged", 300 - 96);
  assert_logged(want);
  assert_int_equal(rec.log_lines, MDP_SHIP_LOG_LINES + 1);
}

static void test_one_at_a_time_in_order(void **state)
{
  char p[256], buf[512];
  (void)state;
  script("seq.sh",
         "echo \"start $1\" >> %1$s/seq.log\nsleep 0.2\necho \"end $1\" >> %1$s/seq.log\n");
  start("seq.sh", 60, NULL);
  submit("a", "w", "r", true);
  submit("b", "w", "r", true);
  submit("c", "w", "r", true);
  wait_results(3);
  path(p, sizeof(p), "seq.log");
  FILE *f = fopen(p, "r");
  assert_non_null(f);
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  assert_string_equal(buf, "start a\nend a\nstart b\nend b\nstart c\nend c\n");
  assert_string_equal(rec.res[0].folder, "a");
  assert_string_equal(rec.res[2].folder, "c");
}

static void test_runs_as_the_configured_user(void **state)
{
  struct passwd *pw = getpwnam("nobody");
  char want[256];
  (void)state;
  if(getuid() != 0 || !pw)
    skip(); /* dropping needs root and a "nobody" user */
  script("who.sh", "echo \"uid=$(id -u) gid=$(id -g) groups=$(id -G) user=$USER home=$HOME\"\n");
  start("who.sh", 60, "nobody");
  submit("/f/who", "w", "r", true);
  wait_results(1);
  assert_true(rec.res[0].ok);
  snprintf(want, sizeof(want), ": uid=%d gid=%d groups=%d user=nobody home=%s", (int)pw->pw_uid,
           (int)pw->pw_gid, (int)pw->pw_gid, pw->pw_dir);
  assert_logged(want);
}

static void write_file(const char *p, const char *text, mode_t mode)
{
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
  assert_int_equal(chmod(p, mode), 0);
}

/* As the store leaves a worker's folder for a CaptureCommandUser that is
 * not the worker's user: the worker's uid owns it, 0750, with the user's
 * group; capture.json is root's, 0640 with that group. The command reads it
 * and the worker's own file (given the group now); a root file the worker
 * renamed in (heap-2.json), a link and a hard link to root's stay unread
 * and unchanged. */
static void test_the_user_reads_what_the_plugin_wrote(void **state)
{
  struct passwd *pw = getpwnam("nobody");
  const uid_t worker = 4243;
  char folder[256], p[300], secret[256];
  struct stat sb;
  (void)state;
  if(getuid() != 0 || !pw)
    skip();
  path(folder, sizeof(folder), "web-1-20261130T120000Z");
  assert_int_equal(mkdir(folder, 0750), 0);
  path(secret, sizeof(secret), "secret");
  write_file(secret, "secret-content\n", 0600);
  snprintf(p, sizeof(p), "%s/capture.json", folder);
  write_file(p, "manifest-content\n", 0640);
  assert_int_equal(chown(p, 0, pw->pw_gid), 0);
  snprintf(p, sizeof(p), "%s/heap-1.json", folder);
  write_file(p, "worker-content\n", 0600);
  assert_int_equal(chown(p, worker, worker), 0);
  snprintf(p, sizeof(p), "%s/heap-2.json", folder);
  write_file(p, "renamed-secret\n", 0600);
  snprintf(p, sizeof(p), "%s/link", folder);
  assert_int_equal(symlink(secret, p), 0);
  snprintf(p, sizeof(p), "%s/hard", folder);
  assert_int_equal(link(secret, p), 0);
  assert_int_equal(chown(folder, worker, pw->pw_gid), 0);

  script("read.sh", "for f in capture.json heap-1.json heap-2.json link hard; do cat \"$1/$f\"; "
                    "done; exit 0\n");
  start("read.sh", 60, "nobody");
  mdp_ship_job_t j = {
      .folder = folder, .worker = "w", .pid = 1, .reason = "r", .uid = worker, .gid = worker};
  assert_int_equal(mdp_ship_submit(&j), 0);
  wait_results(1);
  assert_true(rec.res[0].ok);
  assert_logged(": manifest-content");
  assert_logged(": worker-content");
  assert_false(logged("secret-content"));
  assert_false(logged("renamed-secret"));
  assert_false(logged("CaptureCommandUser nobody"));
  assert_int_equal(stat(secret, &sb), 0);
  assert_int_equal(sb.st_mode & 07777, 0600);
  assert_int_equal(sb.st_gid, 0);
  snprintf(p, sizeof(p), "%s/heap-2.json", folder);
  assert_int_equal(stat(p, &sb), 0);
  assert_int_equal(sb.st_mode & 07777, 0600);
  assert_int_equal(sb.st_uid, 0);
  assert_int_equal(sb.st_gid, 0);
}

/* The workers' own user as CaptureCommandUser: every run says so. */
static void test_warns_when_the_user_is_the_workers(void **state)
{
  struct passwd *pw = getpwnam("nobody");
  (void)state;
  if(getuid() != 0 || !pw)
    skip();
  script("ok.sh", "exit 0\n");
  start("ok.sh", 60, "nobody");
  mdp_ship_job_t j = {
      .folder = "/f/w", .worker = "web", .pid = 7, .reason = "r", .uid = pw->pw_uid};
  assert_int_equal(mdp_ship_submit(&j), 0);
  wait_results(1);
  assert_logged("CaptureCommandUser nobody is the user of worker web (pid 7): the worker can stop");
}

static void test_exec_failures_are_reported(void **state)
{
  char p[256];
  (void)state;
  script("gone.sh", "exit 0\n");
  start("gone.sh", 60, NULL);
  path(p, sizeof(p), "gone.sh");
  unlink(p);
  submit("/f/gone", "w", "r", true);
  wait_results(1);
  assert_false(rec.res[0].ok);
  assert_non_null(strstr(rec.res[0].summary, "gone.sh as "));
  assert_non_null(strstr(rec.res[0].summary, ": exec: No such file or directory"));
}

static void test_denied_to_the_user(void **state)
{
  (void)state;
  if(getuid() != 0 || !getpwnam("nobody"))
    skip();
  script("private.sh", "exit 0\n");
  start("private.sh", 60, "nobody");
  chmod(dir, 0700); /* now nobody cannot reach the program */
  submit("/f/private", "w", "r", true);
  wait_results(1);
  assert_false(rec.res[0].ok);
  assert_non_null(strstr(rec.res[0].summary, "as nobody: exec: Permission denied"));
}

static void test_shutdown_kills_and_drops(void **state)
{
  char p[256];
  (void)state;
  script("long.sh", "echo $$ > %s/long.pid\nexec sleep 300\n");
  start("long.sh", 600, NULL);
  submit("/f/first", "w", "r", true);
  submit("/f/second", "w", "r", true);
  path(p, sizeof(p), "long.pid");
  for(int i = 0; i < 1200 && access(p, F_OK) != 0; i++)
    usleep(50 * 1000);
  assert_int_equal(access(p, F_OK), 0);
  usleep(100 * 1000); /* the pid file is written before exec */
  mdp_ship_stop();
  wait_results(2);
  assert_string_equal(rec.res[0].summary, "stopped at the plugin's shutdown");
  assert_string_equal(rec.res[1].summary, "not run: the plugin is shutting down");
  assert_true(becomes_dead(read_pid("long.pid")));
  mdp_ship_job_t j = {.folder = "/f", .worker = "w", .pid = 1, .reason = "r"};
  assert_int_equal(mdp_ship_submit(&j), -ESHUTDOWN);
}

static void test_queue_full_and_no_command(void **state)
{
  char p[256], err[256];
  mdp_ship_config_t none;
  mdp_ship_job_t j = {.folder = "/f", .worker = "w", .pid = 1, .reason = "r"};
  (void)state;
  assert_int_equal(mdp_ship_submit(&j), -ESHUTDOWN); /* not started */
  mdp_ship_config_init(&none);
  assert_int_equal(mdp_ship_start(&none, &hooks, err, sizeof(err)), 0);
  assert_int_equal(mdp_ship_submit(&j), 0); /* nothing configured: nothing to do */
  mdp_ship_stop();
  assert_int_equal(rec.n, 0);

  script("gate.sh", "while [ ! -e %s/open ]; do sleep 0.05; done\n");
  start("gate.sh", 600, NULL);
  int accepted = 0, full = 0;
  for(int i = 0; i < MDP_SHIP_QUEUE_MAX + 5; i++) {
    int rc = mdp_ship_submit(&j);
    if(rc == 0)
      accepted++;
    else if(rc == -ENOSPC)
      full++;
  }
  /* one may already run, MDP_SHIP_QUEUE_MAX wait */
  assert_true(accepted == MDP_SHIP_QUEUE_MAX || accepted == MDP_SHIP_QUEUE_MAX + 1);
  assert_int_equal(accepted + full, MDP_SHIP_QUEUE_MAX + 5);
  path(p, sizeof(p), "open");
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fclose(f);
  wait_results(accepted);
  for(int i = 0; i < accepted; i++)
    assert_true(rec.res[i].ok);
}

int main(void)
{
  /* as collectd does: the module must still see exit statuses */
  signal(SIGCHLD, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_keys, setup, teardown),
      cmocka_unit_test_setup_teardown(test_folder_environment_and_descriptors, setup, teardown),
      cmocka_unit_test_setup_teardown(test_exit_status_and_signal, setup, teardown),
      cmocka_unit_test_setup_teardown(test_timeout_kills_the_group, setup, teardown),
      cmocka_unit_test_setup_teardown(test_what_it_leaves_running_is_killed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_output_printable_and_capped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_one_at_a_time_in_order, setup, teardown),
      cmocka_unit_test_setup_teardown(test_runs_as_the_configured_user, setup, teardown),
      cmocka_unit_test_setup_teardown(test_the_user_reads_what_the_plugin_wrote, setup, teardown),
      cmocka_unit_test_setup_teardown(test_warns_when_the_user_is_the_workers, setup, teardown),
      cmocka_unit_test_setup_teardown(test_exec_failures_are_reported, setup, teardown),
      cmocka_unit_test_setup_teardown(test_denied_to_the_user, setup, teardown),
      cmocka_unit_test_setup_teardown(test_shutdown_kills_and_drops, setup, teardown),
      cmocka_unit_test_setup_teardown(test_queue_full_and_no_command, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
