/* Rendering the plugin's answers for people (tables, sizes, durations) and
 * for scripts (--json). */
#include "print.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "md/text.h"

void mdctl_format_size(char *buf, size_t len, uint64_t bytes)
{
  static const char *units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = -1;

  if(bytes < 1024) {
    snprintf(buf, len, "%" PRIu64 " B", bytes);
    return;
  }
  while(v >= 1024.0 && u < 3) {
    v /= 1024.0;
    u++;
  }
  snprintf(buf, len, "%.1f %s", v, units[u]);
}

void mdctl_format_duration(char *buf, size_t len, uint64_t us)
{
  if(us < 1000)
    snprintf(buf, len, "%" PRIu64 " us", us);
  else if(us < 10000)
    snprintf(buf, len, "%.1f ms", (double)us / 1000.0);
  else if(us < 1000000)
    snprintf(buf, len, "%" PRIu64 " ms", us / 1000);
  else if(us < 60000000)
    snprintf(buf, len, "%.1f s", (double)us / 1e6);
  else
    snprintf(buf, len, "%" PRIu64 " min %" PRIu64 " s", us / 60000000, (us / 1000000) % 60);
}

/* Coarse age for tables: "45s", "12m", "3h12m", "2d4h". */
static void format_age(char *buf, size_t len, uint64_t s)
{
  if(s < 60)
    snprintf(buf, len, "%" PRIu64 "s", s);
  else if(s < 3600)
    snprintf(buf, len, "%" PRIu64 "m%02" PRIu64 "s", s / 60, s % 60);
  else if(s < 86400)
    snprintf(buf, len, "%" PRIu64 "h%02" PRIu64 "m", s / 3600, (s / 60) % 60);
  else
    snprintf(buf, len, "%" PRIu64 "d%02" PRIu64 "h", s / 86400, (s / 3600) % 24);
}

static void json_worker(mdctl_json *j, const Memdiag__V1__WorkerInfo *w)
{
  mdctl_json_begin_object(j);
  mdctl_json_kv_u64(j, "connection_id", w->connection_id);
  mdctl_json_kv_u64(j, "pid", w->pid);
  if(w->has_ppid)
    mdctl_json_kv_u64(j, "ppid", w->ppid);
  if(w->has_ns_pid)
    mdctl_json_kv_u64(j, "ns_pid", w->ns_pid);
  if(w->cgroup && w->cgroup[0])
    mdctl_json_kv_str(j, "cgroup", w->cgroup);
  mdctl_json_kv_str(j, "name", w->name ? w->name : "");
  mdctl_json_kv_str(j, "instance", w->instance);
  mdctl_json_kv_str(j, "runtime", w->runtime);
  mdctl_json_kv_str(j, "runtime_version", w->runtime_version);
  mdctl_json_kv_u64(j, "rss", w->rss);
  if(w->has_memory_limit)
    mdctl_json_kv_u64(j, "memory_limit", w->memory_limit);
  if(w->memory_limit_source && w->memory_limit_source[0])
    mdctl_json_kv_str(j, "memory_limit_source", w->memory_limit_source);
  if(w->limit_cgroup && w->limit_cgroup[0])
    mdctl_json_kv_str(j, "limit_cgroup", w->limit_cgroup);
  if(w->has_cgroup_charge)
    mdctl_json_kv_u64(j, "cgroup_charge", w->cgroup_charge);
  if(w->has_pss)
    mdctl_json_kv_u64(j, "pss", w->pss);
  if(w->has_private_bytes)
    mdctl_json_kv_u64(j, "private", w->private_bytes);
  if(w->has_swap)
    mdctl_json_kv_u64(j, "swap", w->swap);
  if(w->has_connected_at)
    mdctl_json_kv_u64(j, "connected_at", w->connected_at);
  mdctl_json_key(j, "capabilities");
  mdctl_json_begin_array(j);
  for(size_t i = 0; i < w->n_capabilities; i++)
    mdctl_json_str(j, w->capabilities[i]);
  mdctl_json_end_array(j);
  mdctl_json_kv_str(j, "detector_state", w->detector_state);
  mdctl_json_kv_str(j, "plan_state", w->plan_state);
  mdctl_json_end_object(j);
}

