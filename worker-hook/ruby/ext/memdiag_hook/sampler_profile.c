/* Sampler.profile: the sampler's live objects as a gzip'd pprof profile
 * (see sampler.h and pprof_out.h), and the pruning of freed objects'
 * entries before it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ruby.h>
#include <ruby/thread.h>

#include "pprof_out.h"
#include "sampler_internal.h"

#define S mdh_sampler_g

/* Exported by libruby, not declared in its public headers (ObjectSpace's
 * memsize_of uses it). */
size_t rb_obj_memsize_of(VALUE obj);

static VALUE call_id2ref(VALUE id)
{
  return rb_funcall(rb_const_get(rb_cObject, rb_intern("ObjectSpace")), S.id2ref, 1, id);
}

/* Whether the entry's object is still alive, found by its object id (never
 * reused; the GC forgets the id of an object it frees) rather than by an
 * address that may no longer be in the heap; its address is updated. Runs
 * with the GC off (prune), so nothing moves or is freed meanwhile, unless
 * Ruby code run by the call asks for a GC itself. */
static int still_alive(mdh_stab_entry *e, void *arg)
{
  int state = 0;
  VALUE obj;
  (void)arg;
  obj = rb_protect(call_id2ref, ULL2NUM(e->object_id), &state);
  if(state) {
    rb_set_errinfo(Qnil); /* RangeError: freed */
    return 0;
  }
  e->addr = (uintptr_t)obj;
  return 1;
}

/* Returns Qtrue when the walk ran out of memory (the table is unchanged). */
static VALUE prune_body(VALUE unused)
{
  mdh_stab *t = S.walking;
  size_t dropped = 0;
  int rc = mdh_stab_filter(t, still_alive, NULL, NULL, &dropped);
  (void)unused;
  if(t != S.tab) /* turned off meanwhile: prune_end frees it */
    return Qfalse;
  if(rc)
    return Qtrue;
  S.freed += dropped;
  S.pruned_live = mdh_stab_live(t);
  return Qfalse;
}

static VALUE prune_end(VALUE gc_was_disabled)
{
  mdh_stab *t = S.walking;
  S.walking = NULL;
  if(t && t != S.tab)
    mdh_stab_free(t);
  S.busy--;
  if(!RTEST(gc_was_disabled))
    rb_gc_enable();
  return Qnil;
}

/* The GC is off meanwhile: a compaction would re-key the table in the
 * middle of the walk. */
int mdh_sampler_prune(void)
{
  VALUE was;
  if(!S.tab || S.failed || S.walking)
    return 0;
  was = rb_gc_disable();
  S.busy++;
  S.walking = S.tab;
  return RTEST(rb_ensure(prune_body, Qnil, prune_end, was)) ? -ENOMEM : 0;
}

struct profile_job {
  VALUE gc_was_disabled;
  int busy;
  mdh_stab_entry *entries;
  mdh_pprof_sample *samples;
  uint8_t *raw;
  size_t raw_len;
  uint8_t *gz;
  size_t gz_len;
  int rc;
  int has_dump_gc_count;
  size_t dump_gc_count;
  char comment[256];
};

/* With the GC off (rb_gc_disable finishes a lazy sweep first) and sampling
 * paused, nothing frees, moves or adds an entry while the live ones are
 * read (the caller has pruned the freed ones). */
