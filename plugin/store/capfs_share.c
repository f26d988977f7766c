/* Capture folders and the plugin's files in them shared with the reader
 * group (CaptureCommandUser's): see capfs.h, "Sharing". */
#include "capfs.h"

#include <errno.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capfs_share.h"

/* No lock: read while capfs.c holds its mutex and from the stream writer. */
static _Atomic(gid_t) reader = (gid_t)-1;

void mdp_capfs_set_reader(gid_t gid) { atomic_store(&reader, gid); }

int mdp_capfs_share_new(int fd)
{
  gid_t g = atomic_load(&reader);

  if(g == (gid_t)-1)
    return 0;
  if(fchown(fd, (uid_t)-1, g) != 0 || fchmod(fd, 0640) != 0)
    return -errno;
  return 0;
}

int mdp_capfs_own_folder(int fd, uid_t uid, gid_t gid)
{
  gid_t g = atomic_load(&reader);
  bool shared = g != (gid_t)-1;

  /* The umask may have narrowed mkdirat's mode: exactly this is wanted. */
  if(fchown(fd, uid, shared ? g : gid) != 0 || fchmod(fd, shared ? 0750 : 0700) != 0)
    return -errno;
  return 0;
}
