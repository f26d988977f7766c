/* memdiag plugin: the <Plugin memdiag> block (prefix mdp_config_), the
 * glue's dispatcher. Each module owns its keys, parsed from its own table
 * (keys/keys.h): the server (socket, TLS, connections, frames,
 * heartbeats), the sampler (Interval, Memory), the relay (DumpTimeout), the
 * detector, the capture module and ship (CaptureCommand). This file only
 * turns each collectd value into text and hands the key to the module
 * whose table holds it; an unknown key is an error naming it.
 *
 * Parsing is strict: a bad value is an error naming the key, and the
 * plugin refuses to start rather than guess.
 *
 * Ownership: mdp_config is a caller-owned struct; mdp_config_init fills
 * defaults, mdp_config_free releases the strings the modules' configs own.
 */
#ifndef MDP_CONFIG_H
#define MDP_CONFIG_H

#include "capture/capture.h"
#include "detector/detector.h"
#include "relay/relay.h"
#include "server/server_config.h"
#include "workers/sampler.h"

struct oconfig_item_s;

typedef struct mdp_config {
  mdp_server_config server;
  mdp_sampler_config sampler;
  mdp_relay_config relay;
  mdp_detector_config detector;
  mdp_capture_config_t capture; /* with ship's CaptureCommand keys in capture.command */
} mdp_config;

void mdp_config_init(mdp_config *cfg);
void mdp_config_free(mdp_config *cfg);

/* Apply one <Plugin memdiag> block. Returns 0 or -EINVAL; every error is
 * logged with ERROR("memdiag plugin: ...") naming the key. */
int mdp_config_apply(mdp_config *cfg, const struct oconfig_item_s *block);

/* Checks that need every key (required TLS files, detector and capture
 * cross-checks). Returns 0 or -EINVAL (logged). */
int mdp_config_check(const mdp_config *cfg);

#endif
