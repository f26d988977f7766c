/* memdiag keys (prefix mdp_keys_): a module's configuration keys as one
 * table, parsed by one function, as nginx's command tables are. Each entry
 * names a key, says what kind of value it takes and where in the module's
 * own configuration struct it goes (MDP_KEY_AT: offset and size together,
 * so no size is ever written beside a sizeof); sizes, durations, rates,
 * fractions and counts are parsed by units.h, which words the errors.
 * Keys are case-insensitive, as collectd's are.
 *
 * Used by every module that has keys (detector, capture, ship, server,
 * sampler, relay); plugin/config.c only hands each key of the collectd
 * block to the module whose table holds it.
 *
 * Pure code, reentrant. Ownership: MDP_KEY_STRDUP fields are strdup'ed
 * strings the module's config owns (it frees them; mdp_keys_free does);
 * everything else is copied into the struct.
 */
#ifndef MDP_KEYS_H
#define MDP_KEYS_H

#include <stddef.h>

typedef enum {
  MDP_KEY_SIZE = 1, /* uint64_t bytes; min, max in bytes */
  MDP_KEY_MS,       /* uint64_t or uint32_t milliseconds; min, max in seconds */
  MDP_KEY_DURATION, /* double seconds */
  MDP_KEY_RATE,     /* double bytes per second */
  MDP_KEY_FRACTION, /* double in [min, max] within [0, 1] */
  MDP_KEY_NUMBER,   /* double */
  MDP_KEY_COUNT,    /* unsigned or int, whole, in [min, max] */
  MDP_KEY_BOOL,     /* bool: true/yes/on/1 or false/no/off/0 */
  MDP_KEY_WORD,     /* int or enum: one of words[] */
  MDP_KEY_TEXT,     /* char array: a non-empty text shorter than the array */
  MDP_KEY_PATH,     /* char array: an absolute path shorter than the array */
  MDP_KEY_STRDUP,   /* char *: a non-empty quoted string, strdup'ed */
  MDP_KEY_CUSTOM,   /* parse() decides */
} mdp_key_kind;

/* How collectd gave the value: a quoted string, or a bare number or
 * boolean. memdiagctl replay's Key=Value texts count as quoted. */
typedef enum {
  MDP_KEY_QUOTED = 1,
  MDP_KEY_BARE,
} mdp_key_quoting;

/* One value for a key, as text. */
typedef struct {
  const char *key;
  const char *text;
  mdp_key_quoting quoting;
} mdp_key_value;

typedef struct {
  const char *word;
  int value;
} mdp_key_word;

/* How many values collectd may give the key on one line. */
typedef enum {
  MDP_KEY_ONE = 0, /* exactly one (the default) */
  MDP_KEY_SEVERAL, /* one or more, handed over as one text, separated by spaces */
} mdp_key_arity;

struct mdp_key;

/* A key of kind MDP_KEY_CUSTOM: parse v into the field at field (inside
 * the module's config cfg). 0 or -EINVAL with a message in err. */
typedef int (*mdp_key_parse_fn)(const struct mdp_key *k, void *field, const mdp_key_value *v,
                                char *err, size_t errlen);

typedef struct mdp_key {
  const char *name;
  mdp_key_kind kind;
  size_t offset, size;       /* MDP_KEY_AT(type, field) */
  double min, max;           /* numeric kinds; max MDP_UNITS_NO_MAX (-1) for none */
  const mdp_key_word *words; /* MDP_KEY_WORD: ends with {NULL, 0} */
  const char *want;          /* WORD, TEXT, PATH: what is expected, for errors */
  mdp_key_parse_fn parse;    /* MDP_KEY_CUSTOM */
  mdp_key_arity arity;
} mdp_key;

/* Where a field is in its module's config struct, and how big it is. */
#define MDP_KEY_AT(type, field) .offset = offsetof(type, field), .size = sizeof(((type *)0)->field)

/* The entry for key in a table that ends with an entry whose name is NULL;
 * NULL when the table has no such key. */
const mdp_key *mdp_keys_find(const mdp_key *table, const char *key);

/* Parse v into cfg by the entry of table for v->key. Returns 0, -ENOENT
 * when the table has no such key (err untouched), -EINVAL with a message
 * naming the key and the value in err, or -ENOMEM. */
int mdp_keys_set(const mdp_key *table, void *cfg, const mdp_key_value *v, char *err, size_t errlen);

/* Free and clear every MDP_KEY_STRDUP field of cfg. */
void mdp_keys_free(const mdp_key *table, void *cfg);

/* The table's key names, comma-separated, for an "unknown key" message. */
void mdp_keys_names(const mdp_key *table, char *buf, size_t len);

#endif
