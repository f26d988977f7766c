/* Sampled allocation tracking: see sampler.h. */
#include "sampler.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ruby/debug.h>
#include <ruby/version.h>
#include <ruby/vm.h>

#include "sample_table.h"
#include "sampler_internal.h"

enum { RAW_FRAMES = 32 };

#define S mdh_sampler_g

/* Postponed jobs: Ruby 3.3 deprecates rb_postponed_job_register_one for
 * handles made once at start (rb_postponed_job_preregister) and triggered
 * from anywhere, a signal handler included (rb_postponed_job_trigger). */
#if RUBY_API_VERSION_MAJOR > 3 || (RUBY_API_VERSION_MAJOR == 3 && RUBY_API_VERSION_MINOR >= 3)
#define MDH_JOB_HANDLES 1
static rb_postponed_job_handle_t job_turn_off = POSTPONED_JOB_HANDLE_INVALID;
static rb_postponed_job_handle_t job_finish_sample = POSTPONED_JOB_HANDLE_INVALID;
static rb_postponed_job_handle_t job_arm = POSTPONED_JOB_HANDLE_INVALID;
#define POST_JOB(handle, fn) rb_postponed_job_trigger(handle)
#else
#define POST_JOB(handle, fn) rb_postponed_job_register_one(0, fn, NULL)
#endif

/* The real-time signal the sampler's timer sends to arm the tracepoint. */
#define ARM_SIGNAL (SIGRTMIN + 6)

/* The kernel id of the thread last seen running Ruby code (at a sample, an
 * arming), 0 when none is known: the handler passes the timer's signal on to
 * it, as the main thread may sleep while others work (docs/hook.md). */
static atomic_int runner_tid;

/* What the handler reads: the rate while the timer runs (0 once stopped),
 * and the timer, valid while it is not 0 (published by its release). */
static atomic_uint tick_rate;
static timer_t tick_timer;

/* ---------------------------------------------------------------- helpers */

static uint64_t xorshift(uint64_t *state)
{
  *state ^= *state >> 12;
  *state ^= *state << 25;
  *state ^= *state >> 27;
  return *state * 0x2545F4914F6CDD1Dull;
}

static uint64_t next_random(void) { return xorshift(&S.rng); }

/* The timer's draws: start_timer's, then only its signal handler's. */
static uint64_t timer_rng;

/* The wait before the next arming, in microseconds: exponentially
 * distributed with mean 1/rate, so that no periodic pattern of the
 * application can hide between samples. */
static long next_wait_us(unsigned rate)
{
  double u = ((double)(xorshift(&timer_rng) >> 11) + 1.0) / 9007199254740993.0; /* (0, 1] */
  double w = -log(u) * 1e6 / (double)(rate ? rate : 1);
  if(w < 100.0)
    return 100;
  if(w > 60e6)
    return 60000000;
  return (long)w;
}

/* Armed at an interrupt check, the next allocation would always be the
 * same one of a loop's body: let a geometric number of allocations (mean
 * ARM_SPREAD) pass first. */
#define ARM_SPREAD 64
static unsigned spread(void)
{
  double u = ((double)(next_random() >> 11) + 1.0) / 9007199254740993.0;
  double k = -log(u) * ARM_SPREAD;
  return k > 16 * ARM_SPREAD ? 16 * ARM_SPREAD : (unsigned)k;
}

static void seed(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  S.rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ ((uint64_t)getpid() << 40) ^
          0x9E3779B97F4A7C15ull;
  if(!S.rng)
    S.rng = 1;
}

static int self_tid(void) { return (int)syscall(SYS_gettid); }

static void note_runner(void)
{
  atomic_store_explicit(&runner_tid, self_tid(), memory_order_relaxed);
}

static void disarm(void)
{
  if(S.armed) {
    rb_tracepoint_disable(S.tp_new);
    S.armed = 0;
  }
}

static void stop_timer(void);

/* Whether the postponed jobs can be triggered (Ruby 3.3 and later: their
 * handles were made at start-up). Without them, no start. */
