/* A stand-in for a jemalloc built with --with-jemalloc-prefix=je_, for
 * hook_allocator: it exports only the prefixed entry points the hook looks
 * for, je_malloc_stats_print and je_mallctl ("version"), and writes a
 * report in jemalloc's shape, in several pieces as jemalloc does, naming
 * the options it was given. (Debian's libjemalloc2 exports the plain names
 * and, with its initial-exec TLS, cannot be dlopen'ed behind a prefixed
 * forwarder.) Loaded with LD_PRELOAD; it replaces nothing. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define FAKE_VERSION "5.3.0-memdiag-test-je-prefix"

typedef void (*write_fn)(void *opaque, const char *text);

void je_malloc_stats_print(write_fn write, void *opaque, const char *opts);
int je_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

void je_malloc_stats_print(write_fn write, void *opaque, const char *opts)
{
  char line[128];

  write(opaque, "___ Begin jemalloc statistics ___\n");
  write(opaque, "Version: \"" FAKE_VERSION "\"\n");
  snprintf(line, sizeof line, "Options given: \"%s\"\n", opts ? opts : "");
  write(opaque, line);
  write(opaque, "Allocated: 4096, active: 8192, metadata: 1024 (n_thp 0), resident: 16384, "
                "mapped: 65536, retained: 0\n");
  write(opaque, "--- End jemalloc statistics ---\n");
}

int je_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
{
  static const char *const version = FAKE_VERSION;

  (void)newp;
  if(strcmp(name, "version") != 0 || newlen != 0)
    return 2; /* ENOENT, as jemalloc answers an unknown name */
  if(!oldp || !oldlenp || *oldlenp != sizeof version)
    return 22; /* EINVAL */
  memcpy(oldp, &version, sizeof version);
  return 0;
}
