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

/* Memdiag::Hook::Native.jemalloc_stats: jemalloc's merged statistics
 * (options "ax": without the per-arena and lock tables), or nil when the process's
 * malloc is not jemalloc's. */
static VALUE allocator_jemalloc_stats(VALUE klass)
{
  (void)klass;
  je_stats_fn stats;
  /* dlsym returns void *; a function pointer is copied out of it. */
  void *sym = dlsym(RTLD_DEFAULT, "malloc_stats_print");
  if(!sym)
    return Qnil;
  memcpy(&stats, &sym, sizeof(stats));
  je_report r = {.buf = malloc(JE_REPORT_MAX)};
  if(!r.buf)
    return Qnil;
  stats(je_collect, &r, "ax");
  VALUE out = rb_utf8_str_new(r.buf, (long)r.len);
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
