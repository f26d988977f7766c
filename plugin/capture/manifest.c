/* The capture manifest's JSON: see manifest.h. */
#include "manifest.h"

#include "store/capfs.h"

#include "md/text.h"
#include "memdiag.pb-c.h"

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

/* A key (with what comes before it) and its value, as most fields are. */
static void key_str(FILE *f, const char *key, const char *s)
{
  fputs(key, f);
  json_str(f, s);
}

static void key_opt(FILE *f, const char *key, const char *s)
{
  fputs(key, f);
  json_opt(f, s);
}

static void key_time(FILE *f, const char *key, int64_t ms)
{
  fputs(key, f);
  json_time(f, ms);
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
  key_str(f, "    {\"step\": ", mdp_step_name(s->kind));
  key_opt(f, ", \"file\": ", s->file);
  key_str(f, ", \"status\": ", mdp_step_status_name(s->status));
  key_opt(f, ", \"error\": ", s->error);
  fprintf(f, ", \"bytes\": %" PRIu64, s->bytes);
  fprintf(f, ", \"duration_ms\": %.3f", (double)s->duration_us / 1000.0);
  fprintf(f, ", \"worker_pause_ms\": %.3f", (double)s->pause_us / 1000.0);
  key_opt(f, ", \"mode\": ", s->mode);
  key_opt(f, ", \"note\": ", s->note);
  key_time(f, ", \"started\": ", s->started_ms);
  key_time(f, ", \"finished\": ", s->finished_ms);
  if(s->mem.read)
    fprintf(f,
            ", \"memory\": {\"rss\": %" PRIu64 ", \"heap\": %" PRIu64 ", \"anon\": %" PRIu64
            ", \"file\": %" PRIu64 ", \"stack\": %" PRIu64 ", \"other\": %" PRIu64
            ", \"mappings\": %u}",
            s->mem.rss, s->mem.heap, s->mem.anon, s->mem.file, s->mem.stack, s->mem.other,
            s->mem.mappings);
  fputs("}", f);
}

static const char *dump_mode_name(int mode)
{
  switch(mode) {
  case MEMDIAG__V1__DUMP_MODE__DUMP_MODE_FORK: return "fork";
  case MEMDIAG__V1__DUMP_MODE__DUMP_MODE_AUTO: return "auto";
  default: return "inline";
  }
}

void mdp_manifest_format(FILE *f, const mdp_manifest_info_t *in, const mdp_plan_t *plan)
{
  key_str(f, "{\n  \"format\": \"memdiag-capture/1\",\n  \"worker\": {\"name\": ", in->who->name);
  fprintf(f, ", \"pid\": %d, \"connection_id\": %" PRIu64 ", \"uid\": %u, \"gid\": %u},\n",
          (int)in->who->pid, in->who->connection_id, (unsigned)in->who->uid,
          (unsigned)in->who->gid);
  key_str(f, "  \"directory\": ", in->directory);
  key_str(f, ",\n  \"trigger\": {\"reason\": ", plan->reason);
  fprintf(f, ", \"manual\": %s, \"rss\": %" PRIu64 ", \"samples\": [",
          in->manual ? "true" : "false", plan->trigger_rss);
  for(size_t i = 0; i < plan->n_samples; i++)
    fprintf(f, "%s{\"time\": %.3f, \"rss\": %" PRIu64 "}", i ? ", " : "", plan->samples[i].time,
            plan->samples[i].value);
  key_opt(f, "]},\n  \"plan\": ", in->plan_text);
  key_time(f, ",\n  \"started\": ", plan->started_ms);
  key_time(f, ",\n  \"finished\": ", mdp_plan_is_finished(plan) ? plan->finished_ms : 0);
  key_opt(f, ",\n  \"end\": ", mdp_plan_is_finished(plan) ? plan->end : NULL);
  fprintf(f, ",\n  \"complete\": %s,\n",
          mdp_plan_is_finished(plan) && plan->complete ? "true" : "false");
  fputs("  \"restart\": ", f);
  if(in->restart_signal) {
    char num[16];
    key_str(f, "{\"signal\": ", signal_name(in->restart_signal, num, sizeof(num)));
    key_time(f, ", \"limit_reached\": ", plan->limit_ms);
    key_time(f, ", \"sent\": ", in->signalled_ms);
    key_opt(f, ", \"error\": ", in->signal_error);
    key_opt(f, ", \"waited\": ", in->restart_wait);
    fputs("}", f);
  } else {
    fputs("null", f);
  }
  /* How DumpMode auto chose: by the plugin for a worker in a
   * memory-limited cgroup, else by the worker (its note in each dump step) */
  fprintf(f, ",\n  \"dump_mode\": {\"configured\": \"%s\"", dump_mode_name(in->dump_mode));
  key_str(f, ", \"chosen\": ", in->mode_chosen ? in->mode_chosen : dump_mode_name(in->dump_mode));
  key_str(f, ", \"by\": ", in->mode_chosen ? "plugin" : "worker");
  key_opt(f, ", \"reason\": ", in->mode_reason);
  fputs("}", f);
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

typedef struct {
  const mdp_manifest_info_t *info;
  const mdp_plan_t *plan;
} manifest_arg;

static int fill_manifest(FILE *f, void *arg)
{
  const manifest_arg *m = arg;
  mdp_manifest_format(f, m->info, m->plan);
  return 0;
}

int mdp_manifest_write(const char *dir, const mdp_manifest_info_t *info, const mdp_plan_t *plan)
{
  manifest_arg m = {info, plan};
  mdp_capfs_manifest_writer w = {
      .fill = fill_manifest,
      .arg = &m,
      .stage = mdp_plan_is_finished(plan) ? MDP_CAPFS_FINISHED : MDP_CAPFS_RUNNING,
  };
  return mdp_capfs_write_manifest(dir, &w);
}
