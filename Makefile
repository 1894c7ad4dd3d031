# smbaccel - SMB2/3 WAN accelerator.  Plain GNU make, explicit source lists.
#
#   make            build bin/smbaccel, bin/smbaccelctl and the test tools
#   make check      install dependencies, build (plain and SANITIZE=1), run unit
#                   + integration tests (against the sanitized daemon)
#   make demo       install dependencies, build, run the demo
#   make bench      benchmarks (ratios against a direct run; bench-crypto:
#                   only the CPU cost of keyed sessions; bench-krb: only
#                   Kerberos-keyed sessions over the WAN)
#   make bench-tcp  the WAN emulator against TCP's textbook behaviour
#   make fuzz       libFuzzer drivers for a set time each
#   make install    DESTDIR / PREFIX honoured
#   make SANITIZE=1 ASan + UBSan build

PREFIX  ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
UNITDIR ?= /lib/systemd/system
MODULESLOADDIR ?= $(PREFIX)/lib/modules-load.d

CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
           -Wpointer-arith -Wcast-qual -Wformat=2 -Wvla
ifneq ($(CI),)
WARN    += -Werror
endif
# SANITIZE=1: ASan + UBSan tree in build-san/ and bin-san/, so that it never
# clobbers the normal bin/ (tests/integration/t_sanitize.sh runs it through
# SMBACCEL=bin-san/smbaccel).  -O1 keeps the stack traces readable.
ifeq ($(SANITIZE),1)
CFLAGS  += -O1 -fsanitize=address,undefined -fno-omit-frame-pointer \
           -fno-sanitize-recover=all
LDFLAGS += -fsanitize=address,undefined
BUILD   := build-san
BIN     := bin-san
else
BUILD   := build
BIN     := bin
endif
CPPFLAGS += -std=gnu11 -D_GNU_SOURCE -I. $(WARN)

OBJDIR  := $(BUILD)/obj

# --- modules ------------------------------------------------------------
# proxy/smb2/ and proxy/auth/ are pure (no libev, no connection or daemon
# headers), like coalesce/ and policy/ (tests/check-layout.sh enforces it).
WIRE_SRC   := proxy/smb2/frame.c proxy/smb2/reader.c proxy/smb2/decode.c \
              proxy/smb2/cctx.c \
              proxy/smb2/encode.c
AUTH_SRC   := proxy/auth/der.c proxy/auth/spnego.c proxy/auth/ntlm.c \
              proxy/auth/secrets.c proxy/auth/smbcrypto.c proxy/auth/krb5.c \
              proxy/auth/keytab.c
POLICY_SRC := policy/policy.c
COALESCE_SRC := coalesce/extent.c coalesce/credits.c coalesce/readahead.c \
              coalesce/brl.c \
              coalesce/doccache.c \
              coalesce/signing.c
# The engine, top layer first (docs/design.md, "Layers"): each file calls
# only the ones after it; the relay layer is relay.c .. keyed.c.
PROXY_SRC  := proxy/daemon.c proxy/control.c proxy/ctlout.c proxy/listener.c \
              proxy/tproxy.c \
              proxy/conn.c proxy/side.c proxy/upstream.c \
              proxy/relay.c proxy/lease.c proxy/coherence.c proxy/locks.c \
              proxy/readahead.c proxy/doccache.c proxy/compound.c \
              proxy/wberror.c proxy/writebehind.c \
              proxy/create.c proxy/alter.c proxy/emit.c proxy/keyed.c proxy/keyfiles.c \
              proxy/ledger.c proxy/openidx.c proxy/sharestats.c proxy/docstore.c proxy/buf.c proxy/log.c
SMBACCEL_SRC := proxy/main.c $(PROXY_SRC) $(WIRE_SRC) $(AUTH_SRC) $(POLICY_SRC) \
              $(COALESCE_SRC)
CTL_SRC    := proxy/smbaccelctl.c

