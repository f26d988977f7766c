/* Capture folders (0700, owner, never reused or followed), the manifest
 * (parses as JSON, atomic), MaxUse pruning order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store/capfs.h"
#include "capture/manifest.h"
#include "capture/plan/plan.h"
#include "mdt.h"

#define T0 1795000000000ll /* 2026-11-18T11:06:40Z, in ms */

static const char *const root = mdt_dir; /* a fresh one per test: mdt_dir_setup */

static int teardown(void **state)
{
  mdp_capfs_close();
  return mdt_dir_teardown(state);
}

static void folder_is_private_and_owned(void **state)
{
  (void)state;
  char dir[512], base[64];
  struct stat st;
  assert_int_equal(
      mdp_capfs_make_folder(
          root,
          &(mdp_capfs_folder){
              .worker = "puma worker/1", .pid = 4242, .now_ms = T0, .uid = 65534, .gid = 65534},
          dir, sizeof(dir)),
      0);
  assert_int_equal(stat(dir, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  assert_int_equal(st.st_mode & 07777, 0700);
  if(geteuid() == 0) {
    assert_int_equal(st.st_uid, 65534);
    assert_int_equal(st.st_gid, 65534);
  }
  snprintf(base, sizeof(base), "puma_worker_1-4242-");
  assert_non_null(strstr(dir, base));
  assert_non_null(strstr(dir, "Z"));
  assert_int_equal(strncmp(dir, root, strlen(root)), 0);
}

static int fill_text(FILE *f, void *arg) { return fputs(arg, f) < 0 ? -EIO : 0; }

/* With a reader group (CaptureCommandUser's) the folder is given it, 0750,
 * and so is each file the plugin writes, 0640, as it is created; a file
 * already there (the worker's, or one it moved in) is not touched. */
static void folder_and_files_shared_with_the_reader(void **state)
{
  (void)state;
  char dir[512], p[600];
  struct stat st;
  if(geteuid() != 0)
    skip(); /* giving a group needs root */
  mdp_capfs_set_reader(4242);
  assert_int_equal(
      mdp_capfs_make_folder(
          root,
          &(mdp_capfs_folder){.worker = "w", .pid = 7, .now_ms = T0, .uid = 65534, .gid = 65534},
          dir, sizeof(dir)),
      0);
  assert_int_equal(stat(dir, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0750);
  assert_int_equal(st.st_uid, 65534);
  assert_int_equal(st.st_gid, 4242);
  snprintf(p, sizeof(p), "%s/planted", dir);
  assert_int_equal(close(open(p, O_WRONLY | O_CREAT | O_EXCL, 0600)), 0);
  assert_int_equal(mdp_capfs_write_file(dir, "analysis.json", fill_text, "{}\n"), 0);
  mdp_capfs_set_reader((gid_t)-1);
  snprintf(p, sizeof(p), "%s/analysis.json", dir);
  assert_int_equal(stat(p, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0640);
  assert_int_equal(st.st_uid, 0);
  assert_int_equal(st.st_gid, 4242);
  snprintf(p, sizeof(p), "%s/planted", dir);
  assert_int_equal(stat(p, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0600);
  assert_int_equal(st.st_gid, 0);
  /* No reader: private again. */
  assert_int_equal(
      mdp_capfs_make_folder(
          root,
          &(mdp_capfs_folder){.worker = "w", .pid = 8, .now_ms = T0, .uid = 65534, .gid = 65534},
          dir, sizeof(dir)),
      0);
  assert_int_equal(stat(dir, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0700);
  assert_int_equal(st.st_gid, 65534);
}

static void folder_never_reused_nor_followed(void **state)
{
  (void)state;
  char first[400], second[400], target[512], link[512];
  struct stat st;
  assert_int_equal(mdp_capfs_make_folder(
                       root,
                       &(mdp_capfs_folder){
                           .worker = "w", .pid = 1, .now_ms = T0, .uid = getuid(), .gid = getgid()},
                       first, sizeof(first)),
                   0);
  /* A symlink planted under the next name the same second would produce. */
  snprintf(target, sizeof(target), "%s/elsewhere", root);
  assert_int_equal(mkdir(target, 0755), 0);
  snprintf(link, sizeof(link), "%s-2", first);
  assert_int_equal(symlink(target, link), 0);
  assert_int_equal(mdp_capfs_make_folder(
                       root,
                       &(mdp_capfs_folder){
                           .worker = "w", .pid = 1, .now_ms = T0, .uid = getuid(), .gid = getgid()},
                       second, sizeof(second)),
                   0);
  assert_string_not_equal(first, second);
  assert_string_not_equal(second, link);
  assert_int_equal(lstat(second, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  assert_int_equal(lstat(link, &st), 0);
  assert_true(S_ISLNK(st.st_mode)); /* left alone */
  assert_int_equal(stat(target, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0755);
}

static void ensure_root_creates_traversable_dir(void **state)
{
  (void)state;
  char path[1200];
  struct stat st;
  snprintf(path, sizeof(path), "%s/a/b/captures", root);
  assert_int_equal(mdp_capfs_ensure_root(path), 0);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777 & ~0022, 0711 & ~0022);
  mdt_write_bytes(root, "plain", 1);
  snprintf(path, sizeof(path), "%s/plain", root);
  assert_int_equal(mdp_capfs_ensure_root(path), -ENOTDIR);
}

static void make_plan(mdp_plan_t *plan, bool finish)
{
  mdp_step_kind_t kinds[] = {MDP_STEP_DUMP, MDP_STEP_SCHEDULER, MDP_STEP_WAIT, MDP_STEP_DUMP};
  mdp_plan_params_t p = {.interval_ms = 1000, .space_factor = 3, .keep_free = 1};
  mdp_sample samples[] = {{1795000000.5, 1000}, {1795000010.25, 2000}};
  mdp_plan_trigger_t t = {.reason = "capture-size \"quoted\"\nline2\x01",
                          .samples = samples,
                          .n_samples = 2,
                          .rss = 2000};
  mdp_plan_init(plan, &p, kinds, 4, &t);
  plan->started_ms = T0;
  plan->steps[0].status = MDP_SS_OK;
  plan->steps[0].bytes = 123456;
  plan->steps[0].duration_us = 1500;
  plan->steps[0].pause_us = 250;
  plan->steps[0].started_ms = T0;
  plan->steps[0].finished_ms = T0 + 2;
  snprintf(plan->steps[0].mode, sizeof(plan->steps[0].mode), "fork");
  plan->steps[1].status = MDP_SS_ERROR;
  snprintf(plan->steps[1].error, sizeof(plan->steps[1].error), "error: C:\\path \"x\"\ttab");
  if(finish) {
    plan->state = MDP_PLAN_FINISHED;
    plan->finished_ms = T0 + 5000;
    snprintf(plan->end, sizeof(plan->end), "worker gone");
  }
}

/* Parse the manifest with Ruby's JSON (Ruby is part of every memdiag
 * install) and evaluate a Ruby expression over it, `m` being the document.
 * The expression goes through a file, not the shell, so that it may hold
 * any quoting; on failure the manifest is printed. */
static int json_check(const char *path, const char *expr)
{
  char cmd[2048], exprfile[512];
  snprintf(exprfile, sizeof(exprfile), "%s/check.rb", root);
  mdt_write_text(exprfile, expr);
  snprintf(cmd, sizeof(cmd),
           "'%s' -rjson -e 'm = JSON.parse(File.read(ARGV[0])); "
           "ok = eval(File.read(ARGV[1])); "
           "puts File.read(ARGV[0]) unless ok; exit(ok ? 0 : 1)' '%s' '%s'",
           MEMDIAG_RUBY, path, exprfile);
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A capture folder for worker "web" with this pid, and its plan. */
static void web_folder_and_plan(pid_t pid, bool finished, char *dir, size_t dirlen,
                                mdp_plan_t *plan)
{
  assert_int_equal(
      mdp_capfs_make_folder(
          root,
          &(mdp_capfs_folder){
              .worker = "web", .pid = pid, .now_ms = T0, .uid = getuid(), .gid = getgid()},
          dir, dirlen),
      0);
  make_plan(plan, finished);
}

static void manifest_parses(void **state)
{
  (void)state;
  char dir[512], path[600], tmp[600];
  mdp_plan_t plan;
  struct stat st;
  web_folder_and_plan(7, false, dir, sizeof(dir), &plan);
  mdp_manifest_info_t info = {
      .who = &(mdp_worker_id){.name = "web \"1\"", .pid = 7, .connection_id = 3},
      .directory = dir,
      .plan_text = "dump scheduler wait dump",
      .restart_signal = 15};
  assert_int_equal(mdp_manifest_write(dir, &info, &plan), 0);
  snprintf(path, sizeof(path), "%s/capture.json", dir);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0600);
  assert_int_equal(json_check(path, "m[\"complete\"] == false && m[\"finished\"].nil?"), 0);
  /* Now the plan ended: the rewrite replaces the file, nothing else left. */
  make_plan(&plan, true);
  assert_int_equal(mdp_manifest_write(dir, &info, &plan), 0);
  assert_int_equal(
      json_check(
          path,
          "m[\"worker\"][\"name\"] == \"web \\\"1\\\"\" && m[\"worker\"][\"pid\"] == 7 && "
          "m[\"worker\"][\"connection_id\"] == 3 && "
          "m[\"trigger\"][\"reason\"].start_with?(\"capture-size \\\"quoted\\\"\\nline2\\u0001\") "
          "&& "
          "m[\"trigger\"][\"samples\"].size == 2 && "
          "m[\"trigger\"][\"samples\"][1][\"rss\"] == 2000 && m[\"trigger\"][\"rss\"] == 2000 && "
          "m[\"complete\"] == false && m[\"end\"] == \"worker gone\" && "
          "m[\"restart\"][\"signal\"] == \"TERM\" && m[\"restart\"][\"sent\"].nil? && "
          "m[\"restart\"][\"limit_reached\"].nil? && "
          "m[\"steps\"].map { |s| s[\"file\"] } == [\"heap-1.json\", \"scheduler.txt\", nil, "
          "\"heap-2.json\"] && "
          "m[\"steps\"][0][\"status\"] == \"ok\" && m[\"steps\"][0][\"bytes\"] == 123456 && "
          "m[\"steps\"][0][\"worker_pause_ms\"] == 0.25 && m[\"steps\"][0][\"mode\"] == \"fork\" "
          "&& "
          "m[\"steps\"][0][\"started\"] == \"2026-11-18T11:06:40.000Z\" && "
          "m[\"steps\"][1][\"status\"] == \"error\" && "
          "m[\"steps\"][1][\"error\"] == \"error: C:\\\\path \\\"x\\\"\\ttab\" && "
          "m[\"steps\"][3][\"status\"] == \"pending\""),
      0);
  snprintf(tmp, sizeof(tmp), "%s/.capture.json.tmp", dir);
  assert_int_equal(access(tmp, F_OK), -1);
  /* The folder's descriptor, for files written below it (streams). */
  int fd = mdp_capfs_folder_fd(dir);
  assert_true(fd >= 0);
  assert_int_equal(fstatat(fd, "capture.json", &st, AT_SYMLINK_NOFOLLOW), 0);
  close(fd);
  assert_true(mdp_capfs_folder_fd("/nonexistent/x") < 0);
}

/* Issue 11, finding 9: capture.json is valid UTF-8 whatever the worker
 * sent: invalid bytes become U+FFFD, a character a fixed-size field cut
 * short too, C1 controls are escaped, well-formed text stays. */
static void manifest_is_valid_utf8(void **state)
{
  (void)state;
  char dir[512], path[600];
  mdp_plan_t plan;
  web_folder_and_plan(9, true, dir, sizeof(dir), &plan);
  /* An error that fills its field and ends in the first byte of "é". */
  size_t cap = sizeof(plan.steps[1].error);
  memset(plan.steps[1].error, 'e', cap - 2);
  plan.steps[1].error[cap - 2] = (char)0xc3;
  plan.steps[1].error[cap - 1] = '\0';
  snprintf(plan.steps[0].note, sizeof(plan.steps[0].note), "caf\xc3\xa9 \xe2\x82\xac ok");
  mdp_manifest_info_t info = {
      .who = &(mdp_worker_id){.name = "bad \xff\xfe \xc0\xaf \xed\xa0\x80 c1\xc2\x85 \xf0\x9f\x90",
                              .pid = 9},
      .directory = dir};
  assert_int_equal(mdp_manifest_write(dir, &info, &plan), 0);
  snprintf(path, sizeof(path), "%s/capture.json", dir);
  assert_int_equal(json_check(path,
                              "File.binread(ARGV[0]).force_encoding('UTF-8').valid_encoding? && "
                              "m['worker']['name'] == \"bad \\uFFFD\\uFFFD \\uFFFD\\uFFFD "
                              "\\uFFFD\\uFFFD\\uFFFD c1\\u0085 \\uFFFD\\uFFFD\\uFFFD\" && "
                              "m['steps'][1]['error'].end_with?(\"eee\\uFFFD\") && "
                              "m['steps'][0]['note'] == \"caf\\u00e9 \\u20ac ok\" && "
                              "File.read(ARGV[0]).include?('c1\\\\u0085')"),
                   0);
}

static void manifest_ignores_planted_temp(void **state)
{
  (void)state;
  char dir[512], victim[512], tmp[600];
  mdp_plan_t plan;
  web_folder_and_plan(8, true, dir, sizeof(dir), &plan);
  mdt_write_bytes(root, "victim", 5);
  snprintf(victim, sizeof(victim), "%s/victim", root);
  snprintf(tmp, sizeof(tmp), "%s/.capture.json.tmp", dir);
  assert_int_equal(symlink(victim, tmp), 0);
  mdp_manifest_info_t info = {.who = &(mdp_worker_id){.name = "web", .pid = 8}, .directory = dir};
  assert_int_equal(mdp_manifest_write(dir, &info, &plan), 0);
  struct stat st;
  assert_int_equal(stat(victim, &st), 0);
  assert_int_equal(st.st_size, 5);
}

/* Bytes a file holds on disk (what MaxUse counts). */
static uint64_t on_disk(const char *dir, const char *name)
{
  char path[1400];
  struct stat st;
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  assert_int_equal(stat(path, &st), 0);
  return (uint64_t)st.st_blocks * 512u;
}

/* A capture folder of `bytes` of heap dump in `in`; returns what it holds
 * on disk. */
static uint64_t make_capture_in(const char *in, const char *name, size_t bytes, time_t mtime,
                                bool manifest)
{
  char dir[1200];
  snprintf(dir, sizeof(dir), "%s/%s", in, name);
  assert_int_equal(mkdir(dir, 0700), 0);
  mdt_write_bytes(dir, "heap-1.json", bytes);
  if(manifest)
    mdt_write_bytes(dir, "capture.json", 0);
  uint64_t held = on_disk(dir, "heap-1.json");
  struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
  assert_int_equal(utimensat(AT_FDCWD, dir, ts, 0), 0);
  return held;
}

static uint64_t make_capture(const char *name, size_t bytes, time_t mtime, bool manifest)
{
  return make_capture_in(root, name, bytes, mtime, manifest);
}

static bool exists(const char *name)
{
  char dir[1300];
  snprintf(dir, sizeof(dir), "%s/%s", root, name);
  return access(dir, F_OK) == 0;
}

static void prune_oldest_first(void **state)
{
  (void)state;
  char keep_path[512];
  uint64_t used = 0;
  unsigned removed = 0;
  uint64_t a = make_capture("c-old", 8192, 1000, true);
  assert_true(a > 0);
  assert_int_equal(make_capture("c-mid", 8192, 2000, true), a);
  assert_int_equal(make_capture("c-new", 8192, 3000, true), a);
  assert_int_equal(make_capture("c-ancient-running", 8192, 500, true), a);
  make_capture("not-a-capture", 5 * 8192, 100, false);
  assert_int_equal(mdp_capfs_usage(root, &used), 0);
  assert_int_equal(used, 4 * a);
  snprintf(keep_path, sizeof(keep_path), "%s/c-ancient-running", root);
  const char *keep[] = {keep_path};
  assert_int_equal(mdp_capfs_prune(root, 2 * a + a / 2, keep, 1, &used, &removed), 0);
  assert_int_equal(removed, 2);
  assert_int_equal(used, 2 * a);
  assert_false(exists("c-old"));
  assert_false(exists("c-mid"));
  assert_true(exists("c-new"));
  assert_true(exists("c-ancient-running")); /* in progress: never removed */
  assert_true(exists("not-a-capture"));     /* not ours */
  /* A capture the worker put a directory into is passed over, whole. */
  make_capture("c-newer", 8192, 4000, true);
  char sub[1300];
  snprintf(sub, sizeof(sub), "%s/c-new/subdir", root);
  assert_int_equal(mkdir(sub, 0700), 0);
  assert_int_equal(mdp_capfs_prune(root, a + a / 2, keep, 1, &used, &removed), 0);
  assert_int_equal(removed, 1);
  assert_true(exists("c-new"));
  assert_true(exists("c-new/capture.json")); /* left whole, not emptied */
  assert_true(exists("c-new/heap-1.json"));
  assert_false(exists("c-newer"));
  assert_int_equal(used, a); /* c-new, which cannot go, is not counted (issue 24) */
  /* Under the bound: nothing more goes. */
  assert_int_equal(mdp_capfs_prune(root, 2 * a + a / 2, keep, 1, &used, &removed), 0);
  assert_int_equal(removed, 0);
}

/* Issue 11, finding 4: a worker's sparse 10 TiB file in its own folder
 * holds no disk, so it must not push the other captures out. */
static void prune_counts_blocks_not_size(void **state)
{
  (void)state;
  char path[1300];
  uint64_t used = 0;
  unsigned removed = 0;
  uint64_t a = make_capture("others-1-20200101T000000Z", 64 * 1024, 1000, true);
  make_capture("sparse-2-20200101T000001Z", 0, 2000, true);
  snprintf(path, sizeof(path), "%s/sparse-2-20200101T000001Z/heap-2.json", root);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  assert_true(fd >= 0);
  assert_int_equal(ftruncate(fd, (off_t)10 << 40), 0); /* truncate -s 10T */
  close(fd);
  assert_int_equal(mdp_capfs_prune(root, 1024 * 1024, NULL, 0, &used, &removed), 0);
  assert_int_equal(removed, 0);
  assert_true(used < 1024 * 1024);
  assert_true(used >= a);
  assert_true(exists("others-1-20200101T000000Z/heap-1.json"));
  assert_true(exists("sparse-2-20200101T000001Z"));
}

/* Issue 24, finding 4: 40 names of one file are one file, the age is the
 * one memdiag put in the folder's name (not an mtime the worker set), and a
 * folder that cannot be removed pushes no other capture out. */
static void prune_cannot_be_bent(void **state)
{
  (void)state;
  char path[1300], other[1400];
  uint64_t used = 0;
  unsigned removed = 0;
  uint64_t a = make_capture("victim-1-20260101T000100Z", 64 * 1024, 1000, true);
  make_capture("bully-2-20260101T000000Z", 64 * 1024, 4102444800, true);
  snprintf(path, sizeof(path), "%s/bully-2-20260101T000000Z/heap-1.json", root);
  for(int i = 0; i < 40; i++) {
    snprintf(other, sizeof(other), "%s/bully-2-20260101T000000Z/link-%d", root, i);
    assert_int_equal(link(path, other), 0);
  }
  assert_int_equal(mdp_capfs_usage(root, &used), 0);
  assert_int_equal(used, 2 * a);
  /* The older by name goes first, whatever its mtime says. */
  assert_int_equal(mdp_capfs_prune(root, a + a / 2, NULL, 0, &used, &removed), 0);
  assert_int_equal(removed, 1);
  assert_true(exists("victim-1-20260101T000100Z"));
  assert_false(exists("bully-2-20260101T000000Z"));
  /* A folder with a directory in it cannot go: nobody goes for it. */
  make_capture("bully-3-20260101T000200Z", 4 * 64 * 1024, 1, true);
  snprintf(path, sizeof(path), "%s/bully-3-20260101T000200Z/sub", root);
  assert_int_equal(mkdir(path, 0700), 0);
  mdt_write_bytes(path, "more.json", 64 * 1024);
  assert_int_equal(mdp_capfs_prune(root, a + a / 2, NULL, 0, &used, &removed), 0);
  assert_int_equal(removed, 0);
  assert_int_equal(used, a);
  assert_true(exists("victim-1-20260101T000100Z/heap-1.json"));
}

/* Issue 11, finding 5: every capture in progress is spared, however many
 * there are (the glue used to protect at most 64). */
static void prune_spares_every_capture_in_progress(void **state)
{
  (void)state;
  enum { N = 100 };
  static char dirs[N][512];
  mdp_plan_t plan;
  uint64_t used = 0;
  unsigned removed = 0;
  for(int i = 0; i < N; i++) {
    assert_int_equal(
        mdp_capfs_make_folder(
            root,
            &(mdp_capfs_folder){
                .worker = "busy", .pid = 1000 + i, .now_ms = T0, .uid = getuid(), .gid = getgid()},
            dirs[i], sizeof(dirs[i])),
        0);
    mdt_write_bytes(dirs[i], "heap-1.json", 4096);
    make_plan(&plan, false);
    mdp_manifest_info_t info = {.who = &(mdp_worker_id){.name = "busy", .pid = 1000 + i},
                                .directory = dirs[i]};
    assert_int_equal(mdp_manifest_write(dirs[i], &info, &plan), 0);
  }
  assert_int_equal(mdp_capfs_prune(root, 0, NULL, 0, &used, &removed), 0);
  assert_int_equal(removed, 0);
  for(int i = 0; i < N; i++)
    assert_int_equal(access(dirs[i], F_OK), 0);
  /* A plan that finished (its last manifest written) or was released is an
   * ordinary capture again. */
  for(int i = 0; i < N / 2; i++) {
    make_plan(&plan, true);
    mdp_manifest_info_t info = {.who = &(mdp_worker_id){.name = "busy", .pid = 1000 + i},
                                .directory = dirs[i]};
    assert_int_equal(mdp_manifest_write(dirs[i], &info, &plan), 0);
  }
  mdp_capfs_release(dirs[N - 1]);
  assert_int_equal(mdp_capfs_prune(root, 0, NULL, 0, &used, &removed), 0);
  assert_int_equal(removed, N / 2 + 1);
  for(int i = 0; i < N; i++)
    assert_int_equal(access(dirs[i], F_OK) == 0, i >= N / 2 && i < N - 1);
}

/* Issue 11, finding 1: CaptureDirectory must belong to root (or collectd's
 * user) and be writable by no one else, and so must every directory above
 * it but sticky ones; otherwise nothing is made in it. */
static void root_of_another_user_is_refused(void **state)
{
  (void)state;
  char caps[600], err[512], dir[700];
  struct stat st;
  if(geteuid() != 0)
    skip();
  snprintf(caps, sizeof(caps), "%s/captures", root);
  assert_int_equal(mkdir(caps, 0700), 0);
  assert_int_equal(chown(caps, 65534, 65534), 0); /* nobody */
  assert_int_equal(mdp_capfs_open_root(caps, err, sizeof(err)), -EPERM);
  assert_non_null(strstr(err, "CaptureDirectory"));
  assert_non_null(strstr(err, caps));
  assert_non_null(strstr(err, "uid 65534"));
  assert_non_null(strstr(err, "mode 0700"));
  assert_non_null(strstr(err, "is owned by"));
  assert_int_equal(
      mdp_capfs_make_folder(
          caps, &(mdp_capfs_folder){.worker = "w", .pid = 1, .now_ms = T0, .uid = 0, .gid = 0}, dir,
          sizeof(dir)),
      -EPERM);
  assert_int_equal(rmdir(caps), 0); /* still empty: nothing was written */

  /* A parent writable by its group, not sticky. */
  snprintf(caps, sizeof(caps), "%s/shared", root);
  assert_int_equal(mkdir(caps, 0700), 0);
  assert_int_equal(chmod(caps, 0775), 0);
  snprintf(dir, sizeof(dir), "%s/captures", caps);
  assert_int_equal(mdp_capfs_open_root(dir, err, sizeof(err)), -EPERM);
  assert_non_null(strstr(err, "shared has mode 0775"));
  assert_non_null(strstr(err, "0775"));
  assert_int_equal(access(dir, F_OK), -1);

  /* A sticky world-writable parent (as /tmp) is fine; the directory made
   * in it is 0711 and root's. */
  assert_int_equal(chmod(caps, 01777), 0);
  assert_int_equal(mdp_capfs_open_root(dir, err, sizeof(err)), 0);
  assert_int_equal(stat(dir, &st), 0);
  assert_int_equal(st.st_uid, 0);
  assert_int_equal(st.st_mode & 0777 & ~0022, 0711 & ~0022);
  /* ... but CaptureDirectory itself may not be writable by others. */
  mdp_capfs_close();
  assert_int_equal(chmod(dir, 01777), 0);
  assert_int_equal(mdp_capfs_open_root(dir, err, sizeof(err)), -EPERM);
  assert_non_null(strstr(err, "1777"));
}

static void root_through_a_symlink_is_refused(void **state)
{
  (void)state;
  char real[600], link[600], caps[700], err[512], dir[800];
  snprintf(real, sizeof(real), "%s/real", root);
  snprintf(link, sizeof(link), "%s/link", root);
  assert_int_equal(mkdir(real, 0700), 0);
  assert_int_equal(symlink(real, link), 0);
  snprintf(caps, sizeof(caps), "%s/captures", link);
  assert_int_equal(mdp_capfs_open_root(caps, err, sizeof(err)), -ELOOP);
  assert_non_null(strstr(err, "CaptureDirectory"));
  assert_non_null(strstr(err, link));
  assert_non_null(strstr(err, "symbolic link"));
  assert_int_equal(mdp_capfs_make_folder(
                       link,
                       &(mdp_capfs_folder){
                           .worker = "w", .pid = 1, .now_ms = T0, .uid = getuid(), .gid = getgid()},
                       dir, sizeof(dir)),
                   -ELOOP);
  assert_int_equal(rmdir(real), 0); /* nothing was made in the target */
  assert_int_equal(mdp_capfs_open_root("relative/captures", err, sizeof(err)), -EINVAL);
  assert_int_equal(mdp_capfs_open_root("/var/../tmp", err, sizeof(err)), -EINVAL);
}

/* The test-only hook: between listing and removing, CaptureDirectory's
 * path is swapped for a symbolic link to a directory outside that holds a
 * folder of the same name. */
static char swap_caps[600], swap_moved[600], swap_outside[600];
static int swaps;

static void swap_in_link(const char *name)
{
  (void)name;
  if(swaps++)
    return;
  assert_int_equal(rename(swap_caps, swap_moved), 0);
  assert_int_equal(symlink(swap_outside, swap_caps), 0);
}

static void prune_never_follows_a_swapped_root(void **state)
{
  (void)state;
  uint64_t used = 0;
  unsigned removed = 0;
  char path[1400];
  snprintf(swap_caps, sizeof(swap_caps), "%s/captures", root);
  snprintf(swap_moved, sizeof(swap_moved), "%s/captures.moved", root);
  snprintf(swap_outside, sizeof(swap_outside), "%s/outside", root);
  assert_int_equal(mkdir(swap_caps, 0711), 0);
  assert_int_equal(mkdir(swap_outside, 0755), 0);
  make_capture_in(swap_caps, "w-1-20200101T000000Z", 8192, 1000, true);
  make_capture_in(swap_outside, "w-1-20200101T000000Z", 8192, 1000, true);
  assert_int_equal(mdp_capfs_open_root(swap_caps, NULL, 0), 0);
  swaps = 0;
  mdp_capfs_test_before_remove = swap_in_link;
  int rc = mdp_capfs_prune(swap_caps, 0, NULL, 0, &used, &removed);
  mdp_capfs_test_before_remove = NULL;
  assert_int_equal(rc, 0);
  assert_int_equal(swaps, 1);
  snprintf(path, sizeof(path), "%s/w-1-20200101T000000Z/heap-1.json", swap_outside);
  assert_int_equal(access(path, F_OK), 0); /* outside: untouched */
  snprintf(path, sizeof(path), "%s/w-1-20200101T000000Z", swap_moved);
  assert_int_equal(access(path, F_OK), -1); /* the real capture went */
  assert_int_equal(removed, 1);
}

static void avail_reports_space(void **state)
{
  (void)state;
  uint64_t avail = 0;
  assert_int_equal(mdp_capfs_avail(root, &avail), 0);
  assert_true(avail > 0);
  assert_int_equal(mdp_capfs_avail("/nonexistent/memdiag", &avail), -ENOENT);
}

static void inside_checks_components(void **state)
{
  (void)state;
  char sub[600], link[600];
  assert_true(mdp_capfs_inside("/var/tmp/memdiag", "/var/tmp/memdiag"));
  assert_true(mdp_capfs_inside("/var/tmp/memdiag/captures", "/var/tmp/memdiag/"));
  assert_true(mdp_capfs_inside("/srv/x", "/"));
  assert_false(mdp_capfs_inside("/var/tmp/memdiag2", "/var/tmp/memdiag"));
  assert_false(mdp_capfs_inside("/var/tmp", "/var/tmp/memdiag"));
  /* Through a symbolic link to the same place. */
  snprintf(sub, sizeof(sub), "%s/real", root);
  snprintf(link, sizeof(link), "%s/alias", root);
  assert_int_equal(mkdir(sub, 0700), 0);
  assert_int_equal(symlink(sub, link), 0);
  assert_true(mdp_capfs_inside(link, sub));
}

static void sanitize_names(void **state)
{
  static const char *const names[][2] = {
      {"../etc/passwd", "_._etc_passwd"},
      {"", "worker"},
      {"puma.worker-1_a", "puma.worker-1_a"},
  };
  (void)state;
  mdt_assert_rewrites(mdp_capfs_sanitize, 72, names, sizeof(names) / sizeof(names[0]));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(folder_is_private_and_owned, mdt_dir_setup, teardown),
      cmocka_unit_test_setup_teardown(folder_and_files_shared_with_the_reader, mdt_dir_setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(folder_never_reused_nor_followed, mdt_dir_setup, teardown),
      cmocka_unit_test_setup_teardown(ensure_root_creates_traversable_dir, mdt_dir_setup, teardown),
      cmocka_unit_test_setup_teardown(manifest_parses, mdt_dir_setup, teardown),
      cmocka_unit_test_setup_teardown(manifest_is_valid_utf8, mdt_dir_setup, teardown),
      cmocka_unit_test_setup_teardown(manifest_ignores_planted_temp, mdt_dir_setup, teardown),
      cmocka_unit_test_setup_teardown(prune_oldest_first, mdt_dir_setup, teardown),
      cmocka_unit_test_setup_teardown(prune_counts_blocks_not_size, mdt_dir_setup, teardown),
      cmocka_unit_test_setup_teardown(prune_cannot_be_bent, mdt_dir_setup, teardown),
      cmocka_unit_test_setup_teardown(prune_spares_every_capture_in_progress, mdt_dir_setup,
                                      teardown),
      cmocka_unit_test_setup_teardown(root_of_another_user_is_refused, mdt_dir_setup, teardown),
      cmocka_unit_test_setup_teardown(root_through_a_symlink_is_refused, mdt_dir_setup, teardown),
      cmocka_unit_test_setup_teardown(prune_never_follows_a_swapped_root, mdt_dir_setup, teardown),
      cmocka_unit_test_setup_teardown(avail_reports_space, mdt_dir_setup, teardown),
      cmocka_unit_test_setup_teardown(inside_checks_components, mdt_dir_setup, teardown),
      cmocka_unit_test(sanitize_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
