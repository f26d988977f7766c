/* memdiagctl command line (prefix mdctl_): global options, the verb and its
 * key=value arguments, parsed and checked before anything is sent.
 *
 * Ownership: mdctl_cmd only points into argv and the environment; it owns
 * nothing and needs no cleanup.
 */
#ifndef MDCTL_CMD_H
#define MDCTL_CMD_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
  MDCTL_KEY_CONNECTION_ID = 1 << 0,
  MDCTL_KEY_PATH = 1 << 1,
  MDCTL_KEY_SHAPES = 1 << 2,
  MDCTL_KEY_MODE = 1 << 3,
  MDCTL_KEY_KEEP = 1 << 4,
};

typedef enum {
  MDCTL_KIND_WORKERS,
  MDCTL_KIND_STATUS,
  MDCTL_KIND_CAPTURE,
  MDCTL_KIND_OPERATE,
} mdctl_kind;

typedef struct {
  const char *name;
  mdctl_kind kind;
  int request_op;    /* MEMDIAG__V1__REQUEST__OP_* for MDCTL_KIND_OPERATE */
  unsigned keys;     /* MDCTL_KEY_* accepted */
  unsigned required; /* MDCTL_KEY_* that must be given */
  unsigned default_timeout_s;
  const char *synopsis; /* arguments, for usage text */
  const char *summary;
} mdctl_verb;

typedef enum {
  MDCTL_ACTION_RUN,
  MDCTL_ACTION_HELP,
  MDCTL_ACTION_VERSION,
} mdctl_action;

typedef struct {
  mdctl_action action;
  const mdctl_verb *verb;
  const char *socket;
  const char *cert;
  const char *key;
  const char *ca;
  int json;
  unsigned timeout_s; /* 0: the verb's default */
  unsigned given;     /* MDCTL_KEY_* present */
  uint64_t connection_id;
  const char *path;
  int shapes;
  int mode; /* MEMDIAG__V1__DUMP_MODE__* */
  int keep; /* *_start: outlive the plugin's connection to the worker */
} mdctl_cmd;

/* Every verb, terminated by an entry with name == NULL. */
extern const mdctl_verb mdctl_verbs[];

/* Parse argv (argv[0] is the first argument after the program name).
 * Options come before or after the verb. Returns 0, or MD_EINVAL with a
 * message naming the offending argument in err. */
int mdctl_cmd_parse(mdctl_cmd *cmd, int argc, char **argv, char *err, size_t errlen);

/* Seconds this command waits for the plugin's answer. */
unsigned mdctl_cmd_timeout_s(const mdctl_cmd *cmd);

void mdctl_usage(FILE *out);

#endif
