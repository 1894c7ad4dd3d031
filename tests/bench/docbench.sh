# tests/bench/docbench.sh - the document workloads of issue 13, sourced by
# tests/bench/run, which provides the namespaces, the configurations and
# their helpers (hostport, pid_of, SOCK, meas_begin/meas_end, srv_write,
# parse_kv, last_line, say, the PLAN of each cell).
#
#   doc     "open a document": COUNT synchronous 4 KiB reads at seeded
#           random offsets of an 8 MiB file, on a fresh connection (smbdd -R)
#   docre   "reopen it": the same reads by a new connection after a first
#           open (untimed, through the same configuration) read the file
#   docl    doc by a lease-holding client (docbench.py, R+H lease) on the
#           [dur] share, which has the default policy (leased, proxy_lease on)
#   doclre  docre by that client, the reopen on the same connection
#   mget    smbclient mget of COUNT x 8 KiB files
#   save    an Office-style save of a 1 MiB document (docbench.py save:
#           ~$tmp in 4 KiB writes, renames, delete of the backup) on [share]
#   savel   save with an RWH lease, on [dur] (the default policy)
#
# COUNT is the plan's (benchlib.py: 400 reads and 100 files; --smoke 50 and
# 10, of a 1 MiB file, a 64 KiB save).  Every client runs in the client
# namespace and connects to hostport CONFIG, like the other cells; files
# are pre-written on the server itself (srv_write: no link, no proxy).  The
# smbaccel and cubic configurations have [share share] with write_behind =
# read_ahead = always and no section for [dur]; leased has the default
# policy on both shares.
#
# Data: every read is checked against the pattern the file was written
# with (smbdd; docbench.py after the timed part); mget's files and the
# saved document are compared with the server's disk, and the save must
# leave neither its backup nor its temporary file behind.

DOC_PY="/usr/bin/python3 $BENCH_DIR/docbench.py"

doc_is_workload() {
	case $1 in doc|docre|docl|doclre|mget|save|savel) return 0 ;; esac
	return 1
}

# doc_client CMD...: CMD in the client namespace with the bench client's
# HOME, killed after DOC_TO seconds.
doc_client() {
	ip netns exec "$NS_CLIENT" env HOME="$HOME_C" timeout -k 5 "$DOC_TO" "$@"
}

# doc_measure CFG CMD...: one measured client run of CMD (which prints an
# smbdd-like result line) with the runner's bookkeeping (meas_begin,
# meas_end): sets R_bytes R_secs R_mbps R_ops R_cpuop R_rc R_err and the
# rest; the client's output in DOC_OUT.
doc_measure() {
	local cfg=$1
	shift
	meas_begin "$cfg"
	DOC_OUT=$(doc_client "$@" 2>&1)
	R_rc=$?
	last_line bytes= "$DOC_OUT"
	parse_kv "$LINE"
	R_bytes=${KV[bytes]:-} R_secs=${KV[seconds]:-} R_mbps=${KV[MBps]:-}
	R_ops=${KV[ops]:-} R_cpuop=${KV[cpu_per_op_us]:-}
	[ $R_rc -eq 124 ] || [ $R_rc -eq 137 ] && R_err="timeout after ${DOC_TO}s"
	[ $R_rc -ne 0 ] && [ -z "$R_err" ] && R_err=$(grep -v '^bytes=' <<<"$DOC_OUT" | tail -n 2 | tr '\n' ' ')
	meas_end "$cfg"
}

# doc_prewrite CFG PATH SIZE SEED SHARE: SIZE bytes of the pattern, written
# on the server itself; marks CFG's run failed if that fails.
doc_prewrite() {
	srv_write "$2" 1M $(($3 / 1048576)) "$4" "$5" && return 0
	D_DATA[$1]=ERROR D_NOTE[$1]="could not pre-write $2 on [$5]"
	return 1
}

