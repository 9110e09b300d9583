#!/bin/sh
# A folder's private headers (*_priv.h, *_internal.h) are its own: no file of another folder of
# the library or the tools includes one. The Makefile's per-folder include paths say which
# folders' headers a folder may use at all; this says which of those headers are not for
# others. Tests and benchmarks are white-box and may include any.
# Run by `make test` (test-includes); exits 1 naming each include that crosses a folder.
cd "$(dirname "$0")/.." || exit 2
bad=0
for f in $(find ringbuf sampler src tools -name '*.[ch]' | sort); do
	dir=$(dirname "$f")
	for h in $(sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*_\(priv\|internal\)\.h\)".*/\1/p' "$f"); do
		[ -e "$dir/$(basename "$h")" ] && continue
		owner=$(find ringbuf sampler src tools -name "$(basename "$h")" | head -1)
		echo "check_includes: $f includes ${owner:-$h}, private to $(dirname "${owner:-?}")" >&2
		bad=1
	done
done
exit $bad
