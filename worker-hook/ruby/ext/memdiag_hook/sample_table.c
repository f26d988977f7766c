/* The allocation sampler's table: see sample_table.h.
 *
 * Objects: open addressing with linear probing and backward-shift deletion
 * (no tombstones), at most half full, so a miss (most frees) ends after a
 * probe or two. Strings, locations and sites: arrays indexed by id, found
 * by content through an index of ids (open addressing on a stored hash). */
#include "sample_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  uint32_t *ids; /* id + 1; 0 = empty */
  uint32_t *hashes;
  size_t cap; /* power of two */
  size_t n;
} id_index;

typedef struct {
  char *p;
  size_t n;
} str;

struct mdh_stab {
  mdh_stab_entry *slots; /* addr 0 = empty */
  size_t cap;            /* power of two */
  size_t live;

  str *strs;
  size_t n_strs, cap_strs;
  size_t str_bytes;
  id_index str_idx;

  mdh_stab_loc *locs;
  size_t n_locs, cap_locs;
  id_index loc_idx;

  uint32_t *site_off; /* n_sites + 1 offsets into site_locs */
  size_t n_sites, cap_sites;
  uint32_t *site_locs;
  size_t n_site_locs, cap_site_locs;
  id_index site_idx;
};

static uint32_t hash_bytes(const void *p, size_t n, uint32_t h)
{
  const unsigned char *b = p;
  size_t i;
  for(i = 0; i < n; i++) {
    h ^= b[i];
    h *= 16777619u;
  }
  return h;
}

static size_t addr_slot(uintptr_t addr, size_t cap)
{
  uint64_t h = (uint64_t)(addr >> 3) * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 17) & (cap - 1);
}

static int grow_array(void **p, size_t *cap, size_t need, size_t elem)
{
  size_t c = *cap ? *cap : 16;
  void *q;
  if(need <= *cap)
    return 0;
  while(c < need)
    c *= 2;
  q = realloc(*p, c * elem);
  if(!q)
    return -ENOMEM;
  *p = q;
  *cap = c;
  return 0;
}

/* ---------------------------------------------------------------- id index */

typedef int (*id_eq_fn)(const mdh_stab *t, uint32_t id, const void *key);

static int idx_find(const mdh_stab *t, const id_index *x, uint32_t h, id_eq_fn eq, const void *key,
                    uint32_t *id)
{
  size_t i;
  if(!x->cap)
    return 0;
  for(i = h & (x->cap - 1); x->ids[i]; i = (i + 1) & (x->cap - 1)) {
    if(x->hashes[i] == h && eq(t, x->ids[i] - 1, key)) {
      *id = x->ids[i] - 1;
      return 1;
    }
  }
  return 0;
}

static void idx_put_raw(id_index *x, uint32_t h, uint32_t id)
{
  size_t i = h & (x->cap - 1);
  while(x->ids[i])
    i = (i + 1) & (x->cap - 1);
  x->ids[i] = id + 1;
  x->hashes[i] = h;
  x->n++;
}

static int idx_add(id_index *x, uint32_t h, uint32_t id)
{
  if((x->n + 1) * 2 > x->cap) {
    id_index y = {0};
    size_t i;
    y.cap = x->cap ? x->cap * 2 : 64;
    y.ids = calloc(y.cap, sizeof *y.ids);
    y.hashes = calloc(y.cap, sizeof *y.hashes);
    if(!y.ids || !y.hashes) {
      free(y.ids);
      free(y.hashes);
      return -ENOMEM;
    }
    for(i = 0; i < x->cap; i++)
      if(x->ids[i])
        idx_put_raw(&y, x->hashes[i], x->ids[i] - 1);
    free(x->ids);
    free(x->hashes);
    *x = y;
  }
  idx_put_raw(x, h, id);
  return 0;
}

static void idx_free(id_index *x)
{
  free(x->ids);
  free(x->hashes);
}

/* ---------------------------------------------------------------- strings */

typedef struct {
  const char *p;
  size_t n;
} str_key;

static int str_eq(const mdh_stab *t, uint32_t id, const void *key)
{
  const str_key *k = key;
  return t->strs[id].n == k->n && !memcmp(t->strs[id].p, k->p, k->n);
}

int mdh_stab_intern(mdh_stab *t, const char *p, size_t n, uint32_t *id)
{
  str_key k = {p ? p : "", p ? n : 0};
  uint32_t h = hash_bytes(k.p, k.n, 2166136261u);
  char *copy;
  int rc;

  if(idx_find(t, &t->str_idx, h, str_eq, &k, id))
    return 0;
  if(t->n_strs >= UINT32_MAX - 1)
    return -ENOSPC;
  rc = grow_array((void **)&t->strs, &t->cap_strs, t->n_strs + 1, sizeof *t->strs);
  if(rc)
    return rc;
  copy = malloc(k.n + 1);
  if(!copy)
    return -ENOMEM;
  memcpy(copy, k.p, k.n);
  copy[k.n] = '\0';
  rc = idx_add(&t->str_idx, h, (uint32_t)t->n_strs);
  if(rc) {
    free(copy);
    return rc;
  }
  t->strs[t->n_strs].p = copy;
  t->strs[t->n_strs].n = k.n;
  t->str_bytes += k.n + 1;
  *id = (uint32_t)t->n_strs++;
  return 0;
}

