/* Ownership within the retained set (prefix mdp_analysis_own_): the
 * dominator tree of the retained objects of the last dump's graph, with a
 * virtual root standing for everything outside the retained set (objects
 * that are not retained, and the GC roots). An object's immediate
 * dominator is the retained object that alone keeps it alive; the objects
 * the virtual root dominates directly are held from outside. The
 * algorithm is Cooper, Harvey and Kennedy's iterative one ("A Simple, Fast
 * Dominance Algorithm", 2001) on the reverse postorder of a depth-first
 * search.
 *
 * Memory, a retained object: 16 bytes in the analysis' list of them, and
 * here about 50 while the tree is built, 25 once it is (its dominator, its
 * subtree's top, its owned bytes, its flags, its children).
 *
 * Ownership: mdp_analysis_own is caller-owned; run() allocates through the
 * analysis' memory, free() releases it. Not thread-safe.
 */
#ifndef MDP_ANALYSIS_OWNER_H
#define MDP_ANALYSIS_OWNER_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "table.h"

/* A retained object: its node in the graph, its (raw) group, its size. */
typedef struct {
  uint32_t node, group;
  uint64_t size;
} mdp_analysis_ret;

typedef struct {
  /* in */
  const mdp_analysis_graph *g;
  const mdp_analysis_ret *ret;
  size_t n_ret;
  const uint32_t *merged; /* raw group -> merged group */
  const uint8_t *hook;    /* raw group -> allocated in the hook's own files */
  size_t n_merged;
  /* out, per merged group: objects, their own bytes, the bytes they keep
   * alive (each object counted once: under its topmost dominator of the
   * same group) */
  uint64_t *count, *shallow, *owned;
  /* per merged group, what its members keep alive that no other retained
   * object does (members the virtual root dominates): the bytes that rank
   * an owner above what it owns (a payload Array under its owner counts in
   * the owner's top_owned, not its own group's) */
  uint64_t *top_owned;
  uint64_t hook_count, hook_bytes; /* the hook's objects and what they own */
  /* the tree, for mostly() and holders(); index 0 is the virtual root,
   * retained object r is r + 1 */
  size_t v;
  uint32_t *idom, *top, *koff, *kids;
  uint64_t *own;
  uint8_t *vflag;
  mdp_analysis_mem *mem;
} mdp_analysis_own;

/* Fills the out fields. 0, or -ENOMEM (nothing is left allocated). */
int mdp_analysis_own_run(mdp_analysis_own *o, mdp_analysis_mem *mem);

/* What merged group m's objects keep alive besides themselves, by merged
 * group: bytes[k] summed per merged group k (bytes has n_merged entries,
 * zeroed by the caller). */
void mdp_analysis_own_mostly(const mdp_analysis_own *o, uint32_t m, uint64_t *bytes);

/* The objects outside the retained set that hold group m's objects (the
 * top of each one's dominator subtree): holders gets (node, references) in
 * k1/a, roots' references under MDP_G_ROOT_BASE + kind id. 0 or -ENOMEM. */
int mdp_analysis_own_holders(const mdp_analysis_own *o, uint32_t m, mdp_analysis_map *holders);

void mdp_analysis_own_free(mdp_analysis_own *o);

#endif
