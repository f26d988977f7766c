/* memdiagctl argument parsing: one table of verbs, checked before any
 * connection is made so that a typo never reaches a worker. */
#include "cmd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "md/text.h"
#include "md/wire.h"

#define ID          MDCTL_KEY_CONNECTION_ID
#define PATH        MDCTL_KEY_PATH
#define SHAPES      MDCTL_KEY_SHAPES
#define MODE        MDCTL_KEY_MODE
#define KEEP        MDCTL_KEY_KEEP
#define DUMP_WAIT_S (24u * 3600u)

/* Dumps of a large, busy worker take minutes (70 s for 300 MB measured
 * inline). The plugin bounds every operation itself (DumpTimeout, up to a
 * day) and answers "timeout", so heap dumps wait as long as the plugin may;
 * a ping does not. */
const mdctl_verb mdctl_verbs[] = {
    {"workers", MDCTL_KIND_WORKERS, 0, 0, 0, 15, "",
     "list the registered workers and their memory"},
    {"status", MDCTL_KIND_STATUS, 0, 0, 0, 15, "",
     "plugin uptime, each worker's detector state, captures in progress"},
    {"capture", MDCTL_KIND_CAPTURE, 0, ID, ID, 30, "connection_id=N",
     "start the capture plan on a worker now"},
    {"ping", MDCTL_KIND_OPERATE, MEMDIAG__V1__REQUEST__OP_PING, ID, ID, 15, "connection_id=N",
     "check that a worker answers"},
    {"memory_dump", MDCTL_KIND_OPERATE, MEMDIAG__V1__REQUEST__OP_MEMORY_DUMP,
     ID | PATH | SHAPES | MODE, ID, DUMP_WAIT_S,
     "connection_id=N [path=P] [shapes=false] [mode=inline|fork|auto]",
     "dump the worker's heap as newline-delimited JSON: to path in the worker, or without "
     "path streamed to CaptureDirectory/manual/ on the plugin's side"},
    {"allocation_trace_start", MDCTL_KIND_OPERATE, MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_START,
     ID | KEEP, ID, 60, "connection_id=N [keep=true]", "record allocation sites from now on"},
    {"allocation_trace_stop", MDCTL_KIND_OPERATE, MEMDIAG__V1__REQUEST__OP_ALLOCATION_TRACE_STOP,
     ID | PATH | SHAPES, ID, DUMP_WAIT_S, "connection_id=N [path=P] [shapes=false]",
     "stop tracing, dump the heap with allocation sites (to path, or without path to "
     "CaptureDirectory/manual/), clear them"},
    {"garbage_profile_start", MDCTL_KIND_OPERATE, MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_START,
     ID | KEEP, ID, 60, "connection_id=N [keep=true]", "start the GC profiler"},
    {"garbage_profile_stop", MDCTL_KIND_OPERATE, MEMDIAG__V1__REQUEST__OP_GARBAGE_PROFILE_STOP,
     ID | PATH, ID, 300, "connection_id=N [path=P]",
     "stop the GC profiler; write or print its report"},
    {"scheduler_dump", MDCTL_KIND_OPERATE, MEMDIAG__V1__REQUEST__OP_SCHEDULER_DUMP, ID | PATH, ID,
     300, "connection_id=N [path=P]",
     "the fiber scheduler's tasks (or every fiber); write or print"},
    {"thread_dump", MDCTL_KIND_OPERATE, MEMDIAG__V1__REQUEST__OP_THREAD_DUMP, ID | PATH, ID, 300,
     "connection_id=N [path=P]", "every thread with its status and backtrace; write or print"},
    {"heap_profile", MDCTL_KIND_OPERATE, MEMDIAG__V1__REQUEST__OP_HEAP_PROFILE, ID | PATH, ID, 600,
     "connection_id=N [path=P]",
     "the worker's sampled live objects by allocation site, a gzip'd pprof profile: to path in "
     "the worker, or without path streamed to CaptureDirectory/manual/"},
    {NULL, 0, 0, 0, 0, 0, NULL, NULL},
};

#define MAX_TIMEOUT_S (7u * 24u * 3600u)

static const mdctl_verb *find_verb(const char *name)
{
  for(const mdctl_verb *v = mdctl_verbs; v->name; v++)
    if(strcmp(v->name, name) == 0)
      return v;
  return NULL;
}

/* Strict unsigned decimal: no sign, no spaces, no trailing text. */
static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
  char *end = NULL;
  unsigned long long v;

  if(*s < '0' || *s > '9')
    return MD_EINVAL;
  errno = 0;
  v = strtoull(s, &end, 10);
  if(errno || *end || v > max)
    return MD_EINVAL;
  *out = v;
  return MD_OK;
}

