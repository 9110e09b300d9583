# One non-recursive Makefile for the whole tree.
#
# Folders and what they build (file-name prefixes decide, so adding a file needs no edit here):
#   ringbuf/*.c, src/rt_*.c      -> build/lib/libtrc.so, libtrc.a   (runs inside traced programs)
#   src/preload_*.c              -> build/lib/libtrc-preload.so     (LD_PRELOAD hooks, uses libtrc.so)
#   sampler/*.c, other src/*.c   -> build/lib/libtrc-core.a         (recorder, file format, reader)
#   tools/run_*.c                -> build/bin/trace-run
#   tools/dump_*.c               -> build/bin/trace-dump
#   tests/test_*.c               -> build/tests/test_*   Criterion suites (also under ASan+UBSan)
#   tests/stress_*.c             -> build/tests/stress_* plain programs (also under TSan)
#   tests/prog_*.c               -> build/tests/prog_*   programs the end-to-end tests trace
#                                   (prog_finst_* are built with -finstrument-functions)
#   tests/fuzz_*.c               -> build/fuzz/fuzz_*    libFuzzer targets (clang)
#   bench/bench_*.c              -> build/bench/bench_*  benchmark programs
#   bench/work_*.c               -> build/bench/work_*   workloads (plain, and *_finst / *_pg builds)
#
# Variants: `make asan` / `make tsan` build the same tree under build/asan or build/tsan with
# clang; `make test` runs the plain suites, then the ASan+UBSan suites, then the TSan stress
# programs. V=1 prints full commands; CI=1 (set by CI) turns warnings into errors.

SAN ?=
ifeq ($(SAN),)
B := build
CC ?= gcc
else
B := build/$(SAN)
CC := clang
endif
ifeq ($(origin CC),default)
CC := gcc
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

PKGS := liburcu liburcu-cds libzstd
DEP_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
DEP_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CRIT_CFLAGS := $(shell pkg-config --cflags criterion 2>/dev/null)
CRIT_LIBS := $(shell pkg-config --libs criterion 2>/dev/null)

OPT ?= -O2
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wpointer-arith \
	-Wformat=2 -Wundef -Wvla -Wno-unused-parameter
ifneq ($(CI),)
WARN += -Werror
endif

SAN_FLAGS_asan := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
SAN_FLAGS_tsan := -fsanitize=thread -fno-omit-frame-pointer
SAN_FLAGS := $(SAN_FLAGS_$(SAN))

CPPFLAGS := -Iringbuf -Isampler -Isrc -Isrc/include -D_GNU_SOURCE
CFLAGS := -std=gnu17 $(OPT) -g -fPIC $(WARN) $(SAN_FLAGS) $(DEP_CFLAGS) -MMD -MP
LDFLAGS := $(SAN_FLAGS)
LDLIBS := -lpthread -lm