static int jobs_ready(void)
{
#ifdef MDH_JOB_HANDLES
  return job_turn_off != POSTPONED_JOB_HANDLE_INVALID &&
         job_finish_sample != POSTPONED_JOB_HANDLE_INVALID &&
         job_arm != POSTPONED_JOB_HANDLE_INVALID;
#else
  return 1;
#endif
}

/* Stops sampling and frees the table, unless sampling is on and has not
 * failed: fail()'s postponed job, run after a Sampler.start that came in
 * between, must not stop the sampling that start began. */
static void turn_off(void *unused)
{
  (void)unused;
  if(S.rate && !S.failed)
    return;
  stop_timer();
  disarm();
  S.pending.set = 0;
  if(S.tab != S.walking) /* else the walk, still reading it, frees it */
    mdh_stab_free(S.tab);
  S.tab = NULL;
}

/* A failure: stop sampling at once, log it, and drop the table once Ruby
 * is out of the event (a postponed job). */
static void fail(const char *why)
{
  char line[400];
  int n;
  if(S.failed)
    return;
  S.failed = 1;
  atomic_store_explicit(&tick_rate, 0, memory_order_release); /* no more arming */
  snprintf(S.reason, sizeof S.reason, "%s", why);
  n = snprintf(line, sizeof line, "memdiag hook[%ld]: allocation sampling turned off: %s\n",
               (long)getpid(), why);
  if(n > 0 && write(2, line, (size_t)n) < 0) {
    /* stderr closed: the reason is still in Sampler.stats */
  }
  POST_JOB(job_turn_off, turn_off);
}

static void prune(void)
{
  if(mdh_sampler_prune())
    fail("out of memory pruning the table");
}

static const char *errno_text(int rc)
{
  return rc == -ENOSPC ? "the table is full" : "out of memory";
}

/* Objects an application allocates; the VM's own (iseqs, method entries,
 * hidden buffers) are not sampled. */
static int sampled_type(VALUE obj)
{
  switch(RB_BUILTIN_TYPE(obj)) {
  case RUBY_T_OBJECT:
  case RUBY_T_CLASS:
  case RUBY_T_MODULE:
  case RUBY_T_FLOAT:
  case RUBY_T_STRING:
  case RUBY_T_REGEXP:
  case RUBY_T_ARRAY:
  case RUBY_T_HASH:
  case RUBY_T_STRUCT:
  case RUBY_T_BIGNUM:
  case RUBY_T_FILE:
  case RUBY_T_DATA:
  case RUBY_T_MATCH:
  case RUBY_T_COMPLEX:
  case RUBY_T_RATIONAL:
  case RUBY_T_SYMBOL: return RBASIC_CLASS(obj) != 0;
  default: return 0;
  }
}

/* ---------------------------------------------------------------- sampling */

/* Postponed job: the allocation is over, so the object can be given an
 * object id (which may allocate and start a GC) and enter the table. An
 * object that did not survive until now is not counted. */
static void finish_sample(void *unused)
{
  mdh_sampler_pending p = S.pending;
  mdh_stab_entry e;
  int rc;
  (void)unused;
  S.pending.set = 0;
  if(!p.set || S.failed || !S.tab)
    return;
  if(S.walking) { /* no insert into a table in the middle of its walk */
    S.dropped++;
    return;
  }
  /* A GC since the allocation may have freed the object (and its page):
   * the sample is not taken. Without one the slot still holds it. */
  if(rb_gc_count() != p.generation || RBASIC_CLASS(p.obj) != p.klass) {
    S.dropped++;
    return;
  }
  e.object_id = NUM2ULL(rb_obj_id(p.obj));
  /* rb_obj_id may have run a GC, and a compaction moves objects */
  e.addr = (uintptr_t)rb_gc_location(p.obj);
  e.site = p.site;
  e.generation = p.generation;
  e.weight = p.weight;
  rc = mdh_stab_insert(S.tab, &e);
  if(rc) {
    fail(errno_text(rc));
    return;
  }
  S.samples++;
  if(mdh_stab_live(S.tab) > 2 * S.pruned_live + 1024)
    prune();
}

