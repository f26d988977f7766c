/* memdiag plugin: the walk that opens CaptureDirectory (prefix mdp_capfs_,
 * private to capture_fs.c).
 *
 * Root removes folders in CaptureDirectory, so whoever could change where
 * its path leads could steer those removals. The walk starts at "/" and
 * opens one plain name at a time below the descriptor of the one before,
 * never following a symbolic link, and accepts a component only if it
 * belongs to root (or to the user collectd runs as) and no one else may
 * write to it; a sticky directory (/tmp, /var/tmp) is accepted above
 * CaptureDirectory, because there nobody but its owner may rename or remove
 * what root made.
 *
 * Also the path helpers capture_fs.h declares (mdp_capfs_sanitize,
 * mdp_capfs_inside).
 *
 * Ownership: the descriptor returned belongs to the caller. Threading:
 * reentrant.
 */
#ifndef MDP_CAPFS_ROOT_H
#define MDP_CAPFS_ROOT_H

#include <stddef.h>

/* "/a//b/./c/" -> "/a/b/c" into out[0..outlen). Relative paths and ".."
 * are refused (-EINVAL), too long ones too (-ENAMETOOLONG); err (may be
 * NULL) says why, naming CaptureDirectory. */
int mdp_capfs_normalise(const char *in, char *out, size_t outlen, char *err, size_t errlen);

/* Walk from "/" to path (normalised), creating missing components 0711,
 * and return an O_RDONLY descriptor of the last one (>= 0) or a negative
 * errno with a message in err naming CaptureDirectory, the component, its
 * owner and mode: -EPERM (another owner, or writable by group or others),
 * -ELOOP (a symbolic link), -ENOTDIR, or what the system said. */
int mdp_capfs_walk(const char *path, char *err, size_t errlen);

/* The same checks on CaptureDirectory's descriptor alone (is it still
 * root's, and writable by no one else?). Returns 0 or -EPERM/-ENOTDIR. */
int mdp_capfs_check_dir(int fd, const char *root, char *err, size_t errlen);

#endif
