/* Capture module: what a run does on CaptureDirectory, all of it on the fs
 * thread (store/fsq.h) with its answer back on the loop thread: making the
 * capture folder, the space check before a dump, the manifest writes.
 * See run.h. Nothing here reaches into run.c (its state or functions):
 * what a job needs is passed in, and answers go to the callbacks given. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/capfs.h"
#include "capture/plan/request.h"
#include "store/fsq.h"
#include "md/text.h"
#include "run.h"
#include "workers/registry.h"

/* ---------------------------------------------------------------- root */

typedef struct {
  mdp_fsq_job job;
  char root[MDP_CAPTURE_PATH_MAX];
} root_job;

static void root_work(mdp_fsq_job *j)
{
  root_job *rj = (root_job *)j;
  char err[512];

  if(mdp_capfs_check_root(rj->root, err, sizeof(err)) != 0)
    ERROR("memdiag plugin: %s: captures fail until this is fixed", err);
  else
    INFO("memdiag plugin: CaptureDirectory %s is ready", rj->root);
}

void mdp_run_check_root(const char *root)
{
  root_job *rj = calloc(1, sizeof(*rj));

  if(!rj)
    return; /* the first capture checks it */
  snprintf(rj->root, sizeof(rj->root), "%s", root);
  rj->job.work = root_work;
  if(mdp_fsq_submit(&rj->job) != 0)
    free(rj);
}

/* ---------------------------------------------------------------- folder */

/* Making a run's folder: what the fs thread needs is copied in, since the
 * run may be gone by the time it runs; the answer goes to the run, if it
 * is still there, and to the caller's callback in any case. */
typedef struct {
  mdp_fsq_job job;
  uint64_t conn, gen;
  mdp_run_opened_fn opened;
  mdp_capture_started_fn cb;
  void *arg;
  char root[MDP_CAPTURE_PATH_MAX], dump_directory[512];
  mdp_worker_id who;
  int64_t now_ms;
  int transfer, same_mnt_ns;
  bool cgroup_limited; /* its memory cgroup has a limit: never a file it writes itself */
  bool registered;     /* the worker was connected: same_mnt_ns and dump_directory are known */
  mdp_run_folder out;
} folder_job;

/* With DumpTransfer file the worker writes its files itself, which its
 * hook allows only inside its dump directory: a capture that could not be
 * written is refused before anything is made. realpath may block on the
 * disk, hence here. */
static bool outside(folder_job *fj)
{
  mdp_run_folder *f = &fj->out;

  if(fj->transfer != MDP_TRANSFER_FILE || !fj->dump_directory[0] ||
     mdp_capfs_inside(fj->root, fj->dump_directory))
    return false;
  if(snprintf(f->err, sizeof(f->err),
              "CaptureDirectory %s is outside the worker's dump directory %s "
              "(MEMDIAG_DUMP_DIRECTORY): the worker may not write there (DumpTransfer file)",
              fj->root, fj->dump_directory) >= (int)sizeof(f->err))
    snprintf(f->err, sizeof(f->err), "CaptureDirectory is outside the worker's dump directory");
  f->outside = true;
  f->rc = -EPERM;
  return true;
}

/* Where the worker may write, found on the fs thread (mdp_capfs_inside
 * resolves paths), for the plan's pure choice of DumpTransfer. */
static mdp_request_where where_of(const folder_job *fj)
{
  /* A file the worker writes may land on a memory-backed volume charged to
   * its own cgroup: a worker under a memory limit streams. */
  if(fj->same_mnt_ns != 1 || fj->cgroup_limited)
    return MDP_WHERE_APART;
  if(!fj->dump_directory[0] || !mdp_capfs_inside(fj->root, fj->dump_directory))
    return MDP_WHERE_NO_DIR;
  return MDP_WHERE_HOLDS_CAPTURES;
}