static void json_workers(mdctl_json *j, Memdiag__V1__WorkerInfo **w, size_t n)
{
  mdctl_json_begin_array(j);
  for(size_t i = 0; i < n; i++)
    json_worker(j, w[i]);
  mdctl_json_end_array(j);
}

/* Text from a worker (names, paths, notes, errors) or quoting one (capture
 * reasons) must not garble the operator's terminal: control characters,
 * terminal escapes included, are shown as '?' (flags: MD_TEXT_KEEP_LINES
 * keeps line breaks and tabs in multi-line text). width > 0 pads or cuts
 * to that many bytes, as a table column needs. Cleaned through a small
 * buffer, so no allocation can fail and text of any length is shown. */
static void put_clean(FILE *out, const char *s, unsigned flags, int width)
{
  char buf[256];
  size_t left = s ? strlen(s) : 0;
  int n = 0;

  while(left && (width == 0 || n < width)) {
    size_t k = left < sizeof(buf) - 1 ? left : sizeof(buf) - 1;
    if(width && k > (size_t)(width - n))
      k = (size_t)(width - n);
    md_printable_n(buf, sizeof(buf), s, k, flags);
    fputs(buf, out);
    s += k;
    left -= k;
    n += (int)k;
  }
  for(; n < width; n++)
    fputc(' ', out);
}

/* "config", or the host directory of the cgroup whose limit applies. */
static const char *limit_source(const Memdiag__V1__WorkerInfo *w)
{
  if(!w->has_memory_limit || !w->memory_limit_source)
    return "-";
  if(!strcmp(w->memory_limit_source, "cgroup") && w->limit_cgroup && w->limit_cgroup[0])
    return w->limit_cgroup;
  return w->memory_limit_source;
}

static int limit_source_width(const Memdiag__V1__WorkerInfo *w)
{
  int l = (int)strlen(limit_source(w));
  return l < 12 ? 12 : l > 70 ? 70 : l;
}

static int name_width(Memdiag__V1__WorkerInfo **w, size_t n)
{
  int width = 4;
  for(size_t i = 0; i < n; i++) {
    int l = w[i]->name ? (int)strlen(w[i]->name) : 0;
    if(l > width)
      width = l;
  }
  return width > 40 ? 40 : width;
}

static void runtime_text(char *buf, size_t len, const Memdiag__V1__WorkerInfo *x)
{
  snprintf(buf, len, "%s%s%s", x->runtime ? x->runtime : "-", x->runtime_version ? " " : "",
           x->runtime_version ? x->runtime_version : "");
}

/* Columns for PSS, private and swap appear only when some worker has a
 * figure for them (the plugin samples them with Memory pss/private/swap),
 * so the default table stays narrow. */
