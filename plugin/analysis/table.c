/* The analysis' tables; see table.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

static int account(mdp_analysis_mem *m, size_t size)
{
  if(m->limit && m->used + size > m->limit) {
    m->over = 1;
    return -1;
  }
  m->used += size;
  if(m->used > m->peak)
    m->peak = m->used;
  return 0;
}

void *mdp_analysis_alloc(mdp_analysis_mem *m, size_t size)
{
  if(account(m, size))
    return NULL;
  void *p = calloc(1, size);
  if(!p)
    m->used -= size;
  return p;
}

void *mdp_analysis_realloc(mdp_analysis_mem *m, void *p, size_t old, size_t size)
{
  if(size > old && account(m, size - old))
    return NULL;
  void *q = realloc(p, size);
  if(!q) {
    if(size > old)
      m->used -= size - old;
    return NULL;
  }
  if(size < old)
    m->used -= old - size;
  return q;
}

void mdp_analysis_release(mdp_analysis_mem *m, void *p, size_t size)
{
  if(!p)
    return;
  free(p);
  m->used -= size;
}

int mdp_analysis_charge(mdp_analysis_mem *m, int64_t bytes)
{
  if(bytes < 0) {
    m->used -= (uint64_t)-bytes;
    return 0;
  }
  return account(m, (size_t)bytes);
}

/* Fibonacci hashing spreads the address bits over the table. */
static inline size_t slot_of(uint64_t key, size_t mask)
{
  return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}

static int alloc_slots(mdp_analysis_objset *s, size_t cap, uint64_t **slots, uint64_t **aux)
{
  *aux = NULL;
  *slots = mdp_analysis_alloc(s->mem, cap * sizeof(uint64_t));
  if(!*slots)
    return -ENOMEM;
  if(s->with_aux && !(*aux = mdp_analysis_alloc(s->mem, cap * sizeof(uint64_t)))) {
    mdp_analysis_release(s->mem, *slots, cap * sizeof(uint64_t));
    return -ENOMEM;
  }
  return 0;
}

static void free_slots(mdp_analysis_objset *s)
{
  size_t cap = s->mask + 1;
  if(s->slots)
    mdp_analysis_release(s->mem, s->slots, cap * sizeof(uint64_t));
  if(s->aux)
    mdp_analysis_release(s->mem, s->aux, cap * sizeof(uint64_t));
  s->slots = NULL;
  s->aux = NULL;
}

int mdp_analysis_objset_init(mdp_analysis_objset *s, mdp_analysis_mem *m, size_t expect,
                             int with_aux)
{
  size_t cap = 1024;
  while(cap < expect + expect / 3)
    cap <<= 1;
  s->mem = m;
  s->n = 0;
  s->with_aux = with_aux;
  if(alloc_slots(s, cap, &s->slots, &s->aux))
    return -ENOMEM;
  s->mask = cap - 1;
  return 0;
}

static int grow_set(mdp_analysis_objset *s)
{
  size_t cap = (s->mask + 1) * 2;
  uint64_t *slots;
  uint64_t *aux;
  if(alloc_slots(s, cap, &slots, &aux))
    return -ENOMEM;
  for(size_t i = 0; i <= s->mask; i++) {
    uint64_t e = s->slots[i];
    if(!e)
      continue;
    size_t j = slot_of(MDP_OBJ_ADDR(e), cap - 1);
    while(slots[j])
      j = (j + 1) & (cap - 1);
    slots[j] = e;
    if(aux)
      aux[j] = s->aux[i];
  }
  free_slots(s);
  s->slots = slots;
  s->aux = aux;
  s->mask = cap - 1;
  return 0;
}

int mdp_analysis_objset_put(mdp_analysis_objset *s, uint64_t e, uint64_t aux)
{
  if((s->n + 1) * 4 > (s->mask + 1) * 3 && grow_set(s))
    return -ENOMEM;
  size_t i = slot_of(MDP_OBJ_ADDR(e), s->mask);
  for(;;) {
    uint64_t cur = s->slots[i];
    if(!cur || MDP_OBJ_ADDR(cur) == MDP_OBJ_ADDR(e)) {
      s->n += !cur;
      s->slots[i] = e;
      if(s->aux)
        s->aux[i] = aux;
      return 0;
    }
    i = (i + 1) & s->mask;
  }
}

uint64_t mdp_analysis_objset_get(const mdp_analysis_objset *s, uint64_t e, uint64_t *aux)
{
  size_t i = slot_of(MDP_OBJ_ADDR(e), s->mask);
  for(;;) {
    uint64_t cur = s->slots[i];
    if(!cur || MDP_OBJ_ADDR(cur) == MDP_OBJ_ADDR(e)) {
      if(aux)
        *aux = cur && s->aux ? s->aux[i] : 0;
      return cur;
    }
    i = (i + 1) & s->mask;
  }
}

void mdp_analysis_objset_free(mdp_analysis_objset *s)
{
  free_slots(s);
  s->n = 0;
}

void mdp_analysis_map_init(mdp_analysis_map *m, mdp_analysis_mem *mem)
{
  memset(m, 0, sizeof(*m));
  m->mem = mem;
}

static inline uint64_t key_hash(uint64_t k1, uint64_t k2)
{
  uint64_t h = (k1 ^ (k2 * 0xff51afd7ed558ccdull)) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 29);
}

