/* Registration hooks of the CUnit suites, one per test file. */
#ifndef SMBACCEL_UNIT_H
#define SMBACCEL_UNIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void ut_register_frame(void);
void ut_register_wire(void);
void ut_register_policy(void);
void ut_register_ledger(void);
void ut_register_coalesce(void);
void ut_register_crypto(void);
void ut_register_krb5(void);
void ut_register_doccache(void);

/* The security buffer of a SESSION_SETUP request or response (the n
 * bytes at m, from its SMB2 header on); NULL if it does not decode.
 * test_crypto.c. */
const uint8_t *ut_secbuf(const uint8_t *m, size_t n, bool response,
    size_t *len);

#endif