# DOC_MGET (bash -c "$DOC_MGET" mget DIR HOST PORT USER%PASS LOCAL SRCDIR):
# smbclient mget of every file of
# the share's folder DIR into LOCAL, timed from the start of smbclient
# (connection set-up included, like mput); prints the result line, and a
# "smbclient: NT_STATUS_..." line if it printed any.  SRCDIR (the folder
# on the server's disk) only counts the files.
DOC_MGET='n=$(ls "$6" | wc -l)
t0=$EPOCHREALTIME
/usr/bin/time -o "$5.time" -f "cpu_user=%U cpu_sys=%S" \
    smbclient "//$2/share" -p "$3" -U "$4" -m SMB3_11 -s "$HOME/.smb/smb.conf" \
    -c "prompt off; lcd $5; cd $1; mget *" > "$5.out" 2>&1 || { tail -n 2 "$5.out"; exit 1; }
t1=$EPOCHREALTIME
e=$(grep -oE "NT_STATUS_[A-Z_]+" "$5.out" | sort -u | tr "\n" " ")
[ -z "$e" ] || echo "smbclient: $e"
read -r cu cs < "$5.time"
awk -v a="$t0" -v b="$t1" -v n="$n" -v u="${cu#*=}" -v y="${cs#*=}" "BEGIN { s = b - a
    printf \"bytes=%d seconds=%.6f MBps=%.3f ops=%d cpu_per_op_us=%.1f\\n\", n * 8192, s, n * 8192 / s / 1e6, n, (u + y) * 1e6 / n }"'

