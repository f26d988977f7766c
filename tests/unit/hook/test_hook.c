/* hook.c's outcome codes: none is a negated errno or a wire library code,
 * and mdh_strerror names each. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "md/wire.h"
#include "memdiag/hook.h"

static const int codes[] = {MDH_ETIMEDOUT, MDH_EINTR,   MDH_ESTOPPED, MDH_ENOMEM,
                            MDH_EINVAL,    MDH_EFORKED, MDH_ETHREAD,  MDH_ESTALE};

static void outcomes_are_their_own(void **state)
{
  (void)state;
  for(size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
    assert_true(codes[i] <= -MDH_ERR_BASE);
    for(size_t j = 0; j < i; j++)
      assert_int_not_equal(codes[i], codes[j]);
    /* below every MD_* code, which are below every -errno */
    assert_true(codes[i] < MD_ECONFIG);
    assert_string_not_equal(mdh_strerror(codes[i]), "unknown error");
  }
  assert_int_not_equal(MDH_ETIMEDOUT, -EPERM);
  assert_string_equal(mdh_strerror(MDH_ETIMEDOUT), "timed out");
  assert_string_equal(mdh_strerror(-EPERM), "unknown error");
}

int main(void)
{
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(outcomes_are_their_own),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