UNIT_SRC   := tests/unit/main.c tests/unit/test_frame.c tests/unit/test_wire.c \
              tests/unit/test_policy.c tests/unit/test_ledger.c \
              tests/unit/test_coalesce.c tests/unit/test_crypto.c \
              tests/unit/test_krb5.c tests/unit/test_doccache.c
UNIT_LIB_SRC := proxy/log.c proxy/ledger.c proxy/openidx.c proxy/sharestats.c proxy/docstore.c $(AUTH_SRC) $(WIRE_SRC) $(POLICY_SRC) \
              $(COALESCE_SRC)

SMBDD_SRC  := tests/tools/smbdd.c
WANEM_SRC  := tests/tools/wanem.c
WANLINK_SRC := tests/tools/wanlink.c
CRYPTOFLOOR_SRC := tests/bench/cryptofloor.c

# MIT Kerberos (libkrb5-dev): keytab API and krb5_c_decrypt (proxy/auth/keytab.c)
CFLAGS_KRB5 := $(shell pkg-config --cflags krb5 2>/dev/null)
LIBS_KRB5   := $(or $(shell pkg-config --libs krb5 2>/dev/null),-lkrb5 -lk5crypto -lcom_err)
LIBS_DAEMON := -lev -linih -lsystemd -lssl -lcrypto -lnl-route-3 -lnl-3 -lm $(LIBS_KRB5)
CFLAGS_NL   := $(shell pkg-config --cflags libnl-route-3.0 2>/dev/null)
CPPFLAGS    += $(CFLAGS_NL) $(CFLAGS_KRB5)

obj = $(patsubst %.c,$(OBJDIR)/%.o,$(1))

PROGS := $(BIN)/smbaccel $(BIN)/smbaccelctl $(BIN)/smbdd $(BIN)/wanem \
         $(BIN)/wanlink $(BIN)/cryptofloor
# tests/tools/gosmb: a client that is neither Samba's nor impacket's
# (Debian's go-smb2), built when Go is installed (deploy/install-deps.sh
# installs it), offline, from the Debian packages' sources.
GO := $(shell command -v go 2>/dev/null)
ifneq ($(GO),)
PROGS += $(BIN)/gosmb
endif
ifneq ($(SANITIZE),1)
ALL_TARGETS := $(PROGS) $(BIN)/unit-tests
else
ALL_TARGETS := $(PROGS) $(BIN)/unit-tests
endif

.PHONY: all check unit integration demo bench bench-tcp bench-crypto bench-krb fuzz \
        install uninstall deb clean deps
all: $(ALL_TARGETS)

$(OBJDIR)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BIN)/smbaccel: $(call obj,$(SMBACCEL_SRC))
	@mkdir -p $(BIN)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS_DAEMON)

$(BIN)/smbaccelctl: $(call obj,$(CTL_SRC))
	@mkdir -p $(BIN)
	$(CC) $(LDFLAGS) -o $@ $^

$(BIN)/unit-tests: $(call obj,$(UNIT_SRC) $(UNIT_LIB_SRC))
	@mkdir -p $(BIN)
	$(CC) $(LDFLAGS) -o $@ $^ -lcunit -linih -lssl -lcrypto -lm $(LIBS_KRB5)

$(BIN)/smbdd: $(call obj,$(SMBDD_SRC))
	@mkdir -p $(BIN)
	$(CC) $(LDFLAGS) -o $@ $^ -lsmbclient

$(BIN)/gosmb: tests/tools/gosmb/main.go
	@mkdir -p $(BIN) build/gocache
	GO111MODULE=off GOENV=off GOPATH=/usr/share/gocode GOCACHE=$(CURDIR)/build/gocache \
	    GOFLAGS= $(GO) build -o $@ ./tests/tools/gosmb

$(BIN)/wanem: $(call obj,$(WANEM_SRC))
	@mkdir -p $(BIN)
	$(CC) $(LDFLAGS) -o $@ $^ -lev -lm

$(BIN)/wanlink: $(call obj,$(WANLINK_SRC))
	@mkdir -p $(BIN)
	$(CC) $(LDFLAGS) -o $@ $^ -lm

