/* The allocation sampler's table (prefix mdh_stab_): plain C, no Ruby.
 *
 * It holds the sampled objects (alive when last checked), keyed by address, and
 * what they point to, each interned once: strings (file names, method
 * labels, class names), locations (file, label, line) and sites (the stack
 * of locations an object was allocated from, leaf first). The sampler's
 * event handlers call it on every sampled allocation and every free, so
 * nothing here allocates Ruby memory or calls into Ruby; it uses malloc.
 *
 * Threading: none. The caller serialises every call (the Ruby extension
 * calls it with the GVL held).
 *
 * Ownership: the table owns every string, location and site; pointers
 * returned by the accessors stay valid until the next call that adds to
 * the table or mdh_stab_free(). Errors are negative errno values. */
#ifndef MDH_SAMPLE_TABLE_H
#define MDH_SAMPLE_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* The most live sampled objects one table holds; an insert beyond it gets
 * -ENOSPC. */
#define MDH_STAB_MAX_LIVE   ((size_t)1 << 24)
/* The most frames a site keeps (the leaf side of deeper stacks). */
#define MDH_STAB_MAX_FRAMES 16

typedef struct mdh_stab mdh_stab;

/* A frame as the sampler reads it: bytes that need not end in NUL. */
typedef struct {
  const char *file;
  size_t file_len;
  const char *label;
  size_t label_len;
  int32_t line;
} mdh_stab_frame;

/* An interned location: string ids and a line. */
typedef struct {
  uint32_t file;
  uint32_t label;
  int32_t line;
} mdh_stab_loc;

/* One sampled object. */
typedef struct {
  uintptr_t addr;     /* where it is now */
  uint64_t object_id; /* its Ruby object id: tells it from a later object at addr */
  uint32_t site;
  uint32_t generation; /* the GC count when it was allocated */
  uint32_t weight;     /* allocations this sample stands for */
} mdh_stab_entry;

mdh_stab *mdh_stab_new(void);
void mdh_stab_free(mdh_stab *t);

/* String id of the bytes p[0..n), adding them when new. */
int mdh_stab_intern(mdh_stab *t, const char *p, size_t n, uint32_t *id);

/* Site id of the stack frames[0..n) (leaf first; frames past
 * MDH_STAB_MAX_FRAMES are ignored), adding it when new. */
int mdh_stab_site(mdh_stab *t, const mdh_stab_frame *frames, size_t n, uint32_t *site);

/* Record a sampled object; an entry already at e->addr (an object freed
 * since) is replaced. -EINVAL for address 0, -ENOSPC past
 * MDH_STAB_MAX_LIVE. */
int mdh_stab_insert(mdh_stab *t, const mdh_stab_entry *e);

/* Forget the object at addr: 1 when it was there, 0 when not. */
int mdh_stab_remove(mdh_stab *t, uintptr_t addr);

/* Rebuild the table through fn: it is called once per entry and returns 0
 * to drop the entry (the object was freed) or 1 to keep it, and may change
 * e->addr (GC compaction moved the object). On -ENOMEM the table is left
 * as it was. *changed (may be NULL) counts the entries whose address
 * changed, *dropped (may be NULL) those dropped. */
typedef int (*mdh_stab_filter_fn)(mdh_stab_entry *e, void *arg);
int mdh_stab_filter(mdh_stab *t, mdh_stab_filter_fn fn, void *arg, size_t *changed,
                    size_t *dropped);

/* Copy up to cap live entries into out; returns how many were copied. */
size_t mdh_stab_snapshot(const mdh_stab *t, mdh_stab_entry *out, size_t cap);

size_t mdh_stab_live(const mdh_stab *t);
size_t mdh_stab_n_strings(const mdh_stab *t);
size_t mdh_stab_n_locs(const mdh_stab *t);
size_t mdh_stab_n_sites(const mdh_stab *t);
/* NUL-terminated; *len (when not NULL) gets its length. NULL for a bad id. */
const char *mdh_stab_string(const mdh_stab *t, uint32_t id, size_t *len);
const mdh_stab_loc *mdh_stab_location(const mdh_stab *t, uint32_t id);
/* The location ids of a site, leaf first; NULL for a bad id. */
const uint32_t *mdh_stab_site_locs(const mdh_stab *t, uint32_t site, size_t *n);
/* Bytes of C memory the table holds. */
size_t mdh_stab_bytes(const mdh_stab *t);

#endif
