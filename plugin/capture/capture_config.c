/* Capture configuration keys: defaults, parsing, checks (pure code). */
#include "capture.h"
#include "capture/plan/plan.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "detector/units.h"
#include "md/text.h"
#include "memdiag.pb-c.h"

#define DEFAULT_PLAN "trace_start dump gc_start wait scheduler threads gc_stop trace_stop wait dump"

void mdp_capture_config_init(mdp_capture_config_t *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  snprintf(cfg->directory, sizeof(cfg->directory), "/var/tmp/memdiag");
  snprintf(cfg->plan, sizeof(cfg->plan), "%s", DEFAULT_PLAN);
  cfg->trace_allocations = false;
  cfg->dump_mode = MEMDIAG__V1__DUMP_MODE__DUMP_MODE_AUTO;
  cfg->dump_shapes = true;
  cfg->dump_space_factor = 3.0;
  cfg->keep_free = 1024ull * 1024 * 1024;
  cfg->max_use = 0;
  cfg->interval_ms = 60000;
  cfg->concurrency = 1;
  cfg->cooldown_ms = 3600000;
  cfg->restart_after_capture = false;
  cfg->restart_signal = SIGTERM;
  cfg->step_timeout_ms = 0;
  cfg->restart_deadline_ms = 600000;
  cfg->dump_transfer = MDP_TRANSFER_AUTO;
  cfg->dump_compression = true;
  cfg->dump_compression_level = 1;
  cfg->analyze = true;
  cfg->analyze_max_memory = 2048ull * 1024 * 1024;
  mdp_ship_config_init(&cfg->command);
}

static int parse_bool(const char *v, bool *out)
{
  static const char *yes[] = {"true", "yes", "on", "1"}, *no[] = {"false", "no", "off", "0"};
  for(size_t i = 0; i < 4; i++) {
    if(strcasecmp(v, yes[i]) == 0)
      return *out = true, 0;
    if(strcasecmp(v, no[i]) == 0)
      return *out = false, 0;
  }
  return -EINVAL;
}

static int parse_signal(const char *v, int *out)
{
  char *end;
  long n = strtol(v, &end, 10);
  if(*v && !*end) {
    if(n <= 0 || n >= NSIG)
      return -EINVAL;
    return *out = (int)n, 0;
  }
  if(strncasecmp(v, "SIG", 3) == 0)
    v += 3;
  for(int s = 1; s < NSIG; s++) {
    const char *name = sigabbrev_np(s);
    if(name && strcasecmp(name, v) == 0)
      return *out = s, 0;
  }
  return -EINVAL;
}

/* Values that units.h parses: it writes its own message naming the key. */
static int set_units(mdp_capture_config_t *cfg, const char *key, const char *value, char *err,
                     size_t errlen)
{
  uint64_t ms;
  unsigned n;
  int rc;

  if(strcasecmp(key, "DumpSpaceFactor") == 0)
    return mdp_units_parse(MDP_UNITS_NUMBER, key, value, 0, 100, &cfg->dump_space_factor, err,
                           errlen);
  if(strcasecmp(key, "KeepFree") == 0)
    return mdp_units_size(key, value, 0, UINT64_MAX, &cfg->keep_free, err, errlen);
  if(strcasecmp(key, "AnalyzeMaxMemory") == 0) /* 0: no cap */
    return mdp_units_size(key, value, 0, UINT64_MAX, &cfg->analyze_max_memory, err, errlen);
  if(strcasecmp(key, "MaxUse") == 0) /* 0: no bound */
    return mdp_units_size(key, value, 0, UINT64_MAX, &cfg->max_use, err, errlen);
  if(strcasecmp(key, "CaptureInterval") == 0) /* above 0: at least a millisecond */
    return mdp_units_ms(key, value, 0.001, 1e9, &cfg->interval_ms, err, errlen);
  if(strcasecmp(key, "CaptureCooldown") == 0) /* 0: none */
    return mdp_units_ms(key, value, 0, 1e9, &cfg->cooldown_ms, err, errlen);
  if(strcasecmp(key, "RestartDeadline") == 0) /* 0: restart at the dump's timeout */
    return mdp_units_ms(key, value, 0, 86400, &cfg->restart_deadline_ms, err, errlen);
  if(strcasecmp(key, "StepTimeout") == 0) { /* 0: the server's default per operation */
    rc = mdp_units_ms(key, value, 0, UINT32_MAX / 1000.0, &ms, err, errlen);
    if(rc == 0)
      cfg->step_timeout_ms = (uint32_t)ms;
    return rc;
  }
  if(strcasecmp(key, "DumpCompressionLevel") == 0) {
    rc = mdp_units_count(key, value, 1, 19, &n, err, errlen);
    if(rc == 0)
      cfg->dump_compression_level = (int)n;
    return rc;
  }
  if(strcasecmp(key, "CaptureConcurrency") == 0) {
    rc = mdp_units_count(key, value, 1, 64, &n, err, errlen);
    if(rc == 0)
      cfg->concurrency = n;
    return rc;
  }
  return -ENOENT;
}

