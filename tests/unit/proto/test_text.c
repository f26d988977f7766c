/* Text helpers: md_seterr and md_printable, the one sanitiser for peer text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "md/text.h"

static void seterr_formats_and_truncates(void **state)
{
  char err[8];

  (void)state;
  md_seterr(err, sizeof(err), "key %s: %d", "Size", 12345);
  assert_string_equal(err, "key Siz");
  md_seterr(err, sizeof(err), "%d", 42);
  assert_string_equal(err, "42");
}

static void seterr_null_safe(void **state)
{
  char err[4] = "abc";

  (void)state;
  md_seterr(NULL, 100, "nothing %d", 1);
  md_seterr(err, 0, "nothing %d", 1);
  assert_string_equal(err, "abc");
}

static void seterr_at_names_the_place(void **state)
{
  char err[32];

  (void)state;
  md_seterr_at(err, sizeof err, "heap-2.json", 48213, "bad %s", "line");
  assert_string_equal(err, "heap-2.json:48213: bad line");
  md_seterr_at(err, sizeof err, "trace.csv", 0, "empty");
  assert_string_equal(err, "trace.csv: empty");
  md_seterr_at(err, 8, "a-long-path", 1, "x");
  assert_string_equal(err, "a-long-");
  md_seterr_at(NULL, 10, "p", 1, "x");
}

static void plain_replaces_controls(void **state)
{
  char out[64];
  size_t n;

  (void)state;
  n = md_printable(out, sizeof(out),
                   "a\nb\tc\x1b[31md\x7f"
                   "e",
                   MD_TEXT_PLAIN);
  assert_string_equal(out, "a?b?c?[31md?e");
  assert_int_equal(n, strlen(out));
  /* Bytes >= 0x80 are left alone without MD_TEXT_UTF8. */
  md_printable(out, sizeof(out), "caf\xc3\xa9 \xff", MD_TEXT_PLAIN);
  assert_string_equal(out, "caf\xc3\xa9 \xff");
}

static void keep_lines(void **state)
{
  char out[64];

  (void)state;
  md_printable(out, sizeof(out), "a\nb\tc\rd\x1b", MD_TEXT_KEEP_LINES);
  assert_string_equal(out, "a\nb\tc?d?");
}

static void truncates_and_terminates(void **state)
{
  char out[4];

  (void)state;
  memset(out, 'x', sizeof(out));
  assert_int_equal(md_printable(out, sizeof(out), "abc\ndef", MD_TEXT_PLAIN), 3);
  assert_string_equal(out, "abc");
  assert_int_equal(md_printable(out, 1, "abc", MD_TEXT_PLAIN), 0);
  assert_string_equal(out, "");
  assert_int_equal(md_printable(out, 0, "abc", MD_TEXT_PLAIN), 0);
  assert_int_equal(md_printable(out, sizeof(out), NULL, MD_TEXT_PLAIN), 0);
  assert_string_equal(out, "");
}

static void in_place(void **state)
{
  char s[] = "name\n\x1b]0;title\x07";

  (void)state;
  assert_ptr_equal(md_printable_inplace(s, MD_TEXT_PLAIN), s);
  assert_string_equal(s, "name??]0;title?");
  assert_null(md_printable_inplace(NULL, MD_TEXT_PLAIN));
}

static void utf8_keeps_valid(void **state)
{
  char out[64];
  const char *ok = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";

  (void)state;
  md_printable(out, sizeof(out), ok, MD_TEXT_UTF8);
  assert_string_equal(out, ok);
}

static void utf8_replaces_invalid(void **state)
{
  char out[64];

  (void)state;
  /* Lone continuation, invalid lead, truncated sequence. */
  md_printable(out, sizeof(out),
               "a\x80"
               "b\xff"
               "c\xe2\x82",
               MD_TEXT_UTF8);
  assert_string_equal(out, "a?b?c??");
  /* Overlong '/', a surrogate, above U+10FFFF. */
  md_printable(out, sizeof(out), "\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80", MD_TEXT_UTF8);
  assert_string_equal(out, "??|???|????");
  /* C1 CSI (U+009B) is one '?'; U+00A0 is kept. */
  md_printable(out, sizeof(out),
               "x\xc2\x9b"
               "31m\xc2\xa0",
               MD_TEXT_UTF8);
  assert_string_equal(out, "x?31m\xc2\xa0");
}

static void utf8_never_cuts_a_sequence(void **state)
{
  char out[5];

  (void)state;
  /* "ab" + 3-byte euro needs 6 bytes with the NUL: the euro is dropped whole. */
  assert_int_equal(md_printable(out, sizeof(out), "ab\xe2\x82\xac", MD_TEXT_UTF8), 2);
  assert_string_equal(out, "ab");
}

static void utf8_in_place(void **state)
{
  char s[] = "\xc3\xa9\xff\n\xe2\x82\xac";

  (void)state;
  md_printable_inplace(s, MD_TEXT_UTF8 | MD_TEXT_KEEP_LINES);
  assert_string_equal(s, "\xc3\xa9?\n\xe2\x82\xac");
}

static void utf8_len_is_bounded(void **state)
{
  (void)state;
  assert_int_equal(md_utf8_len("a", 1), 1);
  assert_int_equal(md_utf8_len("\xe2\x82\xac", 3), 3);
  /* The same bytes with too short a length: not a whole sequence. */
  assert_int_equal(md_utf8_len("\xe2\x82\xac", 2), 0);
  assert_int_equal(md_utf8_len("\xf0\x9f\x98\x80", 4), 4);
  assert_int_equal(md_utf8_len("\xc1\xbf", 2), 0);
  assert_int_equal(md_utf8_len("x", 0), 0);
}

static void counted_source(void **state)
{
  char out[16];

  (void)state;
  /* Not NUL-terminated, with a NUL inside: counted, and the NUL shown. */
  assert_int_equal(md_printable_n(out, sizeof(out),
                                  "ab\0c\x1b"
                                  "dXYZ",
                                  6, MD_TEXT_PLAIN),
                   6);
  assert_string_equal(out, "ab?c?d");
  /* A UTF-8 sequence cut by srclen is not valid there. */
  assert_int_equal(md_printable_n(out, sizeof(out), "a\xe2\x82\xac", 3, MD_TEXT_UTF8), 3);
  assert_string_equal(out, "a??");
  assert_int_equal(md_printable_n(out, sizeof(out), NULL, 5, MD_TEXT_PLAIN), 0);
  assert_string_equal(out, "");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(seterr_formats_and_truncates),
      cmocka_unit_test(seterr_null_safe),
      cmocka_unit_test(seterr_at_names_the_place),
      cmocka_unit_test(plain_replaces_controls),
      cmocka_unit_test(keep_lines),
      cmocka_unit_test(truncates_and_terminates),
      cmocka_unit_test(in_place),
      cmocka_unit_test(utf8_keeps_valid),
      cmocka_unit_test(utf8_replaces_invalid),
      cmocka_unit_test(utf8_never_cuts_a_sequence),
      cmocka_unit_test(utf8_in_place),
      cmocka_unit_test(utf8_len_is_bounded),
      cmocka_unit_test(counted_source),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
