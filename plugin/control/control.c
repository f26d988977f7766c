/* memdiag plugin: operator requests (list, status, operate, capture now). */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "md/text.h"
#include "md/tls.h"

#include "capture/capture.h"
#include "control.h"
#include "relay/relay.h"
#include "server/server.h"
#include "workers/registry.h"

#ifndef MDP_VERSION
#define MDP_VERSION "unknown"
#endif

static void send_reply(uint64_t serial, Memdiag__V1__ControlReply *r)
{
  Memdiag__V1__Frame f = MEMDIAG__V1__FRAME__INIT;
  Memdiag__V1__ControlReply small = MEMDIAG__V1__CONTROL_REPLY__INIT;
  int rc;

  f.body_case = MEMDIAG__V1__FRAME__BODY_CONTROL_REPLY;
  f.control_reply = r;
  rc = mdp_server_send_operator(serial, &f);
  if(rc == -EMSGSIZE) {
    /* A worker's answer that just fitted no longer does once wrapped: the
     * operator still gets an answer, and can ask for a file instead. */
    small.has_request_id = 1;
    small.request_id = r->request_id;
    small.has_status = 1;
    small.status = MEMDIAG__V1__STATUS__STATUS_ERROR;
    small.error = "the answer is larger than the plugin's MaxFrameSize: "
                  "ask for it to be written to a file (give a path)";
    f.control_reply = &small;
    rc = mdp_server_send_operator(serial, &f);
  }
  if(rc == -ENOENT)
    INFO("memdiag plugin: operator connection closed before its answer (request %" PRIu64 ")",
         r->request_id);
}

/* Every ControlReply starts the same way: the operator's id and a status. */
static void reply_head(Memdiag__V1__ControlReply *r, uint64_t request_id,
                       Memdiag__V1__Status status)
{
  r->has_request_id = 1;
  r->request_id = request_id;
  r->has_status = 1;
  r->status = status;
}

/* A request answered in full: the body is set, the head says OK. */
static void send_ok(uint64_t serial, uint64_t request_id, Memdiag__V1__ControlReply *r)
{
  reply_head(r, request_id, MEMDIAG__V1__STATUS__STATUS_OK);
  send_reply(serial, r);
}

void mdp_control_refuse(uint64_t serial, uint64_t request_id, Memdiag__V1__Status status,
                        const char *error)
{
  Memdiag__V1__ControlReply r = MEMDIAG__V1__CONTROL_REPLY__INIT;

  reply_head(&r, request_id, status);
  r.error = (char *)error;
  send_reply(serial, &r);
}

/* ------------------------------------------------------------ worker list */

typedef struct {
  mdp_worker **workers;
  size_t n;
  Memdiag__V1__WorkerInfo *infos;
  Memdiag__V1__WorkerInfo **ptrs;
  char (*detector)[96];
  char (*plan)[96];
  char (*limit_dir)[MDP_WORKER_LIMIT_DIR_MAX]; /* copies: a worker may move to another cgroup */
  char (*cgroup)[sizeof(((mdp_worker *)0)->cgroup)];
} worker_list;

static void list_free(worker_list *l)
{
  if(l->workers)
    mdp_registry_release(l->workers, l->n);
  free(l->infos);
  free(l->ptrs);
  free(l->detector);
  free(l->plan);
  free(l->limit_dir);
  free(l->cgroup);
  memset(l, 0, sizeof(*l));
}

