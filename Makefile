# joseki — build, test, benchmark, sanitize, fuzz.
#
# Sources are discovered: every module folder's *.c goes into build/libjoseki.a,
# tools/*.c into the ./joseki binary, every tests/<module>/test_*.c becomes one
# cmocka binary under build/tests/, every tests/fuzz/fuzz_*.c a libFuzzer target.

CC       ?= cc
OPT      ?= -O2 -g
# Portable by default: ./joseki runs on any CPU of this architecture, so it can be
# copied to worker nodes (docs/worker.md). NATIVE=1 (or `make native`) tunes it for
# this machine's CPU instead (-march=native: the benchmarks' build), and a binary
# built so dies with SIGILL on a CPU without this one's instructions.
ifeq ($(NATIVE),1)
ARCH     ?= -march=native
endif
ARCH     ?=
CFLAGS   ?= $(OPT)
JCFLAGS   = -std=c11 -Wall -Wextra -Werror -D_GNU_SOURCE -I. $(ARCH) -pthread
LIBS      = -llmdb -lcurl -ljansson -lmicrohttpd -larchive -lpthread -lm
TESTLIBS  = -lcmocka

BUILD    ?= build
MODULES   = shogi bookdb ingest search bookgen cluster play minimax server
LIB_SRC   = $(foreach m,$(MODULES),$(wildcard $(m)/*.c))
TOOL_SRC  = $(wildcard tools/*.c)
TEST_SRC  = $(wildcard tests/*/test_*.c)
TSUP_SRC  = $(wildcard tests/support/*.c)
FUZZ_SRC  = $(wildcard tests/fuzz/fuzz_*.c)

WWW_SRC   = $(sort $(wildcard server/www/*))
# The explorer's files, embedded: a C file generated from server/www/.
LIB_OBJ   = $(LIB_SRC:%.c=$(BUILD)/%.o) $(BUILD)/server/assets_data.o
TOOL_OBJ  = $(TOOL_SRC:%.c=$(BUILD)/%.o)
TSUP_OBJ  = $(TSUP_SRC:%.c=$(BUILD)/%.o)
TEST_BIN  = $(TEST_SRC:%.c=$(BUILD)/%)
LIB       = $(BUILD)/libjoseki.a
DEPS_OK   = $(BUILD)/.deps-ok

.PHONY: native FORCE soak all test test-slurm bench bench-book bench-cycle bench-scale bench-strength tune asan fuzz fuzz-ci demo clean format format-check deps
# Keep object files make would otherwise treat as intermediate and delete.
.SECONDARY:

all: joseki

# Missing Debian packages are installed before anything is compiled.
$(DEPS_OK): tools/install-deps.sh
	@tools/install-deps.sh
	@mkdir -p $(BUILD) && touch $@

deps: $(DEPS_OK)

# The compiler and its flags, kept in the build tree: objects built with other
# ones (a portable build after a native one, or the other way round) are built
# again instead of being linked together.
FLAGS_STAMP = $(BUILD)/.flags
$(FLAGS_STAMP): FORCE
	@mkdir -p $(BUILD)
	@echo '$(CC) $(JCFLAGS) $(CFLAGS)' | cmp -s - $@ || echo '$(CC) $(JCFLAGS) $(CFLAGS)' > $@
FORCE:

# ./joseki for this machine's CPU (see ARCH above).
native:
	$(MAKE) NATIVE=1 joseki

$(BUILD)/%.o: %.c $(FLAGS_STAMP) | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(JCFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/server/assets_data.c: $(WWW_SRC) tools/embed.sh | $(DEPS_OK)
	@mkdir -p $(dir $@)
	tools/embed.sh $@ $(WWW_SRC)

$(BUILD)/server/assets_data.o: $(BUILD)/server/assets_data.c $(FLAGS_STAMP)
	$(CC) $(JCFLAGS) $(CFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

joseki: $(TOOL_OBJ) $(LIB)
	$(CC) $(JCFLAGS) $(CFLAGS) -o $@ $(TOOL_OBJ) $(LIB) $(LIBS)

$(BUILD)/tests/%: tests/%.c $(TSUP_OBJ) $(LIB) $(FLAGS_STAMP) | $(DEPS_OK)
	@mkdir -p $(dir $@)
	$(CC) $(JCFLAGS) $(CFLAGS) -MMD -MP -o $@ $< $(TSUP_OBJ) $(LIB) $(LIBS) $(TESTLIBS)

# The tests run the real joseki binary (and helper programs: build/memhold for
# tools/bench-scale.sh) as child processes:
# a copy made for this run, so that relinking ./joseki meanwhile (another make)
# cannot pull it from under them ("Text file busy", or a half-written binary).
test: format-check joseki $(BUILD)/memhold $(TEST_BIN)
	@mkdir -p $(BUILD)/test-bin
	@cp joseki $(BUILD)/test-bin/joseki.new && mv -f $(BUILD)/test-bin/joseki.new $(BUILD)/test-bin/joseki
	@JOSEKI=$(CURDIR)/$(BUILD)/test-bin/joseki BUILD=$(BUILD) tests/run.sh $(TEST_BIN)

# deploy/slurm/joseki-worker.sbatch under a real one-node Slurm cluster set up
# on this machine (tools/test_slurm.sh: root, installs slurmctld, slurmd and
# munge when missing); not part of make test.
test-slurm: joseki
	@JOSEKI=$(CURDIR)/joseki tools/test_slurm.sh

bench: joseki
	@tools/bench.sh

# The built-in engine against fairy-stockfish at equal time (tools/bench-strength.sh):
# SPRT at 50 ms a move, then a shorter confirmation at 200 ms. Long; not part of make test.
bench-strength: joseki
	@tools/bench-strength.sh

# The evaluation's tuner (tools/tune/README.md): build/tune fits search/eval_weights.c.
tune: $(BUILD)/tune
$(BUILD)/tune: tools/tune/tune.c $(LIB) | $(DEPS_OK)
	$(CC) $(JCFLAGS) $(CFLAGS) -o $@ $< $(LIB) $(LIBS)

# kill -9 soak (tools/soak.sh): SOAK_KILLS (default 100) random SIGKILLs over
# every writing command, each followed by check and a resumed run; the books
# must equal one built without kills. About 3 minutes; not part of make test.
soak: joseki
	@JOSEKI=$(CURDIR)/joseki tools/soak.sh

# Address + undefined-behaviour sanitizers, with clang, in a separate tree.
asan:
	$(MAKE) BUILD=build-asan CC=clang OPT="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all" test

# libFuzzer targets; each runs FUZZ_SECONDS (default 60) seconds. The library
# is compiled once with the fuzzer's coverage and the sanitizers
# (build-fuzz/libjoseki.a), each target links it.
FUZZ_SECONDS ?= 60
FUZZ_BIN = $(FUZZ_SRC:tests/fuzz/%.c=build-fuzz/%)
FUZZ_CFLAGS = -std=c11 -D_GNU_SOURCE -I. $(ARCH) -pthread -O1 -g
FUZZ_OBJ = $(LIB_SRC:%.c=build-fuzz/obj/%.o) build-fuzz/obj/assets_data.o
build-fuzz/obj/%.o: %.c | $(DEPS_OK)
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -MMD -MP -c $< -o $@
build-fuzz/obj/assets_data.o: $(BUILD)/server/assets_data.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined -c $< -o $@
build-fuzz/libjoseki.a: $(FUZZ_OBJ)
	@rm -f $@
	ar rcs $@ $^
build-fuzz/%: tests/fuzz/%.c build-fuzz/libjoseki.a $(wildcard tests/fuzz/*.h) | $(DEPS_OK)
	@mkdir -p build-fuzz
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -o $@ $< build-fuzz/libjoseki.a \
	    $(LIBS)
-include $(FUZZ_OBJ:.o=.d)
# The option parser's target compiles tools/cli_opt.c itself (tools/ is not in the library).
build-fuzz/fuzz_cli_opts: tools/cli_opt.c tools/cli_opt.h
fuzz: $(FUZZ_BIN)
	@tools/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_BIN)

# CI's short run: every target 10 s on top of the kept corpus (tests/fuzz/corpus).
fuzz-ci: $(FUZZ_BIN)
	@tools/fuzz.sh 10 $(FUZZ_BIN)

demo: joseki
	@tools/demo.sh

# What a grown book is worth in games, with Debian's fairy-stockfish (about
# 45 minutes on 2 idle cores; tools/bench-book.sh says how to size it).
bench-book: joseki
	@tools/bench-book.sh

# Shiba's cycle against the opponent the book is made for, then against one it
# never met (one to three hours on 2 cores; tools/bench-cycle.sh says how to
# size it; BENCH_CYCLE_SMOKE=1 is CI's short form, tests/play/test_bench_cycle.c).
bench-cycle: joseki
	@tools/bench-cycle.sh

# Every whole-book command on a synthetic book of SCALE_POSITIONS (default 100 M) and of
# SCALE_SMALL (10 M): wall, CPU, peak anonymous memory, disk, and how each grows between
# the two (tools/bench-scale.sh; hours at 100 M; SCALE_SMOKE=1 is CI's short form,
# tests/tools/test_bench_scale.c; MEMHOLD: another hold program). Not part of make test.
bench-scale: joseki $(BUILD)/memhold
	@JOSEKI=$(CURDIR)/joseki MEMHOLD="$${MEMHOLD:-$(CURDIR)/$(BUILD)/memhold}" tools/bench-scale.sh

# A memory hold that makes the machine look smaller to the benchmarks (SCALE_HOLD=1,
# BENCH_CLUSTER_RAM): tools/memhold/memhold.c.
$(BUILD)/memhold: tools/memhold/memhold.c | $(DEPS_OK)
	@mkdir -p $(BUILD)
	$(CC) $(JCFLAGS) $(CFLAGS) -o $@ $<

FORMAT_SRC = $(LIB_SRC) $(TOOL_SRC) tools/tune/tune.c tools/memhold/memhold.c $(TEST_SRC) $(TSUP_SRC) $(FUZZ_SRC) $(wildcard */*.h tests/*/*.h)
format:
	clang-format -i $(FORMAT_SRC)

# make test starts here: the tree is as make format leaves it.
format-check: | $(DEPS_OK)
	@clang-format --dry-run -Werror $(FORMAT_SRC) 2>&1 | head -n 20; \
	if ! clang-format --dry-run -Werror $(FORMAT_SRC) >/dev/null 2>&1; then \
		echo "format-check: the sources differ from clang-format's layout: run make format"; exit 1; fi

clean:
	rm -rf build build-asan build-fuzz joseki

-include $(LIB_OBJ:.o=.d) $(TOOL_OBJ:.o=.d) $(TSUP_OBJ:.o=.d) $(TEST_BIN:=.d)
