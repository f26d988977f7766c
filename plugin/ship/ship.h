/* memdiag plugin: CaptureCommand, a program run once per finished capture
 * (prefix mdp_ship_).
 *
 * A capture folder must leave the host before the host or its container is
 * recycled. CaptureCommand names a program (rclone to object storage, for
 * example) that the plugin runs after every capture, complete or not, with
 * the folder as its one argument:
 *
 *   CaptureCommand "/usr/local/bin/memdiag-ship"   absolute path; default: none
 *   CaptureCommandTimeout "1h"                     then SIGTERM, SIGKILL 5 s later
 *   CaptureCommandUser "memdiag-ship"              user (name or number) it runs as;
 *                                                  default: collectd's (root)
 *
 * The program runs with a small fixed environment, as cron would run it:
 * PATH, HOME, USER, LOGNAME of its user, MEMDIAG_FOLDER, MEMDIAG_WORKER,
 * MEMDIAG_PID, MEMDIAG_REASON and MEMDIAG_STATUS ("complete" or
 * "incomplete"). Worker-chosen text (the name, the reason) reaches it with
 * control characters replaced by '?'. It starts in "/" in a process group of
 * its own, with stdin on /dev/null; its stdout and stderr are logged line by
 * line (printable text only, at most MDP_SHIP_LOG_LINES lines per run).
 * When it exits, whatever it left running in its group is killed, so the
 * timeout bounds everything it started. With CaptureCommandUser the child
 * takes the user's groups, gid and uid (in that order) before exec, and
 * checks that root cannot be regained.
 *
 * What that user reads: the store gives every folder and every file the
 * plugin creates the user's primary group (0750, 0640) as it makes them
 * (store/capfs.h, "Sharing"; the capture module passes the group from
 * mdp_ship_reader_gid). Before the command runs, the files the worker
 * wrote itself (DumpTransfer file) get that group and 0640 too, but only
 * a regular file owned by the worker's uid with exactly one link, checked
 * on a descriptor opened without following links: a file of anyone else's
 * that the worker moved into its folder (a root-owned secret renamed there
 * as heap-1.json) keeps its owner, group and mode. When the user is the
 * worker's own (or shares its group), each run logs a warning: that worker
 * could stop, trace or alter every upload (docs/security.md).
 *
 * One runner thread runs the commands one at a time in the order captures
 * finished, so uploads never compete with each other and a slow one delays
 * only later uploads, never the server thread. At most
 * MDP_SHIP_QUEUE_MAX wait; one more is not run and reported.
 *
 * Threading: mdp_ship_submit may be called from any thread;
 * mdp_ship_start and mdp_ship_stop from the plugin's init and
 * shutdown. The hooks are called on the runner thread, without any lock of
 * this module held.
 *
 * Ownership: strings passed in are copied. The config is copied by
 * mdp_ship_start. Results handed to hooks live for the call only.
 */
#ifndef MDP_SHIP_H
#define MDP_SHIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MDP_SHIP_PATH_MAX      4096
#define MDP_SHIP_QUEUE_MAX     64
#define MDP_SHIP_LOG_LINES     100  /* output lines logged per run */
#define MDP_SHIP_LINE_MAX      1024 /* longer output lines are logged in pieces */
#define MDP_SHIP_KILL_GRACE_MS 5000

typedef struct mdp_ship_config {
  char program[MDP_SHIP_PATH_MAX]; /* CaptureCommand; "" = none */
  uint64_t timeout_ms;             /* CaptureCommandTimeout */
  char user[256];                  /* CaptureCommandUser; "" = collectd's user */
} mdp_ship_config_t;

void mdp_ship_config_init(mdp_ship_config_t *cfg);

/* Set one key from its text value. Returns 0, -ENOENT when the key is not
 * one of the three above, or -EINVAL with a message naming the key. */
int mdp_ship_config_set(mdp_ship_config_t *cfg, const char *key, const char *value, char *err,
                        size_t errlen);

