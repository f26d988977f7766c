/* Internals shared by analysis.c (the passes) and result.c (building the
 * result from the tables). Not for other callers.
 *
 * Ownership: mdp_ctx lives on mdp_analysis_run()'s stack and owns every
 * table; the result it points at is the caller's.
 */
#ifndef MDP_ANALYSIS_INT_H
#define MDP_ANALYSIS_INT_H

#include "analysis.h"
#include "graph.h"
#include "owner.h"
#include "sampled.h"
#include "table.h"

/* Retained string values are kept up to this many bytes. */
#define MDP_ANALYSIS_STRING_MAX 256

typedef struct {
  mdp_analysis_result *res;
  mdp_analysis_opts opts;
  mdp_analysis_mem mem;
  mdp_analysis_objset s1;   /* every object of dump 1 */
  mdp_analysis_objset cand; /* objects new in dump 2, with their site */
  mdp_analysis_objset seen; /* retained string values seen once (hashes) */
  mdp_analysis_strtab files, names, svals;
  mdp_analysis_map
      groups; /* (class key ^ type << 56, file << 32 | line): count, bytes, class key */
  mdp_analysis_map strings;                       /* (hash, bytesize): count, bytes, text id */
  mdp_analysis_map sites;                         /* (file id, line); site number = record + 1 */
  mdp_analysis_map live[MDP_ANALYSIS_DUMPS_MAX];  /* class key: count, bytes, type */
  mdp_analysis_map cname[MDP_ANALYSIS_DUMPS_MAX]; /* class address: name id */
  mdp_analysis_map named[MDP_ANALYSIS_DUMPS_MAX]; /* name id: class address */
  mdp_analysis_graph g;                           /* the last dump's objects and references */
  mdp_analysis_ret *ret;                          /* retained objects, in the order found */
  size_t n_ret, ret_cap;
  mdp_analysis_map clsid; /* class address: id = record + 1 (graph aux) */
  mdp_analysis_map pages; /* heap pages (address >> 16) of the dump being read */
  mdp_sampled_join sj;    /* the heap profile's samples, joined by address (sampled.h) */
  uint64_t unsure;        /* retained, told from a reused address by type and class only */
  uint64_t contradicted;  /* dump 3 gave another site than dump 2: another object */
  uint64_t hook_sited;    /* retained objects allocated in the hook's own files */
  uint64_t old1, old_common, retained_sited;
  uint64_t moved[MDP_ANALYSIS_DUMPS_MAX], classes_moved[MDP_ANALYSIS_DUMPS_MAX];
  uint64_t pinned[MDP_ANALYSIS_DUMPS_MAX], moved_slots[MDP_ANALYSIS_DUMPS_MAX];
} mdp_ctx;

/* result.c: fill res's lists from the tables. 0 or -ENOMEM. */
int mdp_analysis_build(mdp_ctx *c);
/* holder.c: res->holders for merged group m (the suspect). 0 or -ENOMEM. */
int mdp_analysis_holders(mdp_ctx *c, const mdp_analysis_own *own, uint32_t m);
/* result.c: the caveats the counts call for. */
void mdp_analysis_caveats(mdp_ctx *c);

#endif