$(BIN)/cryptofloor: $(call obj,$(CRYPTOFLOOR_SRC))
	@mkdir -p $(BIN)
	$(CC) $(LDFLAGS) -o $@ $^ -lcrypto

-include $(shell find $(OBJDIR) -name '*.d' 2>/dev/null)

# --- tests ----------------------------------------------------------------
deps:
	@sh deploy/install-deps.sh

unit: $(BIN)/unit-tests
	$(BIN)/unit-tests

integration: all
	sh tests/run-integration.sh

# The integration suite runs against the ASan + UBSan daemon (bin-san/);
# tests that measure memory or CPU keep bin/ (tests/run-integration.sh).
check: deps
	$(MAKE) all
	$(MAKE) SANITIZE=1 all
	SANITIZE_SUITE=1 sh tests/run-all.sh

demo: deps
	$(MAKE) all
	sh tests/demo.sh

bench: deps
	$(MAKE) all
	sh tests/bench/run $(BENCH_ARGS)
	bash tests/bench/crypto $(BENCH_CRYPTO_ARGS)
	bash tests/bench/krb $(BENCH_KRB_ARGS)
	bash tests/bench/goclient $(BENCH_GO_ARGS)

# only the keyed-session CPU benchmark (tests/bench/crypto)
bench-crypto: all
	bash tests/bench/crypto $(BENCH_CRYPTO_ARGS)

# only Kerberos-keyed sessions over 20 ms / 100 Mbit/s: 1 KiB writes and the
# document workloads (tests/bench/krb)
bench-krb: all
	bash tests/bench/krb $(BENCH_KRB_ARGS)

# one TCP stream per link and congestion control through bin/wanlink,
# against the Mathis estimate (docs/performance.md)
bench-tcp: deps
	$(MAKE) all
	sh tests/bench/tcp $(BENCH_ARGS)

# --- fuzzing (clang libFuzzer; tests/fuzz/) --------------------------------
# make fuzz-build     build every driver into build-fuzz/
# make fuzz           replay tests/fuzz/regress/, then run each driver for
#                     FUZZ_SECONDS (FUZZ_JOBS at a time); corpora grow in
#                     build-fuzz/corpus/NAME (seeded from tests/fuzz/seeds/NAME),
#                     crashes land in build-fuzz/artifacts/ and fail the run.
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_JOBS    ?= 1
FUZZ_DIR     := build-fuzz
FUZZ_CFLAGS  := -g -O1 -fsanitize=fuzzer,address,undefined \
                -fno-sanitize-recover=all -std=gnu11 -D_GNU_SOURCE -I. \
                $(CFLAGS_NL) $(CFLAGS_KRB5) -Wno-unused-command-line-argument
FUZZERS      := frame smb2 policy relay \
                $(if $(wildcard tests/fuzz/fuzz_ntlm.c),ntlm) \
                $(if $(wildcard tests/fuzz/fuzz_krb5.c),krb5)
