/* The two queues between the I/O thread and the runtime thread. Both are
 * guarded by h->mu, which every caller holds. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int mdh_queue_push_request(mdh_hook *h, mdh_request *req)
{
  unsigned slot;
  if(h->req_n >= h->queue_capacity)
    return MDH_ENOMEM;
  slot = (h->req_head + h->req_n) % h->queue_capacity;
  h->reqs[slot] = *req;
  memset(req, 0, sizeof *req);
  h->req_n++;
  return MDH_OK;
}

int mdh_queue_pop_request(mdh_hook *h, mdh_request *out)
{
  if(h->req_n == 0)
    return MDH_ETIMEDOUT;
  *out = h->reqs[h->req_head];
  memset(&h->reqs[h->req_head], 0, sizeof h->reqs[h->req_head]);
  h->req_head = (h->req_head + 1) % h->queue_capacity;
  h->req_n--;
  return MDH_OK;
}

void mdh_queue_push_reply(mdh_hook *h, mdh_reply_node *node)
{
  node->next = NULL;
  if(h->replies_tail)
    h->replies_tail->next = node;
  else
    h->replies = node;
  h->replies_tail = node;
}

mdh_reply_node *mdh_queue_take_replies(mdh_hook *h)
{
  mdh_reply_node *n = h->replies;
  h->replies = h->replies_tail = NULL;
  return n;
}

void mdh_reply_nodes_free(mdh_reply_node *n)
{
  while(n) {
    mdh_reply_node *next = n->next;
    mdh_reply_frame_free(n->frame);
    free(n);
    n = next;
  }
}

unsigned mdh_reply_nodes_count(const mdh_reply_node *n)
{
  unsigned k = 0;
  for(; n; n = n->next)
    k++;
  return k;
}

/* Requests and replies belong to one connection: the plugin forgets them
 * when it closes, so a new connection starts with empty queues. */
void mdh_queue_drop_all(mdh_hook *h, unsigned *requests, unsigned *replies)
{
  mdh_request r;
  mdh_reply_node *taken = mdh_queue_take_replies(h);

  *requests = 0;
  while(mdh_queue_pop_request(h, &r) == MDH_OK) {
    mdh_request_clear(&r);
    (*requests)++;
  }
  *replies = mdh_reply_nodes_count(taken);
  mdh_reply_nodes_free(taken);
}
