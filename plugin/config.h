/* memdiag plugin: the <Plugin memdiag> block (prefix mdp_config_).
 *
 * Parsing is strict: an unknown key or a bad value is an error naming the
 * key, and the plugin refuses to start rather than guess. Detector keys go to
 * mdp_detector_config_set, capture keys to mdp_capture_config_set, both as
 * text; every size, duration and count is parsed by detector/units.h.
 *
 * Ownership: mdp_config is a caller-owned struct; mdp_config_init fills
 * defaults, mdp_config_free releases the strings it owns.
 */
#ifndef MDP_CONFIG_H
#define MDP_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "detector/detector.h"
#include "capture/capture.h"

struct oconfig_item_s;

enum {
  MDP_MEM_RSS = 1u << 0,
  MDP_MEM_PSS = 1u << 1,
  MDP_MEM_PRIVATE = 1u << 2,
  MDP_MEM_SWAP = 1u << 3,
};

#define MDP_DEFAULT_SOCKET "supervisor.ipc"

typedef struct mdp_config {
  char *socket;                  /* Socket: path, relative to collectd's working dir */
  unsigned socket_mode;          /* SocketMode: permission bits */
  char *socket_group;            /* SocketGroup: name or number; NULL keeps the owner's */
  char *tls_certificate;         /* TLSCertificate (required) */
  char *tls_key;                 /* TLSKey (required) */
  char *tls_ca;                  /* TLSCA (required) */
  unsigned max_connections;      /* MaxConnections */
  uint64_t interval_ms;          /* Interval: 0 = collectd's interval */
  unsigned memory;               /* Memory: MDP_MEM_* */
  uint32_t heartbeat_ms;         /* HeartbeatInterval told to workers */
  uint32_t handshake_timeout_ms; /* HandshakeTimeout: TLS + hello */
  uint32_t dump_timeout_ms;      /* DumpTimeout: default for dumps */
  uint64_t max_frame;            /* MaxFrameSize */
  mdp_detector_config detector;
  mdp_capture_config_t capture;
} mdp_config;

void mdp_config_init(mdp_config *cfg);
void mdp_config_free(mdp_config *cfg);

/* Apply one <Plugin memdiag> block. Returns 0 or -EINVAL; every error is
 * logged with ERROR("memdiag plugin: ...") naming the key. */
int mdp_config_apply(mdp_config *cfg, const struct oconfig_item_s *block);

/* Checks that need every key (required TLS files, detector and capture
 * cross-checks). Returns 0 or -EINVAL (logged). */
int mdp_config_check(const mdp_config *cfg);

/* "rss pss" for logs and docs. */
void mdp_config_memory_text(unsigned memory, char *buf, size_t len);

#endif