static void table_workers(Memdiag__V1__WorkerInfo **w, size_t n, int with_detector)
{
  int nw = name_width(w, n);
  int pss = 0, priv = 0, swap = 0;
  time_t now = time(NULL);
  char size[32];

  int dw = 8, rw = 7, cw = 0, lw = 0;
  bool nspid = false;
  char rt[64];

  for(size_t i = 0; i < n; i++) {
    nspid |= w[i]->has_ns_pid;
    if(w[i]->cgroup && (int)strlen(w[i]->cgroup) > cw)
      cw = (int)strlen(w[i]->cgroup) > 60 ? 60 : (int)strlen(w[i]->cgroup);
    if(w[i]->has_memory_limit) {
      int l = limit_source_width(w[i]);
      lw = l > lw ? l : lw;
    }
    pss |= w[i]->has_pss && w[i]->pss;
    priv |= w[i]->has_private_bytes && w[i]->private_bytes;
    swap |= w[i]->has_swap && w[i]->swap;
    if(w[i]->detector_state && (int)strlen(w[i]->detector_state) > dw)
      dw = (int)strlen(w[i]->detector_state);
    runtime_text(rt, sizeof(rt), w[i]);
    if((int)strlen(rt) > rw)
      rw = (int)strlen(rt);
  }
  printf("%-4s %-8s ", "ID", "PID");
  if(nspid)
    printf("%-8s ", "NS_PID");
  printf("%-8s %-*s %10s", "PPID", nw, "NAME", "RSS");
  if(pss)
    printf(" %10s", "PSS");
  if(priv)
    printf(" %10s", "PRIVATE");
  if(swap)
    printf(" %10s", "SWAP");
  if(lw)
    printf(" %10s %-*s", "LIMIT", lw, "LIMIT_SOURCE");
  printf(" %-8s %-*s", "UPTIME", with_detector ? rw : 0, "RUNTIME");
  if(with_detector)
    printf("  %-*s %s", dw, "DETECTOR", "PLAN");
  if(cw)
    printf("  %s", "CGROUP");
  putchar('\n');
  for(size_t i = 0; i < n; i++) {
    const Memdiag__V1__WorkerInfo *x = w[i];
    char age[32] = "-";
    printf("%-4" PRIu64 " %-8" PRIu32 " ", x->connection_id, x->pid);
    if(nspid && x->has_ns_pid)
      printf("%-8" PRIu32 " ", x->ns_pid);
    else if(nspid)
      printf("%-8s ", "-");
    if(x->has_ppid)
      printf("%-8" PRIu32 " ", x->ppid);
    else
      printf("%-8s ", "-");
    put_clean(stdout, x->name, MD_TEXT_PLAIN, nw);
    mdctl_format_size(size, sizeof(size), x->rss);
    printf(" %10s", size);
    if(pss) {
      mdctl_format_size(size, sizeof(size), x->pss);
      printf(" %10s", x->has_pss ? size : "-");
    }
    if(priv) {
      mdctl_format_size(size, sizeof(size), x->private_bytes);
      printf(" %10s", x->has_private_bytes ? size : "-");
    }
    if(swap) {
      mdctl_format_size(size, sizeof(size), x->swap);
      printf(" %10s", x->has_swap ? size : "-");
    }
    if(lw) {
      mdctl_format_size(size, sizeof(size), x->memory_limit);
      printf(" %10s ", x->has_memory_limit ? size : "-");
      put_clean(stdout, limit_source(x), MD_TEXT_PLAIN, lw);
    }
    if(x->has_connected_at && (uint64_t)now >= x->connected_at)
      format_age(age, sizeof(age), (uint64_t)now - x->connected_at);
    runtime_text(rt, sizeof(rt), x);
    printf(" %-8s ", age);
    put_clean(stdout, rt, MD_TEXT_PLAIN, with_detector ? rw : 0);
    if(with_detector)
      printf("  %-*s %s", dw, x->detector_state ? x->detector_state : "-",
             x->plan_state && *x->plan_state ? x->plan_state : "-");
    if(cw) {
      printf("  ");
      put_clean(stdout, x->cgroup && *x->cgroup ? x->cgroup : "-", MD_TEXT_PLAIN, 0);
    }
    putchar('\n');
  }
}

void mdctl_print_workers(const mdctl_cmd *cmd, const Memdiag__V1__WorkerList *list)
{
  Memdiag__V1__WorkerInfo **w = list ? list->workers : NULL;
  size_t n = list ? list->n_workers : 0;
  mdctl_json j;

  if(cmd->json) {
    mdctl_json_init(&j, stdout);
    json_workers(&j, w, n);
    putchar('\n');
    return;
  }
  if(n == 0) {
    printf("no workers registered\n");
    return;
  }
  table_workers(w, n, 0);
}

static void json_capture(mdctl_json *j, const Memdiag__V1__CaptureInfo *c)
{
  mdctl_json_begin_object(j);
  if(c->has_connection_id)
    mdctl_json_kv_u64(j, "connection_id", c->connection_id);
  mdctl_json_kv_str(j, "worker", c->worker);
  mdctl_json_kv_str(j, "reason", c->reason);
  mdctl_json_kv_str(j, "directory", c->directory);
  mdctl_json_kv_str(j, "step", c->step);
  if(c->has_started_at)
    mdctl_json_kv_u64(j, "started_at", c->started_at);
  mdctl_json_kv_str(j, "analysis", c->analysis);
  mdctl_json_end_object(j);
}

