/* The heap-dump line scanner: the fields it picks out of lines as Ruby
 * writes them, JSON it must accept in other shapes, and broken lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/scan.h"

static int scan(const char *text, mdp_analysis_obj *o, const char **why)
{
  mdp_analysis_line l = {text, strlen(text), NULL, 0, strlen(text)};
  *why = NULL;
  return mdp_analysis_scan(&l, o, why);
}

static void test_ruby_line(void **s)
{
  mdp_analysis_obj o;
  const char *why;
  (void)s;
  assert_int_equal(
      scan("{\"address\":\"0x7f734617d688\", \"type\":\"STRING\", \"class\":\"0x7f7349dea440\", "
           "\"embedded\":true, \"bytesize\":8, \"value\":\"a\\\"b\\\\c\\u00e9\", "
           "\"encoding\":\"UTF-8\", \"file\":\"mk.rb\", \"line\":3, \"method\":\"initialize\", "
           "\"generation\":9, \"memsize\":40, \"flags\":{\"wb_protected\":true, \"old\":true}}",
           &o, &why),
      0);
  assert_int_equal(o.address, 0x7f734617d688ull);
  assert_int_equal(o.type, MDP_T_STRING);
  assert_int_equal(o.class_addr, 0x7f7349dea440ull);
  assert_int_equal(o.bytesize, 8);
  assert_int_equal(o.line, 3);
  assert_true(o.has_gen);
  assert_int_equal(o.generation, 9);
  assert_int_equal(o.memsize, 40);
  assert_true(o.old);
  assert_false(o.pinned);
  assert_int_equal(o.file_len, 5);
  assert_memory_equal(o.file, "mk.rb", 5);
  char out[32];
  size_t n = mdp_analysis_unescape(o.value, o.value_len, out, sizeof(out));
  assert_int_equal(n, 7);
  assert_string_equal(out, "a\"b\\c\xc3\xa9");
}

static void test_root_and_class(void **s)
{
  mdp_analysis_obj o;
  const char *why;
  (void)s;
  assert_int_equal(
      scan("{\"type\":\"ROOT\", \"root\":\"vm\", \"references\":[\"0x1\", \"0x2\"]}", &o, &why), 0);
  assert_int_equal(o.type, MDP_T_ROOT);
  assert_int_equal(o.address, 0);
  assert_int_equal(scan("{\"address\":\"0x10\", \"type\":\"CLASS\", \"class\":\"0x18\", "
                        "\"name\":\"Cart::Line\", \"references\":[], \"memsize\":500, "
                        "\"flags\":{\"pinned\":true}}",
                        &o, &why),
                   0);
  assert_int_equal(o.type, MDP_T_CLASS);
  assert_int_equal(o.name_len, 10);
  assert_true(o.pinned);
  assert_false(o.has_gen);
  assert_null(o.file);
}

/* Valid JSON that Ruby does not write today: other spacing, key order,
 * nested unknown values, references holding other text. */
static void test_other_shapes(void **s)
{
  mdp_analysis_obj o;
  const char *why;
  (void)s;
  assert_int_equal(scan(" { \"memsize\" : 72 ,\"extra\":{\"a\":[1,2.5e3,-4,null,false,{}]}, "
                        "\"references\":[\"0x1]\", \"x\"], \"type\":\"HASH\", "
                        "\"address\":\"0xABC8\" } ",
                        &o, &why),
                   0);
  assert_int_equal(o.address, 0xabc8);
  assert_int_equal(o.type, MDP_T_HASH);
  assert_int_equal(o.memsize, 72);
  assert_int_equal(scan("{\"address\":\"0x8\", \"type\":\"SOMETHING_NEW\", \"value\":3}", &o, &why),
                   0);
  assert_int_equal(o.type, MDP_T_UNKNOWN);
  assert_null(o.value);
  assert_string_equal(mdp_analysis_type_name(MDP_T_IMEMO), "IMEMO");
}

static void expect_broken(const char *text, const char *reason)
{
  mdp_analysis_obj o;
  const char *why;
  assert_int_equal(scan(text, &o, &why), -1);
  assert_non_null(why);
  if(reason)
    assert_string_equal(why, reason);
}

