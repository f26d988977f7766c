/* memdiag plugin: collectd glue, and the one place that wires the plugin's
 * parts together. Registers the config, init, read and shutdown callbacks;
 * the work is in config.c, server/, workers/, capture/ and notify.c. The
 * server knows none of them: it gets a table of hooks (wiring.h). */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"
#include "collectd/core/utils/common/common.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "capture/capture.h"
#include "config.h"
#include "containers.h"
#include "detector/detector.h"
#include "loop/loop.h"
#include "notify/notify.h"
#include "relay/relay.h"
#include "server/server.h"
#include "wiring.h"
#include "workers/cgroup.h"
#include "workers/registry.h"
#include "workers/sampler.h"

static mdp_config cfg;
static int configured;    /* cfg initialised */
static int config_failed; /* a bad key or value: refuse to start */
static int running;
static mdp_loop *loop;   /* the server's; lives from init to shutdown */
static mdp_store *store; /* writes streamed results; from init to shutdown */

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

/* The figure the detector watches: rss when sampled, else the first one
 * configured. */
static uint64_t primary(const mdp_sampler_reading *s)
{
  if(cfg.sampler.memory & MDP_MEM_RSS)
    return s->rss;
  if(cfg.sampler.memory & MDP_MEM_PSS)
    return s->pss;
  if(cfg.sampler.memory & MDP_MEM_PRIVATE)
    return s->private_bytes;
  return s->swap;
}

static void remember(mdp_worker *w, const mdp_sample *s)
{
  w->history[w->history_head] = *s;
  w->history_head = (w->history_head + 1) % MDP_WORKER_HISTORY;
  if(w->history_n < MDP_WORKER_HISTORY)
    w->history_n++;
}

static void trigger(mdp_worker *w, const mdp_decision *d, uint64_t v)
{
  mdp_sample samples[MDP_WORKER_HISTORY];
  mdp_capture_worker_t cw = {.who = w->who,
                             .rss = v,
                             /* 0 there means "unknown": a limit already
                              * reached by the projection is 1 s away. */
                             .time_left_s = d->time_to_limit == 0 ? 1 : d->time_to_limit};
  char reason[256], err[256] = "";
  mdp_capture_outcome rc;
  unsigned n_samples = mdp_containers_history(w, samples);

  if(d->slope > 0)
    snprintf(reason, sizeof(reason), "%s: %.1f MiB/min over %.1f min", d->reason,
             d->slope * 60.0 / (1024.0 * 1024.0), d->window / 60.0);
  else
    snprintf(reason, sizeof(reason), "%s", d->reason);
  INFO("memdiag plugin: detector fired for worker %" PRIu64 " ('%s' pid %ld): %s",
       w->who.connection_id, w->who.name, (long)w->who.pid, reason);
  mdp_capture_opts_t o = {.reason = reason, .samples = samples, .n_samples = n_samples};
  rc = mdp_capture_start(&cw, &o, err, sizeof(err));
  if(rc < 0)
    INFO("memdiag plugin: no capture for worker %" PRIu64 ": %s", w->who.connection_id,
         err[0] ? err : mdp_capture_outcome_name(rc));
}

static void sample_worker(mdp_worker *w, cdtime_t now, cdtime_t interval)
{
  mdp_sampler_reading s;
  mdp_decision d;
  char text[96];
  double t = CDTIME_T_TO_DOUBLE(now);
  uint64_t v;
  mdp_containers_limits lim;
  int fired;

  if(w->proc_fd < 0 || mdp_sampler_read(w->proc_fd, cfg.sampler.memory, &s) != 0)
    return; /* exited: the server notices the closed connection */
  if(cfg.sampler.memory & MDP_MEM_RSS)
    mdp_notify_gauge(w->instance, "memory", "rss", (double)s.rss, now, interval);
  if(cfg.sampler.memory & MDP_MEM_PSS)
    mdp_notify_gauge(w->instance, "memory", "pss", (double)s.pss, now, interval);
  if(cfg.sampler.memory & MDP_MEM_PRIVATE)
    mdp_notify_gauge(w->instance, "memory", "private", (double)s.private_bytes, now, interval);
  if(cfg.sampler.memory & MDP_MEM_SWAP)
    mdp_notify_gauge(w->instance, "memory", "swap", (double)s.swap, now, interval);
  v = primary(&s);
  mdp_sample sample = {.time = t, .value = v};
  remember(w, &sample);
  /* MemoryLimit, or the worker's cgroup limit when lower (a pod resized in
   * place is seen at the next sample) */
  mdp_containers_limit(w, v, &lim);
  w->detector.cfg.memory_limit = lim.project_to;
  fired = mdp_detector_feed(&w->detector, &sample, &d);
  mdp_detector_describe(&w->detector, text, sizeof(text));
  mdp_registry_store(w, &s, t, text);
  {
    mdp_capture_worker_t cw = {.who = w->who, .rss = v};
    /* a near-limit that only the shared room's fullness made is the
     * cgroup detector's to act on (containers.h) */
    bool shared_room_only = fired == 1 && lim.whole != lim.project_to && d.reason &&
                            strcmp(d.reason, MDP_REASON_NEAR_LIMIT) == 0 &&
                            (double)v < w->detector.cfg.near_limit * (double)lim.whole;
    if(fired == 1 && !shared_room_only)
      trigger(w, &d, v);
    mdp_capture_observe(&cw, lim.whole && v >= lim.whole);
  }
}

