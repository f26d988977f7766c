/* memdiag plugin: parse the <Plugin memdiag> block. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"
#include "liboconfig/oconfig.h"

#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "detector/units.h"

void mdp_config_init(mdp_config *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->socket_mode = 0660;
  cfg->max_connections = 1024;
  cfg->memory = MDP_MEM_RSS;
  cfg->heartbeat_ms = 5000;
  cfg->handshake_timeout_ms = 5000;
  cfg->dump_timeout_ms = 600000;
  cfg->max_frame = 16u * 1024u * 1024u;
  mdp_detector_config_init(&cfg->detector);
  mdp_capture_config_init(&cfg->capture);
}

void mdp_config_free(mdp_config *cfg)
{
  free(cfg->socket);
  free(cfg->socket_group);
  free(cfg->tls_certificate);
  free(cfg->tls_key);
  free(cfg->tls_ca);
  cfg->socket = cfg->socket_group = NULL;
  cfg->tls_certificate = cfg->tls_key = cfg->tls_ca = NULL;
}

/* A single value of any type, as text: the detector and capture parsers
 * take text, and `MemoryLimit 1073741824` arrives as a number. */
static int value_text(const oconfig_item_t *ci, char *buf, size_t len)
{
  const oconfig_value_t *v;

  if(ci->values_num != 1 || ci->children_num != 0) {
    ERROR("memdiag plugin: %s takes exactly one value", ci->key);
    return -EINVAL;
  }
  v = &ci->values[0];
  switch(v->type) {
  case OCONFIG_TYPE_STRING: snprintf(buf, len, "%s", v->value.string); break;
  case OCONFIG_TYPE_NUMBER:
    /* Whole numbers as digits (1073741824, not 1.073741824e+09); the range
     * check first, as converting a double beyond int64_t is undefined. */
    if(v->value.number > -9.2e18 && v->value.number < 9.2e18 &&
       v->value.number == (double)(int64_t)v->value.number)
      snprintf(buf, len, "%" PRId64, (int64_t)v->value.number);
    else
      snprintf(buf, len, "%.17g", v->value.number);
    break;
  default: snprintf(buf, len, "%s", v->value.boolean ? "true" : "false"); break;
  }
  return 0;
}

static int set_string(const oconfig_item_t *ci, char **dst)
{
  char buf[4096];
  char *copy;
  int rc = value_text(ci, buf, sizeof(buf));

  if(rc)
    return rc;
  if(ci->values[0].type != OCONFIG_TYPE_STRING || buf[0] == '\0') {
    ERROR("memdiag plugin: %s needs a non-empty quoted string", ci->key);
    return -EINVAL;
  }
  copy = strdup(buf);
  if(!copy)
    return -ENOMEM;
  free(*dst);
  *dst = copy;
  return 0;
}

/* Sizes, durations and counts: units.h parses them and words the error. */
static int set_duration_ms(const oconfig_item_t *ci, double min_s, double max_s, uint64_t *out)
{
  char buf[128], err[512];
  int rc = value_text(ci, buf, sizeof(buf));

  if(rc == 0 && (rc = mdp_units_ms(ci->key, buf, min_s, max_s, out, err, sizeof(err))))
    ERROR("memdiag plugin: %s", err);
  return rc;
}

static int set_duration_ms32(const oconfig_item_t *ci, double min_s, double max_s, uint32_t *out)
{
  uint64_t ms;
  int rc = set_duration_ms(ci, min_s, max_s, &ms);

  if(rc == 0)
    *out = (uint32_t)ms;
  return rc;
}

static int set_mode(const oconfig_item_t *ci, unsigned *out)
{
  char buf[64];
  char *end;
  unsigned long mode;
  int rc = value_text(ci, buf, sizeof(buf));

  if(rc)
    return rc;
  /* A bare number in collectd's config is decimal; the mode is octal text. */
  if(ci->values[0].type != OCONFIG_TYPE_STRING) {
    ERROR("memdiag plugin: SocketMode needs a quoted octal string such as \"0660\"");
    return -EINVAL;
  }
  errno = 0;
  mode = strtoul(buf, &end, 8);
  if(errno || end == buf || *end != '\0' || mode > 0777) {
    ERROR("memdiag plugin: SocketMode \"%s\" is not an octal permission such as \"0660\"", buf);
    return -EINVAL;
  }
  *out = (unsigned)mode;
  return 0;
}

