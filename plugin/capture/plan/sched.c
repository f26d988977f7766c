/* Capture admission policy: see sched.h. */
#include "sched.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void mdp_sched_init(mdp_sched_t *s, unsigned concurrency, uint64_t cooldown_ms,
                    bool restart_after_capture)
{
  memset(s, 0, sizeof(*s));
  s->concurrency = concurrency ? concurrency : 1;
  s->cooldown_ms = cooldown_ms;
  s->restart_after_capture = restart_after_capture;
}

void mdp_sched_free(mdp_sched_t *s)
{
  free(s->conns);
  free(s->cool);
  free(s->uids);
  memset(s, 0, sizeof(*s));
}

static mdp_sched_conn_t *find(const mdp_sched_t *s, uint64_t conn)
{
  for(size_t i = 0; i < s->n_conns; i++)
    if(s->conns[i].who.connection_id == conn)
      return &s->conns[i];
  return NULL;
}

const mdp_sched_conn_t *mdp_sched_find(const mdp_sched_t *s, uint64_t conn)
{
  return find(s, conn);
}

/* The conn's record, made when it has none; its process and uid as the
 * trigger says (the kernel's, through the caller). */
static mdp_sched_conn_t *get(mdp_sched_t *s, const mdp_sched_trigger_t *t)
{
  mdp_sched_conn_t *c = find(s, t->who.connection_id);
  if(c) {
    c->who = t->who;
    return c;
  }
  if(s->n_conns == s->cap_conns) {
    size_t cap = s->cap_conns ? s->cap_conns * 2 : 8;
    mdp_sched_conn_t *n = realloc(s->conns, cap * sizeof(*n));
    if(!n)
      return NULL;
    s->conns = n;
    s->cap_conns = cap;
  }
  c = &s->conns[s->n_conns++];
  memset(c, 0, sizeof(*c));
  c->who = t->who;
  snprintf(c->name, sizeof(c->name), "%s", t->name ? t->name : "");
  return c;
}

/* Another connection of process pid with a plan queued or running; NULL
 * when none (or the process is unknown: pid 0). */
static const mdp_sched_conn_t *process_plan(const mdp_sched_t *s, uint64_t conn, long pid)
{
  for(size_t i = 0; pid && i < s->n_conns; i++) {
    const mdp_sched_conn_t *c = &s->conns[i];
    if(c->who.pid == pid && c->who.connection_id != conn && c->state != MDP_CONN_IDLE)
      return c;
  }
  return NULL;
}

/* ---------------------------------------------------------------- round robin per uid */

static mdp_sched_uid_t *uid_find(const mdp_sched_t *s, unsigned long uid)
{
  for(size_t i = 0; i < s->n_uids; i++)
    if(s->uids[i].uid == uid)
      return &s->uids[i];
  return NULL;
}

/* When uid last started a plan; 0: not while it had one queued or running. */
static uint64_t uid_last(const mdp_sched_t *s, unsigned long uid)
{
  const mdp_sched_uid_t *u = uid_find(s, uid);
  return u ? u->last_start : 0;
}

static bool uid_active(const mdp_sched_t *s, unsigned long uid)
{
  for(size_t i = 0; i < s->n_conns; i++)
    if(s->conns[i].who.uid == uid && s->conns[i].state != MDP_CONN_IDLE)
      return true;
  return false;
}

/* uid starts a plan now. Forgets the uids with nothing queued or running,
 * so the table stays as small as the set of uids the queue serves. */
static int uid_mark(mdp_sched_t *s, unsigned long uid)
{
  for(size_t i = 0; i < s->n_uids;) {
    if(s->uids[i].uid != uid && !uid_active(s, s->uids[i].uid))
      s->uids[i] = s->uids[--s->n_uids];
    else
      i++;
  }
  mdp_sched_uid_t *u = uid_find(s, uid);
  if(!u) {
    if(s->n_uids == s->cap_uids) {
      size_t cap = s->cap_uids ? s->cap_uids * 2 : 8;
      mdp_sched_uid_t *n = realloc(s->uids, cap * sizeof(*n));
      if(!n)
        return -ENOMEM;
      s->uids = n;
      s->cap_uids = cap;
    }
    u = &s->uids[s->n_uids++];
    u->uid = uid;
  }
  u->last_start = ++s->starts;
  return 0;
}

