# actortrace: one build for everything; outputs go to build/.
#   make         the library, tracedecode, the reference runtime and its programs
#   make demo    trace the pingpong example and show the start of its JSONL
#   make test    every test (unit, sanitizers, end-to-end, fault, fuzz); ends "N passed, N failed"
#   make bench   benchmarks; they print figures, they assert nothing
#   make fuzz    fuzz tracedecode for FUZZ_SECONDS (600) from real traces; keeps what it finds in
#                build/fuzz/corpus, crashes in build/fuzz/artifacts

CC      ?= cc
CFLAGS  ?= -O2 -g
WARN    := -Wall -Wextra -Werror -std=gnu11
CPPFLAGS := -Iinclude -D_GNU_SOURCE
B       := build

DEPS_OK := $(B)/.deps-ok

COMMON_SRC  := $(wildcard common/*.c)
# The product's shims; shim/refrt.c wraps the test-only reference runtime, so it goes only into
# the test copy of the library (TEST_LIB).
PRELOAD_SRC := $(wildcard preload/*.c) $(filter-out shim/refrt.c,$(wildcard shim/*.c))
DECODER_SRC := $(wildcard decoder/*.c)
RT_SRC      := tests/rt/runtime.c
EXAMPLES    := $(patsubst tests/rt/examples/%.c,$(B)/examples/%,$(wildcard tests/rt/examples/*.c))
UNIT_TESTS  := $(patsubst tests/unit/%.c,$(B)/tests/%,$(wildcard tests/unit/*.c))
TEST_PROGS  := $(patsubst tests/progs/%.c,$(B)/tests/progs/%,$(wildcard tests/progs/*.c))
CZMQ_PROGS  := $(patsubst tests/czmq/%.c,$(B)/tests/czmq/%,$(wildcard tests/czmq/*.c))

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
all: $(B)/libactortrace.so $(B)/tracedecode $(B)/librefrt.so $(TEST_LIB) $(EXAMPLES)

deps: $(DEPS_OK)
$(DEPS_OK): scripts/install-deps.sh
	@sh scripts/install-deps.sh
	@mkdir -p $(B) && touch $@

$(B)/libactortrace.so: $(PRELOAD_SRC) $(COMMON_SRC) $(wildcard include/*.h preload/*.h shim/*.h shim/*.map) | $(DEPS_OK)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) $(PRELOAD_FLAGS) -shared -Wl,-z,now -o $@ \
		$(PRELOAD_SRC) $(COMMON_SRC) -lzstd -ldl -Wl,-z,defs $(SHIM_VERSIONS)

# The test copy: the product plus the shim of the reference runtime, which the tests and
# examples on refrt are traced with.
$(TEST_LIB): $(PRELOAD_SRC) shim/refrt.c $(COMMON_SRC) $(wildcard include/*.h preload/*.h shim/*.map tests/rt/refrt.h) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/rt $(CFLAGS) $(WARN) $(PRELOAD_FLAGS) -shared -Wl,-z,now -o $@ \
		$(PRELOAD_SRC) shim/refrt.c $(COMMON_SRC) -lzstd -ldl -Wl,-z,defs $(SHIM_VERSIONS)

$(B)/tracedecode: $(DECODER_SRC) $(COMMON_SRC) $(wildcard include/*.h decoder/*.h) | $(DEPS_OK)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $(DECODER_SRC) $(COMMON_SRC) -lzstd

$(B)/asan/tracedecode: $(DECODER_SRC) $(COMMON_SRC) $(wildcard include/*.h decoder/*.h) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(SAN_FLAGS) $(WARN) -o $@ $(DECODER_SRC) $(COMMON_SRC) -lzstd

# The reference runtime: default visibility and no -Bsymbolic, so its calls to its own
# exported functions go through the PLT, as in the real runtimes we trace.
$(B)/librefrt.so: $(RT_SRC) tests/rt/refrt.h | $(DEPS_OK)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC -shared -pthread -Wl,-soname,librefrt.so -o $@ $(RT_SRC)

$(B)/examples/%: tests/rt/examples/%.c tests/rt/examples/args.h tests/rt/refrt.h $(B)/librefrt.so
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/rt $(CFLAGS) $(WARN) -pthread -o $@ $< $(B)/librefrt.so \
		-Wl,-rpath,'$$ORIGIN/..'

# Unit tests link the common code and the piece they test, built with the sanitizers.
$(B)/tests/%: tests/unit/%.c $(wildcard tests/unit/*.h) $(COMMON_SRC) $(DECODER_SRC) $(wildcard include/*.h decoder/*.h) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Idecoder $(SAN_FLAGS) $(WARN) -o $@ $< $(COMMON_SRC) \
		$(filter-out decoder/main.c,$(DECODER_SRC)) -lzstd

# The fuzzer of tracedecode, and the tool that stores a seed trace's payloads raw.
$(B)/fuzz/fuzz_decode: tests/fuzz/fuzz_decode.c tests/unit/jsoncheck.h $(COMMON_SRC) $(DECODER_SRC) $(wildcard include/*.h decoder/*.h) | $(DEPS_OK)
	@mkdir -p $(@D)
	clang $(CPPFLAGS) -Idecoder -Itests/unit $(FUZZ_FLAGS) $(WARN) -o $@ $< $(COMMON_SRC) \
		$(filter-out decoder/main.c,$(DECODER_SRC)) -lzstd -lpthread
$(B)/fuzz/rawtrace: tests/fuzz/rawtrace.c $(COMMON_SRC) $(wildcard include/*.h) | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $< $(COMMON_SRC) -lzstd

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
	$(B)/bench/czmq_pingpong
$(B)/bench/libnop.so: tests/bench/nop.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(WARN) -fPIC -shared -Wl,-soname,libnop.so -o $@ $<
$(B)/bench/hotpath: tests/bench/hotpath.c $(B)/bench/libnop.so
	$(CC) $(CFLAGS) $(WARN) -o $@ $< $(B)/bench/libnop.so -Wl,-rpath,'$$ORIGIN'
$(B)/bench/libactortrace-bench.so: $(PRELOAD_SRC) $(COMMON_SRC) tests/bench/nop_shim.c $(wildcard include/*.h preload/*.h shim/*.map)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Itests/rt $(CFLAGS) $(WARN) $(PRELOAD_FLAGS) -shared -Wl,-z,now -o $@ \
		$(PRELOAD_SRC) $(COMMON_SRC) tests/bench/nop_shim.c -lzstd -ldl -Wl,-z,defs $(SHIM_VERSIONS)
# Sends DEPTH frames down, for the cost of a captured stack (tests/bench/stacks.sh).
BENCH += $(B)/bench/stackdepth
$(B)/bench/stackdepth: tests/bench/stackdepth.c $(B)/bench/libnop.so
	$(CC) $(CFLAGS) $(WARN) -o $@ $< $(B)/bench/libnop.so -Wl,-rpath,'$$ORIGIN'
# CZMQ round trips per second, run untraced and traced.
$(B)/bench/czmq_pingpong: tests/bench/czmq_pingpong.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -pthread -o $@ $< -lczmq -lzmq

# Programs on CZMQ that tests/e2e/czmq.sh traces. -rdynamic: the shim names an actor after its
# task function's dynamic symbol.
$(B)/tests/czmq/%: tests/czmq/%.c | $(DEPS_OK)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -rdynamic -pthread -o $@ $< -lczmq -lzmq

demo: all
	@sh scripts/demo.sh

FUZZ_PROGS := $(B)/fuzz/fuzz_decode $(B)/fuzz/rawtrace
test: all $(BENCH) $(B)/asan/tracedecode $(UNIT_TESTS) $(TEST_PROGS) $(CZMQ_PROGS) $(FUZZ_PROGS)
	@sh tests/run.sh

# The test's fuzz run, longer, on a corpus kept between runs; fails when a check fails.
fuzz: all $(FUZZ_PROGS)
	@FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_CORPUS=$(B)/fuzz/corpus sh tests/e2e/fuzz.sh | \
		tee $(B)/fuzz/fuzz.log
	@grep -q '^ok - fuzzer ran' $(B)/fuzz/fuzz.log && ! grep -q '^not ok' $(B)/fuzz/fuzz.log

bench: all $(BENCH)
	@sh tests/bench/run.sh

clean:
	rm -rf $(B)
