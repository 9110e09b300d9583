#!/bin/sh
# Every Criterion test in tests/test_*.c declares its own timeout (Test(suite, name,
# .timeout = N, ...)), so a test that hangs fails in bounded time instead of holding the tier.
# Per test, because Criterion 2.4 ignores TestSuite(..., .timeout = N), and its global --timeout
# overrides the longer timeouts some tests need. Sized for the ASan tier on a loaded 2-core
# machine: 60 s for tests that stay in the process, 120-180 s for tests that spawn the tools.
# Run by `make test-run-suites` before the suites; exits 1 naming each test that has none.
[ $# -gt 0 ] || set -- tests/test_*.c
exec awk '
	/^(Test|ParameterizedTest|Theory)\(/ { decl = ""; start = FNR; open = 1 }
	open { decl = decl $0 }
	open && /\)[ \t]*(\{.*)?$/ {
		open = 0
		if (decl !~ /\.timeout[ \t]*=[ \t]*[0-9]/) {
			sub(/\{.*/, "", decl)
			printf "check_timeouts: %s:%d: no .timeout: %s\n", FILENAME, start, decl > "/dev/stderr"
			bad = 1
		}
	}
	END { exit bad }
' "$@"
