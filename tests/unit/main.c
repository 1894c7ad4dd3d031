/*
 * Unit test runner: every tests/unit/test_*.c registers its CUnit suites
 * through one ut_register_* function declared in unit.h.
 */
#include <stdio.h>
#include <stdlib.h>

#include <CUnit/Basic.h>

#include "tests/unit/unit.h"

int
main(void)
{
	unsigned int failed;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	ut_register_frame();
	ut_register_wire();
	ut_register_policy();
	ut_register_ledger();
	ut_register_coalesce();
	ut_register_crypto();
	ut_register_krb5();
	ut_register_doccache();
	CU_basic_set_mode(CU_BRM_NORMAL);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	return failed ? 1 : 0;
}
