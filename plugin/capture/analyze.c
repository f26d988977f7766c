/* memdiag plugin: each completed capture analysed off the server thread;
 * see analyze.h. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "analysis/sampled.h"
#include "analyze.h"
#include "store/capfs.h"
#include "store/fsq.h"
#include "notify/notify.h"
#include "workers/registry.h"

#define ANALYSIS_FILE "analysis.json"
#define JSON_TOP      100 /* entries of each list in analysis.json */

/* What a finished capture's analysis needs, copied from its run: the run
 * itself is dropped as soon as the plan ends. */
typedef struct job {
  struct job *next;
  mdp_run_record rec; /* what its manifest says */
  char instance[128]; /* the worker's plugin_instance for the notification */
  uint64_t max_memory;
  unsigned slot; /* its entry in recent[] */
} job_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* guards all below */
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static job_t *head, *tail;
static pthread_t thread;
static bool running; /* the thread exists */
static atomic_int stopping;
static mdp_capture_recent_t recent[MDP_CAPTURE_RECENT_MAX];
static unsigned n_recent, next_slot;
static uint64_t recent_gen[MDP_CAPTURE_RECENT_MAX]; /* tells a reused slot */
static uint64_t gen;

static void set_recent(const job_t *j, uint64_t want_gen, const char *text)
{
  pthread_mutex_lock(&lock);
  if(recent_gen[j->slot] == want_gen) {
    snprintf(recent[j->slot].analysis, sizeof(recent[j->slot].analysis), "%s", text);
    recent[j->slot].finished_at = (uint64_t)time(NULL);
  }
  pthread_mutex_unlock(&lock);
}

size_t mdp_capture_recent(mdp_capture_recent_t *out, size_t max)
{
  size_t n = 0;
  pthread_mutex_lock(&lock);
  /* newest first: the slot before next_slot, going back */
  for(unsigned i = 0; i < n_recent && n < max; i++)
    out[n++] = recent[(next_slot + MDP_CAPTURE_RECENT_MAX - 1 - i) % MDP_CAPTURE_RECENT_MAX];
  pthread_mutex_unlock(&lock);
  return n;
}

static int fill_analysis(FILE *f, void *arg) { return mdp_analysis_write_json(f, arg, JSON_TOP); }

static void rewrite_manifest(const job_t *j, const char *analysis)
{
  mdp_manifest_info_t info = mdp_run_record_info(&j->rec, analysis);
  /* The run's last manifest may still wait on the fs thread: after it. */
  mdp_fsq_wait_idle();
  int rc = mdp_manifest_write(j->rec.dir, &info, &j->rec.plan);
  if(rc)
    ERROR("memdiag plugin: cannot add the analysis to %s/%s: %s", j->rec.dir, MDP_CAPFS_MANIFEST,
          strerror(-rc));
}

/* Fills buf (len bytes) with the notification's tail, fitted to len. */
typedef size_t (*tail_fit_fn)(const void *arg, char *buf, size_t len);

static size_t fit_text(const void *arg, char *buf, size_t len)
{
  int n = snprintf(buf, len, "%s", (const char *)arg);
  return n < 0 ? 0 : (size_t)n >= len ? len - 1 : (size_t)n;
}

static size_t fit_summary(const void *arg, char *buf, size_t len)
{
  size_t n = mdp_analysis_summary(arg, buf, len);
  return n ? n : fit_text("no retained objects", buf, len);
}

/* The OKAY notification the plan held back: the worker, then what leaks
 * (or why nothing was found), then where the capture is. collectd cuts a
 * message at 256 bytes, so the answer comes before the folder: the folder
 * goes whole when the answer still fits in full, else by its name in the
 * Store directory, else not at all (it is in the log line, capture.json
 * and memdiagctl status). `want` is the tail's full length. */
static void notify_compose(const job_t *j, tail_fit_fn fit, const void *arg, size_t want, char *buf,
                           size_t len)
{
  int h = snprintf(buf, len, "capture of worker %.60s (pid %d): capture complete; ",
                   j->rec.who.name, (int)j->rec.who.pid);
  size_t head = h < 0 ? 0 : (size_t)h >= len ? len - 1 : (size_t)h;
  const char *slash = strrchr(j->rec.dir, '/');
  const char *where[] = {j->rec.dir, slash ? slash + 1 : j->rec.dir};
  for(size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
    size_t tail = strlen("; folder ") + strlen(where[i]);
    if(head + want + tail < len) {
      size_t n = head + fit(arg, buf + head, len - head - tail);
      snprintf(buf + n, len - n, "; folder %s", where[i]);
      return;
    }
  }
  fit(arg, buf + head, len - head);
}

