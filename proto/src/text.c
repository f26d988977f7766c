/* Error messages and printable text; see md/text.h. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "md/text.h"

void md_seterr(char *err, size_t errlen, const char *fmt, ...)
{
  va_list ap;

  if(!err || !errlen)
    return;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

void md_vseterr_at(char *err, size_t errlen, const char *path, unsigned long long line,
                   const char *fmt, va_list ap)
{
  int n;

  if(!err || !errlen)
    return;
  n = line ? snprintf(err, errlen, "%s:%llu: ", path, line) : snprintf(err, errlen, "%s: ", path);
  if(n < 0 || (size_t)n >= errlen)
    return;
  vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
}

void md_seterr_at(char *err, size_t errlen, const char *path, unsigned long long line,
                  const char *fmt, ...)
{
  va_list ap;

  va_start(ap, fmt);
  md_vseterr_at(err, errlen, path, line, fmt, ap);
  va_end(ap);
}

size_t md_utf8_len(const void *p, size_t len)
{
  const unsigned char *s = p;
  unsigned char lo = 0x80, hi = 0xbf;
  size_t n;

  if(len == 0)
    return 0;
  if(s[0] < 0x80)
    return 1;
  if(s[0] >= 0xc2 && s[0] <= 0xdf)
    n = 2;
  else if(s[0] >= 0xe0 && s[0] <= 0xef) {
    n = 3;
    if(s[0] == 0xe0)
      lo = 0xa0; /* overlong */
    else if(s[0] == 0xed)
      hi = 0x9f; /* surrogates */
  } else if(s[0] >= 0xf0 && s[0] <= 0xf4) {
    n = 4;
    if(s[0] == 0xf0)
      lo = 0x90; /* overlong */
    else if(s[0] == 0xf4)
      hi = 0x8f; /* above U+10FFFF */
  } else
    return 0;
  /* The second byte's range is what rules out overlongs and surrogates. */
  if(len < n || s[1] < lo || s[1] > hi)
    return 0;
  for(size_t i = 2; i < n; i++)
    if(s[i] < 0x80 || s[i] > 0xbf)
      return 0;
  return n;
}

static int keep_control(unsigned char c, unsigned flags)
{
  return (flags & MD_TEXT_KEEP_LINES) && (c == '\n' || c == '\t');
}

size_t md_printable_n(char *dst, size_t dstlen, const void *src, size_t srclen, unsigned flags)
{
  const unsigned char *s = src ? src : (const unsigned char *)"";
  const unsigned char *end = src ? s + srclen : s;
  size_t o = 0;

  if(!dst || !dstlen)
    return 0;
  /* Reading s stays ahead of (or level with) writing dst, because every
   * sequence is written at most as long as it was read: in place is safe. */
  while(s < end) {
    size_t n = 1;
    unsigned char c = *s;

    if((c < 0x20 && !keep_control(c, flags)) || c == 0x7f)
      c = '?';
    else if(c >= 0x80 && (flags & MD_TEXT_UTF8)) {
      n = md_utf8_len(s, (size_t)(end - s));
      if(n == 0 || (n == 2 && s[0] == 0xc2 && s[1] <= 0x9f)) {
        /* One '?' for a bad byte; one for a C1 control's two bytes. */
        n = n ? 2 : 1;
        c = '?';
      }
    }
    if(c == '?' || n == 1) {
      if(o + 1 >= dstlen)
        break;
      dst[o++] = (char)c;
    } else {
      if(o + n >= dstlen)
        break;
      memmove(dst + o, s, n);
      o += n;
    }
    s += n;
  }
  dst[o] = '\0';
  return o;
}

size_t md_printable(char *dst, size_t dstlen, const char *src, unsigned flags)
{
  return md_printable_n(dst, dstlen, src, src ? strlen(src) : 0, flags);
}

char *md_printable_inplace(char *s, unsigned flags)
{
  if(s)
    md_printable(s, strlen(s) + 1, s, flags);
  return s;
}
