#!/usr/bin/env bash
# bench/peers.sh - the same workloads through this project and through the tools people use
# today (LTTng-UST + babeltrace2, heaptrack, uftrace), measured in one run on this machine.
#
#   bench/peers.sh [--quick] [--runs N] [--no-install] [--no-report] [--seed-from FILE]
#                                                                       (`make bench-peers`)
#   bench/peers.sh --available      exit 0 when at least one peer tool is installed
#
# Workloads (each run R times, medians with min/max; ratios from figures of this run):
#   events-1t, events-2t  tight event loop, EVENTS events over 1 and 2 threads:
#       build/bench/work_events under trace-run, then trace-dump summary --json;
#       build/bench/peers/lttng_events (bench/peers/) in an LTTng session, then babeltrace2.
#       Figures: ns per event (and the bare TSC+store loop, and both untraced), events
#       recorded and lost, bytes per event on disk, read-back events per second.
#   malloc   build/bench/work_malloc untraced (/usr/bin/time -v), under heaptrack and under
#            trace-run: wall-time slowdown, output bytes, and each tool's peak RSS against the
#            untraced run's maximum resident set size.
#   calls    build/bench/work_calls untraced, work_calls_pg under `uftrace record`,
#            work_calls_finst under trace-run: slowdown, events, bytes.
#   seed     the rss benchmark's none / inband / oob lines (RSS read on every event against
#            the out-of-band sampler): taken from --seed-from FILE (run.sh passes the output of
#            the bench_rss it ran in this run), else measured here with build/bench/bench_rss.
# Sizes: EVENTS 10M (--quick 1M); malloc OPS PEAK_MIB 10000000 128 (--quick 1000000 64, or
# $PEERS_MALLOC_ARGS); calls 12000000 (--quick 3000000, or $PEERS_CALLS_ARGS).
# Output: build/bench/peers-summary.txt (SUMMARY bench=peers case=... lines, CMD lines with
# the commands behind each case, NOTE lines for each peer that could not run and why), and,
# unless --no-report, a peers-only report in build/bench/peers-report/report.md. bench/run.sh
# calls this with --no-install --no-report and merges the file into build/bench/report.md.
#
# LTTng needs a session daemon: this script starts one of its own (LTTNG_HOME in a temporary
# directory, no kernel tracing) and stops it on exit, whatever happens. If a session daemon is
# already running for this user it is used as it is, never stopped, and the report says so.
# Everything written goes to a temporary directory that is removed on exit.

set -u -o pipefail

quick=0
runs=
install=1
render=1
seed_from=
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) quick=1 ;;
	--runs)
		runs=${2:-}
		shift
		;;
	--runs=*) runs=${1#--runs=} ;;
	--no-install) install=0 ;;
	--no-report) render=0 ;;
	--seed-from)
		seed_from=${2:-}
		shift
		;;
	--available)
		for t in lttng babeltrace2 heaptrack uftrace; do
			command -v "$t" >/dev/null 2>&1 && exit 0
		done
		exit 1
		;;
	-h | --help)
		sed -n '2,/^$/s/^# \{0,1\}//p' "$0"
		exit 0
		;;
	*)
		echo "peers.sh: unknown argument '$1' (try --help)" >&2
		exit 2
		;;
	esac
	shift
done
if [ -z "$runs" ]; then
	if [ $quick = 1 ]; then runs=3; else runs=5; fi
fi
case "$runs" in
'' | *[!0-9]* | 0)
	echo "peers.sh: --runs needs a positive integer, got '$runs'" >&2
	exit 2
	;;
esac
if [ $quick = 1 ]; then
	events=1000000
	mode=quick
else
	events=10000000
	mode=full
fi

here=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$here")" || exit 1
out=build/bench
mkdir -p "$out/peers"
summary=$out/peers-summary.txt
body=$(mktemp "${TMPDIR:-/tmp}/trc-peers-body.XXXXXX") || exit 1
work=$(mktemp -d "${TMPDIR:-/tmp}/trc-peers.XXXXXX") || exit 1
t_start=$(date +%s)
started=$(date '+%Y-%m-%d %H:%M:%S %z')
cmdline="bench/peers.sh$([ $quick = 1 ] && echo " --quick") --runs $runs"

TRACE_RUN=build/bin/trace-run
TRACE_DUMP=build/bin/trace-dump

