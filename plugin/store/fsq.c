/* memdiag plugin: the capture module's file-system thread (see fs_queue.h). */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fsq.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* guards all below */
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;   /* a job, or stop */
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER;   /* a job finished */
static mdp_fsq_job *head, *tail;
static unsigned queued;
static uint64_t submitted, finished; /* jobs ever queued and ever run */
static bool running, stopping;
static pthread_t thread;
static mdp_loop *loop;

static void done_task(void *arg)
{
  mdp_fsq_job *j = arg;
  j->done(j);
}

static void *thread_main(void *unused)
{
  (void)unused;
  pthread_mutex_lock(&lock);
  for(;;) {
    while(!head && !stopping)
      pthread_cond_wait(&wake, &lock);
    mdp_fsq_job *j = head;
    if(!j)
      break; /* stopping, and nothing left */
    head = j->next;
    if(!head)
      tail = NULL;
    queued--;
    pthread_mutex_unlock(&lock);
    j->work(j);
    if(!j->done || mdp_loop_post_task(loop, &j->task, done_task, j) != 0)
      free(j);
    pthread_mutex_lock(&lock);
    finished++;
    pthread_cond_broadcast(&idle);
  }
  pthread_mutex_unlock(&lock);
  return NULL;
}

int mdp_fsq_start(mdp_loop *l)
{
  int rc = 0;

  pthread_mutex_lock(&lock);
  if(!running) {
    loop = l;
    stopping = false;
    rc = plugin_thread_create(&thread, thread_main, NULL, "memdiag fs");
    running = rc == 0;
  }
  pthread_mutex_unlock(&lock);
  return -rc;
}

void mdp_fsq_stop(void)
{
  pthread_mutex_lock(&lock);
  if(!running) {
    pthread_mutex_unlock(&lock);
    return;
  }
  stopping = true;
  pthread_cond_broadcast(&wake);
  pthread_mutex_unlock(&lock);
  pthread_join(thread, NULL);
  pthread_mutex_lock(&lock);
  running = false;
  pthread_mutex_unlock(&lock);
}

/* New work is bounded (MDP_FSQ_MAX); a begun capture's is not (fsq.h). */
typedef enum { FSQ_BOUNDED, FSQ_UNBOUNDED } fsq_bound;

static int submit(mdp_fsq_job *j, fsq_bound bound)
{
  bool bounded = bound == FSQ_BOUNDED;
  int rc = 0;

  j->next = NULL;
  pthread_mutex_lock(&lock);
  if(!running || stopping)
    rc = -ESHUTDOWN;
  else if(bounded && queued >= MDP_FSQ_MAX)
    rc = -EAGAIN;
  if(!rc) {
    if(tail)
      tail->next = j;
    else
      head = j;
    tail = j;
    queued++;
    submitted++;
    pthread_cond_signal(&wake);
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

int mdp_fsq_submit(mdp_fsq_job *j) { return submit(j, FSQ_BOUNDED); }

int mdp_fsq_continue(mdp_fsq_job *j) { return submit(j, FSQ_UNBOUNDED); }

bool mdp_fsq_stopping(void)
{
  pthread_mutex_lock(&lock);
  bool s = stopping;
  pthread_mutex_unlock(&lock);
  return s;
}

unsigned mdp_fsq_waiting(void)
{
  pthread_mutex_lock(&lock);
  unsigned n = queued;
  pthread_mutex_unlock(&lock);
  return n;
}

void mdp_fsq_wait_idle(void)
{
  pthread_mutex_lock(&lock);
  uint64_t until = submitted;
  while(running && finished < until)
    pthread_cond_wait(&idle, &lock);
  pthread_mutex_unlock(&lock);
}