/* The infos point into the referenced workers: keep `l` until sent. */
static int list_fill(worker_list *l)
{
  size_t n = mdp_registry_snapshot(&l->workers);

  if(n == (size_t)-1) {
    l->workers = NULL;
    return -ENOMEM;
  }
  l->n = n;
  l->infos = calloc(n ? n : 1, sizeof(*l->infos));
  l->ptrs = calloc(n ? n : 1, sizeof(*l->ptrs));
  l->detector = calloc(n ? n : 1, sizeof(*l->detector));
  l->plan = calloc(n ? n : 1, sizeof(*l->plan));
  l->limit_dir = calloc(n ? n : 1, sizeof(*l->limit_dir));
  l->cgroup = calloc(n ? n : 1, sizeof(*l->cgroup));
  if(!l->infos || !l->ptrs || !l->detector || !l->plan || !l->limit_dir || !l->cgroup)
    return -ENOMEM;
  for(size_t i = 0; i < n; i++) {
    mdp_worker *w = l->workers[i];
    Memdiag__V1__WorkerInfo *wi = &l->infos[i];
    mdp_sampler_reading s;
    double t;

    memdiag__v1__worker_info__init(wi);
    mdp_registry_last(w, &s, &t);
    mdp_registry_detector_text(w, l->detector[i], sizeof(l->detector[i]));
    mdp_capture_plan_state(w->who.connection_id, l->plan[i], sizeof(l->plan[i]));
    wi->has_connection_id = 1;
    wi->connection_id = w->who.connection_id;
    wi->has_pid = 1;
    wi->pid = (uint32_t)w->who.pid;
    wi->has_ppid = w->ppid != 0;
    wi->ppid = (uint32_t)w->ppid;
    wi->has_ns_pid = w->who.ns_pid != 0 && w->who.ns_pid != w->who.pid;
    wi->ns_pid = (uint32_t)w->who.ns_pid;
    mdp_registry_cgroup_text(w, l->cgroup[i], sizeof(l->cgroup[i]));
    wi->cgroup = l->cgroup[i][0] ? l->cgroup[i] : NULL;
    {
      mdp_worker_limit lim;
      mdp_registry_limit(w, &lim);
      wi->has_memory_limit = lim.source != MDP_LIMIT_NONE;
      wi->memory_limit = lim.limit;
      wi->memory_limit_source = lim.source == MDP_LIMIT_CONFIG   ? "config"
                                : lim.source == MDP_LIMIT_CGROUP ? "cgroup"
                                                                 : NULL;
      snprintf(l->limit_dir[i], sizeof(l->limit_dir[i]), "%s", lim.cgroup_dir);
      wi->limit_cgroup = lim.source == MDP_LIMIT_CGROUP ? l->limit_dir[i] : NULL;
      wi->has_cgroup_charge = lim.has_charge;
      wi->cgroup_charge = lim.charge;
    }
    wi->name = w->who.name;
    wi->instance = w->instance;
    wi->runtime = w->runtime;
    wi->runtime_version = w->runtime_version;
    wi->has_rss = wi->has_pss = wi->has_private_bytes = wi->has_swap = 1;
    wi->rss = s.rss;
    wi->pss = s.pss;
    wi->private_bytes = s.private_bytes;
    wi->swap = s.swap;
    wi->has_connected_at = 1;
    wi->connected_at = w->connected_at;
    wi->n_capabilities = w->n_capabilities;
    wi->capabilities = w->capabilities;
    wi->detector_state = l->detector[i];
    wi->plan_state = l->plan[i];
    l->ptrs[i] = wi;
  }
  return 0;
}

/* The operator hears why it gets no list; the caller still list_free()s. */
static int list_fill_or_refuse(worker_list *l, uint64_t serial, uint64_t request_id)
{
  if(!list_fill(l))
    return 0;
  mdp_control_refuse(serial, request_id, MEMDIAG__V1__STATUS__STATUS_ERROR, "plugin out of memory");
  return -1;
}

/* ------------------------------------------------------------ status */

/* The captures a status report lists; the report points into this until it
 * is sent. */
typedef struct {
  mdp_capture_info_t infos[32];
  Memdiag__V1__CaptureInfo ci[32];
  Memdiag__V1__CaptureInfo *cp[32];
  mdp_capture_recent_t recent[MDP_CAPTURE_RECENT_MAX];
  Memdiag__V1__CaptureInfo ri[MDP_CAPTURE_RECENT_MAX];
  Memdiag__V1__CaptureInfo *rp[MDP_CAPTURE_RECENT_MAX];
} capture_lists;

