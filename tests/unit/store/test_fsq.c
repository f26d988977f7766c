/* The capture module's file-system thread (capture/fs_queue.c) and the
 * runs' jobs on it (capture/run_fs.c), with the real thread, a real loop
 * turned by the test and a real CaptureDirectory under /tmp: jobs run in
 * order and answer on the loop; new work is refused past MDP_FSQ_MAX while
 * a begun capture's work always gets in; manifest writes are coalesced to
 * the newest state and never lost; a folder job makes, opens and (when its
 * run is gone) discards the capture folder. collectd's stand-ins
 * (plugin_thread_create, plugin_log) come from the fuzz harness's library.
 *
 * The disk is made to hang with capture_fs's test hook
 * (mdp_capfs_test_delay, defined here): while `hold` is set, every call the
 * fs thread makes into capture_fs waits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/capfs.h"
#include "store/fsq.h"
#include "capture/run.h"
#include "loop/loop.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int hold;                 /* the hook waits while set */
static unsigned held, manifests; /* calls that waited; manifest writes seen */

void mdp_capfs_test_delay(const char *what);

void mdp_capfs_test_delay(const char *what)
{
  pthread_mutex_lock(&mu);
  if(!strcmp(what, "manifest"))
    manifests++;
  if(hold) {
    held++;
    pthread_cond_broadcast(&cv);
    while(hold)
      pthread_cond_wait(&cv, &mu);
  }
  pthread_mutex_unlock(&mu);
}

static void set_hold(int on)
{
  pthread_mutex_lock(&mu);
  hold = on;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
}

/* Until n calls have waited in the hook. */
static void wait_held(unsigned n)
{
  pthread_mutex_lock(&mu);
  while(held < n)
    pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
}

typedef struct {
  mdp_loop *loop;
  char root[64];
} fixture;

static int setup(void **state)
{
  fixture *f = calloc(1, sizeof(*f));
  assert_non_null(f);
  snprintf(f->root, sizeof(f->root), "/tmp/md-fsq-XXXXXX");
  assert_non_null(mkdtemp(f->root));
  assert_int_equal(chmod(f->root, 0711), 0);
  assert_int_equal(mdp_loop_new(&f->loop), 0);
  assert_int_equal(mdp_fsq_start(f->loop), 0);
  held = manifests = 0;
  *state = f;
  return 0;
}

/* Everything queued has run and answered. */
static void settle(fixture *f)
{
  do
    mdp_fsq_wait_idle();
  while(mdp_loop_run_tasks(f->loop) > 0);
}

static int teardown(void **state)
{
  fixture *f = *state;
  char cmd[128];
  set_hold(0);
  mdp_fsq_stop();
  mdp_loop_run_tasks(f->loop);
  mdp_loop_free(f->loop);
  mdp_capfs_close();
  snprintf(cmd, sizeof(cmd), "rm -rf %s", f->root);
  assert_int_equal(system(cmd), 0);
  free(f);
  return 0;
}

/* ---------------------------------------------------------------- the queue */

typedef struct {
  mdp_fsq_job job;
  int n;
  int *order, *next; /* where work records its n */
  int *done;         /* how many dones ran */
} test_job;

static void record(mdp_fsq_job *j)
{
  test_job *t = (test_job *)j;
  t->order[(*t->next)++] = t->n;
}

static void answered(mdp_fsq_job *j)
{
  test_job *t = (test_job *)j;
  (*t->done)++;
  free(t);
}

static test_job *job(int n, int *order, int *next, int *done)
{
  test_job *t = calloc(1, sizeof(*t));
  assert_non_null(t);
  *t = (test_job){.n = n, .order = order, .next = next, .done = done};
  t->job.work = record;
  t->job.done = answered;
  return t;
}

/* A job that waits on the hook: it stands for a call on a hung disk. */
static void hung(mdp_fsq_job *j)
{
  (void)j;
  mdp_capfs_test_delay("hung");
}