log() { echo "peers.sh: $*" >&2; }
note() { printf 'NOTE\t%s\t%s\n' "$1" "$2" >>"$body"; log "$1: $2"; }
cmd() { printf 'CMD\t%s\t%s\n' "$1" "$2" >>"$body"; }

# ---- LTTng session daemon: ours, stopped on exit -----------------------------------------------
sessiond_pid=
sessiond_ours=0
cleanup() {
	if [ "$sessiond_ours" = 1 ] && [ -n "$sessiond_pid" ]; then
		kill "$sessiond_pid" 2>/dev/null
		for _ in $(seq 50); do
			kill -0 "$sessiond_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$sessiond_pid" 2>/dev/null && kill -9 "$sessiond_pid" 2>/dev/null
	fi
	rm -rf "$work" "$body"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

lttng_rundir() {
	if [ "$(id -u)" = 0 ]; then echo /var/run/lttng; else echo "$LTTNG_HOME/.lttng"; fi
}

# Start a session daemon of our own; sets LTTNG_HOME. Returns non-zero with the reason in
# LTTNG_WHY.
lttng_daemon_start() {
	export LTTNG_HOME=$work/lttng-home
	mkdir -p "$LTTNG_HOME"
	local rundir pidfile
	rundir=$(lttng_rundir)
	pidfile=$rundir/lttng-sessiond.pid
	if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
		sessiond_pid=$(cat "$pidfile")
		note lttng "a session daemon was already running (pid $sessiond_pid, $rundir): used as is, not stopped"
		return 0
	fi
	if ! lttng-sessiond --daemonize --no-kernel --quiet 2>"$work/sessiond.err"; then
		LTTNG_WHY="lttng-sessiond --daemonize failed: $(why "$work/sessiond.err")"
		return 1
	fi
	sessiond_pid=$(cat "$pidfile" 2>/dev/null)
	if [ -z "$sessiond_pid" ]; then
		LTTNG_WHY="lttng-sessiond started but wrote no $pidfile"
		return 1
	fi
	sessiond_ours=1
	log "lttng-sessiond pid $sessiond_pid (ours, LTTNG_HOME=$LTTNG_HOME)"
}

# ---- figures -----------------------------------------------------------------------------------
# Values of one case: VALS[key]="v1 v2 ...", KEYS in first-seen order.
declare -A VALS
KEYS=()
reset_case() {
	VALS=()
	KEYS=()
}
add() { # key value: one run's figure (ignored when empty)
	[ -n "$2" ] || return 0
	[ -n "${VALS[$1]+x}" ] || KEYS+=("$1")
	VALS[$1]+="$2 "
}
# median min max of the numbers given
stats() {
	printf '%s\n' "$@" | sort -g | awk '
		{ a[NR] = $1 }
		END {
			if (NR == 0) exit 1
			m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
			printf "%s %s %s\n", m, a[1], a[NR]
		}'
}
num() { # print a figure compactly: integers as such, others with 4 significant digits
	awk -v x="$1" 'BEGIN {
		if (x == int(x) && (x < 0 ? -x : x) < 1e15) printf "%d", x
		else if ((x < 0 ? -x : x) >= 1000) printf "%.0f", x
		else printf "%.4g", x }'
}
median() { # key: the median of its values, or nothing
	[ -n "${VALS[$1]:-}" ] || return 0
	# shellcheck disable=SC2086
	stats ${VALS[$1]} | awk '{ print $1 }'
}
div() { # a b: a/b, nothing when either is missing or b is zero
	[ -n "${1:-}" ] && [ -n "${2:-}" ] || return 0
	awk -v a="$1" -v b="$2" 'BEGIN { if (b != 0) printf "%.6g\n", a / b }'
}
# Print the case's SUMMARY line: every key as its median, with _min/_max when it was measured
# more than once, then the extra key=value pairs given (ratios of medians, settings).
emit() {
	local case=$1
	shift
	local line="SUMMARY bench=peers case=$case" k s med lo hi
	for k in "${KEYS[@]}"; do
		# shellcheck disable=SC2086
		s=$(stats ${VALS[$k]})
		read -r med lo hi <<<"$s"
		line+=" $k=$(num "$med")"
		local n
		n=$(wc -w <<<"${VALS[$k]}")
		if [ "$n" -gt 1 ]; then line+=" ${k}_min=$(num "$lo") ${k}_max=$(num "$hi")"; fi
	done
	local kv figures=${#KEYS[@]}
	for kv in "$@"; do
		if [ -n "${kv#*=}" ]; then
			line+=" ${kv%%=*}=$(num "${kv#*=}")"
			figures=$((figures + 1))
		fi
	done
	if [ "$figures" = 0 ]; then
		note "$case" "no figure could be measured"
		return
	fi
	echo "$line" >>"$body"
	echo "$line"
}

now_ns() { date +%s%N; }
# Run a command, its stdout to $1, stderr to $1.err; sets ELAPSED_S. Returns its status.
timed() {
	local outf=$1
	shift
	local t0 t1 rc
	t0=$(now_ns)
	"$@" >"$outf" 2>"$outf.err"
	rc=$?
	t1=$(now_ns)
	ELAPSED_S=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.6f", (b - a) / 1e9 }')
	return $rc
}
kv() { # file key: value of key=value in a work_loop result line
	sed -n "s/.*[[:space:]]$2=\([^[:space:]]*\).*/\1/p" "$1" | tail -n 1
}
json() { # file key: a number of a JSON object; key may be a dotted path (records_by_type.instant)
	python3 -c 'import json,sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
if isinstance(v, bool): v = int(v)
if isinstance(v, (int, float)): print(v)' "$1" "$2" 2>/dev/null
}
json_sum() { # file key...: the sum of several numbers of a JSON object, nothing if one is missing
	local f=$1 k v sum=0
	shift
	for k in "$@"; do
		v=$(json "$f" "$k")
		[ -n "$v" ] || return 0
		sum=$(awk -v a="$sum" -v b="$v" 'BEGIN { printf "%.0f", a + b }')
	done
	echo "$sum"
}
fsize() { stat -c %s "$1" 2>/dev/null; }
dsize() { du -sb "$1" 2>/dev/null | awk '{ print $1 }'; }
why() { # a file's last stderr lines, one line
	tail -n 2 "$1" 2>/dev/null | tr '\n\t' '  ' | cut -c1-200
}

# ---- install -------------------------------------------------------------------------------------
PEER_PKGS="lttng-tools liblttng-ust-dev babeltrace2 uftrace heaptrack time"
missing_pkgs() {
	local p miss=
	for p in $PEER_PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
			miss+=" $p"
	done
	echo "$miss"
}
if [ $install = 1 ] && command -v dpkg-query >/dev/null; then
	miss=$(missing_pkgs)
	if [ -n "$miss" ]; then
		if [ "$(id -u)" = 0 ]; then
			log "installing$miss (apt-get; log in $out/peers-apt.log)"
			if ! (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				$miss) >"$out/peers-apt.log" 2>&1; then
				note install "apt-get install$miss failed (see $out/peers-apt.log); running what is installed"
			fi
		else
			note install "missing$miss; run as root: apt-get install -y$miss"
		fi
	fi
fi

have() { command -v "$1" >/dev/null 2>&1; }
trc_ok=1
trc_why=
for f in "$TRACE_RUN" "$TRACE_DUMP" build/bench/work_events; do
	if [ ! -x "$f" ]; then
		trc_ok=0
		trc_why="$f is not built"
		break
	fi
done
[ $trc_ok = 1 ] || note trc "$trc_why: no trc figures (make build-all)"

# ---- workload 1: tight event loop ---------------------------------------------------------------
lttng_ok=0
lttng_why=
LTTNG_EVENTS=$out/peers/lttng_events
if ! have lttng || ! have lttng-sessiond; then
	lttng_why="lttng-tools is not installed"
elif ! have babeltrace2; then
	lttng_why="babeltrace2 is not installed"
elif ! pkg-config --exists lttng-ust 2>/dev/null; then
	lttng_why="liblttng-ust-dev is not installed"
else
	mkdir -p "$out/peers"
	read -r -a ust_libs <<<"$(pkg-config --libs lttng-ust)"
	if ! cc -std=gnu17 -O2 -g -Wall -Wextra -Ibench -Ibench/peers \
		bench/peers/lttng_events.c -o "$LTTNG_EVENTS" "${ust_libs[@]}" \
		-lpthread 2>"$work/lttng-build.err"; then
		lttng_why="building bench/peers/lttng_events.c failed: $(why "$work/lttng-build.err")"
	elif ! lttng_daemon_start; then
		lttng_why=$LTTNG_WHY
	else
		lttng_ok=1
		lttng_why=
	fi
fi
[ $lttng_ok = 1 ] || note lttng "$lttng_why: no LTTng-UST figures"

# One LTTng recording of the loop: fills L_NS, L_EMITTED, L_READ, L_BYTES, L_READ_S.
lttng_session=0
lttng_record() {
	local threads=$1 dir
	lttng_session=$((lttng_session + 1))
	local name=trcpeers$$_$lttng_session
	dir=$work/lttng-$lttng_session
	L_NS='' L_EMITTED='' L_READ='' L_BYTES='' L_READ_S=''
	{
		lttng create "$name" --output="$dir" &&
			lttng enable-event --userspace 'trc_bench:*' --session="$name" &&
			lttng start "$name"
	} >"$work/lttng-ctl.log" 2>&1 || {
		LTTNG_FAIL="lttng create/enable-event/start failed: $(why "$work/lttng-ctl.log")"
		lttng destroy "$name" >/dev/null 2>&1
		return 1
	}
	timed "$work/l.out" "$LTTNG_EVENTS" "$events" "$threads"
	local rc=$?
	lttng stop "$name" >/dev/null 2>&1
	lttng destroy "$name" >/dev/null 2>&1
	if [ $rc -ne 0 ]; then
		LTTNG_FAIL="lttng_events exited $rc: $(why "$work/l.out.err")"
		return 1
	fi
	L_NS=$(kv "$work/l.out" ns_per_event)
	L_EMITTED=$(kv "$work/l.out" emitted)
	L_BYTES=$(dsize "$dir")
	timed "$work/bt.out" babeltrace2 "$dir" --component=sink.utils.counter
	rc=$?
	L_READ_S=$ELAPSED_S
	L_READ=$(awk '/Event messages/ { n = $1 } END { print n }' "$work/bt.out")
	rm -rf "$dir"
	if [ $rc -ne 0 ] || [ -z "$L_READ" ]; then
		LTTNG_FAIL="babeltrace2 failed ($rc): $(why "$work/bt.out.err")"
		return 1
	fi
}

# One trc recording of the loop: fills T_NS, T_EMITTED, T_REC, T_ALL, T_LOST, T_BYTES, T_READ_S.
trc_record() {
	local threads=$1 f=$work/events.trc
	T_NS='' T_EMITTED='' T_REC='' T_ALL='' T_LOST='' T_BYTES='' T_READ_S=''
	rm -f "$f"
	timed "$work/t.out" "$TRACE_RUN" -o "$f" -- build/bench/work_events "$events" "$threads"
	local rc=$?
	if [ $rc -ne 0 ]; then
		TRC_FAIL="trace-run exited $rc: $(why "$work/t.out.err")"
		return 1
	fi
	T_NS=$(kv "$work/t.out" ns_per_event)
	T_EMITTED=$(kv "$work/t.out" emitted)
	T_BYTES=$(fsize "$f")
	if ! timed "$work/d.json" "$TRACE_DUMP" summary --json "$f"; then
		TRC_FAIL="trace-dump summary --json failed: $(why "$work/d.json.err")"
		return 1
	fi
	T_READ_S=$ELAPSED_S
	# the loop's events are the instants; events_recorded also counts the thread and process
	# records trace-run adds
	T_REC=$(json "$work/d.json" records_by_type.instant)
	T_ALL=$(json "$work/d.json" events_recorded)
	T_LOST=$(json "$work/d.json" events_lost)
	rm -f "$f"
	if [ -z "$T_NS" ] || [ -z "$T_REC" ]; then
		TRC_FAIL="no ns_per_event from work_events or no events_recorded from trace-dump"
		return 1
	fi
}

events_case() {
	local threads=$1 case=events-${1}t r
	reset_case
	log "$case: $events events, $threads thread(s), $runs runs"
	cmd "$case" "build/bench/work_events $events $threads bare   (the bare loop: TSC + store)"
	cmd "$case" "build/bench/work_events $events $threads   (untraced: no session)"
	cmd "$case" "$TRACE_RUN -o FILE -- build/bench/work_events $events $threads; $TRACE_DUMP summary --json FILE"
	if [ $lttng_ok = 1 ]; then
		cmd "$case" "$LTTNG_EVENTS $events $threads   (untraced: no LTTng session)"
		cmd "$case" "lttng create S --output=DIR; lttng enable-event --userspace 'trc_bench:*'; lttng start; $LTTNG_EVENTS $events $threads; lttng stop; lttng destroy; babeltrace2 DIR --component=sink.utils.counter"
	fi
	local trc_fail=0 lttng_fail=0
	for r in $(seq "$runs"); do
		# The tools alternate inside each run, so drift on this shared machine hits them alike.
		if [ -x build/bench/work_events ] &&
			timed "$work/b.out" build/bench/work_events "$events" "$threads" bare; then
			add bare_ns_per_event "$(kv "$work/b.out" ns_per_event)"
		fi
		if [ $trc_ok = 1 ]; then
			if timed "$work/u.out" build/bench/work_events "$events" "$threads"; then
				add trc_untraced_ns_per_event "$(kv "$work/u.out" ns_per_event)"
			fi
			if trc_record "$threads"; then
				add trc_ns_per_event "$T_NS"
				add trc_events_recorded "$T_REC"
				add trc_records_all "$T_ALL"
				add trc_events_lost "$T_LOST"
				# emitted = recorded + lost must hold exactly: anything else is a trc bug
				add trc_events_unaccounted "$((T_EMITTED - T_REC - T_LOST))"
				add trc_lost_pct "$(awk -v l="$T_LOST" -v e="$T_EMITTED" 'BEGIN { if (e > 0) printf "%.4f", 100 * l / e }')"
				add trc_bytes_per_event "$(div "$T_BYTES" "$T_REC")"
				add trc_read_events_per_s "$(div "$T_ALL" "$T_READ_S")"
			else
				trc_fail=$((trc_fail + 1))
				[ $trc_fail = 1 ] && note "$case" "trc run $r failed: $TRC_FAIL"
			fi
		fi
		if [ $lttng_ok = 1 ]; then
			if timed "$work/lu.out" "$LTTNG_EVENTS" "$events" "$threads"; then
				add lttng_untraced_ns_per_event "$(kv "$work/lu.out" ns_per_event)"
			fi
			if lttng_record "$threads"; then
				add lttng_ns_per_event "$L_NS"
				add lttng_events_recorded "$L_READ"
				add lttng_events_lost "$((L_EMITTED - L_READ))"
				add lttng_lost_pct "$(awk -v r="$L_READ" -v e="$L_EMITTED" 'BEGIN { if (e > 0) printf "%.4f", 100 * (e - r) / e }')"
				add lttng_bytes_per_event "$(div "$L_BYTES" "$L_READ")"
				add lttng_read_events_per_s "$(div "$L_READ" "$L_READ_S")"
			else
				lttng_fail=$((lttng_fail + 1))
				[ $lttng_fail = 1 ] && note "$case" "LTTng run $r failed: $LTTNG_FAIL"
			fi
		fi
	done
	[ ${#KEYS[@]} -gt 0 ] || { note "$case" "nothing could run"; return; }
	emit "$case" events="$events" threads="$threads" runs="$runs" \
		ratio_trc_vs_bare="$(div "$(median trc_ns_per_event)" "$(median bare_ns_per_event)")" \
		ratio_lttng_vs_bare="$(div "$(median lttng_ns_per_event)" "$(median bare_ns_per_event)")" \
		ratio_lttng_vs_trc="$(div "$(median lttng_ns_per_event)" "$(median trc_ns_per_event)")" \
		ratio_read_trc_vs_babeltrace2="$(div "$(median trc_read_events_per_s)" "$(median lttng_read_events_per_s)")" \
		>/dev/null
}

events_case 1
events_case 2

# ---- workload 2: allocation-heavy program --------------------------------------------------------
# Peak RSS the untraced program reaches, per /usr/bin/time -v, in bytes.
maxrss_bytes() {
	awk -F': *' '/Maximum resident set size/ { print $2 * 1024 }' "$1"
}
# heaptrack_print's "peak RSS (including heaptrack overhead): 6.10M" (units of 1000) in bytes.
heaptrack_peak_rss() {
	awk -F': *' '/peak RSS \(including heaptrack overhead\)/ {
		v = $2; u = substr(v, length(v)); n = v + 0
		m = (u == "K") ? 1e3 : (u == "M") ? 1e6 : (u == "G") ? 1e9 : (u == "T") ? 1e12 : 1
		printf "%.0f\n", n * m }' "$1"
}

# The project's own workload when it is built, else the copy in bench/peers/.
MALLOC_CMD=()
if [ -x build/bench/work_malloc ]; then
	MALLOC_CMD=(build/bench/work_malloc)
elif cc -std=gnu17 -O2 -g bench/peers/peer_malloc.c -o "$out/peers/peer_malloc" \
	2>"$work/pm.err"; then
	MALLOC_CMD=("$out/peers/peer_malloc")
	note malloc "build/bench/work_malloc is not built: bench/peers/peer_malloc.c used instead"
else
	note malloc "build/bench/work_malloc is not built and bench/peers/peer_malloc.c did not build: $(why "$work/pm.err")"
fi
if [ ${#MALLOC_CMD[@]} -gt 0 ]; then
	# OPS PEAK_MIB (both programs take the same arguments)
	if [ $quick = 1 ]; then margs=${PEERS_MALLOC_ARGS:-1000000 64}; else margs=${PEERS_MALLOC_ARGS:-10000000 128}; fi
	read -r -a extra <<<"$margs"
	MALLOC_CMD+=("${extra[@]}")
fi

malloc_case() {
	local case=malloc r
	reset_case
	[ ${#MALLOC_CMD[@]} -gt 0 ] || return
	local ht_ok=1 ht_why=
	have heaptrack && have heaptrack_print || { ht_ok=0; ht_why="heaptrack is not installed"; }
	[ $ht_ok = 1 ] || note heaptrack "$ht_why: no heaptrack figures"
	log "$case: ${MALLOC_CMD[*]}, $runs runs"
	cmd "$case" "/usr/bin/time -v ${MALLOC_CMD[*]}   (untraced: wall time, Maximum resident set size)"
	[ $trc_ok = 1 ] && cmd "$case" "$TRACE_RUN -o FILE -- ${MALLOC_CMD[*]}; $TRACE_DUMP summary --json FILE   (rss_peak_bytes)"
	[ $ht_ok = 1 ] && cmd "$case" "heaptrack -o FILE ${MALLOC_CMD[*]}; heaptrack_print -f FILE.zst   (peak RSS)"
	local fails=0
	for r in $(seq "$runs"); do
		local base='' base_rss=''
		if timed "$work/m.out" /usr/bin/time -v -o "$work/m.time" "${MALLOC_CMD[@]}"; then
			base=$ELAPSED_S
			base_rss=$(maxrss_bytes "$work/m.time")
			add untraced_wall_s "$base"
			add untraced_maxrss_bytes "$base_rss"
		else
			note "$case" "untraced run $r failed: $(why "$work/m.out.err")"
			return
		fi
		if [ $trc_ok = 1 ]; then
			rm -f "$work/m.trc"
			if timed "$work/mt.out" "$TRACE_RUN" -o "$work/m.trc" -- "${MALLOC_CMD[@]}" &&
				"$TRACE_DUMP" summary --json "$work/m.trc" >"$work/m.json" 2>"$work/m.json.err"; then
				local peak
				peak=$(json "$work/m.json" rss_peak_bytes)
				add trc_wall_s "$ELAPSED_S"
				add trc_slowdown "$(div "$ELAPSED_S" "$base")"
				add trc_bytes "$(fsize "$work/m.trc")"
				# the workload's events are its allocation and free records
				add trc_events_recorded "$(json_sum "$work/m.json" records_by_type.alloc records_by_type.free)"
				add trc_events_lost "$(json "$work/m.json" events_lost)"
				add trc_rss_peak_bytes "$peak"
				add trc_rss_peak_vs_time "$(div "$peak" "$base_rss")"
			else
				fails=$((fails + 1))
				[ $fails = 1 ] && note "$case" "trc run $r failed: $(why "$work/mt.out.err") $(why "$work/m.json.err")"
			fi
			rm -f "$work/m.trc"
		fi
		if [ $ht_ok = 1 ]; then
			rm -f "$work"/ht.*
			if timed "$work/mh.out" heaptrack -o "$work/ht" "${MALLOC_CMD[@]}"; then
				local htf peak
				htf=$(ls "$work"/ht.* 2>/dev/null | head -n 1)
				add heaptrack_wall_s "$ELAPSED_S"
				add heaptrack_slowdown "$(div "$ELAPSED_S" "$base")"
				add heaptrack_bytes "$(fsize "$htf")"
				if heaptrack_print -f "$htf" -p 0 -a 0 -T 0 -l 0 >"$work/hp.out" 2>&1; then
					peak=$(heaptrack_peak_rss "$work/hp.out")
					add heaptrack_peak_rss_bytes "$peak"
					add heaptrack_rss_peak_vs_time "$(div "$peak" "$base_rss")"
				fi
			else
				note "$case" "heaptrack run $r failed: $(why "$work/mh.out.err")"
				ht_ok=0
			fi
			rm -f "$work"/ht.*
		fi
	done
	emit "$case" runs="$runs" \
		ratio_heaptrack_vs_trc_wall="$(div "$(median heaptrack_wall_s)" "$(median trc_wall_s)")" \
		>/dev/null
}
malloc_case

# ---- workload 3: function-call-heavy program -----------------------------------------------------
CALLS_ARGS=()
# CALLS (work_calls and peer_calls take the same argument)
if [ $quick = 1 ]; then cargs=${PEERS_CALLS_ARGS:-3000000}; else cargs=${PEERS_CALLS_ARGS:-12000000}; fi
read -r -a CALLS_ARGS <<<"$cargs"

# uftrace's function count: the sum of the Calls column of `uftrace report`, two records
# (entry and exit) per call.
uftrace_events() {
	uftrace report -d "$1" --no-pager -f call 2>/dev/null | awk '
		NR > 2 && $1 ~ /^[0-9]+$/ { calls += $1 }
		END { if (calls > 0) print 2 * calls }'
}

# The project's own workload (plain, _finst and _pg builds) when it is built, else the copy in
# bench/peers/ built the same three ways. Sets CALLS_PROG ("" when neither is there).
calls_prog() {
	CALLS_PROG=build/bench/work_calls
	[ -x $CALLS_PROG ] && [ -x ${CALLS_PROG}_finst ] && [ -x ${CALLS_PROG}_pg ] && return
	CALLS_PROG=$out/peers/peer_calls
	local flags=(-std=gnu17 -O2 -g)
	if cc "${flags[@]}" bench/peers/peer_calls.c -o "$CALLS_PROG" 2>"$work/pc.err" &&
		cc "${flags[@]}" -finstrument-functions bench/peers/peer_calls.c \
			-o "${CALLS_PROG}_finst" 2>>"$work/pc.err" &&
		cc "${flags[@]}" -pg bench/peers/peer_calls.c -o "${CALLS_PROG}_pg" 2>>"$work/pc.err"; then
		note calls "build/bench/work_calls{,_finst,_pg} are not built: bench/peers/peer_calls.c used instead"
	else
		note calls "build/bench/work_calls is not built and bench/peers/peer_calls.c did not build: $(why "$work/pc.err")"
		CALLS_PROG=
	fi
}

calls_case() {
	local case=calls r
	reset_case
	calls_prog
	local p=$CALLS_PROG
	[ -n "$p" ] || return
	local uf_ok=1
	have uftrace || { uf_ok=0; note uftrace "uftrace is not installed: no uftrace figures"; }
	log "$case: $p ${CALLS_ARGS[*]}, $runs runs"
	local a=${CALLS_ARGS[*]:+ ${CALLS_ARGS[*]}}
	cmd "$case" "$p$a   (untraced, plain build)"
	[ $trc_ok = 1 ] && cmd "$case" "$TRACE_RUN -o FILE -- ${p}_finst$a; $TRACE_DUMP summary --json FILE"
	[ $uf_ok = 1 ] && cmd "$case" "uftrace record -d DIR ${p}_pg$a; uftrace report -d DIR -f call"
	local fails=0
	for r in $(seq "$runs"); do
		local base=
		if timed "$work/c.out" "$p" "${CALLS_ARGS[@]}"; then
			base=$ELAPSED_S
			add untraced_wall_s "$base"
		else
			note "$case" "untraced run $r failed: $(why "$work/c.out.err")"
			return
		fi
		if [ $trc_ok = 1 ]; then
			rm -f "$work/c.trc"
			if timed "$work/ct.out" "$TRACE_RUN" -o "$work/c.trc" -- "${p}_finst" "${CALLS_ARGS[@]}" &&
				"$TRACE_DUMP" summary --json "$work/c.trc" >"$work/c.json" 2>"$work/c.json.err"; then
				local ev bytes
				# the workload's events are its function entry and exit records
				ev=$(json_sum "$work/c.json" records_by_type.func_enter records_by_type.func_exit)
				bytes=$(fsize "$work/c.trc")
				add trc_wall_s "$ELAPSED_S"
				add trc_slowdown "$(div "$ELAPSED_S" "$base")"
				add trc_events_recorded "$ev"
				add trc_events_lost "$(json "$work/c.json" events_lost)"
				add trc_bytes "$bytes"
				add trc_bytes_per_event "$(div "$bytes" "$ev")"
			else
				fails=$((fails + 1))
				[ $fails = 1 ] && note "$case" "trc run $r failed: $(why "$work/ct.out.err") $(why "$work/c.json.err")"
			fi
			rm -f "$work/c.trc"
		fi
		if [ $uf_ok = 1 ]; then
			rm -rf "$work/uft"
			if timed "$work/cu.out" uftrace record -d "$work/uft" "${p}_pg" "${CALLS_ARGS[@]}"; then
				local ev bytes
				add uftrace_wall_s "$ELAPSED_S"
				add uftrace_slowdown "$(div "$ELAPSED_S" "$base")"
				ev=$(uftrace_events "$work/uft")
				bytes=$(dsize "$work/uft")
				add uftrace_events "$ev"
				add uftrace_bytes "$bytes"
				add uftrace_bytes_per_event "$(div "$bytes" "$ev")"
			else
				note "$case" "uftrace run $r failed: $(why "$work/cu.out.err")"
				uf_ok=0
			fi
			rm -rf "$work/uft"
		fi
	done
	emit "$case" runs="$runs" \
		ratio_uftrace_vs_trc_wall="$(div "$(median uftrace_wall_s)" "$(median trc_wall_s)")" \
		>/dev/null
}
calls_case

# ---- workload 4: the seed problem, from the rss benchmark ----------------------------------------
rss_eps() { # file case: events_per_s of that case's SUMMARY line
	grep -E "^SUMMARY bench=rss case=$2( |$)" "$1" | tail -n 1 |
		sed -n 's/.*[[:space:]]events_per_s=\([^[:space:]]*\).*/\1/p'
}
seed_case() {
	local src=$seed_from rss_cmd
	if [ -n "$src" ] && grep -q '^SUMMARY bench=rss ' "$src" 2>/dev/null; then
		# runs.raw: what bench/run.sh ran so far in this run
		cmd seed "$(awk -F'\t' '$1 == "rss" { print $5 }' "$out/runs.raw" 2>/dev/null |
			tail -n 1)   (run by bench/run.sh in this run)"
	else
		if [ ! -x build/bench/bench_rss ]; then
			note seed "build/bench/bench_rss is not built: no in-band vs out-of-band figures"
			return
		fi
		rss_cmd="build/bench/bench_rss$([ $quick = 1 ] && echo " --quick") --runs $runs"
		log "seed: $rss_cmd"
		src=$work/rss.out
		# shellcheck disable=SC2086
		if ! $rss_cmd >"$src" 2>"$src.err"; then
			note seed "$rss_cmd failed: $(why "$src.err")"
			return
		fi
		cmd seed "$rss_cmd"
	fi
	local c line found=0
	for c in none inband-1000 inband oob; do
		line=$(grep -E "^SUMMARY bench=rss case=$c( |$)" "$src" | tail -n 1)
		[ -n "$line" ] || continue
		found=1
		echo "${line/SUMMARY bench=rss case=$c/SUMMARY bench=peers case=seed-$c}" >>"$body"
	done
	if [ $found = 0 ]; then
		note seed "the rss benchmark printed no none/inband/oob SUMMARY line"
		return
	fi
	local eps_in eps_oob eps_none
	eps_none=$(rss_eps "$src" none)
	eps_in=$(rss_eps "$src" inband)
	eps_oob=$(rss_eps "$src" oob)
	reset_case
	emit seed none_events_per_s="$eps_none" inband_events_per_s="$eps_in" \
		oob_events_per_s="$eps_oob" ratio_oob_vs_inband="$(div "$eps_oob" "$eps_in")" \
		ratio_oob_vs_none="$(div "$eps_oob" "$eps_none")" >/dev/null
}
seed_case

# ---- write -------------------------------------------------------------------------------------
finished=$(date '+%Y-%m-%d %H:%M:%S %z')
{
	printf '# mode=%s\tstarted=%s\tfinished=%s\tseconds=%s\tcommand=%s\tstatus=ran\n' \
		"$mode" "$started" "$finished" "$(($(date +%s) - t_start))" "$cmdline"
	cat "$body"
} >"$summary"
log "wrote $summary ($(grep -c '^SUMMARY' "$summary") SUMMARY lines) in $(($(date +%s) - t_start))s"
grep '^SUMMARY' "$summary"

if [ $render = 1 ]; then
	rep=$out/peers-report
	mkdir -p "$rep"
	rm -f "$rep"/*
	cp "$summary" "$rep/peers-summary.txt"
	python3 bench/report.py render "$rep" >/dev/null && log "report: $rep/report.md"
fi
exit 0
