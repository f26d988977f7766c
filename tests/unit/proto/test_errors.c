/* errors.c: the wire library's outcomes cannot be mistaken for a negated
 * errno, and md_strerror names both kinds. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "md/wire.h"

static const int codes[] = {MD_EAGAIN, MD_EIO,    MD_ETLS,      MD_EPROTO, MD_ETOOBIG, MD_ECLOSED,
                            MD_ENOMEM, MD_EINVAL, MD_ETIMEDOUT, MD_EROLE,  MD_ECONFIG};

static void outcomes_are_no_errno(void **state)
{
  (void)state;
  for(size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    assert_true(codes[i] <= -MD_ERR_BASE);
    for(size_t j = 0; j < i; j++)
      assert_int_not_equal(codes[i], codes[j]);
  }
  /* the number that used to be both MD_EAGAIN and -EPERM */
  assert_int_not_equal(MD_EAGAIN, -EPERM);
}

static void strerror_names_both(void **state)
{
  (void)state;
  for(size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
    assert_string_not_equal(md_strerror(codes[i]), "unknown error");
  assert_string_equal(md_strerror(MD_EAGAIN), "operation would block");
  assert_string_equal(md_strerror(MD_OK), "success");
  assert_string_equal(md_strerror(-EPERM), strerror(EPERM));
  assert_string_equal(md_strerror(-ENOENT), strerror(ENOENT));
  assert_string_equal(md_strerror(-MD_ERR_BASE - 500), "unknown error");
  assert_string_equal(md_strerror(7), "unknown error");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(outcomes_are_no_errno),
      cmocka_unit_test(strerror_names_both),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