/* Reads the stack and interns the site; no Ruby allocation, no GC. */
static int take_site(uint32_t *site)
{
  VALUE frames[RAW_FRAMES];
  int lines[RAW_FRAMES];
  mdh_stab_frame f[MDH_STAB_MAX_FRAMES];
  size_t kept = 0;
  int i, n;

  n = rb_profile_frames(0, RAW_FRAMES, frames, lines);
  for(i = 0; i < n && kept < MDH_STAB_MAX_FRAMES; i++) {
    /* both return strings the iseq holds (no allocation); nil for a C
     * method, whose caller's line is where the object came from */
    VALUE path = rb_profile_frame_path(frames[i]);
    VALUE label = rb_profile_frame_label(frames[i]);
    if(!RB_TYPE_P(path, T_STRING) || !RB_TYPE_P(label, T_STRING))
      continue;
    f[kept].file = RSTRING_PTR(path);
    f[kept].file_len = (size_t)RSTRING_LEN(path);
    f[kept].label = RSTRING_PTR(label);
    f[kept].label_len = (size_t)RSTRING_LEN(label);
    f[kept].line = lines[i];
    kept++;
  }
  if(!kept) {
    f[0].file = "";
    f[0].file_len = 0;
    f[0].label = "(no Ruby frame)";
    f[0].label_len = strlen(f[0].label);
    f[0].line = 0;
    kept = 1;
  }
  return mdh_stab_site(S.tab, f, kept, site);
}

/* The NEWOBJ handler runs only while armed: on the first object of the
 * application's after the timer armed it. */
static void on_newobj(VALUE tpval, void *data)
{
  VALUE obj;
  size_t allocated;
  uint32_t site;
  int rc;
  (void)data;

  if(S.busy || S.failed || S.pending.set) {
    disarm();
    return;
  }
  if(S.countdown) {
    S.countdown--;
    return;
  }
  obj = rb_tracearg_object(rb_tracearg_from_tracepoint(tpval));
  if(!sampled_type(obj))
    return; /* stay armed for the next one */
  disarm();
  note_runner();
  if(!S.tab && !(S.tab = mdh_stab_new())) {
    fail("out of memory for the table");
    return;
  }
  rc = take_site(&site);
  if(rc) {
    fail(errno_text(rc));
    return;
  }
  allocated = rb_gc_stat(S.sym_total_allocated);
  S.pending.obj = obj;
  S.pending.klass = RBASIC_CLASS(obj);
  S.pending.site = site;
  S.pending.generation = (uint32_t)rb_gc_count();
  S.pending.weight =
      allocated > S.last_allocated
          ? (uint32_t)(allocated - S.last_allocated > UINT32_MAX ? UINT32_MAX
                                                                 : allocated - S.last_allocated)
          : 1;
  S.last_allocated = allocated;
  S.pending.set = 1;
  POST_JOB(job_finish_sample, finish_sample);
}

/* The wait until the next arming: a one-shot timer, drawn again by its
 * signal handler each time it fires, so that it keeps its pace while the
 * job waits for a thread to run it. Async-signal safe (timer_settime). */
static void schedule_next(unsigned rate)
{
  long us = next_wait_us(rate);
  struct itimerspec it = {.it_value = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000}};
  timer_settime(tick_timer, 0, &it, NULL);
}

/* Whether the process has used the CPU time for one more sample: at most
 * `rate` samples per second of its CPU time (a token bucket of two). The
 * timer runs by the clock, which CPU-time timers cannot match below the
 * scheduler's tick; a worker that gets half a CPU would otherwise take
 * twice the samples per CPU second, and the sampler's share of its CPU is
 * the rate times the cost of one sample whatever the machine's load. */
