/* memdiag plugin: what the plugin tells collectd (prefix mdp_notify_):
 * notifications and values, all with plugin "memdiag".
 *
 * A leaf: it knows collectd and nothing of the plugin's other parts.
 * Threading: any thread (collectd's dispatch functions are thread-safe).
 * Ownership: strings are borrowed for the call.
 */
#ifndef MDP_NOTIFY_H
#define MDP_NOTIFY_H

#include <stdint.h>

/* Dispatch a notification with this plugin_instance ("" for none; a
 * worker's instance names the worker). severity: NOTIF_FAILURE,
 * NOTIF_WARNING or NOTIF_OKAY (collectd's values: 1, 2, 4). The message is
 * also logged (WARNING for failures, else NOTICE). Returns 0, or -EIO when
 * collectd refused it. */
int mdp_notify(int severity, const char *instance, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Dispatch one gauge value. `t` and `interval` are cdtime_t values (0 lets
 * collectd fill them in). */
void mdp_notify_gauge(const char *instance, const char *type, const char *type_instance,
                      double value, uint64_t t, uint64_t interval);

/* Dispatch one value of type "derive" (a count that only rises: events,
 * kills) with this plugin_instance. t and interval as for the gauge. */
void mdp_notify_derive(const char *instance, const char *type_instance, uint64_t value, uint64_t t,
                       uint64_t interval);

/* Dispatch one counter (type "counter", no plugin_instance). Returns 0 or
 * collectd's error. */
int mdp_notify_counter(const char *type_instance, uint64_t value);

#endif
