/* Sampled allocation tracking (Memdiag::Hook::Sampler), part of the
 * hook_native extension.
 *
 * Measured on Ruby 3.1 (tests/bench/alloc-sampling): any GC event hook
 * left enabled (NEWOBJ, FREEOBJ, even GC_END_MARK) takes every allocation
 * off Ruby's fast path and costs an allocation-heavy loop 10-100 %. So the
 * internal NEWOBJ tracepoint is enabled ("armed") only for one allocation
 * at a time: a POSIX timer sends a real-time signal (SIGRTMIN+6) to the
 * thread that started the sampler after a random wait of mean 1/rate
 * seconds; its handler registers a postponed job, which arms the
 * tracepoint in whichever thread runs Ruby then (so the samples fall at
 * random times, not where threads switch) when the process has used 1/rate
 * seconds of CPU since the last one (so at most `rate` samples per CPU
 * second, whatever the load); the handler disarms it on the first object
 * the application allocates, reads its site (rb_profile_frames: the Ruby
 * frames, leaf first), the GC count and the allocations since the last
 * sample (its weight), without allocating Ruby memory, calling Ruby methods
 * or releasing the GVL. A postponed job then gives the object an object id
 * and records it in a C table (sample_table.h). FREEOBJ is not hooked
 * either: an entry is alive while a live object at its address carries its
 * object id (object ids are never reused), checked when the table has
 * doubled and before each profile. GC compaction moves objects: a T_DATA
 * object's dcompact callback re-keys the table with rb_gc_location(). After
 * a fork the child drops the inherited table without freeing it (its pages
 * stay shared with the parent) and starts its own. Any failure (no memory,
 * table full) turns sampling off with a line on stderr and the reason in
 * Sampler.stats; a Sampler.start after it starts afresh, with a new table.
 *
 * Threading: everything runs with the GVL held, except the gzip of a
 * profile and the signal handler (which only registers the job). An
 * application that handles SIGRTMIN+6 itself gets no sampling (the reason
 * says so). */
#ifndef MDH_SAMPLER_H
#define MDH_SAMPLER_H

#include <ruby.h>

/* Samples a second when nothing else is configured. */
#define MDH_SAMPLER_DEFAULT_RATE 100

/* Defines Memdiag::Hook::Sampler under `hook_module`. */
void mdh_sampler_init(VALUE hook_module);

#endif
