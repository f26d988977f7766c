/* memdiag plugin: capture folders, disk space and the manifest
 * (prefix mdp_capfs_).
 *
 * Layout: CaptureDirectory/<worker>-<pid>-<UTC time>/ holds the files the
 * worker writes (heap-N.json, gc.txt, ...) and capture.json, which only
 * memdiag writes. Folders are 0700 and owned by the worker's uid/gid so a
 * worker that is not root can write into its own folder and no other.
 *
 * Sharing (mdp_capfs_set_reader): with a reader group (CaptureCommandUser's)
 * every folder made is given that group and mode 0750, and every file the
 * plugin creates in a folder that group and mode 0640, on its descriptor,
 * as it is created and before a byte is in it. Nothing is shared later by
 * looking at what a folder holds, so a file a worker moved into its folder
 * (a root-owned secret renamed there) keeps its owner, group and mode.
 *
 * Trust: the plugin runs as root and removes folders here, so the module
 * never acts on CaptureDirectory by name after it has opened it. It is
 * opened once, walking from "/" one component at a time without following
 * a symbolic link, and refused unless it and every directory above it
 * belong to root (or to the user collectd runs as) and are writable by no
 * one else; sticky directories such as /tmp and /var/tmp are accepted above
 * it. Every later create, list, prune and manifest write is relative to
 * that descriptor, and a capture folder made here stays open (and is never
 * pruned) until its plan's final manifest is written or it is released.
 *
 * Ownership: the module owns the CaptureDirectory descriptor and one
 * descriptor per capture in progress (mdp_capfs_close releases them all).
 * Every function works on caller-owned buffers otherwise.
 *
 * Threading: every function may be called from any thread; the module's
 * state is behind one internal mutex.
 */
#ifndef MDP_CAPFS_H
#define MDP_CAPFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MDP_CAPFS_MANIFEST "capture.json"

/* Open and check CaptureDirectory (an absolute path), creating missing
 * components 0711 (workers may pass through to their own folder but not
 * list the others) and keep it open. Calling it again with the same path
 * keeps the descriptor; another path replaces it. Returns 0 or a negative
 * errno with a message in err (may be NULL) naming CaptureDirectory and
 * the component at fault, with its owner and mode: -EPERM (owned by another
 * user, or writable by group/others), -ELOOP (a symbolic link), -ENOTDIR,
 * -EINVAL (not absolute, or holds ".."), or what the system said. */
int mdp_capfs_open_root(const char *root, char *err, size_t errlen);

/* mdp_capfs_open_root, then a duplicate of the checked descriptor (the
 * caller closes it), so that what is made below CaptureDirectory outside
 * this module is made below the same directory. Returns it (>= 0) or a
 * negative errno with a message in err. */
int mdp_capfs_root_fd(const char *root, char *err, size_t errlen);

/* The same walk and checks (creating what is missing), but nothing is kept:
 * the check at startup, so that what is mounted there afterwards is what
 * the first capture opens. 0 or a negative errno with a message in err. */
int mdp_capfs_check_root(const char *root, char *err, size_t errlen);

/* mdp_capfs_open_root without the message. */
int mdp_capfs_ensure_root(const char *root);

/* Close CaptureDirectory and every capture folder still open. */
void mdp_capfs_close(void);

/* The group that reads finished captures besides root: CaptureCommandUser's
 * primary group, or (gid_t)-1 for none (the default: folders 0700, files
 * 0600). Set at the capture module's start; folders and files made from
 * then on follow it (see Sharing above). Any thread. */
void mdp_capfs_set_reader(gid_t gid);

/* A file the plugin has just created in a capture folder (fd, still
 * empty): given the reader group and mode 0640, or left 0600 when there is
 * no reader. Never takes the module's mutex. Returns 0 or a negative errno. */
int mdp_capfs_share_new(int fd);

/* Create a new capture folder in root (opened as by mdp_capfs_open_root;
 * never reusing or following an existing entry), 0700, chowned to uid/gid
 * (0750 and the reader group instead of gid when there is a reader),
 * and keep it open as a capture in progress. Its path goes to out.
 * Returns 0 or a negative errno. */
typedef struct mdp_capfs_folder {
  const char *worker; /* the worker's name: the folder is worker-pid-time */
  pid_t pid;
  int64_t now_ms;
  uid_t uid; /* the folder's owner and group */
  gid_t gid;
} mdp_capfs_folder;

