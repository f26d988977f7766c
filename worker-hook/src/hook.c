/* Public lifecycle and runtime-side calls of libmemdiag-hook. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

const char *mdh_strerror(int err)
{
  switch(err) {
  case MDH_OK: return "ok";
  case MDH_ETIMEDOUT: return "timed out";
  case MDH_EINTR: return "interrupted";
  case MDH_ESTOPPED: return "hook stopped";
  case MDH_ENOMEM: return "out of memory";
  case MDH_EINVAL: return "invalid argument";
  case MDH_EFORKED: return "hook belongs to the parent process";
  case MDH_ETHREAD: return "cannot start the hook's I/O thread";
  case MDH_ESTALE: return "the request's connection has closed";
  }
  return "unknown error";
}

static void free_config(mdh_hook *h)
{
  size_t i;
  free(h->socket_path);
  free(h->certificate);
  free(h->key);
  free(h->ca);
  free(h->name);
  free(h->runtime);
  free(h->runtime_version);
  free(h->hook_version);
  free(h->dump_directory);
  for(i = 0; i < h->n_capabilities; i++)
    free(h->capabilities[i]);
  free(h->capabilities);
}

/* Copy src into *dst; a NULL src stays NULL unless fallback is given. */
static int dup_str(char **dst, const char *src, const char *fallback)
{
  if(!src)
    src = fallback;
  if(!src)
    return MDH_OK;
  *dst = strdup(src);
  return *dst ? MDH_OK : MDH_ENOMEM;
}

static int copy_config(mdh_hook *h, const mdh_config *c)
{
  size_t i;
  int rc;
  const struct {
    char **dst;
    const char *src, *fallback;
  } strings[] = {
      {&h->socket_path, c->socket_path, NULL},
      {&h->certificate, c->certificate, NULL},
      {&h->key, c->key, NULL},
      {&h->ca, c->ca, NULL},
      {&h->name, c->name, NULL},
      {&h->runtime, c->runtime, "unknown"},
      {&h->runtime_version, c->runtime_version, ""},
      {&h->hook_version, c->hook_version, MDH_VERSION},
      {&h->dump_directory, c->dump_directory, NULL},
  };

  for(i = 0; i < sizeof strings / sizeof strings[0]; i++) {
    rc = dup_str(strings[i].dst, strings[i].src, strings[i].fallback);
    if(rc)
      goto out;
  }
  if(c->n_capabilities) {
    h->capabilities = calloc(c->n_capabilities, sizeof *h->capabilities);
    if(!h->capabilities) {
      rc = MDH_ENOMEM;
      goto out;
    }
    for(i = 0; i < c->n_capabilities; i++) {
      rc = dup_str(&h->capabilities[i], c->capabilities[i], "");
      if(rc)
        goto out;
      h->n_capabilities = i + 1;
    }
  }
  h->backoff_min_ms = c->backoff_min_ms ? c->backoff_min_ms : 100;
  h->backoff_max_ms = c->backoff_max_ms ? c->backoff_max_ms : 30000;
  if(h->backoff_max_ms < h->backoff_min_ms)
    h->backoff_max_ms = h->backoff_min_ms;
  h->handshake_timeout_ms = c->handshake_timeout_ms ? c->handshake_timeout_ms : 5000;
  h->queue_capacity = c->queue_capacity ? c->queue_capacity : 16;
out:
  return rc;
}

/* Release what a hook owns apart from its I/O thread and TLS objects. */
static void free_plain(mdh_hook *h, int destroy_sync)
{
  unsigned i;
  if(h->reqs)
    for(i = 0; i < h->queue_capacity; i++)
      mdh_request_clear(&h->reqs[i]);
  free(h->reqs);
  mdh_reply_nodes_free(h->replies);
  mdh_wake_close(&h->wake);
  free_config(h);
  if(destroy_sync) {
    pthread_cond_destroy(&h->cond);
    pthread_mutex_destroy(&h->mu);
    pthread_mutex_destroy(&h->io_lock);
  }
  free(h);
}

static int start_thread(mdh_hook *h)
{
  sigset_t all, old;
  int rc;

  /* Signals belong to the runtime's threads (Ruby handles them on its own
   * threads); the I/O thread must never be picked to receive one. */
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  rc = pthread_create(&h->thread, NULL, mdh_io_main, h);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if(rc)
    return MDH_ETHREAD;
  pthread_setname_np(h->thread, "memdiag-io");
  h->thread_started = 1;
  return MDH_OK;
}

int mdh_start(mdh_hook **out, const mdh_config *config)
{
  pthread_condattr_t ca;
  mdh_hook *h = NULL;
  int rc;

  *out = NULL;
  if(!config || !config->socket_path || !config->certificate || !config->key || !config->ca ||
     !config->name)
    return MDH_EINVAL;

  h = calloc(1, sizeof *h);
  if(!h)
    return MDH_ENOMEM;
  h->wake = MDH_WAKE_NONE;
  h->conn_fd = -1;
  h->pid = getpid();
  pthread_mutex_init(&h->mu, NULL);
  pthread_mutex_init(&h->io_lock, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&h->cond, &ca);
  pthread_condattr_destroy(&ca);

  rc = copy_config(h, config);
  if(rc)
    goto out;
  h->reqs = calloc(h->queue_capacity, sizeof *h->reqs);
  if(!h->reqs) {
    rc = MDH_ENOMEM;
    goto out;
  }
  if(mdh_wake_open(&h->wake) < 0) {
    rc = MDH_ETHREAD;
    goto out;
  }
  rc = mdh_fork_register(h);
  if(rc)
    goto out;
  rc = start_thread(h);
  if(rc) {
    mdh_fork_unregister(h);
    goto out;
  }
  *out = h;
out:
  if(rc)
    free_plain(h, 1);
  return rc;
}

