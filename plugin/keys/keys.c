/* A module's keys as one table: see keys.h. */
#include "keys.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "md/text.h"
#include "units.h"

const mdp_key *mdp_keys_find(const mdp_key *table, const char *key)
{
  for(const mdp_key *k = table; key && k->name; k++)
    if(strcasecmp(k->name, key) == 0)
      return k;
  return NULL;
}

static int bad(const mdp_key *k, const mdp_key_value *v, const char *want, char *err, size_t errlen)
{
  md_seterr(err, errlen, "%s \"%s\" is not %s", k->name, v->text, want);
  return -EINVAL;
}

static int set_bool(const mdp_key *k, bool *out, const mdp_key_value *v, char *err, size_t errlen)
{
  static const char *yes[] = {"true", "yes", "on", "1"}, *no[] = {"false", "no", "off", "0"};

  for(size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
    if(strcasecmp(v->text, yes[i]) == 0)
      return *out = true, 0;
    if(strcasecmp(v->text, no[i]) == 0)
      return *out = false, 0;
  }
  return bad(k, v, "true or false", err, errlen);
}

static int set_word(const mdp_key *k, void *field, const mdp_key_value *v, char *err, size_t errlen)
{
  for(const mdp_key_word *w = k->words; w && w->word; w++) {
    if(strcasecmp(v->text, w->word) == 0) {
      int value = w->value;
      memcpy(field, &value, sizeof(value));
      return 0;
    }
  }
  return bad(k, v, k->want, err, errlen);
}

/* MDP_KEY_TEXT: non-empty and shorter than its array; MDP_KEY_PATH: an
 * absolute path as well. */
static int set_text(const mdp_key *k, char *field, const mdp_key_value *v, char *err, size_t errlen)
{
  char want[96];
  size_t len = strlen(v->text);

  if(!len || len >= k->size || (k->kind == MDP_KEY_PATH && v->text[0] != '/')) {
    if(k->want)
      snprintf(want, sizeof(want), "%s", k->want);
    else
      snprintf(want, sizeof(want), "%s shorter than %zu characters",
               k->kind == MDP_KEY_PATH ? "an absolute path" : "a text", k->size);
    return bad(k, v, want, err, errlen);
  }
  memcpy(field, v->text, len + 1);
  return 0;
}

static int set_strdup(const mdp_key *k, char **field, const mdp_key_value *v, char *err,
                      size_t errlen)
{
  char *copy;

  if(v->quoting != MDP_KEY_QUOTED || v->text[0] == '\0') {
    md_seterr(err, errlen, "%s needs a non-empty quoted string", k->name);
    return -EINVAL;
  }
  copy = strdup(v->text);
  if(!copy)
    return -ENOMEM;
  free(*field);
  *field = copy;
  return 0;
}

/* The key's name and bounds, as the units parser checks them. */
static mdp_units_bounds bounds(const mdp_key *k)
{
  return (mdp_units_bounds){.key = k->name, .min = k->min, .max = k->max};
}

static int set_ms(const mdp_key *k, void *field, const mdp_key_value *v, char *err, size_t errlen)
{
  uint64_t ms;
  int rc = mdp_units_ms(v->text, bounds(k), &ms, err, errlen);

  if(rc)
    return rc;
  if(k->size == sizeof(uint32_t)) {
    uint32_t ms32 = (uint32_t)ms;
    memcpy(field, &ms32, sizeof(ms32));
  } else {
    memcpy(field, &ms, sizeof(ms));
  }
  return 0;
}

static int set_count(const mdp_key *k, void *field, const mdp_key_value *v, char *err,
                     size_t errlen)
{
  unsigned n;
  int rc = mdp_units_count(v->text, bounds(k), &n, err, errlen);

  if(rc == 0)
    memcpy(field, &n, sizeof(n)); /* unsigned or int: the same size, n fits both */
  return rc;
}

static int set_double(const mdp_key *k, mdp_units_kind kind, double *field, const mdp_key_value *v,
                      char *err, size_t errlen)
{
  return mdp_units_parse(kind, v->text, bounds(k), field, err, errlen);
}

int mdp_keys_set(const mdp_key *table, void *cfg, const mdp_key_value *v, char *err, size_t errlen)
{
  const mdp_key *k = mdp_keys_find(table, v->key);
  void *field;

  if(!k)
    return -ENOENT;
  if(!v->text) {
    md_seterr(err, errlen, "%s: missing value", k->name);
    return -EINVAL;
  }
  field = (char *)cfg + k->offset;
  switch(k->kind) {
  case MDP_KEY_SIZE: return mdp_units_size(v->text, bounds(k), field, err, errlen);
  case MDP_KEY_MS: return set_ms(k, field, v, err, errlen);
  case MDP_KEY_DURATION: return set_double(k, MDP_UNITS_DURATION, field, v, err, errlen);
  case MDP_KEY_RATE: return set_double(k, MDP_UNITS_RATE, field, v, err, errlen);
  case MDP_KEY_FRACTION: return set_double(k, MDP_UNITS_FRACTION, field, v, err, errlen);
  case MDP_KEY_NUMBER: return set_double(k, MDP_UNITS_NUMBER, field, v, err, errlen);
  case MDP_KEY_COUNT: return set_count(k, field, v, err, errlen);
  case MDP_KEY_BOOL: return set_bool(k, field, v, err, errlen);
  case MDP_KEY_WORD: return set_word(k, field, v, err, errlen);
  case MDP_KEY_TEXT:
  case MDP_KEY_PATH: return set_text(k, field, v, err, errlen);
  case MDP_KEY_STRDUP: return set_strdup(k, field, v, err, errlen);
  case MDP_KEY_CUSTOM: return k->parse(k, field, v, err, errlen);
  }
  return -EINVAL;
}

void mdp_keys_free(const mdp_key *table, void *cfg)
{
  for(const mdp_key *k = table; k->name; k++) {
    if(k->kind != MDP_KEY_STRDUP)
      continue;
    char **field = (char **)((char *)cfg + k->offset);
    free(*field);
    *field = NULL;
  }
}

void mdp_keys_names(const mdp_key *table, char *buf, size_t len)
{
  size_t used = 0;

  if(len)
    buf[0] = '\0';
  for(const mdp_key *k = table; k->name && used < len; k++) {
    int n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", k->name);
    if(n < 0)
      break;
    used += (size_t)n;
  }
}