/* "true" or "false" for key; anything else is an error that names it. */
static int parse_bool(const char *key, const char *val, int *out, char *err, size_t errlen)
{
  if(strcmp(val, "true") == 0 || strcmp(val, "false") == 0) {
    *out = val[0] == 't';
    return 0;
  }
  md_seterr(err, errlen, "%s must be true or false, not '%s'", key, val);
  return -1;
}

static int parse_key(mdctl_cmd *cmd, const char *arg, char *err, size_t errlen)
{
  const char *eq = strchr(arg, '=');
  const char *val;
  size_t klen;
  unsigned key;
  uint64_t id;

  if(!eq || eq == arg) {
    md_seterr(err, errlen, "argument '%s' is not key=value (try: %s %s)", arg, cmd->verb->name,
              cmd->verb->synopsis);
    return MD_EINVAL;
  }
  klen = (size_t)(eq - arg);
  val = eq + 1;
  if(klen == 13 && strncmp(arg, "connection_id", klen) == 0)
    key = ID;
  else if(klen == 4 && strncmp(arg, "path", klen) == 0)
    key = PATH;
  else if(klen == 6 && strncmp(arg, "shapes", klen) == 0)
    key = SHAPES;
  else if(klen == 4 && strncmp(arg, "mode", klen) == 0)
    key = MODE;
  else if(klen == 4 && strncmp(arg, "keep", klen) == 0)
    key = KEEP;
  else
    key = 0;
  if(!(key & cmd->verb->keys)) {
    md_seterr(err, errlen, "%s does not take '%.*s' (usage: %s %s)", cmd->verb->name, (int)klen,
              arg, cmd->verb->name, cmd->verb->synopsis);
    return MD_EINVAL;
  }
  if(cmd->given & key) {
    md_seterr(err, errlen, "'%.*s' given twice", (int)klen, arg);
    return MD_EINVAL;
  }
  cmd->given |= key;
  switch(key) {
  case ID:
    if(parse_u64(val, UINT64_MAX, &id) || id == 0) {
      md_seterr(err, errlen, "connection_id must be a positive integer, not '%s'", val);
      return MD_EINVAL;
    }
    cmd->connection_id = id;
    break;
  case PATH:
    if(!*val) {
      md_seterr(err, errlen, "path= needs a file name");
      return MD_EINVAL;
    }
    cmd->path = val;
    break;
  case SHAPES:
    if(parse_bool("shapes", val, &cmd->shapes, err, errlen))
      return MD_EINVAL;
    break;
  case MODE:
    if(strcmp(val, "inline") == 0)
      cmd->mode = MEMDIAG__V1__DUMP_MODE__DUMP_MODE_INLINE;
    else if(strcmp(val, "fork") == 0)
      cmd->mode = MEMDIAG__V1__DUMP_MODE__DUMP_MODE_FORK;
    else if(strcmp(val, "auto") == 0)
      cmd->mode = MEMDIAG__V1__DUMP_MODE__DUMP_MODE_AUTO;
    else {
      md_seterr(err, errlen, "mode must be inline, fork or auto, not '%s'", val);
      return MD_EINVAL;
    }
    break;
  case KEEP:
    if(parse_bool("keep", val, &cmd->keep, err, errlen))
      return MD_EINVAL;
    break;
  }
  return MD_OK;
}

/* The command line and the argument being read. */
typedef struct {
  int argc;
  char **argv;
  int i;
} args_at;

/* Matches "--name VALUE" and "--name=VALUE"; advances a->i past VALUE. */
static int option_value(const char *name, args_at *a, const char **out, char *err, size_t errlen)
{
  const char *arg = a->argv[a->i];
  size_t n = strlen(name);

  if(strncmp(arg, name, n) != 0)
    return 0;
  if(arg[n] == '=') {
    *out = arg + n + 1;
    return 1;
  }
  if(arg[n] != '\0')
    return 0;
  if(a->i + 1 >= a->argc) {
    md_seterr(err, errlen, "%s needs a value", name);
    return -1;
  }
  *out = a->argv[++a->i];
  return 1;
}

