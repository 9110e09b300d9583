#!/usr/bin/env bash
# bench/run.sh - the benchmark harness: run every benchmark program, collect its SUMMARY lines,
# write the report.
#
#   bench/run.sh full    every build/bench/bench_* program at its default (>= 5 runs inside
#                        each), then the peers (bench/peers.sh --no-install) when their tools
#                        are installed; writes build/bench/{summary.txt,runs.txt,machine.txt,
#                        report.md,report.svg} and prints report.md.      (`make bench`)
#   bench/run.sh quick   the same with --quick: a minute or two in all.  (`make bench-quick`)
#   bench/run.sh smoke   every program once with --quick --runs 1: each must exit 0 and print
#                        at least one well-formed SUMMARY line of its own bench; the report is
#                        rendered from those lines into build/bench/smoke/ so the reporting
#                        code cannot rot either. Under a minute.           (`make test`)
#
# The set of benchmarks is bench/bench_*.c together with build/bench/bench_*: a source whose
# program is missing is "not built" (an error), a program whose source is gone is skipped.
# A program that crashes, times out or prints no SUMMARY line is reported with the reason;
# no figure is ever made up. Exit status: 0 when every benchmark ran, 1 otherwise, 2 on usage.
#
# Environment: BENCH_RUNS=N passes --runs N to every program (full and quick);
# BENCH_TIMEOUT=SECONDS per program (defaults: full 1800, quick 300, smoke 45);
# BENCH_PEERS=0 skips the peers in full and quick.
# Threads: none; programs run one after another so they do not disturb each other.

set -u -o pipefail

mode=${1:-}
case "$mode" in
full) args=(); timeout_s=${BENCH_TIMEOUT:-1800} ;;
quick) args=(--quick); timeout_s=${BENCH_TIMEOUT:-300} ;;
smoke) args=(--quick --runs 1); timeout_s=${BENCH_TIMEOUT:-45} ;;
*)
	echo "usage: bench/run.sh full|quick|smoke" >&2
	exit 2
	;;
esac
if [ "$mode" != smoke ] && [ -n "${BENCH_RUNS:-}" ]; then
	args+=(--runs "$BENCH_RUNS")
fi

here=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$here")" || exit 1
report=bench/report.py

if [ "$mode" = smoke ]; then
	out=build/bench/smoke
else
	out=build/bench
fi
mkdir -p "$out/out"
rm -f "$out/summary.txt" "$out/runs.txt" "$out/report.md" "$out/report.svg"
# Peers figures from an earlier run must not sit beside this run's: peers.sh rewrites the file
# when it runs below.
[ "$mode" = smoke ] || rm -f "$out/peers-summary.txt"

started=$(date '+%Y-%m-%d %H:%M:%S %z')
python3 "$report" machine >"$out/machine.txt" || { echo "run.sh: report.py machine failed" >&2; exit 1; }

# The benchmarks: sources and programs, by name (bench_ring -> ring).
names=$(
	{
		for f in bench/bench_*.c; do [ -e "$f" ] && basename "$f" .c; done
		for f in build/bench/bench_*; do [ -x "$f" ] && [ -f "$f" ] && basename "$f"; done
	} | sed -n 's/^bench_//p' | sort -u
)

failures=0
t_all0=$(date +%s.%N)
printf '%s\n' "$names" | grep -q . || echo "run.sh: no benchmark in bench/ or build/bench/" >&2

