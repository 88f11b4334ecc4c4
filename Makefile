# actortrace: one build for everything; outputs go to build/.
#   make         the library, tracedecode, the reference runtime and its programs
#   make demo    record a CZMQ ping-pong with actortrace, then its report, view and a jq answer
#   make test    every test (unit, sanitizers, end-to-end, fault, fuzz); ends "N passed, N failed"
#   make bench   benchmarks; they print figures, they assert nothing (RUNS=5 runs of each
#                figure, PAIRS=51 interleaved pairs of each real program, unless set)
#   make fuzz    fuzz tracedecode for FUZZ_SECONDS (600) from real traces; keeps what it finds in
#                build/fuzz/corpus, crashes in build/fuzz/artifacts

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

COMMON_SRC  := $(wildcard common/*.c)
CLI_SRC     := $(wildcard cli/*.c)
# The product's shims; shim/refrt.c wraps the test-only reference runtime, so it goes only into
# the test copy of the library (TEST_LIB).
PRELOAD_SRC := $(wildcard preload/*.c) \
	$(filter-out shim/refrt.c,$(wildcard shim/*.c))
# The decoder's folders, each using only those below it (decoder/README.md). Every .c in them is
# built and every folder is on the include path, so a header is included by its bare name.
DECODER_DIRS := decoder decoder/views decoder/analysis decoder/trace decoder/util
DECODER_SRC := $(wildcard $(addsuffix /*.c,$(DECODER_DIRS)))
DECODER_HDR := $(wildcard $(addsuffix /*.h,$(DECODER_DIRS)) decoder/views/*.def)
DECODER_INC := $(addprefix -I,$(DECODER_DIRS))
RT_SRC      := tests/rt/runtime.c
EXAMPLES    := $(patsubst tests/rt/examples/%.c,$(B)/examples/%,$(wildcard tests/rt/examples/*.c))
UNIT_TESTS  := $(patsubst tests/unit/%.c,$(B)/tests/%,$(wildcard tests/unit/*.c))
TEST_PROGS  := $(patsubst tests/progs/%.c,$(B)/tests/progs/%,$(wildcard tests/progs/*.c))
CZMQ_PROGS  := $(patsubst tests/czmq/%.c,$(B)/tests/czmq/%,$(wildcard tests/czmq/*.c))
AETHER_PROGS := $(patsubst tests/aether/%.c,$(B)/tests/aether/%,$(filter-out tests/aether/runtime.c,$(wildcard tests/aether/*.c))) \
	$(B)/tests/aether/guard/prog $(B)/tests/aether/moved/libaether.so

# Hidden by default: the library exports actortrace.h's API and the wrapped symbols (AT_EXPORT),
# nothing internal (tests/e2e/exports.sh).
PRELOAD_FLAGS := -fPIC -ftls-model=initial-exec -fvisibility=hidden -pthread
# Declares the version nodes of the glibc symbols that shim/glibc.c defines under a version.
SHIM_VERSIONS := -Wl,--version-script=shim/glibc.map
SAN_FLAGS     := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
# libFuzzer is clang's. The fuzzing define makes the reader accept any checksum, so that
# mutated inputs reach the parsers behind it.
FUZZ_FLAGS    := $(SAN_FLAGS) -fsanitize=fuzzer -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
FUZZ_SECONDS  ?= 600

.PHONY: all demo test bench clean deps fuzz
TEST_LIB := $(B)/tests/libactortrace-refrt.so
all: $(B)/libactortrace.so $(B)/tracedecode $(B)/actortrace $(B)/librefrt.so $(TEST_LIB) $(EXAMPLES)

deps: $(DEPS_OK)
$(DEPS_OK): scripts/install-deps.sh
	@sh scripts/install-deps.sh
	@mkdir -p $(B) && touch $@

$(B)/libactortrace.so: $(PRELOAD_SRC) $(COMMON_SRC) $(wildcard include/*.h preload/*.h shim/*.h shim/*.map) | $(DEPS_OK)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(PRELOAD_FLAGS) -shared -Wl,-z,now -o $@ \
		$(PRELOAD_SRC) $(COMMON_SRC) -lzstd -ldl $(PATCH_LIBS) -Wl,-z,defs $(SHIM_VERSIONS)

# The test copy: the product plus the shim of the reference runtime, which the tests and
# examples on refrt are traced with.
$(TEST_LIB): $(PRELOAD_SRC) shim/refrt.c $(COMMON_SRC) $(wildcard include/*.h preload/*.h shim/*.h shim/*.map tests/rt/refrt.h) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/rt $(CFLAGS) $(WARN) $(PRELOAD_FLAGS) -shared -Wl,-z,now -o $@ \
		$(PRELOAD_SRC) shim/refrt.c $(COMMON_SRC) -lzstd -ldl $(PATCH_LIBS) -Wl,-z,defs $(SHIM_VERSIONS)

$(B)/tracedecode: $(DECODER_SRC) $(COMMON_SRC) $(wildcard include/*.h) $(DECODER_HDR) | $(DEPS_OK)
	$(CC) $(CPPFLAGS) $(DECODER_INC) $(CFLAGS) $(WARN) -o $@ $(DECODER_SRC) $(COMMON_SRC) -lzstd -lncurses

# The actortrace command: finds the library and tracedecode beside itself (build/) or under the
# PREFIX it is installed to.
$(B)/actortrace: $(CLI_SRC) cli/cli.h include/actortrace.h | $(DEPS_OK)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $(CLI_SRC)

$(B)/asan/tracedecode: $(DECODER_SRC) $(COMMON_SRC) $(wildcard include/*.h) $(DECODER_HDR) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(DECODER_INC) $(SAN_FLAGS) $(WARN) -o $@ $(DECODER_SRC) $(COMMON_SRC) -lzstd -lncurses

# The reference runtime: default visibility and no -Bsymbolic, so its calls to its own
# exported functions go through the PLT, as in the real runtimes we trace.
$(B)/librefrt.so: $(RT_SRC) tests/rt/refrt.h | $(DEPS_OK)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -shared -pthread -Wl,-soname,librefrt.so -o $@ $(RT_SRC)

$(B)/examples/%: tests/rt/examples/%.c tests/rt/examples/args.h tests/rt/refrt.h $(B)/librefrt.so
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/rt $(CFLAGS) $(WARN) -pthread -o $@ $< $(B)/librefrt.so \
		-Wl,-rpath,'$$ORIGIN/..'

# Unit tests link the common code and the piece they test, built with the sanitizers.
$(B)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(COMMON_SRC) $(DECODER_SRC) $(wildcard include/*.h) $(DECODER_HDR) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(DECODER_INC) $(SAN_FLAGS) $(WARN) -o $@ $< $(COMMON_SRC) \
		$(filter-out decoder/main.c,$(DECODER_SRC)) -lzstd -lncurses

# The fuzzer of tracedecode, and the tool that stores a seed trace's payloads raw.
$(B)/fuzz/fuzz_decode: tests/fuzz/fuzz_decode.c tests/unit/jsoncheck.h $(COMMON_SRC) $(DECODER_SRC) $(wildcard include/*.h) $(DECODER_HDR) | $(DEPS_OK)
	@mkdir -p $(@D)
	clang $(CPPFLAGS) $(DECODER_INC) -Itests/unit $(FUZZ_FLAGS) $(WARN) -o $@ $< $(COMMON_SRC) \
		$(filter-out decoder/main.c,$(DECODER_SRC)) -lzstd -lncurses -lpthread
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

# Programs the end-to-end and fault tests trace: on refrt, or on the benchmark's nop_send
# (traced with the benchmark's copy of the library, which has a shim for it).
$(B)/tests/progs/%: tests/progs/%.c $(B)/librefrt.so $(B)/bench/libnop.so | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/rt $(CFLAGS) $(WARN) -pthread -o $@ $< $(B)/librefrt.so \
		$(B)/bench/libnop.so -Wl,-rpath,'$$ORIGIN/../..' -Wl,-rpath,'$$ORIGIN/../../bench'

# Call stacks (tests/e2e/stacks.sh): one library source built as a linked and a dlopen'd
# library, and the program that sends through both.
STACK_LIBS := $(B)/tests/stacks/libstacklinked.so $(B)/tests/stacks/libstackdl.so
$(B)/tests/stacks/libstacklinked.so: tests/stacks/libsender.c $(B)/bench/libnop.so
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -DSENDER=stacklinked_send -Wl,-soname,libstacklinked.so -o $@ $< $(B)/bench/libnop.so
$(B)/tests/stacks/libstackdl.so: tests/stacks/libsender.c $(B)/bench/libnop.so
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -DSENDER=stackdl_send -o $@ $< $(B)/bench/libnop.so
$(B)/tests/progs/stacks: tests/progs/stacks.c $(STACK_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $< $(B)/tests/stacks/libstacklinked.so \
		$(B)/bench/libnop.so -ldl -Wl,-rpath,'$$ORIGIN/../stacks' -Wl,-rpath,'$$ORIGIN/../../bench'

# The benchmark's subjects: a no-op exported function, its caller, and a copy of the library
# with a shim for it.
BENCH := $(B)/bench/libnop.so $(B)/bench/hotpath $(B)/bench/libactortrace-bench.so \
	$(B)/bench/czmq_pingpong $(B)/bench/caf_pingpong $(B)/bench/libthreadcpu.so $(CZMQ_PROGS)
$(B)/bench/libnop.so: tests/bench/nop.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -Wl,-soname,libnop.so -o $@ $<
$(B)/bench/hotpath: tests/bench/hotpath.c $(B)/bench/libnop.so
	$(CC) $(CFLAGS) $(WARN) -pthread -o $@ $< $(B)/bench/libnop.so -Wl,-rpath,'$$ORIGIN'
# TAKEBACK_PAUSE_LIB: the same, pausing between taking a thread's block back and writing it
# (preload/takeback.c), so that tests/e2e/threads.sh has the thread record in that window at
# every take-back; with the test copy's hooks (AT_TEST_HOST), such as a writer made slow on
# demand for the tests of drop mode.
TAKEBACK_PAUSE_LIB := $(B)/tests/libactortrace-pause.so
$(TAKEBACK_PAUSE_LIB): CPPFLAGS += -DAT_TEST_TAKEBACK_PAUSE -DAT_TEST_HOST
test: $(TAKEBACK_PAUSE_LIB)
$(B)/bench/libactortrace-bench.so $(TAKEBACK_PAUSE_LIB): $(PRELOAD_SRC) $(COMMON_SRC) tests/bench/nop_shim.c $(wildcard include/*.h preload/*.h shim/*.h shim/*.map)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/rt $(CFLAGS) $(WARN) $(PRELOAD_FLAGS) -shared -Wl,-z,now -o $@ \
		$(PRELOAD_SRC) $(COMMON_SRC) tests/bench/nop_shim.c -lzstd -ldl $(PATCH_LIBS) -Wl,-z,defs $(SHIM_VERSIONS)
# The floor variants (include/at_record.h, AT_BENCH_FLOOR): the same shims, each event one
# rdtsc and a 16-byte store, no writer; what tests/bench/programs.sh sets beside the real
# library. The product's, the test copy's (refrt) and the benchmark's (nop_send).
FLOOR_LIBS := $(B)/bench/floor/libactortrace.so $(B)/bench/floor/libactortrace-refrt.so \
	$(B)/bench/floor/libactortrace-bench.so
BENCH += $(FLOOR_LIBS)
$(FLOOR_LIBS): CPPFLAGS += -DAT_BENCH_FLOOR -Itests/rt
$(FLOOR_LIBS): $(PRELOAD_SRC) $(COMMON_SRC) shim/refrt.c tests/bench/nop_shim.c $(wildcard include/*.h preload/*.h shim/*.h shim/*.map)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(PRELOAD_FLAGS) -shared -Wl,-z,now \
		-Wl,-soname,libactortrace.so -o $@ $(PRELOAD_SRC) $(COMMON_SRC) \
		$(if $(findstring refrt,$@),shim/refrt.c) $(if $(findstring bench,$(notdir $@)),tests/bench/nop_shim.c) \
		-lzstd -ldl $(PATCH_LIBS) -Wl,-z,defs $(SHIM_VERSIONS)
# GLib's program traced through tests/shimgen/glib.spec: the shim generated, and generated
# again with the floor's recording (built by hand from the command shimgen prints).
GLIB_SHIMS := $(B)/bench/glib/libshim-glib.so $(B)/bench/glib/floor/libshim-glib.so
BENCH += $(GLIB_SHIMS) $(B)/shimgen-test/glib_demo
$(GLIB_SHIMS): tests/shimgen/glib.spec $(B)/shimgen $(wildcard include/*.h)
$(B)/bench/glib/libshim-glib.so:
	$(B)/shimgen tests/shimgen/glib.spec -o $(@D) >/dev/null
$(B)/bench/glib/floor/libshim-glib.so:
	sh -c "$$($(B)/shimgen tests/shimgen/glib.spec -o $(@D) --no-build | \
		sed 's/ -shared / -DAT_BENCH_FLOOR -shared /')"
# Preloaded in front of the tracer: the CPU time of its writer thread.
$(B)/bench/libthreadcpu.so: tests/bench/threadcpu.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -D_GNU_SOURCE -fPIC -shared -pthread -o $@ $< -ldl
# The writer's encoding and compression of a trace's events, apart from the program
# (tests/bench/writer.sh).
BENCH += $(B)/bench/codec
$(B)/bench/codec: tests/bench/codec.c $(COMMON_SRC) $(wildcard include/*.h) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ tests/bench/codec.c $(COMMON_SRC) -lzstd
# Sends DEPTH frames down, for the cost of a captured stack (tests/bench/stacks.sh).
BENCH += $(B)/bench/stackdepth
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

# Programs on CZMQ that tests/e2e/czmq.sh, zmq.sh and traffic.sh trace. -rdynamic: the shim
# names an actor after its task function's dynamic symbol.
$(B)/tests/czmq/%: tests/czmq/%.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -rdynamic -pthread -o $@ $< -lczmq -lzmq

# CAF programs that tests/e2e/caf.sh traces through shim/caf.c; each prints its own counts.
# -rdynamic: layout.cpp finds vtable slots by the names of the functions in them.
CAF_PROGS := $(patsubst tests/caf/%.cpp,$(B)/tests/caf/%,$(wildcard tests/caf/*.cpp))
$(B)/tests/caf/%: tests/caf/%.cpp tests/caf/truth.hpp | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 $(CFLAGS) -Wall -Wextra -Werror -rdynamic -pthread -o $@ $< -lcaf_core
# CAF's remoting is in libcaf_io.
$(B)/tests/caf/remote: tests/caf/remote.cpp tests/caf/truth.hpp | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CXX) -std=c++17 $(CFLAGS) -Wall -Wextra -Werror -rdynamic -pthread -o $@ $< -lcaf_io -lcaf_core
# The stand-in for Aether's runtime ABI (tests/aether/aether_abi.h) and its programs, which
# tests/e2e/aether.sh traces. Built like a shared libaether.so: -fPIC, default visibility, no
# -Bsymbolic, so its calls to its own exported functions go through the PLT.
$(B)/tests/aether/libaether.so: tests/aether/runtime.c tests/aether/aether_abi.h | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -shared -pthread -Wl,-soname,libaether.so -o $@ $<
$(B)/tests/aether/%: tests/aether/%.c tests/aether/aether_abi.h tests/aether/program.h $(B)/tests/aether/libaether.so
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -pthread -o $@ $< $(B)/tests/aether/libaether.so \
		-Wl,-rpath,'$$ORIGIN'
# The same runtime with its step pointer moved, as another version might move it, and a
# library that shares two of the runtime's names and nothing else: the shim's guard tests.
$(B)/tests/aether/moved/libaether.so: tests/aether/runtime.c tests/aether/aether_abi.h | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -DSTEP_MOVED -fPIC -shared -pthread -Wl,-soname,libaether.so -o $@ $<
$(B)/tests/aether/guard/libother.so: tests/aether/guard/other.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -shared -Wl,-soname,libother.so -o $@ $<
$(B)/tests/aether/guard/prog: tests/aether/guard/prog.c $(B)/tests/aether/guard/libother.so
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $< $(B)/tests/aether/guard/libother.so -Wl,-rpath,'$$ORIGIN'
# Stand-ins for other versions of the Erlang emulator, for the BEAM shim's guard: one of erts
# 12.3.2, one that says 13.1.5 but has no atom table; -rdynamic, as beam.smp exports its
# functions.
BEAM_GUARD := $(B)/tests/beam/emulator-12.3.2 $(B)/tests/beam/emulator-13.1.5
$(B)/tests/beam/emulator-%: tests/beam/guard/emulator.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -rdynamic -DERTS_VERSION='"$*"' -o $@ $<
# Entry patching (preload/patch*.c) decodes and re-encodes instructions with Zydis. Its unit
# test patches the hand-written functions of tests/unit/asm/.
PATCH_LIBS := -lZydis
$(B)/tests/test_patch: tests/unit/test_patch.c tests/unit/asm/patch_cases.S preload/patch_x86.c preload/patch_stubs.c preload/patch.h tests/unit/unit.h | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ipreload $(SAN_FLAGS) $(WARN) -pthread -o $@ tests/unit/test_patch.c \
		tests/unit/asm/patch_cases.S preload/patch_x86.c preload/patch_stubs.c $(PATCH_LIBS)

# refrt linked into the programs, for tests/e2e/patch.sh: a static archive (-fPIC, so that the
# compiler keeps each exported function whole rather than inlining it into its callers), the
# examples linked against it without -rdynamic (found in .symtab) and ring with it (.dynsym
# exports the functions ahead of the preload), pingpong stripped, and ring -rdynamic stripped
# (found in .dynsym alone, as beam.smp's functions are).
STATIC := $(B)/static
PATCH_PROGS := $(patsubst $(B)/examples/%,$(STATIC)/%,$(EXAMPLES)) $(STATIC)/ring-rdynamic \
	$(STATIC)/ring-rdynamic-stripped \
	$(STATIC)/pingpong-stripped $(STATIC)/refused $(STATIC)/dlopen $(B)/symbolic/librefrt.so \
	$(B)/bench/hotpath-static $(B)/bench/libactortrace-patchbench.so
$(STATIC)/librefrt.a: $(RT_SRC) tests/rt/refrt.h | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -pthread -c -o $(STATIC)/runtime.o $(RT_SRC)
	ar rcs $@ $(STATIC)/runtime.o
$(STATIC)/%: tests/rt/examples/%.c tests/rt/examples/args.h tests/rt/refrt.h $(STATIC)/librefrt.a
	$(CC) $(CPPFLAGS) -Itests/rt $(CFLAGS) $(WARN) -pthread -o $@ $< $(STATIC)/librefrt.a
$(STATIC)/ring-rdynamic: tests/rt/examples/ring.c tests/rt/examples/args.h $(STATIC)/librefrt.a
	$(CC) $(CPPFLAGS) -Itests/rt $(CFLAGS) $(WARN) -rdynamic -pthread -o $@ $< $(STATIC)/librefrt.a
$(STATIC)/pingpong-stripped: $(STATIC)/pingpong
	strip -o $@ $<
$(STATIC)/ring-rdynamic-stripped: $(STATIC)/ring-rdynamic
	strip -o $@ $<
# refrt as a shared library whose own calls are direct (-Bsymbolic-functions), for the examples
# to run against instead of librefrt.so (LD_LIBRARY_PATH).
$(B)/symbolic/librefrt.so: $(RT_SRC) tests/rt/refrt.h | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -shared -pthread -Wl,-Bsymbolic-functions \
		-Wl,-soname,librefrt.so -o $@ $(RT_SRC)
# The benchmark's nop_send linked into its caller, reached through a patched entry. Built with
# -fcf-protection so that its entry (endbr64, lea, ret) is long enough to patch.
# libactortrace-patchbench.so is the benchmark's copy of the library with nop_send patchable.
$(B)/bench/hotpath-static: tests/bench/hotpath.c tests/bench/nop.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fcf-protection=branch -pthread -o $@ tests/bench/hotpath.c tests/bench/nop.c
$(B)/bench/libactortrace-patchbench.so: $(PRELOAD_SRC) $(COMMON_SRC) tests/bench/nop_shim.c $(wildcard include/*.h preload/*.h shim/*.h shim/*.map)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -DAT_BENCH_PATCH $(CFLAGS) $(WARN) $(PRELOAD_FLAGS) -shared -Wl,-z,now -o $@ \
		$(PRELOAD_SRC) $(COMMON_SRC) tests/bench/nop_shim.c -lzstd -ldl $(PATCH_LIBS) -Wl,-z,defs $(SHIM_VERSIONS)
# 100 functions in a program, and a copy of the library with a patchable wrapper for each: the
# start-up cost of patching (tests/bench/many.sh writes both).
MANY := $(B)/bench/many
$(MANY)/prog.c: tests/bench/many.sh
	@mkdir -p $(@D)
	sh tests/bench/many.sh $(MANY)
$(MANY)/shim.c: $(MANY)/prog.c
$(MANY)/prog: $(MANY)/prog.c
	$(CC) $(CFLAGS) $(WARN) -o $@ $<
$(MANY)/libactortrace-many.so: $(PRELOAD_SRC) $(COMMON_SRC) $(MANY)/shim.c $(wildcard include/*.h preload/*.h shim/*.h shim/*.map)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(PRELOAD_FLAGS) -shared -Wl,-z,now -o $@ \
		$(PRELOAD_SRC) $(COMMON_SRC) $(MANY)/shim.c -lzstd -ldl $(PATCH_LIBS) -Wl,-z,defs $(SHIM_VERSIONS)
# A program that loads refrt with dlopen.
$(STATIC)/dlopen: tests/patch/dlopen.c tests/rt/refrt.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/rt $(CFLAGS) $(WARN) -o $@ $< -ldl
# dlopen by a bare name, searched in the caller's run path (preload/patch_dlopen.c): refrt
# (-Bsymbolic-functions) found through a DT_RUNPATH of $ORIGIN/../symbolic, and a program that
# opens two copies of one plugin, with a DT_RUNPATH and with a DT_RPATH of $ORIGIN/a.
PATCH_PROGS += $(STATIC)/dlopen-runpath $(B)/patch/opener-runpath $(B)/patch/opener-rpath \
	$(B)/patch/a/libplugin.so $(B)/patch/b/libplugin.so
$(STATIC)/dlopen-runpath: tests/patch/dlopen.c tests/rt/refrt.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/rt $(CFLAGS) $(WARN) -o $@ $< -ldl \
		-Wl,--enable-new-dtags,-rpath,'$$ORIGIN/../symbolic'
$(B)/patch/%/libplugin.so: tests/patch/plugin.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -DWHICH='"$*"' -Wl,-soname,libplugin.so -o $@ $<
$(B)/patch/opener-runpath: tests/patch/opener.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -o $@ $< -ldl -Wl,--enable-new-dtags,-rpath,'$$ORIGIN/a'
$(B)/patch/opener-rpath: tests/patch/opener.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -o $@ $< -ldl -Wl,--disable-new-dtags,-rpath,'$$ORIGIN/a'
# The Aether stand-in linked into its programs, as Aether's default build links its runtime: a
# static archive built -fPIC (the functions stay whole), the programs without -rdynamic.
AETHER_STATIC := $(patsubst %,$(STATIC)/aether/%,pingpong forkjoin ask single panic)
PATCH_PROGS += $(AETHER_STATIC) $(STATIC)/aether/pingpong-rdynamic
$(STATIC)/aether/libaether.a: tests/aether/runtime.c tests/aether/aether_abi.h | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -pthread -c -o $(@D)/runtime.o $<
	ar rcs $@ $(@D)/runtime.o
$(AETHER_STATIC): $(STATIC)/aether/%: tests/aether/%.c tests/aether/aether_abi.h tests/aether/program.h $(STATIC)/aether/libaether.a
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -pthread -o $@ $< $(STATIC)/aether/libaether.a
# and linked -rdynamic, as ae links
$(STATIC)/aether/pingpong-rdynamic: tests/aether/pingpong.c tests/aether/aether_abi.h tests/aether/program.h $(STATIC)/aether/libaether.a
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -rdynamic -pthread -o $@ $< $(STATIC)/aether/libaether.a
# Patched entries leave their callers every register the original leaves: the -fipa-ra caller
# of docs/PATCHING.md (rt_schedule in the same unit as its loop), an assembly rt_park called with
# patterns in every register, an alias (two declared names at one address), and recursion and
# longjmp through patched entries.
PATCH_CALLERS := $(B)/patch/ipara $(B)/patch/regs $(B)/patch/alias $(B)/patch/shadow
PATCH_PROGS += $(PATCH_CALLERS) $(B)/patch/dlrace $(B)/patch/plug-rt_park.so \
	$(B)/patch/plug-rt_unpark.so $(B)/patch/plug-rt_exit.so
$(PATCH_CALLERS): $(B)/patch/%: tests/patch/%.c tests/rt/refrt.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/rt $(CFLAGS) $(WARN) -o $@ $<
# Threads run libspin.so's rt_schedule, patched at start, while plugins are patched in dlopen.
$(B)/patch/libspin.so: tests/patch/spin.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -pthread -Wl,-Bsymbolic-functions -o $@ $<
$(B)/patch/plug-%.so: tests/patch/plug.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -Wl,-Bsymbolic-functions -DNAME=$* -o $@ $<
$(B)/patch/dlrace: tests/patch/dlrace.c $(B)/patch/libspin.so
	$(CC) $(CFLAGS) $(WARN) -pthread -o $@ $< $(B)/patch/libspin.so -ldl -Wl,-rpath,'$$ORIGIN'
# A program whose rt_exit is too short to patch.
$(STATIC)/refused: tests/patch/refused.c tests/rt/refrt.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/rt $(CFLAGS) $(WARN) -o $@ $<

demo: all $(B)/tests/czmq/pingpong
	@sh scripts/demo.sh

FUZZ_PROGS := $(B)/fuzz/fuzz_decode $(B)/fuzz/fuzz_predict $(B)/fuzz/rawtrace $(B)/fuzz/bombtrace
test: all $(BENCH) $(B)/asan/tracedecode $(UNIT_TESTS) $(TEST_PROGS) $(CZMQ_PROGS) $(CAF_PROGS) $(AETHER_PROGS) \
	$(FUZZ_PROGS) $(PATCH_PROGS) $(BEAM_GUARD)
	@sh tests/run.sh

# The test's fuzz run, longer, on a corpus kept between runs; fails when a check fails.
fuzz: all $(FUZZ_PROGS)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_CORPUS=$(B)/fuzz/corpus sh tests/e2e/fuzz.sh | \
		tee $(B)/fuzz/fuzz.log
	@grep -q '^ok - fuzzer ran' $(B)/fuzz/fuzz.log && ! grep -q '^not ok' $(B)/fuzz/fuzz.log

bench: all $(BENCH) $(TAKEBACK_PAUSE_LIB) $(AETHER_PROGS) $(PATCH_PROGS) $(MANY)/prog $(MANY)/libactortrace-many.so
	@sh tests/bench/run.sh

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

# A shim built on its own links the library (pkg-config's Libs); the soname lets its DT_NEEDED
# entry match the copy actortrace preloaded, wherever that is, so no second copy is loaded.
$(B)/libactortrace.so: PRELOAD_FLAGS += -Wl,-soname,libactortrace.so

# The installed shimgen builds shims against the installed headers; built at each install, since
# PREFIX is in it.
$(B)/install/shimgen:
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -DSHIMGEN_INCLUDE='"$(PREFIX)/include/actortrace"' \
		-o $@ $(SHIMGEN_SRC)

.PHONY: install uninstall $(B)/install/shimgen
install: $(B)/actortrace $(B)/tracedecode $(B)/libactortrace.so $(B)/install/shimgen
	install -d $(I_BIN) $(I_LIB) $(I_INC) $(I_PC) $(I_MAN)/man1 $(I_MAN)/man7 $(I_DOC)/docs/shims
	install -m 755 $(B)/actortrace $(B)/tracedecode $(B)/install/shimgen $(I_BIN)/
	install -m 644 $(B)/libactortrace.so $(I_LIB)/
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

clean:
	rm -rf $(B)

# shimgen: a shim for any runtime from a spec (docs/SHIMGEN.md). Generated shims include
# actortrace.h from this tree's include/.
SHIMGEN_SRC := $(wildcard tools/shimgen/*.c)
$(B)/shimgen: $(SHIMGEN_SRC) $(wildcard tools/shimgen/*.h) include/at_events.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -DSHIMGEN_INCLUDE='"$(CURDIR)/include"' -o $@ $(SHIMGEN_SRC)
# mbox, the runtime shimgen's test traces, and its program (tests/shimgen/).
$(B)/shimgen-test/libmbox.so: tests/shimgen/mbox.c tests/shimgen/mbox.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -pthread -Wl,-soname,libmbox.so -o $@ $<
$(B)/shimgen-test/mbox_demo: tests/shimgen/mbox_demo.c tests/shimgen/mbox.h $(B)/shimgen-test/libmbox.so
	$(CC) $(CFLAGS) $(WARN) -pthread -o $@ $< $(B)/shimgen-test/libmbox.so -Wl,-rpath,'$$ORIGIN'
# The worked examples: programs on Debian's GLib and libuv (tests/shimgen/glib.spec, uv.spec).
$(B)/shimgen-test/glib_demo: tests/shimgen/glib_demo.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) $$(pkg-config --cflags glib-2.0) -o $@ $< $$(pkg-config --libs glib-2.0)
$(B)/shimgen-test/uv_demo: tests/shimgen/uv_demo.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) $$(pkg-config --cflags libuv) -o $@ $< $$(pkg-config --libs libuv)
# shimgen reads what users write: the test runs it on every spec built with the sanitizers too.
$(B)/asan/shimgen: $(SHIMGEN_SRC) $(wildcard tools/shimgen/*.h) include/at_events.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(SAN_FLAGS) $(WARN) -DSHIMGEN_INCLUDE='"$(CURDIR)/include"' -o $@ $(SHIMGEN_SRC)
SHIMGEN_TEST := $(B)/shimgen $(B)/asan/shimgen \
	$(B)/shimgen-test/libmbox.so $(B)/shimgen-test/mbox_demo \
	$(B)/shimgen-test/glib_demo $(B)/shimgen-test/uv_demo
all: $(B)/shimgen
test: $(SHIMGEN_TEST)

# The test copy can pose as a process of another host (ACTORTRACE_TEST_HOST, preload/meta.c),
# for tests/e2e/clocks.sh; the product cannot.
$(TEST_LIB): CPPFLAGS += -DAT_TEST_HOST