# doc_cell LINK WORKLOAD: one cell of the document workloads, every
# configuration of the link in turn
doc_cell() {
	local link=$1 wl=$2 cfg hp seed size count d note share dir i
	CELL=$link-$wl$([ "$REPS" -gt 1 ] && echo "-r$REP")
	read -r P_kind P_block P_count P_count_accel P_count_cubic P_est P_delay P_rate P_loss <<<"${PLAN[$link/$wl]}"
	seed=$((RANDOM * 32768 + RANDOM + 1))
	count=$P_count
	size=$((8 * 1048576))
	[ "$MODE" = smoke ] && size=1048576
	DOC_TO=$(cell_timeout)
	rm -rf "${SHARE_DIR:?}"/* "${DUR_DIR:?}"/*
	for cfg in $CONFIGS; do
		hp=$(hostport "$cfg")
		D_DATA[$cfg]=ok D_NOTE[$cfg]=
		R_rc=1 R_mbps= R_err= R_bytes= R_secs= R_ops= R_cpuop= R_reqs= R_pcpu= R_rss= R_stats= R_wan=,, R_load=
		case $wl in
		doc|docre)
			doc_prewrite "$cfg" "d-$cfg" "$size" "$seed" share
			if [ "$wl" = docre ] && [ "${D_DATA[$cfg]}" = ok ]; then
				doc_client "$SMBDD" read "smb://$hp/share/d-$cfg" 4K "$count" \
				    -U "$SMB_USER%$SMB_PASS" -s "$seed" -R "$size" -q -T 60 >/dev/null 2>&1 ||
				    D_DATA[$cfg]=ERROR D_NOTE[$cfg]="the first open failed"
			fi
			[ "${D_DATA[$cfg]}" = ok ] &&
			    doc_measure "$cfg" "$SMBDD" read "smb://$hp/share/d-$cfg" 4K "$count" \
				-U "$SMB_USER%$SMB_PASS" -s "$seed" -R "$size" -q -T 60
			;;
		docl|doclre)
			doc_prewrite "$cfg" "d-$cfg" "$size" "$seed" dur &&
			    doc_measure "$cfg" $DOC_PY read "$hp" dur "d-$cfg" "$size" "$count" "$seed" \
				--lease --open "$([ "$wl" = doclre ] && echo 2 || echo 1)"
			;;
		mget)
			d=$SHARE_DIR/mg-$cfg
			mkdir -p "$d"
			for ((i = 0; i < count; i++)); do
				head -c 8192 /dev/urandom > "$d/f$i.bin"
			done
			chown -R "$SMB_USER" "$d"
			rm -rf "${T:?}/mget-$cfg"
			mkdir -p "$T/mget-$cfg"
			doc_measure "$cfg" bash -c "$DOC_MGET" mget "mg-$cfg" "${hp%:*}" "${hp##*:}" \
			    "$SMB_USER%$SMB_PASS" "$T/mget-$cfg" "$d"
			last_line "smbclient: " "$DOC_OUT"
			[ -n "$LINE" ] && R_err="${R_err:+$R_err; }${LINE:0:120}"
			if [ $R_rc -eq 0 ] && [ "$(tree_sums "$d")" != "$(tree_sums "$T/mget-$cfg")" ]; then
				D_DATA[$cfg]=MISMATCH D_NOTE[$cfg]="mget's files differ from the server's ($(ls "$T/mget-$cfg" | wc -l) of $count fetched)"
			fi
			;;
		save|savel)
			share=share dir=$SHARE_DIR lease=
			[ "$wl" = savel ] && share=dur dir=$DUR_DIR lease=--lease
			head -c 1048576 /dev/urandom > "$dir/s-$cfg.docx"
			chown "$SMB_USER" "$dir/s-$cfg.docx"
			size=1048576
			[ "$MODE" = smoke ] && size=65536
			rm -f "$T/save-$cfg"
			doc_measure "$cfg" $DOC_PY save "$hp" "$share" "s-$cfg.docx" "$size" "$T/save-$cfg" $lease
			if [ $R_rc -eq 0 ]; then
				if [ "$(sha_of "$T/save-$cfg")" != "$(sha_of "$dir/s-$cfg.docx")" ]; then
					D_DATA[$cfg]=MISMATCH D_NOTE[$cfg]="the saved document on the server's disk is not what was written"
				elif [ -e "$dir/s-$cfg.docx.bak" ] || [ -e "$dir/~\$s-$cfg.docx.tmp" ]; then
					D_DATA[$cfg]=MISMATCH D_NOTE[$cfg]="the save left its backup or temporary file on the server's disk"
				fi
			fi
			;;
		esac
		if [ "${D_DATA[$cfg]}" = ok ] && { [ $R_rc -ne 0 ] || [ -z "$R_mbps" ]; }; then
			D_DATA[$cfg]=ERROR
			[ $R_rc -eq 3 ] && D_DATA[$cfg]=MISMATCH
			grep -q timeout <<<"$R_err" && D_DATA[$cfg]=TIMEOUT
		fi
		note=${D_NOTE[$cfg]:-$R_err}
		D_NOTE[$cfg]=$note
		D_LINE[$cfg]="$link,$P_rtt,$P_rate_mbit,$P_loss,$wl,$([ "$wl" = mget ] && echo 8192 || echo 4096),$cfg,$REP,$R_bytes,$R_secs,$R_mbps,$R_ops,$R_cpuop,$R_reqs,$R_pcpu,$R_rss,$R_wan,$R_stats,$R_load"
		say "$(printf '%-16s %-6s %-8s %9s s %9s MB/s  drops loss,queue,tun %-12s %s' "$link" "$wl" "$cfg" \
		    "${R_secs:--}" "${R_mbps:--}" "$R_wan" "${D_DATA[$cfg]} $note")"
	done
	for cfg in $CONFIGS; do
		[ "${D_DATA[$cfg]}" = ok ] || { BAD=1; say "!! $CELL $cfg: ${D_DATA[$cfg]} ${D_NOTE[$cfg]}"; }
		echo "${D_LINE[$cfg]},${D_DATA[$cfg]},${D_NOTE[$cfg]//[,\"]/ }" >> "$RAW"
	done
	rm -rf "${SHARE_DIR:?}"/* "${DUR_DIR:?}"/* "${T:?}"/mget-* "${T:?}"/save-*
}