static void notify_done(const job_t *j, const char *msg)
{
  if(mdp_notify(NOTIF_OKAY, j->instance, "%s", msg) != 0)
    WARNING("memdiag plugin: %s", msg);
}

/* The plan's OKAY notification for a capture the analysis never got to
 * (plugin shutdown): it was held back for the analysis. */
static void notify_unanalysed(const job_t *j)
{
  char msg[NOTIF_MAX_MSG_LEN];
  const char *why = "analysis not run: plugin shutdown";
  notify_compose(j, fit_text, why, strlen(why), msg, sizeof(msg));
  notify_done(j, msg);
}

/* CaptureCommand (command.h) gets the folder now that analysis.json is in
 * it; run.c left that to this module. */
static void ship(const job_t *j)
{
  mdp_ship_job_t cj = {.folder = j->rec.dir,
                       .worker = j->rec.who.name,
                       .instance = j->instance,
                       .pid = j->rec.who.pid,
                       .reason = j->rec.plan.reason,
                       .complete = true,
                       .uid = j->rec.who.uid,
                       .gid = j->rec.who.gid};
  int rc = mdp_ship_submit(&cj);
  if(rc == -ENOSPC || rc == -ENOMEM)
    mdp_notify(NOTIF_FAILURE, j->instance,
               "CaptureCommand not run for the capture of worker %s (pid %d): %s; folder %s",
               j->rec.who.name, (int)j->rec.who.pid,
               rc == -ENOSPC ? "too many commands already wait" : "out of memory", j->rec.dir);
}

/* The plain name of a dump file (heap-2.json for .../heap-2.json.zst). */
static size_t plain_name(const char *path, const char **base)
{
  const char *b = strrchr(path, '/');
  *base = b ? b + 1 : path;
  size_t n = strlen(*base);
  return n > 4 && !strcmp(*base + n - 4, ".zst") ? n - 4 : n;
}

/* The worker's RSS when each dump ended, from the plugin's own read of its
 * memory map (0 where there is none). */
static void dump_rss(const job_t *j, char *const *paths, unsigned n, uint64_t *rss)
{
  for(unsigned i = 0; i < n; i++) {
    const char *base, *sb;
    size_t bl = plain_name(paths[i], &base);
    for(size_t k = 0; k < j->rec.plan.n_steps; k++) {
      const mdp_step_t *st = &j->rec.plan.steps[k];
      if(!mdp_step_is_dump(st->kind) || !st->mem.read)
        continue;
      size_t sl = plain_name(st->file, &sb);
      if(sl == bl && !memcmp(sb, base, bl))
        rss[i] = st->mem.rss;
    }
  }
}

/* The heap profile beside the last dump, for the analysis to join its
 * samples to the retained objects by address, and the first and middle
 * ones' GC counts at their dumps, which tell when a sample was allocated
 * against the dumps (sampled.h).
 * A capture without them (an older hook, sampling off) is analysed without.
 * Reading one may take a quarter of AnalyzeMaxMemory; what the samples keep
 * comes out of the analysis' budget. */
typedef struct {
  mdp_sampled_set last;
  mdp_analysis_samples in;
  char name[64];
} samples_t;

