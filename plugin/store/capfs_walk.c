/* Capture folders as MaxUse counts them: see capfs_walk.h. */
#include "capfs_walk.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Files already counted, by (device, inode): a file linked 40 times is on
 * disk once. Open addressing, grown at half full. */

/* Adds the inode; true when it was not there yet (or the set cannot grow:
 * then it is counted, which errs on the side of counting). */
static bool inode_add(mdp_capfs_inodes *set, dev_t dev, ino_t ino)
{
  if(set->n * 2 >= set->cap) {
    size_t cap = set->cap ? set->cap * 2 : 256;
    mdp_capfs_inodes grown = {calloc(cap, sizeof(*grown.v)), cap, 0};
    if(!grown.v)
      return true;
    for(size_t i = 0; i < set->cap; i++)
      if(set->v[i].ino)
        inode_add(&grown, set->v[i].dev, set->v[i].ino);
    free(set->v);
    *set = grown;
  }
  size_t i = ((size_t)ino * 0x9E3779B97F4A7C15ull ^ (size_t)dev) & (set->cap - 1);
  for(; set->v[i].ino; i = (i + 1) & (set->cap - 1))
    if(set->v[i].ino == ino && set->v[i].dev == dev)
      return false;
  set->v[i].dev = dev;
  set->v[i].ino = ino ? ino : 1;
  set->n++;
  return true;
}

/* The UTC time memdiag put in a folder's name (worker-PID-YYYYmmddTHHMMSSZ,
 * perhaps followed by -N): the worker owns its folder and may set its
 * mtime, but it cannot rename it. False when the name holds none. */
bool mdp_capfs_name_time(const char *name, struct timespec *when)
{
  struct tm tm;
  for(const char *p = strrchr(name, 'Z'); p && p - name >= 15; p = NULL) {
    const char *t = p - 15;
    memset(&tm, 0, sizeof(tm));
    const char *rest = strptime(t, "%Y%m%dT%H%M%SZ", &tm);
    if(t[-1] != '-' || !rest || (*rest && *rest != '-'))
      return false;
    when->tv_sec = timegm(&tm);
    when->tv_nsec = 0;
    /* -2, -3 ...: later in the same second */
    if(*rest == '-')
      when->tv_nsec = strtol(rest + 1, NULL, 10);
    return true;
  }
  return false;
}

/* Bytes on disk of the regular files below the directory fd (taken over),
 * each inode once, subdirectories walked down to WALK_DEPTH_MAX.
 * *has_dir says whether fd holds a directory. */
void mdp_capfs_tree_bytes(int fd, int depth, mdp_capfs_inodes *seen, uint64_t *bytes, bool *has_dir)
{
  DIR *d = fdopendir(fd);
  struct stat st;

  if(!d) {
    close(fd);
    return;
  }
  for(struct dirent *e; (e = readdir(d));) {
    if(strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
       fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    if(S_ISREG(st.st_mode) && inode_add(seen, st.st_dev, st.st_ino))
      *bytes += (uint64_t)st.st_blocks * 512u;
    if(S_ISDIR(st.st_mode)) {
      bool below = false;
      *has_dir = true;
      int sub = depth < WALK_DEPTH_MAX
                    ? openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
                    : -1;
      if(sub >= 0)
        mdp_capfs_tree_bytes(sub, depth + 1, seen, bytes, &below);
    }
  }
  closedir(d);
}
