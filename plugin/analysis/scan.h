/* Scanner for one line of a Ruby heap dump (prefix mdp_analysis_scan):
 * checks that the line is one JSON object and picks out the few fields the
 * analysis reads, without building anything. jansson, parsing every field
 * into a tree, ran at 38 MB/s on a 261 MB dump here; the analysis needs
 * 200 MB/s per core.
 *
 * Long lines (see reader.h) are checked only as far as their first bytes;
 * the fields after the long middle are found in their last bytes. Every
 * key is preceded by ", " there, and a string value cannot hold `", "key":`
 * unescaped, so a match is always a real key.
 *
 * Ownership: the object's pointers point into the line; nothing is
 * allocated.
 */
#ifndef MDP_ANALYSIS_SCAN_H
#define MDP_ANALYSIS_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "reader.h"
#include "table.h"

/* Ruby's object types as ObjectSpace.dump names them. */
typedef enum {
  MDP_T_UNKNOWN = 0,
  MDP_T_OBJECT,
  MDP_T_CLASS,
  MDP_T_MODULE,
  MDP_T_FLOAT,
  MDP_T_STRING,
  MDP_T_REGEXP,
  MDP_T_ARRAY,
  MDP_T_HASH,
  MDP_T_STRUCT,
  MDP_T_BIGNUM,
  MDP_T_FILE,
  MDP_T_DATA,
  MDP_T_MATCH,
  MDP_T_COMPLEX,
  MDP_T_RATIONAL,
  MDP_T_SYMBOL,
  MDP_T_IMEMO,
  MDP_T_NODE,
  MDP_T_ICLASS,
  MDP_T_ZOMBIE,
  MDP_T_MOVED,
  MDP_T_NONE,
  MDP_T_ROOT,  /* not an object: the roots' references */
  MDP_T_SHAPE, /* not an object: Ruby 3.3+ object shapes */
  MDP_T_COUNT
} mdp_analysis_type;

typedef struct {
  uint64_t address; /* 0: absent */
  uint64_t class_addr;
  uint64_t memsize;
  uint64_t bytesize;
  const char *file; /* escaped JSON text, NULL when absent */
  size_t file_len;
  const char *value; /* escaped JSON text, NULL when absent */
  size_t value_len;
  const char *name; /* CLASS/MODULE name, escaped; NULL when absent */
  size_t name_len;
  const char *refs; /* inside "references":[...]: quoted hex addresses; NULL: none */
  size_t refs_len;
  const char *struct_name; /* a DATA object's "struct" (escaped); NULL: none */
  size_t struct_len;
  const char *root; /* a ROOT record's kind ("vm", "global_tbl", ...); NULL: none */
  size_t root_len;
  uint32_t generation;
  uint32_t line;
  uint8_t type;
  uint8_t has_gen, has_line, old, pinned, value_cut;
  uint8_t refs_open; /* a long line's head ended inside the references */
} mdp_analysis_obj;

/* Scans one line. Returns 0, or -1 with *why set to a static description
 * of what is wrong (for an error naming the file and line). */
int mdp_analysis_scan(const mdp_analysis_line *l, mdp_analysis_obj *o, const char **why);

/* "STRING", "OBJECT", ... */
const char *mdp_analysis_type_name(unsigned type);

/* Decodes JSON string escapes of in[0..len) into out (at most outlen - 1
 * bytes, NUL-terminated; a cut never splits a UTF-8 sequence it wrote).
 * Returns the decoded length. */
size_t mdp_analysis_unescape(const char *in, size_t len, char *out, size_t outlen);

/* String id of t, unescaped into a malloc'ed string the caller frees; NULL
 * for no such id or when memory runs out. */
char *mdp_analysis_decoded(const mdp_analysis_strtab *t, uint32_t id);

#endif