FUZZ_SRC_frame  := proxy/smb2/frame.c
FUZZ_SRC_smb2   := $(WIRE_SRC)
FUZZ_SRC_policy := $(POLICY_SRC)
FUZZ_LIBS_policy := -linih
# the whole daemon but main(): conn.c and relay.c through real sockets
FUZZ_SRC_relay  := $(filter-out proxy/main.c,$(SMBACCEL_SRC))
FUZZ_LIBS_relay := $(LIBS_DAEMON)
FUZZ_SRC_ntlm   := $(AUTH_SRC) $(WIRE_SRC)
FUZZ_LIBS_ntlm  := -lssl -lcrypto $(LIBS_KRB5)
FUZZ_SRC_krb5   := $(AUTH_SRC) $(WIRE_SRC)
FUZZ_LIBS_krb5  := -lssl -lcrypto $(LIBS_KRB5)
FUZZ_HDRS    := $(wildcard proxy/*.h proxy/smb2/*.h proxy/auth/*.h policy/*.h \
                coalesce/*.h)
FUZZ_BINS    := $(patsubst %,$(FUZZ_DIR)/fuzz_%,$(FUZZERS))

.PHONY: fuzz-build sanitize-check
fuzz-build: $(FUZZ_BINS)

.SECONDEXPANSION:
$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $$(FUZZ_SRC_$$*) $(FUZZ_HDRS)
	@mkdir -p $(FUZZ_DIR)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_SRC_$*) $(FUZZ_LIBS_$*)

fuzz: fuzz-build
	FUZZ_DIR=$(FUZZ_DIR) FUZZ_JOBS=$(FUZZ_JOBS) \
	    sh tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZERS)

# ASan + UBSan daemon (bin-san/) through a representative integration subset
sanitize-check:
	$(MAKE) SANITIZE=1 all
	TESTS=t_sanitize sh tests/run-integration.sh

# --- install --------------------------------------------------------------
install: $(BIN)/smbaccel $(BIN)/smbaccelctl
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) \
	    $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 \
	    $(DESTDIR)$(SYSCONFDIR)/smbaccel $(DESTDIR)$(UNITDIR)
	install -m 0755 $(BIN)/smbaccel $(DESTDIR)$(SBINDIR)/smbaccel
	install -m 0755 $(BIN)/smbaccelctl $(DESTDIR)$(BINDIR)/smbaccelctl
	install -m 0755 deploy/smbaccel-keytab $(DESTDIR)$(SBINDIR)/smbaccel-keytab
	install -m 0644 docs/smbaccel.8 docs/smbaccelctl.8 docs/smbaccel-keytab.8 \
	    $(DESTDIR)$(MANDIR)/man8/
	install -m 0644 docs/smbaccel.conf.5 $(DESTDIR)$(MANDIR)/man5/
	sed 's|@SBINDIR@|$(SBINDIR)|g; s|@BINDIR@|$(BINDIR)|g' deploy/smbaccel.service.in \
	    > $(DESTDIR)$(UNITDIR)/smbaccel.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/smbaccel.service
	sed 's|@SBINDIR@|$(SBINDIR)|g' deploy/smbaccel-keytab@.service.in \
	    > $(DESTDIR)$(UNITDIR)/smbaccel-keytab@.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/smbaccel-keytab@.service
	install -m 0644 deploy/smbaccel-keytab@.timer $(DESTDIR)$(UNITDIR)/smbaccel-keytab@.timer
	sed 's|@BINDIR@|$(BINDIR)|g' deploy/smbaccel-metrics.service.in \
	    > $(DESTDIR)$(UNITDIR)/smbaccel-metrics.service
	chmod 0644 $(DESTDIR)$(UNITDIR)/smbaccel-metrics.service
	install -m 0644 deploy/smbaccel-metrics.timer $(DESTDIR)$(UNITDIR)/smbaccel-metrics.timer
	install -d $(DESTDIR)$(PREFIX)/share/smbaccel
	install -m 0755 deploy/iptables.sh $(DESTDIR)$(PREFIX)/share/smbaccel/iptables.sh
	install -m 0644 deploy/nftables.conf $(DESTDIR)$(PREFIX)/share/smbaccel/nftables.conf
	test -e $(DESTDIR)$(SYSCONFDIR)/smbaccel/smbaccel.conf || \
	    install -m 0644 deploy/smbaccel.conf $(DESTDIR)$(SYSCONFDIR)/smbaccel/smbaccel.conf
	install -d $(DESTDIR)$(MODULESLOADDIR)
	install -m 0644 deploy/modules-load.conf $(DESTDIR)$(MODULESLOADDIR)/smbaccel.conf

# --- Debian package ---------------------------------------------------------
# make deb: build/deb/smbaccel_VERSION_ARCH.deb from a make install into a
# staging root (PREFIX=/usr), with dpkg-deb; the shared-library
# dependencies come from dpkg-shlibdeps.  Build it on a Debian 12 machine
# (make deps), install it on another with apt-get install ./FILE.deb.
DEB_DIR     ?= build/deb
DEB_VERSION := $(shell sed -n 's/^\#define SMBACCEL_VERSION "\(.*\)"/\1/p' proxy/main.c)
deb: $(BIN)/smbaccel $(BIN)/smbaccelctl
	@rm -rf $(DEB_DIR)/root $(DEB_DIR)/shlibs
	$(MAKE) -s install DESTDIR=$(abspath $(DEB_DIR))/root PREFIX=/usr
	install -d $(DEB_DIR)/root/DEBIAN $(DEB_DIR)/root/usr/share/doc/smbaccel
	install -m 0644 README.md docs/deploy.md $(DEB_DIR)/root/usr/share/doc/smbaccel/
	strip --strip-unneeded $(DEB_DIR)/root/usr/sbin/smbaccel \
	    $(DEB_DIR)/root/usr/bin/smbaccelctl
	gzip -9n $(DEB_DIR)/root/usr/share/man/man*/*
	install -m 0644 deploy/debian/conffiles $(DEB_DIR)/root/DEBIAN/conffiles
	install -m 0755 deploy/debian/postinst deploy/debian/prerm \
	    deploy/debian/postrm $(DEB_DIR)/root/DEBIAN/
	mkdir -p $(DEB_DIR)/shlibs/debian && touch $(DEB_DIR)/shlibs/debian/control
	deps=$$(cd $(DEB_DIR)/shlibs && dpkg-shlibdeps -O \
	    $(abspath $(DEB_DIR))/root/usr/sbin/smbaccel \
	    $(abspath $(DEB_DIR))/root/usr/bin/smbaccelctl 2>/dev/null | \
	    sed -n 's/^shlibs:Depends=//p'); \
	[ -n "$$deps" ] || { echo "make deb: dpkg-shlibdeps found no dependencies" >&2; exit 1; }; \
	size=$$(du -sk --exclude=DEBIAN $(DEB_DIR)/root | cut -f1); \
	sed -e "s|@VERSION@|$(DEB_VERSION)|" \
	    -e "s|@ARCH@|$$(dpkg --print-architecture)|" \
	    -e "s|@SIZE@|$$size|" -e "s|@DEPENDS@|$$deps|" \
	    deploy/debian/control.in > $(DEB_DIR)/root/DEBIAN/control
	dpkg-deb --root-owner-group -Zxz --build $(DEB_DIR)/root \
	    $(DEB_DIR)/smbaccel_$(DEB_VERSION)_$$(dpkg --print-architecture).deb
	@rm -rf $(DEB_DIR)/shlibs

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/smbaccel $(DESTDIR)$(BINDIR)/smbaccelctl \
	    $(DESTDIR)$(SBINDIR)/smbaccel-keytab $(DESTDIR)$(MANDIR)/man8/smbaccel-keytab.8 \
	    $(DESTDIR)$(MANDIR)/man8/smbaccel.8 $(DESTDIR)$(MANDIR)/man8/smbaccelctl.8 \
	    $(DESTDIR)$(MANDIR)/man5/smbaccel.conf.5 $(DESTDIR)$(UNITDIR)/smbaccel.service \
	    $(DESTDIR)$(UNITDIR)/smbaccel-keytab@.service $(DESTDIR)$(UNITDIR)/smbaccel-keytab@.timer \
	    $(DESTDIR)$(UNITDIR)/smbaccel-metrics.service $(DESTDIR)$(UNITDIR)/smbaccel-metrics.timer \
	    $(DESTDIR)$(PREFIX)/share/smbaccel/iptables.sh \
	    $(DESTDIR)$(PREFIX)/share/smbaccel/nftables.conf \
	    $(DESTDIR)$(MODULESLOADDIR)/smbaccel.conf
	-rmdir $(DESTDIR)$(PREFIX)/share/smbaccel 2>/dev/null

clean:
	rm -rf build build-san bin bin-san build-fuzz
