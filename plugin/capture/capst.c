/* Capture module: its one state, behind one mutex. See capst.h. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "capst.h"
#include "run.h"

typedef struct capture_state {
  pthread_mutex_t lock; /* guards everything below */
  bool ready;
  mdp_loop *loop;
  mdp_capture_config_t cfg;
  mdp_step_kind_t kinds[MDP_CAPTURE_PLAN_MAX];
  size_t n_kinds;
  mdp_sched_t sched;
  mdp_capture_counters_t counters;
  mdp_run **runs;
  size_t n_runs, cap_runs;
  uint64_t next_gen; /* never reset: a restarted module ignores old callbacks */
  /* The last finished plans, for mdp_capture_evidence (ring). */
  mdp_capture_evidence_t finished[MDP_CAPTURE_EVIDENCE_MAX];
  uint64_t finished_conn[MDP_CAPTURE_EVIDENCE_MAX];
  unsigned finished_next;
} capture_state;

static capture_state st = {.lock = PTHREAD_MUTEX_INITIALIZER};

void mdp_capst_lock(void) { pthread_mutex_lock(&st.lock); }

void mdp_capst_unlock(void) { pthread_mutex_unlock(&st.lock); }

int mdp_capst_setup(const mdp_capture_config_t *c, mdp_loop *loop, char *err, size_t errlen)
{
  st.cfg = *c;
  st.loop = loop;
  int rc = mdp_plan_parse(st.cfg.plan, st.kinds, MDP_CAPTURE_PLAN_MAX, &st.n_kinds, err, errlen);
  if(rc)
    return rc;
  mdp_sched_init(&st.sched, st.cfg.concurrency, st.cfg.cooldown_ms, st.cfg.restart_after_capture);
  memset(&st.counters, 0, sizeof(st.counters));
  return 0;
}

void mdp_capst_open(void) { st.ready = true; }

void mdp_capst_close(void)
{
  free(st.runs);
  st.runs = NULL;
  st.cap_runs = 0;
  mdp_sched_free(&st.sched);
  st.ready = false;
}

bool mdp_capst_ready(void) { return st.ready; }

const mdp_capture_config_t *mdp_capst_cfg(void) { return &st.cfg; }

mdp_loop *mdp_capst_loop(void) { return st.loop; }

mdp_sched_t *mdp_capst_sched(void) { return &st.sched; }

mdp_capture_counters_t *mdp_capst_counters(void) { return &st.counters; }

mdp_plan_params_t mdp_capst_params(void)
{
  const mdp_capture_config_t *cfg = &st.cfg;
  mdp_plan_params_t p = {
      .interval_ms = cfg->interval_ms,
      .space_factor = cfg->dump_space_factor,
      .zstd_dumps = cfg->dump_compression,
      .keep_free = cfg->keep_free,
      .max_use = cfg->max_use,
      .trace_allocations = cfg->trace_allocations,
      .heap_profiles = true,
  };
  return p;
}

void mdp_capst_plan_init(mdp_plan_t *plan, const mdp_plan_trigger_t *trig)
{
  mdp_plan_params_t p = mdp_capst_params();
  mdp_plan_init(plan, &p, st.kinds, st.n_kinds, trig);
}

/* ---------------------------------------------------------------- runs */

mdp_run *mdp_capst_find(uint64_t conn)
{
  for(size_t i = 0; i < st.n_runs; i++)
    if(st.runs[i]->conn == conn)
      return st.runs[i];
  return NULL;
}

mdp_run *mdp_capst_add(uint64_t conn)
{
  if(st.n_runs == st.cap_runs) {
    size_t cap = st.cap_runs ? st.cap_runs * 2 : 8;
    mdp_run **n = realloc(st.runs, cap * sizeof(*n));
    if(!n)
      return NULL;
    st.runs = n;
    st.cap_runs = cap;
  }
  mdp_run *r = calloc(1, sizeof(*r));
  if(!r)
    return NULL;
  r->conn = conn;
  r->gen = ++st.next_gen;
  r->dir_fd = -1;
  st.runs[st.n_runs++] = r;
  return r;
}

void mdp_capst_drop(mdp_run *r)
{
  for(size_t i = 0; i < st.n_runs; i++) {
    if(st.runs[i] == r) {
      st.runs[i] = st.runs[--st.n_runs];
      break;
    }
  }
  mdp_run_release_fs(r);
  free(r);
}

size_t mdp_capst_n_runs(void) { return st.n_runs; }

mdp_run *mdp_capst_run(size_t i) { return st.runs[i]; }

/* ---------------------------------------------------------------- finished */

void mdp_capst_remember(uint64_t conn, const mdp_capture_evidence_t *e)
{
  unsigned k = st.finished_next++ % MDP_CAPTURE_EVIDENCE_MAX;
  st.finished[k] = *e;
  st.finished_conn[k] = conn;
}

void mdp_capst_last_finished(uint64_t conn, mdp_capture_evidence_t *out)
{
  /* newest first */
  for(unsigned i = 0; i < MDP_CAPTURE_EVIDENCE_MAX; i++) {
    unsigned k = (st.finished_next + MDP_CAPTURE_EVIDENCE_MAX - 1 - i) % MDP_CAPTURE_EVIDENCE_MAX;
    if(i < st.finished_next && st.finished_conn[k] == conn) {
      *out = st.finished[k];
      return;
    }
  }
}
