# actortrace: one build for everything; outputs go to build/.
#   make         the library, tracedecode, the reference runtime and its programs
#   make demo    record a CZMQ ping-pong with actortrace, then its report, view and a jq answer
#   make test    every test (unit, sanitizers, end-to-end, fault, fuzz); ends "N passed, N failed"
#   make bench   benchmarks; they print figures, they assert nothing (RUNS=5 runs of each
#                figure, PAIRS=51 interleaved pairs of each real program, unless set)
#   make fuzz    fuzz tracedecode for FUZZ_SECONDS (600) from real traces; keeps what it finds in
#                build/fuzz/corpus, crashes in build/fuzz/artifacts
#   make install, make uninstall   PREFIX=/usr/local DESTDIR=
#
# The file in order: settings, sources, flags, what each goal builds, then the rules (the
# library and its copies, tracedecode and the command, shimgen, unit and fuzz tests, the
# programs the tests run, benchmarks, install).

CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror -std=gnu11
CPPFLAGS := -Iinclude -D_GNU_SOURCE
B       := build

DEPS_OK := $(B)/.deps-ok

# Supported platforms: x86-64 Linux with glibc 2.35 or later (README, "Platforms").
TARGET := $(shell $(CC) -dumpmachine)
GLIBC_VERSION := $(shell getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $$2}')
ifeq ($(filter x86_64-%linux-gnu,$(TARGET)),)
$(error actortrace builds for x86-64 Linux with glibc only; $(CC) targets $(TARGET))
endif
ifneq ($(firstword $(shell printf '%s\n' 2.35 '$(GLIBC_VERSION)' | sort -V)),2.35)
$(error actortrace needs glibc 2.35 or later (rseq); this system has '$(GLIBC_VERSION)')
endif

# ---- sources ----