/* The fields a running and a finished capture share. */
static Memdiag__V1__CaptureInfo *capture_info(Memdiag__V1__CaptureInfo *ci, uint64_t connection_id,
                                              char *worker, char *directory)
{
  memdiag__v1__capture_info__init(ci);
  ci->has_connection_id = 1;
  ci->connection_id = connection_id;
  ci->worker = worker;
  ci->directory = directory;
  return ci;
}

static void status_fill(Memdiag__V1__StatusReport *sr, capture_lists *c)
{
  uint64_t now = (uint64_t)time(NULL);
  mdp_capture_counters_t counters;
  size_t nc, nr;

  sr->version = MDP_VERSION;
  sr->has_uptime_s = 1;
  sr->uptime_s = now > mdp_server_started_at() ? now - mdp_server_started_at() : 0;
  nc = mdp_capture_list(c->infos, 32);
  if(nc > 32)
    nc = 32;
  for(size_t i = 0; i < nc; i++) {
    mdp_capture_info_t *in = &c->infos[i];
    c->cp[i] = capture_info(&c->ci[i], in->connection_id, in->worker, in->directory);
    c->ci[i].reason = in->reason;
    c->ci[i].step = in->step;
    c->ci[i].has_started_at = in->started_at != 0;
    c->ci[i].started_at = in->started_at;
  }
  sr->n_captures = nc;
  sr->captures = c->cp;
  nr = mdp_capture_recent(c->recent, MDP_CAPTURE_RECENT_MAX);
  for(size_t i = 0; i < nr; i++) {
    mdp_capture_recent_t *in = &c->recent[i];
    c->rp[i] = capture_info(&c->ri[i], in->connection_id, in->worker, in->directory);
    c->ri[i].analysis = in->analysis;
  }
  sr->n_recent_captures = nr;
  sr->recent_captures = c->rp;
  mdp_capture_get_counters(&counters);
  sr->has_captures_started = sr->has_captures_completed = sr->has_captures_failed = 1;
  sr->has_captures_skipped = 1;
  sr->captures_skipped = counters.skipped;
  sr->captures_started = counters.started;
  sr->captures_completed = counters.completed;
  sr->captures_failed = counters.failed;
  sr->has_oom_kills = 1;
  sr->oom_kills = mdp_cgroup_oom_kills();
}

/* "workers" answers with the worker list; "status" (full) with the list in
 * a report that adds the plugin's uptime and captures. */
typedef enum { LIST_WORKERS, LIST_STATUS } list_kind;

static void list_workers(uint64_t serial, uint64_t request_id, list_kind kind)
{
  bool full = kind == LIST_STATUS;
  Memdiag__V1__ControlReply r = MEMDIAG__V1__CONTROL_REPLY__INIT;
  Memdiag__V1__WorkerList wl = MEMDIAG__V1__WORKER_LIST__INIT;
  Memdiag__V1__StatusReport sr = MEMDIAG__V1__STATUS_REPORT__INIT;
  capture_lists captures;
  worker_list l = {0};

  if(list_fill_or_refuse(&l, serial, request_id))
    goto out;
  if(full) {
    sr.n_workers = l.n;
    sr.workers = l.ptrs;
    status_fill(&sr, &captures);
    r.body_case = MEMDIAG__V1__CONTROL_REPLY__BODY_STATUS_REPORT;
    r.status_report = &sr;
  } else {
    wl.n_workers = l.n;
    wl.workers = l.ptrs;
    r.body_case = MEMDIAG__V1__CONTROL_REPLY__BODY_WORKERS;
    r.workers = &wl;
  }
  send_ok(serial, request_id, &r);
out:
  list_free(&l);
}

/* ------------------------------------------------------------ operate */

typedef struct {
  uint64_t serial;
  uint64_t control_id;
  uint64_t inner_id;
  uint64_t connection_id;
} relay_ctx;