static void jobs_run_in_order_and_answer_on_the_loop(void **state)
{
  fixture *f = *state;
  int order[10], next = 0, done = 0;

  for(int i = 0; i < 10; i++)
    assert_int_equal(mdp_fsq_submit(&job(i, order, &next, &done)->job), 0);
  mdp_fsq_wait_idle();
  assert_int_equal(next, 10);
  for(int i = 0; i < 10; i++)
    assert_int_equal(order[i], i);
  assert_int_equal(done, 0); /* not before the loop turns */
  settle(f);
  assert_int_equal(done, 10);
}

static void new_work_is_refused_past_the_bound_but_a_capture_goes_on(void **state)
{
  fixture *f = *state;
  int order[MDP_FSQ_MAX + 2], next = 0, done = 0;
  mdp_fsq_job *gate = calloc(1, sizeof(*gate));

  assert_non_null(gate);
  gate->work = hung;
  set_hold(1);
  assert_int_equal(mdp_fsq_submit(gate), 0); /* freed by the queue: no done */
  wait_held(1);
  for(int i = 0; i < MDP_FSQ_MAX; i++)
    assert_int_equal(mdp_fsq_submit(&job(i, order, &next, &done)->job), 0);
  assert_int_equal(mdp_fsq_waiting(), MDP_FSQ_MAX);
  test_job *extra = job(MDP_FSQ_MAX, order, &next, &done);
  assert_int_equal(mdp_fsq_submit(&extra->job), -EAGAIN);
  assert_int_equal(mdp_fsq_continue(&extra->job), 0);
  assert_int_equal(mdp_fsq_waiting(), MDP_FSQ_MAX + 1);
  set_hold(0);
  settle(f);
  assert_int_equal(next, MDP_FSQ_MAX + 1);
  assert_int_equal(order[MDP_FSQ_MAX], MDP_FSQ_MAX);
  assert_int_equal(done, MDP_FSQ_MAX + 1);
}

/* ---------------------------------------------------------------- manifests */

static void read_file(const char *path, char *buf, size_t len)
{
  FILE *fp = fopen(path, "r");
  assert_non_null(fp);
  size_t n = fread(buf, 1, len - 1, fp);
  buf[n] = '\0';
  fclose(fp);
}

static void a_run(mdp_run *r, const fixture *f)
{
  memset(r, 0, sizeof(*r));
  r->conn = 7;
  r->gen = 1;
  r->dir_fd = -1;
  r->who.pid = getpid();
  r->who.uid = geteuid();
  r->who.gid = getegid();
  snprintf(r->who.name, sizeof(r->who.name), "coalesced");
  assert_int_equal(mdp_capfs_make_folder(f->root,
                                         &(mdp_capfs_folder){.worker = r->who.name,
                                                             .pid = r->who.pid,
                                                             .now_ms = 1790000000000,
                                                             .uid = r->who.uid,
                                                             .gid = r->who.gid},
                                         r->dir, sizeof(r->dir)),
                   0);
}

static void manifest_writes_are_coalesced_to_the_newest_state(void **state)
{
  fixture *f = *state;
  mdp_capture_config_t cfg;
  mdp_run r;
  char path[MDP_CAPTURE_PATH_MAX + 32], text[8192];

  mdp_capture_config_init(&cfg);
  a_run(&r, f);
  snprintf(path, sizeof(path), "%s/%s", r.dir, MDP_CAPFS_MANIFEST);

  /* The first write's job takes its copy, then hangs on the disk. */
  set_hold(1);
  snprintf(r.plan.reason, sizeof(r.plan.reason), "state 1");
  mdp_run_write_manifest(&r, &cfg);
  wait_held(1);
  /* Every later write while it hangs is one queued job, of the newest state. */
  for(int i = 2; i <= 20; i++) {
    snprintf(r.plan.reason, sizeof(r.plan.reason), "state %d", i);
    mdp_run_write_manifest(&r, &cfg);
    assert_int_equal(mdp_fsq_waiting(), 1);
  }
  mdp_run_release_fs(&r); /* the run may end first: nothing is lost */
  set_hold(0);
  settle(f);
  assert_int_equal(manifests, 2);
  read_file(path, text, sizeof(text));
  assert_non_null(strstr(text, "\"state 20\""));
}

/* ---------------------------------------------------------------- folders */

