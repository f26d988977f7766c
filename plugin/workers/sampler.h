/* memdiag plugin: a worker's memory from /proc (prefix mdp_sampler_).
 *
 * Each worker keeps one open /proc/PID file, opened when it registers and
 * re-read from offset 0 at every sample (about a third of the cost of
 * open + read + close). Reads through it fail with ESRCH once that process
 * is gone, so a PID reused by an unrelated process is never sampled in its
 * place. rss alone comes from statm (one short line); pss, private and swap
 * need smaps_rollup, which the kernel computes by walking the mappings
 * (costlier; it also carries Rss, so statm is then not read).
 *
 * Ownership: the caller owns the fd and closes it.
 */
#ifndef MDP_SAMPLER_H
#define MDP_SAMPLER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "keys/keys.h"

/* The figures a sample may hold (Memory). */
enum {
  MDP_MEM_RSS = 1u << 0,
  MDP_MEM_PSS = 1u << 1,
  MDP_MEM_PRIVATE = 1u << 2,
  MDP_MEM_SWAP = 1u << 3,
};

/* The sampler's keys (sampler_config.c): how often, and what. */
typedef struct mdp_sampler_config {
  uint64_t interval_ms; /* Interval: 0 = collectd's interval */
  unsigned memory;      /* Memory: MDP_MEM_* */
  unsigned memory_seen; /* Memory lines so far: the first replaces the default, later ones add */
} mdp_sampler_config;

void mdp_sampler_config_init(mdp_sampler_config *cfg);

/* The table entry of key when it is one of the sampler's, else NULL. */
const mdp_key *mdp_sampler_config_key(const char *key);

/* Set one key (see mdp_keys_set); Memory takes its words as one text
 * ("rss pss"). 0, -ENOENT, or -EINVAL with a message in err. */
int mdp_sampler_config_set(mdp_sampler_config *cfg, const mdp_key_value *v, char *err,
                           size_t errlen);

/* "rss pss" for logs and docs. */
void mdp_sampler_memory_text(unsigned memory, char *buf, size_t len);

/* One read of a worker's figures. The figure the detector watches becomes,
 * with the time of the read, an mdp_sample (sample/sample.h). */
typedef struct mdp_sampler_reading {
  uint64_t rss, pss, private_bytes, swap; /* bytes; 0 when not read */
} mdp_sampler_reading;

/* Open the /proc/PID file that gives the figures in `memory` (MDP_MEM_*
 * above). Returns the fd or a negative errno. */
int mdp_sampler_open(pid_t pid, unsigned memory);

/* Read the figures in `memory` through an fd from mdp_sampler_open with the
 * same `memory`. Returns 0, or a negative errno: -ESRCH when the process is
 * gone, -EIO when the file does not parse. */
int mdp_sampler_read(int fd, unsigned memory, mdp_sampler_reading *out);

#endif