static void relay_done(const Memdiag__V1__Reply *reply, void *arg)
{
  relay_ctx *ctx = arg;
  Memdiag__V1__ControlReply r = MEMDIAG__V1__CONTROL_REPLY__INIT;
  Memdiag__V1__Reply inner = *reply;

  /* The operator sees its own request id, not the one the plugin used. */
  inner.has_request_id = 1;
  inner.request_id = ctx->inner_id;
  reply_head(&r, ctx->control_id,
             reply->has_status ? reply->status : MEMDIAG__V1__STATUS__STATUS_OK);
  r.error = reply->error;
  r.body_case = MEMDIAG__V1__CONTROL_REPLY__BODY_REPLY;
  r.reply = &inner;
  if(r.status != MEMDIAG__V1__STATUS__STATUS_OK) {
    char error[256];
    /* The worker's text: no control characters into the log. */
    md_printable(error, sizeof(error), reply->error, MD_TEXT_PLAIN);
    INFO("memdiag plugin: request to worker %" PRIu64 " ended with %s: %s", ctx->connection_id,
         md_status_name(r.status), error);
  }
  send_reply(ctx->serial, &r);
  free(ctx);
}

/* A heap dump without a path goes to the plugin's side: streamed into
 * CaptureDirectory/manual/..., where it survives the worker. */
static bool stored_by_plugin(const Memdiag__V1__Request *req)
{
  if(req->op_case == MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP)
    return !req->memory_dump->path || !req->memory_dump->path[0];
  if(req->op_case == MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_STOP)
    return !req->allocation_trace_stop->path || !req->allocation_trace_stop->path[0];
  if(req->op_case == MEMDIAG__V1__REQUEST__OP_HEAP_PROFILE)
    return !req->heap_profile->path || !req->heap_profile->path[0];
  return false;
}

/* A stored request waits for its folder (made on the capture module's
 * file-system thread, so a slow disk does not stop the server): the
 * request is kept packed, since the frame it came in is gone by then. */
typedef struct {
  relay_ctx *ctx;
  Memdiag__V1__Request__OpCase op;
  size_t len;
  uint8_t req[]; /* the request, packed */
} stored_op;

static void stored_folder(void *arg, int rc, const mdp_capture_folder_t *f, const char *err)
{
  stored_op *so = arg;
  relay_ctx *ctx = so->ctx;
  Memdiag__V1__Request *req = NULL;
  const char *why = "plugin out of memory";
  char name[64];
  int level = f ? f->zstd_level : 0;

  if(rc) {
    ERROR("memdiag plugin: no folder for a manual dump: %s", err);
    why = err;
  } else if((req = memdiag__v1__request__unpack(NULL, so->len, so->req)) != NULL) {
    if(so->op == MEMDIAG__V1__REQUEST__OP_HEAP_PROFILE) {
      snprintf(name, sizeof(name), "heap_profile.pb.gz");
      level = 0; /* gzip'd by the worker already */
    } else {
      snprintf(name, sizeof(name), "%s.json%s",
               so->op == MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP ? "heap" : "allocations",
               level ? ".zst" : "");
    }
    /* a capture's budget (capture.h) */
    mdp_relay_sink sink = {.dir_fd = f->dir_fd,
                           .dir_path = f->dir,
                           .name = name,
                           .zstd_level = level,
                           .limits = f->limits};
    if(mdp_relay_request_to(ctx->connection_id, req, 0, &sink, relay_done, ctx) == 0)
      why = NULL;
    memdiag__v1__request__free_unpacked(req, NULL);
  }
  if(why) {
    mdp_control_refuse(ctx->serial, ctx->control_id, MEMDIAG__V1__STATUS__STATUS_ERROR, why);
    free(ctx);
  }
  free(so);
}

