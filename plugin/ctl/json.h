/* memdiagctl's JSON writer (prefix mdctl_json_).
 *
 * Writes straight to a FILE*, so nothing is allocated. Strings are escaped
 * as RFC 8259 requires, and control characters (and DEL) as \u00XX.
 * Byte strings that are not valid UTF-8 (inline dumps may hold any bytes)
 * are never altered: mdctl_json_kv_data() writes them base64-encoded under
 * "<key>_base64" instead of "<key>", so nothing is lost or mis-decoded.
 */
#ifndef MDCTL_JSON_H
#define MDCTL_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MDCTL_JSON_DEPTH 16

typedef struct {
  FILE *out;
  int depth;
  int need_comma[MDCTL_JSON_DEPTH];
  int after_key;
} mdctl_json;

void mdctl_json_init(mdctl_json *j, FILE *out);

void mdctl_json_begin_object(mdctl_json *j);
void mdctl_json_end_object(mdctl_json *j);
void mdctl_json_begin_array(mdctl_json *j);
void mdctl_json_end_array(mdctl_json *j);
void mdctl_json_key(mdctl_json *j, const char *key);

void mdctl_json_str(mdctl_json *j, const char *s);
void mdctl_json_strn(mdctl_json *j, const uint8_t *s, size_t len);
void mdctl_json_u64(mdctl_json *j, uint64_t v);
void mdctl_json_bool(mdctl_json *j, int v);

/* key + value shorthands; kv_str skips NULL strings. */
void mdctl_json_kv_str(mdctl_json *j, const char *key, const char *s);
void mdctl_json_kv_u64(mdctl_json *j, const char *key, uint64_t v);
void mdctl_json_kv_bool(mdctl_json *j, const char *key, int v);
/* "key": "<text>" when data is valid UTF-8, else "key_base64": "<base64>". */
void mdctl_json_kv_data(mdctl_json *j, const char *key, const uint8_t *data, size_t len);

/* 1 when s[0..len) is well-formed UTF-8 (no overlongs, surrogates or
 * code points above U+10FFFF). */
int mdctl_utf8_valid(const uint8_t *s, size_t len);

#endif
