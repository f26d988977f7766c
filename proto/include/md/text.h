/* memdiag text helpers (prefix md_): error messages and printable text.
 *
 * Every part of memdiag reports failures into a caller-supplied buffer
 * (char *err, size_t errlen) and shows text that came from a peer (worker
 * names, reasons, errors, paths) in logs, notifications and the operator's
 * terminal. These helpers are the one way to do both.
 *
 * Ownership: nothing here allocates; every buffer belongs to the caller.
 * Threading: all functions are reentrant.
 */
#ifndef MD_TEXT_H
#define MD_TEXT_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Format an error message into err[0..errlen), always NUL-terminated,
 * truncated if it does not fit. err NULL or errlen 0 does nothing, so a
 * caller that does not want the text may pass NULL, 0. */
void md_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An error about a place in a file: "path:line: " (line 0: "path: ")
 * then the message, as md_seterr (NULL-safe, truncated, terminated). The
 * v form takes the message's arguments as a va_list. */
void md_seterr_at(char *err, size_t errlen, const char *path, unsigned long long line,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void md_vseterr_at(char *err, size_t errlen, const char *path, unsigned long long line,
                   const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));

/* Which bytes md_printable() keeps. */
enum md_text_flags {
  MD_TEXT_PLAIN = 0,      /* one line: every control character and DEL become '?' */
  MD_TEXT_KEEP_LINES = 1, /* keep '\n' and '\t' (multi-line text for a terminal) */
  /* Keep only well-formed UTF-8: each byte of an invalid, overlong or
   * surrogate sequence becomes '?', and so does each C1 control
   * (U+0080..U+009F, which some terminals obey as escapes). The result is
   * valid UTF-8, as JSON needs. Without this flag bytes >= 0x80 are copied
   * unchanged. */
  MD_TEXT_UTF8 = 2,
};

/* Copy src (NUL-terminated; NULL is taken as "") into dst[0..dstlen),
 * replacing control characters (< 0x20) and DEL with '?' as flags say.
 * dst is always NUL-terminated when dstlen > 0; text that does not fit is
 * cut, never in the middle of a kept UTF-8 sequence. dst may equal src
 * (in place). Returns the length written, without the NUL. */
size_t md_printable(char *dst, size_t dstlen, const char *src, unsigned flags);

/* Same for src[0..srclen), which need not be NUL-terminated: a NUL in it
 * is a control character like any other and becomes '?'. */
size_t md_printable_n(char *dst, size_t dstlen, const void *src, size_t srclen, unsigned flags);

/* In-place form for text already in a buffer: returns s. s NULL is fine. */
char *md_printable_inplace(char *s, unsigned flags);

/* Length (1..4) of the well-formed UTF-8 sequence at s[0..len), or 0 when
 * s does not start one (RFC 3629: no overlongs, no surrogates, nothing
 * above U+10FFFF) or len is 0. Reads no byte past s[len - 1]. */
size_t md_utf8_len(const void *s, size_t len);

#ifdef __cplusplus
}
#endif

#endif
