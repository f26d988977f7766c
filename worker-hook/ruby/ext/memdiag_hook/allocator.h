/* The allocator's own statistics for the GC profile, part of the
 * hook_native extension: Memdiag::Hook::Native.malloc_info (glibc's
 * malloc_info(3) XML) and Memdiag::Hook::Native.jemalloc_stats (jemalloc's
 * malloc_stats_print text, when the process has a jemalloc: preloaded or
 * linked into Ruby, its symbols plain or prefixed "je_", its version from
 * mallctl "version" on the first line). Each returns a new String or nil
 * when that allocator is not there.
 *
 * Threading: called with the GVL held; the allocator locks what it reports
 * while it reports it. Ownership: nothing is kept between calls. */
#ifndef MDH_ALLOCATOR_H
#define MDH_ALLOCATOR_H

#include <ruby.h>

/* Defines both singleton methods on the Native class. */
void mdh_allocator_define(VALUE native_class);

#endif