static int grow_index(mdp_analysis_map *m)
{
  size_t cap = m->index ? (m->mask + 1) * 2 : 64;
  uint32_t *index = mdp_analysis_alloc(m->mem, cap * sizeof(uint32_t));
  if(!index)
    return -ENOMEM;
  for(size_t r = 0; r < m->n; r++) {
    size_t j = (size_t)key_hash(m->recs[r].k1, m->recs[r].k2) & (cap - 1);
    while(index[j])
      j = (j + 1) & (cap - 1);
    index[j] = (uint32_t)(r + 1);
  }
  if(m->index)
    mdp_analysis_release(m->mem, m->index, (m->mask + 1) * sizeof(uint32_t));
  m->index = index;
  m->mask = cap - 1;
  return 0;
}

mdp_analysis_rec *mdp_analysis_map_get(mdp_analysis_map *m, uint64_t k1, uint64_t k2, int add)
{
  if(m->index) {
    size_t j = (size_t)key_hash(k1, k2) & m->mask;
    for(uint32_t r; (r = m->index[j]) != 0; j = (j + 1) & m->mask)
      if(m->recs[r - 1].k1 == k1 && m->recs[r - 1].k2 == k2)
        return &m->recs[r - 1];
  }
  if(!add)
    return NULL;
  if(m->n >= UINT32_MAX - 1)
    return NULL;
  if(!m->index || (m->n + 1) * 2 > m->mask + 1) {
    if(grow_index(m))
      return NULL;
  }
  if(m->n == m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 32;
    mdp_analysis_rec *recs =
        mdp_analysis_realloc(m->mem, m->recs, m->cap * sizeof(*recs), cap * sizeof(*recs));
    if(!recs)
      return NULL;
    m->recs = recs;
    m->cap = cap;
  }
  mdp_analysis_rec *rec = &m->recs[m->n++];
  memset(rec, 0, sizeof(*rec));
  rec->k1 = k1;
  rec->k2 = k2;
  size_t j = (size_t)key_hash(k1, k2) & m->mask;
  while(m->index[j])
    j = (j + 1) & m->mask;
  m->index[j] = (uint32_t)m->n;
  return rec;
}

void mdp_analysis_map_free(mdp_analysis_map *m)
{
  if(m->recs)
    mdp_analysis_release(m->mem, m->recs, m->cap * sizeof(*m->recs));
  if(m->index)
    mdp_analysis_release(m->mem, m->index, (m->mask + 1) * sizeof(uint32_t));
  m->recs = NULL;
  m->index = NULL;
  m->n = m->cap = m->mask = 0;
}

/* FNV-1a folded with a final mix: names and string values are short. */
uint64_t mdp_analysis_hash(const void *p, size_t n)
{
  const unsigned char *s = p;
  uint64_t h = 0xcbf29ce484222325ull;
  size_t i = 0;
  for(; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 32;
  }
  for(; i < n; i++)
    h = (h ^ s[i]) * 0x100000001b3ull;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

void mdp_analysis_strtab_init(mdp_analysis_strtab *t, mdp_analysis_mem *mem)
{
  memset(t, 0, sizeof(*t));
  mdp_analysis_map_init(&t->map, mem);
}

uint32_t mdp_analysis_strtab_id(mdp_analysis_strtab *t, const char *s, size_t n)
{
  mdp_analysis_mem *mem = t->map.mem;
  mdp_analysis_rec *r = mdp_analysis_map_get(&t->map, mdp_analysis_hash(s, n), n, 1);
  if(!r)
    return 0;
  if(r->a)
    return (uint32_t)r->a;
  if(t->len + n + 1 > t->cap) {
    size_t cap = t->cap ? t->cap : 4096;
    while(cap < t->len + n + 1)
      cap *= 2;
    char *b = mdp_analysis_realloc(mem, t->bytes, t->cap, cap);
    if(!b)
      return 0;
    t->bytes = b;
    t->cap = cap;
  }
  if(t->n + 2 > t->offs_cap) {
    size_t cap = t->offs_cap ? t->offs_cap * 2 : 64;
    uint64_t *o = mdp_analysis_realloc(mem, t->offs, t->offs_cap * sizeof(*o), cap * sizeof(*o));
    if(!o)
      return 0;
    t->offs = o;
    t->offs_cap = cap;
  }
  memcpy(t->bytes + t->len, s, n);
  t->bytes[t->len + n] = '\0';
  t->offs[++t->n] = t->len;
  t->len += n + 1;
  r->a = t->n;
  return (uint32_t)t->n;
}

const char *mdp_analysis_strtab_str(const mdp_analysis_strtab *t, uint32_t id, size_t *n)
{
  if(!id || id > t->n) {
    *n = 0;
    return NULL;
  }
  uint64_t end = id < t->n ? t->offs[id + 1] : t->len;
  *n = (size_t)(end - t->offs[id] - 1);
  return t->bytes + t->offs[id];
}

void mdp_analysis_strtab_free(mdp_analysis_strtab *t)
{
  mdp_analysis_mem *mem = t->map.mem;
  mdp_analysis_map_free(&t->map);
  if(t->bytes)
    mdp_analysis_release(mem, t->bytes, t->cap);
  if(t->offs)
    mdp_analysis_release(mem, t->offs, t->offs_cap * sizeof(*t->offs));
  t->bytes = NULL;
  t->offs = NULL;
}