static void folder_work(mdp_fsq_job *j)
{
  folder_job *fj = (folder_job *)j;
  mdp_run_folder *f = &fj->out;
  char why[512];

  f->dir_fd = -1;
  if(mdp_fsq_stopping()) { /* the module stops: no capture will begin */
    f->rc = -ESHUTDOWN;
    md_seterr(f->err, sizeof(f->err), "the capture module stopped");
    return;
  }
  f->rc = mdp_capfs_open_root(fj->root, why, sizeof(why));
  if(f->rc) {
    md_seterr(f->err, sizeof(f->err), "%s", why);
    return;
  }
  if(outside(fj))
    return;
  /* Decided once per capture, from what the kernel says of the worker (its
   * mount namespace) and where it may write. A folder the plugin alone
   * writes stays root's; one the worker writes into is the worker's. */
  f->streams = fj->registered ? mdp_request_streams(fj->transfer, where_of(fj))
                              : fj->transfer != MDP_TRANSFER_FILE;
  mdp_capfs_folder spec = {.worker = fj->who.name,
                           .pid = fj->who.pid,
                           .now_ms = fj->now_ms,
                           .uid = f->streams ? geteuid() : fj->who.uid,
                           .gid = f->streams ? getegid() : fj->who.gid};
  f->rc = mdp_capfs_make_folder(fj->root, &spec, f->dir, sizeof(f->dir));
  if(!f->rc) {
    /* The run's own descriptor: later steps never reach the folder by path
     * nor through capture_fs's lock, which a slow write may hold. */
    f->dir_fd = mdp_capfs_folder_fd(f->dir);
    if(f->dir_fd < 0) {
      f->rc = f->dir_fd;
      mdp_capfs_discard(f->dir);
    }
  }
  if(f->rc)
    md_seterr(f->err, sizeof(f->err), "cannot create a capture folder under %s: %s", fj->root,
              strerror(-f->rc));
}

/* An empty folder whose run is gone: removed, on the fs thread. */
typedef struct {
  mdp_fsq_job job;
  char dir[MDP_CAPTURE_PATH_MAX];
} discard_job;

static void discard_work(mdp_fsq_job *j) { mdp_capfs_discard(((discard_job *)j)->dir); }

void mdp_run_discard(const char *dir)
{
  discard_job *d = calloc(1, sizeof(*d));

  if(d) {
    snprintf(d->dir, sizeof(d->dir), "%s", dir);
    d->job.work = discard_work;
    if(mdp_fsq_continue(&d->job) == 0)
      return;
    free(d);
  }
  /* The fs thread has stopped (mdp_capfs_close releases the folder) or no
   * memory: an empty folder stays, which nothing will prune. */
  WARNING("memdiag plugin: the empty capture folder %s of a capture that did not begin was left",
          dir);
}

static void folder_done(mdp_fsq_job *j)
{
  folder_job *fj = (folder_job *)j;
  mdp_run_folder *f = &fj->out;
  mdp_capture_outcome rc = fj->opened(fj->conn, fj->gen, f);

  /* The module's lock is not held here: the caller may call back into it. */
  if(fj->cb)
    fj->cb(fj->arg, rc, rc == MDP_CAPTURE_STARTED ? f->dir : "",
           rc == MDP_CAPTURE_STARTED ? "" : f->err);
  free(fj);
}

int mdp_run_open_folder(const mdp_run *r, const mdp_capture_config_t *cfg, const mdp_run_open_t *o,
                        char *err, size_t errlen)
{
  folder_job *fj = calloc(1, sizeof(*fj));
  mdp_worker_info info;
  struct timespec ts;
  int rc;

  if(!fj) {
    md_seterr(err, errlen, "out of memory");
    return -ENOMEM;
  }
  fj->conn = r->conn;
  fj->gen = r->gen;
  fj->opened = o->opened;
  fj->cb = o->started;
  fj->arg = o->arg;
  snprintf(fj->root, sizeof(fj->root), "%s", cfg->directory);
  fj->who = r->who;
  clock_gettime(CLOCK_REALTIME, &ts); /* the folder's name says when it began */
  fj->now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
  fj->transfer = cfg->dump_transfer;
  if(mdp_registry_info(r->conn, &info) == 0) {
    fj->registered = true;
    fj->same_mnt_ns = info.same_mnt_ns;
    fj->cgroup_limited = info.cgroup_limited;
    snprintf(fj->dump_directory, sizeof(fj->dump_directory), "%s", info.dump_directory);
  }
  fj->job.work = folder_work;
  fj->job.done = folder_done;
  rc = mdp_fsq_submit(&fj->job);
  if(rc) {
    if(rc == -EAGAIN)
      md_seterr(err, errlen,
                "the capture file-system thread is busy (%u jobs wait: is the disk of "
                "CaptureDirectory %s slow or hung?)",
                mdp_fsq_waiting(), cfg->directory);
    else
      md_seterr(err, errlen, "the capture file-system thread is not running");
    free(fj);
  }
  return rc;
}

