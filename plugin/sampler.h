/* memdiag plugin: a worker's memory from /proc (prefix mdp_sampler_).
 *
 * Each worker keeps an O_PATH handle on its /proc/PID directory, opened when
 * it registers: reads through it fail once that process is gone, so a PID
 * reused by an unrelated process is never sampled in its place.
 * rss alone comes from statm (one short line); pss, private and swap need
 * smaps_rollup, which the kernel computes by walking the mappings (costlier;
 * it also carries Rss, so statm is then not read).
 *
 * Ownership: the caller owns the directory fd and closes it.
 */
#ifndef MDP_SAMPLER_H
#define MDP_SAMPLER_H

#include <stdint.h>
#include <sys/types.h>

typedef struct mdp_sample {
  uint64_t rss, pss, private_bytes, swap; /* bytes; 0 when not read */
} mdp_sample;

/* Open /proc/PID. Returns the fd or a negative errno. */
int mdp_sampler_open(pid_t pid);

/* Read the figures in `memory` (MDP_MEM_* from config.h). Returns 0, or a
 * negative errno: -ESRCH when the process is gone, -EIO when the file does
 * not parse. */
int mdp_sampler_read(int proc_dir, unsigned memory, mdp_sample *out);

#endif