int mdp_capfs_make_folder(const char *root, const mdp_capfs_folder *f, char *out, size_t outlen);

/* A descriptor of the capture folder dir (a path mdp_capfs_make_folder
 * gave): a duplicate of the one kept while it runs, else opened below the
 * CaptureDirectory descriptor, never by path. The caller closes it.
 * Returns it or a negative errno. */
int mdp_capfs_folder_fd(const char *dir);

/* The capture in dir (a path mdp_capfs_make_folder gave) is over: close its
 * descriptor, and let prune consider it. Writing a manifest whose plan has
 * finished does the same. Unknown paths are ignored. */
void mdp_capfs_release(const char *dir);

/* A capture folder made by mdp_capfs_make_folder whose capture never began:
 * released as by mdp_capfs_release, and removed if it is still empty (below
 * the CaptureDirectory descriptor). Returns 0 or a negative errno
 * (-ENOTEMPTY: something is in it, and it stays; -EINVAL: not a folder of
 * the open CaptureDirectory). */
int mdp_capfs_discard(const char *dir);

/* Bytes available to unprivileged users on the filesystem of path (root or
 * a capture folder: asked of the open CaptureDirectory). */
int mdp_capfs_avail(const char *path, uint64_t *avail);

/* Bytes allocated on disk (st_blocks, not the apparent size: a sparse file
 * counts what it holds) by the capture folders in root (folders with a
 * manifest). */
int mdp_capfs_usage(const char *root, uint64_t *used);

/* Remove the oldest capture folders (least recently modified first) until
 * the captures hold at most `limit` bytes on disk; one that cannot be
 * removed whole (a directory inside) is passed over. Captures in progress
 * (made by mdp_capfs_make_folder and not yet finished or released) are never
 * removed, nor are the folders named in keep (full paths, n_keep of them),
 * nor anything without a capture.json. *used gets the bytes left; *removed
 * (may be NULL) the number of folders removed. Returns 0 or a negative
 * errno. */
int mdp_capfs_prune(const char *root, uint64_t limit, const char *const *keep, size_t n_keep,
                    uint64_t *used, unsigned *removed);

/* Write dir/name atomically (temporary file, fsync, rename; 0600), dir
 * being a capture folder under the open CaptureDirectory, with what fill
 * writes (it returns 0 or a negative errno). Returns 0 or a negative errno. */
int mdp_capfs_write_file(const char *dir, const char *name, int (*fill)(FILE *f, void *arg),
                         void *arg);

/* Where a capture stands when its manifest is written. */
typedef enum {
  MDP_CAPFS_RUNNING = 1, /* the plan goes on: the folder stays a capture in progress */
  MDP_CAPFS_FINISHED,    /* the plan is over: released, as by mdp_capfs_release */
} mdp_capfs_stage;

/* A manifest to write: what fill writes (0 or a negative errno) becomes
 * capture.json; the store knows nothing of what it says. */
typedef struct {
  int (*fill)(FILE *f, void *arg);
  void *arg;
  mdp_capfs_stage stage;
} mdp_capfs_manifest_writer;

/* Write dir/capture.json atomically (temporary file, fsync, rename), dir
 * being a capture folder of the open CaptureDirectory (reached through its
 * descriptors, never by path). At MDP_CAPFS_FINISHED the capture is
 * released (see mdp_capfs_release). Returns 0 or a negative errno. */
int mdp_capfs_write_manifest(const char *dir, const mdp_capfs_manifest_writer *w);

/* True when path is dir itself or lies below it, compared component by
 * component after resolving both where they exist ("/a/bc" is not inside
 * "/a/b"). Used to tell whether a worker's dump directory admits the
 * capture folders. */
bool mdp_capfs_inside(const char *path, const char *dir);

/* Worker names become part of a path: keep [A-Za-z0-9._-], map the rest to
 * '_', never start with '.'. */
void mdp_capfs_sanitize(const char *in, char *out, size_t outlen);

#ifdef MDP_CAPFS_TEST_HOOKS
/* Test builds only: called by prune, lock held, after listing and before
 * removing each folder, so a test can swap paths at the worst moment. */
extern void (*mdp_capfs_test_before_remove)(const char *name);
#endif

#ifdef __cplusplus
}
#endif
#endif