/* One capture in progress: who, which step, why, where. */
static void human_capture(const Memdiag__V1__CaptureInfo *c, const char *indent, int in_progress)
{
  char age[32];
  time_t now = time(NULL);

  printf("%sconnection %" PRIu64 " (", indent, c->connection_id);
  put_clean(stdout, c->worker ? c->worker : "?", MD_TEXT_PLAIN, 0);
  printf(")");
  if(in_progress && c->step && *c->step)
    printf(": step %s", c->step);
  if(in_progress && c->has_started_at && c->started_at && (uint64_t)now >= c->started_at) {
    format_age(age, sizeof(age), (uint64_t)now - c->started_at);
    printf(", running for %s", age);
  }
  putchar('\n');
  if(c->reason && *c->reason) {
    printf("%s  reason: ", indent);
    put_clean(stdout, c->reason, MD_TEXT_KEEP_LINES, 0);
    putchar('\n');
  }
  if(c->directory && *c->directory) {
    printf("%s  directory: ", indent);
    put_clean(stdout, c->directory, MD_TEXT_KEEP_LINES, 0);
    putchar('\n');
  }
}

void mdctl_print_status(const mdctl_cmd *cmd, const Memdiag__V1__StatusReport *r)
{
  static const Memdiag__V1__StatusReport empty = MEMDIAG__V1__STATUS_REPORT__INIT;
  char age[32];
  mdctl_json j;

  if(!r)
    r = &empty;
  if(cmd->json) {
    mdctl_json_init(&j, stdout);
    mdctl_json_begin_object(&j);
    mdctl_json_kv_str(&j, "version", r->version);
    mdctl_json_kv_u64(&j, "uptime_s", r->uptime_s);
    mdctl_json_kv_u64(&j, "captures_started", r->captures_started);
    mdctl_json_kv_u64(&j, "captures_completed", r->captures_completed);
    mdctl_json_kv_u64(&j, "captures_failed", r->captures_failed);
    mdctl_json_kv_u64(&j, "captures_skipped", r->captures_skipped);
    mdctl_json_kv_u64(&j, "oom_kills", r->oom_kills);
    mdctl_json_key(&j, "workers");
    json_workers(&j, r->workers, r->n_workers);
    mdctl_json_key(&j, "captures");
    mdctl_json_begin_array(&j);
    for(size_t i = 0; i < r->n_captures; i++)
      json_capture(&j, r->captures[i]);
    mdctl_json_end_array(&j);
    mdctl_json_key(&j, "recent_captures");
    mdctl_json_begin_array(&j);
    for(size_t i = 0; i < r->n_recent_captures; i++)
      json_capture(&j, r->recent_captures[i]);
    mdctl_json_end_array(&j);
    mdctl_json_end_object(&j);
    putchar('\n');
    return;
  }
  format_age(age, sizeof(age), r->uptime_s);
  printf("memdiag plugin %s, up %s\n", r->version ? r->version : "?", age);
  printf("captures: %" PRIu64 " started, %" PRIu64 " completed, %" PRIu64 " failed, %" PRIu64
         " skipped\n",
         r->captures_started, r->captures_completed, r->captures_failed, r->captures_skipped);
  printf("oom kills: %" PRIu64 "\n", r->oom_kills);
  if(r->n_workers == 0)
    printf("no workers registered\n");
  else
    table_workers(r->workers, r->n_workers, 1);
  if(r->n_captures == 0)
    printf("no capture in progress\n");
  else
    printf("captures in progress:\n");
  for(size_t i = 0; i < r->n_captures; i++)
    human_capture(r->captures[i], "  ", 1);
  if(r->n_recent_captures)
    printf("recent captures, analysed:\n");
  for(size_t i = 0; i < r->n_recent_captures; i++) {
    const Memdiag__V1__CaptureInfo *c = r->recent_captures[i];
    human_capture(c, "  ", 0);
    printf("    analysis: ");
    put_clean(stdout, c->analysis ? c->analysis : "-", MD_TEXT_PLAIN, 0);
    putchar('\n');
  }
}

void mdctl_print_capture(const mdctl_cmd *cmd, const Memdiag__V1__CaptureInfo *info)
{
  static const Memdiag__V1__CaptureInfo empty = MEMDIAG__V1__CAPTURE_INFO__INIT;
  mdctl_json j;

  if(!info)
    info = &empty;
  if(cmd->json) {
    mdctl_json_init(&j, stdout);
    json_capture(&j, info);
    putchar('\n');
    return;
  }
  printf("capture started on ");
  human_capture(info, "", 0);
}

