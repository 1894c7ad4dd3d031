# tests/integration/cmp_lib.sh - helpers of the close-compound tests
# (t_wb_close_*), sourced after lib.sh and wb_lib.sh.
#
#   cmp_tree DIR          a tree to mput: 12 x 8 KiB, 1 KiB, 100 KiB,
#                         1 MiB + 3 bytes and an empty file, in two folders
#   cmp_mput PORT DIALECT SRC DST [HOME]
#                         smbclient mput of SRC into the new folder DST
#   cmp_same SRC DST      the tree on smbd's disk equals SRC, file by file
#   cmp_capture_both NAME / cmp_legs NAME
#                         dumpcap of both legs (client -> proxy, proxy ->
#                         smbd); upstream-sizes of each into
#                         $T/NAME.up.json and $T/NAME.client.json
#   kv LINE KEY           the value of KEY=... in a result line
#   CMP_FILES             files of cmp_tree whose CLOSE can carry writes

CMP_FILES=13

cmp_tree() {
	local d=$1 i
	mkdir -p "$d/a" "$d/b"
	for i in $(seq 1 12); do
		head -c 8192 /dev/urandom > "$d/$([ $i -le 6 ] && echo a || echo b)/f$i.bin"
	done
	head -c 1024 /dev/urandom > "$d/a/small.bin"
	head -c 102400 /dev/urandom > "$d/b/mid.bin"
	head -c $((1048576 + 3)) /dev/urandom > "$d/b/big.bin"
	: > "$d/a/empty.bin"
}

cmp_mput() {
	local port=$1 d=$2 src=$3 dst=$4 home=${5:-$(client_home "mput-$2")} out
	out=$(HOME=$home timeout 120 smbclient //127.0.0.1/share -p "$port" \
	    -U "$SMB_USER%$SMB_PASS" -m "$d" --option="client min protocol=$d" \
	    --option="client max protocol=$d" \
	    -c "prompt off; recurse on; lcd $src; mkdir $dst; cd $dst; mput *" 2>&1) ||
	    { echo "$out" | tail -n 5; return 1; }
	if echo "$out" | grep -q NT_STATUS_; then
		echo "$out" | grep NT_STATUS_ | head -n 5
		return 1
	fi
	return 0
}

cmp_same() {
	local src=$1 dst=$2 f bad=0
	while IFS= read -r f; do
		cmp -s "$src/$f" "$dst/$f" || { echo "  differs: $f"; bad=1; }
	done < <(cd "$src" && find . -type f | sed 's|^\./||')
	return $bad
}

cmp_capture_both() {
	CAP_FILTER="tcp port $SMBD_PORT or tcp port ${CMP_CLIENT_PORT:-$PROXY_PORT}" capture_start "$1"
}

cmp_legs() {
	capture_stop
	timeout 300 "$TOP/tests/tools/upstream-sizes" "$CAP_FILE" "${CMP_UP_PORT:-$SMBD_PORT}" > "$T/$1.up.json" ||
	    fail "upstream-sizes failed on the upstream leg of $CAP_FILE"
	timeout 300 "$TOP/tests/tools/upstream-sizes" "$CAP_FILE" "${CMP_CLIENT_PORT:-$PROXY_PORT}" > "$T/$1.client.json" ||
	    fail "upstream-sizes failed on the client leg of $CAP_FILE"
	rm -f "$CAP_FILE"
}

# kv LINE KEY: the value of KEY=... in LINE (a helper script's result line)
kv() { echo "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
