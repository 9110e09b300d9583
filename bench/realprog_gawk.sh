#!/bin/sh
# realprog_gawk.sh - trc against heaptrack on a real program nobody here wrote, built the
# normal way: GNU awk from Debian's source, ./configure && make with gawk's own default flags
# (-g -O2 -DNDEBUG: no frame pointers, no instrumentation), running an allocation-heavy awk
# program (word counts, toupper, gsub, split, asorti, sprintf: ~5 M mallocs in ~1.5 s) on
# generated text, through bench/compare_heaptrack.py.
#
#   bench/realprog_gawk.sh DIR [compare_heaptrack.py options, e.g. --runs 5]
#
# DIR (outside the repository) receives the source, the build and the input; a second run
# reuses them. Run from the repository's top, trc built (make). Needs heaptrack, python3,
# dpkg-dev, a C compiler and apt with a deb-src entry, e.g. a file
# /etc/apt/sources.list.d/debian-src.sources holding
#   Types: deb-src
#   URIs: http://deb.debian.org/debian
#   Suites: bookworm
#   Components: main
#   Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
# then `apt-get update`. Not run by make test.
#
# Only gawk's program target is built: the full `make` stops in doc/, whose Texinfo sources
# Debian's repacked tarball leaves out (GFDL invariant sections); the program's flags are the
# same.
set -eu

[ $# -ge 1 ] || { echo "usage: bench/realprog_gawk.sh DIR [compare options]" >&2; exit 2; }
dir=$1
shift
repo=$(pwd)
[ -x "$repo/build/bin/trace-run" ] || { echo "realprog_gawk: run from the repository's top after make" >&2; exit 1; }
mkdir -p "$dir"
cd "$dir"

src=$(ls -d gawk-*/ 2>/dev/null | head -n 1)
if [ -z "$src" ]; then
	apt-get source gawk >source.log 2>&1 || {
		echo "realprog_gawk: apt-get source gawk failed (no deb-src entry? see the head of this script): $(tail -n 1 source.log)" >&2
		exit 1
	}
	src=$(ls -d gawk-*/ | head -n 1)
fi
src=${src%/}

if [ ! -x build/gawk ]; then
	mkdir -p build
	(cd build && "../$src/configure" >configure.log 2>&1 &&
		make -j2 -C support >make.log 2>&1 && make -j2 gawk >>make.log 2>&1) || {
		echo "realprog_gawk: building gawk failed: see $dir/build/configure.log and make.log" >&2
		exit 1
	}
fi

if [ ! -f words.txt ]; then
	python3 - <<'EOF'
import random
random.seed(1)
syl = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "qu", "ba", "do"]
words = ["".join(random.choice(syl) for _ in range(random.randint(1, 4))) for _ in range(20000)]
with open("words.txt", "w") as f:
    for i in range(100000):
        f.write(" ".join(random.choice(words) for _ in range(random.randint(3, 12))) + "\n")
EOF
fi

cat >wf.awk <<'EOF'
# word frequencies, joined keys, a sorted report: strings, arrays and sprintf
{
	for (i = 1; i <= NF; i++) {
		cnt[$i]++
		w = toupper($i)
		len[w] += length(w)
	}
	key[NR % 50000] = $1 "-" $NF
	line = $0; gsub(/a/, "A", line); n = split(line, parts, " ")
}
END {
	n = asorti(cnt, idx)
	for (i = 1; i <= n; i++)
		out = out sprintf("%s:%d\n", idx[i], cnt[idx[i]])
	m = split(out, rows, "\n")
	print n, m, length(out), length(key)
}
EOF

cd "$repo"
exec python3 bench/compare_heaptrack.py --name gawk "$@" -- "$dir/build/gawk" -f "$dir/wf.awk" \
	"$dir/words.txt"
