/* Test hook for the slow_fs test: linked only into memdiag_slowfs.so, a
 * copy of the plugin for that test. capture_fs.c calls it before each walk
 * to CaptureDirectory ("open"), capture folder made ("mkdir"), manifest
 * write, prune scan and statvfs. It stands for a hung disk in two ways:
 * while the file MEMDIAG_TEST_FS_GATE does not exist it waits (logging
 * "wait <what>" first, so the test knows a call is held), then it sleeps
 * MEMDIAG_TEST_FS_DELAY_MS; afterwards it appends what it delayed to
 * MEMDIAG_TEST_FS_DELAY_LOG, so the test knows the delay happened. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void mdp_capfs_test_delay(const char *what);

static void note(const char *prefix, const char *what)
{
  const char *log = getenv("MEMDIAG_TEST_FS_DELAY_LOG");
  FILE *f = log ? fopen(log, "a") : NULL;

  if(f) {
    fprintf(f, "%s%s\n", prefix, what);
    fclose(f);
  }
}

static void nap(long ms)
{
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
  while(nanosleep(&ts, &ts) != 0)
    ;
}

void mdp_capfs_test_delay(const char *what)
{
  const char *gate = getenv("MEMDIAG_TEST_FS_GATE");
  const char *ms = getenv("MEMDIAG_TEST_FS_DELAY_MS");
  long n = ms ? strtol(ms, NULL, 10) : 0;

  if(gate && access(gate, F_OK) != 0) {
    note("wait ", what);
    while(access(gate, F_OK) != 0)
      nap(20);
  }
  if(n <= 0)
    return;
  nap(n);
  note("", what);
}
