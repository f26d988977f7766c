/* CaptureCommand: its keys and who it runs as (see command.h). */
#include "ship.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keys/keys.h"
#include "md/text.h"

#define DEFAULT_TIMEOUT_MS (3600 * 1000ull)

void mdp_ship_config_init(mdp_ship_config_t *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->timeout_ms = DEFAULT_TIMEOUT_MS;
}

#define AT(field) MDP_KEY_AT(mdp_ship_config_t, field)

static const mdp_key ship_keys[] = {
    /* No PATH search and no shell: root runs exactly this file. */
    {.name = "CaptureCommand", .kind = MDP_KEY_PATH, AT(program), .want = "an absolute path"},
    {.name = "CaptureCommandTimeout",
     .kind = MDP_KEY_MS,
     AT(timeout_ms),
     .min = 1,
     .max = 7 * 86400},
    {.name = "CaptureCommandUser", .kind = MDP_KEY_TEXT, AT(user), .want = "a user name or number"},
    {.name = NULL},
};

const mdp_key *mdp_ship_config_key(const char *key) { return mdp_keys_find(ship_keys, key); }

int mdp_ship_config_set(mdp_ship_config_t *cfg, const char *key, const char *value, char *err,
                        size_t errlen)
{
  mdp_key_value v = {.key = key, .text = value, .quoting = MDP_KEY_QUOTED};
  return mdp_keys_set(ship_keys, cfg, &v, err, errlen);
}

/* Resolved in the parent, because after fork in a threaded process only
 * async-signal-safe calls are allowed, and initgroups() (NSS, malloc) is
 * not one; getgrouplist() here and setgroups() in the child amount to the
 * same. */
int mdp_ship_identity(const char *user, mdp_ship_identity_t *id, char *err, size_t errlen)
{
  struct passwd pw, *found = NULL;
  char buf[16384];
  char *end;
  int rc;

  memset(id, 0, sizeof(*id));
  if(!user[0]) { /* collectd's own user */
    id->uid = getuid();
    id->gid = getgid();
    rc = getpwuid_r(id->uid, &pw, buf, sizeof(buf), &found);
    snprintf(id->name, sizeof(id->name), "%s", found ? pw.pw_name : "root");
    snprintf(id->home, sizeof(id->home), "%s", found ? pw.pw_dir : "/");
    return 0;
  }
  unsigned long n = strtoul(user, &end, 10);
  if(*user >= '0' && *user <= '9' && !*end && n <= UINT_MAX)
    rc = getpwuid_r((uid_t)n, &pw, buf, sizeof(buf), &found);
  else
    rc = getpwnam_r(user, &pw, buf, sizeof(buf), &found);
  if(!found) {
    md_seterr(err, errlen, "CaptureCommandUser \"%s\": %s", user,
              rc ? strerror(rc) : "no such user");
    return -EINVAL;
  }
  id->drop = true;
  id->uid = pw.pw_uid;
  id->gid = pw.pw_gid;
  snprintf(id->name, sizeof(id->name), "%s", pw.pw_name);
  snprintf(id->home, sizeof(id->home), "%s", pw.pw_dir && pw.pw_dir[0] ? pw.pw_dir : "/");
  id->n_groups = MDP_SHIP_GROUPS_MAX;
  if(getgrouplist(pw.pw_name, pw.pw_gid, id->groups, &id->n_groups) < 0) {
    md_seterr(err, errlen, "CaptureCommandUser \"%s\": in more than %d groups", user,
              MDP_SHIP_GROUPS_MAX);
    return -EINVAL;
  }
  return 0;
}

int mdp_ship_config_check(const mdp_ship_config_t *cfg, char *err, size_t errlen)
{
  struct stat st;
  mdp_ship_identity_t id;

  if(!cfg->program[0]) {
    if(cfg->user[0]) {
      md_seterr(err, errlen, "CaptureCommandUser is set but CaptureCommand is not");
      return -EINVAL;
    }
    return 0;
  }
  if(stat(cfg->program, &st) != 0 || !S_ISREG(st.st_mode) || !(st.st_mode & 0111)) {
    md_seterr(err, errlen, "CaptureCommand \"%s\": %s", cfg->program,
              errno && !S_ISREG(st.st_mode) ? strerror(errno) : "not an executable file");
    return -EINVAL;
  }
  return mdp_ship_identity(cfg->user, &id, err, errlen);
}
