/* The last dump's object graph; see graph.h. */
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "reader.h"

void mdp_analysis_graph_init(mdp_analysis_graph *g, mdp_analysis_mem *mem)
{
  memset(g, 0, sizeof(*g));
  g->mem = mem;
  mdp_analysis_strtab_init(&g->kinds, mem);
  mdp_analysis_map_init(&g->pages, mem);
}

static void release(mdp_analysis_graph *g, void *p, size_t n)
{
  mdp_analysis_release(g->mem, p, n);
}

void mdp_analysis_graph_free(mdp_analysis_graph *g)
{
  release(g, g->addr, g->cap * 4);
  release(g, g->first, (g->cap + 1) * 4);
  release(g, g->aux, g->cap * 4);
  release(g, g->type, g->cap);
  release(g, g->flag, g->cap);
  release(g, g->to, g->edge_cap * 4);
  release(g, g->root_to, g->root_cap * 4);
  release(g, g->root_kind, g->root_cap * 4);
  release(g, g->sorted, g->unsorted ? g->n * 8 : 0);
  mdp_analysis_strtab_free(&g->kinds);
  mdp_analysis_map_free(&g->pages);
  mdp_analysis_mem *mem = g->mem;
  int off = g->off;
  memset(g, 0, sizeof(*g));
  g->mem = mem;
  g->off = off;
  mdp_analysis_strtab_init(&g->kinds, mem);
  mdp_analysis_map_init(&g->pages, mem);
}

/* Out of memory: no graph, and the refusal is not the analysis' failure. */
static void give_up(mdp_analysis_graph *g)
{
  g->off = 1;
  mdp_analysis_graph_free(g);
  g->mem->over = 0;
}

static int grow(mdp_analysis_graph *g, void **p, size_t old, size_t size)
{
  void *q = mdp_analysis_realloc(g->mem, *p, old, size);
  if(!q) {
    give_up(g);
    return -1;
  }
  *p = q;
  return 0;
}

/* Arrays grow by a quarter: the last growth wastes little. */
static size_t next_cap(size_t cap) { return cap < 4096 ? 4096 : cap + cap / 4; }

#define PAGES_MAX (1u << 19)

/* The 32-bit form of an address (0: not one an object can have). */
static uint32_t encode(mdp_analysis_graph *g, uint64_t a)
{
  if(a & 7 || a >= (1ull << 48))
    return 0;
  mdp_analysis_rec *p = mdp_analysis_map_get(&g->pages, a >> 16, 0, 1);
  size_t page = p ? (size_t)(p - g->pages.recs) : PAGES_MAX;
  if(page >= PAGES_MAX) {
    give_up(g);
    return 0;
  }
  return (uint32_t)(page << 13 | (a & 0xffff) >> 3) + 1;
}

uint64_t mdp_analysis_graph_address(const mdp_analysis_graph *g, uint32_t v)
{
  uint32_t e = g->addr[v] - 1;
  return g->pages.recs[e >> 13].k1 << 16 | (uint64_t)(e & 0x1fff) << 3;
}

static void edge(mdp_analysis_graph *g, uint64_t a)
{
  if(g->off)
    return;
  uint32_t e = encode(g, a);
  if(!e)
    return;
  if(g->n_edges == g->edge_cap) {
    size_t cap = next_cap(g->edge_cap);
    if(cap > UINT32_MAX - 1 || grow(g, (void **)&g->to, g->edge_cap * 4, cap * 4))
      return give_up(g);
    g->edge_cap = cap;
  }
  g->to[g->n_edges++] = e;
}

void mdp_analysis_graph_expect(mdp_analysis_graph *g, size_t objects)
{
  if(g->off || g->cap || objects < 4096 || objects >= MDP_G_ROOT_BASE)
    return;
  size_t cap = objects;
  if(grow(g, (void **)&g->addr, 0, cap * 4) || grow(g, (void **)&g->first, 0, (cap + 1) * 4) ||
     grow(g, (void **)&g->aux, 0, cap * 4) || grow(g, (void **)&g->type, 0, cap) ||
     grow(g, (void **)&g->flag, 0, cap))
    return;
  g->cap = cap;
}

