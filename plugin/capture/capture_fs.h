/* memdiag plugin: capture folders, disk space and the manifest
 * (prefix mdp_capfs_).
 *
 * Layout: CaptureDirectory/<worker>-<pid>-<UTC time>/ holds the files the
 * worker writes (heap-N.json, gc.txt, ...) and capture.json, which only
 * memdiag writes. Folders are 0700 and owned by the worker's uid/gid so a
 * worker that is not root can write into its own folder and no other.
 *
 * Ownership: every function works on caller-owned buffers; nothing is
 * allocated that outlives a call.
 */
#ifndef MDP_CAPTURE_FS_H
#define MDP_CAPTURE_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MDP_CAPFS_MANIFEST "capture.json"

/* Create CaptureDirectory (and missing parents) if absent. A directory we
 * create is 0711: workers may pass through it to their own folder but not
 * list the others. Returns 0 or a negative errno. */
int mdp_capfs_ensure_root(const char *root);

/* Create a new capture folder under root (never reusing or following an
 * existing entry), 0700, chowned to uid/gid. Its path goes to out.
 * Returns 0 or a negative errno. */
int mdp_capfs_make_folder(const char *root, const char *worker, pid_t pid, int64_t now_ms,
                          uid_t uid, gid_t gid, char *out, size_t outlen);

/* Bytes available to unprivileged users on root's filesystem. */
int mdp_capfs_avail(const char *root, uint64_t *avail);

/* Bytes held by the capture folders under root (folders with a manifest). */
int mdp_capfs_usage(const char *root, uint64_t *used);

/* Remove the oldest capture folders (least recently modified first) until
 * the captures hold at most `limit` bytes; one that cannot be removed whole
 * (a directory inside) is passed over. Folders named in keep (full
 * paths, n_keep of them: captures in progress) are never removed; neither
 * is anything without a capture.json. *used gets the bytes left; *removed
 * (may be NULL) the number of folders removed. Returns 0 or a negative
 * errno. */
int mdp_capfs_prune(const char *root, uint64_t limit, const char *const *keep, size_t n_keep,
                    uint64_t *used, unsigned *removed);

/* Everything the manifest says besides the plan. */
typedef struct mdp_manifest_info {
  const char *worker;
  pid_t pid;
  uint64_t connection_id;
  uid_t uid;
  gid_t gid;
  const char *directory;
  const char *plan_text; /* the configured Plan */
  bool manual;
  int restart_signal;       /* 0: RestartAfterCapture off */
  int64_t signalled_ms;     /* when the signal was sent, 0 if never */
  const char *signal_error; /* why it could not be sent, or NULL */
} mdp_manifest_info_t;

/* Write dir/capture.json atomically (temporary file, fsync, rename).
 * Returns 0 or a negative errno. */
int mdp_capfs_write_manifest(const char *dir, const mdp_manifest_info_t *info,
                             const mdp_plan_t *plan);

/* True when path is dir itself or lies below it, compared component by
 * component after resolving both where they exist ("/a/bc" is not inside
 * "/a/b"). Used to tell whether a worker's dump directory admits the
 * capture folders. */
bool mdp_capfs_inside(const char *path, const char *dir);

/* Worker names become part of a path: keep [A-Za-z0-9._-], map the rest to
 * '_', never start with '.'. */
void mdp_capfs_sanitize(const char *in, char *out, size_t outlen);

#ifdef __cplusplus
}
#endif
#endif