static mdp_sched_cool_t *cool_find(const mdp_sched_t *s, const char *name)
{
  for(size_t i = 0; i < s->n_cool; i++)
    if(strcmp(s->cool[i].name, name) == 0)
      return &s->cool[i];
  return NULL;
}

uint64_t mdp_sched_cooldown_left(const mdp_sched_t *s, const char *name, int64_t now_ms)
{
  const mdp_sched_cool_t *c = cool_find(s, name);
  if(!c || !s->cooldown_ms)
    return 0;
  int64_t until = c->last_ms + (int64_t)s->cooldown_ms;
  return until > now_ms ? (uint64_t)(until - now_ms) : 0;
}

static int cool_mark(mdp_sched_t *s, const char *name, int64_t now_ms)
{
  /* Forget names whose cooldown is over, so the table stays as small as
   * the set of recently captured names. */
  for(size_t i = 0; i < s->n_cool;) {
    if(mdp_sched_cooldown_left(s, s->cool[i].name, now_ms) == 0)
      s->cool[i] = s->cool[--s->n_cool];
    else
      i++;
  }
  mdp_sched_cool_t *c = cool_find(s, name);
  if(!c) {
    if(s->n_cool == s->cap_cool) {
      size_t cap = s->cap_cool ? s->cap_cool * 2 : 8;
      mdp_sched_cool_t *n = realloc(s->cool, cap * sizeof(*n));
      if(!n)
        return -ENOMEM;
      s->cool = n;
      s->cap_cool = cap;
    }
    c = &s->cool[s->n_cool++];
    snprintf(c->name, sizeof(c->name), "%s", name);
  }
  c->last_ms = now_ms;
  return 0;
}

void mdp_sched_identity(char *out, size_t len, const mdp_worker_id *who, const char *certificate)
{
  snprintf(out, len, "'%.128s' (uid %lu, certificate '%.128s')", who->name, (unsigned long)who->uid,
           certificate ? certificate : "");
}

static void cooldown_why(const mdp_sched_t *s, const char *name, int64_t now_ms, char *why,
                         size_t whylen)
{
  uint64_t left = mdp_sched_cooldown_left(s, name, now_ms);
  snprintf(why, whylen,
           "CaptureCooldown: worker %s was captured recently; next "
           "capture allowed in %" PRIu64 " s",
           name, (left + 999) / 1000);
}

static int start(mdp_sched_t *s, mdp_sched_conn_t *c, int64_t now_ms)
{
  int rc = uid_mark(s, c->who.uid);
  if(!rc)
    rc = cool_mark(s, c->name, now_ms);
  if(rc)
    return rc;
  c->state = MDP_CONN_RUNNING;
  s->running++;
  return 0;
}

mdp_admit_t mdp_sched_admit(mdp_sched_t *s, const mdp_sched_trigger_t *t, char *why, size_t whylen)
{
  const char *name = t->name;
  int64_t now_ms = t->now_ms;
  bool manual = t->manual;
  mdp_sched_conn_t *c = find(s, t->who.connection_id);
  if(c && c->state != MDP_CONN_IDLE) {
    snprintf(why, whylen, "a capture plan already %s for this worker",
             c->state == MDP_CONN_RUNNING ? "runs" : "waits");
    return MDP_ADMIT_BUSY;
  }
  /* One plan per process: names registered by one process are one worker's
   * memory, and would otherwise hold the queue one after the other. */
  const mdp_sched_conn_t *other = process_plan(s, t->who.connection_id, (long)t->who.pid);
  if(other) {
    snprintf(why, whylen,
             "a capture plan already %s for this process (pid %ld, connection %" PRIu64
             "): one plan per process",
             other->state == MDP_CONN_RUNNING ? "runs" : "waits", (long)t->who.pid,
             other->who.connection_id);
    return MDP_ADMIT_BUSY;
  }
  if(!manual && mdp_sched_cooldown_left(s, name, now_ms)) {
    cooldown_why(s, name, now_ms, why, whylen);
    return MDP_ADMIT_COOLDOWN;
  }
  c = get(s, t);
  if(!c) {
    snprintf(why, whylen, "out of memory");
    return MDP_ADMIT_NO_MEMORY;
  }
  if(s->running >= s->concurrency) {
    c->state = MDP_CONN_QUEUED;
    c->manual = manual;
    c->seq = ++s->seq;
    c->queued_ms = now_ms;
    snprintf(why, whylen, "CaptureConcurrency %u reached: queued until a capture ends",
             s->concurrency);
    return MDP_ADMIT_QUEUE;
  }
  if(start(s, c, now_ms)) {
    snprintf(why, whylen, "out of memory");
    return MDP_ADMIT_NO_MEMORY;
  }
  return MDP_ADMIT_START;
}

