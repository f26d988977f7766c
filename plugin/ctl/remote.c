/* memdiagctl verbs that talk to the plugin: parse, connect with the
 * operator certificate, send one Control, print its ControlReply. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "ctl.h"
#include "print.h"
#include "session.h"

/* The build may pass the project's version; this matches CMakeLists.txt. */
#ifndef MDCTL_VERSION
#define MDCTL_VERSION "0.1.0"
#endif

/* The plugin enforces the operation's timeout and answers "timeout"; we
 * wait a little longer so that its answer, not our guess, is what the
 * operator sees. */
#define REPLY_GRACE_MS       5000
#define HANDSHAKE_TIMEOUT_MS 15000

enum { EXIT_DONE = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

static int usage_error(const char *msg)
{
  fprintf(stderr, "memdiagctl: %s\nrun 'memdiagctl --help' for usage\n", msg);
  return EXIT_USAGE;
}

static int check_credentials(const mdctl_cmd *cmd)
{
  if(!cmd->cert || !*cmd->cert)
    return usage_error("no operator certificate: give --cert FILE or set MEMDIAG_CERT");
  if(!cmd->key || !*cmd->key)
    return usage_error("no private key: give --key FILE or set MEMDIAG_KEY");
  if(!cmd->ca || !*cmd->ca)
    return usage_error("no CA: give --ca FILE or set MEMDIAG_CA");
  return EXIT_DONE;
}

/* Fills the request of an operation verb; its parts live on the caller's
 * stack, so nothing here is allocated. */
typedef struct {
  Memdiag__V1__Operate operate;
  Memdiag__V1__Request request;
  Memdiag__V1__Ping ping;
  Memdiag__V1__MemoryDump memory_dump;
  Memdiag__V1__AllocationTraceStart trace_start;
  Memdiag__V1__AllocationTraceStop trace_stop;
  Memdiag__V1__GarbageProfileStart gc_start;
  Memdiag__V1__GarbageProfileStop gc_stop;
  Memdiag__V1__SchedulerDump scheduler;
  Memdiag__V1__ThreadDump threads;
  Memdiag__V1__HeapProfile heap_profile;
} op_parts;

static void build_operate(const mdctl_cmd *cmd, uint64_t request_id, unsigned timeout_ms,
                          op_parts *p)
{
  Memdiag__V1__Request *r = &p->request;

  memdiag__v1__operate__init(&p->operate);
  memdiag__v1__request__init(r);
  p->operate.has_connection_id = 1;
  p->operate.connection_id = cmd->connection_id;
  p->operate.request = r;
  r->has_request_id = 1;
  r->request_id = request_id;
  /* Without --timeout the plugin applies its own per-operation default
   * (its DumpTimeout for dumps); we only override it when asked to. */
  r->has_timeout_ms = cmd->timeout_s != 0;
  r->timeout_ms = timeout_ms;
  r->op_case = (Memdiag__V1__Request__OpCase)cmd->verb->request_op;
  switch(cmd->verb->request_op) {
  case MEMDIAG__V1__REQUEST__OP_PING:
    memdiag__v1__ping__init(&p->ping);
    r->ping = &p->ping;
    break;
  case MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP:
    memdiag__v1__memory_dump__init(&p->memory_dump);
    p->memory_dump.path = (char *)cmd->path;
    p->memory_dump.has_shapes = (cmd->given & MDCTL_KEY_SHAPES) != 0;
    p->memory_dump.shapes = cmd->shapes;
    p->memory_dump.has_mode = (cmd->given & MDCTL_KEY_MODE) != 0;
    p->memory_dump.mode = (Memdiag__V1__DumpMode)cmd->mode;
    r->memory_dump = &p->memory_dump;
    break;
  case MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_START:
    memdiag__v1__allocation_trace_start__init(&p->trace_start);
    p->trace_start.has_keep = (cmd->given & MDCTL_KEY_KEEP) != 0;
    p->trace_start.keep = cmd->keep;
    r->allocation_trace_start = &p->trace_start;
    break;
  case MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_STOP:
    memdiag__v1__allocation_trace_stop__init(&p->trace_stop);
    p->trace_stop.path = (char *)cmd->path;
    p->trace_stop.has_shapes = (cmd->given & MDCTL_KEY_SHAPES) != 0;
    p->trace_stop.shapes = cmd->shapes;
    r->allocation_trace_stop = &p->trace_stop;
    break;
  case MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_START:
    memdiag__v1__garbage_profile_start__init(&p->gc_start);
    p->gc_start.has_keep = (cmd->given & MDCTL_KEY_KEEP) != 0;
    p->gc_start.keep = cmd->keep;
    r->garbage_profile_start = &p->gc_start;
    break;
  case MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_STOP:
    memdiag__v1__garbage_profile_stop__init(&p->gc_stop);
    p->gc_stop.path = (char *)cmd->path;
    r->garbage_profile_stop = &p->gc_stop;
    break;
  case MEMDIAG__V1__REQUEST__OP_SCHEDULER_DUMP:
    memdiag__v1__scheduler_dump__init(&p->scheduler);
    p->scheduler.path = (char *)cmd->path;
    r->scheduler_dump = &p->scheduler;
    break;
  case MEMDIAG__V1__REQUEST__OP_THREAD_DUMP:
    memdiag__v1__thread_dump__init(&p->threads);
    p->threads.path = (char *)cmd->path;
    r->thread_dump = &p->threads;
    break;
  case MEMDIAG__V1__REQUEST__OP_HEAP_PROFILE:
    memdiag__v1__heap_profile__init(&p->heap_profile);
    p->heap_profile.path = (char *)cmd->path;
    r->heap_profile = &p->heap_profile;
    break;
  }
}

static int unexpected(const mdctl_cmd *cmd, const Memdiag__V1__ControlReply *cr)
{
  fprintf(stderr,
          "memdiagctl: the plugin answered %s with an unexpected message "
          "(body %d); are memdiagctl and the plugin the same version?\n",
          cmd->verb->name, (int)cr->body_case);
  return EXIT_FAILED;
}

static int show(const mdctl_cmd *cmd, const Memdiag__V1__ControlReply *cr, uint64_t rtt_us)
{
  Memdiag__V1__Status st = cr->has_status ? cr->status : MEMDIAG__V1__STATUS__STATUS_OK;

  if(st != MEMDIAG__V1__STATUS__STATUS_OK) {
    /* The worker's own reply, when present, carries the precise reason. */
    const char *why = cr->error;
    if(cr->body_case == MEMDIAG__V1__CONTROL_REPLY__BODY_REPLY && cr->reply && cr->reply->error &&
       *cr->reply->error)
      why = cr->reply->error;
    mdctl_print_failure(cmd, st, why);
    return EXIT_FAILED;
  }
  switch(cmd->verb->kind) {
  case MDCTL_KIND_WORKERS:
    if(cr->body_case != MEMDIAG__V1__CONTROL_REPLY__BODY_WORKERS)
      return unexpected(cmd, cr);
    mdctl_print_workers(cmd, cr->workers);
    return EXIT_DONE;
  case MDCTL_KIND_STATUS:
    if(cr->body_case != MEMDIAG__V1__CONTROL_REPLY__BODY_STATUS_REPORT)
      return unexpected(cmd, cr);
    mdctl_print_status(cmd, cr->status_report);
    return EXIT_DONE;
  case MDCTL_KIND_CAPTURE:
    if(cr->body_case != MEMDIAG__V1__CONTROL_REPLY__BODY_CAPTURE)
      return unexpected(cmd, cr);
    mdctl_print_capture(cmd, cr->capture);
    return EXIT_DONE;
  case MDCTL_KIND_OPERATE:
    if(cr->body_case != MEMDIAG__V1__CONTROL_REPLY__BODY_REPLY || !cr->reply)
      return unexpected(cmd, cr);
    st = cr->reply->has_status ? cr->reply->status : MEMDIAG__V1__STATUS__STATUS_OK;
    if(st != MEMDIAG__V1__STATUS__STATUS_OK) {
      mdctl_print_failure(cmd, st, cr->reply->error);
      return EXIT_FAILED;
    }
    mdctl_print_reply(cmd, cr->reply, rtt_us);
    return EXIT_DONE;
  }
  return unexpected(cmd, cr);
}

static int run(const mdctl_cmd *cmd)
{
  Memdiag__V1__Control control = MEMDIAG__V1__CONTROL__INIT;
  Memdiag__V1__ListWorkers list = MEMDIAG__V1__LIST_WORKERS__INIT;
  Memdiag__V1__StatusRequest status = MEMDIAG__V1__STATUS_REQUEST__INIT;
  Memdiag__V1__CaptureNow capture = MEMDIAG__V1__CAPTURE_NOW__INIT;
  Memdiag__V1__Frame *in = NULL;
  mdctl_session s = {0};
  op_parts parts;
  char err[1024];
  unsigned timeout_ms = mdctl_cmd_timeout_s(cmd) * 1000u;
  int wait_ms = (int)timeout_ms;
  uint64_t t0;
  int rc, code = EXIT_FAILED;

  control.has_request_id = 1;
  control.request_id = (uint64_t)getpid();
  switch(cmd->verb->kind) {
  case MDCTL_KIND_WORKERS:
    control.op_case = MEMDIAG__V1__CONTROL__OP_LIST_WORKERS;
    control.list_workers = &list;
    break;
  case MDCTL_KIND_STATUS:
    control.op_case = MEMDIAG__V1__CONTROL__OP_STATUS;
    control.status = &status;
    break;
  case MDCTL_KIND_CAPTURE:
    capture.has_connection_id = 1;
    capture.connection_id = cmd->connection_id;
    control.op_case = MEMDIAG__V1__CONTROL__OP_CAPTURE_NOW;
    control.capture_now = &capture;
    break;
  case MDCTL_KIND_OPERATE:
    build_operate(cmd, control.request_id, timeout_ms, &parts);
    control.op_case = MEMDIAG__V1__CONTROL__OP_OPERATE;
    control.operate = &parts.operate;
    wait_ms += REPLY_GRACE_MS;
    break;
  }

  rc = mdctl_session_open(&s,
                          &(mdctl_session_opts){.socket = cmd->socket,
                                                .cert = cmd->cert,
                                                .key = cmd->key,
                                                .ca = cmd->ca,
                                                .timeout_ms = HANDSHAKE_TIMEOUT_MS},
                          err, sizeof(err));
  if(rc) {
    fprintf(stderr, "memdiagctl: %s\n", err);
    goto out;
  }
  t0 = md_now_us();
  rc = mdctl_session_call(&s, &control, wait_ms, &in, err, sizeof(err));
  if(rc) {
    fprintf(stderr, "memdiagctl: %s\n", err);
    goto out;
  }
  code = show(cmd, in->control_reply, md_now_us() - t0);
out:
  mdctl_session_close(&s);
  if(in)
    md_frame_free(in);
  if(fflush(stdout) != 0 && code == EXIT_DONE) {
    perror("memdiagctl: writing output");
    code = EXIT_FAILED;
  }
  return code;
}

int mdctl_remote(int argc, char **argv)
{
  mdctl_cmd cmd;
  char err[512];
  int rc;

  rc = mdctl_cmd_parse(&cmd, argc, argv, err, sizeof(err));
  if(rc)
    return usage_error(err);
  if(cmd.action == MDCTL_ACTION_HELP) {
    mdctl_usage(stdout);
    return EXIT_DONE;
  }
  if(cmd.action == MDCTL_ACTION_VERSION) {
    printf("memdiagctl %s (protocol memdiag.v1)\n", MDCTL_VERSION);
    return EXIT_DONE;
  }
  rc = check_credentials(&cmd);
  if(rc)
    return rc;
  return run(&cmd);
}