/* ---------------------------------------------------------------- locations */

static int loc_eq(const mdh_stab *t, uint32_t id, const void *key)
{
  const mdh_stab_loc *a = &t->locs[id], *b = key;
  return a->file == b->file && a->label == b->label && a->line == b->line;
}

static int intern_loc(mdh_stab *t, const mdh_stab_loc *l, uint32_t *id)
{
  uint32_t h = hash_bytes(l, sizeof *l, 2166136261u);
  int rc;
  if(idx_find(t, &t->loc_idx, h, loc_eq, l, id))
    return 0;
  rc = grow_array((void **)&t->locs, &t->cap_locs, t->n_locs + 1, sizeof *t->locs);
  if(rc)
    return rc;
  rc = idx_add(&t->loc_idx, h, (uint32_t)t->n_locs);
  if(rc)
    return rc;
  t->locs[t->n_locs] = *l;
  *id = (uint32_t)t->n_locs++;
  return 0;
}

/* ---------------------------------------------------------------- sites */

typedef struct {
  const uint32_t *locs;
  size_t n;
} site_key;

static int site_eq(const mdh_stab *t, uint32_t id, const void *key)
{
  const site_key *k = key;
  size_t n = t->site_off[id + 1] - t->site_off[id];
  return n == k->n && !memcmp(t->site_locs + t->site_off[id], k->locs, n * sizeof *k->locs);
}

int mdh_stab_site(mdh_stab *t, const mdh_stab_frame *frames, size_t n, uint32_t *site)
{
  uint32_t locs[MDH_STAB_MAX_FRAMES];
  site_key k = {locs, 0};
  uint32_t h;
  size_t i;
  int rc;

  if(n > MDH_STAB_MAX_FRAMES)
    n = MDH_STAB_MAX_FRAMES;
  for(i = 0; i < n; i++) {
    mdh_stab_loc l;
    rc = mdh_stab_intern(t, frames[i].file, frames[i].file_len, &l.file);
    if(!rc)
      rc = mdh_stab_intern(t, frames[i].label, frames[i].label_len, &l.label);
    l.line = frames[i].line;
    if(!rc)
      rc = intern_loc(t, &l, &locs[i]);
    if(rc)
      return rc;
  }
  k.n = n;
  h = hash_bytes(locs, n * sizeof *locs, 2166136261u ^ (uint32_t)n);
  if(idx_find(t, &t->site_idx, h, site_eq, &k, site))
    return 0;
  rc = grow_array((void **)&t->site_off, &t->cap_sites, t->n_sites + 2, sizeof *t->site_off);
  if(!rc)
    rc = grow_array((void **)&t->site_locs, &t->cap_site_locs, t->n_site_locs + n,
                    sizeof *t->site_locs);
  if(!rc)
    rc = idx_add(&t->site_idx, h, (uint32_t)t->n_sites);
  if(rc)
    return rc;
  t->site_off[t->n_sites] = (uint32_t)t->n_site_locs;
  memcpy(t->site_locs + t->n_site_locs, locs, n * sizeof *locs);
  t->n_site_locs += n;
  t->site_off[t->n_sites + 1] = (uint32_t)t->n_site_locs;
  *site = (uint32_t)t->n_sites++;
  return 0;
}

/* ---------------------------------------------------------------- objects */

static void put_entry(mdh_stab_entry *slots, size_t cap, const mdh_stab_entry *e)
{
  size_t i = addr_slot(e->addr, cap);
  while(slots[i].addr && slots[i].addr != e->addr)
    i = (i + 1) & (cap - 1);
  slots[i] = *e;
}

static int resize(mdh_stab *t, size_t cap)
{
  mdh_stab_entry *s = calloc(cap, sizeof *s);
  size_t i;
  if(!s)
    return -ENOMEM;
  for(i = 0; i < t->cap; i++)
    if(t->slots[i].addr)
      put_entry(s, cap, &t->slots[i]);
  free(t->slots);
  t->slots = s;
  t->cap = cap;
  return 0;
}

