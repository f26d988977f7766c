/* The relay's key: see relay.h. */
#include "relay.h"

static const mdp_key relay_keys[] = {
    {.name = "DumpTimeout",
     .kind = MDP_KEY_MS,
     MDP_KEY_AT(mdp_relay_config, dump_timeout_ms),
     .min = 1,
     .max = 86400},
    {.name = NULL},
};

void mdp_relay_config_init(mdp_relay_config *cfg) { cfg->dump_timeout_ms = 600000; }

const mdp_key *mdp_relay_config_key(const char *key) { return mdp_keys_find(relay_keys, key); }

int mdp_relay_config_set(mdp_relay_config *cfg, const mdp_key_value *v, char *err, size_t errlen)
{
  return mdp_keys_set(relay_keys, cfg, v, err, errlen);
}
