/* memdiag plugin: the server's hooks table; see wiring.h. */
#include "wiring.h"

#include "capture/capture.h"
#include "containers.h"
#include "control/control.h"
#include "relay/relay.h"
#include "workers/registry.h"

static int worker_hello(const mdp_worker_hello *hello, uint64_t *id, int *proc_err)
{
  return mdp_registry_add(hello, id, proc_err);
}

/* Forgotten first, so that nothing its requests' callbacks do finds it. */
static void worker_gone(uint64_t id)
{
  mdp_containers_worker_gone(id); /* did the kernel's OOM killer end it? */
  mdp_registry_remove(id);
  mdp_relay_worker_gone(id);
  mdp_capture_worker_gone(id);
}

const mdp_server_hooks mdp_wiring_server_hooks = {
    .worker_hello = worker_hello,
    .worker_gone = worker_gone,
    .worker_reply = mdp_relay_on_reply,
    .worker_stream = mdp_relay_on_stream,
    .control = mdp_control_handle,
    .stopping = mdp_relay_shutdown,
};
