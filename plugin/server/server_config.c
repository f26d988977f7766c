/* The server's keys: see server_config.h. */
#include "server_config.h"

#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>

#include "md/text.h"

void mdp_server_config_init(mdp_server_config *cfg)
{
  memset(cfg, 0, sizeof(*cfg));
  cfg->socket_mode = 0660;
  cfg->max_connections = 1024;
  cfg->heartbeat_ms = 5000;
  cfg->handshake_timeout_ms = 5000;
  cfg->max_frame = 16u * 1024u * 1024u;
  cfg->allocation_sampling = -1; /* the workers keep their own */
}

/* SocketMode: a bare number in collectd's config is decimal; the mode is
 * octal text. */
static int set_mode(const mdp_key *k, void *field, const mdp_key_value *v, char *err, size_t errlen)
{
  char *end;
  unsigned long mode;

  if(v->quoting != MDP_KEY_QUOTED) {
    md_seterr(err, errlen, "%s needs a quoted octal string such as \"0660\"", k->name);
    return -EINVAL;
  }
  errno = 0;
  mode = strtoul(v->text, &end, 8);
  if(errno || end == v->text || *end != '\0' || mode > 0777) {
    md_seterr(err, errlen, "%s \"%s\" is not an octal permission such as \"0660\"", k->name,
              v->text);
    return -EINVAL;
  }
  *(unsigned *)field = (unsigned)mode;
  return 0;
}

#define AT(field) MDP_KEY_AT(mdp_server_config, field)

static const mdp_key server_keys[] = {
    {.name = "Socket", .kind = MDP_KEY_STRDUP, AT(socket)},
    {.name = "SocketMode", .kind = MDP_KEY_CUSTOM, AT(socket_mode), .parse = set_mode},
    {.name = "SocketGroup", .kind = MDP_KEY_STRDUP, AT(socket_group)},
    {.name = "TLSCertificate", .kind = MDP_KEY_STRDUP, AT(tls_certificate)},
    {.name = "TLSKey", .kind = MDP_KEY_STRDUP, AT(tls_key)},
    {.name = "TLSCA", .kind = MDP_KEY_STRDUP, AT(tls_ca)},
    {.name = "MaxConnections", .kind = MDP_KEY_COUNT, AT(max_connections), .min = 1, .max = 65536},
    {.name = "HeartbeatInterval", .kind = MDP_KEY_MS, AT(heartbeat_ms), .min = 0.1, .max = 3600},
    {.name = "HandshakeTimeout",
     .kind = MDP_KEY_MS,
     AT(handshake_timeout_ms),
     .min = 0.1,
     .max = 600},
    {.name = "MaxFrameSize",
     .kind = MDP_KEY_SIZE,
     AT(max_frame),
     .min = 4096,
     .max = 1024.0 * 1024 * 1024},
    {.name = "AllocationSampling",
     .kind = MDP_KEY_COUNT,
     AT(allocation_sampling),
     .min = 0,
     .max = 100000},
    {.name = NULL},
};

void mdp_server_config_free(mdp_server_config *cfg) { mdp_keys_free(server_keys, cfg); }

const mdp_key *mdp_server_config_key(const char *key) { return mdp_keys_find(server_keys, key); }

int mdp_server_config_set(mdp_server_config *cfg, const mdp_key_value *v, char *err, size_t errlen)
{
  return mdp_keys_set(server_keys, cfg, v, err, errlen);
}

int mdp_server_config_check(const mdp_server_config *cfg, char *err, size_t errlen)
{
  if(!cfg->tls_certificate || !cfg->tls_key || !cfg->tls_ca) {
    md_seterr(err, errlen,
              "%s is required: the plugin speaks mutual TLS only "
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
      md_seterr(err, errlen, "SocketGroup \"%s\": no such group", cfg->socket_group);
      return -EINVAL;
    }
  }
  return 0;
}
