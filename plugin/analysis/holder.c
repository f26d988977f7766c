/* What holds the suspect: the objects outside the retained set that
 * reference the tops of its dominator subtrees, and the shortest path from
 * a GC root to each; see analysis.h (mdp_analysis_holder). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis_int.h"
#include "scan.h"

#define HOLDERS_MAX    5
#define PATH_MAX_STEPS 32

static char *name_text(mdp_ctx *c, uint32_t id) { return mdp_analysis_decoded(&c->names, id); }

/* The name of the class (or module) at address in the last dump: 0 none. */
static uint32_t class_name_id(mdp_ctx *c, uint64_t address)
{
  mdp_analysis_rec *r = mdp_analysis_map_get(&c->cname[c->res->n_dumps - 1], address, 0, 0);
  return r ? (uint32_t)r->a : 0;
}

/* Type and name of graph node v. 0 or -ENOMEM. */
static int step_of(mdp_ctx *c, uint32_t v, mdp_analysis_step *s)
{
  const mdp_analysis_graph *g = &c->g;
  unsigned type = g->type[v];
  uint32_t name = 0;
  s->type = mdp_analysis_type_name(type);
  s->address = mdp_analysis_graph_address(g, v);
  s->name = NULL;
  if(type == MDP_T_CLASS || type == MDP_T_MODULE) {
    name = class_name_id(c, s->address);
  } else if(g->flag[v] & MDP_G_RETAINED) {
    const mdp_analysis_rec *r = &c->groups.recs[c->ret[g->aux[v]].group];
    if(!(r->c >> 63))
      name = class_name_id(c, r->c);
  } else if(g->aux[v]) {
    name = class_name_id(c, c->clsid.recs[g->aux[v] - 1].k1);
  }
  if(name && !(s->name = name_text(c, name)))
    return -ENOMEM;
  return 0;
}

static const char *kind_text(mdp_ctx *c, uint32_t kind, size_t *n)
{
  return mdp_analysis_strtab_str(&c->g.kinds, kind, n);
}

static char *dup_n(const char *s, size_t n)
{
  char *d = malloc(n + 1);
  if(d) {
    memcpy(d, s, n);
    d[n] = '\0';
  }
  return d;
}

static int cmp_holder(const void *x, const void *y)
{
  const mdp_analysis_rec *a = x, *b = y;
  /* Objects alive in every dump first (the holder that grew), then by the
   * references they hold. */
  if(a->b != b->b)
    return a->b > b->b ? -1 : 1;
  if(a->a != b->a)
    return a->a > b->a ? -1 : 1;
  return a->k1 < b->k1 ? -1 : a->k1 > b->k1;
}

/* An object that references v, not already in chain: classes and
 * modules first, then objects of C types (a Thread, a Fiber), then others. */
static uint32_t referrer(const mdp_analysis_graph *g, uint32_t v, const uint32_t *chain, size_t n)
{
  uint32_t best = MDP_G_NONE;
  int best_score = 0;
  for(uint32_t u = 0; u < g->n; u++) {
    for(uint32_t i = g->first[u]; i < g->first[u + 1]; i++) {
      if(g->to[i] != v || u == v)
        continue;
      int in = 0;
      for(size_t k = 0; k < n; k++)
        in |= chain[k] == u;
      int score = in                                                        ? 0
                  : g->type[u] == MDP_T_CLASS || g->type[u] == MDP_T_MODULE ? 4
                  : g->type[u] == MDP_T_DATA                                ? 3
                  : g->flag[u] & MDP_G_RETAINED                             ? 1
                                                                            : 2;
      if(score > best_score)
        best = u, best_score = score;
      break;
    }
  }
  return best;
}

/* No root reaches v (in a dump made in a fork, the other threads, their
 * stacks and what only they hold are gone): the objects that reference it,
 * climbing a few steps. */