static const signed char hexval[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

int mdp_analysis_graph_refs(mdp_analysis_graph *g, const char *p, size_t n)
{
  for(size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)p[i];
    if(g->ref_x) {
      int v = hexval[ch];
      if(v) {
        g->ref_acc = g->ref_acc << 4 | (uint64_t)(v - 1);
        continue;
      }
      g->ref_x = 0;
      edge(g, g->ref_acc);
    }
    if(ch == 'x') {
      g->ref_x = 1;
      g->ref_acc = 0;
    } else if(ch == ']') {
      return 1;
    }
  }
  return 0;
}

void mdp_analysis_graph_middle(void *arg, uint64_t line, const char *head, const char *p, size_t n)
{
  mdp_analysis_graph *g = arg;
  static const char key[] = "\"references\":[";
  if(g->off)
    return;
  if(g->ref_line != line) {
    /* The line's first piece: its references are read across the middle
     * when its head ends inside them. */
    g->ref_line = line;
    g->ref_in = g->ref_done = g->ref_x = 0;
    g->line_start = g->n_edges;
    const char *at = memmem(head, MDP_ANALYSIS_READER_EDGE, key, sizeof(key) - 1);
    if(at) {
      const char *s = at + sizeof(key) - 1, *e = head + MDP_ANALYSIS_READER_EDGE;
      if(!memchr(s, ']', (size_t)(e - s))) {
        g->ref_in = 1;
        mdp_analysis_graph_refs(g, s, (size_t)(e - s));
      }
    }
  }
  if(g->ref_in && !g->ref_done)
    g->ref_done = mdp_analysis_graph_refs(g, p, n);
}

void mdp_analysis_graph_node(mdp_analysis_graph *g, uint64_t address, unsigned type, unsigned flag,
                             uint32_t aux)
{
  if(g->off)
    return;
  if(g->ref_x) { /* a list cut after its last digit */
    g->ref_x = 0;
    edge(g, g->ref_acc);
    if(g->off)
      return;
  }
  uint32_t enc = encode(g, address);
  if(g->off)
    return;
  if(g->n + 1 >= g->cap) {
    size_t cap = next_cap(g->cap);
    if(cap >= MDP_G_ROOT_BASE || grow(g, (void **)&g->addr, g->cap * 4, cap * 4) ||
       grow(g, (void **)&g->first, (g->cap + 1) * 4, (cap + 1) * 4) ||
       grow(g, (void **)&g->aux, g->cap * 4, cap * 4) || grow(g, (void **)&g->type, g->cap, cap) ||
       grow(g, (void **)&g->flag, g->cap, cap))
      return give_up(g);
    g->cap = cap;
  }
  g->addr[g->n] = enc;
  g->first[g->n] = (uint32_t)g->line_start;
  g->aux[g->n] = aux;
  g->type[g->n] = (uint8_t)type;
  g->flag[g->n] = (uint8_t)flag;
  g->n++;
  g->first[g->n] = (uint32_t)g->n_edges;
  g->line_start = g->n_edges;
  if(g->n > 1 && address <= g->last_address)
    g->unsorted = 1;
  g->last_address = address;
}

void mdp_analysis_graph_root(mdp_analysis_graph *g, const char *kind, size_t len)
{
  if(g->off)
    return;
  if(g->ref_x) {
    g->ref_x = 0;
    edge(g, g->ref_acc);
  }
  uint32_t id = mdp_analysis_strtab_id(&g->kinds, kind ? kind : "?", kind ? len : 1);
  if(!id)
    return give_up(g);
  size_t k = g->n_edges - g->line_start;
  if(g->n_roots + k > g->root_cap) {
    size_t cap = g->root_cap ? g->root_cap : 1024;
    while(cap < g->n_roots + k)
      cap *= 2;
    if(grow(g, (void **)&g->root_to, g->root_cap * 4, cap * 4) ||
       grow(g, (void **)&g->root_kind, g->root_cap * 4, cap * 4))
      return give_up(g);
    g->root_cap = cap;
  }
  for(size_t i = 0; i < k; i++) {
    g->root_to[g->n_roots] = g->to[g->line_start + i];
    g->root_kind[g->n_roots++] = id;
  }
  g->n_edges = g->line_start;
}

void mdp_analysis_graph_skip(mdp_analysis_graph *g)
{
  g->ref_x = 0;
  g->n_edges = g->line_start;
}