static const char *mode_name(const Memdiag__V1__Reply *r)
{
  return r->mode && *r->mode ? r->mode : NULL;
}

static void json_reply(const mdctl_cmd *cmd, const Memdiag__V1__Reply *r, uint64_t rtt_us)
{
  mdctl_json j;

  mdctl_json_init(&j, stdout);
  mdctl_json_begin_object(&j);
  mdctl_json_kv_u64(&j, "connection_id", cmd->connection_id);
  mdctl_json_kv_str(&j, "operation", cmd->verb->name);
  mdctl_json_kv_str(&j, "status",
                    md_status_name(r->has_status ? r->status : MEMDIAG__V1__STATUS__STATUS_OK));
  mdctl_json_kv_str(&j, "error", r->error && *r->error ? r->error : NULL);
  mdctl_json_kv_str(&j, "path", r->path && *r->path ? r->path : NULL);
  if(r->has_data)
    mdctl_json_kv_data(&j, "data", r->data.data, r->data.len);
  if(r->has_bytes)
    mdctl_json_kv_u64(&j, "bytes", r->bytes);
  if(r->has_duration_us)
    mdctl_json_kv_u64(&j, "duration_us", r->duration_us);
  if(r->has_pause_us)
    mdctl_json_kv_u64(&j, "pause_us", r->pause_us);
  mdctl_json_kv_str(&j, "note", r->note && *r->note ? r->note : NULL);
  mdctl_json_kv_str(&j, "mode", mode_name(r));
  if(cmd->verb->request_op == MEMDIAG__V1__REQUEST__OP_PING)
    mdctl_json_kv_u64(&j, "rtt_us", rtt_us);
  mdctl_json_end_object(&j);
  putchar('\n');
}

/* "(123.4 MiB, 2.1 s, worker paused 12 ms, fork)" */
static void figures(char *buf, size_t len, const Memdiag__V1__Reply *r)
{
  char a[32], b[32], c[32];
  size_t o = 0;

  buf[0] = '\0';
  if(r->has_bytes) {
    mdctl_format_size(a, sizeof(a), r->bytes);
    o += (size_t)snprintf(buf + o, len - o, "%s", a);
  }
  if(r->has_duration_us && o < len) {
    mdctl_format_duration(b, sizeof(b), r->duration_us);
    o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", b);
  }
  if(r->has_pause_us && o < len) {
    mdctl_format_duration(c, sizeof(c), r->pause_us);
    o += (size_t)snprintf(buf + o, len - o, "%sworker paused %s", o ? ", " : "", c);
  }
  if(mode_name(r) && o < len)
    snprintf(buf + o, len - o, "%smode %s", o ? ", " : "", mode_name(r));
}

static const char *done_message(int op)
{
  switch(op) {
  case MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_START: return "allocation tracing started";
  case MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_START: return "GC profiler started";
  case MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_STOP: return "GC profiler stopped";
  default: return "done";
  }
}

void mdctl_print_reply(const mdctl_cmd *cmd, const Memdiag__V1__Reply *r, uint64_t rtt_us)
{
  char fig[160], rtt[32];

  if(cmd->json) {
    json_reply(cmd, r, rtt_us);
    return;
  }
  figures(fig, sizeof(fig), r);
  if(cmd->verb->request_op == MEMDIAG__V1__REQUEST__OP_PING) {
    mdctl_format_duration(rtt, sizeof(rtt), rtt_us);
    printf("connection %" PRIu64 " answered in %s\n", cmd->connection_id, rtt);
  } else if(r->path && *r->path) {
    fputs("path: ", stdout);
    put_clean(stdout, r->path, MD_TEXT_KEEP_LINES, 0);
    printf("%s%s%s\n", fig[0] ? " (" : "", fig, fig[0] ? ")" : "");
  } else if(r->has_data) {
    /* The result itself goes to stdout untouched; the figures to stderr so
     * that `memdiagctl thread_dump connection_id=1 > threads.txt` keeps a
     * clean file. */
    fwrite(r->data.data, 1, r->data.len, stdout);
    if(r->data.len && r->data.data[r->data.len - 1] != '\n')
      putchar('\n');
    if(fig[0])
      fprintf(stderr, "memdiagctl: %s inline from connection %" PRIu64 " (%s)\n", cmd->verb->name,
              cmd->connection_id, fig);
  } else {
    printf("%s on connection %" PRIu64 "%s%s%s\n", done_message(cmd->verb->request_op),
           cmd->connection_id, fig[0] ? " (" : "", fig, fig[0] ? ")" : "");
  }
  if(r->note && *r->note) {
    fputs("note: ", r->has_data ? stderr : stdout);
    put_clean(r->has_data ? stderr : stdout, r->note, MD_TEXT_KEEP_LINES, 0);
    fputc('\n', r->has_data ? stderr : stdout);
  }
}

