/* memdiag plugin: collectd glue. Registers the config, init, read and
 * shutdown callbacks; the work is in config.c, server.c, registry.c and
 * sampler.c. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"
#include "collectd/core/utils/common/common.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "detector/detector.h"
#include "workers/registry.h"
#include "workers/sampler.h"
#include "server/server.h"
#include "capture/capture.h"

static mdp_config cfg;
static int configured;    /* cfg initialised */
static int config_failed; /* a bad key or value: refuse to start */
static int running;

static void ensure_config(void)
{
  if(!configured) {
    mdp_config_init(&cfg);
    configured = 1;
  }
}

static int memdiag_config(oconfig_item_t *ci)
{
  ensure_config();
  if(mdp_config_apply(&cfg, ci) != 0) {
    config_failed = 1;
    ERROR("memdiag plugin: configuration rejected; the plugin will not start");
    return -1;
  }
  return 0;
}

/* Declared in server.h: the capture module tells operators through it. */
int mdp_server_notify(int severity, uint64_t connection_id, const char *fmt, ...)
{
  notification_t n;
  mdp_worker_info info;
  va_list ap;

  memset(&n, 0, sizeof(n));
  n.severity = severity;
  n.time = cdtime();
  va_start(ap, fmt);
  vsnprintf(n.message, sizeof(n.message), fmt, ap);
  va_end(ap);
  sstrncpy(n.host, hostname_g ? hostname_g : "", sizeof(n.host));
  sstrncpy(n.plugin, "memdiag", sizeof(n.plugin));
  if(connection_id && mdp_registry_info(connection_id, &info) == 0)
    sstrncpy(n.plugin_instance, info.instance, sizeof(n.plugin_instance));
  if(severity == NOTIF_FAILURE)
    WARNING("memdiag plugin: %s", n.message);
  else
    NOTICE("memdiag plugin: %s", n.message);
  return plugin_dispatch_notification(&n) ? -EIO : 0;
}

static void dispatch(const char *instance, const char *type, const char *type_instance,
                     double value, cdtime_t t, cdtime_t interval)
{
  value_list_t vl = VALUE_LIST_INIT;
  value_t v = {.gauge = value};

  vl.values = &v;
  vl.values_len = 1;
  vl.time = t;
  vl.interval = interval;
  sstrncpy(vl.plugin, "memdiag", sizeof(vl.plugin));
  sstrncpy(vl.plugin_instance, instance, sizeof(vl.plugin_instance));
  sstrncpy(vl.type, type, sizeof(vl.type));
  sstrncpy(vl.type_instance, type_instance, sizeof(vl.type_instance));
  plugin_dispatch_values(&vl);
}

/* The figure the detector watches: rss when sampled, else the first one
 * configured. */
static uint64_t primary(const mdp_sample *s)
{
  if(cfg.memory & MDP_MEM_RSS)
    return s->rss;
  if(cfg.memory & MDP_MEM_PSS)
    return s->pss;
  if(cfg.memory & MDP_MEM_PRIVATE)
    return s->private_bytes;
  return s->swap;
}

static void remember(mdp_worker *w, double t, uint64_t v)
{
  w->history_t[w->history_head] = t;
  w->history_v[w->history_head] = v;
  w->history_head = (w->history_head + 1) % MDP_WORKER_HISTORY;
  if(w->history_n < MDP_WORKER_HISTORY)
    w->history_n++;
}

static void trigger(mdp_worker *w, const mdp_decision *d, uint64_t v)
{
  mdp_capture_sample_t samples[MDP_WORKER_HISTORY];
  mdp_capture_worker_t cw = {.connection_id = w->id,
                             .name = w->name,
                             .pid = w->pid,
                             .uid = w->uid,
                             .gid = w->gid,
                             .rss = v};
  char reason[256], err[256] = "";
  unsigned start = (w->history_head + MDP_WORKER_HISTORY - w->history_n) % MDP_WORKER_HISTORY;
  int rc;

  for(unsigned i = 0; i < w->history_n; i++) {
    unsigned k = (start + i) % MDP_WORKER_HISTORY;
    samples[i].time = w->history_t[k];
    samples[i].value = w->history_v[k];
  }
  if(d->slope > 0)
    snprintf(reason, sizeof(reason), "%s: %.0f bytes/s over %.0f s", d->reason, d->slope,
             d->window);
  else
    snprintf(reason, sizeof(reason), "%s", d->reason);
  INFO("memdiag plugin: detector fired for worker %" PRIu64 " ('%s' pid %ld): %s", w->id, w->name,
       (long)w->pid, reason);
  rc = mdp_capture_start(&cw, reason, samples, w->history_n, 0, NULL, 0, err, sizeof(err));
  if(rc < 0)
    INFO("memdiag plugin: no capture for worker %" PRIu64 ": %s", w->id, err);
}