static double thread_cpu_s(void)
{
  struct timespec ts;

  if(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
    return 0;
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* How often workers are sampled: Interval, else collectd's. */
static cdtime_t sample_interval(void)
{
  return cfg.sampler.interval_ms ? MS_TO_CDTIME_T(cfg.sampler.interval_ms) : plugin_get_interval();
}

static int memdiag_read(user_data_t *ud)
{
  mdp_worker **workers;
  cdtime_t now = cdtime();
  cdtime_t interval = sample_interval();
  double cpu0 = thread_cpu_s();
  size_t n;

  (void)ud;
  n = mdp_registry_snapshot(&workers);
  if(n == (size_t)-1)
    return -1;
  mdp_containers_read(workers, n, &cfg, now, interval);
  for(size_t i = 0; i < n; i++)
    sample_worker(workers[i], now, interval);
  mdp_registry_release(workers, n);
  mdp_notify_gauge("", "count", "workers", (double)n, now, interval);
  /* What sampling costs, so that operators (and tests/bench/sample-cost)
   * see it: CPU seconds of this pass, dispatch included. */
  mdp_notify_gauge("", "duration", "sampling_cpu", thread_cpu_s() - cpu0, now, interval);
  mdp_capture_read();
  return 0;
}

static void stop_parts(void)
{
  mdp_capture_shutdown();
  mdp_server_stop();
  mdp_store_stop(store); /* the relay has ended every stream by now */
  store = NULL;
  /* The relay forgets the loop before it is freed: a late request is
   * refused (-ESHUTDOWN) instead of touching freed memory. */
  mdp_relay_init(NULL, NULL, cfg.relay.dump_timeout_ms);
  mdp_loop_free(loop);
  loop = NULL;
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
  if(!cfg.server.socket) {
    cfg.server.socket = strdup(MDP_DEFAULT_SOCKET);
    if(!cfg.server.socket)
      return -1;
  }
  if(mdp_config_check(&cfg) != 0)
    goto refuse;
  rc = mdp_registry_init(&cfg.detector, cfg.sampler.memory);
  if(rc)
    goto refuse;
  rc = mdp_loop_new(&loop);
  if(rc) {
    ERROR("memdiag plugin: cannot make the server loop: %s", strerror(-rc));
    goto refuse;
  }
  /* At most 64 MiB of streamed bytes wait for the disk, over all streams
   * (each stream is held to its window by credit well below that). */
  rc = mdp_store_start(&store, 64u << 20);
  if(rc) {
    ERROR("memdiag plugin: cannot start the stream writer: %s", strerror(-rc));
    mdp_loop_free(loop);
    loop = NULL;
    goto refuse;
  }
  mdp_relay_init(loop, mdp_server_send_worker, cfg.relay.dump_timeout_ms);
  mdp_rstream_init(loop, mdp_server_send_worker, store, 0);
  rc = mdp_server_start(&cfg.server, loop, &mdp_wiring_server_hooks);
  if(rc) {
    mdp_store_stop(store);
    store = NULL;
    mdp_loop_free(loop);
    loop = NULL;
    goto refuse;
  }
  rc = mdp_capture_init(&cfg.capture, loop);
  if(rc) {
    stop_parts();
    goto refuse;
  }
  rc = plugin_register_complex_read(
      NULL, "memdiag", memdiag_read,
      cfg.sampler.interval_ms ? MS_TO_CDTIME_T(cfg.sampler.interval_ms) : 0, NULL);
  if(rc) {
    ERROR("memdiag plugin: cannot register the read callback");
    stop_parts();
    goto refuse;
  }
  running = 1;
  mdp_sampler_memory_text(cfg.sampler.memory, memory, sizeof(memory));
  INFO("memdiag plugin: started (Memory %s)", memory);
  double every = CDTIME_T_TO_DOUBLE(sample_interval());
  char note[256];
  if(mdp_detector_interval_note(&cfg.detector, every, note, sizeof(note)))
    NOTICE("memdiag plugin: Interval %g s %s", every, note);
  return 0;
refuse:
  ERROR("memdiag plugin: not started");
  return -1;
}

static int memdiag_shutdown(void)
{
  if(running) {
    stop_parts();
    mdp_registry_destroy();
    mdp_cgroup_shutdown();
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
