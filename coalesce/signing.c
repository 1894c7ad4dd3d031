/*
 * signing.c - what smbaccel may alter in a session it holds no key for
 * (coalesce.h, "what may be altered"): learning from the server's answers
 * whether it signs answers MS-SMB2 does not require it to sign.
 */
#include "coalesce/coalesce.h"

/* MS-SMB2 2.2.1 commands and dialects used here (coalesce/ is pure: it does
 * not include the wire codec). */
#define CMD_NEGOTIATE      0x0000
#define CMD_SESSION_SETUP  0x0001
#define CMD_LOGOFF         0x0002
#define CMD_TREE_CONNECT   0x0003
#define CMD_CANCEL         0x000C
#define CMD_IOCTL          0x000B
#define DIALECT_0311       0x0311
#define STATUS_SUCCESS     0x00000000u

static const char *const signs_names[] = { "unknown", "when-required", "all" };

const char *
co_signs_name(enum co_signs s)
{
	return (unsigned int)s < 3 ? signs_names[s] : "?";
}

/* Answers whose signing says nothing about the server's habits. */
static bool
must_be_signed(const struct co_sign_facts *f)
{
	switch (f->command) {
	case CMD_NEGOTIATE:        /* never signed */
	case CMD_SESSION_SETUP:    /* the final one is signed (3.3.5.5.3) */
	case CMD_LOGOFF:           /* the session is going */
	case CMD_CANCEL:           /* has no answer */
	case CMD_IOCTL:            /* VALIDATE_NEGOTIATE is signed (3.3.5.15.12) */
		return true;
	case CMD_TREE_CONNECT:     /* signed at 3.1.1 (3.3.5.7) */
		return f->dialect >= DIALECT_0311;
	default:
		return false;
	}
}

enum co_signs
co_signs_observe(enum co_signs cur, const struct co_sign_facts *f)
{
	if (f->interim || f->sealed || f->req_signed ||
	    f->status != STATUS_SUCCESS || must_be_signed(f))
		return cur;
	if (f->rsp_signed)
		return CO_SIGNS_ALL;
	return cur == CO_SIGNS_UNKNOWN ? CO_SIGNS_REQUIRED : cur;
}

bool
co_may_alter(enum co_alter what, enum co_signs session, bool server_signs_all)
{
	if (session == CO_SIGNS_UNKNOWN)
		return false;
	if (what == CO_ALTER_SYNTH)
		return true;
	return session == CO_SIGNS_REQUIRED && !server_signs_all;
}
