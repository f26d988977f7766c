/* A worker's memory cgroup from the kernel's texts and files: mount tables
 * of v2, v1 and hybrid hosts, cgroup namespaces, nested limits, "max",
 * missing files (fixture trees under tests/data/cgroup), and the change
 * of a limit and of the OOM kill count on a copy made in a temporary
 * directory. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "workers/cgroup.h"

#define MiB (1024ull * 1024ull)

static char *slurp(const char *rel)
{
  static char bufs[8][8192];
  static int next;
  char path[1024];
  char *buf = bufs[next++ % 8];
  FILE *f;
  size_t n;

  snprintf(path, sizeof path, "%s/%s", MEMDIAG_CGROUP_DATA, rel);
  f = fopen(path, "r");
  assert_non_null(f);
  n = fread(buf, 1, sizeof bufs[0] - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

static void test_mountinfo_versions(void **state)
{
  mdp_cgroup_mount m[MDP_CGROUP_MOUNTS_MAX];
  (void)state;

  assert_int_equal(mdp_cgroup_parse_mountinfo(slurp("v2/mountinfo"), m, 8), 1);
  assert_int_equal(m[0].version, MDP_CGROUP_V2);
  assert_string_equal(m[0].point, "/sys/fs/cgroup");
  assert_string_equal(m[0].root, "/");
  /* v1: the memory controller's mount, not cpu's or systemd's */
  assert_int_equal(mdp_cgroup_parse_mountinfo(slurp("v1/mountinfo"), m, 8), 1);
  assert_int_equal(m[0].version, MDP_CGROUP_V1);
  assert_string_equal(m[0].point, "/sys/fs/cgroup/memory");
  /* hybrid: memory is on v1; the unified mount (no controllers) is not used */
  assert_int_equal(mdp_cgroup_parse_mountinfo(slurp("hybrid/mountinfo"), m, 8), 1);
  assert_int_equal(m[0].version, MDP_CGROUP_V1);
  assert_string_equal(m[0].point, "/sys/fs/cgroup/memory");
  /* a mount of a sub-cgroup, its point escaped by the kernel */
  assert_int_equal(mdp_cgroup_parse_mountinfo(slurp("ns/mountinfo"), m, 8), 1);
  assert_string_equal(m[0].point, "/host cgroup");
  assert_string_equal(m[0].root, "/kubepods.slice");
  assert_int_equal(mdp_cgroup_parse_mountinfo("", m, 8), 0);
  assert_int_equal(mdp_cgroup_parse_mountinfo("garbage\n1 2\n", m, 8), 0);
}

static void test_proc_cgroup_lines(void **state)
{
  char out[MDP_CGROUP_PATH_MAX];
  (void)state;

  assert_int_equal(
      mdp_cgroup_parse_proc(slurp("v1/proc_cgroup_host"), MDP_CGROUP_V1, out, sizeof out), 0);
  assert_string_equal(out, "/docker/abc");
  assert_int_equal(
      mdp_cgroup_parse_proc(slurp("hybrid/proc_cgroup_host"), MDP_CGROUP_V1, out, sizeof out), 0);
  assert_string_equal(out, "/system.slice/app.service");
  assert_int_equal(
      mdp_cgroup_parse_proc(slurp("v2/proc_cgroup_host"), MDP_CGROUP_V2, out, sizeof out), 0);
  assert_string_equal(out, "/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope");
  /* a v2-only text has no memory line for v1 */
  assert_int_equal(mdp_cgroup_parse_proc("0::/x\n", MDP_CGROUP_V1, out, sizeof out), -ENOENT);
  /* "4:memory,cpu:" style controller lists */
  assert_int_equal(mdp_cgroup_parse_proc("4:cpu,memory:/a\n", MDP_CGROUP_V1, out, sizeof out), 0);
  assert_string_equal(out, "/a");
  assert_int_equal(mdp_cgroup_parse_proc("4:memory:/abcdef\n", MDP_CGROUP_V1, out, 4),
                   -ENAMETOOLONG);
}