# ---- sources ---------------------------------------------------------------------------------
RT_SRCS := $(wildcard ringbuf/*.c) $(wildcard src/rt_*.c)
PRELOAD_SRCS := $(wildcard src/preload_*.c)
CORE_SRCS := $(wildcard sampler/*.c) $(filter-out src/rt_% src/preload_%,$(wildcard src/*.c))
RUN_SRCS := $(wildcard tools/run_*.c)
DUMP_SRCS := $(wildcard tools/dump_*.c)
TEST_SRCS := $(wildcard tests/test_*.c)
STRESS_SRCS := $(wildcard tests/stress_*.c)
PROG_SRCS := $(wildcard tests/prog_*.c)
FUZZ_SRCS := $(wildcard tests/fuzz_*.c)
BENCH_SRCS := $(wildcard bench/bench_*.c)
WORK_SRCS := $(wildcard bench/work_*.c)

obj = $(patsubst %.c,$(B)/obj/%.o,$(1))
# The shared libraries run inside programs we do not build (sh, sort, python3): in sanitizer
# variants they are built without sanitizers, since an ASan/TSan .so cannot be preloaded into
# an uninstrumented program. libtrc.a, tests and tools stay instrumented.
ifeq ($(SAN),)
soobj = $(call obj,$(1))
else
soobj = $(patsubst %.c,$(B)/obj-so/%.o,$(1))
endif

LIBTRC_SO := $(B)/lib/libtrc.so
LIBTRC_A := $(B)/lib/libtrc.a
PRELOAD_SO := $(B)/lib/libtrc-preload.so
CORE_A := $(B)/lib/libtrc-core.a
TRACE_RUN := $(B)/bin/trace-run
TRACE_DUMP := $(B)/bin/trace-dump
TESTS := $(patsubst tests/%.c,$(B)/tests/%,$(TEST_SRCS))
STRESS := $(patsubst tests/%.c,$(B)/tests/%,$(STRESS_SRCS))
PROGS := $(patsubst tests/%.c,$(B)/tests/%,$(PROG_SRCS))
FUZZERS := $(patsubst tests/%.c,$(B)/fuzz/%,$(FUZZ_SRCS))
BENCHES := $(patsubst bench/%.c,$(B)/bench/%,$(BENCH_SRCS))
WORKS := $(patsubst bench/%.c,$(B)/bench/%,$(WORK_SRCS)) \
	$(patsubst bench/%.c,$(B)/bench/%_finst,$(WORK_SRCS)) \
	$(patsubst bench/%.c,$(B)/bench/%_pg,$(WORK_SRCS))

TOOLS := $(if $(RUN_SRCS),$(TRACE_RUN)) $(if $(DUMP_SRCS),$(TRACE_DUMP))
LIBS := $(LIBTRC_SO) $(LIBTRC_A) $(CORE_A) $(if $(PRELOAD_SRCS),$(PRELOAD_SO))

# Static link of the internal libraries into tools, tests and benches: no rpath games, and the
# sanitizer variants get instrumented copies. Traced programs (prog_*, work_*) link libtrc.so.
INTERNAL_LIBS := $(CORE_A) $(LIBTRC_A)
RPATH = -Wl,-rpath,'$$ORIGIN/../lib'

.PHONY: all deps libs tools tests progs test test-plain test-asan test-tsan test-run-suites fuzz-brief \
	test-run-stress asan tsan fuzz stress bench bench-quick bench-peers demo format clean install

all: deps
	$(Q)$(MAKE) --no-print-directory build-all

.PHONY: build-all
build-all: $(LIBS) $(TOOLS) $(TESTS) $(STRESS) $(PROGS) $(BENCHES) $(WORKS)

libs: $(LIBS)
tools: $(TOOLS)
tests: $(TESTS) $(STRESS) $(PROGS) $(TOOLS) $(LIBS)

# ---- compile -----------------------------------------------------------------------------------
$(B)/obj/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(CFLAGS_$(<D)) -c $< -o $@

# tests use Criterion's macros, which trip -Wmissing-prototypes
CFLAGS_tests := $(CRIT_CFLAGS) -Wno-missing-prototypes
CFLAGS_bench := -Wno-missing-prototypes

# ---- libraries ---------------------------------------------------------------------------------
$(LIBTRC_A): $(call obj,$(RT_SRCS))
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/obj-so/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $< (no sanitizer)")
	$(Q)$(CC) $(CPPFLAGS) $(filter-out $(SAN_FLAGS),$(CFLAGS)) -c $< -o $@

$(LIBTRC_SO): $(call soobj,$(RT_SRCS))
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,libtrc.so -Wl,-z,nodelete $^ -o $@ $(LDLIBS)

$(PRELOAD_SO): $(call soobj,$(PRELOAD_SRCS)) $(LIBTRC_SO)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,libtrc-preload.so $(call soobj,$(PRELOAD_SRCS)) \
		-L$(B)/lib -ltrc -Wl,-rpath,'$$ORIGIN' -o $@ $(LDLIBS) -ldl

$(CORE_A): $(call obj,$(CORE_SRCS))
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

# ---- commands ----------------------------------------------------------------------------------
$(TRACE_RUN): $(call obj,$(RUN_SRCS)) $(INTERNAL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $(call obj,$(RUN_SRCS)) $(INTERNAL_LIBS) -o $@ $(DEP_LIBS) $(LDLIBS)

$(TRACE_DUMP): $(call obj,$(DUMP_SRCS)) $(INTERNAL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $(call obj,$(DUMP_SRCS)) $(INTERNAL_LIBS) -o $@ $(DEP_LIBS) $(LDLIBS)

# ---- tests -------------------------------------------------------------------------------------
$(B)/tests/test_%: $(B)/obj/tests/test_%.o $(INTERNAL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $< $(INTERNAL_LIBS) -o $@ $(CRIT_LIBS) $(DEP_LIBS) $(LDLIBS)

$(B)/tests/stress_%: $(B)/obj/tests/stress_%.o $(INTERNAL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $< $(INTERNAL_LIBS) -o $@ $(DEP_LIBS) $(LDLIBS)

$(B)/obj/tests/prog_finst_%.o: CFLAGS += -finstrument-functions
# A statically linked program: the preload library cannot enter it (trace-run still records
# its lifetime and RSS).
$(B)/tests/prog_static_%: $(B)/obj/tests/prog_static_%.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@ (static)")
	$(Q)$(CC) $(filter-out $(SAN_FLAGS),$(LDFLAGS)) -static $< -o $@ $(LDLIBS)
$(B)/obj/tests/prog_static_%.o: CFLAGS := $(filter-out $(SAN_FLAGS),$(CFLAGS))
$(B)/tests/prog_%: $(B)/obj/tests/prog_%.o $(LIBTRC_SO)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $< -L$(B)/lib -ltrc -Wl,-rpath,'$$ORIGIN/../lib' -o $@ $(LDLIBS)

$(B)/fuzz/fuzz_%: tests/fuzz_%.c $(call obj,$(CORE_SRCS)) $(call obj,$(RT_SRCS))
	@mkdir -p $(@D)
	@$(if $(Q),echo "  FUZZ    $@")
	$(Q)clang $(CPPFLAGS) -std=gnu17 -g -O1 -fsanitize=fuzzer,address,undefined $(DEP_CFLAGS) \
		$< $(filter %.c,$(CORE_SRCS) $(RT_SRCS)) -o $@ $(DEP_LIBS) $(LDLIBS)

# ---- benchmarks --------------------------------------------------------------------------------
$(B)/bench/bench_%: $(B)/obj/bench/bench_%.o $(INTERNAL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $< $(INTERNAL_LIBS) -o $@ $(DEP_LIBS) $(LDLIBS)

$(B)/bench/work_%_finst: bench/work_%.c $(LIBTRC_SO)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -std=gnu17 -O2 -g -finstrument-functions $< -L$(B)/lib -ltrc \
		-Wl,-rpath,'$$ORIGIN/../lib' -o $@ $(LDLIBS)

$(B)/bench/work_%_pg: bench/work_%.c $(LIBTRC_SO)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -std=gnu17 -O2 -g -pg $< -L$(B)/lib -ltrc \
		-Wl,-rpath,'$$ORIGIN/../lib' -o $@ $(LDLIBS)

$(B)/bench/work_%: $(B)/obj/bench/work_%.o $(LIBTRC_SO)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $< -L$(B)/lib -ltrc -Wl,-rpath,'$$ORIGIN/../lib' -o $@ $(LDLIBS)

# ---- dependencies from Debian ------------------------------------------------------------------
DEB_PKGS := liburcu-dev libzstd-dev libcriterion-dev pkg-config clang time python3
deps:
	@missing=""; \
	for p in liburcu libzstd criterion; do pkg-config --exists $$p 2>/dev/null || missing=1; done; \
	command -v pkg-config >/dev/null || missing=1; \
	command -v clang >/dev/null || missing=1; \
	test -x /usr/bin/time || missing=1; \
	command -v python3 >/dev/null || missing=1; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "  DEPS    installing $(DEB_PKGS)"; \
			(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				$(DEB_PKGS)) >$${TMPDIR:-/tmp}/trc-deps.log 2>&1 \
			|| { echo "make deps: apt-get failed, see $${TMPDIR:-/tmp}/trc-deps.log" >&2; exit 1; }; \
		else \
			echo "make deps: missing build dependencies; run as root:" >&2; \
			echo "  apt-get install -y $(DEB_PKGS)" >&2; exit 1; \
		fi; \
	fi

# ---- test tiers --------------------------------------------------------------------------------
# Each tier is a fresh make so pkg-config flags are read after `deps` installed them.
test: deps
	$(Q)$(MAKE) --no-print-directory test-plain
	$(Q)$(MAKE) --no-print-directory SAN=asan test-asan
	$(Q)$(MAKE) --no-print-directory SAN=tsan test-tsan
	@echo "make test: all tiers passed"

# Criterion runs each suite's tests in parallel worker processes; suites run one after another.
test-run-suites: tests
	@fail=0; for t in $(TESTS); do \
		echo "== $$t"; \
		TRC_BUILD=$(B) $(if $(SAN),TRC_SANITIZER_TIER=$(SAN)) ASAN_OPTIONS=detect_leaks=0 \
			$$t --jobs 2 || fail=1; \
	done; exit $$fail

test-run-stress: $(STRESS)
	@fail=0; for t in $(STRESS); do \
		echo "== $$t"; $$t || { echo "FAIL: $$t"; fail=1; }; \
	done; exit $$fail

test-plain: test-run-suites test-run-stress bench-smoke

test-asan: test-run-suites fuzz-brief

# The reader's fuzz target for a few seconds per test run, so it cannot rot (make fuzz runs it
# for longer).
fuzz-brief: $(FUZZERS)
	@for f in $(FUZZERS); do \
		n=$$(basename $$f); mkdir -p build/fuzz/corpus-$$n; \
		echo "== $$f (brief)"; \
		$$f -max_total_time=$${FUZZ_BRIEF_SECONDS:-15} -rss_limit_mb=2048 \
			build/fuzz/corpus-$$n tests/corpus/$${n#fuzz_} >build/fuzz/$$n.log 2>&1 \
			|| { cat build/fuzz/$$n.log; echo "FAIL: $$f"; exit 1; }; \
		tail -1 build/fuzz/$$n.log; \
	done

test-tsan: test-run-stress

asan: deps
	$(Q)$(MAKE) --no-print-directory SAN=asan tests
tsan: deps
	$(Q)$(MAKE) --no-print-directory SAN=tsan $(STRESS)

stress: deps
	$(Q)$(MAKE) --no-print-directory SAN=tsan test-run-stress STRESS_SCALE=10

fuzz: deps $(FUZZERS)
	@for f in $(FUZZERS); do \
		n=$$(basename $$f); mkdir -p build/fuzz/corpus-$$n; \
		echo "== $$f ($${FUZZ_SECONDS:-60}s)"; \
		$$f -max_total_time=$${FUZZ_SECONDS:-60} -rss_limit_mb=2048 \
			build/fuzz/corpus-$$n tests/corpus/$${n#fuzz_} || exit 1; \
	done

# ---- benchmarks --------------------------------------------------------------------------------
bench: deps
	$(Q)$(MAKE) --no-print-directory build-all
	$(Q)bench/run.sh full

bench-quick: deps
	$(Q)$(MAKE) --no-print-directory build-all
	$(Q)bench/run.sh quick

bench-smoke: build-all
	$(Q)if [ -x bench/run.sh ]; then bench/run.sh smoke; fi

bench-peers: deps
	$(Q)$(MAKE) --no-print-directory build-all
	$(Q)bench/peers.sh

# ---- demo --------------------------------------------------------------------------------------
demo: deps
	$(Q)$(MAKE) --no-print-directory build-all
	$(Q)if [ ! -x $(TRACE_RUN) ]; then \
		echo "make demo: trace-run is not built yet (issue: trace-run, the recorder)"; exit 1; fi
	$(Q)$(TRACE_RUN) -o build/demo.trc -- $(B)/tests/prog_demo
	$(Q)$(TRACE_DUMP) summary build/demo.trc

# ---- housekeeping ------------------------------------------------------------------------------
PREFIX ?= /usr/local
install: build-all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include
	install -m 755 $(TOOLS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(LIBTRC_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBTRC_SO) $(PRELOAD_SO) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 src/include/trc.h $(DESTDIR)$(PREFIX)/include/

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build

-include $(shell find $(B)/obj $(B)/obj-so -name '*.d' 2>/dev/null)