/* The table entry of key when it is one of the three above
 * (case-insensitive; detector/keys.h), else NULL. */
struct mdp_key;
const struct mdp_key *mdp_ship_config_key(const char *key);

/* Checks against the system: the program is an executable regular file,
 * the user exists. Returns 0 or -EINVAL with a message in err. */
int mdp_ship_config_check(const mdp_ship_config_t *cfg, char *err, size_t errlen);

/* Who the command runs as (ship_config.c; the runner uses it). */
#define MDP_SHIP_GROUPS_MAX 256
typedef struct mdp_ship_identity {
  bool drop; /* CaptureCommandUser given: the child changes identity */
  uid_t uid;
  gid_t gid;
  gid_t groups[MDP_SHIP_GROUPS_MAX];
  int n_groups;
  char name[256];
  char home[MDP_SHIP_PATH_MAX];
} mdp_ship_identity_t;

/* Look up `user` (name or number; "" for the current user). Returns 0 or
 * -EINVAL with a message naming CaptureCommandUser. */
int mdp_ship_identity(const char *user, mdp_ship_identity_t *id, char *err, size_t errlen);

/* One finished capture. */
typedef struct mdp_ship_job {
  const char *folder;   /* the capture folder, made by the plugin */
  const char *worker;   /* the worker's name (from its hello) */
  const char *instance; /* its collectd plugin instance (for notifications) */
  pid_t pid;
  const char *reason;
  bool complete;
  uid_t uid; /* the worker's user and group, from the kernel: whose files */
  gid_t gid; /* in the folder are the worker's own */
} mdp_ship_job_t;

/* How one run ended. */
typedef struct mdp_ship_result {
  const char *folder, *worker, *instance; /* the job's, sanitised */
  pid_t pid;
  bool ok;           /* ran and exited with status 0 */
  bool shutdown;     /* not run, or stopped, because the plugin is stopping */
  double seconds;    /* from fork to exit; 0 when it never ran */
  char summary[512]; /* "exited with status 0", "timed out after 60 s; killed", ... */
} mdp_ship_result_t;

/* Log levels handed to the log hook (collectd's and syslog's numbers). */
#define MDP_SHIP_LOG_WARNING 4
#define MDP_SHIP_LOG_INFO    6

typedef struct mdp_ship_hooks {
  /* A line for the log: the program's output (printable) or the runner's
   * own message; without the plugin's "memdiag plugin: " prefix. */
  void (*log)(int level, const char *line, void *ctx);
  /* Every job ends here once: ran (ok or not), refused or dropped. */
  void (*finished)(const mdp_ship_result_t *res, void *ctx);
  void *ctx;
} mdp_ship_hooks_t;

/* Start the runner (nothing when cfg->program is empty). Resolves the user
 * again. Returns 0, or a negative errno with a message in err. */
int mdp_ship_start(const mdp_ship_config_t *cfg, const mdp_ship_hooks_t *hooks, char *err,
                   size_t errlen);

/* The group the command's user reads captures with (its primary group):
 * 0 with *gid set when CaptureCommandUser names a user other than root,
 * else -ENOENT (no command, or it runs as root, which reads everything).
 * Call after mdp_ship_start. */
int mdp_ship_reader_gid(gid_t *gid);

/* Queue a job. Returns 0 (queued, or no CaptureCommand configured),
 * -ESHUTDOWN (not started, or stopping), -ENOSPC (MDP_SHIP_QUEUE_MAX
 * already wait) or -ENOMEM. On an error the job is not run and nothing is
 * reported: the caller says so. */
int mdp_ship_submit(const mdp_ship_job_t *job);

/* Kill the command that runs (SIGTERM to its group, SIGKILL after
 * MDP_SHIP_KILL_GRACE_MS), report the queued jobs as not run, and join
 * the runner. Safe to call when not started. */
void mdp_ship_stop(void);

#endif
