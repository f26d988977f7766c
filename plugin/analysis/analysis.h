/* Heap-dump analysis (prefix mdp_analysis_): the three-snapshot retained
 * set of Ruby heap dumps (ObjectSpace.dump_all, one JSON object a line,
 * plain or zstd-compressed), shared by memdiagctl and the plugin.
 *
 * Objects present in dump 2, absent from dump 1 and still present in dump 3
 * are "retained": allocated between the first two dumps and never freed.
 * An object's identity is its address and type, and its allocation
 * generation when both dumps carry one (allocation tracing), so an address
 * that was freed and reused by another object is not taken for the old one.
 * Without it, a sample of the heap profile at the address tells a newer
 * object of the same type and class (mdp_analysis_samples); unsampled ones
 * stay taken for the old.
 * With two dumps the result is every object of dump 2 that dump 1 did not
 * hold ("new"), and the per-class growth.
 *
 * The dumps are streamed, never loaded: memory holds one set of addresses
 * of dump 1 (8 bytes an object), the candidates of dump 2 (8 bytes each)
 * and small tables (groups, class names, file names, repeated strings).
 *
 * Threading: no global state; one mdp_analysis_result per call, so any
 * number of analyses may run in parallel threads.
 *
 * Ownership: mdp_analysis_run() fills a caller-owned mdp_analysis_result
 * whose arrays and strings it allocates; mdp_analysis_result_free() releases
 * them (safe on a zeroed or failed result).
 */
#ifndef MDP_ANALYSIS_H
#define MDP_ANALYSIS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define MDP_ANALYSIS_DUMPS_MAX   3
#define MDP_ANALYSIS_CAVEATS_MAX 12

/* One live object of the worker's heap profile taken right after the last
 * dump (the hook's allocation sampler; analysis/sampled.h reads them). */
typedef struct {
  uint64_t address;       /* where it was when the profile was taken */
  uint32_t generation;    /* the GC count when it was allocated */
  int64_t count, bytes;   /* what the sample stands for (an estimate) */
  const char *class_name; /* NULL: none */
  const char *file;       /* its leaf Ruby frame's; NULL: none */
  unsigned line;
} mdp_analysis_sample;

/* The samples a run joins to its retained objects by address: a retained
 * object at a sample's address, of the sample's class and allocated no
 * later than the middle dump (the sample's generation at most before_gc)
 * is that sampled object, and its group gets the site most of its sampled
 * members share (MDP_ANALYSIS_SITE_SAMPLED) when tracing gave it none. */
typedef struct {
  const char *profile; /* the profile's file, for the report */
  const mdp_analysis_sample *objs;
  size_t n;
  /* The GC count at the middle dump (mdp_sampled_for_analysis): a sample
   * allocated later was no object of that dump (has_before_gc 0: not known).
   * before_gc_exact: it is the count at the dump's fork (dump_gc_count),
   * not the later one when its profile was written (an older hook). */
  int has_before_gc, before_gc_exact;
  uint64_t before_gc;
  /* The GC counts at the first and the last dump, which with before_gc
   * tell an object that matches the earlier dump's at its address (type,
   * class, a String's content) from a newer one in the reused slot: a
   * sample there of its class allocated between the two dumps' counts
   * (above the earlier, at most the later) is that newer object. first_gc
   * may be the first profile's later gc_count (a higher bound only tells
   * fewer objects new); last_gc is only ever the last dump's own. */
  int has_first_gc, has_last_gc;
  uint64_t first_gc, last_gc;
} mdp_analysis_samples;

typedef struct {
  uint64_t memory_limit;    /* bytes the analysis may allocate; 0: no limit */
  const atomic_int *cancel; /* when set and non-zero, stop with -ECANCELED */
  int check_owner;          /* read only dumps owned by owner, or by this process with one */
  uid_t owner;              /* link (a hard link planted in a worker's folder is refused) */
  int no_graph;             /* no ownership, holders or paths (less memory) */
  /* The worker's RSS when each dump was taken (bytes; 0: unknown), from
   * the capture's own samples: growth outside the Ruby heap is told by it. */
  uint64_t rss[MDP_ANALYSIS_DUMPS_MAX];
  const mdp_analysis_samples *samples; /* NULL: no heap profile; borrowed for the call */
} mdp_analysis_opts;

/* Where a group's allocation site (file, line) came from. */
typedef enum {
  MDP_ANALYSIS_SITE_NONE = 0, /* no site: file is NULL */
  MDP_ANALYSIS_SITE_TRACED,   /* the dumps' allocation tracing data */
  MDP_ANALYSIS_SITE_SAMPLED,  /* sampled allocation sites (sampled.c) */
} mdp_analysis_site_source;

/* "traced", "sampled" or "none". */
const char *mdp_analysis_site_source_name(mdp_analysis_site_source s);

