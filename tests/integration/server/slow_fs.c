/* Test hook for the slow_fs test: linked only into memdiag_slowfs.so, a
 * copy of the plugin for that test. capture_fs.c calls it before each
 * manifest write, prune scan and statvfs of a capture; it sleeps
 * MEMDIAG_TEST_FS_DELAY_MS and appends what it delayed to
 * MEMDIAG_TEST_FS_DELAY_LOG, so the test knows the delay happened. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void mdp_capfs_test_delay(const char *what);

void mdp_capfs_test_delay(const char *what)
{
  const char *ms = getenv("MEMDIAG_TEST_FS_DELAY_MS");
  const char *log = getenv("MEMDIAG_TEST_FS_DELAY_LOG");
  long n = ms ? strtol(ms, NULL, 10) : 0;
  struct timespec ts = {.tv_sec = n / 1000, .tv_nsec = (n % 1000) * 1000000L};

  if(n <= 0)
    return;
  while(nanosleep(&ts, &ts) != 0)
    ;
  if(log) {
    FILE *f = fopen(log, "a");
    if(f) {
      fprintf(f, "%s\n", what);
      fclose(f);
    }
  }
}
