/* Error texts for the md_ error codes and negated errno values. */
#include <string.h>

#include "md/wire.h"

/* -errno: glibc's description (strerrordesc_np is thread-safe and never
 * formats into a buffer); NULL for a number that is no errno. */
static const char *errno_text(int err)
{
  return err < 0 && err > -MD_ERR_BASE ? strerrordesc_np(-err) : NULL;
}

const char *md_strerror(int err)
{
  switch(err) {
  case MD_OK: return "success";
  case MD_EAGAIN: return "operation would block";
  case MD_EIO: return "socket error";
  case MD_ETLS: return "TLS failure";
  case MD_EPROTO: return "malformed frame";
  case MD_ETOOBIG: return "frame exceeds the size limit";
  case MD_ECLOSED: return "connection closed by peer";
  case MD_ENOMEM: return "out of memory";
  case MD_EINVAL: return "invalid argument";
  case MD_ETIMEDOUT: return "timed out";
  case MD_EROLE: return "peer certificate does not grant the required role";
  case MD_ECONFIG: return "TLS configuration error";
  default: {
    const char *t = errno_text(err);
    return t ? t : "unknown error";
  }
  }
}