static void test_relative_refuses(void **state)
{
  mdp_cgroup_mount root = {.version = MDP_CGROUP_V2, .root = "/", .point = "/sys/fs/cgroup"};
  mdp_cgroup_mount sub = {.version = MDP_CGROUP_V2, .root = "/kubepods.slice", .point = "/h"};
  char out[MDP_CGROUP_PATH_MAX];
  (void)state;

  assert_int_equal(mdp_cgroup_relative(&root, "/a/b", out, sizeof out), 0);
  assert_string_equal(out, "a/b");
  assert_int_equal(mdp_cgroup_relative(&root, "/", out, sizeof out), 0);
  assert_string_equal(out, "");
  assert_int_equal(mdp_cgroup_relative(&sub, "/kubepods.slice/pod/c", out, sizeof out), 0);
  assert_string_equal(out, "pod/c");
  /* "/kubepods.slicex" is not below "/kubepods.slice" */
  assert_int_equal(mdp_cgroup_relative(&sub, "/kubepods.slicex/c", out, sizeof out), -EXDEV);
  assert_int_equal(mdp_cgroup_relative(&sub, "/system.slice", out, sizeof out), -EXDEV);
  assert_int_equal(mdp_cgroup_relative(&root, "/a/../../etc", out, sizeof out), -EINVAL);
  assert_int_equal(mdp_cgroup_relative(&root, "/../x", out, sizeof out), -EINVAL);
  assert_int_equal(mdp_cgroup_relative(&root, "/a/./b", out, sizeof out), -EINVAL);
  assert_int_equal(mdp_cgroup_relative(&root, "/a//b", out, sizeof out), -EINVAL);
  assert_int_equal(mdp_cgroup_relative(&root, "a/b", out, sizeof out), -EINVAL);
  /* collectd in a cgroup namespace of its own: the kernel writes the mount
   * root and every path outside the namespace with leading "/.." */
  mdp_cgroup_mount ns = {.version = MDP_CGROUP_V1, .root = "/..", .point = "/sys/fs/cgroup/memory"};
  assert_int_equal(mdp_cgroup_relative(&ns, "/../memdiag-test-1-2", out, sizeof out), 0);
  assert_string_equal(out, "memdiag-test-1-2");
  assert_int_equal(mdp_cgroup_relative(&ns, "/../kubepods/pod/c", out, sizeof out), 0);
  assert_string_equal(out, "kubepods/pod/c");
  assert_int_equal(mdp_cgroup_relative(&ns, "/../a/../b", out, sizeof out), -EINVAL);
  assert_int_equal(mdp_cgroup_relative(&ns, "/../../x", out, sizeof out), -EINVAL);
  assert_int_equal(mdp_cgroup_relative(&ns, "/x", out, sizeof out), -EXDEV);
  assert_int_equal(mdp_cgroup_pick_mount(&ns, 1, "/../memdiag-test-1-2"), 0);
}

static void test_limits_and_keys(void **state)
{
  uint64_t v;
  double some, full;
  (void)state;

  assert_int_equal(mdp_cgroup_parse_limit("max\n", &v), 0);
  assert_true(v == MDP_CGROUP_NO_LIMIT);
  assert_int_equal(mdp_cgroup_parse_limit("9223372036854771712\n", &v), 0);
  assert_true(v == MDP_CGROUP_NO_LIMIT);
  assert_int_equal(mdp_cgroup_parse_limit("314572800\n", &v), 0);
  assert_true(v == 300 * MiB);
  assert_int_equal(mdp_cgroup_parse_limit("maximum\n", &v), -EINVAL);
  assert_int_equal(mdp_cgroup_parse_limit("", &v), -EINVAL);
  assert_int_equal(mdp_cgroup_parse_limit("12x", &v), -EINVAL);
  assert_int_equal(mdp_cgroup_parse_key("oom 2\noom_kill 1\n", "oom_kill", &v), 0);
  assert_true(v == 1);
  /* "oom" is not read from the "oom_kill" line */
  assert_int_equal(mdp_cgroup_parse_key("oom_kill 1\noom 4\n", "oom", &v), 0);
  assert_true(v == 4);
  assert_int_equal(mdp_cgroup_parse_key("low 0\n", "oom_group_kill", &v), -ENOENT);
  assert_int_equal(mdp_cgroup_parse_pressure(slurp("v2/sys/fs/cgroup/kubepods.slice/"
                                                   "kubepods-pod1.slice/cri-containerd-abc.scope/"
                                                   "memory.pressure"),
                                             &some, &full),
                   0);
  assert_true(some > 1.49 && some < 1.51);
  assert_true(full > 0.24 && full < 0.26);
  assert_int_equal(mdp_cgroup_parse_pressure("some avg10=1.00\n", &some, &full), -EINVAL);
}

