/* The detector's configuration keys, parsed from text so that collectd's
 * <Plugin memdiag> block and `memdiagctl replay Key=Value` accept exactly
 * the same spellings. */
#include <errno.h>
#include <string.h>
#include <strings.h>

#include "detector.h"
#include "md/text.h"
#include "units.h"

#define MIN_WINDOW 60.0

void mdp_detector_config_init(mdp_detector_config *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->growth_window = 3600;
  cfg->horizon = 6 * 3600;
  cfg->near_limit = 0.9;
  cfg->warmup = 2 * 3600;
  cfg->short_window = 20 * 60;
}

int mdp_detector_config_set(mdp_detector_config *cfg, const char *key, const char *value, char *err,
                            size_t errlen)
{
  if(!key || !*key) {
    md_seterr(err, errlen, "missing key");
    return -ENOENT;
  }
  if(!value) {
    md_seterr(err, errlen, "%s: missing value", key);
    return -EINVAL;
  }
  if(strcasecmp(key, "MemoryLimit") == 0)
    return mdp_units_size(key, value, 0, UINT64_MAX, &cfg->memory_limit, err, errlen);
  if(strcasecmp(key, "CaptureSize") == 0)
    return mdp_units_size(key, value, 0, UINT64_MAX, &cfg->capture_size, err, errlen);
  /* Shorter than a minute leaves too few samples per bucket. */
  if(strcasecmp(key, "GrowthWindow") == 0)
    return mdp_units_parse(MDP_UNITS_DURATION, key, value, MIN_WINDOW, MDP_UNITS_NO_MAX,
                           &cfg->growth_window, err, errlen);
  /* 0 would project every slope past the limit at once. */
  if(strcasecmp(key, "Horizon") == 0)
    return mdp_units_parse(MDP_UNITS_DURATION, key, value, 0.001, MDP_UNITS_NO_MAX, &cfg->horizon,
                           err, errlen);
  if(strcasecmp(key, "WarmupTime") == 0)
    return mdp_units_parse(MDP_UNITS_DURATION, key, value, 0, MDP_UNITS_NO_MAX, &cfg->warmup, err,
                           errlen);
  /* 0 turns the urgent rule off; otherwise, like GrowthWindow, at least a
   * minute. */
  if(strcasecmp(key, "ShortWindow") == 0) {
    double d;
    int rc = mdp_units_parse(MDP_UNITS_DURATION, key, value, 0, MDP_UNITS_NO_MAX, &d, err, errlen);
    if(rc)
      return rc;
    if(d > 0 && d < MIN_WINDOW) {
      md_seterr(err, errlen, "%s \"%s\" is too short: 0 (off) or at least %.0f s", key, value,
                MIN_WINDOW);
      return -EINVAL;
    }
    cfg->short_window = d;
    return 0;
  }
  if(strcasecmp(key, "MinGrowthRate") == 0)
    return mdp_units_parse(MDP_UNITS_RATE, key, value, 0, MDP_UNITS_NO_MAX, &cfg->min_growth_rate,
                           err, errlen);
  if(strcasecmp(key, "NearLimit") == 0) /* 0 turns it off */
    return mdp_units_parse(MDP_UNITS_FRACTION, key, value, 0, 1, &cfg->near_limit, err, errlen);
  md_seterr(err, errlen,
            "unknown key \"%s\" (known: MemoryLimit, CaptureSize, GrowthWindow, MinGrowthRate, "
            "Horizon, NearLimit, WarmupTime, ShortWindow)",
            key);
  return -ENOENT;
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
