/* Plain driver for the fuzz targets, built when libFuzzer is not (any
 * compiler; what ctest runs). It feeds LLVMFuzzerTestOneInput every file
 * named on the command line (a directory: every file in it, sorted), as
 * is, and then -runs=N deterministic mutations of each (bit flips, byte
 * overwrites, truncations, duplicated tails): the committed corpus is
 * replayed on every test run, and a little more than the corpus is
 * tried. A crash aborts the process, which fails the test.
 *
 *   fuzz_config [-runs=N] tests/fuzz/corpus/config ...
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_INPUT (1u << 20)

static unsigned long inputs, executions;

static uint32_t next_rand(uint32_t *s)
{
  /* xorshift32: reproducible on every platform, unlike rand_r */
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

/* Each run starts from the file itself; at most twice the file plus 64
 * bytes, so mutations stay near the seed the corpus chose. */
static void mutate_and_run(const uint8_t *seed, size_t len, unsigned long runs, uint32_t *rs)
{
  size_t cap = 2 * len + 64;
  uint8_t *buf = malloc(cap);

  if(!buf) {
    fprintf(stderr, "fuzz driver: out of memory\n");
    exit(2);
  }
  for(unsigned long r = 0; r < runs; r++) {
    size_t n = len;
    unsigned edits = 1 + next_rand(rs) % 4;
    memcpy(buf, seed, len);
    for(unsigned e = 0; e < edits; e++) {
      switch(next_rand(rs) % 4) {
      case 0:
        if(n)
          buf[next_rand(rs) % n] ^= (uint8_t)(1u << (next_rand(rs) % 8));
        break;
      case 1:
        if(n)
          buf[next_rand(rs) % n] = (uint8_t)next_rand(rs);
        break;
      case 2: n = n ? next_rand(rs) % (n + 1) : 0; break;
      case 3: {
        size_t from = n ? next_rand(rs) % n : 0, take = n - from;
        if(n + take <= cap) {
          memcpy(buf + n, buf + from, take);
          n += take;
        }
        break;
      }
      }
    }
    LLVMFuzzerTestOneInput(buf, n);
    executions++;
  }
  free(buf);
}

static int run_file(const char *path, unsigned long runs, uint32_t *rs)
{
  FILE *f = fopen(path, "rb");
  uint8_t *buf;
  size_t n;

  if(!f) {
    fprintf(stderr, "fuzz driver: %s: %s\n", path, strerror(errno));
    return -1;
  }
  buf = malloc(FUZZ_MAX_INPUT);
  if(!buf) {
    fclose(f);
    fprintf(stderr, "fuzz driver: out of memory\n");
    return -1;
  }
  n = fread(buf, 1, FUZZ_MAX_INPUT, f);
  fclose(f);
  /* an exact-size copy, so that a read past the end is caught by ASan */
  {
    uint8_t *exact = malloc(n ? n : 1);
    if(!exact) {
      free(buf);
      return -1;
    }
    memcpy(exact, buf, n);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
  }
  executions++;
  inputs++;
  mutate_and_run(buf, n, runs, rs);
  free(buf);
  return 0;
}

static int by_name(const void *a, const void *b)
{
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_path(const char *path, unsigned long runs, uint32_t *rs)
{
  struct stat st;
  DIR *d;
  struct dirent *e;
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;

  if(stat(path, &st) != 0) {
    fprintf(stderr, "fuzz driver: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if(!S_ISDIR(st.st_mode))
    return run_file(path, runs, rs);
  d = opendir(path);
  if(!d) {
    fprintf(stderr, "fuzz driver: %s: %s\n", path, strerror(errno));
    return -1;
  }
  while((e = readdir(d))) {
    char *full;
    if(e->d_name[0] == '.')
      continue;
    if(n == cap) {
      char **more = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
      if(!more) {
        rc = -1;
        break;
      }
      names = more;
    }
    full = malloc(strlen(path) + strlen(e->d_name) + 2);
    if(!full) {
      rc = -1;
      break;
    }
    sprintf(full, "%s/%s", path, e->d_name);
    names[n++] = full;
  }
  closedir(d);
  if(n)
    qsort(names, n, sizeof *names, by_name);
  for(size_t i = 0; i < n; i++) {
    if(rc == 0 && run_file(names[i], runs, rs) != 0)
      rc = -1;
    free(names[i]);
  }
  free(names);
  return rc;
}

int main(int argc, char **argv)
{
  unsigned long runs = 0;
  uint32_t rs = 0x9e3779b9u;
  int rc = 0;

  for(int i = 1; i < argc; i++) {
    if(strncmp(argv[i], "-runs=", 6) == 0) {
      runs = strtoul(argv[i] + 6, NULL, 10);
      continue;
    }
    if(run_path(argv[i], runs, &rs) != 0)
      rc = 1;
  }
  if(inputs == 0) {
    fprintf(stderr, "fuzz driver: no input files (usage: %s [-runs=N] FILE|DIR...)\n", argv[0]);
    return 1;
  }
  printf("%s: %lu corpus inputs, %lu executions, no crash\n", argv[0], inputs, executions);
  return rc;
}
