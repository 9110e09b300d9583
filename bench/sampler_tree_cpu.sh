#!/bin/bash
# sampler_tree_cpu.sh - the RSS sampler's CPU with N processes in the traced tree (issue 14).
#
# trace-run records `sh -c` starting N copies of prog_touch_mem (1 MiB each, alive 9 s); after
# 3 s (every process attached and sampled) the trc-sampler thread's run time is read from
# /proc/PID/task/TID/schedstat over a 5 s window. Prints the CPU share and how many pids the
# trace has series for (N + the shell).
#
# Usage: bench/sampler_tree_cpu.sh [N=100] [SOURCE=statm] [INTERVAL=100ms]  (after `make`)
set -eu
N=${1:-100}; SRC=${2:-statm}; IV=${3:-100ms}
B=${TRC_BUILD:-build}
T=$B/tests/prog_touch_mem
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
$B/bin/trace-run -q -o "$OUT/t.trc" --rss-interval "$IV" --rss-source "$SRC" -- \
	sh -c "for i in \$(seq $N); do $T 1 exit=9000 >/dev/null & done; wait" &
TR=$!
sleep 3
TID=$(grep -l trc-sampler /proc/$TR/task/*/comm | head -1 | cut -d/ -f5)
a=$(cut -d' ' -f1 "/proc/$TR/task/$TID/schedstat")
sleep 5
b=$(cut -d' ' -f1 "/proc/$TR/task/$TID/schedstat")
wait $TR
n=$($B/bin/trace-dump rss "$OUT/t.trc" | awk -F, 'NR>1{p[$2]=1} END{print length(p)}')
awk -v a="$a" -v b="$b" -v n="$n" -v N="$N" -v s="$SRC" -v iv="$IV" 'BEGIN{
	printf "%d processes, %s every %s: sampler %.3f%% of a core (%.2f ms/s); %d pids sampled\n",
	       N, s, iv, (b - a) / 5e9 * 100, (b - a) / 5e6, n}'