static size_t climb(mdp_ctx *c, uint32_t v, uint32_t *chain)
{
  size_t n = 0;
  chain[n++] = v;
  while(n < 6) {
    uint32_t u = referrer(&c->g, chain[n - 1], chain, n);
    if(u == MDP_G_NONE)
      break;
    chain[n++] = u;
    if(c->g.type[u] == MDP_T_CLASS || c->g.type[u] == MDP_T_MODULE)
      break;
  }
  return n;
}

static int path_to(mdp_ctx *c, const uint32_t *parent, uint32_t v, mdp_analysis_holder *h)
{
  uint32_t chain[PATH_MAX_STEPS];
  size_t n = 0;
  uint32_t p = v;
  while(p < MDP_G_ROOT_BASE && n < PATH_MAX_STEPS) {
    chain[n++] = p;
    p = parent[p];
  }
  if(p == MDP_G_NONE) {
    n = climb(c, v, chain);
    goto steps;
  }
  if(p >= MDP_G_ROOT_BASE && p != MDP_G_NONE) {
    size_t kl;
    const char *k = kind_text(c, c->g.root_kind[p - MDP_G_ROOT_BASE], &kl);
    if(k && !(h->root = dup_n(k, kl)))
      return -ENOMEM;
  } else if(!(h->root = strdup("?"))) { /* longer than PATH_MAX_STEPS */
    return -ENOMEM;
  }
steps:
  h->path = calloc(n, sizeof(*h->path));
  if(!h->path)
    return -ENOMEM;
  for(size_t i = 0; i < n; i++) {
    h->path_len++;
    if(step_of(c, chain[n - 1 - i], &h->path[i]))
      return -ENOMEM;
  }
  return 0;
}

int mdp_analysis_holders(mdp_ctx *c, const mdp_analysis_own *own, uint32_t m)
{
  mdp_analysis_result *res = c->res;
  mdp_analysis_map found;
  uint32_t targets[HOLDERS_MAX];
  size_t nt = 0;
  int rc;

  mdp_analysis_map_init(&found, &c->mem);
  rc = mdp_analysis_own_holders(own, m, &found);
  if(rc)
    goto out;
  for(size_t i = 0; i < found.n; i++) {
    mdp_analysis_rec *r = &found.recs[i];
    r->b = r->k1 < MDP_G_ROOT_BASE && (c->g.flag[r->k1] & MDP_G_OLD);
  }
  if(found.n) /* qsort of NULL, even for 0 elements, is undefined (UBSan) */
    qsort(found.recs, found.n, sizeof(*found.recs), cmp_holder);
  size_t n = found.n < HOLDERS_MAX ? found.n : HOLDERS_MAX;
  res->holders = calloc(n ? n : 1, sizeof(*res->holders));
  rc = -ENOMEM;
  if(!res->holders)
    goto out;
  for(size_t i = 0; i < n; i++) {
    const mdp_analysis_rec *r = &found.recs[i];
    mdp_analysis_holder *h = &res->holders[res->n_holders++];
    h->refs = r->a;
    h->old = (int)r->b;
    if(r->k1 >= MDP_G_ROOT_BASE) {
      size_t kl;
      const char *k = kind_text(c, (uint32_t)(r->k1 - MDP_G_ROOT_BASE), &kl);
      if(k && !(h->root = dup_n(k, kl)))
        goto out;
      continue;
    }
    if(step_of(c, (uint32_t)r->k1, &h->obj))
      goto out;
    targets[nt++] = (uint32_t)r->k1;
  }
  rc = 0;
  if(nt) {
    uint32_t *parent = mdp_analysis_graph_bfs(&c->g, targets, nt);
    if(!parent)
      goto out; /* no paths: not worth failing the analysis */
    for(size_t i = 0, t = 0; i < res->n_holders && !rc; i++) {
      if(!res->holders[i].obj.type)
        continue;
      rc = path_to(c, parent, targets[t++], &res->holders[i]);
    }
    mdp_analysis_release(&c->mem, parent, c->g.n * 4);
  }
out:
  mdp_analysis_map_free(&found);
  return rc;
}