static void load_samples(samples_t *s, char **paths, unsigned n, mdp_analysis_opts *opts)
{
  mdp_sampled_opts so = {.check_owner = opts->check_owner,
                         .owner = opts->owner,
                         .memory_limit = opts->memory_limit / 4};
  mdp_sampled_set middle, first;
  char p0[4200], p1[4200], p2[4200], err[512];
  int rc, have_middle = 0, have_first = 0;

  memset(s, 0, sizeof(*s));
  if(n < 2 || mdp_sampled_profile_for(paths[n - 1], p2, sizeof(p2)))
    return;
  rc = mdp_sampled_load(p2, &so, &s->last, err, sizeof(err));
  if(rc) {
    if(rc != -ENOENT)
      WARNING("memdiag plugin: heap profile not used: %s", err);
    return;
  }
  if(n == 3 && !mdp_sampled_profile_for(paths[1], p1, sizeof(p1)))
    have_middle = mdp_sampled_load(p1, &so, &middle, err, sizeof(err)) == 0;
  if(n == 3 && !mdp_sampled_profile_for(paths[0], p0, sizeof(p0)))
    have_first = mdp_sampled_load(p0, &so, &first, err, sizeof(err)) == 0;
  const char *base = strrchr(p2, '/');
  snprintf(s->name, sizeof(s->name), "%.60s", base ? base + 1 : p2);
  s->in = mdp_sampled_for_analysis(&s->last, have_middle ? &middle : NULL,
                                   have_first ? &first : NULL, s->name);
  if(have_middle)
    mdp_sampled_free(&middle);
  if(have_first)
    mdp_sampled_free(&first);
  if(opts->memory_limit)
    opts->memory_limit =
        opts->memory_limit > s->last.bytes ? opts->memory_limit - s->last.bytes : 1;
  opts->samples = &s->in;
}

static void analyse(job_t *j, uint64_t my_gen)
{
  mdp_analysis_opts opts = {.memory_limit = j->max_memory, .cancel = &stopping};
  char *paths[MDP_ANALYSIS_DUMPS_MAX] = {NULL};
  mdp_analysis_result res;
  char err[512], line[NOTIF_MAX_MSG_LEN], what[256], msg[NOTIF_MAX_MSG_LEN];
  char *brief = NULL;
  size_t brief_len = 0;
  unsigned n = 0;
  int rc;

  set_recent(j, my_gen, "analysing");
  /* A worker that is not root could plant a hard link to a file it cannot
   * read in its folder: read only what it owns. */
  opts.check_owner = j->rec.who.uid != 0;
  opts.owner = j->rec.who.uid;
  rc = mdp_analysis_find_dumps(j->rec.dir, paths, &n, err, sizeof(err));
  if(!rc)
    dump_rss(j, paths, n, opts.rss);
  if(!rc) {
    samples_t samples;
    load_samples(&samples, paths, n, &opts);
    rc = mdp_analysis_run((const char *const *)paths, n, &opts, &res, err, sizeof(err));
    if(!rc && res.sampling.groups)
      INFO("memdiag plugin: %" PRIu64 " retained groups got sampled allocation sites from %s/%s "
           "(%" PRIu64 " of its %" PRIu64 " samples are retained objects)",
           res.sampling.groups, j->rec.dir, samples.name, res.sampling.retained,
           res.sampling.samples);
    mdp_sampled_free(&samples.last);
    for(unsigned i = 0; i < n; i++)
      free(paths[i]);
  }
  if(rc == -ECANCELED) { /* plugin shutdown: capture.json already says complete */
    notify_unanalysed(j);
    return;
  }
  if(rc) {
    ERROR("memdiag plugin: analysis of %s failed: %s", j->rec.dir, err);
    snprintf(what, sizeof(what), "analysis failed: %.200s", err);
    notify_compose(j, fit_text, what, strlen(what), msg, sizeof(msg));
    FILE *f = open_memstream(&brief, &brief_len);
    if(f) {
      fputs("{\"status\": \"failed\", \"error\": ", f);
      mdp_analysis_json_string(f, err);
      fputs("}", f);
      if(fclose(f) != 0) {
        free(brief);
        brief = NULL;
      }
    }
  } else {
    if(!mdp_analysis_summary(&res, line, sizeof(line)))
      snprintf(line, sizeof(line), "no retained objects");
    snprintf(what, sizeof(what), "%.199s", line);
    notify_compose(j, fit_summary, &res, strlen(line), msg, sizeof(msg));
    rc = mdp_capfs_write_file(j->rec.dir, ANALYSIS_FILE, fill_analysis, &res);
    if(rc)
      ERROR("memdiag plugin: cannot write %s/%s: %s", j->rec.dir, ANALYSIS_FILE, strerror(-rc));
    FILE *f = open_memstream(&brief, &brief_len);
    if(f) {
      bool bad = mdp_analysis_write_brief(f, &res, line, 3) != 0;
      if(fclose(f) != 0 || bad) {
        free(brief);
        brief = NULL;
      }
    }
    INFO("memdiag plugin: analysed %s in %.1f s (%.0f MiB at most): %s", j->rec.dir, res.seconds,
         (double)res.peak_memory / (1 << 20), line);
    mdp_analysis_result_free(&res);
  }
  rewrite_manifest(j, brief);
  free(brief);
  notify_done(j, msg);
  set_recent(j, my_gen, what);
  ship(j);
}

