/* The capture manifest's JSON: see capture_fs.h. */
#include "capture_fs.h"

#include "md/text.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* A JSON string that is always valid UTF-8, whatever the worker sent: a
 * byte that does not start a well-formed sequence (or a sequence a fixed-
 * size field cut short) becomes U+FFFD; control characters, C1 included,
 * are escaped so the manifest shows no terminal escapes either. */
static void json_str(FILE *f, const char *s)
{
  if(!s) {
    fputs("null", f);
    return;
  }
  size_t len = strlen(s);
  const unsigned char *p = (const unsigned char *)s;
  fputc('"', f);
  for(size_t i = 0; i < len;) {
    unsigned char c = p[i];
    if(c >= 0x80) {
      size_t n = md_utf8_len(p + i, len - i);
      if(n == 0) {
        fputs("\\ufffd", f);
        i++;
      } else if(n == 2 && c == 0xc2 && p[i + 1] < 0xa0) {
        fprintf(f, "\\u%04x", p[i + 1]); /* C1 control, U+0080..U+009F */
        i += 2;
      } else {
        fwrite(p + i, 1, n, f);
        i += n;
      }
      continue;
    }
    switch(c) {
    case '"': fputs("\\\"", f); break;
    case '\\': fputs("\\\\", f); break;
    case '\n': fputs("\\n", f); break;
    case '\r': fputs("\\r", f); break;
    case '\t': fputs("\\t", f); break;
    default:
      if(c < 0x20 || c == 0x7f)
        fprintf(f, "\\u%04x", c);
      else
        fputc(c, f);
    }
    i++;
  }
  fputc('"', f);
}

/* Empty strings are written as null: "no error" reads better than "". */
static void json_opt(FILE *f, const char *s) { json_str(f, s && s[0] ? s : NULL); }

static void json_time(FILE *f, int64_t ms)
{
  if(ms <= 0) {
    fputs("null", f);
    return;
  }
  time_t t = (time_t)(ms / 1000);
  struct tm tm;
  char buf[32];
  gmtime_r(&t, &tm);
  strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  fprintf(f, "\"%s.%03dZ\"", buf, (int)(ms % 1000));
}

static const char *signal_name(int sig, char *buf, size_t len)
{
  const char *abbrev = sigabbrev_np(sig);
  if(abbrev)
    return abbrev;
  snprintf(buf, len, "%d", sig);
  return buf;
}

static void write_step(FILE *f, const mdp_step_t *s)
{
  fputs("    {\"step\": ", f);
  json_str(f, mdp_step_name(s->kind));
  fputs(", \"file\": ", f);
  json_opt(f, s->file);
  fputs(", \"status\": ", f);
  json_str(f, mdp_step_status_name(s->status));
  fputs(", \"error\": ", f);
  json_opt(f, s->error);
  fprintf(f, ", \"bytes\": %" PRIu64, s->bytes);
  fprintf(f, ", \"duration_ms\": %.3f", (double)s->duration_us / 1000.0);
  fprintf(f, ", \"worker_pause_ms\": %.3f", (double)s->pause_us / 1000.0);
  fputs(", \"mode\": ", f);
  json_opt(f, s->mode);
  fputs(", \"note\": ", f);
  json_opt(f, s->note);
  fputs(", \"started\": ", f);
  json_time(f, s->started_ms);
  fputs(", \"finished\": ", f);
  json_time(f, s->finished_ms);
  fputs("}", f);
}

void mdp_capfs_format_manifest(FILE *f, const mdp_manifest_info_t *in, const mdp_plan_t *plan)
{
  fputs("{\n  \"format\": \"memdiag-capture/1\",\n  \"worker\": {\"name\": ", f);
  json_str(f, in->worker);
  fprintf(f, ", \"pid\": %d, \"connection_id\": %" PRIu64 ", \"uid\": %u, \"gid\": %u},\n",
          (int)in->pid, in->connection_id, (unsigned)in->uid, (unsigned)in->gid);
  fputs("  \"directory\": ", f);
  json_str(f, in->directory);
  fputs(",\n  \"trigger\": {\"reason\": ", f);
  json_str(f, plan->reason);
  fprintf(f, ", \"manual\": %s, \"rss\": %" PRIu64 ", \"samples\": [",
          in->manual ? "true" : "false", plan->trigger_rss);
  for(size_t i = 0; i < plan->n_samples; i++)
    fprintf(f, "%s{\"time\": %.3f, \"rss\": %" PRIu64 "}", i ? ", " : "", plan->samples[i].time,
            plan->samples[i].value);
  fputs("]},\n  \"plan\": ", f);
  json_opt(f, in->plan_text);
  fputs(",\n  \"started\": ", f);
  json_time(f, plan->started_ms);
  fputs(",\n  \"finished\": ", f);
  json_time(f, plan->finished ? plan->finished_ms : 0);
  fputs(",\n  \"end\": ", f);
  json_opt(f, plan->finished ? plan->end : NULL);
  fprintf(f, ",\n  \"complete\": %s,\n", plan->finished && plan->complete ? "true" : "false");
  fputs("  \"restart\": ", f);
  if(in->restart_signal) {
    fputs("{\"signal\": ", f);
    char num[16];
    json_str(f, signal_name(in->restart_signal, num, sizeof(num)));
    fputs(", \"limit_reached\": ", f);
    json_time(f, plan->limit_ms);
    fputs(", \"sent\": ", f);
    json_time(f, in->signalled_ms);
    fputs(", \"error\": ", f);
    json_opt(f, in->signal_error);
    fputs(", \"waited\": ", f);
    json_opt(f, in->restart_wait);
    fputs("}", f);
  } else {
    fputs("null", f);
  }
  fputs(",\n  \"steps\": [\n", f);
  for(size_t i = 0; i < plan->n_steps; i++) {
    write_step(f, &plan->steps[i]);
    fputs(i + 1 < plan->n_steps ? ",\n" : "\n", f);
  }
  fputs("  ]", f);
  if(in->analysis)
    fprintf(f, ",\n  \"analysis\": %s", in->analysis);
  fputs("\n}\n", f);
}