# Every C file of the project (make format; tests/e2e/format.sh checks the same list).
C_SOURCES   := $(shell find include common preload shim decoder cli tools tests -name '*.[ch]')
COMMON_SRC  := $(wildcard common/*.c)
CLI_SRC     := $(wildcard cli/*.c)
# The product's shims.
PRELOAD_SRC := $(wildcard preload/*.c) $(wildcard shim/*.c)
# What every copy of the library is rebuilt on.
LIB_DEPS    := $(PRELOAD_SRC) $(COMMON_SRC) $(wildcard include/*.h preload/*.h shim/*.h shim/*.map)
# The decoder's folders, each using only those below it (decoder/README.md). Every .c in them is
# built and every folder is on the include path, so a header is included by its bare name.
DECODER_DIRS := decoder decoder/views decoder/analysis decoder/trace decoder/util
DECODER_SRC := $(wildcard $(addsuffix /*.c,$(DECODER_DIRS)))
DECODER_HDR := $(wildcard $(addsuffix /*.h,$(DECODER_DIRS)) decoder/views/*.def)
DECODER_INC := $(addprefix -I,$(DECODER_DIRS))
# The decoder without its main, which the unit tests and the fuzzer link.
DECODER_LIB_SRC := $(filter-out decoder/main.c,$(DECODER_SRC))
SHIMGEN_SRC := $(wildcard tools/shimgen/*.c)
SHIMGEN_HDR := $(wildcard tools/shimgen/*.h) include/at_events.h

# The programs and libraries the tests and benchmarks run (tests/targets/), by subject.
TGT         := tests/targets
RT          := $(TGT)/rt
RT_SRC      := $(RT)/runtime.c
AETHER      := $(TGT)/aether
AETHER_HDR  := $(AETHER)/aether_abi.h $(AETHER)/program.h
NOP_SHIM    := $(TGT)/nop/nop_shim.c

# ---- flags ----

# Hidden by default: the library exports actortrace.h's API and the wrapped symbols (AT_EXPORT),
# nothing internal (tests/e2e/exports.sh). -Bsymbolic: its own references to what it exports
# bind to itself, so that a second copy in LD_PRELOAD (lifecycle.c) cannot take them over.
PRELOAD_FLAGS := -fPIC -ftls-model=initial-exec -fvisibility=hidden -pthread -Wl,-Bsymbolic
# Declares the version nodes of the glibc symbols that shim/glibc.c defines under a version.
SHIM_VERSIONS := -Wl,--version-script=shim/glibc.map
# Entry patching (preload/patch*.c) decodes and re-encodes instructions with Zydis.
PATCH_LIBS    := -lZydis
SAN_FLAGS     := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
# libFuzzer is clang's. The fuzzing define makes the reader accept any checksum, so that
# mutated inputs reach the parsers behind it.
FUZZ_FLAGS    := $(SAN_FLAGS) -fsanitize=fuzzer -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
FUZZ_SECONDS  ?= 600

# ---- what each goal builds ----

# The library's copies; each is the product's sources plus the shims and defines given with its
# rule below.
PRODUCT_LIB := $(B)/libactortrace.so
# The test copy: the product plus the shim of the reference runtime, which the tests and
# examples on refrt are traced with.
TEST_LIB := $(B)/tests/libactortrace-refrt.so
# The benchmark's copy, with a shim for its nop_send.
BENCH_LIB := $(B)/bench/libactortrace-bench.so
# The same, pausing between taking a thread's block back and writing it.
TAKEBACK_PAUSE_LIB := $(B)/tests/libactortrace-pause.so
# The floor variants (include/at_record.h, AT_BENCH_FLOOR): the product's, the test copy's
# (refrt) and the benchmark's (nop_send).
FLOOR_LIBS := $(B)/bench/floor/libactortrace.so $(B)/bench/floor/libactortrace-refrt.so \
	$(B)/bench/floor/libactortrace-bench.so
# The product's floor variant without its clock (AT_BENCH_NO_CLOCK): the wrappers alone.
NOCLOCK_LIB := $(B)/bench/noclock/libactortrace.so
# The writer's CPU time by phase (AT_BENCH_PHASES, preload/writer.c): the product's, the test
# copy's (refrt) and the benchmark's (nop_send), as above.
PHASES_LIBS := $(B)/bench/phases/libactortrace.so $(B)/bench/phases/libactortrace-refrt.so \
	$(B)/bench/phases/libactortrace-bench.so
# The benchmark's copy with nop_send patchable.
PATCHBENCH_LIB := $(B)/bench/libactortrace-patchbench.so
# 100 functions in a program, and a copy of the library with a patchable wrapper for each.
MANY := $(B)/bench/many
MANY_LIB := $(MANY)/libactortrace-many.so
LIBRARIES := $(PRODUCT_LIB) $(TEST_LIB) $(BENCH_LIB) $(TAKEBACK_PAUSE_LIB) $(FLOOR_LIBS) \
	$(NOCLOCK_LIB) $(PHASES_LIBS) $(PATCHBENCH_LIB) $(MANY_LIB)

EXAMPLES    := $(patsubst $(RT)/examples/%.c,$(B)/examples/%,$(wildcard $(RT)/examples/*.c))
# Every tests/unit/test_*.c is a unit test, built by one pattern rule.
UNIT_TESTS  := $(patsubst tests/unit/%.c,$(B)/tests/%,$(wildcard tests/unit/test_*.c))
TEST_PROGS  := $(patsubst $(TGT)/progs/%.c,$(B)/tests/progs/%,$(wildcard $(TGT)/progs/*.c))
STACK_LIBS  := $(B)/tests/stacks/libstacklinked.so $(B)/tests/stacks/libstackdl.so
CZMQ_PROGS  := $(patsubst $(TGT)/czmq/%.c,$(B)/tests/czmq/%,$(wildcard $(TGT)/czmq/*.c))
CAF_PROGS   := $(patsubst $(TGT)/caf/%.cpp,$(B)/tests/caf/%,$(wildcard $(TGT)/caf/*.cpp))
AETHER_PROGS := $(patsubst $(AETHER)/%.c,$(B)/tests/aether/%,$(filter-out $(AETHER)/runtime.c,$(wildcard $(AETHER)/*.c))) \
	$(B)/tests/aether/guard/prog $(B)/tests/aether/moved/libaether.so
BEAM_GUARD  := $(B)/tests/beam/emulator-12.3.2 $(B)/tests/beam/emulator-13.1.5
FUZZ_PROGS  := $(B)/fuzz/fuzz_decode $(B)/fuzz/fuzz_predict $(B)/fuzz/rawtrace $(B)/fuzz/bombtrace
SHIMGEN_TEST := $(B)/shimgen $(B)/asan/shimgen \
	$(B)/shimgen-test/libmbox.so $(B)/shimgen-test/mbox_demo \
	$(B)/shimgen-test/glib_demo $(B)/shimgen-test/uv_demo

# Entry patching's programs (tests/e2e/patch.sh), refrt and Aether's stand-in linked in.
STATIC := $(B)/static
AETHER_STATIC := $(patsubst %,$(STATIC)/aether/%,pingpong forkjoin ask single panic)
PATCH_CALLERS := $(B)/patch/ipara $(B)/patch/regs $(B)/patch/alias $(B)/patch/shadow \
                 $(B)/patch/direct $(B)/patch/coldjump
PATCH_PROGS := $(patsubst $(B)/examples/%,$(STATIC)/%,$(EXAMPLES)) $(STATIC)/ring-rdynamic \
	$(STATIC)/ring-rdynamic-stripped \
	$(STATIC)/pingpong-stripped $(STATIC)/refused $(STATIC)/dlopen $(B)/symbolic/librefrt.so \
	$(B)/bench/hotpath-static $(PATCHBENCH_LIB) \
	$(STATIC)/dlopen-runpath $(B)/patch/opener-runpath $(B)/patch/opener-rpath \
	$(B)/patch/a/libplugin.so $(B)/patch/b/libplugin.so \
	$(AETHER_STATIC) $(STATIC)/aether/pingpong-rdynamic \
	$(PATCH_CALLERS) $(B)/patch/dlrace $(B)/patch/dlcross $(B)/patch/reload \
	$(B)/patch/libparkcaller.so $(B)/patch/spinplug.so $(B)/patch/spinload \
	$(B)/patch/plug-rt_park.so \
	$(B)/patch/plug-rt_unpark.so $(B)/patch/plug-rt_exit.so

# GLib's program traced through tests/targets/shimgen/glib.spec: the shim generated, and
# generated again with the floor's recording.
GLIB_SHIMS := $(B)/bench/glib/libshim-glib.so $(B)/bench/glib/floor/libshim-glib.so
# The benchmarks' subjects: a no-op exported function, its caller and the library's copies for
# it, the real programs, the floor variants and the copies timing the writer, the writer's
# codec alone, the stack-depth program.
BENCH := $(B)/bench/libnop.so $(B)/bench/hotpath $(BENCH_LIB) \
	$(B)/bench/czmq_pingpong $(B)/bench/caf_pingpong $(B)/bench/libthreadcpu.so $(CZMQ_PROGS) \
	$(FLOOR_LIBS) $(NOCLOCK_LIB) $(PHASES_LIBS) $(GLIB_SHIMS) $(B)/shimgen-test/glib_demo \
	$(B)/bench/codec $(B)/bench/stackdepth

.PHONY: all demo test bench clean deps format fuzz install uninstall $(B)/install/shimgen

all: $(PRODUCT_LIB) $(B)/tracedecode $(B)/actortrace $(B)/shimgen $(B)/librefrt.so $(TEST_LIB) \
	$(EXAMPLES)

test: all $(BENCH) $(B)/asan/tracedecode $(UNIT_TESTS) $(TEST_PROGS) $(CZMQ_PROGS) $(CAF_PROGS) \
	$(AETHER_PROGS) $(FUZZ_PROGS) $(PATCH_PROGS) $(BEAM_GUARD) $(TAKEBACK_PAUSE_LIB) $(SHIMGEN_TEST)
	@sh tests/run.sh

bench: all $(BENCH) $(TAKEBACK_PAUSE_LIB) $(AETHER_PROGS) $(PATCH_PROGS) $(MANY)/prog $(MANY_LIB)
	@sh tests/bench/run.sh

demo: all $(B)/tests/czmq/pingpong
	@sh scripts/demo.sh

# The test's fuzz run, longer, on a corpus kept between runs; fails when a check fails.
fuzz: all $(FUZZ_PROGS)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_CORPUS=$(B)/fuzz/corpus sh tests/e2e/fuzz.sh | \
		tee $(B)/fuzz/fuzz.log
	@grep -q '^ok - fuzzer ran' $(B)/fuzz/fuzz.log && ! grep -q '^not ok' $(B)/fuzz/fuzz.log

# Every C source in the project's .clang-format layout; tests/e2e/format.sh fails on one that
# is not.
format:
	clang-format -i $(C_SOURCES)

deps: $(DEPS_OK)
$(DEPS_OK): scripts/install-deps.sh
	@sh scripts/install-deps.sh
	@mkdir -p $(B) && touch $@

clean:
	rm -rf $(B)

# ---- the library and its copies ----

# One rule links every copy: the product's sources, then the .c files a copy adds as
# prerequisites (its shims), in their order; a copy's defines are its target-specific CPPFLAGS.
$(LIBRARIES): $(LIB_DEPS) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(PRELOAD_FLAGS) -shared -Wl,-z,now -o $@ \
		$(PRELOAD_SRC) $(COMMON_SRC) $(filter %.c,$(filter-out $(LIB_DEPS),$^)) \
		-lzstd -ldl $(PATCH_LIBS) -Wl,-z,defs $(SHIM_VERSIONS)

# A shim built on its own links the library (pkg-config's Libs); the soname lets its DT_NEEDED
# entry match the copy actortrace preloaded, wherever that is, so no second copy is loaded. The
# floor variants and the copies timing the writer stand in for the product, so they carry its
# soname too.
$(PRODUCT_LIB) $(FLOOR_LIBS) $(NOCLOCK_LIB) $(PHASES_LIBS): \
	PRELOAD_FLAGS += -Wl,-soname,libactortrace.so

# The shim of the test-only reference runtime, which goes only into the test copy of the
# library (TEST_LIB) and its floor variant: generated by shimgen from refrt's spec, so that the
# tests of refrt test shimgen's output (docs/SHIMGEN.md, "Linked into the library").
REFRT_SHIM := $(B)/gen/shim-refrt.c
$(REFRT_SHIM): $(TGT)/shimgen/refrt.spec $(B)/shimgen
	$(B)/shimgen --linked -o $(@D) $<

# The test copy can pose as a process of another host (ACTORTRACE_TEST_HOST, preload/meta.c),
# for tests/e2e/clocks.sh; the product cannot.
$(TEST_LIB): $(REFRT_SHIM) $(RT)/refrt.h
$(TEST_LIB): private CPPFLAGS += -I$(RT) -Ishim -DAT_TEST_HOOKS

$(BENCH_LIB): $(NOP_SHIM)
$(BENCH_LIB): CPPFLAGS += -I$(RT)

# The pause lets tests/e2e/threads.sh have the thread record in that window at every take-back
# (preload/takeback.c); with the test copy's hooks (AT_TEST_HOOKS), such as a writer made slow on
# demand for the tests of drop mode.
$(TAKEBACK_PAUSE_LIB): $(NOP_SHIM)
$(TAKEBACK_PAUSE_LIB): CPPFLAGS += -I$(RT) -DAT_TEST_TAKEBACK_PAUSE -DAT_TEST_HOOKS

# The floor: the same shims, each event one rdtsc and a 16-byte store, no writer; what
# tests/bench/programs.sh sets beside the real library.
$(FLOOR_LIBS): private CPPFLAGS += -DAT_BENCH_FLOOR -I$(RT)
$(NOCLOCK_LIB): private CPPFLAGS += -DAT_BENCH_FLOOR -DAT_BENCH_NO_CLOCK -I$(RT)
$(B)/bench/floor/libactortrace-refrt.so: $(REFRT_SHIM)
$(B)/bench/floor/libactortrace-refrt.so: private CPPFLAGS += -Ishim
$(B)/bench/floor/libactortrace-bench.so: $(NOP_SHIM)

# The writer timed by phase, for tests/bench/programs.sh; the same shims as the copies above.
$(PHASES_LIBS): private CPPFLAGS += -DAT_BENCH_PHASES -I$(RT)
$(B)/bench/phases/libactortrace-refrt.so: $(REFRT_SHIM)
$(B)/bench/phases/libactortrace-refrt.so: private CPPFLAGS += -Ishim
$(B)/bench/phases/libactortrace-bench.so: $(NOP_SHIM)

$(PATCHBENCH_LIB): $(NOP_SHIM)
$(PATCHBENCH_LIB): CPPFLAGS += -DAT_BENCH_PATCH

# tests/bench/many.sh writes the program and the shim of MANY_LIB.
$(MANY_LIB): $(MANY)/shim.c

# ---- tracedecode, the command, shimgen ----

$(B)/tracedecode: $(DECODER_SRC) $(COMMON_SRC) $(wildcard include/*.h) $(DECODER_HDR) | $(DEPS_OK)
	$(CC) $(CPPFLAGS) $(DECODER_INC) $(CFLAGS) $(WARN) -o $@ $(DECODER_SRC) $(COMMON_SRC) -lzstd -lncurses

$(B)/asan/tracedecode: $(DECODER_SRC) $(COMMON_SRC) $(wildcard include/*.h) $(DECODER_HDR) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(DECODER_INC) -DAT_TEST_HOOKS $(SAN_FLAGS) $(WARN) -o $@ $(DECODER_SRC) $(COMMON_SRC) -lzstd -lncurses

# The actortrace command: finds the library and tracedecode beside itself (build/) or under the
# PREFIX it is installed to.
$(B)/actortrace: $(CLI_SRC) cli/cli.h include/actortrace.h | $(DEPS_OK)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $(CLI_SRC)

# shimgen: a shim for any runtime from a spec (docs/SHIMGEN.md). Generated shims include
# actortrace.h from this tree's include/.
$(B)/shimgen: $(SHIMGEN_SRC) $(SHIMGEN_HDR)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -DSHIMGEN_INCLUDE='"$(CURDIR)/include"' -o $@ $(SHIMGEN_SRC)
# shimgen reads what users write: the test runs it on every spec built with the sanitizers too.
$(B)/asan/shimgen: $(SHIMGEN_SRC) $(SHIMGEN_HDR)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(SAN_FLAGS) $(WARN) -DSHIMGEN_INCLUDE='"$(CURDIR)/include"' -o $@ $(SHIMGEN_SRC)

# ---- unit tests and fuzzers ----

# Unit tests link the common code and the piece they test, built with the sanitizers.
$(B)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(COMMON_SRC) $(DECODER_SRC) $(wildcard include/*.h) $(DECODER_HDR) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(DECODER_INC) $(SAN_FLAGS) $(WARN) -o $@ $< $(COMMON_SRC) \
		$(DECODER_LIB_SRC) -lzstd -lncurses

# Entry patching's unit test patches the hand-written functions of tests/unit/asm/.
$(B)/tests/test_patch: tests/unit/test_patch.c tests/unit/asm/patch_cases.S preload/patch_x86.c preload/patch_stubs.c preload/patch.h tests/unit/unit.h | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ipreload $(SAN_FLAGS) $(WARN) -pthread -o $@ tests/unit/test_patch.c \
		tests/unit/asm/patch_cases.S preload/patch_x86.c preload/patch_stubs.c $(PATCH_LIBS)

# The recorder's layers (preload/README.md), each tested with what is below it: ring on util and
# config; takeback on those, losses and meta; record on all of those, with the writer stood in
# for by the test (tests/unit/test_record.c).
RING_LAYERS     := preload/util.c preload/patch_stubs.c preload/config.c preload/ring.c
TAKEBACK_LAYERS := $(RING_LAYERS) preload/losses.c preload/meta.c preload/takeback.c
RECORD_LAYERS   := $(TAKEBACK_LAYERS) preload/record.c
$(B)/tests/test_ring: RECORDER_SRC := $(RING_LAYERS)
$(B)/tests/test_takeback: RECORDER_SRC := $(TAKEBACK_LAYERS)
$(B)/tests/test_record: RECORDER_SRC := $(RECORD_LAYERS)
$(B)/tests/test_ring $(B)/tests/test_takeback $(B)/tests/test_record: $(B)/tests/%: tests/unit/%.c \
		tests/unit/unit.h tests/unit/recorder.h $(RECORD_LAYERS) $(wildcard include/*.h preload/*.h) $(COMMON_SRC) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ipreload $(SAN_FLAGS) $(WARN) -pthread -o $@ $< $(RECORDER_SRC) $(COMMON_SRC) -lzstd

# The fuzzer of tracedecode, and the tool that stores a seed trace's payloads raw.
$(B)/fuzz/fuzz_decode: tests/fuzz/fuzz_decode.c tests/unit/jsoncheck.h $(COMMON_SRC) $(DECODER_SRC) $(wildcard include/*.h) $(DECODER_HDR) | $(DEPS_OK)
	@mkdir -p $(@D)
	clang $(CPPFLAGS) $(DECODER_INC) -Itests/unit $(FUZZ_FLAGS) $(WARN) -o $@ $< $(COMMON_SRC) \
		$(DECODER_LIB_SRC) -lzstd -lncurses -lpthread
# The fuzzer of the predicted encoding's decoder alone (common/predict.c).
$(B)/fuzz/fuzz_predict: tests/fuzz/fuzz_predict.c $(COMMON_SRC) $(wildcard include/*.h) | $(DEPS_OK)
	@mkdir -p $(@D)
	clang $(CPPFLAGS) $(FUZZ_FLAGS) $(WARN) -o $@ $< $(COMMON_SRC) -lzstd
$(B)/fuzz/rawtrace: tests/fuzz/rawtrace.c $(COMMON_SRC) $(wildcard include/*.h) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $< $(COMMON_SRC) -lzstd
# A small trace that claims a lot of memory, for the decoder's memory limits (tests/e2e/inputs.sh).
# It uses part of the unit tests' header-only trace writer.
$(B)/fuzz/bombtrace: tests/fuzz/bombtrace.c tests/unit/tracegen.h $(COMMON_SRC) $(wildcard include/*.h) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) $(WARN) -Wno-unused-function -o $@ $< $(COMMON_SRC) -lzstd

# ---- the programs the tests run (tests/targets/) ----

# The reference runtime: default visibility and no -Bsymbolic, so its calls to its own
# exported functions go through the PLT, as in the real runtimes we trace.
$(B)/librefrt.so: $(RT_SRC) $(RT)/refrt.h | $(DEPS_OK)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -shared -pthread -Wl,-soname,librefrt.so -o $@ $(RT_SRC)

$(B)/examples/%: $(RT)/examples/%.c $(RT)/examples/args.h $(RT)/refrt.h $(B)/librefrt.so
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -I$(RT) $(CFLAGS) $(WARN) -pthread -o $@ $< $(B)/librefrt.so \
		-Wl,-rpath,'$$ORIGIN/..'

# Programs the end-to-end and fault tests trace: on refrt, or on the benchmark's nop_send
# (traced with the benchmark's copy of the library, which has a shim for it).
$(B)/tests/progs/%: $(TGT)/progs/%.c $(B)/librefrt.so $(B)/bench/libnop.so | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -I$(RT) $(CFLAGS) $(WARN) -pthread -o $@ $< $(B)/librefrt.so \
		$(B)/bench/libnop.so -Wl,-rpath,'$$ORIGIN/../..' -Wl,-rpath,'$$ORIGIN/../../bench'

# Call stacks (tests/e2e/stacks.sh): one library source built as a linked and a dlopen'd
# library, and the program that sends through both.
$(B)/tests/stacks/libstacklinked.so: $(TGT)/stacks/libsender.c $(B)/bench/libnop.so
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -DSENDER=stacklinked_send -Wl,-soname,libstacklinked.so -o $@ $< $(B)/bench/libnop.so
$(B)/tests/stacks/libstackdl.so: $(TGT)/stacks/libsender.c $(B)/bench/libnop.so
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -DSENDER=stackdl_send -o $@ $< $(B)/bench/libnop.so
$(B)/tests/progs/stacks: $(TGT)/progs/stacks.c $(STACK_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $< $(B)/tests/stacks/libstacklinked.so \
		$(B)/bench/libnop.so -ldl -Wl,-rpath,'$$ORIGIN/../stacks' -Wl,-rpath,'$$ORIGIN/../../bench'

# Programs on CZMQ that tests/e2e/czmq.sh, zmq.sh and traffic.sh trace. -rdynamic: the shim
# names an actor after its task function's dynamic symbol.
$(B)/tests/czmq/%: $(TGT)/czmq/%.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -rdynamic -pthread -o $@ $< -lczmq -lzmq

# CAF programs that tests/e2e/caf.sh traces through shim/caf.c; each prints its own counts.
# -rdynamic: layout.cpp finds vtable slots by the names of the functions in them.
$(B)/tests/caf/%: $(TGT)/caf/%.cpp $(TGT)/caf/truth.hpp | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 $(CFLAGS) -Wall -Wextra -Werror -rdynamic -pthread -o $@ $< -lcaf_core
# CAF's remoting is in libcaf_io.
$(B)/tests/caf/remote: $(TGT)/caf/remote.cpp $(TGT)/caf/truth.hpp | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 $(CFLAGS) -Wall -Wextra -Werror -rdynamic -pthread -o $@ $< -lcaf_io -lcaf_core

# The stand-in for Aether's runtime ABI ($(AETHER)/aether_abi.h) and its programs, which
# tests/e2e/aether.sh traces. Built like a shared libaether.so: -fPIC, default visibility, no
# -Bsymbolic, so its calls to its own exported functions go through the PLT.
$(B)/tests/aether/libaether.so: $(AETHER)/runtime.c $(AETHER)/aether_abi.h | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -shared -pthread -Wl,-soname,libaether.so -o $@ $<
$(B)/tests/aether/%: $(AETHER)/%.c $(AETHER_HDR) $(B)/tests/aether/libaether.so
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -pthread -o $@ $< $(B)/tests/aether/libaether.so \
		-Wl,-rpath,'$$ORIGIN'
# The same runtime with its step pointer moved, as another version might move it, and a
# library that shares two of the runtime's names and nothing else: the shim's guard tests.
$(B)/tests/aether/moved/libaether.so: $(AETHER)/runtime.c $(AETHER)/aether_abi.h | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -DSTEP_MOVED -fPIC -shared -pthread -Wl,-soname,libaether.so -o $@ $<
$(B)/tests/aether/guard/libother.so: $(AETHER)/guard/other.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -shared -Wl,-soname,libother.so -o $@ $<
$(B)/tests/aether/guard/prog: $(AETHER)/guard/prog.c $(B)/tests/aether/guard/libother.so
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $< $(B)/tests/aether/guard/libother.so -Wl,-rpath,'$$ORIGIN'

# Stand-ins for other versions of the Erlang emulator, for the BEAM shim's guard: one of erts
# 12.3.2, one that says 13.1.5 but has no atom table; -rdynamic, as beam.smp exports its
# functions.
$(B)/tests/beam/emulator-%: $(TGT)/beam/guard/emulator.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -rdynamic -DERTS_VERSION='"$*"' -o $@ $<

# mbox, the runtime shimgen's test traces, and its program ($(TGT)/shimgen/).
$(B)/shimgen-test/libmbox.so: $(TGT)/shimgen/mbox.c $(TGT)/shimgen/mbox.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -pthread -Wl,-soname,libmbox.so -o $@ $<
$(B)/shimgen-test/mbox_demo: $(TGT)/shimgen/mbox_demo.c $(TGT)/shimgen/mbox.h $(B)/shimgen-test/libmbox.so
	$(CC) $(CFLAGS) $(WARN) -pthread -o $@ $< $(B)/shimgen-test/libmbox.so -Wl,-rpath,'$$ORIGIN'
# The worked examples: programs on Debian's GLib and libuv ($(TGT)/shimgen/glib.spec, uv.spec).
$(B)/shimgen-test/glib_demo: $(TGT)/shimgen/glib_demo.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) $$(pkg-config --cflags glib-2.0) -o $@ $< $$(pkg-config --libs glib-2.0)
$(B)/shimgen-test/uv_demo: $(TGT)/shimgen/uv_demo.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) $$(pkg-config --cflags libuv) -o $@ $< $$(pkg-config --libs libuv)

# refrt linked into the programs, for tests/e2e/patch.sh: a static archive (-fPIC, so that the
# compiler keeps each exported function whole rather than inlining it into its callers), the
# examples linked against it without -rdynamic (found in .symtab) and ring with it (.dynsym
# exports the functions ahead of the preload), pingpong stripped, and ring -rdynamic stripped
# (found in .dynsym alone, as beam.smp's functions are).
$(STATIC)/librefrt.a: $(RT_SRC) $(RT)/refrt.h | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -pthread -c -o $(STATIC)/runtime.o $(RT_SRC)
	ar rcs $@ $(STATIC)/runtime.o
$(STATIC)/%: $(RT)/examples/%.c $(RT)/examples/args.h $(RT)/refrt.h $(STATIC)/librefrt.a
	$(CC) $(CPPFLAGS) -I$(RT) $(CFLAGS) $(WARN) -pthread -o $@ $< $(STATIC)/librefrt.a
$(STATIC)/ring-rdynamic: $(RT)/examples/ring.c $(RT)/examples/args.h $(STATIC)/librefrt.a
	$(CC) $(CPPFLAGS) -I$(RT) $(CFLAGS) $(WARN) -rdynamic -pthread -o $@ $< $(STATIC)/librefrt.a
$(STATIC)/pingpong-stripped: $(STATIC)/pingpong
	strip -o $@ $<
$(STATIC)/ring-rdynamic-stripped: $(STATIC)/ring-rdynamic
	strip -o $@ $<
# refrt as a shared library whose own calls are direct (-Bsymbolic-functions), for the examples
# to run against instead of librefrt.so (LD_LIBRARY_PATH).
$(B)/symbolic/librefrt.so: $(RT_SRC) $(RT)/refrt.h | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -shared -pthread -Wl,-Bsymbolic-functions \
		-Wl,-soname,librefrt.so -o $@ $(RT_SRC)
# A program that loads refrt with dlopen.
$(STATIC)/dlopen: $(TGT)/patch/dlopen.c $(RT)/refrt.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -I$(RT) $(CFLAGS) $(WARN) -o $@ $< -ldl
# dlopen by a bare name, searched in the caller's run path (preload/patch_dlopen.c): refrt
# (-Bsymbolic-functions) found through a DT_RUNPATH of $ORIGIN/../symbolic, and a program that
# opens two copies of one plugin, with a DT_RUNPATH and with a DT_RPATH of $ORIGIN/a.
$(STATIC)/dlopen-runpath: $(TGT)/patch/dlopen.c $(RT)/refrt.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -I$(RT) $(CFLAGS) $(WARN) -o $@ $< -ldl \
		-Wl,--enable-new-dtags,-rpath,'$$ORIGIN/../symbolic'
$(B)/patch/%/libplugin.so: $(TGT)/patch/plugin.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -DWHICH='"$*"' -Wl,-soname,libplugin.so -o $@ $<
$(B)/patch/opener-runpath: $(TGT)/patch/opener.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -o $@ $< -ldl -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/a'
$(B)/patch/opener-rpath: $(TGT)/patch/opener.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -o $@ $< -ldl -Wl,--disable-new-dtags,-rpath,'$$ORIGIN/a'
# The Aether stand-in linked into its programs, as Aether's default build links its runtime: a
# static archive built -fPIC (the functions stay whole), the programs without -rdynamic, and
# one linked -rdynamic, as ae links.
$(STATIC)/aether/libaether.a: $(AETHER)/runtime.c $(AETHER)/aether_abi.h | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -pthread -c -o $(@D)/runtime.o $<
	ar rcs $@ $(@D)/runtime.o
$(AETHER_STATIC): $(STATIC)/aether/%: $(AETHER)/%.c $(AETHER_HDR) $(STATIC)/aether/libaether.a
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -pthread -o $@ $< $(STATIC)/aether/libaether.a
$(STATIC)/aether/pingpong-rdynamic: $(AETHER)/pingpong.c $(AETHER_HDR) $(STATIC)/aether/libaether.a
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -rdynamic -pthread -o $@ $< $(STATIC)/aether/libaether.a
# Patched entries leave their callers every register the original leaves: the -fipa-ra caller
# of docs/PATCHING.md (rt_schedule in the same unit as its loop), an assembly rt_park called with
# patterns in every register, an alias (two declared names at one address), and recursion and
# longjmp through patched entries.
$(PATCH_CALLERS): $(B)/patch/%: $(TGT)/patch/%.c $(RT)/refrt.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -I$(RT) $(CFLAGS) $(WARN) -o $@ $<
# Threads run libspin.so's rt_schedule, patched at start, while plugins are patched in dlopen.
$(B)/patch/libspin.so: $(TGT)/patch/spin.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -pthread -Wl,-Bsymbolic-functions -o $@ $<
$(B)/patch/plug-%.so: $(TGT)/patch/plug.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -Wl,-Bsymbolic-functions -DNAME=$* \
		-Wl,-soname,plug-$*.so -o $@ $<
$(B)/patch/dlrace: $(TGT)/patch/dlrace.c $(B)/patch/libspin.so
	$(CC) $(CFLAGS) $(WARN) -pthread -o $@ $< $(B)/patch/libspin.so -ldl -Wl,-rpath,'$$ORIGIN'
# A patched plugin unloaded, then loaded again by a library calling it through its PLT.
$(B)/patch/libparkcaller.so: $(TGT)/patch/parkcaller.c $(B)/patch/plug-rt_park.so
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -o $@ $< $(B)/patch/plug-rt_park.so -Wl,-rpath,'$$ORIGIN'
$(B)/patch/reload: $(TGT)/patch/reload.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -o $@ $< -ldl
# A plugin patched in dlopen while its own thread runs the function.
$(B)/patch/spinplug.so: $(TGT)/patch/spinplug.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -pthread -Wl,-Bsymbolic-functions -o $@ $<
$(B)/patch/spinload: $(TGT)/patch/spinload.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -o $@ $< -ldl
# Plugins patched in dlopen on one thread while another loads and unloads a library.
$(B)/patch/dlcross: $(TGT)/patch/dlcross.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -pthread -o $@ $< -ldl
# A program whose rt_exit is too short to patch.
$(STATIC)/refused: $(TGT)/patch/refused.c $(RT)/refrt.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -I$(RT) $(CFLAGS) $(WARN) -o $@ $<

# ---- benchmarks (tests/bench/) ----

# A no-op exported function (tests/targets/nop/), and its caller.
$(B)/bench/libnop.so: $(TGT)/nop/nop.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -Wl,-soname,libnop.so -o $@ $<
$(B)/bench/hotpath: tests/bench/hotpath.c $(B)/bench/libnop.so
	$(CC) $(CFLAGS) $(WARN) -pthread -o $@ $< $(B)/bench/libnop.so -Wl,-rpath,'$$ORIGIN'
# nop_send linked into its caller, reached through a patched entry. Built with -fcf-protection
# so that its entry (endbr64, lea, ret) is long enough to patch.
$(B)/bench/hotpath-static: tests/bench/hotpath.c $(TGT)/nop/nop.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fcf-protection=branch -pthread -o $@ tests/bench/hotpath.c $(TGT)/nop/nop.c
# GLib's shim generated by shimgen, and generated again with the floor's recording (built by
# hand from the command shimgen prints).
$(GLIB_SHIMS): $(TGT)/shimgen/glib.spec $(B)/shimgen $(wildcard include/*.h)
$(B)/bench/glib/libshim-glib.so:
	$(B)/shimgen $(TGT)/shimgen/glib.spec -o $(@D) >/dev/null
$(B)/bench/glib/floor/libshim-glib.so:
	sh -c "$$($(B)/shimgen $(TGT)/shimgen/glib.spec -o $(@D) --no-build | \
		sed 's/ -shared / -DAT_BENCH_FLOOR -shared /')"
# Preloaded in front of the tracer: the CPU time of its writer thread.
$(B)/bench/libthreadcpu.so: tests/bench/threadcpu.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -D_GNU_SOURCE -fPIC -shared -pthread -o $@ $< -ldl
# The writer's encoding and compression of a trace's events, apart from the program
# (tests/bench/writer.sh).
$(B)/bench/codec: tests/bench/codec.c $(COMMON_SRC) $(wildcard include/*.h) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ tests/bench/codec.c $(COMMON_SRC) -lzstd
# Sends DEPTH frames down, for the cost of a captured stack (tests/bench/stacks.sh).
$(B)/bench/stackdepth: tests/bench/stackdepth.c $(B)/bench/libnop.so
	$(CC) $(CFLAGS) $(WARN) -pthread -o $@ $< $(B)/bench/libnop.so -Wl,-rpath,'$$ORIGIN'
# CZMQ round trips per second, run untraced and traced.
$(B)/bench/czmq_pingpong: tests/bench/czmq_pingpong.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -pthread -o $@ $< -lczmq -lzmq
# CAF round trips per second, run untraced and traced.
$(B)/bench/caf_pingpong: tests/bench/caf_pingpong.cpp | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 $(CFLAGS) -Wall -Wextra -Werror -pthread -o $@ $< -lcaf_core
# The start-up cost of patching: tests/bench/many.sh writes the program and its shim.
$(MANY)/prog.c: tests/bench/many.sh
	@mkdir -p $(@D)
	sh tests/bench/many.sh $(MANY)
$(MANY)/shim.c: $(MANY)/prog.c
$(MANY)/prog: $(MANY)/prog.c
	$(CC) $(CFLAGS) $(WARN) -o $@ $<

# ---- install ----

# make install PREFIX=/usr/local DESTDIR=: the command, tracedecode and shimgen in bin/, the library in
# lib/actortrace/ (where the command looks for it, from its own directory), the headers a shim
# is written against with their pkg-config file, the man pages and the docs (with the README's
# relative links intact). make uninstall removes exactly these.
PREFIX  ?= /usr/local
DESTDIR ?=
VERSION := $(shell sed -n 's/^\#define ACTORTRACE_VERSION_STRING "\(.*\)"/\1/p' include/actortrace.h)
I_BIN   := $(DESTDIR)$(PREFIX)/bin
I_LIB   := $(DESTDIR)$(PREFIX)/lib/actortrace
I_INC   := $(DESTDIR)$(PREFIX)/include/actortrace
I_PC    := $(DESTDIR)$(PREFIX)/lib/pkgconfig
I_MAN   := $(DESTDIR)$(PREFIX)/share/man
I_DOC   := $(DESTDIR)$(PREFIX)/share/doc/actortrace
# actortrace.h and the headers it includes
PUBLIC_HEADERS := include/actortrace.h include/at_events.h include/at_format.h include/at_record.h
MAN_PAGES := man/actortrace.1 man/tracedecode.1 man/shimgen.1 man/actortrace.7
DOCS := README.md $(wildcard docs/*.md) $(wildcard docs/shims/*.md)

# The installed shimgen builds shims against the installed headers; built at each install, since
# PREFIX is in it.
$(B)/install/shimgen:
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -DSHIMGEN_INCLUDE='"$(PREFIX)/include/actortrace"' \
		-o $@ $(SHIMGEN_SRC)

install: $(B)/actortrace $(B)/tracedecode $(PRODUCT_LIB) $(B)/install/shimgen
	install -d $(I_BIN) $(I_LIB) $(I_INC) $(I_PC) $(I_MAN)/man1 $(I_MAN)/man7 $(I_DOC)/docs/shims
	install -m 755 $(B)/actortrace $(B)/tracedecode $(B)/install/shimgen $(I_BIN)/
	install -m 644 $(PRODUCT_LIB) $(I_LIB)/
	install -m 644 $(PUBLIC_HEADERS) $(I_INC)/
	printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$${prefix}/lib/actortrace' \
		'includedir=$${prefix}/include/actortrace' '' 'Name: actortrace' \
		'Description: the API actortrace shims are written against' 'Version: $(VERSION)' \
		'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -Wl,-rpath,$${libdir} -lactortrace' \
		>$(I_PC)/actortrace.pc
	install -m 644 $(filter %.1,$(MAN_PAGES)) $(I_MAN)/man1/
	install -m 644 $(filter %.7,$(MAN_PAGES)) $(I_MAN)/man7/
	for f in $(DOCS); do install -m 644 $$f $(I_DOC)/$$f || exit 1; done

uninstall:
	rm -f $(I_BIN)/actortrace $(I_BIN)/tracedecode $(I_BIN)/shimgen $(I_LIB)/libactortrace.so
	rm -f $(I_PC)/actortrace.pc
	rm -f $(addprefix $(I_INC)/,$(notdir $(PUBLIC_HEADERS)))
	rm -f $(addprefix $(I_MAN)/man1/,$(notdir $(filter %.1,$(MAN_PAGES))))
	rm -f $(addprefix $(I_MAN)/man7/,$(notdir $(filter %.7,$(MAN_PAGES))))
	rm -f $(addprefix $(I_DOC)/,$(DOCS))
	rmdir $(I_LIB) $(I_INC) $(I_DOC)/docs/shims $(I_DOC)/docs $(I_DOC) 2>/dev/null || true