int mdp_capture_config_set(mdp_capture_config_t *cfg, const char *key, const char *value, char *err,
                           size_t errlen)
{
  int rc = set_units(cfg, key, value, err, errlen);
  const char *want = "";

  if(rc != -ENOENT)
    return rc;
  rc = mdp_ship_config_set(&cfg->command, key, value, err, errlen);
  if(rc != -ENOENT)
    return rc;
  rc = 0;
  if(strcasecmp(key, "CaptureDirectory") == 0) {
    want = "an absolute path";
    if(value[0] != '/' || strlen(value) >= sizeof(cfg->directory) - 128)
      rc = -EINVAL;
    else {
      snprintf(cfg->directory, sizeof(cfg->directory), "%s", value);
      size_t l = strlen(cfg->directory);
      while(l > 1 && cfg->directory[l - 1] == '/')
        cfg->directory[--l] = '\0';
    }
  } else if(strcasecmp(key, "Plan") == 0) {
    mdp_step_kind_t kinds[MDP_CAPTURE_PLAN_MAX];
    size_t n;
    if(strlen(value) >= sizeof(cfg->plan)) {
      want = "a list of steps shorter than 512 characters";
      rc = -EINVAL;
    } else if((rc = mdp_plan_parse(value, kinds, MDP_CAPTURE_PLAN_MAX, &n, err, errlen))) {
      return rc; /* err names the bad step */
    } else {
      snprintf(cfg->plan, sizeof(cfg->plan), "%s", value);
    }
  } else if(strcasecmp(key, "TraceAllocations") == 0) {
    want = "true or false";
    rc = parse_bool(value, &cfg->trace_allocations);
  } else if(strcasecmp(key, "Analyze") == 0) {
    want = "true or false";
    rc = parse_bool(value, &cfg->analyze);
  } else if(strcasecmp(key, "DumpShapes") == 0) {
    want = "true or false";
    rc = parse_bool(value, &cfg->dump_shapes);
  } else if(strcasecmp(key, "RestartAfterCapture") == 0) {
    want = "true or false";
    rc = parse_bool(value, &cfg->restart_after_capture);
  } else if(strcasecmp(key, "DumpMode") == 0) {
    want = "inline, fork or auto";
    if(strcasecmp(value, "inline") == 0)
      cfg->dump_mode = MEMDIAG__V1__DUMP_MODE__DUMP_MODE_INLINE;
    else if(strcasecmp(value, "fork") == 0)
      cfg->dump_mode = MEMDIAG__V1__DUMP_MODE__DUMP_MODE_FORK;
    else if(strcasecmp(value, "auto") == 0)
      cfg->dump_mode = MEMDIAG__V1__DUMP_MODE__DUMP_MODE_AUTO;
    else
      rc = -EINVAL;
  } else if(strcasecmp(key, "DumpTransfer") == 0) {
    want = "auto, stream or file";
    if(strcasecmp(value, "auto") == 0)
      cfg->dump_transfer = MDP_TRANSFER_AUTO;
    else if(strcasecmp(value, "stream") == 0)
      cfg->dump_transfer = MDP_TRANSFER_STREAM;
    else if(strcasecmp(value, "file") == 0)
      cfg->dump_transfer = MDP_TRANSFER_FILE;
    else
      rc = -EINVAL;
  } else if(strcasecmp(key, "DumpCompression") == 0) {
    want = "zstd or none";
    if(strcasecmp(value, "none") == 0)
      cfg->dump_compression = false;
    else if(strcasecmp(value, "zstd") == 0)
      cfg->dump_compression = true;
    else
      rc = -EINVAL;
  } else if(strcasecmp(key, "RestartSignal") == 0) {
    want = "a signal name (TERM, INT, QUIT, USR1, KILL...) or number";
    rc = parse_signal(value, &cfg->restart_signal);
  } else {
    return -ENOENT;
  }
  if(rc) {
    rc = -EINVAL;
    md_seterr(err, errlen, "%s \"%s\" is not %s", key, value, want);
  }
  return rc;
}

int mdp_capture_config_check(const mdp_capture_config_t *cfg, char *err, size_t errlen)
{
  mdp_step_kind_t kinds[MDP_CAPTURE_PLAN_MAX];
  size_t n;
  int rc = mdp_plan_parse(cfg->plan, kinds, MDP_CAPTURE_PLAN_MAX, &n, err, errlen);
  if(rc)
    return rc;
  if(cfg->directory[0] != '/') {
    md_seterr(err, errlen, "CaptureDirectory: must be an absolute path");
    return -EINVAL;
  }
  return mdp_ship_config_check(&cfg->command, err, errlen);
}
