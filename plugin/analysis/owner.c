/* Ownership within the retained set; see owner.h. */
#include <errno.h>
#include <string.h>

#include "owner.h"

#define F_HOOK  1u
#define F_TOPG  2u /* topmost of its group on its path from the root */
#define F_ENTRY 4u /* holders(): a subtree top of the group asked about */

typedef struct {
  mdp_analysis_mem *mem;
  size_t v, ne;
  uint32_t *soff, *succ, *poff, *pred, *po, *order;
  uint8_t *art; /* no reference reached it (a cut list): the root's child */
} build;

static void *alloc(mdp_analysis_mem *m, size_t n, size_t size)
{
  return mdp_analysis_alloc(m, (n ? n : 1) * size);
}

static void drop(mdp_analysis_mem *m, void **p, size_t n, size_t size)
{
  if(*p)
    mdp_analysis_release(m, *p, (n ? n : 1) * size);
  *p = NULL;
}

static void build_free(build *b)
{
  drop(b->mem, (void **)&b->soff, b->v + 1, 4);
  drop(b->mem, (void **)&b->succ, b->ne, 4);
  drop(b->mem, (void **)&b->poff, b->v + 1, 4);
  drop(b->mem, (void **)&b->pred, b->ne + b->v, 4);
  drop(b->mem, (void **)&b->po, b->v, 4);
  drop(b->mem, (void **)&b->order, b->v, 4);
  drop(b->mem, (void **)&b->art, b->v, 1);
}

/* Index in the tree of graph node u: its retained number + 1, or 0. */
static inline uint32_t vx(const mdp_analysis_graph *g, uint32_t u)
{
  return g->flag[u] & MDP_G_RETAINED ? g->aux[u] + 1 : 0;
}

/* Successors within the retained set; everything outside is vertex 0. */
static int successors(const mdp_analysis_own *o, build *b)
{
  const mdp_analysis_graph *g = o->g;
  b->soff = alloc(b->mem, b->v + 1, 4);
  if(!b->soff)
    return -ENOMEM;
  for(int fill = 0; fill < 2; fill++) {
    if(fill) {
      uint32_t sum = 0;
      for(size_t i = 0; i <= b->v; i++) {
        uint32_t k = b->soff[i];
        b->soff[i] = sum;
        sum += k;
      }
      b->ne = sum;
      b->succ = alloc(b->mem, b->ne, 4);
      if(!b->succ)
        return -ENOMEM;
    }
    for(uint32_t u = 0; u < g->n; u++) {
      uint32_t src = vx(g, u);
      for(uint32_t i = g->first[u]; i < g->first[u + 1]; i++) {
        uint32_t w = vx(g, g->to[i]);
        if(!w || w == src)
          continue;
        if(fill)
          b->succ[b->soff[src]++] = w;
        else
          b->soff[src]++;
      }
    }
    for(size_t i = 0; i < g->n_roots; i++) {
      uint32_t w = vx(g, g->root_to[i]);
      if(!w)
        continue;
      if(fill)
        b->succ[b->soff[0]++] = w;
      else
        b->soff[0]++;
    }
  }
  /* soff[i] now holds the end of i's list: shift back to starts */
  for(size_t i = b->v; i > 0; i--)
    b->soff[i] = b->soff[i - 1];
  b->soff[0] = 0;
  return 0;
}

/* Postorder of a depth-first search from 0; vertices no reference reached
 * become children of 0 (art), so 0 is numbered last. */
static int postorder(build *b)
{
  uint32_t *sv = alloc(b->mem, b->v, 4), *si = alloc(b->mem, b->v, 4);
  size_t sp = 0, next = 0, cursor = 1;
  int rc = -ENOMEM;
  b->po = alloc(b->mem, b->v, 4);
  b->order = alloc(b->mem, b->v, 4);
  b->art = alloc(b->mem, b->v, 1);
  if(!sv || !si || !b->po || !b->order || !b->art)
    goto out;
  memset(b->po, 0xff, b->v * 4);
  sv[sp] = 0;
  si[sp++] = b->soff[0];
  b->po[0] = 0; /* visited; numbered when done */
  while(sp) {
    uint32_t u = sv[sp - 1];
    if(si[sp - 1] < b->soff[u + 1]) {
      uint32_t w = b->succ[si[sp - 1]++];
      if(b->po[w] != UINT32_MAX)
        continue;
      b->po[w] = 0;
      sv[sp] = w;
      si[sp++] = b->soff[w];
      continue;
    }
    if(u == 0) {
      while(cursor < b->v && b->po[cursor] != UINT32_MAX)
        cursor++;
      if(cursor < b->v) {
        uint32_t w = (uint32_t)cursor;
        b->art[w] = 1;
        b->po[w] = 0;
        sv[sp] = w;
        si[sp++] = b->soff[w];
        continue;
      }
    }
    b->po[u] = (uint32_t)next;
    b->order[next++] = u;
    sp--;
  }
  rc = 0;
out:
  drop(b->mem, (void **)&sv, b->v, 4);
  drop(b->mem, (void **)&si, b->v, 4);
  return rc;
}