static mdp_run_folder got;
static int opened_calls;
static mdp_capture_outcome keep_folder(uint64_t conn, uint64_t gen, mdp_run_folder *f)
{
  assert_int_equal(conn, 7);
  assert_int_equal(gen, 3);
  got = *f;
  opened_calls++;
  return f->rc ? MDP_CAPTURE_FAILED : MDP_CAPTURE_STARTED;
}

static int started_calls;
static mdp_capture_outcome started_rc;
static void started(void *arg, mdp_capture_outcome rc, const char *dir, const char *err)
{
  (void)arg;
  (void)err;
  started_rc = rc;
  started_calls++;
  assert_string_equal(dir, rc == MDP_CAPTURE_STARTED ? got.dir : "");
}

static void a_folder_is_made_off_the_loop_and_discarded_when_unused(void **state)
{
  fixture *f = *state;
  mdp_capture_config_t cfg;
  mdp_run r = {.conn = 7, .gen = 3, .who = {.pid = 42}, .dir_fd = -1};
  char err[256] = "";
  struct stat st;

  mdp_capture_config_init(&cfg);
  snprintf(cfg.directory, sizeof(cfg.directory), "%s/captures", f->root);
  snprintf(r.who.name, sizeof(r.who.name), "folder");
  r.who.uid = geteuid();
  r.who.gid = getegid();
  opened_calls = started_calls = 0;
  set_hold(1);
  mdp_run_open_t o = {.opened = keep_folder, .started = started};
  assert_int_equal(mdp_run_open_folder(&r, &cfg, &o, err, sizeof(err)), 0);
  wait_held(1);
  /* The disk hangs: nothing answers, and nothing was made. */
  assert_int_equal(mdp_loop_run_tasks(f->loop), 0);
  assert_int_equal(opened_calls, 0);
  assert_int_not_equal(stat(cfg.directory, &st), 0);
  set_hold(0);
  settle(f);
  assert_int_equal(opened_calls, 1);
  assert_int_equal(started_calls, 1);
  assert_int_equal(started_rc, MDP_CAPTURE_STARTED);
  assert_int_equal(got.rc, 0);
  assert_true(got.dir_fd >= 0);
  assert_int_equal(fstat(got.dir_fd, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  assert_int_equal(st.st_mode & 07777, 0700);
  close(got.dir_fd);
  /* Its run went before it began: the empty folder goes. */
  mdp_run_discard(got.dir);
  settle(f);
  assert_int_not_equal(stat(got.dir, &st), 0);
  assert_int_equal(stat(cfg.directory, &st), 0);
}

static void a_folder_is_refused_when_the_disk_holds_too_much(void **state)
{
  fixture *f = *state;
  mdp_capture_config_t cfg;
  mdp_run r = {.conn = 7, .gen = 3, .dir_fd = -1};
  char err[256] = "";
  int order[MDP_FSQ_MAX], next = 0, done = 0;
  mdp_fsq_job *gate = calloc(1, sizeof(*gate));

  mdp_capture_config_init(&cfg);
  snprintf(cfg.directory, sizeof(cfg.directory), "%s/captures", f->root);
  assert_non_null(gate);
  gate->work = hung;
  set_hold(1);
  assert_int_equal(mdp_fsq_submit(gate), 0);
  wait_held(1);
  for(int i = 0; i < MDP_FSQ_MAX; i++)
    assert_int_equal(mdp_fsq_submit(&job(i, order, &next, &done)->job), 0);
  started_calls = 0;
  mdp_run_open_t o = {.opened = keep_folder, .started = started};
  assert_int_equal(mdp_run_open_folder(&r, &cfg, &o, err, sizeof(err)), -EAGAIN);
  assert_non_null(strstr(err, "busy"));
  assert_non_null(strstr(err, cfg.directory));
  set_hold(0);
  settle(f);
  assert_int_equal(started_calls, 0); /* refused: no answer comes */
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(jobs_run_in_order_and_answer_on_the_loop, setup, teardown),
      cmocka_unit_test_setup_teardown(new_work_is_refused_past_the_bound_but_a_capture_goes_on,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(manifest_writes_are_coalesced_to_the_newest_state, setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(a_folder_is_made_off_the_loop_and_discarded_when_unused,
                                      setup, teardown),
      cmocka_unit_test_setup_teardown(a_folder_is_refused_when_the_disk_holds_too_much, setup,
                                      teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
