/* The allocator's own statistics (allocator.h). */
#include "allocator.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* jemalloc's report goes into one buffer taken before it starts: the
 * write callback runs inside jemalloc's stats code and must not call
 * back into the allocator. A report longer than the buffer is cut, and
 * says so. */
#define JE_REPORT_MAX (512u * 1024u)

typedef struct {
  char *buf;
  size_t len;
  int cut;
} je_report;

typedef void (*je_write_fn)(void *opaque, const char *text);
typedef void (*je_stats_fn)(je_write_fn write, void *opaque, const char *opts);
typedef int (*je_mallctl_fn)(const char *name, void *oldp, size_t *oldlenp, void *newp,
                             size_t newlen);

static void je_collect(void *opaque, const char *text)
{
  je_report *r = opaque;
  size_t n = strlen(text);
  size_t room = JE_REPORT_MAX - r->len;
  if(n > room) {
    n = room;
    r->cut = 1;
  }
  memcpy(r->buf + r->len, text, n);
  r->len += n;
}

/* A jemalloc's entry points under one naming: "" as Debian's libjemalloc
 * and a jemalloc-linked Ruby export them, "je_" as a jemalloc configured
 * with --with-jemalloc-prefix=je_ (some Ruby builds, LD_PRELOAD setups
 * that keep the system malloc) does. */
typedef struct {
  je_stats_fn stats;
  je_mallctl_fn mallctl; /* NULL when absent */
  const char *stats_name;
} je_api;

static const char *const je_prefixes[] = {"", "je_"};

static void *je_sym(const char *prefix, const char *name)
{
  char full[64];
  snprintf(full, sizeof full, "%s%s", prefix, name);
  return dlsym(RTLD_DEFAULT, full);
}

/* The first naming under which malloc_stats_print is found; 0, or -1
 * when the process has no jemalloc. */
static int je_find(je_api *api)
{
  static const char *const names[] = {"malloc_stats_print", "je_malloc_stats_print"};
  for(size_t i = 0; i < sizeof je_prefixes / sizeof je_prefixes[0]; i++) {
    void *s = je_sym(je_prefixes[i], "malloc_stats_print");
    if(!s)
      continue;
    /* dlsym returns void *; a function pointer is copied out of it. */
    memcpy(&api->stats, &s, sizeof(api->stats));
    void *m = je_sym(je_prefixes[i], "mallctl");
    if(m)
      memcpy(&api->mallctl, &m, sizeof(api->mallctl));
    else
      api->mallctl = NULL;
    api->stats_name = names[i];
    return 0;
  }
  return -1;
}

/* Memdiag::Hook::Native.jemalloc_stats: a first line naming the jemalloc
 * ("jemalloc 5.3.0-0-g54eaed1d through je_malloc_stats_print", its
 * version from mallctl "version"), then its merged statistics (options
 * "ax": without the per-arena and lock tables); nil when the process has
 * no jemalloc under either naming. */
static VALUE allocator_jemalloc_stats(VALUE klass)
{
  (void)klass;
  je_api api;
  const char *version = NULL;
  size_t vlen = sizeof version;
  char head[160];

  if(je_find(&api) != 0)
    return Qnil;
  if(api.mallctl && api.mallctl("version", &version, &vlen, NULL, 0) != 0)
    version = NULL;
  snprintf(head, sizeof head, "jemalloc %.64s through %s\n",
           version ? version : "(version unknown)", api.stats_name);
  je_report r = {.buf = malloc(JE_REPORT_MAX)};
  if(!r.buf)
    return Qnil;
  api.stats(je_collect, &r, "ax");
  VALUE out = rb_utf8_str_new_cstr(head);
  rb_str_cat(out, r.buf, (long)r.len);
  free(r.buf);
  if(r.cut)
    rb_str_cat_cstr(out, "\n(cut at 512 KiB)\n");
  return out;
}

/* Memdiag::Hook::Native.malloc_info: glibc's malloc_info(3) XML (its
 * arenas, free chunks and system memory), or nil elsewhere. */
static VALUE allocator_malloc_info(VALUE klass)
{
  (void)klass;
#ifdef __GLIBC__
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if(!f)
    return Qnil;
  int rc = malloc_info(0, f);
  if(fclose(f) != 0)
    rc = -1;
  VALUE out = rc == 0 && buf ? rb_utf8_str_new(buf, (long)len) : Qnil;
  free(buf);
  return out;
#else
  return Qnil;
#endif
}

void mdh_allocator_define(VALUE native_class)
{
  rb_define_singleton_method(native_class, "malloc_info", allocator_malloc_info, 0);
  rb_define_singleton_method(native_class, "jemalloc_stats", allocator_jemalloc_stats, 0);
}