static void operate_stored(uint64_t serial, uint64_t request_id, const Memdiag__V1__Operate *op,
                           const mdp_worker_info *info, relay_ctx *ctx)
{
  size_t len = memdiag__v1__request__get_packed_size(op->request);
  stored_op *so = malloc(sizeof(*so) + len);
  char err[600];

  if(!so) {
    free(ctx);
    mdp_control_refuse(serial, request_id, MEMDIAG__V1__STATUS__STATUS_ERROR,
                       "plugin out of memory");
    return;
  }
  so->ctx = ctx;
  so->op = op->request->op_case;
  so->len = memdiag__v1__request__pack(op->request, so->req);
  mdp_capture_manual_t m = {
      .who = info->who, .rss = info->last.rss, .cb = stored_folder, .arg = so};
  if(mdp_capture_manual_folder(&m, err, sizeof(err)) != 0) {
    free(so);
    free(ctx);
    ERROR("memdiag plugin: no folder for a manual dump: %s", err);
    mdp_control_refuse(serial, request_id, MEMDIAG__V1__STATUS__STATUS_ERROR, err);
  }
}

/* The worker an operator names (connection_id NULL: it named none), or
 * the operator hears there is none and -ENOENT is returned. */
static int worker_or_refuse(uint64_t serial, uint64_t request_id, const uint64_t *named,
                            mdp_worker_info *info)
{
  uint64_t connection_id = named ? *named : 0;
  char err[256];

  if(named && mdp_registry_info(connection_id, info) == 0)
    return 0;
  snprintf(err, sizeof(err),
           "no worker with connection ID %" PRIu64
           " (IDs change when a worker or collectd restarts: list workers again)",
           connection_id);
  mdp_control_refuse(serial, request_id, MEMDIAG__V1__STATUS__STATUS_UNKNOWN_CONNECTION, err);
  return -ENOENT;
}

static void operate(uint64_t serial, const char *who, uint64_t request_id,
                    const Memdiag__V1__Operate *op)
{
  const Memdiag__V1__Request *req = op->request;
  mdp_worker_info info;
  relay_ctx *ctx;
  char err[256];
  const char *name;

  if(!op->has_connection_id || !req || req->op_case == MEMDIAG__V1__REQUEST__OP__NOT_SET) {
    mdp_control_refuse(serial, request_id, MEMDIAG__V1__STATUS__STATUS_BAD_REQUEST,
                       "operate needs a connection_id and a request with an operation");
    return;
  }
  name = md_request_op_name(req);
  if(worker_or_refuse(serial, request_id, &op->connection_id, &info))
    return;
  /* A worker that announced what it can run is not sent anything else. */
  if(info.n_capabilities > 0 && !mdp_registry_can(op->connection_id, name)) {
    snprintf(err, sizeof(err), "worker %" PRIu64 " ('%s' pid %ld) does not offer %s",
             op->connection_id, info.who.name, (long)info.who.pid, name);
    mdp_control_refuse(serial, request_id, MEMDIAG__V1__STATUS__STATUS_UNSUPPORTED, err);
    return;
  }
  ctx = calloc(1, sizeof(*ctx));
  if(!ctx) {
    mdp_control_refuse(serial, request_id, MEMDIAG__V1__STATUS__STATUS_ERROR,
                       "plugin out of memory");
    return;
  }
  ctx->serial = serial;
  ctx->control_id = request_id;
  ctx->inner_id = req->has_request_id ? req->request_id : request_id;
  ctx->connection_id = op->connection_id;
  INFO("memdiag plugin: %s runs %s on worker %" PRIu64 " ('%s' pid %ld)", who, name,
       op->connection_id, info.who.name, (long)info.who.pid);
  if(stored_by_plugin(req)) {
    operate_stored(serial, request_id, op, &info, ctx);
    return;
  }
  if(mdp_relay_request(op->connection_id, req, 0, relay_done, ctx) != 0) {
    free(ctx);
    mdp_control_refuse(serial, request_id, MEMDIAG__V1__STATUS__STATUS_ERROR,
                       "plugin out of memory");
  }
}

/* ------------------------------------------------------------ capture now */

/* An operator's capture, answered once its folder is made (or not). */
typedef struct {
  uint64_t serial, request_id, connection_id;
  char worker[128];
} capture_ctx;

