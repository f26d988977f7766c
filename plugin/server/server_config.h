/* memdiag plugin: the server's configuration (prefix mdp_server_config_):
 * the socket, its mode and group, the TLS files, the bounds on connections
 * and frames, and the heartbeat and handshake timings. Parsed from the
 * server's own key table (detector/keys.h); plugin/config.c hands it the
 * keys of the <Plugin memdiag> block that are its.
 *
 * Ownership: a caller-owned struct; mdp_server_config_init fills the
 * defaults, mdp_server_config_free releases the strings it owns.
 */
#ifndef MDP_SERVER_CONFIG_H
#define MDP_SERVER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "keys/keys.h"

#define MDP_DEFAULT_SOCKET "supervisor.ipc"

typedef struct mdp_server_config {
  char *socket;                  /* Socket: path, relative to collectd's working dir */
  unsigned socket_mode;          /* SocketMode: permission bits */
  char *socket_group;            /* SocketGroup: name or number; NULL keeps the owner's */
  char *tls_certificate;         /* TLSCertificate (required) */
  char *tls_key;                 /* TLSKey (required) */
  char *tls_ca;                  /* TLSCA (required) */
  unsigned max_connections;      /* MaxConnections */
  uint32_t heartbeat_ms;         /* HeartbeatInterval told to workers */
  uint32_t handshake_timeout_ms; /* HandshakeTimeout: TLS + hello */
  uint64_t max_frame;            /* MaxFrameSize */
  int allocation_sampling;       /* AllocationSampling told to workers; -1: not set */
} mdp_server_config;

void mdp_server_config_init(mdp_server_config *cfg);
void mdp_server_config_free(mdp_server_config *cfg);

/* The table entry of key when it is one of the server's, else NULL. */
const mdp_key *mdp_server_config_key(const char *key);

/* Set one key (see mdp_keys_set): 0, -ENOENT, -EINVAL with a message
 * naming the key in err, or -ENOMEM. */
int mdp_server_config_set(mdp_server_config *cfg, const mdp_key_value *v, char *err, size_t errlen);

/* What needs every key: the three TLS files, a SocketGroup that exists.
 * 0 or -EINVAL with a message in err. */
int mdp_server_config_check(const mdp_server_config *cfg, char *err, size_t errlen);

#endif