for name in $names; do
	src=bench/bench_$name.c
	prog=build/bench/bench_$name
	cmd="$prog${args[*]:+ ${args[*]}}"
	stdout=$out/out/$name.out
	stderr=$out/out/$name.err
	rm -f "$stdout" "$stderr"
	if [ ! -e "$src" ]; then
		printf '%s\tskipped\t0\t-\t%s\tno source bench/bench_%s.c (stale program)\n' \
			"$name" "$cmd" "$name" >>"$out/runs.txt"
		echo "run.sh: $name: skipped, $prog has no source"
		continue
	fi
	if [ ! -x "$prog" ]; then
		printf '%s\tnot built\t0\t-\t%s\t%s is missing (make build-all failed?)\n' \
			"$name" "$cmd" "$prog" >>"$out/runs.txt"
		echo "run.sh: $name: NOT BUILT ($prog is missing)" >&2
		failures=$((failures + 1))
		continue
	fi

	echo "run.sh: $name: $cmd" >&2
	t0=$(date +%s.%N)
	timeout --kill-after=5 "$timeout_s" "$prog" "${args[@]}" >"$stdout" 2>"$stderr"
	rc=$?
	t1=$(date +%s.%N)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')

	status=ok
	reason=
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		status=timeout
		reason="killed after ${timeout_s}s"
	elif [ $rc -ge 128 ]; then
		status=failed
		reason="killed by signal $((rc - 128)) ($(kill -l $((rc - 128)) 2>/dev/null || echo ?))"
	elif [ $rc -ne 0 ]; then
		status=failed
		reason="exit status $rc"
	fi
	if check=$(python3 "$report" check "$stdout" "$name"); then
		:
	else
		[ $status = ok ] && status=failed
		reason="${reason:+$reason; }$(printf '%s' "$check" | tr '\n\t' '; ')"
	fi
	if [ $status != ok ]; then
		last=$(tail -n 3 "$stderr" 2>/dev/null | tr '\n\t' '  ')
		[ -n "$last" ] && reason="$reason; stderr: $last"
		failures=$((failures + 1))
		echo "run.sh: $name: ${status^^} ($reason)" >&2
	else
		echo "run.sh: $name: ok in ${secs}s, $check" >&2
	fi
	grep '^SUMMARY ' "$stdout" >>"$out/summary.body" 2>/dev/null
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$status" "$secs" "$rc" "$cmd" "$reason" \
		>>"$out/runs.txt"
done

# The peers, measured in this same run, when their tools are here (full and quick only).
if [ "$mode" != smoke ] && [ "${BENCH_PEERS:-1}" != 0 ]; then
	if bench/peers.sh --available >/dev/null 2>&1; then
		peer_args=(--no-install)
		[ "$mode" = quick ] && peer_args+=(--quick)
		[ -n "${BENCH_RUNS:-}" ] && peer_args+=(--runs "$BENCH_RUNS")
		echo "run.sh: peers: bench/peers.sh ${peer_args[*]}" >&2
		bench/peers.sh "${peer_args[@]}" --no-report >"$out/out/peers.log" 2>&1 ||
			echo "run.sh: peers.sh failed, see $out/out/peers.log" >&2
	else
		echo "run.sh: peers: no peer tool installed (make bench-peers installs them)" >&2
	fi
elif [ "$mode" = smoke ]; then
	# The peers script must at least parse.
	if ! bash -n bench/peers.sh 2>"$out/out/peers.err"; then
		echo "run.sh: bench/peers.sh has a syntax error: $(cat "$out/out/peers.err")" >&2
		failures=$((failures + 1))
	fi
fi

finished=$(date '+%Y-%m-%d %H:%M:%S %z')
{
	printf '# mode=%s\tstarted=%s\tfinished=%s\n' "$mode" "$started" "$finished"
	cat "$out/summary.body" 2>/dev/null
} >"$out/summary.txt"
rm -f "$out/summary.body"

if [ "$mode" = smoke ]; then
	if ! python3 "$report" render "$out" >/dev/null 2>"$out/out/report.err"; then
		echo "run.sh: report.py render failed: $(tail -n 5 "$out/out/report.err")" >&2
		failures=$((failures + 1))
	fi
	total=$(awk -v a="$t_all0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	if [ $failures -ne 0 ]; then
		echo "bench smoke: $failures failure(s) in ${total}s (outputs in $out/out/)" >&2
		exit 1
	fi
	echo "bench smoke: every benchmark ran and printed SUMMARY lines, ${total}s"
	exit 0
fi

python3 "$report" render "$out" || { echo "run.sh: report.py render failed" >&2; exit 1; }
echo
if [ $failures -ne 0 ]; then
	echo "run.sh: report in $out/report.md; $failures benchmark(s) did not run cleanly" >&2
	exit 1
fi
echo "run.sh: report in $out/report.md" >&2
