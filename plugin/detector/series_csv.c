/* collectd csv series reader; see series_csv.h. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "md/text.h"
#include "series_csv.h"

#define LINE_MAX_LEN 512

static int fail(mdp_series_csv *r, int rc, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  md_vseterr_at(r->err, sizeof(r->err), r->path, r->line, fmt, ap);
  va_end(ap);
  return rc;
}

/* Reads one line without its end of line into buf. Returns 1, 0 at end of
 * file, or a negative error. */
static int read_line(mdp_series_csv *r, char *buf, size_t len)
{
  if(!fgets(buf, (int)len, r->f)) {
    if(ferror(r->f))
      return fail(r, -EIO, "read error: %s", strerror(errno));
    return 0;
  }
  r->line++;
  size_t n = strlen(buf);
  if(n == len - 1 && buf[n - 1] != '\n' && !feof(r->f))
    return fail(r, -EINVAL, "line longer than %d bytes", LINE_MAX_LEN - 2);
  while(n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
    buf[--n] = '\0';
  return 1;
}

static unsigned count_fields(const char *s)
{
  unsigned n = 1;
  for(; *s; s++)
    n += *s == ',';
  return n;
}

int mdp_series_csv_open(mdp_series_csv *r, const char *path)
{
  char buf[LINE_MAX_LEN];
  int rc;

  memset(r, 0, sizeof(*r));
  r->path = path;
  r->f = fopen(path, "r");
  if(!r->f)
    return fail(r, -errno, "cannot open: %s", strerror(errno));
  do {
    rc = read_line(r, buf, sizeof(buf));
    if(rc <= 0) {
      rc = rc ? rc : fail(r, -EINVAL, "empty file: expected the header line \"epoch,value\"");
      goto out;
    }
  } while(!buf[0]);
  if(strncasecmp(buf, "epoch", 5) != 0) {
    rc = fail(r, -EINVAL, "expected the header line \"epoch,value\", got \"%.40s\"", buf);
    goto out;
  }
  if(count_fields(buf) != 2) {
    rc = fail(r, -EINVAL, "expected 2 columns (epoch,value), the header has %u", count_fields(buf));
    goto out;
  }
  rc = 0;
out:
  if(rc)
    mdp_series_csv_close(r);
  return rc;
}

/* Parses a finite, non-negative number filling the whole field. */
static int parse_number(const char *s, const char *end, double *out)
{
  char *stop;
  if(s == end || *s == '-' || *s == '+' || *s == ' ')
    return -EINVAL;
  errno = 0;
  double v = strtod(s, &stop);
  if(stop != end || errno || !isfinite(v) || v < 0)
    return -EINVAL;
  *out = v;
  return 0;
}

int mdp_series_csv_next(mdp_series_csv *r, mdp_sample *out)
{
  char buf[LINE_MAX_LEN];
  double v;

  for(;;) {
    int rc = read_line(r, buf, sizeof(buf));
    if(rc <= 0)
      return rc;
    if(!buf[0])
      continue;
    char *comma = strchr(buf, ',');
    if(!comma || strchr(comma + 1, ','))
      return fail(r, -EINVAL, "expected \"epoch,value\", got \"%.40s\"", buf);
    if(parse_number(buf, comma, &out->time))
      return fail(r, -EINVAL, "invalid time \"%.*s\"", (int)(comma - buf), buf);
    const char *val = comma + 1;
    if(strcasecmp(val, "nan") == 0 || strcasecmp(val, "-nan") == 0)
      continue;
    if(parse_number(val, val + strlen(val), &v) || v >= 18446744073709551616.0)
      return fail(r, -EINVAL, "invalid value \"%.40s\" (bytes expected)", val);
    out->value = (uint64_t)(v + 0.5);
    return 1;
  }
}

void mdp_series_csv_close(mdp_series_csv *r)
{
  if(r->f)
    fclose(r->f);
  r->f = NULL;
}
