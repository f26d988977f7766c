/* The sampler's keys: see sampler.h. */
#include "sampler.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "md/text.h"

static const mdp_key_word memory_kinds[] = {
    {"rss", MDP_MEM_RSS},
    {"pss", MDP_MEM_PSS},
    {"private", MDP_MEM_PRIVATE},
    {"swap", MDP_MEM_SWAP},
    {NULL, 0},
};

void mdp_sampler_config_init(mdp_sampler_config *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->memory = MDP_MEM_RSS;
}

void mdp_sampler_memory_text(unsigned memory, char *buf, size_t len)
{
  size_t used = 0;

  buf[0] = '\0';
  for(const mdp_key_word *w = memory_kinds; w->word; w++) {
    if(!(memory & (unsigned)w->value))
      continue;
    int n = snprintf(buf + used, len - used, "%s%s", used ? " " : "", w->word);
    if(n < 0 || (size_t)n >= len - used)
      break;
    used += (size_t)n;
  }
}

/* Memory: one or more words, on one line or repeated lines; the first
 * Memory line replaces the default. field is the whole config. */
static int set_memory(const mdp_key *k, void *field, const mdp_key_value *v, char *err,
                      size_t errlen)
{
  mdp_sampler_config *cfg = field;
  unsigned mask = cfg->memory_seen ? cfg->memory : 0;
  char words[256], *save = NULL;

  snprintf(words, sizeof(words), "%s", v->text);
  if(!strtok_r(words, " ", &save)) {
    md_seterr(err, errlen, "%s needs one or more of rss, pss, private, swap", k->name);
    return -EINVAL;
  }
  snprintf(words, sizeof(words), "%s", v->text);
  save = NULL;
  for(char *w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
    unsigned bit = 0;
    for(const mdp_key_word *m = memory_kinds; m->word; m++)
      if(strcasecmp(w, m->word) == 0)
        bit = (unsigned)m->value;
    if(!bit) {
      md_seterr(err, errlen, "%s \"%s\" is not one of rss, pss, private, swap", k->name, w);
      return -EINVAL;
    }
    mask |= bit;
  }
  cfg->memory = mask;
  cfg->memory_seen++;
  return 0;
}

static const mdp_key sampler_keys[] = {
    {.name = "Interval",
     .kind = MDP_KEY_MS,
     MDP_KEY_AT(mdp_sampler_config, interval_ms),
     .min = 0.01,
     .max = 86400},
    {.name = "Memory",
     .kind = MDP_KEY_CUSTOM,
     .offset = 0,
     .size = sizeof(mdp_sampler_config),
     .parse = set_memory,
     .arity = MDP_KEY_SEVERAL},
    {.name = NULL},
};

const mdp_key *mdp_sampler_config_key(const char *key) { return mdp_keys_find(sampler_keys, key); }

int mdp_sampler_config_set(mdp_sampler_config *cfg, const mdp_key_value *v, char *err,
                           size_t errlen)
{
  return mdp_keys_set(sampler_keys, cfg, v, err, errlen);
}
