/* Fork safety. A child of a hooked process inherits the parent's hook
 * memory, its socket and its TLS session, but not its I/O thread. Writing
 * to that session from the child would corrupt the parent's TLS stream, so
 * the child closes the inherited descriptors and marks every inherited hook
 * as forked away; later calls on it are refused.
 *
 * The prepare handler takes each hook's io_lock and mu, so the fork happens
 * while no hook is in the middle of an OpenSSL call or a queue update: the
 * child may then load its own certificates and open its own connection
 * without finding OpenSSL or the queues half-updated. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

static pthread_mutex_t registry_mu = PTHREAD_MUTEX_INITIALIZER;
static mdh_hook *registry;
static pthread_once_t handlers_once = PTHREAD_ONCE_INIT;
static int handlers_rc;

static void prepare(void)
{
  mdh_hook *h;
  pthread_mutex_lock(&registry_mu);
  for(h = registry; h; h = h->next_registered) {
    pthread_mutex_lock(&h->io_lock);
    pthread_mutex_lock(&h->mu);
  }
}

static void parent(void)
{
  mdh_hook *h;
  for(h = registry; h; h = h->next_registered) {
    pthread_mutex_unlock(&h->mu);
    pthread_mutex_unlock(&h->io_lock);
  }
  pthread_mutex_unlock(&registry_mu);
}

static void child(void)
{
  pthread_condattr_t ca;
  mdh_hook *h = registry, *next;

  for(; h; h = next) {
    next = h->next_registered;
    h->forked_away = 1;
    h->next_registered = NULL;
    if(h->conn_fd >= 0)
      close(h->conn_fd);
    mdh_wake_close(&h->wake);
    h->conn_fd = -1;
    mdh_stream_forget_in_child(h);
    h->thread_started = 0;
    /* this thread locked both in prepare(), so it may unlock them; the
     * condition variable may record waiters that do not exist here, so it
     * is made anew instead of destroyed */
    pthread_mutex_unlock(&h->mu);
    pthread_mutex_unlock(&h->io_lock);
    memset(&h->cond, 0, sizeof h->cond);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&h->cond, &ca);
    pthread_condattr_destroy(&ca);
  }
  registry = NULL;
  pthread_mutex_unlock(&registry_mu);
}

static void install_handlers(void)
{
  handlers_rc = pthread_atfork(prepare, parent, child) ? MDH_ENOMEM : MDH_OK;
}

int mdh_fork_register(mdh_hook *h)
{
  pthread_once(&handlers_once, install_handlers);
  if(handlers_rc)
    return handlers_rc;
  pthread_mutex_lock(&registry_mu);
  h->next_registered = registry;
  registry = h;
  pthread_mutex_unlock(&registry_mu);
  return MDH_OK;
}

void mdh_fork_unregister(mdh_hook *h)
{
  mdh_hook **p;
  pthread_mutex_lock(&registry_mu);
  for(p = &registry; *p; p = &(*p)->next_registered)
    if(*p == h) {
      *p = h->next_registered;
      break;
    }
  h->next_registered = NULL;
  pthread_mutex_unlock(&registry_mu);
}