static void *thread_main(void *arg)
{
  (void)arg;
  /* Low priority: the analysis reads gigabytes while collectd and the
   * workers it watches keep running. */
  if(setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19) != 0)
    WARNING("memdiag plugin: cannot lower the analysis thread's priority: %s", strerror(errno));
  pthread_mutex_lock(&lock);
  for(;;) {
    while(!head && !atomic_load(&stopping))
      pthread_cond_wait(&wake, &lock);
    if(atomic_load(&stopping))
      break;
    job_t *j = head;
    head = j->next;
    if(!head)
      tail = NULL;
    uint64_t my_gen = recent_gen[j->slot];
    pthread_mutex_unlock(&lock);
    analyse(j, my_gen);
    free(j);
    pthread_mutex_lock(&lock);
  }
  pthread_mutex_unlock(&lock);
  return NULL;
}

static unsigned dumps_taken(const mdp_plan_t *p)
{
  unsigned n = 0;
  for(size_t i = 0; i < p->n_steps; i++)
    n += mdp_step_is_dump(p->steps[i].kind) && p->steps[i].status == MDP_SS_OK;
  return n;
}

bool mdp_analyze_submit(const mdp_run *r, const mdp_capture_config_t *cfg)
{
  mdp_worker_info info;
  bool ok = false;

  if(!cfg->analyze || !mdp_plan_is_finished(&r->plan) || !r->plan.complete ||
     dumps_taken(&r->plan) < 2 || atomic_load(&stopping))
    return false;
  job_t *j = calloc(1, sizeof(*j));
  if(!j)
    return false;
  mdp_run_record_of(&j->rec, r, cfg);
  if(mdp_registry_info(r->conn, &info) == 0)
    snprintf(j->instance, sizeof(j->instance), "%s", info.instance);
  j->max_memory = cfg->analyze_max_memory;

  pthread_mutex_lock(&lock);
  if(!running) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    running = pthread_create(&thread, &attr, thread_main, NULL) == 0;
    pthread_attr_destroy(&attr);
    if(running)
      pthread_setname_np(thread, "memdiag analyze");
    else
      ERROR("memdiag plugin: cannot start the analysis thread; captures are not analysed");
  }
  if(running) {
    j->slot = next_slot;
    next_slot = (next_slot + 1) % MDP_CAPTURE_RECENT_MAX;
    if(n_recent < MDP_CAPTURE_RECENT_MAX)
      n_recent++;
    mdp_capture_recent_t *e = &recent[j->slot];
    memset(e, 0, sizeof(*e));
    e->connection_id = j->rec.who.connection_id;
    snprintf(e->worker, sizeof(e->worker), "%s", j->rec.who.name);
    snprintf(e->directory, sizeof(e->directory), "%s", j->rec.dir);
    snprintf(e->analysis, sizeof(e->analysis), "queued");
    e->finished_at = (uint64_t)time(NULL);
    recent_gen[j->slot] = ++gen;
    if(tail)
      tail->next = j;
    else
      head = j;
    tail = j;
    pthread_cond_signal(&wake);
    ok = true;
  }
  pthread_mutex_unlock(&lock);
  if(!ok)
    free(j);
  return ok;
}

void mdp_analyze_stop(void)
{
  pthread_mutex_lock(&lock);
  bool join = running;
  atomic_store(&stopping, 1);
  pthread_cond_broadcast(&wake);
  pthread_mutex_unlock(&lock);
  if(join)
    pthread_join(thread, NULL);
  pthread_mutex_lock(&lock);
  while(head) {
    job_t *j = head;
    head = j->next;
    notify_unanalysed(j);
    free(j);
  }
  tail = NULL;
  running = false;
  /* A plugin started again (collectd reloading it) analyses again. */
  atomic_store(&stopping, 0);
  pthread_mutex_unlock(&lock);
}
