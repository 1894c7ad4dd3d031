#!/bin/bash
# smbclient put + get of a 64 MiB random file through the proxy at each
# SMB2/3 dialect, forced as both client min and max protocol.  Checks the
# dialect smbd really negotiated (smbstatus while connected), the sha256 of
# the file on smbd's disk and of the copy read back.  Logs direct vs proxy
# throughput (informational only).
. "$(dirname "$0")/lib.sh"

SIZE_MIB=${COPY_SIZE_MIB:-64}
start_smbd
start_proxy
random_file "$T/orig" "$SIZE_MIB"
want=$(sha256 "$T/orig")
bytes=$((SIZE_MIB * 1048576))
home=$(client_home copy)

# xfer PORT DIALECT NAME: put, check dialect while connected, get.  Prints
# "put_seconds get_seconds".
xfer() {
	local port=$1 d=$2 name=$3 t0 t1 t2
	rm -f "$T/back.$name"
	# Commands on stdin (not -c) so that '!' shell escapes work.
	t0=$(now)
	{
		echo "put $T/orig $name"
		echo "!smbstatus -s $SMBD_CONF -b > $T/status.$name 2>&1"
		if [ "$port" = "$PROXY_PORT" ] && is_smbaccel; then
			echo "!$CTL conns --json > $T/conns.$name 2>&1"
		fi
		echo "!date +%s.%N > $T/t1.$name"
		echo "get $name $T/back.$name"
	} | HOME=$home smbclient //127.0.0.1/share -p "$port" \
	    -s "$home/.smb/smb.conf" -U "$SMB_USER%$SMB_PASS" -m "$d" \
	    --option="client min protocol=$d" --option="client max protocol=$d" \
	    > "$T/smbclient.$name.log" 2>&1 ||
	    { cat "$T/smbclient.$name.log"; fail "smbclient $d via port $port failed"; }
	t2=$(now)
	t1=$(cat "$T/t1.$name" 2>/dev/null || echo "$t2")
	if grep -qiE 'NT_STATUS|error' "$T/smbclient.$name.log"; then
		cat "$T/smbclient.$name.log"; fail "smbclient $d via port $port reported an error"
	fi
	awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "%.3f %.3f\n", b - a, c - b }'
}

# Every client session we made shows up in smbstatus; ours is the only one.
dialect_of() {
	awk '$1 ~ /^[0-9]+$/ { for (i = 2; i <= NF; i++) if ($i ~ /^(SMB[0-9]_[0-9]+|NT1)$/) print $i }' "$1" |
	    sort -u | tr '\n' ' ' | sed 's/ $//'
}

printf '%-8s %10s %10s %10s %10s   (MB/s)\n' dialect put-direct put-proxy get-direct get-proxy > "$T/rates"
for d in SMB2_02 SMB2_10 SMB3_00 SMB3_11; do
	info "dialect $d"
	read -r dp dg < <(xfer "$SMBD_PORT" "$d" "direct-$d")
	read -r pp pg < <(xfer "$PROXY_PORT" "$d" "proxy-$d")
	got=$(dialect_of "$T/status.proxy-$d")
	assert_eq "$d" "$got" "dialect negotiated through the proxy (smbstatus)"
	if [ -f "$T/conns.proxy-$d" ]; then
		cd_=$("$PY" -c '
import json, sys
print(" ".join(sorted({str(c.get("dialect")) for c in json.load(open(sys.argv[1]))["conns"]})))' "$T/conns.proxy-$d") ||
		    fail "bad smbaccelctl conns --json: $(cat "$T/conns.proxy-$d")"
		case $d in
		SMB2_02) dx=2.0.2 ;; SMB2_10) dx=2.1 ;; SMB3_00) dx=3.0 ;; SMB3_11) dx=3.1.1 ;;
		esac
		assert_eq "$dx" "$cd_" "dialect in smbaccelctl conns --json"
	fi
	assert_eq "$want" "$(sha256 "$SHARE_DIR/proxy-$d")" "$d: sha256 on smbd's disk after put via proxy"
	assert_eq "$want" "$(sha256 "$T/back.proxy-$d")" "$d: sha256 of the copy read back via proxy"
	assert_eq "$want" "$(sha256 "$SHARE_DIR/direct-$d")" "$d: sha256 on disk after direct put"
	printf '%-8s %10s %10s %10s %10s\n' "$d" "$(mbps $bytes "$dp")" "$(mbps $bytes "$pp")" \
	    "$(mbps $bytes "$dg")" "$(mbps $bytes "$pg")" >> "$T/rates"
	rm -f "$T/back.proxy-$d" "$T/back.direct-$d" "$SHARE_DIR/direct-$d" "$SHARE_DIR/proxy-$d"
done
info "throughput, ${SIZE_MIB} MiB, loopback ($PROXY_IMPL), not asserted:"
cat "$T/rates"
proxy_alive || fail "proxy died"
info "PASS"