static void test_instance_names(void **state)
{
  char out[128], longp[400];
  (void)state;

  mdp_cgroup_instance("/", out, sizeof out);
  assert_string_equal(out, "cgroup-root");
  mdp_cgroup_instance("/memdiag-test/a", out, sizeof out);
  assert_string_equal(out, "cgroup-memdiag-test_a");
  mdp_cgroup_instance("/a b/c:d", out, sizeof out);
  assert_string_equal(out, "cgroup-a_b_c_d");
  memset(longp, 'x', sizeof longp - 1);
  longp[0] = '/';
  longp[sizeof longp - 1] = '\0';
  longp[sizeof longp - 2] = 'Z';
  mdp_cgroup_instance(longp, out, sizeof out);
  assert_int_equal(strlen(out), strlen("cgroup-") + 8 + 1 + 80);
  assert_int_equal(out[strlen(out) - 1], 'Z');
}

static int acquire(const char *tree, const char *proc, mdp_cgroup **cg, char *err, size_t len)
{
  char prefix[1024];
  mdp_cgroup_source src = {.mountinfo = NULL, .proc_cgroup = NULL, .root_prefix = prefix};
  char mi[64], pc[64];

  snprintf(prefix, sizeof prefix, "%s/%s", MEMDIAG_CGROUP_DATA, tree);
  snprintf(mi, sizeof mi, "%s/mountinfo", tree);
  snprintf(pc, sizeof pc, "%s/%s", tree, proc);
  src.mountinfo = slurp(mi);
  src.proc_cgroup = slurp(pc);
  return mdp_cgroup_acquire_from(&src, cg, err, len);
}

static void test_v2_nested_smallest_wins(void **state)
{
  mdp_cgroup *cg, *again;
  mdp_cgroup_stats s;
  char err[256] = "";
  (void)state;

  assert_int_equal(acquire("v2", "proc_cgroup_host", &cg, err, sizeof err), 0);
  assert_string_equal(mdp_cgroup_dir(cg),
                      "/sys/fs/cgroup/kubepods.slice/kubepods-pod1.slice/cri-containerd-abc.scope");
  assert_string_equal(mdp_cgroup_instance_of(cg),
                      "cgroup-kubepods.slice_kubepods-pod1.slice_cri-containerd-abc.scope");
  /* one entry per cgroup, shared */
  assert_int_equal(acquire("v2", "proc_cgroup_host", &again, err, sizeof err), 0);
  assert_ptr_equal(cg, again);
  mdp_cgroup_release(again);
  assert_int_equal(mdp_cgroup_sample(cg, 1.0, &s), 0);
  /* the container says max, the pod 400 MiB, kubepods 1 GiB */
  assert_true(s.limit == 400 * MiB);
  assert_true(s.high == 360 * MiB);
  assert_true(s.charge == 300 * MiB);
  assert_true(s.working_set == 290 * MiB); /* charge - inactive_file (10 MiB) */
  assert_true(s.anon == 250 * MiB);
  assert_true(s.file == 50 * MiB);
  assert_true(s.has_events && s.oom_kill == 1 && s.high_events == 7 && s.max_events == 3);
  assert_true(s.has_group_kill && s.oom_group_kill == 0);
  assert_true(s.has_psi);
  mdp_cgroup_release(cg);
}

static void test_v2_missing_files(void **state)
{
  mdp_cgroup *cg;
  mdp_cgroup_stats s;
  char err[256] = "";
  (void)state;

  assert_int_equal(acquire("v2", "proc_cgroup_bare", &cg, err, sizeof err), 0);
  assert_int_equal(mdp_cgroup_sample(cg, 1.0, &s), 0);
  assert_true(s.limit == 100 * MiB);
  assert_true(s.high == MDP_CGROUP_NO_LIMIT);
  assert_false(s.has_psi);
  assert_false(s.has_group_kill);
  assert_true(s.working_set == 50 * MiB);
  mdp_cgroup_release(cg);
  /* no memory controller enabled there: no cgroup, and a reason */
  assert_int_equal(acquire("v2", "proc_cgroup_nomem", &cg, err, sizeof err), -ENOENT);
  assert_non_null(strstr(err, "no memory controller files"));
}

