/* memdiag plugin: the per-uid cap on unread frames; see bufcap.h. */
#include <stdlib.h>

#include "bufcap.h"

/* By uid, then the connection holding most first. */
static int by_uid_most_first(const void *a, const void *b)
{
  const mdp_bufcap_entry *x = a, *y = b;

  if(x->uid != y->uid)
    return x->uid < y->uid ? -1 : 1;
  if(x->bytes != y->bytes)
    return x->bytes > y->bytes ? -1 : 1;
  return 0;
}

size_t mdp_bufcap_pick(mdp_bufcap_entry *e, size_t n, size_t limit)
{
  size_t closed = 0;

  if(n == 0)
    return 0;
  qsort(e, n, sizeof *e, by_uid_most_first);
  for(size_t first = 0, end; first < n; first = end) {
    size_t held = 0;
    for(end = first; end < n && e[end].uid == e[first].uid; end++) {
      e[end].close = 0;
      held += e[end].bytes;
    }
    for(size_t i = first; i < end && held > limit; i++) {
      e[i].close = 1;
      e[i].uid_had = held;
      held -= e[i].bytes;
      closed++;
    }
  }
  return closed;
}
