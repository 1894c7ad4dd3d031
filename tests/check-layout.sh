#!/bin/bash
# tests/check-layout.sh - the layout rules of docs/design.md ("Layers"),
# checked on the source tree (run by tests/integration/t_layout.sh in make
# check; run it by hand from anywhere).  Exit 0 when every rule holds,
# 1 with one line per violation otherwise.
#
# 1. The pure folders (proxy/smb2/, proxy/auth/, coalesce/, policy/)
#    include no libev and no engine header: only system headers and each
#    other's headers.
# 2. Includes point down the engine's layers: a file includes only headers
#    of its own layer or of a lower one (see LAYER below).
# 3. Inside the relay layer, a file includes the headers of, and calls,
#    only the files after it: relay.c -> lease.c -> coherence.c ->
#    locks.c -> readahead.c -> doccache.c -> compound.c -> wberror.c ->
#    writebehind.c -> create.c -> keyed.c -> keyfiles.c (conn_state.h is the whole
#    layer's; wberror.c shares writebehind.h);
#    calls are checked by the function prefixes each file defines.
# 4. Size: proxy/relay.c at most 1,000 lines; no .c or .h file under
#    proxy/ (subfolders included) or coalesce/ over 1,300 lines.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
set -u
TOP=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$TOP" || exit 2
bad=0
violation() { echo "layout: $*"; bad=1; }

# The layer of a source or header path (higher calls lower).
layer() {
	case $1 in
	proxy/smb2/*|proxy/auth/*|coalesce/*|policy/*) echo 0 ;;
	proxy/proxy.h|proxy/log.c|proxy/buf.c|proxy/ledger.h|proxy/ledger.c|proxy/openidx.c|\
	proxy/sharestats.c|\
	proxy/docstore.[ch]) echo 1 ;;
	proxy/conn_state.h|proxy/relay.[ch]|proxy/lease.[ch]|proxy/coherence.[ch]|\
	proxy/locks.[ch]|proxy/readahead.[ch]|proxy/doccache.[ch]|proxy/compound.[ch]|\
	proxy/wberror.c|proxy/writebehind.[ch]|proxy/create.[ch]|\
	proxy/alter.[ch]|proxy/emit.[ch]|proxy/keyed.[ch]|proxy/keyfiles.[ch]) echo 2 ;;
	proxy/conn.[ch]|proxy/side.[ch]|proxy/upstream.[ch]) echo 3 ;;
	proxy/listener.h|proxy/listener.c|proxy/tproxy.h|proxy/tproxy.c|\
	proxy/control.h|proxy/control.c|proxy/ctlout.c) echo 4 ;;
	proxy/daemon.h|proxy/daemon.c|proxy/main.c|proxy/smbaccelctl.c) echo 5 ;;
	*) echo unknown ;;
	esac
}

# Order inside the relay layer (conn_state.h: what the whole layer and
# conn.c work on; relay.h: relay.c's entry points, for conn.c).
rank() {
	case ${1##*/} in
	conn_state.h) echo 99 ;;
	relay.[ch]) echo 0 ;;
	lease.[ch]) echo 1 ;;
	coherence.[ch]) echo 2 ;;
	locks.[ch]) echo 3 ;;
	readahead.[ch]) echo 4 ;;
	doccache.[ch]) echo 5 ;;
	compound.[ch]) echo 6 ;;
	wberror.c|writebehind.[ch]) echo 7 ;;
	create.[ch]) echo 8 ;;
	alter.[ch]) echo 9 ;;
	emit.[ch]) echo 10 ;;
	keyed.[ch]) echo 11 ;;
	keyfiles.[ch]) echo 12 ;;
	esac
}

files=$(git ls-files --cached --others --exclude-standard 'proxy/*.[ch]' \
    'coalesce/*.[ch]' 'policy/*.[ch]' 2>/dev/null)
[ -n "$files" ] || files=$(find proxy coalesce policy -name '*.[ch]' | sort)