/* conn's plan ended: its slot is free. NULL when it was not running. */
static mdp_sched_conn_t *end_running(mdp_sched_t *s, uint64_t conn)
{
  mdp_sched_conn_t *c = find(s, conn);
  if(!c || c->state != MDP_CONN_RUNNING)
    return NULL;
  c->state = MDP_CONN_IDLE;
  s->running--;
  return c;
}

void mdp_sched_give_back(mdp_sched_t *s, uint64_t conn) { end_running(s, conn); }

void mdp_sched_finished(mdp_sched_t *s, uint64_t conn, bool dump_taken)
{
  mdp_sched_conn_t *c = end_running(s, conn);
  if(c)
    c->dump_taken |= dump_taken;
}

mdp_next_t mdp_sched_next(mdp_sched_t *s, int64_t now_ms, uint64_t *conn, char *why, size_t whylen)
{
  if(s->running >= s->concurrency)
    return MDP_NEXT_NONE;
  /* The uid that started a plan least recently, its oldest trigger. */
  mdp_sched_conn_t *oldest = NULL;
  uint64_t oldest_last = 0;
  for(size_t i = 0; i < s->n_conns; i++) {
    mdp_sched_conn_t *c = &s->conns[i];
    if(c->state != MDP_CONN_QUEUED)
      continue;
    uint64_t last = uid_last(s, c->who.uid);
    if(!oldest || last < oldest_last || (last == oldest_last && c->seq < oldest->seq)) {
      oldest = c;
      oldest_last = last;
    }
  }
  if(!oldest)
    return MDP_NEXT_NONE;
  *conn = oldest->who.connection_id;
  if(!oldest->manual && mdp_sched_cooldown_left(s, oldest->name, now_ms)) {
    oldest->state = MDP_CONN_IDLE;
    cooldown_why(s, oldest->name, now_ms, why, whylen);
    return MDP_NEXT_DROPPED;
  }
  if(start(s, oldest, now_ms)) {
    oldest->state = MDP_CONN_IDLE;
    snprintf(why, whylen, "out of memory");
    return MDP_NEXT_DROPPED;
  }
  return MDP_NEXT_START;
}

bool mdp_sched_gone(mdp_sched_t *s, uint64_t conn)
{
  mdp_sched_conn_t *c = find(s, conn);
  if(!c)
    return false;
  bool queued = c->state == MDP_CONN_QUEUED;
  if(c->state == MDP_CONN_RUNNING)
    s->running--;
  *c = s->conns[--s->n_conns];
  return queued;
}

mdp_limit_action_t mdp_sched_limit(mdp_sched_t *s, const mdp_sched_trigger_t *t, char *why,
                                   size_t whylen)
{
  int64_t now_ms = t->now_ms;
  if(!s->restart_after_capture)
    return MDP_LIMIT_IGNORE;
  /* The process's plan on another connection takes its dump and restart. */
  if(process_plan(s, t->who.connection_id, (long)t->who.pid))
    return MDP_LIMIT_IGNORE;
  mdp_sched_conn_t *c = get(s, t);
  if(!c || c->limit_seen)
    return MDP_LIMIT_IGNORE;
  c->limit_seen = true;
  if(c->state == MDP_CONN_RUNNING)
    return MDP_LIMIT_PLAN;
  if(c->dump_taken) {
    snprintf(why, whylen, "a heap dump of this worker was already captured");
    if(c->state == MDP_CONN_QUEUED)
      c->state = MDP_CONN_IDLE;
    return MDP_LIMIT_SIGNAL;
  }
  if(mdp_sched_cooldown_left(s, c->name, now_ms)) {
    cooldown_why(s, c->name, now_ms, why, whylen);
    if(c->state == MDP_CONN_QUEUED)
      c->state = MDP_CONN_IDLE;
    return MDP_LIMIT_SIGNAL;
  }
  /* The worker is about to be restarted: its one dump does not wait for a
   * concurrency slot, or the evidence would be lost. */
  if(start(s, c, now_ms)) {
    snprintf(why, whylen, "out of memory");
    return MDP_LIMIT_SIGNAL;
  }
  return MDP_LIMIT_DUMP;
}
