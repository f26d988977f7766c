/* memdiag plugin: notifications and values to collectd. */
#include "collectd/core/daemon/collectd.h"
#include "collectd/core/daemon/plugin.h"
#include "collectd/core/utils/common/common.h"

#include <errno.h>
#include <stdarg.h>
#include <string.h>

#include "notify.h"

int mdp_notify(int severity, const char *instance, const char *fmt, ...)
{
  notification_t n;
  va_list ap;

  memset(&n, 0, sizeof(n));
  n.severity = severity;
  n.time = cdtime();
  va_start(ap, fmt);
  vsnprintf(n.message, sizeof(n.message), fmt, ap);
  va_end(ap);
  sstrncpy(n.host, hostname_g ? hostname_g : "", sizeof(n.host));
  sstrncpy(n.plugin, "memdiag", sizeof(n.plugin));
  sstrncpy(n.plugin_instance, instance ? instance : "", sizeof(n.plugin_instance));
  if(severity == NOTIF_FAILURE)
    WARNING("memdiag plugin: %s", n.message);
  else
    NOTICE("memdiag plugin: %s", n.message);
  return plugin_dispatch_notification(&n) ? -EIO : 0;
}

/* One value of the memdiag plugin to collectd's write plugins. */
static void dispatch(const char *instance, const char *type, const char *type_instance, value_t v,
                     uint64_t t, uint64_t interval)
{
  value_list_t vl = VALUE_LIST_INIT;

  vl.values = &v;
  vl.values_len = 1;
  vl.time = (cdtime_t)t;
  vl.interval = (cdtime_t)interval;
  sstrncpy(vl.plugin, "memdiag", sizeof(vl.plugin));
  sstrncpy(vl.plugin_instance, instance, sizeof(vl.plugin_instance));
  sstrncpy(vl.type, type, sizeof(vl.type));
  sstrncpy(vl.type_instance, type_instance, sizeof(vl.type_instance));
  plugin_dispatch_values(&vl);
}

void mdp_notify_gauge(const char *instance, const char *type, const char *type_instance,
                      double value, uint64_t t, uint64_t interval)
{
  dispatch(instance, type, type_instance, (value_t){.gauge = value}, t, interval);
}

void mdp_notify_derive(const char *instance, const char *type_instance, uint64_t value, uint64_t t,
                       uint64_t interval)
{
  dispatch(instance, "derive", type_instance, (value_t){.derive = (derive_t)value}, t, interval);
}

int mdp_notify_counter(const char *type_instance, uint64_t value)
{
  value_t v = {.counter = (counter_t)value};
  value_list_t vl = VALUE_LIST_INIT;

  vl.values = &v;
  vl.values_len = 1;
  sstrncpy(vl.plugin, "memdiag", sizeof(vl.plugin));
  sstrncpy(vl.type, "counter", sizeof(vl.type));
  sstrncpy(vl.type_instance, type_instance, sizeof(vl.type_instance));
  return plugin_dispatch_values(&vl);
}