int mdctl_cmd_parse(mdctl_cmd *cmd, int argc, char **argv, char *err, size_t errlen)
{
  const char *env;
  const char *v;
  int rc = MD_EINVAL;
  int m;

  memset(cmd, 0, sizeof(*cmd));
  cmd->action = MDCTL_ACTION_RUN;
  cmd->shapes = 1;
  cmd->mode = MEMDIAG__V1__DUMP_MODE__DUMP_MODE_INLINE;
  env = getenv("MEMDIAG_SOCKET");
  cmd->socket = env && *env ? env : "supervisor.ipc";
  cmd->cert = getenv("MEMDIAG_CERT");
  cmd->key = getenv("MEMDIAG_KEY");
  cmd->ca = getenv("MEMDIAG_CA");

  for(args_at a = {.argc = argc, .argv = argv}; a.i < argc; a.i++) {
    const char *arg = argv[a.i];
    if(strcmp(arg, "--json") == 0) {
      cmd->json = 1;
    } else if(strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0 ||
              (!cmd->verb && strcmp(arg, "help") == 0)) {
      cmd->action = MDCTL_ACTION_HELP;
      return MD_OK;
    } else if(strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0) {
      cmd->action = MDCTL_ACTION_VERSION;
      return MD_OK;
    } else if((m = option_value("--timeout", &a, &v, err, errlen))) {
      uint64_t t;
      if(m < 0)
        goto out;
      if(parse_u64(v, MAX_TIMEOUT_S, &t) || t == 0) {
        md_seterr(err, errlen, "--timeout takes whole seconds (1 to %u), not '%s'", MAX_TIMEOUT_S,
                  v);
        goto out;
      }
      cmd->timeout_s = (unsigned)t;
    } else if((m = option_value("--socket", &a, &cmd->socket, err, errlen)) ||
              (m = option_value("--cert", &a, &cmd->cert, err, errlen)) ||
              (m = option_value("--key", &a, &cmd->key, err, errlen)) ||
              (m = option_value("--ca", &a, &cmd->ca, err, errlen))) {
      if(m < 0)
        goto out;
    } else if(arg[0] == '-' && arg[1] != '\0') {
      md_seterr(err, errlen, "unknown option '%s'", arg);
      goto out;
    } else if(!cmd->verb) {
      cmd->verb = find_verb(arg);
      if(!cmd->verb) {
        md_seterr(err, errlen, "unknown verb '%s'", arg);
        goto out;
      }
    } else {
      rc = parse_key(cmd, arg, err, errlen);
      if(rc)
        goto out;
      rc = MD_EINVAL;
    }
  }
  if(!cmd->verb) {
    md_seterr(err, errlen, "no verb given");
    goto out;
  }
  if(cmd->verb->required & ~cmd->given) {
    unsigned missing = cmd->verb->required & ~cmd->given;
    md_seterr(err, errlen, "%s needs %s (usage: %s %s)", cmd->verb->name,
              (missing & ID) ? "connection_id=N" : "path=P", cmd->verb->name, cmd->verb->synopsis);
    goto out;
  }
  rc = MD_OK;
out:
  return rc;
}

unsigned mdctl_cmd_timeout_s(const mdctl_cmd *cmd)
{
  return cmd->timeout_s ? cmd->timeout_s : cmd->verb->default_timeout_s;
}

void mdctl_usage(FILE *out)
{
  fputs("usage: memdiagctl [OPTIONS] VERB [key=value ...]\n"
        "       memdiagctl replay [Key=Value ...] TRACE.csv\n"
        "       memdiagctl analyze [--json] [--top N] DIR | DUMP DUMP [DUMP]\n"
        "\nVerbs:\n",
        out);
  for(const mdctl_verb *v = mdctl_verbs; v->name; v++)
    fprintf(out, "  %s %s\n      %s\n", v->name, v->synopsis, v->summary);
  fputs("  replay [Key=Value ...] TRACE.csv\n"
        "      run the detector over a recorded series (offline)\n"
        "  analyze [--json] [--top N] [--max-memory MIB] DIR | DUMP DUMP [DUMP]\n"
        "      objects retained between a capture's heap dumps, by class and site (offline)\n"
        "\nOptions (before or after the verb):\n"
        "  --socket PATH   plugin socket (env MEMDIAG_SOCKET; default ./supervisor.ipc)\n"
        "  --cert FILE     operator certificate (env MEMDIAG_CERT)\n"
        "  --key FILE      its private key (env MEMDIAG_KEY)\n"
        "  --ca FILE       CA that signed the plugin's certificate (env MEMDIAG_CA)\n"
        "  --json          machine-readable output\n"
        "  --timeout SEC   how long the worker may take (default depends on the verb)\n"
        "  --help, --version\n"
        "\nExit status: 0 done, 1 failed or refused, 2 usage error.\n",
        out);
}
