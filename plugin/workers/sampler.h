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

#include <stdint.h>
#include <sys/types.h>

typedef struct mdp_sample {
  uint64_t rss, pss, private_bytes, swap; /* bytes; 0 when not read */
} mdp_sample;

/* Open the /proc/PID file that gives the figures in `memory` (MDP_MEM_*
 * from config.h). Returns the fd or a negative errno. */
int mdp_sampler_open(pid_t pid, unsigned memory);

/* Read the figures in `memory` through an fd from mdp_sampler_open with the
 * same `memory`. Returns 0, or a negative errno: -ESRCH when the process is
 * gone, -EIO when the file does not parse. */
int mdp_sampler_read(int fd, unsigned memory, mdp_sample *out);

#endif
