/* stderr logging of the hook. A worker whose plugin is down retries every
 * few seconds for as long as it runs; printing every failure would flood
 * the worker's log, so identical failures are folded. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define MDH_LOG_FOLD_MS 60000u

static void emit(const mdh_hook *h, const char *msg, unsigned suppressed)
{
  /* one fprintf so that lines from several processes do not interleave */
  if(suppressed)
    fprintf(stderr, "memdiag hook[%ld] %s: %s (%u similar lines suppressed)\n", (long)getpid(),
            h->name, msg, suppressed);
  else
    fprintf(stderr, "memdiag hook[%ld] %s: %s\n", (long)getpid(), h->name, msg);
}

void mdh_log(mdh_hook *h, const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  emit(h, msg, 0);
}

void mdh_log_failure(mdh_hook *h, const char *fmt, ...)
{
  char msg[512];
  va_list ap;
  uint64_t now = md_now_ms();
  mdh_logstate *s = &h->log;

  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);

  if(s->last_ms && strcmp(s->last, msg) == 0 && now - s->last_ms < MDH_LOG_FOLD_MS) {
    s->suppressed++;
    return;
  }
  emit(h, msg, s->suppressed);
  s->suppressed = 0;
  s->last_ms = now;
  memcpy(s->last, msg, sizeof s->last);
}

void mdh_log_reset(mdh_hook *h) { memset(&h->log, 0, sizeof h->log); }
