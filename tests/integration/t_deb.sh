#!/bin/bash
# sanitizer: no (packages bin/ with make deb)
# test-timeout: 240
# `make deb`: the Debian package an administrator copies to the branch box.
#  1. control: package smbaccel, the version `smbaccel -V` prints, this
#     machine's architecture; Depends names the package of every shared
#     library the two binaries need (readelf NEEDED, found with dpkg -S),
#     so a dependency dpkg-shlibdeps left out fails here;
#  2. contents: exactly what `make install PREFIX=/usr` installs (man
#     pages gzipped), plus the docs; everything root:root; binaries
#     stripped; /etc/smbaccel/smbaccel.conf the only conffile; the
#     maintainer scripts parse (sh -n);
#  3. installed with dpkg into a private root (its own dpkg database;
#     maintainer scripts run with DPKG_ROOT, so they touch nothing of this
#     machine): the daemon there prints its version and accepts the
#     installed policy, a man page renders without warnings;
#  4. an edited policy survives reinstalling the package and removing it;
#     purging removes it; removing takes every other file away; purging
#     removes the document cache's store (/var/cache/smbaccel, copies of
#     file contents) too.
. "$(dirname "$0")/lib.sh"

command -v dpkg-deb >/dev/null || skip "no dpkg-deb"
command -v dpkg-shlibdeps >/dev/null || skip "no dpkg-shlibdeps (dpkg-dev)"
cd "$TOP" || fail "no $TOP"

# ---- build
info "make deb"
make -s deb DEB_DIR="$T/deb" >"$T/deb.log" 2>&1 || { cat "$T/deb.log"; fail "make deb failed"; }
arch=$(dpkg --print-architecture)
ver=$("$TOP/bin/smbaccel" -V | awk '{print $2}')
DEB=$T/deb/smbaccel_${ver}_${arch}.deb
[ -f "$DEB" ] || { ls -l "$T/deb"; fail "no $DEB"; }
info "built $(basename "$DEB"), $(stat -c %s "$DEB") bytes"

# ---- 1. control
info "1. control"
field() { dpkg-deb -f "$DEB" "$1"; }
assert_eq smbaccel "$(field Package)" "Package"
assert_eq "$ver" "$(field Version)" "Version"
assert_eq "$arch" "$(field Architecture)" "Architecture"
depends=$(field Depends)
info "Depends: $depends"
nlibs=0
for b in "$TOP/bin/smbaccel" "$TOP/bin/smbaccelctl"; do
	for lib in $(readelf -d "$b" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		path=$(ldconfig -p | awk -v l="$lib" '$1 == l { print $NF; exit }')
		[ -n "$path" ] || fail "$lib (needed by $(basename "$b")) not found by ldconfig"
		pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -n 1 | cut -d: -f1)
		[ -n "$pkg" ] || pkg=$(dpkg -S "$path" 2>/dev/null | head -n 1 | cut -d: -f1)
		[ -n "$pkg" ] || fail "no package owns $path ($lib)"
		echo "$depends" | tr ',' '\n' | sed 's/^ *//; s/ .*//' | grep -qx "$pkg" ||
		    fail "$(basename "$b") needs $lib from $pkg, which Depends does not name"
		nlibs=$((nlibs + 1))
	done
done
assert_ge 10 "$nlibs" "shared libraries checked against Depends"
info "the packages of $nlibs shared libraries are all in Depends"

# ---- 2. contents
info "2. contents"
make -s install DESTDIR="$T/ref" PREFIX=/usr >"$T/install.log" 2>&1 ||
    { cat "$T/install.log"; fail "make install failed"; }
want=$( { (cd "$T/ref" && find . -type f | sed 's|^\./||; s|^\(usr/share/man/.*\)$|\1.gz|');
	echo usr/share/doc/smbaccel/README.md; echo usr/share/doc/smbaccel/deploy.md; } | sort)
dpkg-deb --contents "$DEB" > "$T/contents"
got=$(awk '$1 !~ /^d/ { sub(/^\.\//, "", $6); print $6 }' "$T/contents" | sort)
[ "$got" = "$want" ] || { diff <(echo "$want") <(echo "$got"); fail "package contents differ from make install (diff above: < install, > package)"; }
awk '$2 != "root/root" { print; bad = 1 } END { exit bad }' "$T/contents" || fail "files not owned by root/root"
assert_eq "/etc/smbaccel/smbaccel.conf" "$(dpkg-deb --ctrl-tarfile "$DEB" | tar -xO ./conffiles)" "conffiles"
mkdir -p "$T/x"
dpkg-deb -x "$DEB" "$T/x"
dpkg-deb -e "$DEB" "$T/x/DEBIAN"
for s in postinst prerm postrm; do
	sh -n "$T/x/DEBIAN/$s" || fail "maintainer script $s does not parse"