static int predecessors(build *b)
{
  b->poff = alloc(b->mem, b->v + 1, 4);
  b->pred = alloc(b->mem, b->ne + b->v, 4);
  if(!b->poff || !b->pred)
    return -ENOMEM;
  for(size_t u = 0; u < b->v; u++) {
    for(uint32_t i = b->soff[u]; i < b->soff[u + 1]; i++)
      b->poff[b->succ[i] + 1]++;
    if(b->art[u])
      b->poff[u + 1]++;
  }
  for(size_t i = 0; i < b->v; i++)
    b->poff[i + 1] += b->poff[i];
  for(size_t u = 0; u < b->v; u++) {
    for(uint32_t i = b->soff[u]; i < b->soff[u + 1]; i++) {
      uint32_t w = b->succ[i];
      b->pred[b->poff[w]++] = (uint32_t)u;
    }
    if(b->art[u])
      b->pred[b->poff[u]++] = 0;
  }
  for(size_t i = b->v; i > 0; i--)
    b->poff[i] = b->poff[i - 1];
  b->poff[0] = 0;
  drop(b->mem, (void **)&b->succ, b->ne, 4);
  drop(b->mem, (void **)&b->soff, b->v + 1, 4);
  return 0;
}

static void dominators(build *b, uint32_t *idom)
{
  memset(idom, 0xff, b->v * 4);
  idom[0] = 0;
  for(int changed = 1; changed;) {
    changed = 0;
    for(size_t k = b->v - 1; k-- > 0;) {
      uint32_t v = b->order[k], d = UINT32_MAX;
      for(uint32_t i = b->poff[v]; i < b->poff[v + 1]; i++) {
        uint32_t p = b->pred[i];
        if(idom[p] == UINT32_MAX)
          continue;
        if(d == UINT32_MAX) {
          d = p;
          continue;
        }
        uint32_t x = p, y = d;
        while(x != y) {
          while(b->po[x] < b->po[y])
            x = idom[x];
          while(b->po[y] < b->po[x])
            y = idom[y];
        }
        d = x;
      }
      if(d != UINT32_MAX && idom[v] != d) {
        idom[v] = d;
        changed = 1;
      }
    }
  }
}

static int tree(mdp_analysis_own *o, build *b)
{
  size_t v = o->v;
  o->top = alloc(o->mem, v, 4);
  o->koff = alloc(o->mem, v + 1, 4);
  o->kids = alloc(o->mem, v, 4);
  o->own = alloc(o->mem, v, 8);
  o->vflag = alloc(o->mem, v, 1);
  if(!o->top || !o->koff || !o->kids || !o->own || !o->vflag)
    return -ENOMEM;
  /* Reverse postorder: a dominator before what it dominates. */
  for(size_t k = v - 1; k-- > 0;) {
    uint32_t x = b->order[k], p = o->idom[x];
    const mdp_analysis_ret *r = &o->ret[x - 1];
    if(o->hook[r->group] || (p && (o->vflag[p] & F_HOOK)))
      o->vflag[x] |= F_HOOK;
    o->top[x] = p ? o->top[p] : x;
    o->own[x] = o->vflag[x] & F_HOOK ? 0 : r->size;
    o->koff[p + 1]++;
  }
  for(size_t k = 0; k + 1 < v; k++) {
    uint32_t x = b->order[k];
    o->own[o->idom[x]] += o->own[x];
  }
  for(size_t i = 0; i < v; i++)
    o->koff[i + 1] += o->koff[i];
  for(size_t x = 1; x < v; x++)
    o->kids[o->koff[o->idom[x]]++] = (uint32_t)x;
  for(size_t i = v; i > 0; i--)
    o->koff[i] = o->koff[i - 1];
  o->koff[0] = 0;
  return 0;
}

/* Depth-first over the tree: each object is counted in its group, and its
 * owned bytes once, under the topmost object of its group on its path. */
static int account(mdp_analysis_own *o)
{
  uint32_t *cnt = alloc(o->mem, o->n_merged, 4);
  uint32_t *sv = alloc(o->mem, o->v, 4), *si = alloc(o->mem, o->v, 4);
  size_t sp = 0;
  int rc = -ENOMEM;
  if(!cnt || !sv || !si)
    goto out;
  sv[sp] = 0;
  si[sp++] = o->koff[0];
  while(sp) {
    uint32_t u = sv[sp - 1];
    if(si[sp - 1] < o->koff[u + 1]) {
      uint32_t x = o->kids[si[sp - 1]++];
      const mdp_analysis_ret *r = &o->ret[x - 1];
      uint32_t m = o->merged[r->group];
      sv[sp] = x;
      si[sp++] = o->koff[x];
      if(o->vflag[x] & F_HOOK) {
        o->hook_count++;
        o->hook_bytes += r->size;
        continue;
      }
      o->count[m]++;
      o->shallow[m] += r->size;
      if(!cnt[m]) {
        o->owned[m] += o->own[x];
        o->vflag[x] |= F_TOPG;
      }
      if(u == 0) /* kept alive by no other retained object */
        o->top_owned[m] += o->own[x];
      cnt[m]++;
      continue;
    }
    if(u && !(o->vflag[u] & F_HOOK))
      cnt[o->merged[o->ret[u - 1].group]]--;
    sp--;
  }
  rc = 0;
out:
  drop(o->mem, (void **)&cnt, o->n_merged, 4);
  drop(o->mem, (void **)&sv, o->v, 4);
  drop(o->mem, (void **)&si, o->v, 4);
  return rc;
}

