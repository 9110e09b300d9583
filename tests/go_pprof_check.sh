#!/bin/bash
# go_pprof_check.sh - the pprof tier: Go's own pprof (`go tool pprof -top`, Debian golang-go)
# reads `trace-dump pprof` output, and its totals must be the summary's, exactly.
#
# Usage: bash tests/go_pprof_check.sh BUILD_DIR
# It records two programs with trace-run (prog_demo: four threads allocating inside spans;
# prog_e2e_mem: one large block held, then freed), exports each with --alloc, --live-at end and
# --live-at peak, and checks what `go tool pprof -top` prints:
#   --alloc            alloc_objects total = summary allocs, alloc_space total = alloc_bytes
#   --live-at end      inuse_space total = live_end_bytes
#   --live-at peak     inuse_space total = live_peak_bytes
# and that the spans holding most of the allocated bytes appear by name in -top's table.
# Prints one line per check and "N passed, M failed" at the end; exits 1 if any failed.
# Threads: none (a script; the programs it records have their own).
set -u
build=$(cd "${1:?usage: go_pprof_check.sh BUILD_DIR}" && pwd)
command -v go >/dev/null || { echo "go_pprof_check: go not found (apt-get install golang-go)"; exit 2; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/trc-go-pprof.XXXXXX")
trap 'rm -rf "$dir"' EXIT
# pprof keeps nothing for local files, but give it (and go) somewhere of our own to write.
export PPROF_TMPDIR="$dir" GOCACHE="$dir/gocache" HOME="${HOME:-$dir}"
passed=0 failed=0

check() { # what got want
	if [ "$2" = "$3" ]; then
		echo "ok    $1: $2"
		passed=$((passed + 1))
	else
		echo "FAIL  $1: go tool pprof says ${2:-nothing}, trace-dump summary --json says $3"
		failed=$((failed + 1))
	fi
}

# A number of the summary's JSON.
summary() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# The total of `go tool pprof -top` for one sample index, as a plain number ("... of N total",
# N in bytes with -unit=B, or a count).
top_total() { # profile sample_index
	go tool pprof -top -unit=B -sample_index="$2" "$1" 2>"$dir/pprof.err" >"$dir/top.txt" ||
		{ cat "$dir/pprof.err"; return; }
	sed -n 's/.* of \([0-9]*\)B\{0,1\} total.*/\1/p' "$dir/top.txt" | head -1
}

for prog in "prog_demo" "prog_e2e_mem 32 50"; do
	name=${prog%% *}
	trc="$dir/$name.trc"
	# shellcheck disable=SC2086 # prog carries its arguments
	if ! "$build/bin/trace-run" -q -o "$trc" -- "$build/tests/"$prog >/dev/null 2>"$dir/run.err"; then
		echo "FAIL  $name: trace-run: $(cat "$dir/run.err")"
		failed=$((failed + 1))
		continue
	fi
	"$build/bin/trace-dump" summary --json "$trc" >"$dir/sum.json"
	for mode in alloc end peak; do
		case $mode in
		alloc) opt=(--alloc) ;;
		*) opt=(--live-at "$mode") ;;
		esac
		pb="$dir/$name.$mode.pb.gz"
		if ! "$build/bin/trace-dump" pprof "${opt[@]}" "$trc" -o "$pb" 2>"$dir/dump.err"; then
			echo "FAIL  $name: trace-dump pprof ${opt[*]}: $(cat "$dir/dump.err")"
			failed=$((failed + 1))
			continue
		fi
		case $mode in
		alloc)
			check "$name --alloc alloc_objects" "$(top_total "$pb" alloc_objects)" \
				"$(summary "$dir/sum.json" allocs)"
			check "$name --alloc alloc_space" "$(top_total "$pb" alloc_space)" \
				"$(summary "$dir/sum.json" alloc_bytes)"
			;;
		end)
			check "$name --live-at end inuse_space" "$(top_total "$pb" inuse_space)" \
				"$(summary "$dir/sum.json" live_end_bytes)"
			;;
		peak)
			check "$name --live-at peak inuse_space" "$(top_total "$pb" inuse_space)" \
				"$(summary "$dir/sum.json" live_peak_bytes)"
			;;
		esac
	done
done

# The names in the table: prog_demo allocates most of its bytes inside spans "demo.step".
go tool pprof -top -sample_index=alloc_space "$dir/prog_demo.alloc.pb.gz" >"$dir/top.txt" 2>/dev/null
check "prog_demo --alloc: demo.step in -top" "$(grep -c ' demo\.step$' "$dir/top.txt")" 1

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
