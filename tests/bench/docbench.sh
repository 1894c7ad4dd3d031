# tests/bench/docbench.sh - the document workloads of issue 13, sourced by
# tests/bench/run (which provides the links, the three configurations and
# the bookkeeping helpers: port_of, proc_ticks, proc_hwm, parse_kv, say).
#
#   doc     "open a document": 400 synchronous 4 KiB reads at seeded
#           random offsets of an 8 MiB file, on a fresh connection (smbdd -R)
#   docre   "reopen it": the same reads by a new connection after a first
#           open read the file (only the second one is timed)
#   docl    doc by a lease-holding client (docbench.py, R lease) on the
#           share under the default policy (leased)
#   doclre  docre by that client, the reopen on the same connection
#   mget    smbclient mget of 100 x 8 KiB files
#   save    an Office-style save of a 1 MiB document (docbench.py save:
#           ~$tmp in 4 KiB writes, renames, delete of the backup)
#   savel   save with an RWH lease, on the share under the default policy
#
# The smbaccel of the bench runs [share share] with write_behind =
# read_ahead = always; the leased workloads use the harness's [dur] share,
# which has no section there (the default policy).  Data: every read is
# checked against the pattern the file was written with; mget's files and
# the saved document are compared with the server's disk.

DOC_PY="/usr/bin/python3 $BENCH_DIR/docbench.py"

doc_is_workload() {
	case $1 in doc|docre|docl|doclre|mget|save|savel) return 0 ;; esac
	return 1
}

# doc_measure CFG CMD...: run one client command that prints an smbdd-like
# result line, with run_one's bookkeeping (sets R_bytes R_secs R_mbps R_ops
# R_cpuop R_rc R_err R_reqs R_pcpu R_rss R_stats).
doc_measure() {
	local cfg=$1 pid= cpu0= cpu1= out
	shift
	R_bytes= R_secs= R_mbps= R_ops= R_cpuop= R_rc=0 R_err= R_reqs= R_pcpu= R_rss= R_stats=
	case $cfg in
	smbaccel) pid=$ACC_PID ;;
	haproxy) pid=$HAP_PID ;;
	esac
	if [ -n "$pid" ]; then
		echo 5 > "/proc/$pid/clear_refs" 2>/dev/null
		proc_ticks "$pid"; cpu0=$TICKS
	fi
	[ "$cfg" = smbaccel ] && "$SMBACCELCTL" -s "$ACC_SOCK" stats --json > "$OUT/stats/$CELL-before.json" 2>/dev/null
	out=$(HOME=$HOME_C timeout -k 5 300 "$@" 2>&1)
	R_rc=$?
	last_line bytes= "$out"
	parse_kv "$LINE"
	R_bytes=${KV[bytes]:-} R_secs=${KV[seconds]:-} R_mbps=${KV[MBps]:-}
	R_ops=${KV[ops]:-} R_cpuop=${KV[cpu_per_op_us]:-}
	[ $R_rc -eq 124 ] || [ $R_rc -eq 137 ] && R_err="timeout after 300s"
	[ $R_rc -ne 0 ] && [ -z "$R_err" ] && R_err=$(grep -v '^bytes=' <<<"$out" | tail -n 2 | tr '\n' ' ')
	if [ -n "$pid" ]; then
		proc_ticks "$pid"; cpu1=$TICKS
		[ -n "$cpu0" ] && [ -n "$cpu1" ] && R_pcpu=$(awk -v a="$cpu0" -v b="$cpu1" -v hz="$CLK_TCK" 'BEGIN { printf "%.2f", (b - a) / hz }')
		proc_hwm "$pid"; R_rss=$HWM
	fi
	if [ "$cfg" = smbaccel ]; then
		"$SMBACCELCTL" -s "$ACC_SOCK" stats --json > "$OUT/stats/$CELL-after.json" 2>/dev/null
		R_stats=$CELL
	else
		R_reqs=$R_ops
	fi
	return 0
}

# doc_prewrite PATH SIZE SEED [SHARE]: the pattern, written directly
doc_prewrite() {
	HOME=$HOME_C SMBC_SHARE=${4:-share} "$SMBDD" write "$(SMBC_SHARE=${4:-share} smb_url "$SMBD_PORT" "$1")" 1M \
	    $(($2 / 1048576)) -U "$SMB_USER%$SMB_PASS" -s "$3" -q >/dev/null 2>&1 ||
	    say "!! could not pre-write $1"
}

