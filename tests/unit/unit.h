/* Registration hooks of the CUnit suites, one per test file. */
#ifndef SMBACCEL_UNIT_H
#define SMBACCEL_UNIT_H

void ut_register_frame(void);
void ut_register_wire(void);
void ut_register_policy(void);
void ut_register_ledger(void);
void ut_register_coalesce(void);
void ut_register_crypto(void);
void ut_register_krb5(void);
void ut_register_doccache(void);

#endif
