/*
 * ctlout.c - pieces of the control socket's answers (control.c): JSON
 * strings, and the keytabs smbaccel holds (`smbaccelctl keytabs`).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "proxy/control.h"
#include "proxy/keyed.h"
#include "proxy/keyfiles.h"
#include "proxy/auth/auth.h"

/* Length of the well-formed UTF-8 character at s (RFC 3629: no overlong
 * form, no surrogate, at most U+10FFFF), 0 if there is none. */
static size_t
utf8_len(const unsigned char *s)
{
	size_t n, i;
	uint32_t cp;

	if (s[0] >= 0xC2 && s[0] <= 0xDF) {
		n = 2;
		cp = s[0] & 0x1F;
	} else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		n = 3;
		cp = s[0] & 0x0F;
	} else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		n = 4;
		cp = s[0] & 0x07;
	} else
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return n;
}

void
px_ctl_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	while (s && *s) {
		unsigned char ch = (unsigned char)*s;
		size_t n;

		if (ch < 0x80) {
			if (ch == '"' || ch == '\\')
				fprintf(f, "\\%c", ch);
			else if (ch < 0x20)
				fprintf(f, "\\u%04x", ch);
			else
				fputc(ch, f);
			s++;
			continue;
		}
		/* a name cut inside a character (a server part of 255 bytes,
		 * say) would make the whole answer invalid JSON */
		n = utf8_len((const unsigned char *)s);
		if (n == 0) {
			fputs("\\ufffd", f);
			s++;
		} else {
			fwrite(s, 1, n, f);
			s += n;
		}
	}
	fputc('"', f);
}

/* ---- keytabs ------------------------------------------------------------------ */

static void
when_str(time_t t, char *buf, size_t len)
{
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
		snprintf(buf, len, "%lld", (long long)t);
}

/* The keytabs in use, their keys (never the key bytes) and when each was
 * read; the last ticket none had a key for. */
void
px_ctl_keytabs(FILE *f, bool json)
{
	const struct px_keytab *kt;
	struct px_keyed_miss m;
	const char *path, *princ;
	size_t i, j, n;
	time_t loaded;
	uint32_t kvno;
	int32_t et;
	char when[64];
	bool miss = px_keyed_last_miss(&m);

	if (json)
		fprintf(f, "{\"keytabs\":[");
	for (i = 0; (kt = px_keyfiles_keytab(i, &path, &loaded)) != NULL; i++) {
		n = px_keytab_count(kt);
		when_str(loaded, when, sizeof(when));
		if (json) {
			fprintf(f, "%s{\"path\":", i ? "," : "");
			px_ctl_json_str(f, path);
			fprintf(f, ",\"loaded\":%lld,\"keys\":[",
			    (long long)loaded);
		} else
			fprintf(f, "keytab %s: %zu key%s, read %s\n", path, n,
			    n == 1 ? "" : "s", when);
		for (j = 0; j < n; j++) {
			px_keytab_entry(kt, j, &princ, &kvno, &et);
			if (json) {
				fprintf(f, "%s{\"principal\":", j ? "," : "");
				px_ctl_json_str(f, princ);
				fprintf(f, ",\"kvno\":%lu,\"enctype\":\"%s\"}",
				    (unsigned long)kvno,
				    px_krb_enctype_name(et));
			} else
				fprintf(f, "  %s kvno %lu %s\n", princ,
				    (unsigned long)kvno,
				    px_krb_enctype_name(et));
		}
		if (json)
			fprintf(f, "]}");
	}
	if (!json) {
		if (i == 0)
			fprintf(f, "no keytab (keytab = in the policy)\n");
		if (miss) {
			when_str(m.at, when, sizeof(when));
			fprintf(f, "last ticket without a key: %s %s kvno %lu at "
			    "%s; %llu session%s relayed unkeyed for want of "
			    "a key since start\n", m.service,
			    px_krb_enctype_name(m.enctype), m.kvno, when,
			    m.sessions, m.sessions == 1 ? "" : "s");
		} else if (i > 0)
			fprintf(f, "no ticket since start lacked a key\n");
		return;
	}
	fprintf(f, "],\"no_matching_key\":");
	if (miss) {
		fprintf(f, "{\"service\":");
		px_ctl_json_str(f, m.service);
		fprintf(f, ",\"enctype\":\"%s\",\"kvno\":%lu,\"at\":%lld,"
		    "\"sessions\":%llu}", px_krb_enctype_name(m.enctype), m.kvno,
		    (long long)m.at, m.sessions);
	} else
		fprintf(f, "null");
	fprintf(f, "}\n");
}

/* ---- Prometheus text format ---- */

/* What follows NAME in a metric's name: "_total" for a counter, unless
 * NAME already ends so (connections_total). */
const char *
px_ctl_prom_sfx(const char *name, bool counter)
{
	size_t n = strlen(name);

	if (!counter || (n >= 6 && strcmp(name + n - 6, "_total") == 0))
		return "";
	return "_total";
}

void
px_ctl_prom_head(FILE *f, const char *name, bool counter, const char *help)
{
	const char *sfx = px_ctl_prom_sfx(name, counter);

	fprintf(f, "# HELP smbaccel_%s%s %s\n# TYPE smbaccel_%s%s %s\n",
	    name, sfx, help, name, sfx, counter ? "counter" : "gauge");
}

/* A label value: backslash, double quote and newline escaped. */
void
px_ctl_prom_label(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}
