/* Capture module: a capture key of the <Plugin memdiag> block, from
 * collectd's parsed item to mdp_capture_config_set's text. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"

#include <errno.h>
#include <stdio.h>

#include "capture.h"

int mdp_capture_config_item(mdp_capture_config_t *c, const oconfig_item_t *ci)
{
  char value[MDP_CAPTURE_PATH_MAX], err[256];
  int rc;

  if(ci->values_num != 1) {
    /* Only claim the key if it is ours, so the caller can report unknown
     * keys in its own words. */
    mdp_capture_config_t probe;
    mdp_capture_config_init(&probe);
    if(mdp_capture_config_set(&probe, ci->key, "", NULL, 0) == -ENOENT)
      return -ENOENT;
    ERROR("memdiag plugin: %s: expected exactly one value", ci->key);
    return -EINVAL;
  }
  const oconfig_value_t *v = &ci->values[0];
  switch(v->type) {
  case OCONFIG_TYPE_STRING: snprintf(value, sizeof(value), "%s", v->value.string); break;
  case OCONFIG_TYPE_NUMBER: snprintf(value, sizeof(value), "%.17g", v->value.number); break;
  case OCONFIG_TYPE_BOOLEAN:
    snprintf(value, sizeof(value), "%s", v->value.boolean ? "true" : "false");
    break;
  default: snprintf(value, sizeof(value), "?");
  }
  rc = mdp_capture_config_set(c, ci->key, value, err, sizeof(err));
  if(rc == -EINVAL)
    ERROR("memdiag plugin: %s", err);
  return rc;
}
