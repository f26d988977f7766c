/* Fuzz target for the heap-dump line scanner, memdiag's own JSON scanner:
 * any bytes, as a whole line or as a long line's head and tail, are either
 * scanned or refused with a reason; never a crash or a read outside them.
 * Built as a libFuzzer target with -DMD_LIBFUZZER, otherwise as a
 * self-contained driver over mutated dump lines that also runs whole
 * analyses over mutated dumps. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const mdp_analysis_line *l)
{
  mdp_analysis_obj o;
  const char *why = NULL;
  char out[300];

  if(mdp_analysis_scan(l, &o, &why) != 0) {
    if(!why || !*why)
      abort(); /* a refusal always says why */
    return;
  }
  if(o.value)
    mdp_analysis_unescape(o.value, o.value_len, out, sizeof(out));
  if(o.file)
    mdp_analysis_unescape(o.file, o.file_len, out, sizeof(out));
  if(o.name)
    mdp_analysis_unescape(o.name, o.name_len, out, sizeof(out));
  if(!mdp_analysis_type_name(o.type))
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  /* Copies of exactly the input's length, so that a read past the end is
   * caught by ASan (or valgrind) rather than landing in the caller's data. */
  char *copy = malloc(size ? size : 1);
  char out[64];
  if(!copy)
    return 0;
  memcpy(copy, data, size);
  mdp_analysis_line whole = {copy, size, NULL, 0, size};
  check(&whole);
  if(size > 1) {
    size_t cut = (size_t)data[0] % size;
    char *head = malloc(cut ? cut : 1), *tail = malloc(size - cut);
    if(head && tail) {
      memcpy(head, data, cut);
      memcpy(tail, data + cut, size - cut);
      mdp_analysis_line split = {head, cut, tail, size - cut, size + 1000000};
      check(&split);
    }
    free(head);
    free(tail);
  }
  mdp_analysis_unescape(copy, size, out, sizeof(out));
  free(copy);
  return 0;
}

#ifndef MD_LIBFUZZER
#include "analysis/analysis.h"

static const char *const seeds[] = {
    "{\"address\":\"0x7f734617d688\", \"type\":\"STRING\", \"class\":\"0x7f7349dea440\", "
    "\"embedded\":true, \"bytesize\":6, \"value\":\"le\\\"k\\u00e9\", \"encoding\":\"UTF-8\", "
    "\"file\":\"mk.rb\", \"line\":3, \"method\":\"initialize\", \"generation\":9, \"memsize\":40, "
    "\"flags\":{\"wb_protected\":true}}",
    "{\"address\":\"0x7f734617a938\", \"type\":\"CLASS\", \"class\":\"0x7f734617a8e8\", "
    "\"superclass\":\"0x7f7349de6868\", \"name\":\"Leaky\", \"references\":[\"0x7f7349de6868\", "
    "\"0x7f734617a870\"], \"file\":\"mk.rb\", \"line\":3, \"generation\":9, \"memsize\":864, "
    "\"flags\":{\"wb_protected\":true, \"old\":true, \"uncollectible\":true, \"marked\":true}}",
    "{\"type\":\"ROOT\", \"root\":\"vm\", \"references\":[\"0x7f7349e13cc8\", \"0x7f7349de7fd8\"]}",
    "{\"address\":\"0x7f7349e40020\", \"type\":\"IMEMO\", \"class\":\"0x7f7349e401d8\", "
    "\"imemo_type\":\"callcache\", \"references\":[\"0x7f7349de6318\"], \"memsize\":40, "
    "\"flags\":{\"wb_protected\":true, \"old\":true, \"pinned\":true}}",
    "{\"address\":\"0x7f7349e41678\", \"type\":\"OBJECT\", \"class\":\"0x7f7349e2ce80\", "
    "\"ivars\":49, \"references\":[\"0x7f734616ac40\"], \"memsize\":432, \"x\":[1,-2.5e3,null,{}]}",
};
#define N_SEEDS (sizeof(seeds) / sizeof(seeds[0]))

static const char special[] = "\"\\{}[],: \n0xu";

static size_t mutate(char *buf, size_t len, size_t cap, unsigned *seed)
{
  unsigned edits = 1 + (unsigned)(rand_r(seed) % 6);
  for(unsigned k = 0; k < edits && len; k++) {
    size_t at = (size_t)rand_r(seed) % len;
    switch(rand_r(seed) % 4) {
    case 0: buf[at] ^= (char)(1u << (rand_r(seed) % 8)); break;
    case 1: buf[at] = special[(size_t)rand_r(seed) % (sizeof(special) - 1)]; break;
    case 2: len = at; break;
    default:
      if(len < cap) {
        memmove(buf + at + 1, buf + at, len - at);
        buf[at] = special[(size_t)rand_r(seed) % (sizeof(special) - 1)];
        len++;
      }
    }
  }
  return len;
}

/* A dump of the seed lines, mutated, run through the whole analysis. */
static void whole_dump(unsigned *seed, const char *path)
{
  FILE *f = fopen(path, "w");
  char buf[1024];
  if(!f)
    abort();
  for(unsigned i = 0; i < 8; i++) {
    const char *s = seeds[(size_t)rand_r(seed) % N_SEEDS];
    size_t len = strlen(s);
    memcpy(buf, s, len);
    if(rand_r(seed) % 3 == 0)
      len = mutate(buf, len, sizeof(buf), seed);
    fwrite(buf, 1, len, f);
    if(rand_r(seed) % 16)
      fputc('\n', f);
  }
  if(fclose(f))
    abort();
  const char *paths[3] = {path, path, path};
  mdp_analysis_result res;
  char err[512];
  if(mdp_analysis_run(paths, 3, NULL, &res, err, sizeof(err)) == 0)
    mdp_analysis_result_free(&res);
  else if(!strstr(err, path))
    abort(); /* every failure names the dump */
}

int main(int argc, char **argv)
{
  unsigned long runs = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
  unsigned seed = 1;
  char buf[1024], path[64];

  snprintf(path, sizeof(path), "/tmp/md-fuzz-dump-%d.json", (int)getpid());
  for(unsigned long i = 0; i < runs; i++) {
    const char *s = seeds[i % N_SEEDS];
    size_t len = strlen(s);
    memcpy(buf, s, len);
    len = mutate(buf, len, sizeof(buf), &seed);
    LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
    if(i % 500 == 0)
      whole_dump(&seed, path);
  }
  unlink(path);
  printf("fuzz_dump_scan: %lu mutated dump lines scanned or refused without a crash\n", runs);
  return 0;
}
#endif