/* One group of retained objects: same type, class and allocation site. */
typedef struct {
  const char *type; /* "STRING", "OBJECT", ... (static) */
  char *class_name; /* NULL: anonymous or not a class instance */
  char *file;       /* NULL: no allocation site (tracing was off) */
  unsigned line;
  mdp_analysis_site_source site_source;
  uint64_t site_samples; /* sampled: the group's sampled members allocated at the site */
  uint64_t site_sampled; /* sampled: the group's sampled members (site_samples of them there) */
  uint64_t count, bytes; /* objects and their own (shallow) bytes */
  uint64_t owned;        /* bytes they keep alive, themselves included */
  /* what they keep alive besides themselves is mostly this class (or
   * type when mostly_class is NULL; mostly_type NULL: nothing) */
  char *mostly_class;
  const char *mostly_type;
  uint64_t mostly_bytes;
} mdp_analysis_group;

/* An object on a path from a GC root, or holding the suspect. */
typedef struct {
  const char *type; /* "ARRAY", "CLASS", ... (static) */
  char *name;       /* its class's name; for a CLASS or MODULE its own; NULL: none */
  uint64_t address;
} mdp_analysis_step;

/* What holds the top group's objects from outside the retained set. */
typedef struct {
  mdp_analysis_step obj; /* obj.type NULL: a GC root holds them directly (root) */
  int old;               /* in the first dump too: alive in every dump */
  uint64_t refs;         /* its references to them (all gained since dump 1) */
  /* the GC root kind the path starts at ("vm", ...); NULL: no root reaches
   * obj (a dump made in a fork has no other threads), and path is then the
   * objects that reference it, a few steps up */
  char *root;
  mdp_analysis_step *path; /* from the object the root references to obj */
  size_t path_len;
} mdp_analysis_holder;

/* Whether the worker's growth is the Ruby heap's. */
typedef enum {
  MDP_ANALYSIS_VERDICT_UNKNOWN = 0, /* no RSS figures */
  MDP_ANALYSIS_VERDICT_RUBY,        /* the Ruby heap explains the growth */
  MDP_ANALYSIS_VERDICT_OUTSIDE,     /* growth outside the Ruby heap */
  MDP_ANALYSIS_VERDICT_NO_GROWTH,   /* RSS did not grow enough to tell */
} mdp_analysis_verdict;

/* Below this share of the RSS growth, the Ruby heap does not explain it. */
#define MDP_ANALYSIS_HEAP_SHARE_PCT 25
/* RSS growth under this is too little to tell where it went. */
#define MDP_ANALYSIS_RSS_MIN        (4u << 20)

/* Retained objects of one class (or of one type when class_name is NULL),
 * and that class's live objects in each dump. */
typedef struct {
  char *class_name;
  const char *type; /* set when class_name is NULL */
  uint64_t count, bytes;
  uint64_t live_count[MDP_ANALYSIS_DUMPS_MAX], live_bytes[MDP_ANALYSIS_DUMPS_MAX];
} mdp_analysis_class;

typedef struct {
  char *file; /* NULL: sites unknown */
  uint64_t count, bytes;
} mdp_analysis_file;

/* A repeated retained string value: up to 256 bytes of it, unescaped. */
typedef struct {
  char *value;
  size_t value_len;
  uint64_t length; /* the string's full length in bytes */
  uint64_t count, bytes;
} mdp_analysis_string;

typedef struct {
  char *path;
  uint64_t file_bytes; /* on disk */
  uint64_t json_bytes; /* decompressed */
  uint64_t lines, objects, memsize;
  uint64_t traced;         /* objects with an allocation site */
  uint32_t max_generation; /* highest allocation generation; 0: none */
  int compressed;
  uint64_t pages; /* 64 KiB heap pages holding its objects */
  uint64_t heap;  /* the Ruby heap: pages + what objects hold beyond their slot */
  uint64_t rss;   /* the worker's RSS then (opts.rss; 0: unknown) */
} mdp_analysis_dump;

/* A sampled object found in the retained set. */
typedef struct {
  uint64_t address;
  char *class_name, *file; /* NULL: none */
  unsigned line;
  size_t group; /* its group in groups[]; SIZE_MAX: in none listed */
} mdp_analysis_sampled;

/* How the samples were joined (res->sampling; used 0: no heap profile). */
typedef struct {
  int used;
  char *profile;
  uint64_t samples;     /* live samples in the profile */
  uint64_t retained;    /* of them, objects of the retained set */
  uint64_t too_new;     /* at a retained object's address, allocated after the middle dump */
  uint64_t other_class; /* at a retained object's address, of another class */
  uint64_t groups;      /* groups that got their site from the samples */
  /* Objects told by their sample (mdp_analysis_samples' first_gc, last_gc)
   * to be newer than the earlier dump's alike object at their address:
   * reused_new, of dump 2 though dump 1 matched, so retained; reused_later,
   * of dump 3 though dump 2 matched, so left out. */
  uint64_t reused_new, reused_later;
  mdp_analysis_sampled *objs; /* the retained ones, in the order found */
  size_t n_objs;
} mdp_analysis_sampling;

