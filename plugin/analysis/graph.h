/* The last dump's object graph (prefix mdp_analysis_graph_): every object
 * of the dump as a node numbered in the order of its lines, its references
 * as edges, and the GC roots' references. Ownership (owner.c) and the path
 * from a root to a holder are computed on it.
 *
 * Addresses are kept in 32 bits: the number of their 64 KiB heap page (in
 * a small table of pages) and their 8-byte slot in it. Memory, a node: its
 * address (4 bytes), its first edge (4), a number kept for the analysis
 * (4), its type and flags (2); an edge: 4 bytes (the address it names,
 * then the node number, resolved in place). Arrays grow by a quarter.
 * Every allocation goes through the analysis' mdp_analysis_mem; when one is
 * refused the graph gives up (mdp_analysis_graph.off) and frees what it
 * held, and the analysis goes on without ownership and paths.
 *
 * Ownership: caller-owned; init() takes nothing, free() releases all. Not
 * thread-safe.
 */
#ifndef MDP_ANALYSIS_GRAPH_H
#define MDP_ANALYSIS_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "table.h"

#define MDP_G_NONE UINT32_MAX

/* Node flags. */
#define MDP_G_RETAINED 1u /* aux: the retained object's number */
#define MDP_G_OLD      2u /* in the first dump too (alive in every dump) */

typedef struct {
  mdp_analysis_mem *mem;
  int off;         /* gave up (memory) or never asked for: no graph */
  uint32_t *addr;  /* page number << 13 | slot (address & 0xffff) / 8 */
  uint32_t *first; /* first edge; first[n] is the number of edges */
  uint32_t *aux;   /* retained: its number; else the class's id (0: none) */
  uint8_t *type, *flag;
  size_t n, cap;
  uint32_t *to; /* edges: addresses while reading, node numbers once resolved */
  size_t n_edges, edge_cap, line_start;
  int resolved;
  uint32_t *root_to;   /* the roots' references, likewise */
  uint32_t *root_kind; /* kind id in kinds, a reference each */
  size_t n_roots, root_cap;
  mdp_analysis_strtab kinds;
  /* addresses in line order are ascending (Ruby dumps its heap pages
   * sorted); otherwise a sorted copy with node numbers is made */
  int unsorted;
  uint64_t last_address;
  uint64_t *sorted;       /* unsorted: encoded address << 32 | node */
  mdp_analysis_map pages; /* address >> 16 (its number: record): first node, count */
  uint64_t cut;           /* lines whose references were read only in part */
  /* references being read across a long line's pieces */
  uint64_t ref_line;
  int ref_in, ref_done, ref_x;
  uint64_t ref_acc;
} mdp_analysis_graph;

/* expect: objects the dump likely holds (0: unknown), to size the arrays. */
void mdp_analysis_graph_init(mdp_analysis_graph *g, mdp_analysis_mem *mem);
void mdp_analysis_graph_expect(mdp_analysis_graph *g, size_t objects);
/* Node v's address. */
uint64_t mdp_analysis_graph_address(const mdp_analysis_graph *g, uint32_t v);
void mdp_analysis_graph_free(mdp_analysis_graph *g);

/* References text of the line being read: quoted hex addresses, up to a
 * ']' (which ends them: returns 1) or the end of p. */
int mdp_analysis_graph_refs(mdp_analysis_graph *g, const char *p, size_t n);
/* A long line's middle (see mdp_analysis_middle_fn). */
void mdp_analysis_graph_middle(void *g, uint64_t line, const char *head, const char *p, size_t n);
/* A long line whose head ends inside its references has them read across
 * its middle (ref_line is its number, ref_in set); unless that found
 * their ']' (ref_done), the rest is in the tail, for graph_refs(). */

/* The line read is an object: a node with the edges read since the last
 * node or root (aux as in mdp_analysis_graph.aux). */
void mdp_analysis_graph_node(mdp_analysis_graph *g, uint64_t address, unsigned type, unsigned flag,
                             uint32_t aux);
/* The line read is a root of this kind. */
void mdp_analysis_graph_root(mdp_analysis_graph *g, const char *kind, size_t len);
/* The line read is neither: its edges are dropped. */
void mdp_analysis_graph_skip(mdp_analysis_graph *g);

/* After the dump: edges and roots become node numbers, references to
 * addresses that are no node are dropped. */
void mdp_analysis_graph_resolve(mdp_analysis_graph *g);
/* The node at address, or MDP_G_NONE. */
uint32_t mdp_analysis_graph_find(const mdp_analysis_graph *g, uint64_t address);

/* Shortest paths from the roots: parent[v] is the node before v on a
 * shortest path from a root (MDP_G_NONE: not reached), or
 * MDP_G_ROOT_BASE + the reference's index in root_to for a node a root
 * references. Stops once every target is reached. parent is malloc'ed
 * through the analysis' memory (n entries); NULL: out of memory. */
#define MDP_G_ROOT_BASE 0x80000000u
uint32_t *mdp_analysis_graph_bfs(mdp_analysis_graph *g, const uint32_t *targets, size_t n_targets);

#endif
