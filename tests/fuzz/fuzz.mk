# tests/fuzz/fuzz.mk: libFuzzer targets for the loaders (clang; Debian's clang-14 works).
# The top-level Makefile includes it:      include tests/fuzz/fuzz.mk
# It also works alone:                      make -f tests/fuzz/fuzz.mk fuzz
#
#   make fuzz                 build every target and run each for FUZZ_SECONDS (default 60)
#   make fuzz FUZZ_SECONDS=600 FUZZ_TARGETS="image idx"
#   make fuzz FUZZ_SECONDS=0 FUZZ_RUNS=1000000   each target to a million executions
#                             (whichever bound comes first; 0 leaves a bound off)
# For each target it prints the executions, seconds, executions per second and the coverage
# reached (libFuzzer's cov: edges and ft: features, and the corpus size), appends the same
# as one line to FUZZ_STATS (default build-fuzz/fuzz-stats.tsv) and keeps the whole log in
# build-fuzz/logs/NAME.log (tests/fuzz/run_fuzz.sh). Targets run one at a time, niced.
#   make fuzz-build           build only (build-fuzz/fuzz_NAME)
#   make fuzz-seeds           rewrite the seed corpora tests/fuzz/corpus/NAME/ (small valid
#                             files made by tests/fuzz/make_seeds.c through the library)
#
# Each run reads tests/fuzz/corpus/NAME (seeds) and tests/fuzz/regressions/NAME, adds what
# it finds to build-fuzz/corpus/NAME and writes crashing inputs to build-fuzz/crashes/NAME/.
# Copy a crashing input into tests/fuzz/regressions/NAME/ once fixed:
# tests/test_fuzz_regressions.c replays every seed and regression file under `make test`.
# Everything is compiled with AddressSanitizer and UndefinedBehaviorSanitizer; stb_image is
# compiled in (instrumented) rather than taken from the uninstrumented libstb.

FUZZ_CC      ?= clang
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_MAX_LEN ?= 8192
FUZZ_TARGETS ?= image idx captions safetensors tokenizer encoder featcache classify draw eval_record \
                sentences pairs text bpe
FUZZ_RUNS    ?= 0
FUZZ_STATS   ?= $(FUZZ_BUILD)/fuzz-stats.tsv
FUZZ_NICE    ?= nice -n 10

FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS  := -std=c11 -D_DEFAULT_SOURCE -Wall -Wextra -Wno-unused-parameter -I. -g -O1 -MMD -MP \
                -fno-omit-frame-pointer $(FUZZ_SAN) \
                $(shell pkg-config --cflags libpng zlib stb libcjson 2>/dev/null)
FUZZ_LDLIBS  := $(shell pkg-config --libs libpng zlib libcjson 2>/dev/null) -lgif -lm -ldl -lpthread

# The library and every source of cli/ but the two programs' mains (the classify and draw
# targets read checkpoints through cli/classify_common.c and cli/draw_checkpoint.c): the same list the programs
# link, so a new file one of them needs is never missing here. The archive brings in only
# what a target uses.
FUZZ_LIB_SRCS := $(wildcard $(addsuffix /*.c,core seq vision datasets models)) \
                 $(filter-out cli/draw.c cli/caption.c cli/text.c,$(wildcard cli/*.c))
FUZZ_LIB_OBJS := $(FUZZ_LIB_SRCS:%.c=$(FUZZ_BUILD)/%.o) $(FUZZ_BUILD)/tests/fuzz/stb_image_impl.o
FUZZ_LIB      := $(FUZZ_BUILD)/libattend-fuzz.a
FUZZ_BINS     := $(FUZZ_TARGETS:%=$(FUZZ_BUILD)/fuzz_%)

.PHONY: fuzz fuzz-build fuzz-seeds fuzz-deps

# clang and libFuzzer's runtime through deps.sh (installed as root, else the command).
fuzz-deps:
ifneq ($(NO_DEPS),1)
	@DEPS_FUZZ=1 sh ./deps.sh
endif

fuzz-build: fuzz-deps
	@$(MAKE) --no-print-directory $(FUZZ_BINS)

# Library and helpers: sanitizers plus coverage for the fuzzer (no libFuzzer main).
$(FUZZ_BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

# stb_image 2.27 has undefined behaviour with no memory effect on corrupt input: NULL + 0
# and memcpy(NULL, p, 0) for an empty PNG IDAT chunk, and shifts by more than 31 bits
# when a JPEG's bit buffer runs dry (x86 masks the count: wrong bits, no wild access).
# Those checks are off for stb_image only (they cannot be fixed outside it); every other
# UBSan check and AddressSanitizer still cover it.
$(FUZZ_BUILD)/tests/fuzz/stb_image_impl.o: tests/fuzz/stb_image_impl.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fno-sanitize=pointer-overflow,nonnull-attribute,shift \
	  -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_LIB): $(FUZZ_LIB_OBJS)
	rm -f $@ && ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: $(FUZZ_BUILD)/tests/fuzz/fuzz_%.o $(FUZZ_BUILD)/tests/fuzz/fuzz_util.o $(FUZZ_LIB)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer $^ $(FUZZ_LDLIBS) -o $@

fuzz: fuzz-build
	@FUZZ_BUILD='$(FUZZ_BUILD)' FUZZ_TARGETS='$(FUZZ_TARGETS)' FUZZ_SECONDS='$(FUZZ_SECONDS)' \
	  FUZZ_RUNS='$(FUZZ_RUNS)' FUZZ_MAX_LEN='$(FUZZ_MAX_LEN)' FUZZ_NICE='$(FUZZ_NICE)' \
	  FUZZ_STATS='$(FUZZ_STATS)' sh tests/fuzz/run_fuzz.sh

# Seeds: written through the library itself (plain cc build, no sanitizers needed).
$(FUZZ_BUILD)/make_seeds: tests/fuzz/make_seeds.c $(FUZZ_LIB_SRCS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(filter-out $(FUZZ_SAN),$(FUZZ_CFLAGS)) tests/fuzz/make_seeds.c $(FUZZ_LIB_SRCS) \
	  $(shell pkg-config --libs stb 2>/dev/null) $(FUZZ_LDLIBS) -o $@

fuzz-seeds: fuzz-deps
	@$(MAKE) --no-print-directory $(FUZZ_BUILD)/make_seeds
	$(FUZZ_BUILD)/make_seeds tests/fuzz/corpus

-include $(FUZZ_LIB_OBJS:.o=.d) $(FUZZ_BINS:$(FUZZ_BUILD)/fuzz_%=$(FUZZ_BUILD)/tests/fuzz/fuzz_%.d) \
  $(FUZZ_BUILD)/tests/fuzz/fuzz_util.d
