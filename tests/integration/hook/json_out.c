/* JSON escaping for the test server's event lines. */
#include <string.h>

#include "json_out.h"

/* Length of the valid UTF-8 sequence at s (at most left bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t left)
{
  size_t n, i;
  if(s[0] < 0x80)
    return 1;
  if((s[0] & 0xe0) == 0xc0 && s[0] >= 0xc2)
    n = 2;
  else if((s[0] & 0xf0) == 0xe0)
    n = 3;
  else if((s[0] & 0xf8) == 0xf0 && s[0] <= 0xf4)
    n = 4;
  else
    return 0;
  if(n > left)
    return 0;
  for(i = 1; i < n; i++)
    if((s[i] & 0xc0) != 0x80)
      return 0;
  return n;
}

void jo_string(FILE *f, const char *str, size_t len)
{
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;

  fputc('"', f);
  while(i < len) {
    size_t n;
    unsigned char c = s[i];
    if(c == '"' || c == '\\') {
      fputc('\\', f);
      fputc(c, f);
      i++;
    } else if(c == '\n') {
      fputs("\\n", f);
      i++;
    } else if(c < 0x20 || c == 0x7f) {
      fprintf(f, "\\u%04x", c);
      i++;
    } else if((n = utf8_len(s + i, len - i)) > 0) {
      fwrite(s + i, 1, n, f);
      i += n;
    } else {
      fprintf(f, "\\u%04x", c);
      i++;
    }
  }
  fputc('"', f);
}

void jo_kv_str(FILE *f, const char *key, const char *value)
{
  if(!value)
    return;
  fprintf(f, ",\"%s\":", key);
  jo_string(f, value, strlen(value));
}

void jo_kv_u64(FILE *f, const char *key, uint64_t value)
{
  fprintf(f, ",\"%s\":%llu", key, (unsigned long long)value);
}