static int set_count(const oconfig_item_t *ci, unsigned min, unsigned max, unsigned *out)
{
  char buf[64], err[512];
  int rc = value_text(ci, buf, sizeof(buf));

  if(rc == 0 && (rc = mdp_units_count(ci->key, buf, min, max, out, err, sizeof(err))))
    ERROR("memdiag plugin: %s", err);
  return rc;
}

static int set_size(const oconfig_item_t *ci, uint64_t min, uint64_t max, uint64_t *out)
{
  char buf[64], err[512];
  int rc = value_text(ci, buf, sizeof(buf));

  if(rc == 0 && (rc = mdp_units_size(ci->key, buf, min, max, out, err, sizeof(err))))
    ERROR("memdiag plugin: %s", err);
  return rc;
}

static const struct {
  const char *name;
  unsigned bit;
} memory_kinds[] = {
    {"rss", MDP_MEM_RSS},
    {"pss", MDP_MEM_PSS},
    {"private", MDP_MEM_PRIVATE},
    {"swap", MDP_MEM_SWAP},
};

void mdp_config_memory_text(unsigned memory, char *buf, size_t len)
{
  size_t used = 0;

  buf[0] = '\0';
  for(size_t i = 0; i < sizeof(memory_kinds) / sizeof(memory_kinds[0]); i++) {
    if(!(memory & memory_kinds[i].bit))
      continue;
    int n = snprintf(buf + used, len - used, "%s%s", used ? " " : "", memory_kinds[i].name);
    if(n < 0 || (size_t)n >= len - used)
      break;
    used += (size_t)n;
  }
}

/* Memory takes one or more words, on one line or repeated lines; the first
 * Memory line replaces the default. */
static int set_memory(const oconfig_item_t *ci, unsigned *out, int *seen)
{
  unsigned mask = *seen ? *out : 0;

  if(ci->values_num < 1) {
    ERROR("memdiag plugin: Memory needs one or more of rss, pss, private, swap");
    return -EINVAL;
  }
  for(int i = 0; i < ci->values_num; i++) {
    const char *w = ci->values[i].type == OCONFIG_TYPE_STRING ? ci->values[i].value.string : NULL;
    unsigned bit = 0;
    for(size_t k = 0; w && k < sizeof(memory_kinds) / sizeof(memory_kinds[0]); k++)
      if(strcasecmp(w, memory_kinds[k].name) == 0)
        bit = memory_kinds[k].bit;
    if(!bit) {
      ERROR("memdiag plugin: Memory \"%s\" is not one of rss, pss, private, swap",
            w ? w : "(not a string)");
      return -EINVAL;
    }
    mask |= bit;
  }
  *out = mask;
  *seen = 1;
  return 0;
}

