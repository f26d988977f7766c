/* memdiag plugin: the <Plugin memdiag> block's dispatcher: see config.h. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"
#include "liboconfig/oconfig.h"

#include <errno.h>
#include <string.h>

#include "config.h"

void mdp_config_init(mdp_config *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  mdp_server_config_init(&cfg->server);
  mdp_sampler_config_init(&cfg->sampler);
  mdp_relay_config_init(&cfg->relay);
  mdp_detector_config_init(&cfg->detector);
  mdp_capture_config_init(&cfg->capture);
}

void mdp_config_free(mdp_config *cfg) { mdp_server_config_free(&cfg->server); }

/* The detector's, the capture module's and ship's setters take the key and
 * its text (memdiagctl replay calls them so); these adapt them. */
static int set_server(mdp_config *c, const mdp_key_value *v, char *err, size_t len)
{
  return mdp_server_config_set(&c->server, v, err, len);
}

static int set_sampler(mdp_config *c, const mdp_key_value *v, char *err, size_t len)
{
  return mdp_sampler_config_set(&c->sampler, v, err, len);
}

static int set_relay(mdp_config *c, const mdp_key_value *v, char *err, size_t len)
{
  return mdp_relay_config_set(&c->relay, v, err, len);
}

static int set_detector(mdp_config *c, const mdp_key_value *v, char *err, size_t len)
{
  return mdp_detector_config_set(&c->detector, v->key, v->text, err, len);
}

static int set_capture(mdp_config *c, const mdp_key_value *v, char *err, size_t len)
{
  return mdp_capture_config_set(&c->capture, v->key, v->text, err, len);
}

static int set_ship(mdp_config *c, const mdp_key_value *v, char *err, size_t len)
{
  return mdp_ship_config_set(&c->capture.command, v->key, v->text, err, len);
}

/* Who owns which key: each module's table answers for its own. */
static const struct {
  const mdp_key *(*key)(const char *key);
  int (*set)(mdp_config *cfg, const mdp_key_value *v, char *err, size_t errlen);
} owners[] = {
    {mdp_server_config_key, set_server},   {mdp_sampler_config_key, set_sampler},
    {mdp_relay_config_key, set_relay},     {mdp_detector_config_key, set_detector},
    {mdp_capture_config_key, set_capture}, {mdp_ship_config_key, set_ship},
};

/* One value as text: `MemoryLimit 1073741824` arrives as a number. Whole
 * numbers as digits (1073741824, not 1.073741824e+09); the range check
 * first, as converting a double beyond int64_t is undefined. */
static void value_text(const oconfig_value_t *v, char *buf, size_t len)
{
  switch(v->type) {
  case OCONFIG_TYPE_STRING: snprintf(buf, len, "%s", v->value.string); break;
  case OCONFIG_TYPE_NUMBER:
    if(v->value.number > -9.2e18 && v->value.number < 9.2e18 &&
       v->value.number == (double)(int64_t)v->value.number)
      snprintf(buf, len, "%" PRId64, (int64_t)v->value.number);
    else
      snprintf(buf, len, "%.17g", v->value.number);
    break;
  default: snprintf(buf, len, "%s", v->value.boolean ? "true" : "false"); break;
  }
}

/* The item's values as one text: one value, or (MDP_KEY_SEVERAL) every
 * value separated by spaces. 0 or -EINVAL, logged. */
static int item_text(const oconfig_item_t *ci, const mdp_key *k, char *buf, size_t len,
                     mdp_key_quoting *quoting)
{
  size_t used = 0;

  if(ci->children_num != 0 || (k->arity == MDP_KEY_ONE && ci->values_num != 1)) {
    ERROR("memdiag plugin: %s takes exactly one value", ci->key);
    return -EINVAL;
  }
  buf[0] = '\0';
  *quoting = MDP_KEY_QUOTED;
  for(int i = 0; i < ci->values_num && used < len; i++) {
    if(ci->values[i].type != OCONFIG_TYPE_STRING)
      *quoting = MDP_KEY_BARE;
    if(i)
      buf[used++] = ' ';
    value_text(&ci->values[i], buf + used, len - used);
    used += strlen(buf + used);
  }
  return 0;
}

static int apply_item(mdp_config *cfg, const oconfig_item_t *ci)
{
  char text[MDP_CAPTURE_PATH_MAX], err[512] = "";
  mdp_key_quoting quoting;

  for(size_t i = 0; i < sizeof(owners) / sizeof(owners[0]); i++) {
    const mdp_key *k = owners[i].key(ci->key);
    if(!k)
      continue;
    int rc = item_text(ci, k, text, sizeof(text), &quoting);
    if(rc)
      return rc;
    mdp_key_value v = {.key = ci->key, .text = text, .quoting = quoting};
    rc = owners[i].set(cfg, &v, err, sizeof(err));
    if(rc)
      ERROR("memdiag plugin: %s", err[0] ? err : ci->key);
    return rc;
  }
  ERROR("memdiag plugin: unknown configuration key \"%s\" in <Plugin memdiag> "
        "(see docs/configuration.md for the keys)",
        ci->key);
  return -ENOENT;
}

int mdp_config_apply(mdp_config *cfg, const oconfig_item_t *block)
{
  int failed = 0;

  /* Keep going: one start should name every bad key, not the first. */
  for(int i = 0; i < block->children_num; i++)
    if(apply_item(cfg, &block->children[i]))
      failed = 1;
  return failed ? -EINVAL : 0;
}

int mdp_config_check(const mdp_config *cfg)
{
  char err[512] = "";
  int rc = 0;

  if(mdp_server_config_check(&cfg->server, err, sizeof(err))) {
    ERROR("memdiag plugin: %s", err);
    return -EINVAL;
  }
  err[0] = '\0';
  if(mdp_detector_config_check(&cfg->detector, err, sizeof(err))) {
    ERROR("memdiag plugin: %s", err);
    rc = -EINVAL;
  }
  err[0] = '\0';
  if(mdp_capture_config_check(&cfg->capture, err, sizeof(err))) {
    ERROR("memdiag plugin: %s", err);
    rc = -EINVAL;
  }
  /* A restart is tied to the limit: without one it would never happen, and
   * an operator who asked for it should hear so at start, not after a leak. */
  if(cfg->capture.restart_after_capture && cfg->detector.memory_limit == 0) {
    ERROR("memdiag plugin: RestartAfterCapture true needs MemoryLimit: the worker is "
          "signalled when it reaches MemoryLimit, after its dump");
    rc = -EINVAL;
  }
  return rc;
}
