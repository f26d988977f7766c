/* memdiag plugin: internal to plugin/store (capfs.c): a new capture
 * folder's owner, group and mode, after the reader group (capfs.h,
 * "Sharing"). Threading: any thread, no lock taken. */
#ifndef MDP_CAPFS_SHARE_H
#define MDP_CAPFS_SHARE_H

#include <sys/types.h>

/* fd, a folder just made: owner uid, group gid and 0700, or the reader
 * group and 0750 when there is one. Returns 0 or a negative errno. */
int mdp_capfs_own_folder(int fd, uid_t uid, gid_t gid);

#endif