static void test_broken(void **s)
{
  (void)s;
  expect_broken("", "empty line");
  expect_broken("[1,2]", "not a JSON object");
  expect_broken("{\"address\":\"0x10\", \"type\":\"OBJECT\"", NULL);
  expect_broken("{\"address\":\"0x10\" \"type\":\"OBJECT\"}", "',' or '}' was expected");
  expect_broken("{\"address\":\"0xZZ\", \"type\":\"OBJECT\"}", "bad address");
  expect_broken("{\"address\":\"0x0\", \"type\":\"OBJECT\"}", "bad address");
  expect_broken("{\"type\":\"OBJECT\", \"memsize\":40}", "object without an address");
  expect_broken("{\"address\":\"0x10\", \"type\":\"OBJECT\"} x", "text after the object");
  expect_broken("{\"address\":\"0x10\", \"value\":\"abc}", "unterminated string");
  expect_broken("{\"address\":\"0x10\", \"x\":[1,2}", "unbalanced brackets");
  expect_broken("{\"address\":\"0x10\", \"x\":tru}", "bad literal");
  expect_broken("{\"address\":\"0x10\", \"memsize\":99999999999999999999999}", "number too large");
  expect_broken(
      "{\"address\":\"0x10\", \"x\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]"
      "]]]]]]]]]]]]]}",
      "nested too deeply");
}

/* A long line comes as its first and last bytes: fields before the cut
 * come from the head, the trailing ones from the tail. */
static void test_head_and_tail(void **s)
{
  const char *head = "{\"address\":\"0x20\", \"type\":\"STRING\", \"class\":\"0x18\", "
                     "\"bytesize\":3000000, \"value\":\"abcabcabc";
  const char *tail = "abcabc\\\", \\\"file\\\":\\\"fake.rb\\\"\", \"file\":\"real.rb\", "
                     "\"line\":12, \"generation\":4, \"memsize\":3000041, "
                     "\"flags\":{\"old\":true}}";
  mdp_analysis_line l = {head, strlen(head), tail, strlen(tail), 3000200};
  mdp_analysis_obj o;
  const char *why = NULL;
  (void)s;
  assert_int_equal(mdp_analysis_scan(&l, &o, &why), 0);
  assert_int_equal(o.address, 0x20);
  assert_int_equal(o.type, MDP_T_STRING);
  assert_true(o.value_cut);
  assert_int_equal(o.value_len, 9);
  assert_int_equal(o.file_len, 7);
  assert_memory_equal(o.file, "real.rb", 7);
  assert_int_equal(o.line, 12);
  assert_int_equal(o.generation, 4);
  assert_int_equal(o.memsize, 3000041);
  assert_true(o.old);
}

static void test_unescape_limits(void **s)
{
  char out[8];
  (void)s;
  /* A surrogate pair becomes one 4-byte character; a lone one U+FFFD. */
  assert_int_equal(mdp_analysis_unescape("\\ud83d\\ude00", 12, out, sizeof(out)), 4);
  assert_string_equal(out, "\xf0\x9f\x98\x80");
  assert_int_equal(mdp_analysis_unescape("\\ud83dx", 7, out, sizeof(out)), 4);
  assert_string_equal(out, "\xef\xbf\xbdx");
  /* Cut to the buffer; a character that does not fit is left out whole. */
  assert_int_equal(mdp_analysis_unescape("abcdef\\u00e9", 12, out, sizeof(out)), 6);
  assert_string_equal(out, "abcdef");
  /* A short \u escape: U+FFFD, and its digits stay text. */
  assert_int_equal(mdp_analysis_unescape("\\u12", 4, out, sizeof(out)), 5);
  assert_string_equal(out, "\xef\xbf\xbd"
                           "12");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_ruby_line),     cmocka_unit_test(test_root_and_class),
      cmocka_unit_test(test_other_shapes),  cmocka_unit_test(test_broken),
      cmocka_unit_test(test_head_and_tail), cmocka_unit_test(test_unescape_limits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