done
for b in usr/sbin/smbaccel usr/bin/smbaccelctl; do
	readelf -S "$T/x/$b" | grep -q '\.symtab' && fail "$b is not stripped"
done
cmp -s "$T/ref/etc/smbaccel/smbaccel.conf" "$T/x/etc/smbaccel/smbaccel.conf" || fail "packaged policy differs"

# ---- 3. install into a private root
info "3. dpkg -i into a private root"
R=$T/root
mkdir -p "$R/var/lib/dpkg/updates" "$R/var/lib/dpkg/info"
: > "$R/var/lib/dpkg/status"
dpk() { dpkg --root="$R" --log=/dev/null --force-depends --force-script-chrootless "$@"; }
dpk -i "$DEB" > "$T/dpkg-i.log" 2>&1 || { cat "$T/dpkg-i.log"; fail "dpkg -i failed"; }
dpkg --root="$R" -s smbaccel | grep -qx 'Status: install ok installed' || fail "not installed"
assert_eq "smbaccel $ver" "$("$R/usr/sbin/smbaccel" -V)" "installed smbaccel -V"
assert_eq "smbaccel $ver" "$("$R/usr/sbin/smbaccel" --version)" "installed smbaccel --version"
"$R/usr/sbin/smbaccel" --help 2>/dev/null | grep -q '^usage: smbaccel ' || fail "smbaccel --help prints no usage on stdout"
"$R/usr/sbin/smbaccel" --bogus >/dev/null 2>&1; rc=$?
assert_eq 2 "$rc" "smbaccel --bogus exit status"
out=$("$R/usr/sbin/smbaccel" -t -c "$R/etc/smbaccel/smbaccel.conf" 2>&1) ||
    { echo "$out"; fail "smbaccel -t rejects the installed policy"; }
w=$(zcat "$R/usr/share/man/man8/smbaccelctl.8.gz" | groff -ww -man -Tutf8 2>&1 >/dev/null)
[ -z "$w" ] || { echo "$w"; fail "groff warnings in the installed smbaccelctl.8.gz"; }
# nothing of this machine was touched: the scripts ran under DPKG_ROOT
grep -q "DPKG_ROOT" "$T/x/DEBIAN/postinst" || fail "postinst ignores DPKG_ROOT"

# ---- 4. conffile
info "4. reinstall, remove, purge"
echo "# edited by the administrator" >> "$R/etc/smbaccel/smbaccel.conf"
dpk -i "$DEB" > "$T/dpkg-i2.log" 2>&1 || { cat "$T/dpkg-i2.log"; fail "second dpkg -i failed"; }
tail -n 1 "$R/etc/smbaccel/smbaccel.conf" | grep -q "edited by the administrator" ||
    fail "reinstalling replaced the edited policy"
dpk -r smbaccel > "$T/dpkg-r.log" 2>&1 || { cat "$T/dpkg-r.log"; fail "dpkg -r failed"; }
left=$(cd "$R" && find . -type f ! -path './var/lib/dpkg/*' | sed 's|^\./||' | sort)
assert_eq "etc/smbaccel/smbaccel.conf" "$left" "files left after dpkg -r (only the edited policy)"
# what the daemon's document cache leaves (read_cache_dir)
mkdir -p "$R/var/cache/smbaccel/ab" && echo "a copy of a file" > "$R/var/cache/smbaccel/ab/cd" ||
    fail "cannot make a document cache store in the private root"
# and its records of lost data (state_dir)
mkdir -p "$R/var/lib/smbaccel" && echo "# records" > "$R/var/lib/smbaccel/lost-opens" ||
    fail "cannot make a state directory in the private root"
dpk -P smbaccel > "$T/dpkg-p.log" 2>&1 || { cat "$T/dpkg-p.log"; fail "dpkg -P failed"; }
[ -e "$R/var/cache/smbaccel" ] && fail "dpkg -P left the document cache's store $R/var/cache/smbaccel"
[ -e "$R/var/lib/smbaccel" ] && fail "dpkg -P left the state directory $R/var/lib/smbaccel"
left=$(cd "$R" && find . -type f ! -path './var/lib/dpkg/*' | sed 's|^\./||' | sort)
assert_eq "" "$left" "files left after dpkg -P"
info "PASS"
