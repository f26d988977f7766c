/* memdiag plugin: what a capture folder holds and how old it is, as MaxUse
 * counts them (prefix mdp_capfs_; internal to plugin/store/).
 *
 * A worker owns its folder: it may link one file 40 times, make
 * subdirectories and set the folder's mtime. So each file counts once by
 * (device, inode), subdirectories are walked, and the age is the time
 * memdiag wrote into the folder's name, which the worker cannot rename.
 *
 * Threading: none of its own (capfs calls it under its lock). Ownership:
 * the caller owns the set and frees set->v.
 */
#ifndef MDP_CAPFS_WALK_H
#define MDP_CAPFS_WALK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

/* Files already counted: open addressing, grown at half full. Start it
 * zeroed. */
typedef struct {
  struct {
    dev_t dev;
    ino_t ino;
  } * v;
  size_t cap, n;
} mdp_capfs_inodes;

#define WALK_DEPTH_MAX 8

/* The UTC time in a folder name worker-PID-YYYYmmddTHHMMSSZ[-N] (-N:
 * nanoseconds N, later in the same second); false when it holds none. */
bool mdp_capfs_name_time(const char *name, struct timespec *when);

/* Adds to *bytes the blocks of the regular files below the directory fd
 * (taken over and closed), each inode once, subdirectories down to
 * WALK_DEPTH_MAX; *has_dir says whether fd holds a directory. */
void mdp_capfs_tree_bytes(int fd, int depth, mdp_capfs_inodes *seen, uint64_t *bytes,
                          bool *has_dir);

#endif
