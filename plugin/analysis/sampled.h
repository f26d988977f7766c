/* Sampled allocation sites for the analysis (prefix mdp_sampled_): the
 * hook's heap profiles (heap_profile-N.pb.gz, a gzip'd pprof profile.proto,
 * docs/hook.md) read back, and joined to the retained set object by
 * object.
 *
 * The join: a capture's heap profiles are taken right after its heap dumps,
 * and each sample carries the address its object had then. While the
 * analysis reads the last dump, each retained object is looked up among the
 * last profile's samples by address (mdp_sampled_join_note); one found
 * there, of the sample's class and allocated no later than the middle dump
 * (the sample's generation, the GC count at its allocation, at most the
 * middle dump's GC count, before_gc), is that sampled object: it gets the
 * sample's site. A slot that was freed and reused since the middle dump is
 * told by that generation, another object of another class by its class.
 * before_gc is the middle profile's dump_gc_count, the GC count at the
 * middle dump's fork (an inline one's start); an older hook's profile has
 * only its gc_count, when it was written after the dump, which lets
 * through objects allocated while a slow forked dump wrote. Once the
 * groups are built (mdp_sampled_join_sites), a group without a traced site
 * gets the site (file, line of the Ruby frame that allocated it) most of
 * its sampled members share, marked MDP_ANALYSIS_SITE_SAMPLED, with
 * site_samples of site_sampled members there: the share is known to about
 * 1/sqrt(site_sampled).
 *
 * Memory: a loaded set holds each sample (some 56 bytes) and each distinct
 * class and file name once; the join, 28 bytes a sample in the analysis'
 * own account.
 *
 * Threading: none; no global state.
 * Ownership: mdp_sampled_load() fills a caller-owned set that
 * mdp_sampled_free() releases; a join is owned by its analysis
 * (mdp_sampled_join_free); the result's strings are released by
 * mdp_analysis_result_free(). */
#ifndef MDP_SAMPLED_H
#define MDP_SAMPLED_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "analysis/analysis.h"
#include "analysis/table.h"

/* The largest profile read, compressed and decompressed. */
#define MDP_SAMPLED_FILE_MAX ((size_t)64 << 20)
#define MDP_SAMPLED_RAW_MAX  ((size_t)512 << 20)

typedef struct {
  mdp_analysis_sample *objs;
  size_t n;
  uint64_t gc_count; /* the GC count when the profile was taken */
  int has_gc_count;
  /* The GC count when the heap dump before this profile was taken (at its
   * fork, with collection off; an inline one's start): every object of
   * that dump was live then, and another object at one of their addresses
   * later needs a collection after it, so its generation is greater. Lower
   * than gc_count by the collections run while the dump wrote. From the
   * comment's "dump_gc_count N"; hooks before it write none. */
  uint64_t dump_gc_count;
  int has_dump_gc_count;
  char **strs; /* the names the samples point to, each once */
  size_t n_strs;
  uint64_t bytes; /* what the set holds */
} mdp_sampled_set;

typedef struct {
  int check_owner; /* refuse a file not owned by owner (or this process) */
  uid_t owner;
  uint64_t memory_limit; /* the most reading it may hold at once; 0: no limit */
} mdp_sampled_opts;

/* Read one heap profile. Returns 0, -ENOENT (no such file), -EPERM (a link,
 * or another owner's), -EFBIG (larger than the limits), -EINVAL (not a
 * pprof profile memdiag wrote), -ENOMEM or -EIO, with err set. */
int mdp_sampled_load(const char *path, const mdp_sampled_opts *o, mdp_sampled_set *out, char *err,
                     size_t errlen);
void mdp_sampled_free(mdp_sampled_set *s);

/* The samples of `last` as the analysis takes them (borrowing last's
 * memory); middle (may be NULL) gives before_gc: its dump_gc_count, else
 * (an older hook) its gc_count, else none; first (may be NULL) first_gc
 * the same way; last its own dump_gc_count as last_gc. */
mdp_analysis_samples mdp_sampled_for_analysis(const mdp_sampled_set *last,
                                              const mdp_sampled_set *middle,
                                              const mdp_sampled_set *first, const char *profile);

/* The join inside one analysis. */
typedef struct {
  const mdp_analysis_samples *in; /* NULL: no samples, every call a no-op */
  mdp_analysis_objset at;         /* sample addresses; aux: the sample's index */
  uint32_t *group;                /* per sample: its retained object's raw group + 1 */
  mdp_analysis_mem *mem;
} mdp_sampled_join;

/* 0 or -ENOMEM. in may be NULL. */
int mdp_sampled_join_init(mdp_sampled_join *j, mdp_analysis_mem *mem,
                          const mdp_analysis_samples *in);
/* A retained object of the last dump, at address, counted in raw group
 * raw_group. */
void mdp_sampled_join_note(mdp_sampled_join *j, uint64_t address, uint32_t raw_group);
/* The sample at address when it was allocated after dump d - 1 and by dump
 * d (d 1 or 2, from 0: above first_gc and at most an exact before_gc, or
 * above before_gc and at most last_gc); NULL when there is none or a count
 * is not known. Its class is the caller's to compare. */
const mdp_analysis_sample *mdp_sampled_join_newer(const mdp_sampled_join *j, uint64_t address,
                                                  unsigned d);
/* res->groups are built; of_raw[r] is raw group r's index in them + 1 (0:
 * none listed). Fills res->sampling and the site-less groups' sites.
 * Returns 0 or -ENOMEM. */
int mdp_sampled_join_sites(mdp_sampled_join *j, mdp_analysis_result *res, const uint32_t *of_raw,
                           size_t n_raw);
void mdp_sampled_join_free(mdp_sampled_join *j);

/* The heap profile beside a heap dump: ".../heap-3.json[.zst]" gives
 * ".../heap_profile-3.pb.gz" in out. Returns 0, or -EINVAL when the dump's
 * name is not heap-N.json. */
int mdp_sampled_profile_for(const char *dump_path, char *out, size_t len);

#endif