/* ---------------------------------------------------------------- space */

/* The space check before a dump: MaxUse's prune scan and statvfs; the
 * answer goes to the plan back on the loop thread. */
typedef struct {
  mdp_fsq_job job;
  uint64_t conn, gen;
  mdp_run_space_fn answer;
  uint64_t need, max_use, avail, used;
  char root[MDP_CAPTURE_PATH_MAX], dir[MDP_CAPTURE_PATH_MAX];
} space_job;

static void space_work(mdp_fsq_job *j)
{
  space_job *sj = (space_job *)j;
  int rc;

  if(sj->max_use) {
    /* Make room under MaxUse before the dump, oldest captures first;
     * capture_fs never removes a capture still in progress. */
    unsigned removed = 0;
    uint64_t limit = sj->max_use > sj->need ? sj->max_use - sj->need : 0;
    rc = mdp_capfs_prune(sj->root, limit, NULL, 0, &sj->used, &removed);
    if(rc)
      WARNING("memdiag plugin: pruning %s: %s", sj->root, strerror(-rc));
    if(removed)
      NOTICE("memdiag plugin: MaxUse: removed the %u oldest capture(s) under %s", removed,
             sj->root);
  }
  rc = mdp_capfs_avail(sj->dir, &sj->avail);
  if(rc)
    WARNING("memdiag plugin: statvfs %s: %s", sj->dir, strerror(-rc));
}

static void space_done(mdp_fsq_job *j)
{
  space_job *sj = (space_job *)j;
  sj->answer(sj->conn, sj->gen, sj->avail, sj->used);
  free(sj);
}

int mdp_run_check_space(const mdp_run *r, const mdp_capture_config_t *cfg, uint64_t need,
                        mdp_run_space_fn answer)
{
  space_job *sj = calloc(1, sizeof(*sj));
  int rc;

  if(!sj)
    return -ENOMEM;
  sj->conn = r->conn;
  sj->gen = r->gen;
  sj->answer = answer;
  sj->need = need;
  sj->max_use = cfg->max_use;
  snprintf(sj->root, sizeof(sj->root), "%s", cfg->directory);
  snprintf(sj->dir, sizeof(sj->dir), "%s", r->dir);
  sj->job.work = space_work;
  sj->job.done = space_done;
  rc = mdp_fsq_continue(&sj->job);
  if(rc)
    free(sj);
  return rc;
}

/* ---------------------------------------------------------------- manifest */

/* One capture's manifest writes, coalesced: the newest state waits here,
 * and at most one job that has not yet taken it is queued. A write asked
 * for while that job waits only updates the state; one asked for after
 * the job took its copy queues another, which then writes the newer
 * state after it (the queue keeps order). */
typedef struct mdp_run_manifest {
  pthread_mutex_t mu; /* guards everything below */
  unsigned refs;      /* the run's, and one per job naming it */
  bool queued;        /* a job is queued that has not yet copied `newest` */
  bool failed;        /* a write of this capture failed and was logged */
  mdp_run_record newest;
} mdp_run_manifest;

typedef struct {
  mdp_fsq_job job;
  mdp_run_manifest *m;
  mdp_run_record s; /* the state it writes, copied when it runs */
} manifest_job;

static void unref(mdp_run_manifest *m)
{
  pthread_mutex_lock(&m->mu);
  unsigned left = --m->refs;
  pthread_mutex_unlock(&m->mu);
  if(!left) {
    pthread_mutex_destroy(&m->mu);
    free(m);
  }
}