# doc_cell LINK WORKLOAD: one cell of the document workloads
doc_cell() {
	local link=$1 wl=$2 cfg port seed size count d note
	CELL=$link-$wl
	seed=$((RANDOM * 32768 + RANDOM + 1))
	size=$((8 * 1048576)) count=400
	[ "$MODE" = smoke ] && size=$((1048576)) count=100
	rm -rf "${SHARE_DIR:?}"/* "${DUR_DIR:?}"/*
	for cfg in $CONFIGS; do
		port=$(port_of "$cfg")
		D_DATA[$cfg]=ok D_NOTE[$cfg]=
		case $wl in
		doc|docre)
			doc_prewrite "d-$cfg" "$size" "$seed"
			if [ "$wl" = docre ]; then
				HOME=$HOME_C "$SMBDD" read "$(smb_url "$port" "d-$cfg")" 4K "$count" \
				    -U "$SMB_USER%$SMB_PASS" -s "$seed" -R "$size" -q >/dev/null 2>&1 ||
				    D_DATA[$cfg]=ERROR D_NOTE[$cfg]="first open failed"
			fi
			doc_measure "$cfg" "$SMBDD" read "$(smb_url "$port" "d-$cfg")" 4K "$count" \
			    -U "$SMB_USER%$SMB_PASS" -s "$seed" -R "$size" -q
			;;
		docl|doclre)
			doc_prewrite "d-$cfg" "$size" "$seed" dur
			doc_measure "$cfg" $DOC_PY read "$port" dur "d-$cfg" "$size" "$count" "$seed" \
			    --lease --open "$([ "$wl" = doclre ] && echo 2 || echo 1)"
			;;
		mget)
			local nf=100 i
			[ "$MODE" = smoke ] && nf=10
			d=$SHARE_DIR/mg-$cfg
			mkdir -p "$d" "$T/mget-$cfg"
			for ((i = 0; i < nf; i++)); do
				head -c 8192 /dev/urandom > "$d/f$i.bin"
			done
			chown -R "$SMB_USER" "$d"
			rm -rf "${T:?}/mget-$cfg"/*
			doc_measure "$cfg" bash -c 'n=$(ls "$1" | wc -l); t0=$EPOCHREALTIME
			    smbclient //127.0.0.1/share -p "$2" -U "$3" -m SMB3_11 \
			        -c "prompt off; lcd $4; cd mg-$5; mget *" >/dev/null 2>&1 || exit 1
			    awk -v a="$t0" -v b="$EPOCHREALTIME" -v n="$n" '"'"'BEGIN { s = b - a
			        printf "bytes=%d seconds=%.6f MBps=%.3f ops=%d\n", n * 8192, s, n * 8192 / s / 1e6, n }'"'"'' \
			    mget "$d" "$port" "$SMB_USER%$SMB_PASS" "$T/mget-$cfg" "$cfg"
			[ "$(cd "$d" && sha256sum * | sha256sum)" = "$(cd "$T/mget-$cfg" && sha256sum * | sha256sum)" ] ||
			    D_DATA[$cfg]=MISMATCH D_NOTE[$cfg]="mget tree differs from the server's"
			;;
		save|savel)
			local share=share dir=$SHARE_DIR lease=
			[ "$wl" = savel ] && share=dur dir=$DUR_DIR lease=--lease
			head -c 1048576 /dev/urandom > "$dir/s-$cfg.docx"
			chown "$SMB_USER" "$dir/s-$cfg.docx"
			size=$((1048576))
			[ "$MODE" = smoke ] && size=65536
			doc_measure "$cfg" $DOC_PY save "$port" "$share" "s-$cfg.docx" "$size" "$T/save-$cfg" $lease
			if [ "$(sha256sum < "$T/save-$cfg")" != "$(sha256sum < "$dir/s-$cfg.docx" 2>/dev/null)" ] ||
			    [ -e "$dir/s-$cfg.docx.bak" ] || [ -e "$dir/~\$s-$cfg.docx.tmp" ]; then
				D_DATA[$cfg]=MISMATCH D_NOTE[$cfg]="the saved document on the server's disk is not what was written"
			fi
			;;
		esac
		if [ $R_rc -ne 0 ] || [ -z "$R_mbps" ]; then
			D_DATA[$cfg]=ERROR
			[ $R_rc -eq 3 ] && D_DATA[$cfg]=MISMATCH
			grep -q timeout <<<"$R_err" && D_DATA[$cfg]=TIMEOUT
		fi
		note=${D_NOTE[$cfg]:-$R_err}
		D_NOTE[$cfg]=$note
		D_LINE[$cfg]="$link,$P_rtt,$P_rate_mbit,$wl,$([ "$wl" = mget ] && echo 8192 || echo 4096),$cfg,$R_bytes,$R_secs,$R_mbps,$R_ops,$R_cpuop,$R_reqs,$R_pcpu,$R_rss,$R_stats"
		say "$(printf '%-9s %-6s %-8s %9s s  %s' "$link" "$wl" "$cfg" "${R_secs:--}" "${D_DATA[$cfg]} $note")"
	done
	for cfg in $CONFIGS; do
		[ "${D_DATA[$cfg]}" = ok ] || { BAD=1; say "!! $CELL $cfg: ${D_DATA[$cfg]} ${D_NOTE[$cfg]}"; }
		echo "${D_LINE[$cfg]},${D_DATA[$cfg]},${D_NOTE[$cfg]//[,\"]/ }" >> "$RAW"
	done
	rm -rf "${SHARE_DIR:?}"/* "${DUR_DIR:?}"/*
}