static int inherited(const mdh_hook *h) { return h->forked_away || h->pid != getpid(); }

static void deadline_after(struct timespec *ts, int ms)
{
  clock_gettime(CLOCK_MONOTONIC, ts);
  ts->tv_sec += ms / 1000;
  ts->tv_nsec += (long)(ms % 1000) * 1000000L;
  if(ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

int mdh_next_request(mdh_hook *h, mdh_request *req, int timeout_ms)
{
  struct timespec until;
  int rc;

  memset(req, 0, sizeof *req);
  if(!h)
    return MDH_EINVAL;
  if(inherited(h))
    return MDH_EFORKED;
  if(timeout_ms > 0)
    deadline_after(&until, timeout_ms);

  pthread_mutex_lock(&h->mu);
  for(;;) {
    if(h->stopping) {
      rc = MDH_ESTOPPED;
      break;
    }
    if(h->wakeups) {
      h->wakeups = 0;
      rc = MDH_EINTR;
      break;
    }
    rc = mdh_queue_pop_request(h, req);
    if(rc == MDH_OK) {
      h->busy_request_id = req->id;
      break;
    }
    if(timeout_ms == 0) {
      rc = MDH_ETIMEDOUT;
      break;
    }
    if(timeout_ms < 0)
      pthread_cond_wait(&h->cond, &h->mu);
    else if(pthread_cond_timedwait(&h->cond, &h->mu, &until) == ETIMEDOUT)
      timeout_ms = 0; /* one more look at the queue, then give up */
  }
  pthread_mutex_unlock(&h->mu);
  return rc;
}

void mdh_wakeup(mdh_hook *h)
{
  if(!h || inherited(h))
    return;
  pthread_mutex_lock(&h->mu);
  h->wakeups++;
  pthread_cond_broadcast(&h->cond);
  pthread_mutex_unlock(&h->mu);
}

int mdh_reply(mdh_hook *h, const mdh_reply_t *reply)
{
  Memdiag__V1__Frame *frame;
  mdh_reply_node *node = NULL;
  size_t size;
  int rc = MDH_OK;

  if(!h || !reply)
    return MDH_EINVAL;
  if(inherited(h))
    return MDH_EFORKED;

  frame = mdh_reply_frame_new(reply);
  if(!frame)
    frame = mdh_reply_frame_error(reply->request_id, MDH_STATUS_ERROR,
                                  "out of memory while copying the reply");
  if(frame) {
    size = protobuf_c_message_get_packed_size(&frame->base) + MD_FRAME_HEADER;
    if(size > MD_FRAME_MAX_DEFAULT) {
      char msg[160];
      snprintf(msg, sizeof msg,
               "the result (%zu bytes) does not fit in one frame (%u bytes); give a path", size,
               MD_FRAME_MAX_DEFAULT);
      mdh_reply_frame_free(frame);
      frame = mdh_reply_frame_error(reply->request_id, MDH_STATUS_ERROR, msg);
    }
  }
  if(frame)
    node = calloc(1, sizeof *node);
  if(!node) {
    mdh_reply_frame_free(frame);
    rc = MDH_ENOMEM;
  } else {
    node->connection_id = reply->connection_id;
    node->frame = frame;
  }

  pthread_mutex_lock(&h->mu);
  if(h->busy_request_id == reply->request_id)
    h->busy_request_id = 0;
  if(node) {
    if(h->stopping)
      rc = MDH_ESTOPPED;
    else if(atomic_load(&h->connection_id) != reply->connection_id)
      rc = MDH_ESTALE;
    else
      mdh_queue_push_reply(h, node);
  }
  pthread_mutex_unlock(&h->mu);
  if(rc == MDH_ESTALE)
    /* The plugin ended this request when the connection closed (it may
     * have given up on a silent plugin): say where the work went. */
    mdh_log(h, "reply to request %llu dropped: connection %llu closed while it ran",
            (unsigned long long)reply->request_id, (unsigned long long)reply->connection_id);
  if(node && rc) {
    mdh_reply_nodes_free(node);
  } else if(node) {
    mdh_wake_signal(&h->wake);
  }
  return rc;
}

uint64_t mdh_connection_id(const mdh_hook *h)
{
  return h && !inherited(h) ? atomic_load(&h->connection_id) : 0;
}

uint64_t mdh_connections(const mdh_hook *h)
{
  return h && !inherited(h) ? atomic_load(&h->connections) : 0;
}

int mdh_forked_away(const mdh_hook *h) { return h ? inherited(h) : 0; }

void mdh_shutdown(mdh_hook *h)
{
  int join;
  if(!h || inherited(h))
    return;
  pthread_mutex_lock(&h->mu);
  h->stopping = 1;
  join = h->thread_started;
  h->thread_started = 0;
  pthread_cond_broadcast(&h->cond);
  pthread_mutex_unlock(&h->mu);
  if(join) {
    mdh_wake_signal(&h->wake);
    pthread_join(h->thread, NULL);
  }
}

void mdh_stop(mdh_hook *h)
{
  if(!h)
    return;
  if(inherited(h)) {
    /* the parent's thread, socket and TLS session are not ours to touch;
     * the fork handler already closed the descriptors */
    free_plain(h, 0);
    return;
  }
  mdh_shutdown(h);
  mdh_fork_unregister(h);
  mdh_stream_release(h);
  free_plain(h, 1);
}
