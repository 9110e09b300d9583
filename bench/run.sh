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
# A program that crashes, times out or prints no well-formed SUMMARY line is reported with the
# reason (bench/report.py judges the outputs and writes the report); no figure is made up.
# Exit status: 0 when every benchmark ran cleanly, 1 otherwise, 2 on a usage error.
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

if [ "$mode" = smoke ]; then
	out=build/bench/smoke
else
	out=build/bench
fi
mkdir -p "$out/out"
rm -f "$out"/{summary.txt,runs.txt,runs.raw,machine.txt,report.md,report.svg} "$out"/out/*
# Peers figures from an earlier run must not sit beside this run's: peers.sh rewrites the file
# when it runs below.
[ "$mode" = smoke ] || rm -f "$out/peers-summary.txt"

t_all0=$(date +%s%N)
{
	echo "started: $(date '+%Y-%m-%d %H:%M:%S %z')"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)"
} >"$out/run-start.txt"

# The benchmarks: sources and programs, by name (bench_ring -> ring).
names=$(
	{
		for f in bench/bench_*.c; do [ -e "$f" ] && basename "$f" .c; done
		for f in build/bench/bench_*; do [ -x "$f" ] && [ -f "$f" ] && basename "$f"; done
	} | sed -n 's/^bench_//p' | sort -u
)
[ -n "$names" ] || echo "run.sh: no benchmark in bench/ or build/bench/" >&2

raw() { # bench status seconds exit command reason
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$out/runs.raw"
}

for name in $names; do
	src=bench/bench_$name.c
	prog=build/bench/bench_$name
	cmd="$prog${args[*]:+ ${args[*]}}"
	if [ ! -e "$src" ]; then
		raw "$name" skipped 0 - "$cmd" "no source bench/bench_$name.c (stale program)"
		continue
	fi
	if [ ! -x "$prog" ]; then
		raw "$name" "not built" 0 - "$cmd" "$prog is missing (did make build-all fail?)"
		continue
	fi

	echo "run.sh: $cmd" >&2
	t0=$(date +%s%N)
	# a subshell, so a crash is reported by us and not by bash's job control
	(exec timeout --kill-after=5 "$timeout_s" "$prog" "${args[@]}" \
		>"$out/out/$name.out" 2>"$out/out/$name.err")
	rc=$?
	secs=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')

	status=ok
	reason=
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		status=timeout
		reason="stopped after ${timeout_s}s"
	elif [ $rc -gt 128 ]; then
		status=failed
		reason="killed by signal $((rc - 128)) ($(kill -l $((rc - 128)) 2>/dev/null || echo ?))"
	elif [ $rc -ne 0 ]; then
		status=failed
		reason="exit status $rc"
	fi
	if [ $status != ok ]; then
		last=$(tail -n 3 "$out/out/$name.err" 2>/dev/null | tr '\n\t' '  ' | cut -c1-300)
		[ -n "$last" ] && reason="$reason; stderr: $last"
	fi
	raw "$name" "$status" "$secs" "$rc" "$cmd" "$reason"
done
touch "$out/runs.raw"

extra_fail=0
if [ "$mode" = smoke ]; then
	# The peers script is not run by the smoke check, but it must at least parse.
	if ! bash -n bench/peers.sh 2>"$out/out/peers.err"; then
		echo "run.sh: bench/peers.sh does not parse: $(cat "$out/out/peers.err")" >&2
		extra_fail=1
	fi
elif [ "${BENCH_PEERS:-1}" != 0 ]; then
	# The peers, measured in this same run, when their tools are here.
	if bench/peers.sh --available; then
		peer_args=(--no-install --no-report --seed-from "$out/out/rss.out")
		[ "$mode" = quick ] && peer_args+=(--quick)
		[ -n "${BENCH_RUNS:-}" ] && peer_args+=(--runs "$BENCH_RUNS")
		echo "run.sh: bench/peers.sh ${peer_args[*]}" >&2
		bench/peers.sh "${peer_args[@]}" >"$out/out/peers.log" 2>&1
		prc=$?
		if [ $prc -ne 0 ] || [ ! -s "$out/peers-summary.txt" ]; then
			echo "run.sh: bench/peers.sh failed, see $out/out/peers.log" >&2
			printf '# status=failed\treason=bench/peers.sh exited %s (log: %s)\tcommand=bench/peers.sh %s\n' \
				"$prc" "$out/out/peers.log" "${peer_args[*]}" >"$out/peers-summary.txt"
		fi
	else
		echo "run.sh: peers: no peer tool is installed (make bench-peers installs them)" >&2
		printf '# status=not run\treason=%s\tcommand=bench/peers.sh\n' \
			"none of lttng, babeltrace2, heaptrack, uftrace is installed (make bench-peers installs them)" \
			>"$out/peers-summary.txt"
	fi
fi

if [ "$mode" != smoke ] && [ "${BENCH_PEERS:-1}" = 0 ]; then
	printf '# status=skipped\treason=BENCH_PEERS=0\tcommand=bench/peers.sh\n' >"$out/peers-summary.txt"
fi

if [ "$mode" = smoke ]; then
	python3 bench/report.py finish "$out" "$mode" >/dev/null
	rc=$?
	total=$(awk -v a="$t_all0" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }')
	if [ $rc -ne 0 ] || [ $extra_fail -ne 0 ]; then
		echo "bench smoke: FAILED in ${total}s (outputs in $out/out/)" >&2
		exit 1
	fi
	echo "bench smoke: every benchmark ran and printed well-formed SUMMARY lines, ${total}s"
	exit 0
fi

python3 bench/report.py finish "$out" "$mode" --print
rc=$?
echo >&2
if [ $rc -ne 0 ]; then
	echo "run.sh: report in $out/report.md; some benchmarks did not run cleanly (above)" >&2
	exit 1
fi
echo "run.sh: report in $out/report.md" >&2