static VALUE build_profile(VALUE arg)
{
  struct profile_job *j = (struct profile_job *)arg;
  size_t i, n, kept = 0;
  uint64_t weights = 0;
  struct timespec now;
  char dump_gc[48] = "";

  if(!S.tab && !(S.tab = mdh_stab_new()))
    rb_raise(rb_eNoMemError, "memdiag sampler: out of memory");
  j->gc_was_disabled = rb_gc_disable();
  S.busy++; /* an armed tracepoint disarms itself on its next event */
  j->busy = 1;
  n = mdh_stab_live(S.tab);
  j->entries = malloc((n ? n : 1) * sizeof *j->entries);
  j->samples = malloc((n ? n : 1) * sizeof *j->samples);
  if(!j->entries || !j->samples)
    rb_raise(rb_eNoMemError, "memdiag sampler: out of memory for a profile of %zu objects", n);
  n = mdh_stab_snapshot(S.tab, j->entries, n);
  for(i = 0; i < n; i++) {
    VALUE obj = (VALUE)j->entries[i].addr, klass, name;
    mdh_pprof_sample *s = &j->samples[kept];
    klass = rb_obj_class(obj);
    name = klass ? rb_class_name(klass) : Qnil;
    if(RB_TYPE_P(name, T_STRING))
      j->rc = mdh_stab_intern(S.tab, RSTRING_PTR(name), (size_t)RSTRING_LEN(name), &s->class_name);
    else
      j->rc = mdh_stab_intern(S.tab, "(anonymous)", 11, &s->class_name);
    if(j->rc)
      rb_raise(rb_eNoMemError, "memdiag sampler: out of memory naming classes");
    s->site = j->entries[i].site;
    s->generation = j->entries[i].generation;
    s->addr = j->entries[i].addr;
    s->count = j->entries[i].weight;
    s->bytes = (int64_t)rb_obj_memsize_of(obj) * (int64_t)j->entries[i].weight;
    weights += j->entries[i].weight;
    kept++;
  }
  /* "dump_gc_count N": the GC count at the last heap dump's fork (or an
   * inline one's start). The plugin takes a sample allocated after it for
   * another object in a slot freed since that dump; gc_count, now, is
   * later by the collections the worker ran while a forked dump wrote
   * (several under load), and let such samples pass for the dump's. */
  if(j->has_dump_gc_count)
    snprintf(dump_gc, sizeof dump_gc, ", dump_gc_count %zu", j->dump_gc_count);
  snprintf(j->comment, sizeof j->comment,
           "memdiag heap profile: pid %ld, gc_count %zu%s, %zu live samples standing for %llu "
           "allocations (up to %u samples a second)",
           (long)getpid(), rb_gc_count(), dump_gc, kept, (unsigned long long)weights, S.rate);
  clock_gettime(CLOCK_REALTIME, &now);
  {
    mdh_pprof_input in = {
        .table = S.tab,
        .samples = j->samples,
        .n_samples = kept,
        .period = kept ? (int64_t)(weights / kept) : 0,
        .time_nanos = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec,
        .comment = j->comment,
    };
    j->rc = mdh_pprof_encode(&in, &j->raw, &j->raw_len);
  }
  return Qnil;
}

static VALUE end_profile(VALUE arg)
{
  struct profile_job *j = (struct profile_job *)arg;
  if(j->busy)
    S.busy--;
  if(!RTEST(j->gc_was_disabled))
    rb_gc_enable();
  free(j->entries);
  free(j->samples);
  j->entries = NULL;
  j->samples = NULL;
  return Qnil;
}

static void *gzip_without_gvl(void *arg)
{
  struct profile_job *j = arg;
  j->rc = mdh_pprof_gzip(j->raw, j->raw_len, &j->gz, &j->gz_len);
  return NULL;
}

VALUE mdh_sampler_profile(int has_dump_gc_count, size_t dump_gc_count)
{
  struct profile_job j;
  VALUE out;
  memset(&j, 0, sizeof j);
  j.gc_was_disabled = Qtrue;
  j.has_dump_gc_count = has_dump_gc_count;
  j.dump_gc_count = dump_gc_count;
  rb_ensure(build_profile, (VALUE)&j, end_profile, (VALUE)&j);
  if(j.rc) {
    free(j.raw);
    rb_raise(rb_eNoMemError, "memdiag sampler: cannot encode the profile (%s)", strerror(-j.rc));
  }
  rb_thread_call_without_gvl(gzip_without_gvl, &j, NULL, NULL);
  free(j.raw);
  if(j.rc)
    rb_raise(rb_eRuntimeError, "memdiag sampler: cannot gzip the profile (%s)", strerror(-j.rc));
  out = rb_str_new((const char *)j.gz, (long)j.gz_len);
  free(j.gz);
  return out;
}

static VALUE sym(const char *s) { return ID2SYM(rb_intern(s)); }

VALUE mdh_sampler_stats(VALUE self)
{
  VALUE h = rb_hash_new();
  (void)self;
  rb_hash_aset(h, sym("state"), rb_str_new_cstr(S.failed ? "failed" : S.rate ? "on" : "off"));
  rb_hash_aset(h, sym("reason"), S.failed ? rb_str_new_cstr(S.reason) : Qnil);
  rb_hash_aset(h, sym("rate"), UINT2NUM(S.rate));
  rb_hash_aset(h, sym("live"), ULL2NUM(S.tab ? mdh_stab_live(S.tab) : 0));
  rb_hash_aset(h, sym("sites"), ULL2NUM(S.tab ? mdh_stab_n_sites(S.tab) : 0));
  rb_hash_aset(h, sym("samples"), ULL2NUM(S.samples));
  rb_hash_aset(h, sym("dropped"), ULL2NUM(S.dropped));
  rb_hash_aset(h, sym("freed"), ULL2NUM(S.freed));
  rb_hash_aset(h, sym("compactions"), ULL2NUM(S.compactions));
  rb_hash_aset(h, sym("moved"), ULL2NUM(S.moved));
  rb_hash_aset(h, sym("gated"), ULL2NUM(S.gated));
  rb_hash_aset(h, sym("table_bytes"), ULL2NUM(S.tab ? mdh_stab_bytes(S.tab) : 0));
  return h;
}
