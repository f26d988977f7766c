/* JSON output for memdiagctl --json; see json.h for the encoding rules. */
#include "json.h"

#include <inttypes.h>
#include <string.h>

#include "md/text.h"

void mdctl_json_init(mdctl_json *j, FILE *out)
{
  memset(j, 0, sizeof(*j));
  j->out = out;
}

/* Separates values: a comma between siblings, nothing right after a key. */
static void value_prefix(mdctl_json *j)
{
  if(j->after_key) {
    j->after_key = 0;
    return;
  }
  if(j->need_comma[j->depth])
    fputc(',', j->out);
  j->need_comma[j->depth] = 1;
}

static void open_scope(mdctl_json *j, char c)
{
  value_prefix(j);
  fputc(c, j->out);
  if(j->depth < MDCTL_JSON_DEPTH - 1)
    j->depth++;
  j->need_comma[j->depth] = 0;
}

static void close_scope(mdctl_json *j, char c)
{
  fputc(c, j->out);
  if(j->depth > 0)
    j->depth--;
}

void mdctl_json_begin_object(mdctl_json *j) { open_scope(j, '{'); }
void mdctl_json_end_object(mdctl_json *j) { close_scope(j, '}'); }
void mdctl_json_begin_array(mdctl_json *j) { open_scope(j, '['); }
void mdctl_json_end_array(mdctl_json *j) { close_scope(j, ']'); }

int mdctl_utf8_valid(const uint8_t *s, size_t len)
{
  size_t i = 0;
  while(i < len) {
    size_t n = md_utf8_len(s + i, len - i);
    if(n == 0)
      return 0;
    i += n;
  }
  return 1;
}

/* Writes s as a JSON string. Bytes that are not valid UTF-8 become U+FFFD,
 * so the output is always valid JSON; callers holding arbitrary bytes use
 * mdctl_json_kv_data() to keep them intact. */
static void write_string(FILE *out, const uint8_t *s, size_t len)
{
  fputc('"', out);
  size_t i = 0;
  while(i < len) {
    uint8_t c = s[i];
    size_t n;
    switch(c) {
    case '"':
      fputs("\\\"", out);
      i++;
      continue;
    case '\\':
      fputs("\\\\", out);
      i++;
      continue;
    case '\n':
      fputs("\\n", out);
      i++;
      continue;
    case '\r':
      fputs("\\r", out);
      i++;
      continue;
    case '\t':
      fputs("\\t", out);
      i++;
      continue;
    case '\b':
      fputs("\\b", out);
      i++;
      continue;
    case '\f':
      fputs("\\f", out);
      i++;
      continue;
    default: break;
    }
    if(c < 0x20 || c == 0x7f) {
      fprintf(out, "\\u%04x", c);
      i++;
      continue;
    }
    n = md_utf8_len(s + i, len - i);
    if(n == 0) {
      fputs("\\ufffd", out);
      i++;
      continue;
    }
    fwrite(s + i, 1, n, out);
    i += n;
  }
  fputc('"', out);
}

void mdctl_json_key(mdctl_json *j, const char *key)
{
  value_prefix(j);
  write_string(j->out, (const uint8_t *)key, strlen(key));
  fputc(':', j->out);
  j->after_key = 1;
}

void mdctl_json_strn(mdctl_json *j, const uint8_t *s, size_t len)
{
  value_prefix(j);
  write_string(j->out, s, len);
}

void mdctl_json_str(mdctl_json *j, const char *s)
{
  mdctl_json_strn(j, (const uint8_t *)s, strlen(s));
}

void mdctl_json_u64(mdctl_json *j, uint64_t v)
{
  value_prefix(j);
  fprintf(j->out, "%" PRIu64, v);
}

void mdctl_json_bool(mdctl_json *j, int v)
{
  value_prefix(j);
  fputs(v ? "true" : "false", j->out);
}

void mdctl_json_kv_str(mdctl_json *j, const char *key, const char *s)
{
  if(!s)
    return;
  mdctl_json_key(j, key);
  mdctl_json_str(j, s);
}

void mdctl_json_kv_u64(mdctl_json *j, const char *key, uint64_t v)
{
  mdctl_json_key(j, key);
  mdctl_json_u64(j, v);
}

void mdctl_json_kv_bool(mdctl_json *j, const char *key, int v)
{
  mdctl_json_key(j, key);
  mdctl_json_bool(j, v);
}

static void write_base64(FILE *out, const uint8_t *s, size_t len)
{
  static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t i = 0;

  fputc('"', out);
  for(; i + 3 <= len; i += 3) {
    uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
    fputc(tab[v >> 18], out);
    fputc(tab[(v >> 12) & 63], out);
    fputc(tab[(v >> 6) & 63], out);
    fputc(tab[v & 63], out);
  }
  if(len - i == 1) {
    uint32_t v = (uint32_t)s[i] << 16;
    fputc(tab[v >> 18], out);
    fputc(tab[(v >> 12) & 63], out);
    fputs("==", out);
  } else if(len - i == 2) {
    uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
    fputc(tab[v >> 18], out);
    fputc(tab[(v >> 12) & 63], out);
    fputc(tab[(v >> 6) & 63], out);
    fputc('=', out);
  }
  fputc('"', out);
}

void mdctl_json_kv_data(mdctl_json *j, const char *key, const uint8_t *data, size_t len)
{
  if(mdctl_utf8_valid(data, len)) {
    mdctl_json_key(j, key);
    mdctl_json_strn(j, data, len);
    return;
  }
  char k[64];
  snprintf(k, sizeof(k), "%s_base64", key);
  mdctl_json_key(j, k);
  value_prefix(j);
  write_base64(j->out, data, len);
}