int mdh_stab_insert(mdh_stab *t, const mdh_stab_entry *e)
{
  size_t i;
  int rc;

  if(!e->addr)
    return -EINVAL;
  if((t->live + 1) * 2 > t->cap) {
    if(t->live >= MDH_STAB_MAX_LIVE)
      return -ENOSPC;
    rc = resize(t, t->cap ? t->cap * 2 : 1024);
    if(rc)
      return rc;
  }
  for(i = addr_slot(e->addr, t->cap); t->slots[i].addr; i = (i + 1) & (t->cap - 1)) {
    if(t->slots[i].addr == e->addr) {
      t->slots[i] = *e;
      return 0;
    }
  }
  t->slots[i] = *e;
  t->live++;
  return 0;
}

int mdh_stab_remove(mdh_stab *t, uintptr_t addr)
{
  size_t i, j, mask;
  if(!t->live)
    return 0;
  mask = t->cap - 1;
  for(i = addr_slot(addr, t->cap); t->slots[i].addr != addr; i = (i + 1) & mask)
    if(!t->slots[i].addr)
      return 0;
  /* backward shift: move later entries of the run into the hole when their
   * home slot is not between the hole and them */
  for(j = (i + 1) & mask; t->slots[j].addr; j = (j + 1) & mask) {
    size_t home = addr_slot(t->slots[j].addr, t->cap);
    if(((j - home) & mask) >= ((j - i) & mask)) {
      t->slots[i] = t->slots[j];
      i = j;
    }
  }
  t->slots[i].addr = 0;
  t->live--;
  return 1;
}

int mdh_stab_filter(mdh_stab *t, mdh_stab_filter_fn fn, void *arg, size_t *changed, size_t *dropped)
{
  mdh_stab_entry *s;
  size_t i, c = 0, d = 0, live = 0;

  if(changed)
    *changed = 0;
  if(dropped)
    *dropped = 0;
  if(!t->live)
    return 0;
  s = calloc(t->cap, sizeof *s);
  if(!s)
    return -ENOMEM;
  for(i = 0; i < t->cap; i++) {
    mdh_stab_entry e = t->slots[i];
    if(!e.addr)
      continue;
    if(!fn(&e, arg) || !e.addr) {
      d++;
      continue;
    }
    c += e.addr != t->slots[i].addr;
    put_entry(s, t->cap, &e);
  }
  free(t->slots);
  t->slots = s;
  /* two entries cannot share an address (put_entry keeps the later) */
  for(i = 0; i < t->cap; i++)
    live += s[i].addr != 0;
  t->live = live;
  if(changed)
    *changed = c;
  if(dropped)
    *dropped = d;
  return 0;
}

size_t mdh_stab_snapshot(const mdh_stab *t, mdh_stab_entry *out, size_t cap)
{
  size_t i, n = 0;
  for(i = 0; i < t->cap && n < cap; i++)
    if(t->slots[i].addr)
      out[n++] = t->slots[i];
  return n;
}

/* ---------------------------------------------------------------- the rest */

mdh_stab *mdh_stab_new(void) { return calloc(1, sizeof(mdh_stab)); }

void mdh_stab_free(mdh_stab *t)
{
  size_t i;
  if(!t)
    return;
  for(i = 0; i < t->n_strs; i++)
    free(t->strs[i].p);
  free(t->strs);
  idx_free(&t->str_idx);
  free(t->locs);
  idx_free(&t->loc_idx);
  free(t->site_off);
  free(t->site_locs);
  idx_free(&t->site_idx);
  free(t->slots);
  free(t);
}

size_t mdh_stab_live(const mdh_stab *t) { return t->live; }
size_t mdh_stab_n_strings(const mdh_stab *t) { return t->n_strs; }
size_t mdh_stab_n_locs(const mdh_stab *t) { return t->n_locs; }
size_t mdh_stab_n_sites(const mdh_stab *t) { return t->n_sites; }

const char *mdh_stab_string(const mdh_stab *t, uint32_t id, size_t *len)
{
  if(id >= t->n_strs)
    return NULL;
  if(len)
    *len = t->strs[id].n;
  return t->strs[id].p;
}

const mdh_stab_loc *mdh_stab_location(const mdh_stab *t, uint32_t id)
{
  return id < t->n_locs ? &t->locs[id] : NULL;
}

const uint32_t *mdh_stab_site_locs(const mdh_stab *t, uint32_t site, size_t *n)
{
  if(site >= t->n_sites)
    return NULL;
  *n = t->site_off[site + 1] - t->site_off[site];
  return t->site_locs + t->site_off[site];
}

size_t mdh_stab_bytes(const mdh_stab *t)
{
  size_t idx = (t->str_idx.cap + t->loc_idx.cap + t->site_idx.cap) * 2 * sizeof(uint32_t);
  return sizeof *t + t->cap * sizeof *t->slots + t->cap_strs * sizeof *t->strs + t->str_bytes +
         t->cap_locs * sizeof *t->locs + t->cap_sites * sizeof *t->site_off +
         t->cap_site_locs * sizeof *t->site_locs + idx;
}
