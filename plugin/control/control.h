/* memdiag plugin: requests from operators (prefix mdp_control_).
 *
 * An operator connection sends Control frames: list the workers, report
 * status, relay an operation to one worker, start a capture now. Each gets
 * exactly one ControlReply with the operator's request_id.
 *
 * Runs on the server's loop thread only. The Control frame is borrowed.
 */
#ifndef MDP_CONTROL_H
#define MDP_CONTROL_H

#include <stdint.h>

#include "memdiag.pb-c.h"

/* `serial` names the operator connection (mdp_server_send_operator); `who`
 * describes it for logs ("operator 'memdiag operator' pid 123"). */
void mdp_control_handle(uint64_t serial, const char *who, const Memdiag__V1__Control *ctl);

/* Reply with an error status only. */
void mdp_control_refuse(uint64_t serial, uint64_t request_id, Memdiag__V1__Status status,
                        const char *error);

#endif