int mdp_analysis_own_run(mdp_analysis_own *o, mdp_analysis_mem *mem)
{
  build b = {.mem = mem, .v = o->n_ret + 1};
  int rc = -ENOMEM;

  o->mem = mem;
  o->v = b.v;
  o->count = alloc(mem, o->n_merged, 8);
  o->shallow = alloc(mem, o->n_merged, 8);
  o->owned = alloc(mem, o->n_merged, 8);
  o->top_owned = alloc(mem, o->n_merged, 8);
  o->idom = alloc(mem, b.v, 4);
  if(!o->count || !o->shallow || !o->owned || !o->top_owned || !o->idom)
    goto out;
  if(successors(o, &b) || postorder(&b) || predecessors(&b))
    goto out;
  dominators(&b, o->idom);
  drop(mem, (void **)&b.pred, b.ne + b.v, 4);
  drop(mem, (void **)&b.poff, b.v + 1, 4);
  if(tree(o, &b))
    goto out;
  build_free(&b);
  rc = account(o);
out:
  build_free(&b);
  if(rc)
    mdp_analysis_own_free(o);
  return rc;
}

void mdp_analysis_own_mostly(const mdp_analysis_own *o, uint32_t m, uint64_t *bytes)
{
  uint32_t *stack = alloc(o->mem, o->v, 4);
  if(!stack)
    return;
  for(size_t x = 1; x < o->v; x++) {
    if(!(o->vflag[x] & F_TOPG) || o->merged[o->ret[x - 1].group] != m)
      continue;
    size_t sp = 0;
    for(uint32_t i = o->koff[x]; i < o->koff[x + 1]; i++)
      stack[sp++] = o->kids[i];
    while(sp) {
      uint32_t y = stack[--sp];
      if(o->vflag[y] & F_HOOK)
        continue;
      uint32_t k = o->merged[o->ret[y - 1].group];
      if(k != m)
        bytes[k] += o->ret[y - 1].size;
      for(uint32_t i = o->koff[y]; i < o->koff[y + 1]; i++)
        stack[sp++] = o->kids[i];
    }
  }
  drop(o->mem, (void **)&stack, o->v, 4);
}

int mdp_analysis_own_holders(const mdp_analysis_own *o, uint32_t m, mdp_analysis_map *holders)
{
  const mdp_analysis_graph *g = o->g;
  int rc = 0;
  for(size_t x = 1; x < o->v; x++)
    if((o->vflag[x] & F_TOPG) && !(o->vflag[x] & F_HOOK) && o->merged[o->ret[x - 1].group] == m)
      o->vflag[o->top[x]] |= F_ENTRY;
  for(uint32_t u = 0; u < g->n && !rc; u++) {
    if(g->flag[u] & MDP_G_RETAINED)
      continue;
    for(uint32_t i = g->first[u]; i < g->first[u + 1]; i++) {
      uint32_t w = vx(g, g->to[i]);
      if(!w || !(o->vflag[w] & F_ENTRY))
        continue;
      mdp_analysis_rec *h = mdp_analysis_map_get(holders, u, 0, 1);
      if(!h) {
        rc = -ENOMEM;
        break;
      }
      h->a++;
    }
  }
  for(size_t i = 0; i < g->n_roots && !rc; i++) {
    uint32_t w = vx(g, g->root_to[i]);
    if(!w || !(o->vflag[w] & F_ENTRY))
      continue;
    mdp_analysis_rec *h =
        mdp_analysis_map_get(holders, MDP_G_ROOT_BASE + (uint64_t)g->root_kind[i], 0, 1);
    if(!h)
      rc = -ENOMEM;
    else
      h->a++;
  }
  for(size_t x = 1; x < o->v; x++)
    o->vflag[x] &= (uint8_t)~F_ENTRY;
  return rc;
}

void mdp_analysis_own_free(mdp_analysis_own *o)
{
  if(!o->mem)
    return;
  drop(o->mem, (void **)&o->count, o->n_merged, 8);
  drop(o->mem, (void **)&o->shallow, o->n_merged, 8);
  drop(o->mem, (void **)&o->owned, o->n_merged, 8);
  drop(o->mem, (void **)&o->top_owned, o->n_merged, 8);
  drop(o->mem, (void **)&o->idom, o->v, 4);
  drop(o->mem, (void **)&o->top, o->v, 4);
  drop(o->mem, (void **)&o->koff, o->v + 1, 4);
  drop(o->mem, (void **)&o->kids, o->v, 4);
  drop(o->mem, (void **)&o->own, o->v, 8);
  drop(o->mem, (void **)&o->vflag, o->v, 1);
}
