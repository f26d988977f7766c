/* Sampled allocation sites for the analysis (prefix mdp_sampled_): the
 * hook's heap profiles (heap_profile-N.pb.gz, a gzip'd pprof profile.proto,
 * docs/hook.md) read back, and joined to a result's retained groups that
 * have no site of their own (no allocation tracing).
 *
 * The join: a capture's first and last heap profiles are taken right after
 * its first and last heap dumps. A sampled object of the last profile
 * allocated after the first one was taken (its generation, the GC count at
 * its allocation, above the first profile's GC count) and still alive at the
 * last one is a sampled member of the retained set; its class names the
 * group it belongs to. A site-less group gets the site (file, line of the
 * Ruby frame that allocated it) most of its sampled members share, marked
 * MDP_ANALYSIS_SITE_SAMPLED, with site_samples saying how many samples it
 * rests on (an estimate good to about 1/sqrt(site_samples)).
 *
 * Threading: none; no global state.
 * Ownership: mdp_sampled_load() fills a caller-owned set that
 * mdp_sampled_free() releases; mdp_sampled_fill() gives the groups strings
 * that mdp_analysis_result_free() releases. */
#ifndef MDP_SAMPLED_H
#define MDP_SAMPLED_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "analysis/analysis.h"

/* The largest profile read, compressed and decompressed. */
#define MDP_SAMPLED_FILE_MAX ((size_t)64 << 20)
#define MDP_SAMPLED_RAW_MAX  ((size_t)512 << 20)

typedef struct {
  uint64_t address;
  uint32_t generation;
  int64_t count, bytes; /* what the sample stands for */
  char *class_name;     /* NULL: none */
  char *file;           /* the leaf Ruby frame's; NULL: none */
  unsigned line;
} mdp_sampled_obj;

typedef struct {
  mdp_sampled_obj *objs;
  size_t n;
  uint64_t gc_count; /* the GC count when the profile was taken */
  int has_gc_count;
} mdp_sampled_set;

typedef struct {
  int check_owner; /* refuse a file not owned by owner (or this process) */
  uid_t owner;
} mdp_sampled_opts;

/* Read one heap profile. Returns 0, -ENOENT (no such file), -EPERM (a link,
 * or another owner's), -EFBIG, -EINVAL (not a pprof profile memdiag
 * wrote), -ENOMEM or -EIO, with err set. */
int mdp_sampled_load(const char *path, const mdp_sampled_opts *o, mdp_sampled_set *out, char *err,
                     size_t errlen);
void mdp_sampled_free(mdp_sampled_set *s);

/* Give res's site-less groups the sites of `last`'s samples allocated after
 * `first` was taken (first may be NULL: every sample of last counts).
 * Returns how many groups got a site, or -ENOMEM. */
int mdp_sampled_fill(mdp_analysis_result *res, const mdp_sampled_set *first,
                     const mdp_sampled_set *last);

/* The heap profile beside a heap dump: ".../heap-3.json[.zst]" gives
 * ".../heap_profile-3.pb.gz" in out. Returns 0, or -EINVAL when the dump's
 * name is not heap-N.json. */
int mdp_sampled_profile_for(const char *dump_path, char *out, size_t len);

#endif
