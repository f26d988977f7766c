/* JSON-lines output of the hook test server. */
#ifndef MDH_TEST_JSON_OUT_H
#define MDH_TEST_JSON_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Write s (len bytes) as a JSON string. Valid UTF-8 passes through; any
 * other byte is written as the code point of the same value, so the line
 * always parses. */
void jo_string(FILE *f, const char *s, size_t len);
/* ,"key":"value" when value is not NULL */
void jo_kv_str(FILE *f, const char *key, const char *value);
void jo_kv_u64(FILE *f, const char *key, uint64_t value);

#endif