static void sample_worker(mdp_worker *w, cdtime_t now, cdtime_t interval)
{
  mdp_sample s;
  mdp_decision d;
  char text[96];
  double t = CDTIME_T_TO_DOUBLE(now);
  uint64_t v;
  int fired;

  if(w->proc_fd < 0 || mdp_sampler_read(w->proc_fd, cfg.memory, &s) != 0)
    return; /* exited: the server notices the closed connection */
  if(cfg.memory & MDP_MEM_RSS)
    dispatch(w->instance, "memory", "rss", (double)s.rss, now, interval);
  if(cfg.memory & MDP_MEM_PSS)
    dispatch(w->instance, "memory", "pss", (double)s.pss, now, interval);
  if(cfg.memory & MDP_MEM_PRIVATE)
    dispatch(w->instance, "memory", "private", (double)s.private_bytes, now, interval);
  if(cfg.memory & MDP_MEM_SWAP)
    dispatch(w->instance, "memory", "swap", (double)s.swap, now, interval);
  v = primary(&s);
  remember(w, t, v);
  fired = mdp_detector_feed(&w->detector, t, v, &d);
  mdp_detector_describe(&w->detector, text, sizeof(text));
  mdp_registry_store(w, &s, t, text);
  {
    mdp_capture_worker_t cw = {.connection_id = w->id,
                               .name = w->name,
                               .pid = w->pid,
                               .uid = w->uid,
                               .gid = w->gid,
                               .rss = v};
    if(fired == 1)
      trigger(w, &d, v);
    mdp_capture_observe(&cw, cfg.detector.memory_limit && v >= cfg.detector.memory_limit);
  }
}

static double thread_cpu_s(void)
{
  struct timespec ts;

  if(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return 0;
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int memdiag_read(user_data_t *ud)
{
  mdp_worker **workers;
  cdtime_t now = cdtime();
  cdtime_t interval = cfg.interval_ms ? MS_TO_CDTIME_T(cfg.interval_ms) : plugin_get_interval();
  double cpu0 = thread_cpu_s();
  size_t n;

  (void)ud;
  n = mdp_registry_snapshot(&workers);
  if(n == (size_t)-1)
    return -1;
  for(size_t i = 0; i < n; i++)
    sample_worker(workers[i], now, interval);
  mdp_registry_release(workers, n);
  dispatch("", "count", "workers", (double)n, now, interval);
  /* What sampling costs, so that operators (and tests/bench/sample-cost)
   * see it: CPU seconds of this pass, dispatch included. */
  dispatch("", "duration", "sampling_cpu", thread_cpu_s() - cpu0, now, interval);
  mdp_capture_read();
  return 0;
}

static int memdiag_init(void)
{
  char memory[64];
  int rc;

  ensure_config();
  if(config_failed)
    return -1; /* already logged, naming the key */
  if(running)
    return 0;
  if(!cfg.socket) {
    cfg.socket = strdup(MDP_DEFAULT_SOCKET);
    if(!cfg.socket)
      return -1;
  }
  if(mdp_config_check(&cfg) != 0)
    goto refuse;
  rc = mdp_registry_init(&cfg.detector, cfg.memory);
  if(rc)
    goto refuse;
  rc = mdp_server_start(&cfg);
  if(rc)
    goto refuse;
  rc = mdp_capture_init(&cfg.capture);
  if(rc) {
    mdp_server_stop();
    goto refuse;
  }
  rc = plugin_register_complex_read(NULL, "memdiag", memdiag_read,
                                    cfg.interval_ms ? MS_TO_CDTIME_T(cfg.interval_ms) : 0, NULL);
  if(rc) {
    ERROR("memdiag plugin: cannot register the read callback");
    mdp_capture_shutdown();
    mdp_server_stop();
    goto refuse;
  }
  running = 1;
  mdp_config_memory_text(cfg.memory, memory, sizeof(memory));
  INFO("memdiag plugin: started (Memory %s)", memory);
  return 0;
refuse:
  ERROR("memdiag plugin: not started");
  return -1;
}

static int memdiag_shutdown(void)
{
  if(running) {
    mdp_capture_shutdown();
    mdp_server_stop();
    mdp_registry_destroy();
    running = 0;
  }
  if(configured)
    mdp_config_free(&cfg);
  configured = 0;
  return 0;
}

void module_register(void)
{
  plugin_register_complex_config("memdiag", memdiag_config);
  plugin_register_init("memdiag", memdiag_init);
  plugin_register_shutdown("memdiag", memdiag_shutdown);
}
