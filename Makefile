# One non-recursive Makefile for the whole tree.
#
# Parts (folders) and what they build; adding a file to a folder needs no edit here:
#   ringbuf/, src/runtime/          -> build/lib/libtrc.so, libtrc.a   (runs inside traced programs)
#   src/preload/                    -> build/lib/libtrc-preload.so     (LD_PRELOAD hooks, uses libtrc.so)
#   sampler/, src/session/, src/recorder/, src/common/, src/trcfile/, src/analysis/, src/export/
#                                   -> build/lib/libtrc-core.a         (recorder, file format, analysis,
#                                                                        exporters)
#   tools/run/, tools/cli/          -> build/bin/trace-run
#   tools/dump/, tools/cli/         -> build/bin/trace-dump
#   tests/test_*.c               -> build/tests/test_*   Criterion suites (also under ASan+UBSan)
#                                   (each linked with tests/harness_*.c: timeouts, file-size limit)
#   tests/stress_*.c             -> build/tests/stress_* plain programs (also under TSan)
#   tests/prog_*.c               -> build/tests/prog_*   programs the end-to-end tests trace
#                                   (prog_finst_* are built with -finstrument-functions;
#                                   prog_alloc_* are linked with jemalloc, tcmalloc, mimalloc;
#                                   prog_libtrca_* with libtrc.a)
#   tests/fuzz_*.c               -> build/fuzz/fuzz_*    libFuzzer targets (clang)
#   bench/bench_*.c              -> build/bench/bench_*  benchmark programs
#   bench/work_*.c               -> build/bench/work_*   workloads (plain, and *_finst / *_pg builds)
#
# The dependency rule (README "Architecture") is enforced here: each part is compiled with the
# include paths of the parts it may use and no others, so a wrong #include does not compile.
#
# Variants: `make asan` / `make tsan` build the same tree under build/asan or build/tsan with
# clang; `make test` runs the plain suites, then the ASan+UBSan suites with the TSan stress
# programs and the outside readers' tiers beside them (test-late-tiers). V=1 prints full
# commands; CI=1 (set by CI) turns warnings into errors. CFLAGS, CPPFLAGS and LDFLAGS given on
# the command line are added to the build's own flags.

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

PKGS := liburcu liburcu-cds libzstd zlib
DEP_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
DEP_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
# elfutils (symbols for trace-dump, src/analysis/symbols.c) and libstdc++'s demangler: linked into
# what links the analysis code (trace-dump, tests, the fuzz target), not into trace-run.
ELF_CFLAGS := $(shell pkg-config --cflags libdw libelf 2>/dev/null)
ELF_LIBS := $(shell pkg-config --libs libdw libelf 2>/dev/null) -lstdc++
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

# The build's own flags; the user's CPPFLAGS/CFLAGS/LDFLAGS come after them.
BASE_CPPFLAGS := -D_GNU_SOURCE
BASE_CFLAGS := -std=gnu17 $(OPT) -g -fPIC $(WARN) $(DEP_CFLAGS) -MMD -MP
COMPILE_FLAGS = $(BASE_CPPFLAGS) $(PART_INC) $(CPPFLAGS) $(BASE_CFLAGS) $(PART_CFLAGS) $(CFLAGS)
LINK_FLAGS = $(SAN_FLAGS) $(LDFLAGS)
LDLIBS := -lpthread -lm

# ---- parts and the include paths each may use ---------------------------------------------------
# wire.h (src/include/trc/) is a leaf every part may include; trc.h is the public API. trc.h's
# inline fast path is ringbuf's producer: src/include/trc/ring_producer.h is a symlink to
# ringbuf/ring_producer.h (one file; `make install` copies it beside wire.h).
INC_public := -Isrc/include
# What every part may use (the hash map, positioned I/O): a leaf that includes nothing else.
INC_common := -Isrc/common
INC_ringbuf := -Iringbuf
INC_sampler := -Isampler $(INC_ringbuf) $(INC_public)
INC_runtime := -Isrc/runtime -Isrc/session $(INC_ringbuf) $(INC_public)
INC_preload := $(INC_public)
INC_trcfile := -Isrc/trcfile $(INC_common) $(INC_public)
INC_session := -Isrc/session $(INC_trcfile) $(INC_ringbuf)
INC_recorder := -Isrc/recorder $(INC_session) $(INC_sampler)
INC_analysis := -Isrc/analysis $(INC_trcfile)
# Exporters (a trace in, another format out) and their encoders (Parquet, protobuf wire format,
# gzip): the trace reader, the analysis (live allocations, the summary), the tree's hash map
# (src/common/u64map.h), zstd and zlib.
INC_export := -Isrc/export $(INC_analysis)
# The commands see the library's headers only (not ringbuf/ or sampler/).
# trace-run's last line gives the peak by the analysis's own rule (src/analysis/peak.h, a header).
INC_run := -Itools/run -Itools/cli -Isrc/recorder -Isrc/session -Isrc/analysis $(INC_trcfile)
INC_dump := -Itools/dump -Itools/cli $(INC_analysis) $(INC_export)
INC_cli := -Itools/cli $(INC_public)
# Tests and benchmarks look inside every part.
INC_all := -Itools/run -Itools/dump -Itools/cli -Isrc/analysis $(INC_export) -Isrc/recorder -Isrc/runtime -Isrc/session $(INC_trcfile) \
	$(INC_sampler)