static int cmp_u64(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The node of encoded address e, or MDP_G_NONE. */
static uint32_t find_enc(const mdp_analysis_graph *g, uint32_t e)
{
  if(g->unsorted) {
    size_t lo = 0, hi = g->n;
    while(lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if((uint32_t)(g->sorted[mid] >> 32) < e)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo < g->n && (uint32_t)(g->sorted[lo] >> 32) == e ? (uint32_t)g->sorted[lo] : MDP_G_NONE;
  }
  const mdp_analysis_rec *p = &g->pages.recs[(e - 1) >> 13];
  size_t lo = p->a, hi = p->a + p->b;
  while(lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if(g->addr[mid] < e)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < p->a + p->b && g->addr[lo] == e ? (uint32_t)lo : MDP_G_NONE;
}

uint32_t mdp_analysis_graph_find(const mdp_analysis_graph *g, uint64_t address)
{
  if(g->off || address & 7)
    return MDP_G_NONE;
  mdp_analysis_rec *p = mdp_analysis_map_get((mdp_analysis_map *)&g->pages, address >> 16, 0, 0);
  if(!p)
    return MDP_G_NONE;
  return find_enc(g, (uint32_t)((size_t)(p - g->pages.recs) << 13 | (address & 0xffff) >> 3) + 1);
}

void mdp_analysis_graph_resolve(mdp_analysis_graph *g)
{
  if(g->off)
    return;
  if(g->unsorted) {
    g->sorted = mdp_analysis_alloc(g->mem, (g->n ? g->n : 1) * 8);
    if(!g->sorted)
      return give_up(g);
    for(size_t i = 0; i < g->n; i++)
      g->sorted[i] = (uint64_t)g->addr[i] << 32 | i;
    qsort(g->sorted, g->n, 8, cmp_u64);
  } else {
    for(size_t i = 0; i < g->n; i++) {
      mdp_analysis_rec *p = &g->pages.recs[(g->addr[i] - 1) >> 13];
      if(!p->b)
        p->a = i;
      p->b++;
    }
  }
  size_t w = 0;
  for(size_t v = 0; v < g->n; v++) {
    size_t from = g->first[v], end = g->first[v + 1];
    g->first[v] = (uint32_t)w;
    for(size_t i = from; i < end; i++) {
      uint32_t t = find_enc(g, g->to[i]);
      if(t != MDP_G_NONE)
        g->to[w++] = t;
    }
  }
  if(g->n)
    g->first[g->n] = (uint32_t)w;
  g->n_edges = w;
  size_t rw = 0;
  for(size_t i = 0; i < g->n_roots; i++) {
    uint32_t t = find_enc(g, g->root_to[i]);
    if(t != MDP_G_NONE) {
      g->root_kind[rw] = g->root_kind[i];
      g->root_to[rw++] = t;
    }
  }
  g->n_roots = rw;
  g->resolved = 1;
}

uint32_t *mdp_analysis_graph_bfs(mdp_analysis_graph *g, const uint32_t *targets, size_t n_targets)
{
  uint32_t *parent = mdp_analysis_alloc(g->mem, (g->n ? g->n : 1) * 4);
  uint32_t *queue = mdp_analysis_alloc(g->mem, (g->n ? g->n : 1) * 4);
  size_t head = 0, tail = 0, left = n_targets;
  if(!parent || !queue) {
    mdp_analysis_release(g->mem, parent, g->n * 4);
    mdp_analysis_release(g->mem, queue, g->n * 4);
    g->mem->over = 0;
    return NULL;
  }
  memset(parent, 0xff, g->n * 4);
  /* Targets are few: a flag bit marks them while the search runs. */
  for(size_t i = 0; i < n_targets; i++)
    g->flag[targets[i]] |= 0x80;
  for(size_t i = 0; i < g->n_roots && left; i++) {
    uint32_t v = g->root_to[i];
    if(parent[v] != MDP_G_NONE)
      continue;
    parent[v] = MDP_G_ROOT_BASE + (uint32_t)i;
    queue[tail++] = v;
    if(g->flag[v] & 0x80)
      left--;
  }
  while(head < tail && left) {
    uint32_t u = queue[head++];
    for(uint32_t i = g->first[u]; i < g->first[u + 1] && left; i++) {
      uint32_t v = g->to[i];
      if(parent[v] != MDP_G_NONE)
        continue;
      parent[v] = u;
      queue[tail++] = v;
      if(g->flag[v] & 0x80)
        left--;
    }
  }
  for(size_t i = 0; i < n_targets; i++)
    g->flag[targets[i]] &= (uint8_t)~0x80u;
  mdp_analysis_release(g->mem, queue, g->n * 4);
  return parent;
}