for f in $files; do
	[ -f "$f" ] || continue
	fl=$(layer "$f")
	if [ "$fl" = unknown ]; then
		violation "$f: not placed in a layer (add it to tests/check-layout.sh)"
		continue
	fi
	# 1 and 2: includes
	while IFS=: read -r ln inc; do
		case $inc in
		*'<ev.h>'*|*'"ev.h"'*)
			[ "$fl" -ge 3 ] ||
			    violation "$f:$ln: includes libev (layer $fl; only conn.c and above use the event loop)"
			continue ;;
		*'"'*'"'*) ;;
		*) continue ;;
		esac
		h=${inc#*\"}; h=${h%%\"*}
		hl=$(layer "$h")
		if [ "$fl" = 2 ] && [ "$hl" = 2 ] &&
		    [ "$(rank "$h")" -lt "$(rank "$f")" ]; then
			violation "$f:$ln: includes $h, a file above it in the relay layer"
		fi
		if [ "$hl" = unknown ]; then
			violation "$f:$ln: includes $h, which is in no layer"
		elif [ "$hl" -gt "$fl" ]; then
			violation "$f:$ln: includes $h (layer $hl) from layer $fl: includes must point down"
		fi
	done < <(grep -n '^[[:space:]]*#[[:space:]]*include' "$f" | sed 's/^\([0-9]*\):/\1:/')
	# 4: size
	n=$(wc -l < "$f")
	if [ "$f" = proxy/relay.c ] && [ "$n" -gt 1000 ]; then
		violation "$f: $n lines (the dispatcher stays at most 1,000)"
	fi
	case $f in
	proxy/*|coalesce/*)
		[ "$n" -le 1300 ] || violation "$f: $n lines (at most 1,300)" ;;
	esac
done

# 3: calls inside the relay layer, by the prefixes each file defines
order="relay.c lease.c coherence.c locks.c readahead.c doccache.c compound.c wberror.c writebehind.c create.c alter.c emit.c keyed.c keyfiles.c"
prefix_of() {
	case $1 in
	relay.c) echo 'px_relay_(client|server|flush|quiet|timer|stall|free)' ;;
	lease.c) echo 'px_lease_' ;;
	coherence.c) echo 'px_coh_' ;;
	locks.c) echo 'px_locks_' ;;
	readahead.c) echo 'px_ra_(drop|read|fetch_done|widened_answer)' ;;
	compound.c) echo 'px_cmp_' ;;
	doccache.c) echo 'px_dc_' ;;
	wberror.c) echo 'px_wb_(deferred_error|on_close|close_answer|close_unreported|expired_answer)' ;;
	writebehind.c) echo 'px_wb_' ;;
	create.c) echo 'px_create_' ;;
	alter.c) echo 'px_alter_|px_may_act|px_may_rewrite|px_session_keyed' ;;
	emit.c) echo 'px_emit_|px_relay_fail|px_large_mtu|px_tree_share|px_same_server|px_ids_fresh' ;;
	keyed.c) echo 'px_keyed_' ;;
	keyfiles.c) echo 'px_keyfiles_' ;;
	esac
}
i=0
for f in $order; do
	i=$((i + 1))
	j=0
	for g in $order; do
		j=$((j + 1))
		[ $j -lt $i ] || continue
		# f may not call anything defined in g, which comes before it
		hits=$(grep -nE "\\b($(prefix_of "$g"))[a-z_]*\\(" "proxy/$f" |
		    grep -v '^[0-9]*:[a-z].*(.*$' | head -n 3)
		[ -z "$hits" ] && continue
		while IFS= read -r h; do
			violation "proxy/$f:${h%%:*}: calls into $g, which is above it: ${h#*:}"
		done <<< "$hits"
	done
done
# conn.c and side.c reach the relay layer only through relay.h's entry points
for f in proxy/conn.c proxy/side.c; do
	hits=$(grep -nE '\b(px_lease_|px_create_|px_coh_|px_locks_|px_ra_(drop|read|fetch)|px_dc_|px_wb_|px_emit_|px_keyed_(sign|verify|encrypt|decrypt|setup|negotiate))' "$f" | head -n 3)
	[ -z "$hits" ] && continue
	while IFS= read -r h; do
		violation "$f:${h%%:*}: calls the relay's glue directly: ${h#*:}"
	done <<< "$hits"
done

[ $bad -eq 0 ] && echo "layout: ok ($(echo "$files" | wc -w) files)"
exit $bad