static void manifest_work(mdp_fsq_job *j)
{
  manifest_job *mj = (manifest_job *)j;
  mdp_run_manifest *m = mj->m;
  const mdp_run_record *s = &mj->s;

  pthread_mutex_lock(&m->mu);
  mj->s = m->newest;
  m->queued = false;
  pthread_mutex_unlock(&m->mu);
  mdp_manifest_info_t info = mdp_run_record_info(s, NULL);
  int rc = mdp_manifest_write(s->dir, &info, &s->plan);
  pthread_mutex_lock(&m->mu);
  bool first = rc && !m->failed;
  m->failed |= rc != 0;
  pthread_mutex_unlock(&m->mu);
  if(first) /* once per capture: a full disk would repeat it at every step */
    ERROR("memdiag plugin: cannot write %s/%s: %s", s->dir, MDP_CAPFS_MANIFEST, strerror(-rc));
  unref(m);
}

void mdp_run_record_of(mdp_run_record *rec, const mdp_run *r, const mdp_capture_config_t *cfg)
{
  rec->plan = r->plan;
  rec->who = r->who;
  rec->who.connection_id = r->conn;
  rec->manual = r->manual;
  rec->restart_signal = cfg->restart_after_capture ? cfg->restart_signal : 0;
  rec->signalled_ms = r->signalled_ms;
  snprintf(rec->dir, sizeof(rec->dir), "%s", r->dir);
  snprintf(rec->plan_text, sizeof(rec->plan_text), "%s", cfg->plan);
  snprintf(rec->signal_error, sizeof(rec->signal_error), "%s", r->signal_error);
  snprintf(rec->restart_wait, sizeof(rec->restart_wait), "%s", r->restart_wait);
  rec->dump_mode = cfg->dump_mode;
  snprintf(rec->mode_chosen, sizeof(rec->mode_chosen), "%s", r->mode_chosen);
  snprintf(rec->mode_reason, sizeof(rec->mode_reason), "%s", r->mode_reason);
}

mdp_manifest_info_t mdp_run_record_info(const mdp_run_record *rec, const char *analysis)
{
  mdp_manifest_info_t info = {
      .who = &rec->who,
      .directory = rec->dir,
      .plan_text = rec->plan_text,
      .manual = rec->manual,
      .restart_signal = rec->restart_signal,
      .signalled_ms = rec->signalled_ms,
      .signal_error = rec->signal_error[0] ? rec->signal_error : NULL,
      .restart_wait = rec->restart_wait[0] ? rec->restart_wait : NULL,
      .analysis = analysis,
      .dump_mode = rec->dump_mode,
      .mode_chosen = rec->mode_chosen[0] ? rec->mode_chosen : NULL,
      .mode_reason = rec->mode_reason[0] ? rec->mode_reason : NULL,
  };
  return info;
}

void mdp_run_write_manifest(mdp_run *r, const mdp_capture_config_t *cfg)
{
  mdp_run_manifest *m = r->manifest;
  manifest_job *mj = NULL;
  const char *lost = NULL;

  if(!m && (m = calloc(1, sizeof(*m))) != NULL) {
    pthread_mutex_init(&m->mu, NULL);
    m->refs = 1;
    r->manifest = m;
  }
  if(!m) {
    ERROR("memdiag plugin: cannot write %s/%s: out of memory", r->dir, MDP_CAPFS_MANIFEST);
    return;
  }
  pthread_mutex_lock(&m->mu);
  mdp_run_record_of(&m->newest, r, cfg);
  if(!m->queued) {
    mj = calloc(1, sizeof(*mj));
    if(mj) {
      mj->m = m;
      mj->job.work = manifest_work;
      m->refs++;
      m->queued = true;
    } else {
      lost = "out of memory";
    }
  }
  pthread_mutex_unlock(&m->mu);
  if(mj && mdp_fsq_continue(&mj->job) != 0) {
    pthread_mutex_lock(&m->mu);
    m->refs--;
    m->queued = false;
    pthread_mutex_unlock(&m->mu);
    free(mj);
    lost = "the capture file-system thread has stopped";
  }
  if(lost)
    ERROR("memdiag plugin: cannot write %s/%s: %s", r->dir, MDP_CAPFS_MANIFEST, lost);
}

/* ---------------------------------------------------------------- release */

void mdp_run_release_fs(mdp_run *r)
{
  if(r->dir_fd >= 0)
    close(r->dir_fd);
  r->dir_fd = -1;
  if(r->manifest)
    unref(r->manifest);
  r->manifest = NULL;
}
