/* memdiagctl output (prefix mdctl_print_): the human form and the --json
 * form of every answer the plugin gives. Human output goes to stdout, except
 * that an inline result is written to stdout byte for byte (so it can be
 * redirected) and its figures go to stderr.
 */
#ifndef MDCTL_PRINT_H
#define MDCTL_PRINT_H

#include <stdint.h>

#include "cmd.h"
#include "md/wire.h"

void mdctl_print_workers(const mdctl_cmd *cmd, const Memdiag__V1__WorkerList *list);
void mdctl_print_status(const mdctl_cmd *cmd, const Memdiag__V1__StatusReport *report);
void mdctl_print_capture(const mdctl_cmd *cmd, const Memdiag__V1__CaptureInfo *info);
/* rtt_us: round trip seen by memdiagctl, shown for ping. */
void mdctl_print_reply(const mdctl_cmd *cmd, const Memdiag__V1__Reply *reply, uint64_t rtt_us);

/* A refusal or failure: a message on stderr naming the connection and
 * what to do, and with --json also {"status":..., "error":...} on stdout. */
void mdctl_print_failure(const mdctl_cmd *cmd, Memdiag__V1__Status status, const char *error);

/* "512 B", "12.0 KiB", "123.4 MiB". */
void mdctl_format_size(char *buf, size_t len, uint64_t bytes);
/* From microseconds: "850 us", "12 ms", "2.1 s", "3 min 5 s". */
void mdctl_format_duration(char *buf, size_t len, uint64_t us);

#endif
