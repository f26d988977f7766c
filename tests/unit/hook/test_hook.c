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
  /* one after the other below -MDH_ERR_BASE (so each its own), and below
   * every MD_* code, which are below every -errno */
  size_t n = sizeof codes / sizeof codes[0];
  for(size_t i = 0; i < n; i++) {
    assert_int_equal(codes[i], -(MDH_ERR_BASE + 1 + (int)i));
    assert_string_not_equal(mdh_strerror(codes[i]), "unknown error");
  }
  assert_true(-MDH_ERR_BASE < MD_ECONFIG);
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