static void test_namespace_views(void **state)
{
  mdp_cgroup *cg;
  mdp_cgroup_stats s;
  char err[256] = "";
  (void)state;

  /* The worker's own view inside its cgroup namespace is "0::/": given to
   * the resolver it names the hierarchy's root, which has no memory files
   * of its own; the plugin reads collectd's view instead (host test). */
  assert_int_equal(acquire("v2", "proc_cgroup_worker_view", &cg, err, sizeof err), -ENOENT);
  /* What a process in a namespace sees of a cgroup outside it */
  err[0] = '\0';
  assert_int_equal(acquire("v2", "proc_cgroup_outside", &cg, err, sizeof err), -EXDEV);
  assert_non_null(strstr(err, "not visible"));
  /* The v1 host's view: the memory line, not the "0::/" line */
  assert_int_equal(acquire("v1", "proc_cgroup_host", &cg, err, sizeof err), 0);
  assert_string_equal(mdp_cgroup_dir(cg), "/sys/fs/cgroup/memory/docker/abc");
  assert_int_equal(mdp_cgroup_sample(cg, 1.0, &s), 0);
  /* own limit 300 MiB, hierarchical 250 MiB: the smaller */
  assert_true(s.limit == 250 * MiB);
  assert_true(s.charge == 200 * MiB);
  assert_true(s.working_set == 192 * MiB);
  assert_true(s.anon == 150 * MiB && s.file == 40 * MiB);
  assert_true(s.has_events && s.oom_kill == 2 && s.max_events == 5);
  assert_true(s.high == MDP_CGROUP_NO_LIMIT);
  mdp_cgroup_release(cg);
}

