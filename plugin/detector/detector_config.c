/* The detector's configuration keys, parsed from text so that collectd's
 * <Plugin memdiag> block and `memdiagctl replay Key=Value` accept exactly
 * the same spellings. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "detector.h"
#include "detector_internal.h"
#include "keys/keys.h"
#include "md/text.h"
#include "keys/units.h"

#define MIN_WINDOW 60.0

void mdp_detector_config_init(mdp_detector_config *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->growth_window = 3600;
  cfg->horizon = 6 * 3600;
  cfg->near_limit = 0.9;
  /* Three hours: a warm-up of an hour's time constant is within 5 % of
   * its plateau after three (docs/detector.md, Limits and tuning). */
  cfg->warmup = 3 * 3600;
  cfg->short_window = 20 * 60;
}

/* ShortWindow: 0 turns the urgent rule off; otherwise, like GrowthWindow,
 * at least a minute. */
static int set_short_window(const mdp_key *k, void *field, const mdp_key_value *v, char *err,
                            size_t errlen)
{
  double d;
  int rc =
      mdp_units_parse(MDP_UNITS_DURATION, v->text,
                      (mdp_units_bounds){.key = k->name, .max = MDP_UNITS_NO_MAX}, &d, err, errlen);
  if(rc)
    return rc;
  if(d > 0 && d < MIN_WINDOW) {
    md_seterr(err, errlen, "%s \"%s\" is too short: 0 (off) or at least %.0f s", k->name, v->text,
              MIN_WINDOW);
    return -EINVAL;
  }
  *(double *)field = d;
  return 0;
}

#define AT(field) MDP_KEY_AT(mdp_detector_config, field)

static const mdp_key detector_keys[] = {
    {.name = "MemoryLimit",
     .kind = MDP_KEY_SIZE,
     AT(memory_limit),
     .min = 0,
     .max = MDP_UNITS_NO_MAX},
    {.name = "CaptureSize",
     .kind = MDP_KEY_SIZE,
     AT(capture_size),
     .min = 0,
     .max = MDP_UNITS_NO_MAX},
    /* Shorter than a minute leaves too few samples per bucket. */
    {.name = "GrowthWindow",
     .kind = MDP_KEY_DURATION,
     AT(growth_window),
     .min = MIN_WINDOW,
     .max = MDP_UNITS_NO_MAX},
    {.name = "MinGrowthRate",
     .kind = MDP_KEY_RATE,
     AT(min_growth_rate),
     .min = 0,
     .max = MDP_UNITS_NO_MAX},
    /* 0 would project every slope past the limit at once. */
    {.name = "Horizon",
     .kind = MDP_KEY_DURATION,
     AT(horizon),
     .min = 0.001,
     .max = MDP_UNITS_NO_MAX},
    {.name = "NearLimit",
     .kind = MDP_KEY_FRACTION,
     AT(near_limit),
     .min = 0,
     .max = 1}, /* 0 turns it off */
    {.name = "WarmupTime", .kind = MDP_KEY_DURATION, AT(warmup), .min = 0, .max = MDP_UNITS_NO_MAX},
    {.name = "ShortWindow", .kind = MDP_KEY_CUSTOM, AT(short_window), .parse = set_short_window},
    {.name = NULL},
};

const mdp_key *mdp_detector_config_key(const char *key)
{
  return mdp_keys_find(detector_keys, key);
}

int mdp_detector_config_set(mdp_detector_config *cfg, const char *key, const char *value, char *err,
                            size_t errlen)
{
  mdp_key_value v = {.key = key, .text = value, .quoting = MDP_KEY_QUOTED};
  char names[256];
  int rc;

  if(!key || !*key) {
    md_seterr(err, errlen, "missing key");
    return -ENOENT;
  }
  rc = mdp_keys_set(detector_keys, cfg, &v, err, errlen);
  if(rc == -ENOENT) {
    mdp_keys_names(detector_keys, names, sizeof(names));
    md_seterr(err, errlen, "unknown key \"%s\" (known: %s)", key, names);
  }
  return rc;
}

int mdp_detector_config_check(const mdp_detector_config *cfg, char *err, size_t errlen)
{
  if(cfg->memory_limit && cfg->capture_size && cfg->capture_size >= cfg->memory_limit) {
    md_seterr(err, errlen, "CaptureSize (%llu) must be below MemoryLimit (%llu)",
              (unsigned long long)cfg->capture_size, (unsigned long long)cfg->memory_limit);
    return -EINVAL;
  }
  return 0;
}

int mdp_detector_interval_note(const mdp_detector_config *cfg, double interval, char *buf,
                               size_t len)
{
  double per = mdp_detector_course_samples(cfg, interval);
  if(!(per > 0 && per < MDP_DETECTOR_COURSE_SAMPLES))
    return 0;
  snprintf(buf, len,
           "gives the leak detector's early path %.2g samples a bucket where it was tuned on %d: "
           "fast leaks are caught later and more warm-ups fire than at 10 s (docs/detector.md, "
           "\"Limits and tuning\")",
           per, MDP_DETECTOR_COURSE_SAMPLES);
  return 1;
}