typedef struct {
  const char *code; /* "compaction", "gc_order", "no_gc", "no_sites", ... */
  char message[320];
} mdp_analysis_caveat;

typedef struct {
  unsigned n_dumps; /* 2 (new objects) or 3 (retained) */
  mdp_analysis_dump dumps[MDP_ANALYSIS_DUMPS_MAX];
  uint64_t count, bytes;      /* every retained object */
  uint64_t moved;             /* objects found moved (compaction) and left out */
  uint64_t reused;            /* addresses that held another object in a later dump */
  mdp_analysis_group *groups; /* sorted by bytes, largest first */
  size_t n_groups;
  mdp_analysis_class *classes; /* by retained bytes */
  size_t n_classes;
  mdp_analysis_class *grew; /* classes whose live bytes grew, by growth */
  size_t n_grew;
  mdp_analysis_file *files; /* by retained bytes */
  size_t n_files;
  mdp_analysis_string *strings; /* by count, then bytes */
  size_t n_strings;
  int ownership;                   /* the dominator tree was computed */
  uint64_t hook_count, hook_bytes; /* memdiag's own objects, left out */
  mdp_analysis_holder *holders;    /* of groups[0], most references first */
  size_t n_holders;
  mdp_analysis_verdict verdict;
  int64_t rss_growth, heap_growth; /* first dump to last, bytes */
  mdp_analysis_caveat caveats[MDP_ANALYSIS_CAVEATS_MAX];
  unsigned n_caveats;
  int doubtful; /* a caveat puts the retained set itself in doubt */
  mdp_analysis_sampling sampling;
  uint64_t peak_memory; /* the most the analysis held at once */
  double seconds;
} mdp_analysis_result;

/* Analyse 2 or 3 dumps given in the order they were taken. Returns 0, or a
 * negative errno with err naming the file (and line) at fault: -ENOENT,
 * -EINVAL for a malformed or truncated dump, -ENOMEM when the analysis
 * would pass opts->memory_limit, -EPERM for a dump of another owner,
 * -ECANCELED, -EIO. */
int mdp_analysis_run(const char *const *paths, unsigned n, const mdp_analysis_opts *opts,
                     mdp_analysis_result *res, char *err, size_t errlen);

void mdp_analysis_result_free(mdp_analysis_result *res);

/* The dumps of a capture folder in the order to analyse them: heap-N.json
 * or heap-N.json.zst; with more than three, the first, the middle and the
 * last. paths[] get malloc'ed strings the caller frees. Returns 0 (*n is 2
 * or 3) or a negative errno with err set (fewer than two dumps). */
int mdp_analysis_find_dumps(const char *dir, char *paths[MDP_ANALYSIS_DUMPS_MAX], unsigned *n,
                            char *err, size_t errlen);

/* The result as JSON (the schema is in docs/analysis.md), `top` entries of
 * each list at most (0: all). Returns 0 or -EIO. */
int mdp_analysis_write_json(FILE *out, const mdp_analysis_result *res, size_t top);

/* A short form for a capture's manifest: {"status": "done", "file":
 * "analysis.json", "summary", "doubtful", "count", "bytes", "seconds",
 * "peak_memory", "top": [the first `top` groups], "caveats": [codes]}.
 * Returns 0 or -EIO. */
int mdp_analysis_write_brief(FILE *out, const mdp_analysis_result *res, const char *summary,
                             size_t top);

/* s as a JSON string (NULL: null), bytes that are not UTF-8 as U+FFFD. */
void mdp_analysis_json_string(FILE *out, const char *s);

/* v with a comma every three digits (48213 -> "48,213") into out, cut to
 * fit len; shared with memdiagctl analyze so both print counts alike. */
void mdp_analysis_thousands(uint64_t v, char *out, size_t len);

/* b in words: "840 B", "12 KiB", "3.4 MiB", "47 MiB". */
void mdp_analysis_size_text(uint64_t b, char *out, size_t len);

/* "held by Hash ← Reg's constants ← Object's constants": what holds the
 * top group (res->holders[0]) and the path above it, at most len - 1
 * bytes. Returns its length; 0 when nothing is known. */
size_t mdp_analysis_holder_text(const mdp_analysis_result *res, char *buf, size_t len);

/* One line naming the top group for a notification, at most len - 1 bytes
 * ("leak suspect: 48,213 × Cart::Line (+47 MiB) from app/models/cart.rb:28",
 * the file shortened from the left to fit). Returns its length; 0 when
 * nothing was retained. */
size_t mdp_analysis_summary(const mdp_analysis_result *res, char *buf, size_t len);

#endif