void mdctl_print_failure(const mdctl_cmd *cmd, Memdiag__V1__Status status, const char *error)
{
  const char *verb = cmd->verb->name;
  const char *why = error && *error ? error : md_status_name(status);
  uint64_t id = cmd->connection_id;
  char *clean = NULL;
  mdctl_json j;

  if(cmd->json) {
    mdctl_json_init(&j, stdout);
    mdctl_json_begin_object(&j);
    if(cmd->given & MDCTL_KEY_CONNECTION_ID)
      mdctl_json_kv_u64(&j, "connection_id", id);
    mdctl_json_kv_str(&j, "operation", verb);
    mdctl_json_kv_str(&j, "status", md_status_name(status));
    mdctl_json_kv_str(&j, "error", why);
    mdctl_json_end_object(&j);
    putchar('\n');
  }
  /* The worker's text, cleaned for the terminal; short of memory for the
   * copy, the status name stands in rather than the raw text. */
  clean = strdup(why);
  why = clean ? md_printable_inplace(clean, MD_TEXT_KEEP_LINES) : md_status_name(status);
  switch(status) {
  case MEMDIAG__V1__STATUS__STATUS_UNKNOWN_CONNECTION:
    /* The worker existed when the request left: say it went away, which is
     * news about the worker, not a mistyped ID. */
    if(why && strstr(why, "went away"))
      fprintf(stderr,
              "memdiagctl: %s on connection %" PRIu64 " failed: %s (it may have exited "
              "or been restarted; run 'memdiagctl workers' again)\n",
              verb, id, why);
    else
      fprintf(stderr,
              "memdiagctl: connection %" PRIu64 " not found; run 'memdiagctl workers' "
              "again (connection IDs change when a worker or collectd restarts)\n",
              id);
    break;
  case MEMDIAG__V1__STATUS__STATUS_REFUSED:
    fprintf(stderr, "memdiagctl: connection %" PRIu64 " refused %s: %s\n", id, verb, why);
    break;
  case MEMDIAG__V1__STATUS__STATUS_TIMEOUT:
    fprintf(stderr,
            "memdiagctl: %s on connection %" PRIu64 " timed out: %s "
            "(--timeout SECONDS gives the worker longer%s)\n",
            verb, id, why,
            cmd->verb->request_op == MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP ||
                    cmd->verb->request_op == MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_STOP
                ? "; large heaps take minutes, or try mode=fork"
                : "");
    break;
  case MEMDIAG__V1__STATUS__STATUS_UNSUPPORTED:
    fprintf(stderr, "memdiagctl: connection %" PRIu64 " cannot run %s: %s\n", id, verb, why);
    break;
  case MEMDIAG__V1__STATUS__STATUS_FORBIDDEN:
    fprintf(stderr,
            "memdiagctl: the plugin does not let this certificate run %s "
            "(an operator certificate is needed): %s\n",
            verb, why);
    break;
  case MEMDIAG__V1__STATUS__STATUS_BAD_REQUEST:
    fprintf(stderr, "memdiagctl: the plugin rejected %s as malformed: %s\n", verb, why);
    break;
  default:
    if(cmd->given & MDCTL_KEY_CONNECTION_ID)
      fprintf(stderr, "memdiagctl: %s on connection %" PRIu64 " failed: %s\n", verb, id, why);
    else
      fprintf(stderr, "memdiagctl: %s failed: %s\n", verb, why);
    break;
  }
  free(clean);
}
