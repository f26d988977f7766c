/* memdiag unit-test helpers (prefix mdt_): the temporary folders, files and
 * child processes several cmocka tests need. Linked into every unit test by
 * md_unit_test() (tests/unit/CMakeLists.txt).
 *
 * Each helper fails the running test (cmocka assertions) when the system
 * refuses it, so a test never goes on with a half-made fixture. Paths are
 * the caller's buffers; nothing here allocates. */
#ifndef MDT_H
#define MDT_H

#include <stddef.h>
#include <sys/types.h>

/* Makes a fresh private folder /tmp/md-STEM-XXXXXX and writes its path to
 * dir (len bytes). */
void mdt_tempdir(char *dir, size_t len, const char *stem);

/* The test's own temporary folder: cmocka setup and teardown functions (for
 * a group or for each test) that make a fresh mdt_dir and remove it with
 * all it holds. */
extern char mdt_dir[64];
int mdt_dir_setup(void **state);
int mdt_dir_teardown(void **state);

/* Removes dir and everything below it without following links. Not
 * system("rm -rf"): a test that ignores SIGCHLD cannot read its status.
 * Returns 0, or -1 when something was left. */
int mdt_rmtree(const char *dir);

/* Writes text to path (created or truncated). */
void mdt_write_text(const char *path, const char *text);

/* Writes bytes 'x' to dir/name (created or truncated). */
void mdt_write_bytes(const char *dir, const char *name, size_t bytes);

/* For each {input, expected} pair, fn(input, out, outlen) writes expected
 * to out (outlen at most 256). For the name sanitisers. */
void mdt_assert_rewrites(void (*fn)(const char *, char *, size_t), size_t outlen,
                         const char *const (*pairs)[2], size_t n);

/* Forks a child that waits in pause() until a signal ends it; the caller
 * reaps it. */
pid_t mdt_child_waiting(void);

#endif
