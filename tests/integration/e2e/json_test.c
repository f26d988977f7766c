/* memdiagctl's JSON writer: what a script reading `memdiagctl --json` gets
 * for names, errors and inline results holding arbitrary bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json.h"

/* Runs fn on a fresh writer and returns what it wrote (caller frees). */
static char *render(void (*fn)(mdctl_json *, const void *), const void *arg)
{
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  mdctl_json j;

  assert_non_null(f);
  mdctl_json_init(&j, f);
  fn(&j, arg);
  fclose(f);
  return buf;
}

typedef struct {
  const char *key;
  const uint8_t *data;
  size_t len;
} kv;

static void object_with_data(mdctl_json *j, const void *arg)
{
  const kv *x = arg;
  mdctl_json_begin_object(j);
  mdctl_json_kv_str(j, "status", "ok");
  mdctl_json_kv_data(j, x->key, x->data, x->len);
  mdctl_json_kv_u64(j, "bytes", x->len);
  mdctl_json_end_object(j);
}

static void assert_renders(const char *expected, const char *data, size_t len)
{
  kv x = {"data", (const uint8_t *)data, len};
  char *out = render(object_with_data, &x);
  assert_string_equal(out, expected);
  free(out);
}

static void test_escapes_quotes_backslashes_and_control_characters(void **state)
{
  (void)state;
  assert_renders("{\"status\":\"ok\",\"data\":\"a\\\"b\\\\c\\n\\t\\r\\b\\f\\u0001\\u001f\\u007f\","
                 "\"bytes\":13}",
                 "a\"b\\c\n\t\r\b\f\x01\x1f\x7f", 13);
}

static void test_nul_bytes_are_kept_as_u0000(void **state)
{
  (void)state;
  assert_renders("{\"status\":\"ok\",\"data\":\"a\\u0000b\",\"bytes\":3}", "a\0b", 3);
}

static void test_valid_utf8_passes_through(void **state)
{
  (void)state;
  /* é, €, U+1F600 */
  assert_renders(
      "{\"status\":\"ok\",\"data\":\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\",\"bytes\":9}",
      "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9);
}

static void test_invalid_utf8_is_sent_as_base64_instead(void **state)
{
  (void)state;
  /* "ab\0\xff\"\n" is not UTF-8 because of \xff */
  assert_renders("{\"status\":\"ok\",\"data_base64\":\"YWIA/yIK\",\"bytes\":6}", "ab\0\xff\"\n", 6);
  assert_renders("{\"status\":\"ok\",\"data_base64\":\"/w==\",\"bytes\":1}", "\xff", 1);
  assert_renders("{\"status\":\"ok\",\"data_base64\":\"YcM=\",\"bytes\":2}", "a\xc3", 2);
}

static void test_utf8_validation_rejects_overlongs_surrogates_and_out_of_range(void **state)
{
  (void)state;
  assert_true(mdctl_utf8_valid((const uint8_t *)"", 0));
  assert_true(mdctl_utf8_valid((const uint8_t *)"\xf4\x8f\xbf\xbf", 4));  /* U+10FFFF */
  assert_false(mdctl_utf8_valid((const uint8_t *)"\xc0\xaf", 2));         /* overlong / */
  assert_false(mdctl_utf8_valid((const uint8_t *)"\xe0\x80\xaf", 3));     /* overlong */
  assert_false(mdctl_utf8_valid((const uint8_t *)"\xed\xa0\x80", 3));     /* U+D800 */
  assert_false(mdctl_utf8_valid((const uint8_t *)"\xf4\x90\x80\x80", 4)); /* > U+10FFFF */
  assert_false(mdctl_utf8_valid((const uint8_t *)"\xe2\x82", 2));         /* truncated */
  assert_false(mdctl_utf8_valid((const uint8_t *)"\x80", 1));             /* lone continuation */
}

static void text_fields(mdctl_json *j, const void *arg)
{
  (void)arg;
  mdctl_json_begin_array(j);
  mdctl_json_begin_object(j);
  mdctl_json_kv_str(j, "name", "bad\xffname");
  mdctl_json_kv_str(j, "absent", NULL);
  mdctl_json_key(j, "caps");
  mdctl_json_begin_array(j);
  mdctl_json_str(j, "ping");
  mdctl_json_str(j, "thread_dump");
  mdctl_json_end_array(j);
  mdctl_json_kv_bool(j, "ok", 1);
  mdctl_json_end_object(j);
  mdctl_json_begin_object(j);
  mdctl_json_end_object(j);
  mdctl_json_end_array(j);
}

static void test_text_fields_nesting_and_replacement_character(void **state)
{
  char *out;
  (void)state;
  out = render(text_fields, NULL);
  assert_string_equal(out, "[{\"name\":\"bad\\ufffdname\",\"caps\":[\"ping\",\"thread_dump\"],"
                           "\"ok\":true},{}]");
  free(out);
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_escapes_quotes_backslashes_and_control_characters),
      cmocka_unit_test(test_nul_bytes_are_kept_as_u0000),
      cmocka_unit_test(test_valid_utf8_passes_through),
      cmocka_unit_test(test_invalid_utf8_is_sent_as_base64_instead),
      cmocka_unit_test(test_utf8_validation_rejects_overlongs_surrogates_and_out_of_range),
      cmocka_unit_test(test_text_fields_nesting_and_replacement_character),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
