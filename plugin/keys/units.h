/* memdiag units (prefix mdp_units_): the one parser for every configuration
 * value that is a size, a duration, a rate, a fraction or a count, in
 * <Plugin memdiag> and in `memdiagctl replay Key=Value` alike.
 *
 * Spellings (case-insensitive; blanks allowed around the number and unit):
 *   number    unsigned decimal, fraction allowed: 3, 2.5 (no sign, exponent,
 *             hex or "inf", which strtod alone would let through)
 *   size      bytes: 1073741824, 64K, 1.5G, 512MiB, 1GB, 2T, 10B; the unit is
 *             always binary (1K = 1KB = 1KiB = 1024)
 *   duration  seconds: 30, 500ms, 30s, 10min, 10m, 2h, 1d; also msec,
 *             millisecond(s), sec, second(s), minute(s), hour(s), day(s)
 *   rate      bytes per second: a size, then optionally / and a duration
 *             unit: 10MiB/min, 512K/h, 1000
 *   fraction  0 to 1: 0.9 or 90%
 *   count     a whole number: 1024
 *
 * Errors name the key and the bad value, say what was expected and give
 * examples, e.g. `MaxFrameSize "12X" is not a size between 4KiB and 1GiB
 * (bytes, or a number with K, M, G or T: 64K, 1.5G, 512MiB; 1K = 1024)`.
 *
 * Pure code, reentrant; nothing is allocated.
 */
#ifndef MDP_UNITS_H
#define MDP_UNITS_H

#include <stddef.h>
#include <stdint.h>

typedef enum {
  MDP_UNITS_NUMBER,
  MDP_UNITS_SIZE,     /* result in bytes */
  MDP_UNITS_DURATION, /* result in seconds */
  MDP_UNITS_RATE,     /* result in bytes per second */
  MDP_UNITS_FRACTION, /* result in [0, 1] */
  MDP_UNITS_COUNT,
} mdp_units_kind;

/* No upper bound. */
#define MDP_UNITS_NO_MAX (-1.0)

/* What a value is checked against: the key its errors name, and the
 * inclusive bounds in the kind's base unit (max MDP_UNITS_NO_MAX for none). */
typedef struct {
  const char *key;
  double min;
  double max;
} mdp_units_bounds;

/* Parse text as `kind` into *out and check b.min <= *out <= b.max. Returns
 * 0, or -EINVAL with a message naming b.key and text in err (err may be
 * NULL). *out is left alone on error. */
int mdp_units_parse(mdp_units_kind kind, const char *text, mdp_units_bounds b, double *out,
                    char *err, size_t errlen);

/* A size in whole bytes (rounded), between b.min and b.max bytes. */
int mdp_units_size(const char *text, mdp_units_bounds b, uint64_t *out, char *err, size_t errlen);

/* A duration between b.min and b.max seconds, as whole milliseconds
 * (rounded). */
int mdp_units_ms(const char *text, mdp_units_bounds b, uint64_t *out_ms, char *err, size_t errlen);

/* A whole number between b.min and b.max. */
int mdp_units_count(const char *text, mdp_units_bounds b, unsigned *out, char *err, size_t errlen);

#endif
