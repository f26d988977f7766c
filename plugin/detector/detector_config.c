/* The detector's configuration keys, parsed from text so that collectd's
 * <Plugin memdiag> block and `memdiagctl replay Key=Value` accept exactly
 * the same spellings. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "detector.h"

#define MIN_WINDOW 60.0

void mdp_detector_config_init(mdp_detector_config *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->growth_window = 3600;
  cfg->horizon = 6 * 3600;
  cfg->near_limit = 0.9;
  cfg->warmup = 2 * 3600;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
  va_list ap;
  if(err && errlen) {
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -EINVAL;
}

/* Unsigned decimal with an optional fraction; no sign, exponent, hex or
 * "inf", which strtod alone would let through. Returns the end or NULL. */
static const char *parse_decimal(const char *s, double *out)
{
  char buf[64];
  size_t n = 0;
  int digits = 0, dot = 0;

  while(*s == ' ' || *s == '\t')
    s++;
  for(; (*s >= '0' && *s <= '9') || (*s == '.' && !dot); s++) {
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

static int at_end(const char *s)
{
  while(*s == ' ' || *s == '\t')
    s++;
  return *s == '\0';
}

/* Binary multiplier of a size suffix (K, KiB, KB ...); 0 if unknown. */
static double size_unit(const char **sp)
{
  static const char units[] = "KMGT";
  const char *s = *sp;
  double mult = 1;

  while(*s == ' ')
    s++;
  const char *u = *s ? strchr(units, *s & ~0x20) : NULL;
  if(u) {
    for(const char *k = units; k <= u; k++)
      mult *= 1024;
    s++;
    if((s[0] == 'i' || s[0] == 'I') && (s[1] == 'B' || s[1] == 'b'))
      s += 2;
    else if(s[0] == 'B' || s[0] == 'b')
      s++;
  } else if(*s == 'B' || *s == 'b') {
    s++;
  }
  *sp = s;
  return mult;
}

int mdp_parse_size(const char *text, uint64_t *out)
{
  double v;
  const char *s = text ? parse_decimal(text, &v) : NULL;
  if(!s)
    return -EINVAL;
  v *= size_unit(&s);
  if(!at_end(s) || v >= 18446744073709551616.0)
    return -EINVAL;
  *out = (uint64_t)(v + 0.5);
  return 0;
}

/* Seconds per unit of a duration suffix; 0 if unknown. */
static double time_unit(const char **sp)
{
  static const struct {
    const char *name;
    double secs;
  } units[] = {{"seconds", 1}, {"second", 1},   {"sec", 1},     {"s", 1},        {"minutes", 60},
               {"minute", 60}, {"min", 60},     {"m", 60},      {"hours", 3600}, {"hour", 3600},
               {"h", 3600},    {"days", 86400}, {"day", 86400}, {"d", 86400}};
  const char *s = *sp;

  while(*s == ' ')
    s++;
  if(!*s || *s == '\t')
    return 1;
  for(size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
    size_t n = strlen(units[i].name);
    if(strncasecmp(s, units[i].name, n) == 0 && !((s[n] | 0x20) >= 'a' && (s[n] | 0x20) <= 'z')) {
      *sp = s + n;
      return units[i].secs;
    }
  }
  return 0;
}

int mdp_parse_duration(const char *text, double *out)
{
  double v;
  const char *s = text ? parse_decimal(text, &v) : NULL;
  if(!s)
    return -EINVAL;
  double unit = time_unit(&s);
  if(!unit || !at_end(s))
    return -EINVAL;
  *out = v * unit;
  return 0;
}

/* "<size>[/<time unit>]": bytes per second unless a unit follows the '/'. */
static int parse_rate(const char *text, double *out)
{
  double v;
  const char *s = parse_decimal(text, &v);
  if(!s)
    return -EINVAL;
  v *= size_unit(&s);
  while(*s == ' ')
    s++;
  double per = 1;
  if(*s == '/') {
    s++;
    per = time_unit(&s);
    if(!per)
      return -EINVAL;
  }
  if(!at_end(s))
    return -EINVAL;
  *out = v / per;
  return 0;
}

/* A fraction in [0, 1] written as 0.9 or 90%. */
static int parse_fraction(const char *text, double *out)
{
  double v;
  const char *s = parse_decimal(text, &v);
  if(!s)
    return -EINVAL;
  while(*s == ' ')
    s++;
  if(*s == '%') {
    v /= 100;
    s++;
  }
  if(!at_end(s) || v > 1)
    return -EINVAL;
  *out = v;
  return 0;
}

#define SIZE_HELP "bytes, or a number with a K, M, G or T suffix (1K = 1024)"
#define TIME_HELP "seconds, or a number with an s, min, h or d suffix"

int mdp_detector_config_set(mdp_detector_config *cfg, const char *key, const char *value, char *err,
                            size_t errlen)
{
  double d;

  if(!key || !*key) {
    fail(err, errlen, "missing key");
    return -ENOENT;
  }
  if(!value)
    return fail(err, errlen, "%s: missing value", key);

  if(strcasecmp(key, "MemoryLimit") == 0 || strcasecmp(key, "CaptureSize") == 0) {
    uint64_t *dst = strcasecmp(key, "MemoryLimit") == 0 ? &cfg->memory_limit : &cfg->capture_size;
    if(mdp_parse_size(value, dst))
      return fail(err, errlen, "%s: invalid size \"%s\" (%s)", key, value, SIZE_HELP);
    return 0;
  }
  if(strcasecmp(key, "GrowthWindow") == 0) {
    if(mdp_parse_duration(value, &d) || d < MIN_WINDOW)
      return fail(err, errlen, "%s: invalid duration \"%s\" (%s; at least %.0f s)", key, value,
                  TIME_HELP, MIN_WINDOW);
    cfg->growth_window = d;
    return 0;
  }
  if(strcasecmp(key, "Horizon") == 0 || strcasecmp(key, "WarmupTime") == 0) {
    int horizon = strcasecmp(key, "Horizon") == 0;
    if(mdp_parse_duration(value, &d) || (horizon && d <= 0))
      return fail(err, errlen, "%s: invalid duration \"%s\" (%s%s)", key, value, TIME_HELP,
                  horizon ? "; more than 0" : "");
    *(horizon ? &cfg->horizon : &cfg->warmup) = d;
    return 0;
  }
  if(strcasecmp(key, "MinGrowthRate") == 0) {
    if(parse_rate(value, &d))
      return fail(err, errlen,
                  "%s: invalid rate \"%s\" (a size per time, e.g. 2M/min or 512K/h; "
                  "bytes per second without a unit)",
                  key, value);
    cfg->min_growth_rate = d;
    return 0;
  }
  if(strcasecmp(key, "NearLimit") == 0) {
    if(parse_fraction(value, &d))
      return fail(err, errlen,
                  "%s: invalid fraction \"%s\" (between 0 and 1, or a percentage; 0 turns it off)",
                  key, value);
    cfg->near_limit = d;
    return 0;
  }
  fail(err, errlen,
       "unknown key \"%s\" (known: MemoryLimit, CaptureSize, GrowthWindow, MinGrowthRate, "
       "Horizon, NearLimit, WarmupTime)",
       key);
  return -ENOENT;
}

int mdp_detector_config_check(const mdp_detector_config *cfg, char *err, size_t errlen)
{
  if(cfg->memory_limit && cfg->capture_size && cfg->capture_size >= cfg->memory_limit)
    return fail(err, errlen, "CaptureSize (%llu) must be below MemoryLimit (%llu)",
                (unsigned long long)cfg->capture_size, (unsigned long long)cfg->memory_limit);
  return 0;
}