static int cpu_allows(void)
{
  struct timespec ts;
  double now;
  if(clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
    return 1;
  now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
  if(S.cpu_last <= 0.0 || now < S.cpu_last) {
    S.cpu_last = now;
    S.tokens = 1.0;
  }
  S.tokens += (now - S.cpu_last) * (double)S.rate;
  S.cpu_last = now;
  if(S.tokens > 2.0)
    S.tokens = 2.0;
  if(S.tokens < 1.0) {
    S.gated++;
    return 0;
  }
  S.tokens -= 1.0;
  return 1;
}

/* Postponed job, run by whichever thread holds the GVL at its next
 * interrupt check: arm the tracepoint for the next allocation. */
static void arm_job(void *unused)
{
  (void)unused;
  note_runner();
  if(S.rate && !S.failed && !S.busy && !S.pending.set && !S.armed && cpu_allows()) {
    S.countdown = spread();
    rb_tracepoint_enable(S.tp_new);
    S.armed = 1;
  }
}

#define PASSED_ON 0x6d64 /* si_value of a passed-on signal (the timer's: 0) */

/* Queued as the timer's own (SI_TIMER): an exec drops those, but a tgkill'd
 * one stayed pending on a thread that exec'd and killed the new program
 * once the handler was gone (29 execs in 30 at 10000/s, 2 in 40 at 100/s). */
static void pass_on(int sig)
{
  int t = atomic_load_explicit(&runner_tid, memory_order_relaxed);
  siginfo_t si = {.si_signo = sig, .si_code = SI_TIMER, .si_value.sival_int = PASSED_ON};
  if(t <= 0 || t == self_tid())
    return;
  if(syscall(SYS_rt_tgsigqueueinfo, (long)getpid(), (long)t, (long)sig, &si) != 0)
    atomic_compare_exchange_strong(&runner_tid, &t, 0); /* that thread has ended */
}

/* The timer's signal, on the main thread, and passed on once to the thread
 * last seen running Ruby code. Async-signal safe. */
static void on_arm_signal(int sig, siginfo_t *si, void *uc)
{
  int saved = errno;
  unsigned rate = atomic_load_explicit(&tick_rate, memory_order_acquire);
  (void)uc;
  /* Only a Ruby thread can register the job (not a native one that got a
   * passed-on signal, nor the VM being torn down at exit). */
  if(rate && ruby_native_thread_p())
    POST_JOB(job_arm, arm_job);
  if(rate && si && si->si_code == SI_TIMER && si->si_value.sival_int != PASSED_ON) {
    schedule_next(rate);
    pass_on(sig);
  }
  errno = saved;
}

/* Take the arming signal (unless the application handles it already) and
 * make a timer that sends it to the main thread, which lives as long as the
 * VM (TID = PID, in a forked child too): one aimed at the thread that started
 * sampling signalled no one once that thread ended. Returns NULL or why not. */
static const char *start_timer(void)
{
  struct sigevent ev;
  if(!S.signal_ok) {
    struct sigaction sa, old;
    if(sigaction(ARM_SIGNAL, NULL, &old) == 0 &&
       (old.sa_flags & SA_SIGINFO ? old.sa_sigaction != NULL : old.sa_handler != SIG_DFL))
      return "the application handles the sampler's signal (SIGRTMIN+6) itself";
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_arm_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if(sigaction(ARM_SIGNAL, &sa, NULL))
      return "cannot install the sampler's signal handler";
    S.signal_ok = 1;
  }
  if(S.have_timer) {
    atomic_store_explicit(&tick_rate, S.rate, memory_order_release); /* a new rate */
    return NULL;
  }
  memset(&ev, 0, sizeof ev);
  ev.sigev_notify = SIGEV_THREAD_ID;
  ev.sigev_signo = ARM_SIGNAL;
  ev._sigev_un._tid = getpid();
  if(timer_create(CLOCK_MONOTONIC, &ev, &S.timer))
    return "cannot create the sampler's timer";
  note_runner();
  S.have_timer = 1;
  timer_rng = next_random() | 1;
  tick_timer = S.timer;
  atomic_store_explicit(&tick_rate, S.rate, memory_order_release);
  schedule_next(S.rate);
  return NULL;
}

static void stop_timer(void)
{
  atomic_store_explicit(&tick_rate, 0, memory_order_release);
  if(S.have_timer)
    timer_delete(S.timer);
  S.have_timer = 0;
}

/* At the VM's end: the timer would go on firing into a VM that is gone. */
static void stop_at_exit(ruby_vm_t *vm)
{
  (void)vm;
  S.rate = 0;
  stop_timer();
}

/* ---------------------------------------------------------------- compaction */

static int follow_move(mdh_stab_entry *e, void *arg)
{
  (void)arg;
  e->addr = (uintptr_t)rb_gc_location((VALUE)e->addr);
  return 1;
}

/* Called by the GC while it updates references after moving objects. */
static void holder_compact(void *p)
{
  size_t moved = 0;
  (void)p;
  if(S.pending.set)
    S.pending.obj = rb_gc_location(S.pending.obj);
  if(!S.tab || S.failed)
    return;
  if(mdh_stab_filter(S.tab, follow_move, NULL, &moved, NULL)) {
    fail("out of memory re-keying the table after GC compaction moved objects");
    return;
  }
  S.compactions++;
  S.moved += moved;
}

static size_t holder_size(const void *p)
{
  (void)p;
  return S.tab ? mdh_stab_bytes(S.tab) : 0;
}

static const rb_data_type_t holder_type = {
    .wrap_struct_name = "Memdiag::Hook::Sampler table",
    .function = {.dmark = NULL, .dfree = NULL, .dsize = holder_size, .dcompact = holder_compact},
    .flags = 0,
};

/* ---------------------------------------------------------------- fork */

/* The child's heap is a copy of the parent's, but its objects live and die
 * on their own from here: the child starts an empty table. The inherited
 * one is left unfreed: freeing would write to (and copy) its pages. The
 * timer is not inherited: Sampler.after_fork makes the child's
 * (memdiag/hook/fork_tracking). A tracepoint armed at the fork stays armed
 * in the child until its next allocation. */
static void after_fork_child(void)
{
  S.tab = NULL;
  S.pending.set = 0;
  S.samples = S.dropped = S.freed = S.compactions = S.moved = S.gated = 0;
  S.cpu_last = 0.0; /* the child's CPU clock starts again */
  S.pruned_live = 0;
  S.busy = 0;
  S.walking = NULL; /* the walk, if any, was another thread's */
  S.have_timer = 0; /* timers are not inherited */
  atomic_store_explicit(&tick_rate, 0, memory_order_relaxed);
  /* S.armed stays, as the tracepoint's state does (docs/hook.md): cleared,
   * the child sampled every allocation it could. */
  atomic_store_explicit(&runner_tid, 0, memory_order_relaxed); /* the parent's threads */
  seed();
}

/* ---------------------------------------------------------------- Ruby API */

/* Sampler.start(rate) -> true: sample up to `rate` allocations a second
 * (fewer when the application holds the GVL for long stretches). A new
 * rate keeps the table: each sample carries its own weight. 0 turns
 * sampling off, as Sampler.stop. */
static VALUE sampler_start(VALUE self, VALUE rate)
{
  unsigned n = NUM2UINT(rate);
  (void)self;
  if(!n) {
    S.rate = 0;
    turn_off(NULL);
    return Qfalse;
  }
  if(!jobs_ready()) /* the failure of the start-up stays, with its reason */
    return Qfalse;
  if(S.failed) {
    turn_off(NULL); /* now, not by fail()'s job once sampling runs again */
    S.failed = 0;
    S.reason[0] = '\0';
  }
  if(!S.rate)
    S.last_allocated = rb_gc_stat(S.sym_total_allocated);
  S.rate = n;
  {
    const char *why = start_timer();
    if(why) {
      fail(why);
      return Qfalse;
    }
  }
  return Qtrue;
}

/* Sampler.stop -> nil: no more samples, table freed. */
static VALUE sampler_stop(VALUE self)
{
  (void)self;
  S.rate = 0;
  turn_off(NULL);
  return Qnil;
}

/* Sampler.pause -> nil: no arming until Sampler.resume; the table, the rate
 * and the samples stay. For benchmarks that interleave sampling on and off
 * in one process (tests/bench/alloc-sampling). */
static VALUE sampler_pause(VALUE self)
{
  (void)self;
  stop_timer();
  disarm();
  return Qnil;
}

/* Sampler.resume -> nil: arm again at the rate set (nothing while off). */
static VALUE sampler_resume(VALUE self)
{
  const char *why;
  (void)self;
  S.cpu_last = 0.0; /* no samples banked from the CPU used while paused */
  if(S.rate && !S.failed && (why = start_timer()))
    fail(why);
  return Qnil;
}

/* Sampler.after_fork -> nil: in a forked child, make the child's timer
 * (the table was already reset). */
static VALUE sampler_after_fork(VALUE self)
{
  const char *why;
  (void)self;
  /* weights count the child's allocations only */
  S.last_allocated = rb_gc_stat(S.sym_total_allocated);
  if(S.rate && !S.failed && (why = start_timer()))
    fail(why);
  return Qnil;
}

/* Sampler.prune -> Integer: drop freed objects now; how many remain. */
static VALUE sampler_prune(VALUE self)
{
  (void)self;
  prune();
  return ULL2NUM(S.tab ? mdh_stab_live(S.tab) : 0);
}

/* Sampler.profile(dump_gc_count = nil) -> String (binary): the live
 * sampled objects as a gzip'd pprof profile. Works while sampling is off
 * too (an empty one). dump_gc_count: GC.count when the last heap dump was
 * taken, written in the comment beside the profile's own (see
 * mdh_sampler_profile); checked before the prune, so a bad one costs
 * nothing. */
static VALUE sampler_profile(int argc, VALUE *argv, VALUE self)
{
  VALUE dump_gc = Qnil;
  size_t dump_gc_count = 0;
  (void)self;
  rb_scan_args(argc, argv, "01", &dump_gc);
  if(!NIL_P(dump_gc)) {
    if(!RB_INTEGER_TYPE_P(dump_gc) || RTEST(rb_funcall(dump_gc, rb_intern("negative?"), 0)))
      rb_raise(rb_eArgError, "memdiag sampler: dump_gc_count must be a GC count (an Integer >= 0)");
    dump_gc_count = NUM2SIZET(dump_gc);
  }
  prune();
  return mdh_sampler_profile(!NIL_P(dump_gc), dump_gc_count);
}

/* Sampler.simulate_failure(reason): what a failure inside the sampler
 * does; for tests. */
static VALUE sampler_simulate_failure(VALUE self, VALUE reason)
{
  (void)self;
  fail(StringValueCStr(reason));
  return Qnil;
}

void mdh_sampler_init(VALUE hook_module)
{
  VALUE m = rb_define_module_under(hook_module, "Sampler");
  static int once;

  rb_define_const(m, "DEFAULT_RATE", UINT2NUM(MDH_SAMPLER_DEFAULT_RATE));
  rb_define_module_function(m, "start", sampler_start, 1);
  rb_define_module_function(m, "stop", sampler_stop, 0);
  rb_define_module_function(m, "after_fork", sampler_after_fork, 0);
  rb_define_module_function(m, "pause", sampler_pause, 0);
  rb_define_module_function(m, "resume", sampler_resume, 0);
  rb_define_module_function(m, "stats", mdh_sampler_stats, 0);
  rb_define_module_function(m, "prune", sampler_prune, 0);
  rb_define_module_function(m, "profile", sampler_profile, -1);
  rb_define_module_function(m, "simulate_failure", sampler_simulate_failure, 1);
  if(once)
    return;
  once = 1;
  seed();
  S.id2ref = rb_intern("_id2ref");
  S.sym_total_allocated = ID2SYM(rb_intern("total_allocated_objects"));
  S.tp_new = rb_tracepoint_new(0, RUBY_INTERNAL_EVENT_NEWOBJ, on_newobj, NULL);
  rb_gc_register_mark_object(S.tp_new);
  S.holder = TypedData_Wrap_Struct(rb_cObject, &holder_type, &S);
  rb_gc_register_mark_object(S.holder);
  pthread_atfork(NULL, NULL, after_fork_child);
  ruby_vm_at_exit(stop_at_exit);
#ifdef MDH_JOB_HANDLES
  job_turn_off = rb_postponed_job_preregister(0, turn_off, NULL);
  job_finish_sample = rb_postponed_job_preregister(0, finish_sample, NULL);
  job_arm = rb_postponed_job_preregister(0, arm_job, NULL);
  if(!jobs_ready()) {
    S.failed = 1; /* never started: nothing to trigger a job for */
    snprintf(S.reason, sizeof S.reason, "no postponed job handle left in this Ruby");
  }
#endif
}
