/* The analysis' tables (prefix mdp_analysis_): a memory account with a
 * limit, a packed set of heap objects, a map with 16-byte keys and an
 * interning table for names.
 *
 * Ownership: every table is caller-owned and allocates through its
 * mdp_analysis_mem (which must outlive it); *_free() releases what it
 * holds. Not thread-safe; one analysis owns its tables.
 */
#ifndef MDP_ANALYSIS_TABLE_H
#define MDP_ANALYSIS_TABLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint64_t used, peak, limit; /* limit 0: none */
  int over;                   /* an allocation was refused for the limit */
} mdp_analysis_mem;

void *mdp_analysis_alloc(mdp_analysis_mem *m, size_t size);
void *mdp_analysis_realloc(mdp_analysis_mem *m, void *p, size_t old, size_t size);
void mdp_analysis_release(mdp_analysis_mem *m, void *p, size_t size);
/* Counts bytes held elsewhere (a reader's buffers); negative to return. */
int mdp_analysis_charge(mdp_analysis_mem *m, int64_t bytes);

/* An object packed in 8 bytes: address / 8 (45 bits: addresses below
 * 2^48, 8-aligned, as Ruby's heap slots are), type (5 bits), allocation
 * generation + 1 modulo 8191 (13 bits, 0: none) and the "old" flag. */
#define MDP_OBJ_ADDR(e)    ((e) >> 19)
#define MDP_OBJ_TYPE(e)    ((unsigned)((e) >> 14) & 31u)
#define MDP_OBJ_GEN(e)     ((unsigned)((e) >> 1) & 8191u)
#define MDP_OBJ_OLD(e)     ((unsigned)(e)&1u)
#define MDP_OBJ_ADDR_LIMIT (1ull << 48)

static inline uint64_t mdp_obj_pack(uint64_t address, unsigned type, int has_gen, uint32_t gen,
                                    int old)
{
  uint64_t g = has_gen ? (uint64_t)(gen % 8191u) + 1 : 0;
  return (address >> 3) << 19 | (uint64_t)(type & 31u) << 14 | g << 1 | (old ? 1u : 0u);
}

/* Same object: same address and type, and the same generation unless one
 * of them has none. */
static inline int mdp_obj_same(uint64_t a, uint64_t b)
{
  if((a ^ b) >> 14)
    return 0;
  return !MDP_OBJ_GEN(a) || !MDP_OBJ_GEN(b) || MDP_OBJ_GEN(a) == MDP_OBJ_GEN(b);
}

typedef struct {
  uint64_t *slots; /* 0: empty */
  uint64_t *aux;   /* with_aux: a number kept with each entry */
  size_t mask, n;
  int with_aux;
  mdp_analysis_mem *mem;
} mdp_analysis_objset;

/* with_aux: keep a 64-bit number with each entry (8 more bytes a slot). */
int mdp_analysis_objset_init(mdp_analysis_objset *s, mdp_analysis_mem *m, size_t expect,
                             int with_aux);
/* Adds e (and aux), or replaces the entry with its address. 0 or -ENOMEM. */
int mdp_analysis_objset_put(mdp_analysis_objset *s, uint64_t e, uint64_t aux);
/* The entry with e's address, or 0; *aux (may be NULL) gets its number. */
uint64_t mdp_analysis_objset_get(const mdp_analysis_objset *s, uint64_t e, uint64_t *aux);
void mdp_analysis_objset_free(mdp_analysis_objset *s);

/* A map from a 16-byte key to three counters, records in insertion order. */
typedef struct {
  uint64_t k1, k2;
  uint64_t a, b, c;
} mdp_analysis_rec;

typedef struct {
  mdp_analysis_rec *recs;
  size_t n, cap;
  uint32_t *index; /* record number + 1; 0: empty */
  size_t mask;
  mdp_analysis_mem *mem;
} mdp_analysis_map;

void mdp_analysis_map_init(mdp_analysis_map *m, mdp_analysis_mem *mem);
/* The record for (k1, k2), added zeroed when absent; NULL: out of memory. */
mdp_analysis_rec *mdp_analysis_map_get(mdp_analysis_map *m, uint64_t k1, uint64_t k2, int add);
void mdp_analysis_map_free(mdp_analysis_map *m);

/* Interned byte strings, numbered from 1 in insertion order. */
typedef struct {
  mdp_analysis_map map; /* k1: hash, k2: length; a: id */
  char *bytes;
  size_t len, cap;
  uint64_t *offs; /* id -> offset in bytes */
  size_t n, offs_cap;
} mdp_analysis_strtab;

void mdp_analysis_strtab_init(mdp_analysis_strtab *t, mdp_analysis_mem *mem);
/* The id of s[0..n), added when new; 0: out of memory. */
uint32_t mdp_analysis_strtab_id(mdp_analysis_strtab *t, const char *s, size_t n);
const char *mdp_analysis_strtab_str(const mdp_analysis_strtab *t, uint32_t id, size_t *n);
void mdp_analysis_strtab_free(mdp_analysis_strtab *t);

uint64_t mdp_analysis_hash(const void *p, size_t n);

#endif