/* A writable copy of one cgroup: memory.* files of a v1 cgroup. */
static void put(const char *dir, const char *name, const char *text)
{
  char path[1024];
  FILE *f;

  snprintf(path, sizeof path, "%s/%s", dir, name);
  f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void tmp_tree(char *root, size_t len, char *dir, size_t dlen)
{
  char tmpl[] = "/tmp/mdp-cgroup-XXXXXX";

  assert_non_null(mkdtemp(tmpl));
  snprintf(root, len, "%s", tmpl);
  snprintf(dir, dlen, "%s/cg", tmpl);
  assert_int_equal(mkdir(dir, 0700), 0);
  snprintf(dir, dlen, "%s/cg/app", tmpl);
  assert_int_equal(mkdir(dir, 0700), 0);
}

/* A v2 tree with one cgroup, /app: 1000 bytes charged, limit 300000,
 * working set 950, no event yet. */
static void v2_app(char *root, size_t rlen, char *dir, size_t dlen)
{
  tmp_tree(root, rlen, dir, dlen);
  put(dir, "memory.current", "1000\n");
  put(dir, "memory.max", "300000\n");
  put(dir, "memory.stat", "anon 900\nfile 100\ninactive_file 50\n");
  put(dir, "memory.events", "high 0\nmax 0\noom 0\noom_kill 0\n");
}

static void test_limit_change_and_oom_count(void **state)
{
  char root[256], dir[512], mi[600];
  mdp_cgroup *cg;
  mdp_cgroup_stats s, now;
  char err[256] = "";
  (void)state;

  v2_app(root, sizeof root, dir, sizeof dir);
  {
    char parent[600];
    snprintf(parent, sizeof parent, "%s/cg", root);
    put(parent, "memory.max", "400000\n"); /* the mount's root level, an ancestor */
  }
  snprintf(mi, sizeof mi, "26 25 0:24 / /cg rw - cgroup2 cgroup2 rw\n");
  mdp_cgroup_source src = {.mountinfo = mi, .proc_cgroup = "0::/app\n", .root_prefix = root};
  assert_int_equal(mdp_cgroup_acquire_from(&src, &cg, err, sizeof err), 0);
  assert_int_equal(mdp_cgroup_sample(cg, 1.0, &s), 0);
  assert_true(s.limit == 300000 && s.working_set == 950 && s.oom_kill == 0);
  /* a pod resized in place: seen at the next sample; now the ancestor's
   * 400000 is the tighter one */
  put(dir, "memory.max", "500000\n");
  assert_int_equal(mdp_cgroup_sample(cg, 2.0, &s), 0);
  assert_true(s.limit == 400000);
  /* a plain exit: the count did not rise */
  assert_int_equal(mdp_cgroup_oom_check(cg, &now), 0);
  /* the kernel's OOM killer: memory.events changes (inotify tells the sampler) */
  put(dir, "memory.events", "high 0\nmax 4\noom 1\noom_kill 1\n");
  assert_int_equal(mdp_cgroup_oom_check(cg, &now), 1);
  assert_true(now.oom_kill == 1 && now.limit == 400000);
  /* accounted once: a second worker's plain exit is not a kill */
  assert_int_equal(mdp_cgroup_oom_check(cg, &now), 0);
  assert_int_equal(mdp_cgroup_sample(cg, 3.0, &s), 0);
  assert_true(s.oom_kill == 1 && s.max_events == 4);
  /* another process's kill, seen for a whole interval with no worker gone,
   * is not blamed on the next worker that exits */
  put(dir, "memory.events", "high 0\nmax 5\noom 2\noom_kill 2\n");
  assert_int_equal(mdp_cgroup_sample(cg, 4.0, &s), 0);
  assert_int_equal(mdp_cgroup_sample(cg, 5.0, &s), 0);
  assert_int_equal(mdp_cgroup_oom_check(cg, &now), 0);
  mdp_cgroup_release(cg);
  mdp_cgroup_shutdown();
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  assert_int_equal(system(cmd), 0);
}

/* v2's memory.events counts the OOM kills of the cgroup's descendants too:
 * a kill in a child cgroup (another container of the pod, a process
 * another runtime put below) is not one of this cgroup's own processes,
 * which memory.events.local counts. */
static void test_v2_kill_in_a_child_cgroup(void **state)
{
  char root[256], dir[512], mi[600], cmd[600];
  mdp_cgroup *cg;
  mdp_cgroup_stats s, now;
  char err[256] = "";
  (void)state;

  v2_app(root, sizeof root, dir, sizeof dir);
  put(dir, "memory.events.local", "high 0\nmax 0\noom 0\noom_kill 0\n");
  snprintf(mi, sizeof mi, "26 25 0:24 / /cg rw - cgroup2 cgroup2 rw\n");
  mdp_cgroup_source src = {.mountinfo = mi, .proc_cgroup = "0::/app\n", .root_prefix = root};
  assert_int_equal(mdp_cgroup_acquire_from(&src, &cg, err, sizeof err), 0);
  assert_int_equal(mdp_cgroup_sample(cg, 1.0, &s), 0);
  /* a process of a child cgroup is killed: the hierarchical count rises */
  put(dir, "memory.events", "high 0\nmax 2\noom 1\noom_kill 1\n");
  assert_int_equal(mdp_cgroup_oom_check(cg, &now), 0);
  assert_true(now.oom_kill == 1 && now.own_oom_kill == 0);
  /* the values still show the kernel's memory.events */
  assert_int_equal(mdp_cgroup_sample(cg, 2.0, &s), 0);
  assert_true(s.oom_kill == 1 && s.own_oom_kill == 0);
  /* then one of its own: both rise */
  put(dir, "memory.events", "high 0\nmax 3\noom 2\noom_kill 2\n");
  put(dir, "memory.events.local", "high 0\nmax 1\noom 1\noom_kill 1\n");
  assert_int_equal(mdp_cgroup_oom_check(cg, &now), 1);
  assert_true(now.oom_kill == 2 && now.own_oom_kill == 1);
  assert_int_equal(mdp_cgroup_oom_check(cg, &now), 0);
  mdp_cgroup_release(cg);
  mdp_cgroup_shutdown();
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  assert_int_equal(system(cmd), 0);
}

static void test_fork_fits_the_room(void **state)
{
  char why[400];
  mdp_cgroup_room full = {"/sys/fs/cgroup/x", 400 * MiB, 360 * MiB, 64 * MiB, 200 * MiB};
  mdp_cgroup_room roomy = {"/c", 1024 * MiB, 200 * MiB, 64 * MiB, 100 * MiB};
  mdp_cgroup_room exact = {"/c", 300 * MiB, 86 * MiB, 64 * MiB, 100 * MiB};
  (void)state;

  /* 400 MiB limit at 90 %: 40 MiB room - 64 MiB margin holds no fork */
  assert_false(mdp_cgroup_fork_fits(&full, why, sizeof why));
  assert_string_equal(why, "cgroup /sys/fs/cgroup/x room -24.0 MiB (limit 400.0 MiB - charge 360.0 "
                           "MiB - margin 64.0 MiB) < copy-on-write estimate 300.0 MiB (1.5 x RSS "
                           "200.0 MiB): inline");
  /* plenty of room */
  assert_true(mdp_cgroup_fork_fits(&roomy, why, sizeof why));
  assert_non_null(strstr(why, ">= copy-on-write estimate 150.0 MiB"));
  assert_non_null(strstr(why, ": fork"));
  /* exactly enough */
  assert_true(mdp_cgroup_fork_fits(&exact, why, sizeof why));
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mountinfo_versions),
      cmocka_unit_test(test_proc_cgroup_lines),
      cmocka_unit_test(test_relative_refuses),
      cmocka_unit_test(test_limits_and_keys),
      cmocka_unit_test(test_instance_names),
      cmocka_unit_test(test_v2_nested_smallest_wins),
      cmocka_unit_test(test_v2_missing_files),
      cmocka_unit_test(test_namespace_views),
      cmocka_unit_test(test_limit_change_and_oom_count),
      cmocka_unit_test(test_v2_kill_in_a_child_cgroup),
      cmocka_unit_test(test_fork_fits_the_room),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