RINGBUF_SRCS := $(wildcard ringbuf/*.c)
RUNTIME_SRCS := $(wildcard src/runtime/*.c)
RT_SRCS := $(RINGBUF_SRCS) $(RUNTIME_SRCS)
PRELOAD_SRCS := $(wildcard src/preload/*.c)
SAMPLER_SRCS := $(wildcard sampler/*.c)
SESSION_SRCS := $(wildcard src/session/*.c)
RECORDER_SRCS := $(wildcard src/recorder/*.c)
COMMON_SRCS := $(wildcard src/common/*.c)
TRCFILE_SRCS := $(wildcard src/trcfile/*.c)
ANALYSIS_SRCS := $(wildcard src/analysis/*.c)
EXPORT_SRCS := $(wildcard src/export/*.c)
CORE_SRCS := $(SAMPLER_SRCS) $(SESSION_SRCS) $(RECORDER_SRCS) $(COMMON_SRCS) $(TRCFILE_SRCS) \
	$(ANALYSIS_SRCS) $(EXPORT_SRCS)
CLI_SRCS := $(wildcard tools/cli/*.c)
RUN_SRCS := $(wildcard tools/run/*.c) $(CLI_SRCS)
DUMP_SRCS := $(wildcard tools/dump/*.c) $(CLI_SRCS)
TEST_SRCS := $(wildcard tests/test_*.c)
STRESS_SRCS := $(wildcard tests/stress_*.c)
PROG_SRCS := $(wildcard tests/prog_*.c)
FUZZ_SRCS := $(wildcard tests/fuzz_*.c)
BENCH_SRCS := $(wildcard bench/bench_*.c)
WORK_SRCS := $(wildcard bench/work_*.c)

# Pattern-specific include paths, for the sanitizer-free .so objects too.
define part_inc
$(B)/obj/$(1)%.o $(B)/obj-so/$(1)%.o: PART_INC = $(2)
endef
$(eval $(call part_inc,ringbuf/,$(INC_ringbuf)))
$(eval $(call part_inc,sampler/,$(INC_sampler)))
$(eval $(call part_inc,src/runtime/,$(INC_runtime)))
$(eval $(call part_inc,src/preload/,$(INC_preload)))
$(eval $(call part_inc,src/session/,$(INC_session)))
$(eval $(call part_inc,src/recorder/,$(INC_recorder)))
$(eval $(call part_inc,src/common/,$(INC_common)))
$(eval $(call part_inc,src/trcfile/,$(INC_trcfile)))
$(eval $(call part_inc,src/analysis/,$(INC_analysis)))
$(eval $(call part_inc,src/export/,$(INC_export)))
$(eval $(call part_inc,tools/run/,$(INC_run)))
$(eval $(call part_inc,tools/dump/,$(INC_dump)))
$(eval $(call part_inc,tools/cli/,$(INC_cli)))
$(eval $(call part_inc,tests/,$(INC_all)))
$(eval $(call part_inc,bench/,$(INC_all)))

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
# For function names (tests/test_symbols.c): shared libraries tests/lib_*.c (-> lib_*.so), C++
# programs tests/prog_*.cc, and a stripped copy of prog_finst_calls.
TESTLIBS := $(patsubst tests/%.c,$(B)/tests/%.so,$(wildcard tests/lib_*.c))
# For call stacks (tests/test_alloc_stacks.c): libraries tests/lib_stack_*.c and .cc, built
# without frame pointers and without instrumentation.
STACKLIBS := $(patsubst tests/%.c,$(B)/tests/%.so,$(wildcard tests/lib_stack_*.c)) \
	$(patsubst tests/%.cc,$(B)/tests/%.so,$(wildcard tests/lib_stack_*.cc))
TESTLIBS := $(filter-out $(STACKLIBS),$(TESTLIBS))
CXX_PROGS := $(patsubst tests/%.cc,$(B)/tests/%,$(wildcard tests/prog_*.cc))
# LD_PRELOAD shims the tests put under the commands (tests/shim_*.c -> shim_*.so): fault injection.
SHIMS := $(patsubst tests/%.c,$(B)/tests/%.so,$(wildcard tests/shim_*.c))
PROGS += $(TESTLIBS) $(STACKLIBS) $(CXX_PROGS) $(B)/tests/prog_finst_calls_stripped $(SHIMS)
FUZZERS := $(patsubst tests/%.c,$(B)/fuzz/%,$(FUZZ_SRCS))
BENCHES := $(patsubst bench/%.c,$(B)/bench/%,$(BENCH_SRCS))
WORKS := $(patsubst bench/%.c,$(B)/bench/%,$(WORK_SRCS)) \
	$(patsubst bench/%.c,$(B)/bench/%_finst,$(WORK_SRCS)) \
	$(patsubst bench/%.c,$(B)/bench/%_pg,$(WORK_SRCS)) $(B)/bench/lib_deep.so

TOOLS := $(TRACE_RUN) $(TRACE_DUMP)
LIBS := $(LIBTRC_SO) $(LIBTRC_A) $(CORE_A) $(PRELOAD_SO)

# Static link of the internal libraries into tools, tests and benches: no rpath games, and the
# sanitizer variants get instrumented copies. Traced programs (prog_*, work_*) link libtrc.so.
INTERNAL_LIBS := $(CORE_A) $(LIBTRC_A)
RPATH = -Wl,-rpath,'$$ORIGIN/../lib'

.PHONY: all deps libs tools tests progs test test-plain test-asan test-tsan test-duckdb test-run-suites fuzz-brief test-install \
	test-run-stress asan tsan fuzz stress bench bench-quick bench-peers demo format clean install help

all: deps hooks
	$(Q)$(MAKE) --no-print-directory build-all

# The commit-msg hook (.ci/commit-msg: the subject's form and length) into this repository's
# hooks, unless a hook of someone else's is there already. Outside a git checkout: nothing.
.PHONY: hooks test-commit-msg
hooks:
	@d=$$(git rev-parse --git-path hooks 2>/dev/null) || exit 0; \
	if cmp -s .ci/commit-msg "$$d/commit-msg"; then exit 0; fi; \
	if [ -e "$$d/commit-msg" ] && ! grep -q 'installed by `make`' "$$d/commit-msg"; then \
		echo "  HOOK    $$d/commit-msg is not the project's: left as it is"; exit 0; fi; \
	mkdir -p "$$d" && cp .ci/commit-msg "$$d/commit-msg" && chmod +x "$$d/commit-msg" && \
		echo "  HOOK    $$d/commit-msg"

# The hook itself: messages it must take and messages it must refuse.
test-commit-msg:
	@echo "== test-commit-msg: .ci/commit-msg on good and bad messages"
	$(Q)t=$$(mktemp -d "$${TMPDIR:-/tmp}/trc-msg-XXXXXX") && trap 'rm -rf "$$t"' EXIT && \
	ok() { printf "$$1" >"$$t/m" && sh .ci/commit-msg "$$t/m" 2>/dev/null || \
		{ echo "FAIL: refused: $$1" >&2; exit 1; }; } && \
	no() { printf "$$1" >"$$t/m" && ! sh .ci/commit-msg "$$t/m" 2>/dev/null || \
		{ echo "FAIL: taken: $$1" >&2; exit 1; }; } && \
	ok 'dump: a subject\n\nwhy\n' && ok 'trc.h: a subject\n' && \
	ok "Merge branch 'x'\n" && no 'no area here\n\nwhy\n' && \
	no 'dump: a subject\nwithout a blank line\n' && \
	no 'dump: one change; another\n\nwhy\n' && \
	no "dump: $$(printf '%067d' 0)\n\nwhy\n" && \
	ok "dump: $$(printf '%066d' 0)\n\nwhy\n" && echo "test-commit-msg: ok"

.PHONY: build-all
build-all: $(LIBS) $(TOOLS) $(TESTS) $(STRESS) $(PROGS) $(BENCHES) $(WORKS)

libs: $(LIBS)
tools: $(TOOLS)
tests: $(TESTS) $(STRESS) $(PROGS) $(TOOLS) $(LIBS)

# ---- compile -----------------------------------------------------------------------------------
# Objects stay after the link (no target is deleted as intermediate): a later make, such as
# `make test`'s next tier, would otherwise compile them all again to relink what uses them.
.SECONDARY:
$(B)/obj/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(COMPILE_FLAGS) $(SAN_FLAGS) -c $< -o $@

# trace-dump report's page script and style sheet are assembled into this object (.incbin).
$(call obj,tools/dump/dump_report_assets.c): tools/dump/dump_report.js tools/dump/dump_report.css

# tests use Criterion's macros, which trip -Wmissing-prototypes
$(B)/obj/tests/%.o: PART_CFLAGS = $(CRIT_CFLAGS) -Wno-missing-prototypes
# A suite's own code is built -O0: Criterion's test bodies compile four to five times faster
# than at -O2 (gcc, and clang with ASan and UBSan), and a suite spends its time in the code it
# tests, built as the rest of the tier. Suites that write events through trc.h's inline
# producer in their own process keep the tier's flags: that code is tested as programs build
# it (at -O0 under clang, test_session_budget sees the rings' pages resident differently).
PRODUCER_RE := \bTRC_[A-Z_]+[(]|trc__emit|ring_producer|trc_ring_
PRODUCER_SUITES := $(shell grep -lE '$(PRODUCER_RE)' tests/test_*.c 2>/dev/null)
$(B)/obj/tests/test_%.o: PART_CFLAGS = $(CRIT_CFLAGS) -Wno-missing-prototypes -O0
$(patsubst tests/%.c,$(B)/obj/tests/%.o,$(PRODUCER_SUITES)): \
	PART_CFLAGS = $(CRIT_CFLAGS) -Wno-missing-prototypes
$(B)/obj/bench/%.o: PART_CFLAGS = -Wno-missing-prototypes

# ---- libraries ---------------------------------------------------------------------------------
$(LIBTRC_A): $(call obj,$(RT_SRCS))
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/obj-so/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $< (no sanitizer)")
	$(Q)$(CC) $(COMPILE_FLAGS) -c $< -o $@

# Each shared library exports exactly the symbols its version script lists (the public API and
# what trc.h's inline fast path calls; the hooks for the preload library); the rest of the
# runtime, ringbuf included, stays inside. tests/test_exports.c checks the lists.
$(LIBTRC_SO): $(call soobj,$(RT_SRCS)) src/runtime/libtrc.map
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,libtrc.so -Wl,-z,nodelete \
		-Wl,--version-script=src/runtime/libtrc.map $(filter %.o,$^) -o $@ $(LDFLAGS) $(LDLIBS)

$(PRELOAD_SO): $(call soobj,$(PRELOAD_SRCS)) $(LIBTRC_SO) src/preload/preload.map
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared -Wl,-soname,libtrc-preload.so -Wl,--version-script=src/preload/preload.map \
		$(call soobj,$(PRELOAD_SRCS)) -L$(B)/lib -ltrc -Wl,-rpath,'$$ORIGIN' -o $@ \
		$(LDFLAGS) $(LDLIBS) -ldl

$(CORE_A): $(call obj,$(CORE_SRCS))
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

# ---- commands ----------------------------------------------------------------------------------
$(TRACE_RUN): $(call obj,$(RUN_SRCS)) $(INTERNAL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LINK_FLAGS) $(call obj,$(RUN_SRCS)) $(INTERNAL_LIBS) -o $@ $(DEP_LIBS) $(LDLIBS)

$(TRACE_DUMP): $(call obj,$(DUMP_SRCS)) $(INTERNAL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LINK_FLAGS) $(call obj,$(DUMP_SRCS)) $(INTERNAL_LIBS) -o $@ $(DEP_LIBS) $(ELF_LIBS) \
		$(LDLIBS)

# ---- tests -------------------------------------------------------------------------------------
# Suites may link the commands' shared CLI code (tools/cli/*.c) to test it directly. Every suite
# links the harness (tests/harness_*.c: the limits it and what it spawns run under).
CLI_OBJS = $(call obj,$(CLI_SRCS))
HARNESS_OBJS = $(call obj,$(wildcard tests/harness_*.c))

$(B)/tests/test_%: $(B)/obj/tests/test_%.o $(INTERNAL_LIBS) $(CLI_OBJS) $(HARNESS_OBJS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LINK_FLAGS) $< $(HARNESS_OBJS) $(CLI_OBJS) $(INTERNAL_LIBS) -o $@ $(CRIT_LIBS) $(DEP_LIBS) \
		$(ELF_LIBS) $(LDLIBS)

$(B)/tests/stress_%: $(B)/obj/tests/stress_%.o $(INTERNAL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LINK_FLAGS) $< $(INTERNAL_LIBS) -o $@ $(DEP_LIBS) $(LDLIBS)

$(B)/obj/tests/prog_finst_%.o: PART_CFLAGS = -finstrument-functions
# ... and without sanitizers: their instrumentation adds instrumented functions of its own
# (asan.module_ctor), which would change the functions these programs are known to call.
$(B)/obj/tests/prog_finst_%.o: SAN_FLAGS :=
$(B)/obj/src/analysis/%.o: PART_CFLAGS = $(ELF_CFLAGS)
# A statically linked program: the preload library cannot enter it (trace-run still records
# its lifetime and RSS).
$(B)/tests/prog_static_%: $(B)/obj/tests/prog_static_%.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@ (static)")
	$(Q)$(CC) $(LDFLAGS) -static $< -o $@ $(LDLIBS)
$(B)/obj/tests/prog_static_%.o: SAN_FLAGS :=
# Programs linked with libtrc.a instead of libtrc.so (no rpath: they run from anywhere, setuid too).
$(B)/tests/prog_libtrca_%: $(B)/obj/tests/prog_libtrca_%.o $(LIBTRC_A)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LINK_FLAGS) $< $(LIBTRC_A) -o $@ $(LDLIBS)
# Programs linked with an allocator of their own (tests/prog_alloc_*.c): per-program link flags.
# They run uninstrumented in every tier (a sanitizer's allocator would replace theirs).
PROG_ALLOC_LIBS_jemalloc := -Wl,--no-as-needed -ljemalloc
PROG_ALLOC_LIBS_tcmalloc := -Wl,--no-as-needed -ltcmalloc
PROG_ALLOC_LIBS_mimalloc := -Wl,--no-as-needed -lmimalloc
PROG_ALLOC_LIBS_any :=
$(B)/obj/tests/prog_alloc_%.o: SAN_FLAGS :=
$(B)/tests/prog_alloc_%: $(B)/obj/tests/prog_alloc_%.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $< -o $@ $(PROG_ALLOC_LIBS_$*) -ldl $(LDLIBS)
$(B)/tests/prog_%: $(B)/obj/tests/prog_%.o $(LIBTRC_SO)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LINK_FLAGS) $< -L$(B)/lib -ltrc $(RPATH) -o $@ $(LDLIBS)

# Shared libraries the programs load (no sanitizer: they are loaded into traced programs as a
# user's libraries would be), built with -finstrument-functions.
$(TESTLIBS): $(B)/tests/%.so: tests/%.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(BASE_CPPFLAGS) $(CPPFLAGS) -std=gnu17 -O2 -g -fPIC $(WARN) -finstrument-functions \
		$(CFLAGS) -shared -Wl,-soname,$(@F) $< -o $@ $(LDFLAGS)
# The call-stack tests' libraries and programs (tests/lib_stack_*, tests/prog_stack_*.c) are
# built as distributions build theirs, alike in every tier: gcc -O2 -g, no frame pointers, no
# instrumentation, no sanitizer, linked with nothing of ours; the programs with lib_stack_a.so
# and lib_stack_b.so, found beside them.
STACK_CFLAGS := -O2 -g -fomit-frame-pointer -fasynchronous-unwind-tables
$(B)/tests/lib_stack_%.so: tests/lib_stack_%.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)gcc $(BASE_CPPFLAGS) $(CPPFLAGS) -std=gnu17 $(STACK_CFLAGS) -fPIC $(WARN) $(CFLAGS) \
		-shared -Wl,-soname,$(@F) $< -o $@ $(LDFLAGS)
$(B)/tests/lib_stack_%.so: tests/lib_stack_%.cc
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CXX     $@")
	$(Q)g++ $(BASE_CPPFLAGS) $(CPPFLAGS) $(STACK_CFLAGS) -fPIC -Wall -Wextra $(CXXFLAGS) \
		-shared -Wl,-soname,$(@F) $< -o $@ $(LDFLAGS)
$(B)/tests/prog_stack_%: tests/prog_stack_%.c $(B)/tests/lib_stack_a.so $(B)/tests/lib_stack_b.so \
		| $(STACKLIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)gcc $(BASE_CPPFLAGS) $(CPPFLAGS) -std=gnu17 $(STACK_CFLAGS) $(WARN) $(CFLAGS) $< \
		$(B)/tests/lib_stack_a.so $(B)/tests/lib_stack_b.so -Wl,-rpath,'$$ORIGIN' -o $@ \
		$(LDFLAGS) $(LDLIBS) -ldl
# Programs built without sanitizers in every tier and linked with nothing of ours
# (tests/prog_plain_*.c): the first malloc they find is the one in LD_PRELOAD.
$(B)/obj/tests/prog_plain_%.o: SAN_FLAGS :=
$(B)/tests/prog_plain_%: $(B)/obj/tests/prog_plain_%.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $< -o $@ $(LDLIBS)

# The ASan tier also builds the preload library instrumented (libtrc-preload-asan.so, linked
# with clang's shared ASan runtime), for tests/test_preload_asan.c, which puts it in the
# program's LD_PRELOAD before that runtime. What runs while the runtime initializes stays
# uninstrumented (tests/preload_asan.ignore says which and why).
ifeq ($(SAN),asan)
PRELOAD_ASAN_SO := $(B)/lib/libtrc-preload-asan.so
ASAN_RT_DIR := $(patsubst %/,%,$(dir $(shell clang -print-file-name=libclang_rt.asan-x86_64.so)))
PRELOAD_ASAN_OBJS := $(patsubst %.c,$(B)/obj-preload-asan/%.o,$(PRELOAD_SRCS))
$(B)/obj-preload-asan/%.o: %.c tests/preload_asan.ignore
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $< (ASan, shared runtime)")
	$(Q)$(CC) $(BASE_CPPFLAGS) $(INC_preload) $(CPPFLAGS) $(BASE_CFLAGS) $(SAN_FLAGS) \
		-fsanitize-ignorelist=tests/preload_asan.ignore $(CFLAGS) -c $< -o $@
$(PRELOAD_ASAN_SO): $(PRELOAD_ASAN_OBJS) $(LIBTRC_SO) src/preload/preload.map
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -shared $(SAN_FLAGS) -shared-libasan -Wl,-soname,libtrc-preload-asan.so \
		-Wl,--version-script=src/preload/preload.map $(PRELOAD_ASAN_OBJS) -L$(B)/lib -ltrc \
		-Wl,-rpath,'$$ORIGIN' -Wl,-rpath,$(ASAN_RT_DIR) -o $@ $(LDFLAGS) $(LDLIBS) -ldl
tests build-all: $(PRELOAD_ASAN_SO)
endif

# Shims are built without sanitizers: they are preloaded into sanitized and plain programs alike
# (a static sanitizer runtime in the program does not mind a plain library before it).
$(SHIMS): $(B)/tests/%.so: tests/%.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(BASE_CPPFLAGS) $(CPPFLAGS) -std=gnu17 -O2 -g -fPIC $(WARN) $(CFLAGS) -shared $< \
		-o $@ $(LDFLAGS) -ldl
# prog_finst_names links lib_names_linked.so (found beside it) and dlopens lib_names_dl.so.
$(B)/tests/prog_finst_names: $(B)/obj/tests/prog_finst_names.o $(LIBTRC_SO) \
		$(B)/tests/lib_names_linked.so $(B)/tests/lib_names_dl.so
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LINK_FLAGS) $< $(B)/tests/lib_names_linked.so -L$(B)/lib -ltrc $(RPATH) \
		-Wl,-rpath,'$$ORIGIN' -o $@ $(LDLIBS) -ldl
$(CXX_PROGS): $(B)/tests/%: tests/%.cc $(LIBTRC_SO)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CXX     $@")
	$(Q)$(CXX) $(BASE_CPPFLAGS) $(CPPFLAGS) -O2 -g -finstrument-functions -Wall -Wextra $(CXXFLAGS) \
		$< -L$(B)/lib -ltrc $(RPATH) -o $@ $(LDFLAGS) $(LDLIBS)
$(B)/tests/prog_stack_cxx: | $(B)/tests/lib_stack_throw.so
# The stripped program is built as a user's would be (gcc, no sanitizer), then stripped.
$(B)/tests/prog_finst_calls_stripped: tests/prog_finst_calls.c $(LIBTRC_SO)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  STRIP   $@")
	$(Q)gcc $(BASE_CPPFLAGS) $(CPPFLAGS) -std=gnu17 -O2 -g -finstrument-functions $(CFLAGS) $< \
		-L$(B)/lib -ltrc $(RPATH) -o $@.full $(LDFLAGS) $(LDLIBS) && strip -o $@ $@.full && \
		rm -f $@.full

$(B)/fuzz/fuzz_%: tests/fuzz_%.c $(call obj,$(CORE_SRCS)) $(call obj,$(RT_SRCS))
	@mkdir -p $(@D)
	@$(if $(Q),echo "  FUZZ    $@")
	$(Q)clang $(BASE_CPPFLAGS) $(INC_all) $(CPPFLAGS) -std=gnu17 -g -O1 \
		-fsanitize=fuzzer,address,undefined $(DEP_CFLAGS) $(CFLAGS) \
		$< $(filter %.c,$(CORE_SRCS) $(RT_SRCS)) -o $@ $(DEP_LIBS) $(ELF_LIBS) $(LDLIBS)

# ---- benchmarks --------------------------------------------------------------------------------
$(B)/bench/bench_%: $(B)/obj/bench/bench_%.o $(INTERNAL_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LINK_FLAGS) $< $(INTERNAL_LIBS) -o $@ $(DEP_LIBS) $(LDLIBS)

# Workloads are built as a user builds a program against the public header and libtrc.so.
$(B)/bench/work_%_finst: bench/work_%.c $(LIBTRC_SO)
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CPPFLAGS) $(INC_public) $(CPPFLAGS) -std=gnu17 -O2 -g -finstrument-functions \
		$(CFLAGS) $< -L$(B)/lib -ltrc $(RPATH) -o $@ $(LDFLAGS) $(LDLIBS)

$(B)/bench/work_%_pg: bench/work_%.c $(LIBTRC_SO)
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CPPFLAGS) $(INC_public) $(CPPFLAGS) -std=gnu17 -O2 -g -pg \
		$(CFLAGS) $< -L$(B)/lib -ltrc $(RPATH) -o $@ $(LDFLAGS) $(LDLIBS)

# work_deep's library (dlopen()ed from beside it), built as a distribution's: no frame pointers.
$(B)/bench/lib_deep.so: bench/lib_deep.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(BASE_CPPFLAGS) $(CPPFLAGS) -std=gnu17 $(STACK_CFLAGS) -fPIC $(WARN) $(CFLAGS) \
		-shared -Wl,-soname,$(@F) $< -o $@ $(LDFLAGS)

$(B)/bench/work_%: $(B)/obj/bench/work_%.o $(LIBTRC_SO)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LINK_FLAGS) $< -L$(B)/lib -ltrc $(RPATH) -o $@ $(LDLIBS)

# ---- dependencies from Debian ------------------------------------------------------------------
# protobuf-compiler: the tests decode trace-dump perfetto's and pprof's output with protoc (an
# outside reader). zlib1g-dev: pprof's profile.proto must be gzip (zstd does not write gzip).
# jemalloc, tcmalloc, mimalloc: programs linked with them must keep them under trace-run.
# libdw, libelf (elfutils): trace-dump names functions from the modules' symbol tables.
DEB_PKGS := liburcu-dev libzstd-dev libcriterion-dev libdw-dev libelf-dev pkg-config clang time \
	python3 protobuf-compiler zlib1g-dev libjemalloc-dev libgoogle-perftools-dev libmimalloc-dev
# Node.js and npm for the DuckDB tier, only when npm is missing (a Node.js installed from
# elsewhere, e.g. NodeSource's nodejs, brings its own npm and conflicts with Debian's).
DEB_PKGS_NODE := nodejs npm
deps:
	@missing=""; node_pkgs=""; \
	command -v npm >/dev/null || { node_pkgs="$(DEB_PKGS_NODE)"; missing=1; }; \
	for p in liburcu libzstd criterion zlib libdw libelf jemalloc libtcmalloc; do \
		pkg-config --exists $$p 2>/dev/null || missing=1; done; \
	test -e /usr/include/mimalloc.h || missing=1; \
	command -v pkg-config >/dev/null || missing=1; \
	command -v clang >/dev/null || missing=1; \
	test -x /usr/bin/time || missing=1; \
	command -v python3 >/dev/null || missing=1; \
	command -v protoc >/dev/null || missing=1; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "  DEPS    installing $(DEB_PKGS) $$node_pkgs"; \
			(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				$(DEB_PKGS) $$node_pkgs) >$${TMPDIR:-/tmp}/trc-deps.log 2>&1 \
			|| { echo "make deps: apt-get failed, see $${TMPDIR:-/tmp}/trc-deps.log" >&2; exit 1; }; \
		else \
			echo "make deps: missing build dependencies; run as root:" >&2; \
			echo "  apt-get install -y $(DEB_PKGS) $$node_pkgs" >&2; exit 1; \
		fi; \
	fi

# ---- test tiers --------------------------------------------------------------------------------
# Each tier is a fresh make so pkg-config flags are read after `deps` installed them. A tier's
# binaries are built first on every core (test-TIER-build); its suites then run one at a time,
# since several of them measure time or load the machine themselves.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# Each step says how long it took (where the time goes: README, "Tests"); a failing step stops.
TIMED = t0=$$(date +%s); $(1) || exit $$?; echo "make test: $(2) took $$(( $$(date +%s) - t0 )) s"
# A tier's suites leave a core idle much of the time (they wait on the programs they trace), so
# the next step runs beside them at low priority (nice 10: the suites' timing comes first), its
# output in build/NAME-beside.log, shown when it fails (always when $(6) is set). $(1) the
# tier, $(2) the make arguments of the step beside it, $(3) NAME, $(4) and $(5) their names.
TIER_AND_BESIDE = t0=$$(date +%s); mkdir -p build; \
	(nice -n 10 $(MAKE) --no-print-directory $(2) >build/$(3)-beside.log 2>&1; \
	 echo $$? >build/$(3)-beside.rc) & \
	$(1); rc=$$?; wait; \
	$(if $(6),cat build/$(3)-beside.log;) \
	echo "make test: $(4) and $(5) beside it took $$(( $$(date +%s) - t0 )) s"; \
	[ $$rc = 0 ] || exit $$rc; \
	[ "$$(cat build/$(3)-beside.rc)" = 0 ] || { $(if $(6),,cat build/$(3)-beside.log;) exit 1; }
test: deps
	$(Q)$(call TIMED,$(MAKE) --no-print-directory -j$(JOBS) test-plain-build,the plain build)
	$(Q)$(call TIER_AND_BESIDE,$(MAKE) --no-print-directory test-plain,-j$(JOBS) SAN=asan test-asan-build,asan-build,the plain tier,the ASan build)
	$(Q)$(call TIER_AND_BESIDE,$(MAKE) --no-print-directory SAN=asan test-asan,test-late-tiers,late-tiers,the ASan tier,the later tiers,shown)
	@echo "make test: all tiers passed"

# The tiers that need nothing of ASan's, one after another: in `make test` they run beside the
# ASan tier.
.PHONY: test-late-tiers
test-late-tiers:
	$(Q)$(call TIMED,$(MAKE) --no-print-directory -j$(JOBS) SAN=tsan test-tsan-build,the TSan build)
	$(Q)$(call TIMED,$(MAKE) --no-print-directory SAN=tsan test-tsan,the TSan tier)
	$(Q)$(call TIMED,$(MAKE) --no-print-directory test-duckdb,the DuckDB tier)
	$(Q)$(call TIMED,$(MAKE) --no-print-directory test-go-pprof,the Go pprof tier)
	$(Q)$(call TIMED,$(MAKE) --no-print-directory test-viewers,the viewers tier)
	$(Q)$(call TIMED,$(MAKE) --no-print-directory test-report,the report tier)

# Criterion runs each suite's tests in parallel worker processes; suites run one after another.
# Every suite declares a per-test timeout (tests/check_timeouts.sh keeps it so); SUITE_TIMEOUT is
# the backstop for a whole suite (Criterion's runner itself stuck), killing its process group.
SUITE_TIMEOUT ?= 600
# LeakSanitizer is on in the ASan tier, for the suites and everything they spawn (the variables
# are inherited: trace-run, trace-dump, the programs traced). tests/lsan.supp holds what leaks
# outside our code, each with its reason. exitcode: a leak fails the process that leaked.
SAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0
test-run-suites: tests
	$(Q)tests/check_timeouts.sh $(TEST_SRCS) || { echo "FAIL: a suite has no timeout" >&2; exit 1; }
	@fail=0; for t in $(TESTS); do \
		echo "== $$t"; t0=$$(date +%s%N); \
		TRC_BUILD=$(B) $(if $(SAN),TRC_SANITIZER_TIER=$(SAN)) $(SAN_ENV) \
			timeout -k 10 $(SUITE_TIMEOUT) $$t --jobs 2; rc=$$?; \
		ms=$$(( ($$(date +%s%N) - t0) / 1000000 )); \
		echo "   $${t##*/}: $$((ms / 1000)).$$((ms % 1000 / 100)) s"; \
		if [ $$rc = 124 ] || [ $$rc = 137 ]; then \
			echo "FAIL: $$t did not finish in $(SUITE_TIMEOUT) s (killed by make's backstop)" >&2; \
		elif [ $$rc != 0 ]; then echo "FAIL: $$t (exit $$rc)" >&2; fi; \
		[ $$rc = 0 ] || fail=1; \
	done; exit $$fail

test-run-stress: $(STRESS)
	@fail=0; for t in $(STRESS); do \
		echo "== $$t"; $$t || { echo "FAIL: $$t"; fail=1; }; \
	done; exit $$fail

test-plain: test-includes test-run-suites test-run-stress bench-smoke test-install test-commit-msg

# No folder includes another folder's private headers (tests/check_includes.sh).
.PHONY: test-includes
test-includes:
	@echo "== test-includes: no private header included across folders"
	$(Q)sh tests/check_includes.sh
.PHONY: test-plain-build test-asan-build test-tsan-build
test-plain-build: build-all
# The ASan tier runs the suites and the fuzz targets, not the stress programs (TSan's).
test-asan-build: $(TESTS) $(PROGS) $(TOOLS) $(LIBS) $(FUZZERS)
test-tsan-build: $(STRESS)

# `make install` into a scratch prefix, then what a user does with it: pkg-config's flags for
# trc build a program that runs (no LD_LIBRARY_PATH), and the installed trace-run records it,
# with the installed preload library. Exits non-zero on the first step that fails.
test-install: build-all
	@echo "== test-install: make install PREFIX=<tmp>; pkg-config trc; build, run, trace"
	$(Q)tmp=$$(mktemp -d "$${TMPDIR:-/tmp}/trc-install-XXXXXX") && trap 'rm -rf "$$tmp"' EXIT && \
	p="$$tmp/prefix" && fail() { echo "FAIL: test-install: $$*" >&2; exit 1; } && \
	{ $(MAKE) --no-print-directory install PREFIX="$$p" >"$$tmp/install.log" 2>&1 || \
		{ cat "$$tmp/install.log"; fail "make install PREFIX=$$p"; }; } && \
	{ flags=$$(PKG_CONFIG_PATH="$$p/lib/pkgconfig" pkg-config --cflags --libs trc) || \
		fail "pkg-config --cflags --libs trc"; } && \
	printf '%s\n' '#include <stdio.h>' '#include "trc.h"' 'int main(void)' '{' \
		'	TRC_BEGIN("installed");' '	TRC_END("installed");' \
		'	puts("installed ok");' '	return 0;' '}' >"$$tmp/prog.c" && \
	{ $(CC) "$$tmp/prog.c" -o "$$tmp/prog" $$flags || fail "cc prog.c $$flags"; } && \
	{ out=$$(env -u LD_LIBRARY_PATH "$$tmp/prog") && [ "$$out" = "installed ok" ] || \
		fail "the program built with $$flags does not run: $$out"; } && \
	{ env -u LD_LIBRARY_PATH "$$p/bin/trace-run" -q --no-preload -o "$$tmp/a.trc" -- \
		"$$tmp/prog" >/dev/null || fail "installed trace-run --no-preload"; } && \
	{ "$$p/bin/trace-dump" summary --json "$$tmp/a.trc" | grep -q '"events_recorded":2,' || \
		fail "the trace of the installed program does not hold its 2 events"; } && \
	{ env -u LD_LIBRARY_PATH "$$p/bin/trace-run" -q -o "$$tmp/b.trc" -- "$$tmp/prog" \
		>/dev/null || fail "installed trace-run"; } && \
	{ "$$p/bin/trace-dump" summary --json "$$tmp/b.trc" | grep -q '"allocs":[1-9]' || \
		fail "no allocation recorded: the installed preload library was not used"; } && \
	echo "test-install: ok ($$flags)"

test-asan: test-run-suites fuzz-brief

# Each fuzz target (the reader's; the drain's, comparing its fused and old paths) for a few
# seconds per test run, so none can rot (make fuzz runs them for longer).
fuzz-brief: $(FUZZERS)
	@for f in $(FUZZERS); do \
		n=$$(basename $$f); mkdir -p build/fuzz/corpus-$$n; \
		echo "== $$f (brief)"; \
		$$f -max_total_time=$${FUZZ_BRIEF_SECONDS:-5} -rss_limit_mb=2048 \
			build/fuzz/corpus-$$n tests/corpus/$${n#fuzz_} >build/fuzz/$$n.log 2>&1 \
			|| { cat build/fuzz/$$n.log; echo "FAIL: $$f"; exit 1; }; \
		tail -1 build/fuzz/$$n.log; \
	done

test-tsan: test-run-stress

# A real query engine reads `trace-dump parquet` output: DuckDB's Node client, installed from the
# npm registry into build/duckdb (not committed; the version pinned), checks the tables against
# `trace-dump summary --json` for three traces of different programs (tests/duckdb_check.mjs).
DUCKDB_NPM := @duckdb/node-api@1.5.0-r.1
DUCKDB_DIR := build/duckdb
$(DUCKDB_DIR)/.installed-$(DUCKDB_NPM:@duckdb/node-api@%=%):
	@mkdir -p $(DUCKDB_DIR)
	@echo "  NPM     $(DUCKDB_NPM) -> $(DUCKDB_DIR)"
	$(Q)npm install --prefix $(DUCKDB_DIR) --no-audit --no-fund --loglevel=error $(DUCKDB_NPM) \
		>$(DUCKDB_DIR)/npm.log 2>&1 || { cat $(DUCKDB_DIR)/npm.log; exit 1; }
	@touch $@

test-duckdb: build-all $(DUCKDB_DIR)/.installed-$(DUCKDB_NPM:@duckdb/node-api@%=%)
	@echo "== test-duckdb: tests/duckdb_check.mjs (DuckDB reads trace-dump parquet)"
	$(Q)node tests/duckdb_check.mjs $(B) $(DUCKDB_DIR)

# Go's own pprof reads `trace-dump pprof` output: `go tool pprof -top` totals against
# `trace-dump summary --json` (tests/go_pprof_check.sh). Go is Debian's golang-go, installed here
# when missing (as root; otherwise the apt-get line to run is printed).
.PHONY: test-go-pprof
test-go-pprof: build-all
	@command -v go >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then \
			echo "  DEPS    installing golang-go"; \
			(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				golang-go) >$${TMPDIR:-/tmp}/trc-deps-go.log 2>&1 \
			|| { echo "apt-get failed, see $${TMPDIR:-/tmp}/trc-deps-go.log" >&2; exit 1; }; \
		else \
			echo "test-go-pprof: go missing; run as root: apt-get install -y golang-go" >&2; \
			exit 1; \
		fi; }
	@echo "== test-go-pprof: tests/go_pprof_check.sh (go tool pprof reads trace-dump pprof)"
	$(Q)bash tests/go_pprof_check.sh $(B)

# The exports open in the viewer the README names: speedscope's built web app (npm) in Debian's
# chromium (installed here when missing, as root), driven by puppeteer-core (which downloads no
# browser); both pinned, installed into build/viewers. tests/speedscope_check.mjs checks the
# threads, frames and totals shown against `trace-dump summary --json`.
VIEWERS_NPM := speedscope@1.25.0 puppeteer-core@24.43.1
VIEWERS_DIR := build/viewers
VIEWERS_STAMP := $(VIEWERS_DIR)/.installed-$(subst @,-,$(word 1,$(VIEWERS_NPM))_$(word 2,$(VIEWERS_NPM)))
$(VIEWERS_STAMP):
	@mkdir -p $(VIEWERS_DIR)
	@echo "  NPM     $(VIEWERS_NPM) -> $(VIEWERS_DIR)"
	$(Q)npm install --prefix $(VIEWERS_DIR) --no-audit --no-fund --loglevel=error $(VIEWERS_NPM) \
		>$(VIEWERS_DIR)/npm.log 2>&1 || { cat $(VIEWERS_DIR)/npm.log; exit 1; }
	@touch $@

# Debian's chromium, installed when missing (as root; otherwise the command to run is printed).
.PHONY: deps-chromium
deps-chromium:
	@command -v chromium >/dev/null || { \
		if [ "$$(id -u)" = 0 ]; then \
			echo "  DEPS    installing chromium"; \
			(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				chromium) >$${TMPDIR:-/tmp}/trc-deps-chromium.log 2>&1 \
			|| { echo "apt-get failed, see $${TMPDIR:-/tmp}/trc-deps-chromium.log" >&2; exit 1; }; \
		else \
			echo "chromium missing; run as root: apt-get install -y chromium" >&2; \
			exit 1; \
		fi; }

.PHONY: test-viewers
test-viewers: build-all $(VIEWERS_STAMP) deps-chromium
	@echo "== test-viewers: tests/speedscope_check.mjs (speedscope in chromium opens chrome, flame, pprof)"
	$(Q)node tests/speedscope_check.mjs $(B) $(VIEWERS_DIR) "$$(command -v chromium)"

# trace-dump report's page in the same chromium, driven by the same puppeteer-core: charts,
# hover values, flame graphs and tables against summary --json, no console error, no network
# (tests/report_check.mjs). The pages and a screenshot stay in build/report.
.PHONY: test-report
test-report: build-all $(VIEWERS_STAMP) deps-chromium
	@echo "== test-report: tests/report_check.mjs (trace-dump report's page in chromium)"
	$(Q)node tests/report_check.mjs $(B) $(VIEWERS_DIR) "$$(command -v chromium)" build/report

asan: deps
	$(Q)$(MAKE) --no-print-directory SAN=asan tests
tsan: deps
	$(Q)$(MAKE) --no-print-directory SAN=tsan $(STRESS)

stress: deps
	$(Q)$(MAKE) --no-print-directory SAN=tsan test-run-stress STRESS_SCALE=10

# One-line bugs (tests/mutants/LIST) planted one at a time in a copy of the tree (build/mutants/
# work), each run against the tiers until a suite fails; prints the share caught. Seconds a
# mutant once the suite that caught it last runs first, minutes for one that survives (about 10
# minutes in all on 2 loaded cores); not part of `make test`. MUTANTS=id1,id2 for a few; see
# tests/mutants/run.py for the other settings.
.PHONY: mutants
mutants: deps
	$(Q)python3 tests/mutants/run.py

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
# The version is written once, for the commands, in tools/cli/cli_version.h.
VERSION := $(shell sed -n 's/^\#define CLI_VERSION "\(.*\)"/\1/p' tools/cli/cli_version.h)
install: build-all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/include/trc
	install -m 755 $(TOOLS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(LIBTRC_A) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBTRC_SO) $(PRELOAD_SO) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 src/include/trc.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 src/include/trc/wire.h $(DESTDIR)$(PREFIX)/include/trc/
	install -m 644 ringbuf/ring_producer.h $(DESTDIR)$(PREFIX)/include/trc/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' src/runtime/trc.pc.in >$(DESTDIR)$(PREFIX)/lib/pkgconfig/trc.pc

help:
	@echo "make demo        build (installing missing Debian packages), record tests/prog_demo.c, print its summary"
	@echo "make test        the whole suite: plain tier, ASan+UBSan tier (with a brief fuzz run), TSan stress,"
	@echo "                 DuckDB tier (test-duckdb: installs @duckdb/node-api with npm into build/duckdb)"
	@echo "make all         build everything under build/ (libs, commands, tests, benchmarks)"
	@echo "make libs|tools  build/lib/libtrc.so libtrc.a libtrc-preload.so libtrc-core.a | build/bin/trace-run trace-dump"
	@echo "make asan|tsan   the same tree under build/asan or build/tsan (clang)"
	@echo "make stress      the TSan stress programs at ten times the scale"
	@echo "make fuzz        the fuzz targets (reader, drain), FUZZ_SECONDS=60 per target"
	@echo "make mutants     plant each bug of tests/mutants/LIST in a copy of the tree, run the tiers,"
	@echo "                 print the share caught (long; MUTANTS=id1,id2 runs a few; report in build/mutants)"
	@echo "make bench       every benchmark, report in build/bench/ (about ten minutes); bench-quick: a minute"
	@echo "make bench-peers the same workloads through LTTng-UST, uftrace and heaptrack"
	@echo "make install     PREFIX=/usr/local: commands, libraries, trc.h, trc/wire.h, trc.pc"
	@echo "make format      clang-format every tracked .c and .h"
	@echo "make deps        install the Debian packages the build needs (as root)"
	@echo "Parts: ringbuf/ sampler/ src/{include,common,runtime,preload,session,recorder,trcfile,analysis,export}/ tools/{run,dump,cli}/"
	@echo "       tests/ bench/ (see README.md, Architecture). V=1 full commands, CI=1 -Werror;"
	@echo "       CFLAGS/CPPFLAGS/LDFLAGS on the command line are added to the build's own."

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build

-include $(shell find $(B)/obj $(B)/obj-so -name '*.d' 2>/dev/null)
