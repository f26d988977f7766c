/* Sizes, durations, rates, fractions and counts as configuration text; see
 * units.h for the spellings. */
#include "units.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "md/text.h"

#define TWO_TO_64 18446744073709551616.0

static const char *skip_blanks(const char *s)
{
  while(*s == ' ' || *s == '\t')
    s++;
  return s;
}

static int is_letter(char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

/* Unsigned decimal, with a fraction when `fraction`; copied to a bounded
 * buffer so that strtod sees nothing it could read as exponent, hex or
 * "inf". Returns the end or NULL. */
static const char *number(const char *s, int fraction, double *out)
{
  char buf[64];
  size_t n = 0;
  int digits = 0, dot = 0;

  s = skip_blanks(s);
  for(; (*s >= '0' && *s <= '9') || (fraction && *s == '.' && !dot); s++) {
    if(n + 1 >= sizeof(buf))
      return NULL;
    digits += *s != '.';
    dot |= *s == '.';
    buf[n++] = *s;
  }
  if(!digits)
    return NULL;
  buf[n] = '\0';
  *out = strtod(buf, NULL);
  return s;
}

/* Optional size unit at s: K, M, G or T (binary), each optionally followed
 * by "iB" or "B", or a lone "B". */
static const char *size_unit(const char *s, double *mult)
{
  static const char prefixes[] = "KMGT";

  *mult = 1;
  s = skip_blanks(s);
  for(int i = 0; prefixes[i]; i++) {
    if((*s & ~0x20) != prefixes[i])
      continue;
    *mult = ldexp(1.0, 10 * (i + 1));
    s++;
    if((s[0] | 0x20) == 'i' && (s[1] | 0x20) == 'b')
      return s + 2;
    return (*s | 0x20) == 'b' ? s + 1 : s;
  }
  return (*s | 0x20) == 'b' ? s + 1 : s;
}

/* A duration unit at s as a whole word; NULL when there is none (or, with
 * required, when the text ends first). */
static const char *time_unit(const char *s, int required, double *secs)
{
  static const struct {
    const char *name;
    double secs;
  } units[] = {
      {"milliseconds", 0.001}, {"millisecond", 0.001}, {"msec", 0.001}, {"ms", 0.001},
      {"seconds", 1},          {"second", 1},          {"sec", 1},      {"s", 1},
      {"minutes", 60},         {"minute", 60},         {"min", 60},     {"m", 60},
      {"hours", 3600},         {"hour", 3600},         {"h", 3600},     {"days", 86400},
      {"day", 86400},          {"d", 86400},
  };

  s = skip_blanks(s);
  if(!*s && !required) {
    *secs = 1;
    return s;
  }
  for(size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
    size_t n = strlen(units[i].name);
    if(strncasecmp(s, units[i].name, n) == 0 && !is_letter(s[n])) {
      *secs = units[i].secs;
      return s + n;
    }
  }
  return NULL;
}

static const char *size(const char *s, double *out)
{
  double mult;

  s = number(s, 1, out);
  if(!s)
    return NULL;
  s = size_unit(s, &mult);
  *out *= mult;
  return *out < TWO_TO_64 ? s : NULL;
}

/* The end of the text as `kind` at s, or NULL; *out in the base unit. */
static const char *parse(mdp_units_kind kind, const char *s, double *out)
{
  double unit;

  switch(kind) {
  case MDP_UNITS_NUMBER: return number(s, 1, out);
  case MDP_UNITS_COUNT: return number(s, 0, out);
  case MDP_UNITS_SIZE: return size(s, out);
  case MDP_UNITS_DURATION:
    s = number(s, 1, out);
    if(s && (s = time_unit(s, 0, &unit)))
      *out *= unit;
    return s;
  case MDP_UNITS_RATE:
    s = size(s, out);
    if(!s)
      return NULL;
    s = skip_blanks(s);
    if(*s != '/')
      return s;
    s = time_unit(s + 1, 1, &unit);
    if(s)
      *out /= unit;
    return s;
  case MDP_UNITS_FRACTION:
    s = number(s, 1, out);
    if(s && *(s = skip_blanks(s)) == '%') {
      *out /= 100;
      s++;
    }
    return s;
  }
  return NULL;
}

/* A bound written as the user would write it (4KiB, 1GiB, 10ms, 1d), so
 * that the message can be copied back into the configuration. */
static void bound_text(mdp_units_kind kind, double v, char *buf, size_t len)
{
  static const struct {
    const char *unit;
    double size;
  } sizes[] = {{"TiB", 1099511627776.0}, {"GiB", 1073741824.0}, {"MiB", 1048576.0}, {"KiB", 1024}},
    times[] = {{"d", 86400}, {"h", 3600}, {"min", 60}, {"s", 1}, {"ms", 0.001}};
  const size_t n = kind == MDP_UNITS_SIZE       ? sizeof(sizes) / sizeof(sizes[0])
                   : kind == MDP_UNITS_DURATION ? sizeof(times) / sizeof(times[0])
                                                : 0;

  for(size_t i = 0; v > 0 && i < n; i++) {
    double unit = kind == MDP_UNITS_SIZE ? sizes[i].size : times[i].size;
    double k = v / unit;
    if(k >= 1 && fabs(k - round(k)) < 1e-9) {
      snprintf(buf, len, "%.0f%s", k, kind == MDP_UNITS_SIZE ? sizes[i].unit : times[i].unit);
      return;
    }
  }
  snprintf(buf, len, "%.15g", v);
}

int mdp_units_parse(mdp_units_kind kind, const char *text, mdp_units_bounds b, double *out,
                    char *err, size_t errlen)
{
  static const char *const what[] = {
      [MDP_UNITS_NUMBER] = "number",     [MDP_UNITS_SIZE] = "size",
      [MDP_UNITS_DURATION] = "duration", [MDP_UNITS_RATE] = "rate",
      [MDP_UNITS_FRACTION] = "fraction", [MDP_UNITS_COUNT] = "whole number",
  };
  static const char *const hint[] = {
      [MDP_UNITS_NUMBER] = "a decimal number such as 2.5",
      [MDP_UNITS_SIZE] = "bytes, or a number with K, M, G or T: 64K, 1.5G, 512MiB; 1K = 1024",
      [MDP_UNITS_DURATION] = "seconds, or a number with ms, s, min, h or d: 500ms, 30s, 10min, 2h",
      [MDP_UNITS_RATE] = "a size per time: 2M/min, 10MiB/h; bytes per second without a unit",
      [MDP_UNITS_FRACTION] = "0 to 1, or a percentage: 0.9, 90%",
      [MDP_UNITS_COUNT] = "digits only",
  };
  char lo[32], hi[32], range[80] = "";
  const char *end;
  double v;

  end = text ? parse(kind, text, &v) : NULL;
  if(end && !*skip_blanks(end) && v >= b.min && (b.max < 0 || v <= b.max)) {
    *out = v;
    return 0;
  }
  bound_text(kind, b.min, lo, sizeof(lo));
  bound_text(kind, b.max, hi, sizeof(hi));
  if(b.max >= 0)
    snprintf(range, sizeof(range), " between %s and %s", lo, hi);
  else if(b.min > 0)
    snprintf(range, sizeof(range), " of at least %s", lo);
  md_seterr(err, errlen, "%s \"%.200s\" is not a %s%s (%s)", b.key, text ? text : "", what[kind],
            range, hint[kind]);
  return -EINVAL;
}

/* A whole amount: the value times scale, rounded to the nearest. Sizes
 * beyond 2^63 bytes are in range, so no llround. */
static uint64_t whole(double v, double scale) { return (uint64_t)round(v * scale); }

int mdp_units_size(const char *text, mdp_units_bounds b, uint64_t *out, char *err, size_t errlen)
{
  double v;
  int rc = mdp_units_parse(MDP_UNITS_SIZE, text, b, &v, err, errlen);

  if(rc == 0)
    *out = whole(v, 1);
  return rc;
}

int mdp_units_ms(const char *text, mdp_units_bounds b, uint64_t *out_ms, char *err, size_t errlen)
{
  double v;
  int rc = mdp_units_parse(MDP_UNITS_DURATION, text, b, &v, err, errlen);

  if(rc == 0)
    *out_ms = whole(v, 1000);
  return rc;
}

int mdp_units_count(const char *text, mdp_units_bounds b, unsigned *out, char *err, size_t errlen)
{
  double v;

  /* Digits only, at most b.max: the value fits. */
  if(mdp_units_parse(MDP_UNITS_COUNT, text, b, &v, err, errlen))
    return -EINVAL;
  *out = (unsigned)whole(v, 1);
  return 0;
}