static int apply_own(mdp_config *cfg, const oconfig_item_t *ci, int *memory_seen)
{
  const char *k = ci->key;
  uint64_t u64;
  int rc;

  if(strcasecmp(k, "Socket") == 0)
    return set_string(ci, &cfg->socket);
  if(strcasecmp(k, "SocketMode") == 0)
    return set_mode(ci, &cfg->socket_mode);
  if(strcasecmp(k, "SocketGroup") == 0)
    return set_string(ci, &cfg->socket_group);
  if(strcasecmp(k, "TLSCertificate") == 0)
    return set_string(ci, &cfg->tls_certificate);
  if(strcasecmp(k, "TLSKey") == 0)
    return set_string(ci, &cfg->tls_key);
  if(strcasecmp(k, "TLSCA") == 0)
    return set_string(ci, &cfg->tls_ca);
  if(strcasecmp(k, "MaxConnections") == 0)
    return set_count(ci, 1, 65536, &cfg->max_connections);
  if(strcasecmp(k, "Interval") == 0)
    return set_duration_ms(ci, 0.01, 86400, &cfg->interval_ms);
  if(strcasecmp(k, "Memory") == 0)
    return set_memory(ci, &cfg->memory, memory_seen);
  if(strcasecmp(k, "HeartbeatInterval") == 0)
    return set_duration_ms32(ci, 0.1, 3600, &cfg->heartbeat_ms);
  if(strcasecmp(k, "HandshakeTimeout") == 0)
    return set_duration_ms32(ci, 0.1, 600, &cfg->handshake_timeout_ms);
  if(strcasecmp(k, "DumpTimeout") == 0)
    return set_duration_ms32(ci, 1, 86400, &cfg->dump_timeout_ms);
  if(strcasecmp(k, "MaxFrameSize") == 0) {
    rc = set_size(ci, 4096, 1024u * 1024u * 1024u, &u64);
    if(rc == 0)
      cfg->max_frame = u64;
    return rc;
  }
  return -ENOENT;
}

/* Whether the detector or the capture module owns key: tried on scratch
 * configurations, so that a key of theirs given in the wrong shape is
 * reported as such and not as unknown. */
static int known_elsewhere(const char *key)
{
  mdp_detector_config d;
  mdp_capture_config_t c;

  mdp_detector_config_init(&d);
  mdp_capture_config_init(&c);
  return mdp_detector_config_set(&d, key, "", NULL, 0) != -ENOENT ||
         mdp_capture_config_set(&c, key, "", NULL, 0) != -ENOENT;
}

/* Detector and capture keys take their value as text, as replay does. */
static int apply_text(mdp_config *cfg, const oconfig_item_t *ci)
{
  char text[MDP_CAPTURE_PATH_MAX], err[512] = "";
  int rc;

  if(!known_elsewhere(ci->key))
    return -ENOENT;
  rc = value_text(ci, text, sizeof(text));
  if(rc)
    return rc;
  rc = mdp_detector_config_set(&cfg->detector, ci->key, text, err, sizeof(err));
  if(rc == -ENOENT)
    rc = mdp_capture_config_set(&cfg->capture, ci->key, text, err, sizeof(err));
  if(rc)
    ERROR("memdiag plugin: %s", err[0] ? err : ci->key);
  return rc;
}

int mdp_config_apply(mdp_config *cfg, const oconfig_item_t *block)
{
  int memory_seen = 0;
  int failed = 0;

  for(int i = 0; i < block->children_num; i++) {
    const oconfig_item_t *ci = &block->children[i];
    int rc = apply_own(cfg, ci, &memory_seen);

    if(rc == -ENOENT)
      rc = apply_text(cfg, ci);
    /* Keep going: one start should name every bad key, not the first. */
    if(rc == -ENOENT)
      ERROR("memdiag plugin: unknown configuration key \"%s\" in <Plugin memdiag> "
            "(see docs/configuration.md for the keys)",
            ci->key);
    if(rc)
      failed = 1;
  }
  return failed ? -EINVAL : 0;
}

int mdp_config_check(const mdp_config *cfg)
{
  char err[512] = "";
  int rc = 0;

  if(!cfg->tls_certificate || !cfg->tls_key || !cfg->tls_ca) {
    ERROR("memdiag plugin: %s is required: the plugin speaks mutual TLS only "
          "(conf/memdiag-certs makes a CA and key pairs)",
          !cfg->tls_certificate ? "TLSCertificate"
          : !cfg->tls_key       ? "TLSKey"
                                : "TLSCA");
    return -EINVAL;
  }
  if(cfg->socket_group) {
    char *end;
    errno = 0;
    (void)strtoul(cfg->socket_group, &end, 10);
    if((errno || *end != '\0') && getgrnam(cfg->socket_group) == NULL) {
      ERROR("memdiag plugin: SocketGroup \"%s\": no such group", cfg->socket_group);
      return -EINVAL;
    }
  }
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
