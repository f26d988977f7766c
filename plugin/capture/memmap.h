/* memdiag plugin: a worker's memory map by kind (prefix mdp_memmap_), read
 * from /proc/<pid>/smaps by the plugin when a heap dump step ends: the
 * evidence for growth outside the Ruby heap (malloc arenas are anonymous
 * mappings, the brk heap is [heap]).
 *
 * pid is the worker's, as its connection's SO_PEERCRED gave it (never a
 * number the worker sent); only totals are kept.
 *
 * Threading: no state; any thread. Ownership: nothing allocated.
 */
#ifndef MDP_CAPTURE_MEMMAP_H
#define MDP_CAPTURE_MEMMAP_H

#include <sys/types.h>

#include "capture/plan/plan.h"

/* Fills out (Rss summed per kind). 0 or a negative errno (-ESRCH: gone). */
int mdp_memmap_read(pid_t pid, mdp_memmap_t *out);

/* The same from smaps text (for tests): 0 or -EINVAL. */
int mdp_memmap_parse(const char *text, mdp_memmap_t *out);

#endif