static void capture_reply(const capture_ctx *c, mdp_capture_outcome rc, const char *dir,
                          const char *err)
{
  Memdiag__V1__ControlReply r = MEMDIAG__V1__CONTROL_REPLY__INIT;
  Memdiag__V1__CaptureInfo ci;

  if(rc < 0) {
    mdp_control_refuse(c->serial, c->request_id,
                       rc == MDP_CAPTURE_BUSY || rc == MDP_CAPTURE_COOLDOWN
                           ? MEMDIAG__V1__STATUS__STATUS_REFUSED
                           : MEMDIAG__V1__STATUS__STATUS_ERROR,
                       err[0] ? err : mdp_capture_outcome_name(rc));
    return;
  }
  capture_info(&ci, c->connection_id, (char *)c->worker, (char *)dir);
  ci.reason = "operator request";
  ci.step = rc == MDP_CAPTURE_QUEUED ? "queued" : "started";
  ci.has_started_at = rc == MDP_CAPTURE_STARTED;
  ci.started_at = (uint64_t)time(NULL);
  r.body_case = MEMDIAG__V1__CONTROL_REPLY__BODY_CAPTURE;
  r.capture = &ci;
  send_ok(c->serial, c->request_id, &r);
}

static void capture_started(void *arg, mdp_capture_outcome rc, const char *dir, const char *err)
{
  capture_reply(arg, rc, dir, err);
  free(arg);
}

static void capture_now(uint64_t serial, const char *who, uint64_t request_id,
                        const Memdiag__V1__CaptureNow *cn)
{
  mdp_capture_worker_t cw;
  mdp_worker_info info;
  char err[256] = "";
  capture_ctx *c;
  mdp_capture_outcome rc;

  if(worker_or_refuse(serial, request_id, cn->has_connection_id ? &cn->connection_id : NULL, &info))
    return;
  c = calloc(1, sizeof(*c));
  if(!c) {
    mdp_control_refuse(serial, request_id, MEMDIAG__V1__STATUS__STATUS_ERROR,
                       "plugin out of memory");
    return;
  }
  *c = (capture_ctx){
      .serial = serial, .request_id = request_id, .connection_id = info.who.connection_id};
  snprintf(c->worker, sizeof(c->worker), "%s", info.who.name);
  cw = (mdp_capture_worker_t){.who = info.who, .rss = info.last.rss};
  INFO("memdiag plugin: %s asks for a capture of worker %" PRIu64 " ('%s' pid %ld)", who,
       info.who.connection_id, info.who.name, (long)info.who.pid);
  /* STARTED: the folder is being made, and capture_started answers. */
  mdp_capture_opts_t o = {
      .reason = "operator request", .flags = MDP_CAPTURE_MANUAL, .cb = capture_started, .arg = c};
  rc = mdp_capture_start(&cw, &o, err, sizeof(err));
  if(rc == MDP_CAPTURE_STARTED)
    return;
  capture_reply(c, rc, "", err);
  free(c);
}

void mdp_control_handle(uint64_t serial, const char *who, const Memdiag__V1__Control *ctl)
{
  uint64_t id = ctl->request_id;

  switch(ctl->op_case) {
  case MEMDIAG__V1__CONTROL__OP_LIST_WORKERS: list_workers(serial, id, LIST_WORKERS); break;
  case MEMDIAG__V1__CONTROL__OP_STATUS: list_workers(serial, id, LIST_STATUS); break;
  case MEMDIAG__V1__CONTROL__OP_OPERATE: operate(serial, who, id, ctl->operate); break;
  case MEMDIAG__V1__CONTROL__OP_CAPTURE_NOW: capture_now(serial, who, id, ctl->capture_now); break;
  default:
    mdp_control_refuse(serial, id, MEMDIAG__V1__STATUS__STATUS_BAD_REQUEST,
                       "unknown control operation (is memdiagctl newer than the plugin?)");
    break;
  }
}
