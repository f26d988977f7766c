/* Capture configuration keys: defaults, parsing, checks (pure code). */
#include "capture.h"
#include "capture/plan/plan.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "keys/keys.h"
#include "keys/units.h"
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
  cfg->fork_margin = 64ull * 1024 * 1024;
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

static int set_signal(const mdp_key *k, void *field, const mdp_key_value *v, char *err,
                      size_t errlen)
{
  const char *name = v->text;
  char *end;
  long n = strtol(name, &end, 10);

  if(*name && !*end) {
    if(n > 0 && n < NSIG)
      return *(int *)field = (int)n, 0;
  } else {
    if(strncasecmp(name, "SIG", 3) == 0)
      name += 3;
    for(int s = 1; s < NSIG; s++) {
      const char *abbrev = sigabbrev_np(s);
      if(abbrev && strcasecmp(abbrev, name) == 0)
        return *(int *)field = s, 0;
    }
  }
  md_seterr(err, errlen,
            "%s \"%s\" is not a signal name (TERM, INT, QUIT, USR1, KILL...) or number", k->name,
            v->text);
  return -EINVAL;
}

/* CaptureDirectory: an absolute path with room below it for the capture
 * folders' names; trailing slashes dropped. */
static int set_directory(const mdp_key *k, void *field, const mdp_key_value *v, char *err,
                         size_t errlen)
{
  char *dir = field;
  size_t len = strlen(v->text);

  if(v->text[0] != '/' || len + 128 >= k->size) {
    md_seterr(err, errlen, "%s \"%s\" is not an absolute path", k->name, v->text);
    return -EINVAL;
  }
  memcpy(dir, v->text, len + 1);
  while(len > 1 && dir[len - 1] == '/')
    dir[--len] = '\0';
  return 0;
}

/* Plan: the step names, each known (err names a bad one). */
static int set_plan(const mdp_key *k, void *field, const mdp_key_value *v, char *err, size_t errlen)
{
  mdp_step_kind_t kinds[MDP_CAPTURE_PLAN_MAX];
  size_t n;
  int rc;

  if(strlen(v->text) >= k->size) {
    md_seterr(err, errlen, "%s \"%.40s...\" is not a list of steps shorter than %zu characters",
              k->name, v->text, k->size);
    return -EINVAL;
  }
  rc = mdp_plan_parse(v->text, kinds, MDP_CAPTURE_PLAN_MAX, &n, err, errlen);
  if(rc == 0)
    memcpy(field, v->text, strlen(v->text) + 1);
  return rc;
}

/* DumpCompression: zstd or none, kept as a bool. */
static int set_compression(const mdp_key *k, void *field, const mdp_key_value *v, char *err,
                           size_t errlen)
{
  if(strcasecmp(v->text, "zstd") == 0 || strcasecmp(v->text, "none") == 0) {
    *(bool *)field = strcasecmp(v->text, "zstd") == 0;
    return 0;
  }
  md_seterr(err, errlen, "%s \"%s\" is not zstd or none", k->name, v->text);
  return -EINVAL;
}

static const mdp_key_word dump_modes[] = {
    {"inline", MEMDIAG__V1__DUMP_MODE__DUMP_MODE_INLINE},
    {"fork", MEMDIAG__V1__DUMP_MODE__DUMP_MODE_FORK},
    {"auto", MEMDIAG__V1__DUMP_MODE__DUMP_MODE_AUTO},
    {NULL, 0},
};

static const mdp_key_word transfers[] = {
    {"auto", MDP_TRANSFER_AUTO},
    {"stream", MDP_TRANSFER_STREAM},
    {"file", MDP_TRANSFER_FILE},
    {NULL, 0},
};

#define AT(field) MDP_KEY_AT(mdp_capture_config_t, field)

static const mdp_key capture_keys[] = {
    {.name = "CaptureDirectory", .kind = MDP_KEY_CUSTOM, AT(directory), .parse = set_directory},
    {.name = "Plan", .kind = MDP_KEY_CUSTOM, AT(plan), .parse = set_plan},
    {.name = "TraceAllocations", .kind = MDP_KEY_BOOL, AT(trace_allocations)},
    {.name = "DumpMode",
     .kind = MDP_KEY_WORD,
     AT(dump_mode),
     .words = dump_modes,
     .want = "inline, fork or auto"},
    {.name = "DumpShapes", .kind = MDP_KEY_BOOL, AT(dump_shapes)},
    {.name = "DumpSpaceFactor",
     .kind = MDP_KEY_NUMBER,
     AT(dump_space_factor),
     .min = 0,
     .max = 100},
    {.name = "KeepFree", .kind = MDP_KEY_SIZE, AT(keep_free), .min = 0, .max = MDP_UNITS_NO_MAX},
    {.name = "ForkMargin",
     .kind = MDP_KEY_SIZE,
     AT(fork_margin),
     .min = 0,
     .max = MDP_UNITS_NO_MAX},
    {.name = "MaxUse",
     .kind = MDP_KEY_SIZE,
     AT(max_use),
     .min = 0,
     .max = MDP_UNITS_NO_MAX}, /* 0: no bound */
    {.name = "CaptureInterval",
     .kind = MDP_KEY_MS,
     AT(interval_ms),
     .min = 0.001,
     .max = 1e9}, /* at least a millisecond */
    {.name = "CaptureConcurrency", .kind = MDP_KEY_COUNT, AT(concurrency), .min = 1, .max = 64},
    {.name = "CaptureCooldown",
     .kind = MDP_KEY_MS,
     AT(cooldown_ms),
     .min = 0,
     .max = 1e9}, /* 0: none */
    {.name = "RestartAfterCapture", .kind = MDP_KEY_BOOL, AT(restart_after_capture)},
    {.name = "RestartSignal", .kind = MDP_KEY_CUSTOM, AT(restart_signal), .parse = set_signal},
    /* 0: the server's default per operation */
    {.name = "StepTimeout",
     .kind = MDP_KEY_MS,
     AT(step_timeout_ms),
     .min = 0,
     .max = UINT32_MAX / 1000.0},
    /* 0: restart at the dump's timeout */
    {.name = "RestartDeadline",
     .kind = MDP_KEY_MS,
     AT(restart_deadline_ms),
     .min = 0,
     .max = 86400},
    {.name = "DumpTransfer",
     .kind = MDP_KEY_WORD,
     AT(dump_transfer),
     .words = transfers,
     .want = "auto, stream or file"},
    {.name = "DumpCompression",
     .kind = MDP_KEY_CUSTOM,
     AT(dump_compression),
     .parse = set_compression},
    {.name = "DumpCompressionLevel",
     .kind = MDP_KEY_COUNT,
     AT(dump_compression_level),
     .min = 1,
     .max = 19},
    {.name = "Analyze", .kind = MDP_KEY_BOOL, AT(analyze)},
    {.name = "AnalyzeMaxMemory",
     .kind = MDP_KEY_SIZE,
     AT(analyze_max_memory),
     .min = 0,
     .max = MDP_UNITS_NO_MAX}, /* 0: no cap */
    {.name = NULL},
};

const mdp_key *mdp_capture_config_key(const char *key) { return mdp_keys_find(capture_keys, key); }

int mdp_capture_config_set(mdp_capture_config_t *cfg, const char *key, const char *value, char *err,
                           size_t errlen)
{
  mdp_key_value v = {.key = key, .text = value, .quoting = MDP_KEY_QUOTED};
  return mdp_keys_set(capture_keys, cfg, &v, err, errlen);
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
