# attend: Show-Attend-Tell and DRAW in C11.
#
#   make demo     set up, fetch data, build, train small models and write their report pages
#   make test     set up, build and run the whole suite (ends "N passed, N failed")
#   make check    the suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   make valgrind the suite (and the CLI programs it spawns) under valgrind memcheck;
#                 slow, not part of make test: VG_TESTS="test_args test_ops" for a subset,
#                 VG_CHILDREN=0 to run the spawned bin/draw, bin/caption natively
#   make bench    speed and memory benchmarks against PyTorch (installs the reference side,
#                 python3-torch and python3-torchvision, through deps.sh when missing)
#   make bench-deps  the benchmarks' peers that are not Debian packages: ONNX Runtime's CPU
#                 library (npm's onnxruntime-node $(ORT_VERSION), --ignore-scripts: its install
#                 script fetches from a host these machines cannot reach) into bench-deps/ort;
#                 make bench runs it first
#   make parity-encoders  the pretrained encoders against torchvision at full width (random
#                 weights through bench/reference/pth_to_safetensors.py; needs PyTorch,
#                 about 2 GB of disk under $(BUILD)/parity-encoders; not part of make test)
#   make reproduce every scripted experiment with its HTML report, then
#                 experiments/results/index.html; REPRODUCE=quick (minutes) or full (the
#                 published settings), resumable (experiments/reproduce.sh)
#   make test-browser  the reports (the demo's included) in headless Chromium (installs
#                 it through deps.sh when missing); screenshots in build/browser/screenshots/
#   make deps     install missing Debian packages (root) or print the command
#   make data     fetch MNIST, Fashion-MNIST and UCI's labelled sentences, and extract the
#                 Bible verse pairs (SWORD modules), into data/
#
# Variables: BUILD=build (output folder), SAN=1 (sanitizers), VG=1 (the valgrind build),
# NO_DEPS=1 (skip set-up).

CC      ?= cc
BUILD   ?= build
OPT     ?= -O3 -march=native
CFLAGS  := -std=c11 -D_DEFAULT_SOURCE -Wall -Wextra -Wno-unused-parameter -Wno-format-zero-length -I. -MMD -MP -g
# Nothing here reads floating-point exception flags or errno after a math call. Without
# these two, GCC 12 will not turn a float compare-and-select (a clamp) into a vector blend,
# nor vectorise sqrtf, so loops like Adam's update and the Box-Muller pairs ran one element
# at a time. Neither changes a computed value: no reassociation, no finite-math assumption.
CFLAGS  += -fno-trapping-math -fno-math-errno
LDLIBS  := -lm -ldl -lpthread

ifeq ($(SAN),1)
  BUILD  := build-san
  OPT    := -O1 -fno-omit-frame-pointer
  CFLAGS += -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=undefined,float-cast-overflow
  LDFLAGS += -fsanitize=address,undefined
endif
# Valgrind 3.19 cannot decode AVX-512: no -march=native; -O1 keeps stacks readable.
ifeq ($(VG),1)
  BUILD  := build-vg
  OPT    := -O1
endif
CFLAGS += $(OPT)
JOBS   ?= $(shell nproc 2>/dev/null || echo 2)

# --- dependencies: one line each, found or missing ------------------------------------
# name | how we probe | Debian package
PKGS := libpng zlib stb libcjson
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CFLAGS += $(PKG_CFLAGS)
LDLIBS += $(PKG_LIBS) -lgif
# Open MPI (core/dist.c): with it both programs also run under mpirun; without it they
# build as before and refuse to start under mpirun.
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS   := $(shell pkg-config --libs ompi-c 2>/dev/null)
ifneq ($(MPI_LIBS),)
  CFLAGS += -DATTEND_MPI $(MPI_CFLAGS)
  LDLIBS += $(MPI_LIBS)
endif

# --- sources ---------------------------------------------------------------------------
MODULES  := core seq vision datasets models
LIB_SRCS := $(wildcard $(addsuffix /*.c,$(MODULES)))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
LIB      := $(BUILD)/libattend.a

PROGRAMS := draw caption text
CLI_SRCS := $(filter-out $(PROGRAMS:%=cli/%.c),$(wildcard cli/*.c))
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/%.o)
BINS     := $(PROGRAMS:%=bin/%)
ifeq ($(SAN),1)
  BINS   := $(PROGRAMS:%=$(BUILD)/bin/%)
endif
ifeq ($(VG),1)
  BINS   := $(PROGRAMS:%=$(BUILD)/bin/%)
endif

TEST_SUPPORT_SRCS := $(wildcard tests/support/*.c)
TEST_SUPPORT_OBJS := $(TEST_SUPPORT_SRCS:%.c=$(BUILD)/%.o)
TEST_SRCS := $(wildcard tests/test_*.c)
TESTS     := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)

BENCH_SRCS := $(wildcard bench/bench_*.c)
BENCH_SUPPORT_SRCS := $(wildcard bench/support/*.c)
BENCH_SUPPORT_OBJS := $(BENCH_SUPPORT_SRCS:%.c=$(BUILD)/%.o)
BENCHES    := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%) $(BUILD)/bench/parity_encoders

# Helper programs that `make data` runs (not installed in bin/).
TOOLS := $(BUILD)/tools/bible_pairs

.PHONY: all build build-suite deps data test check valgrind bench bench-deps demo fixtures parity-encoders clean \
        FORCE reproduce test-browser
.DEFAULT_GOAL := all

all: build
build: $(BINS) $(TESTS) $(BENCHES) $(TOOLS)
build-suite: $(BINS) $(TESTS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# -std=c11 turns floating-point contraction off; the sparse read's kernels (sums of 16-lane
# rows, vision/filterbank_sparse.c) are multiply-adds, and fused they take about half the
# instructions. Results differ from the unfused ones in the last bits only.
$(BUILD)/vision/filterbank_sparse.o: CFLAGS += -ffp-contract=fast

# tests/test_fuzz_seeds.c writes a JPEG seed through stb_image_write, whose JPEG writer
# shifts a signed int left past its range (stbiw__jpg_writeBits, stb_image_write.h 1.16):
# undefined behaviour in the third-party header with no effect on the bytes on x86, which
# UBSan's shift check would stop at under `make check`. That check is off for this one unit.
$(BUILD)/tests/test_fuzz_seeds.o: CFLAGS += -fno-sanitize=shift

# The commit the programs are built from, for the run records of cli/run_info.c: the
# object is rebuilt when it changes ("-modified": the work tree had changes; "unknown"
# outside a git checkout).
ATTEND_COMMIT := $(shell git describe --always --abbrev=12 --dirty=-modified 2>/dev/null || echo unknown)
$(BUILD)/cli/run_info.o: CFLAGS += -DATTEND_COMMIT='"$(ATTEND_COMMIT)"'
$(BUILD)/cli/run_info.o: $(BUILD)/commit.txt
$(BUILD)/commit.txt: FORCE
	@mkdir -p $(dir $@)
	@echo '$(ATTEND_COMMIT)' | cmp -s - $@ || echo '$(ATTEND_COMMIT)' > $@
FORCE:

$(LIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

bin/%: $(BUILD)/cli/%.o $(CLI_OBJS) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/bin/%: $(BUILD)/cli/%.o $(CLI_OBJS) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# The objects the pattern rules chain through are kept: without this make deletes them as
# intermediates after a build, and the next build compiles and links them all again. (One
# .SECONDARY with prerequisites anywhere, tests/fuzz/fuzz.mk included, would turn this
# into a list of none.)
.SECONDARY:

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(TEST_SUPPORT_OBJS) $(CLI_OBJS) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(BENCH_SUPPORT_OBJS) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tools/%: $(BUILD)/datasets/tools/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# --- set-up ------------------------------------------------------------------------------
deps:
ifneq ($(NO_DEPS),1)
	@sh ./deps.sh
endif

# The Bible pairs' extraction tool is built inside the recipe, after deps.sh has installed
# the headers it compiles against (a prerequisite could be built first under make -j).
data: deps
ifneq ($(NO_DEPS),1)
	@$(MAKE) --no-print-directory -j$(JOBS) $(BUILD)/tools/bible_pairs
	@BIBLE_PAIRS=$(BUILD)/tools/bible_pairs sh datasets/fetch.sh data
endif

# --- the suite ---------------------------------------------------------------------------
test: data
	@$(MAKE) --no-print-directory -j$(JOBS) build
	@sh tests/run.sh $(BUILD) bin

check: data
	@$(MAKE) --no-print-directory -j$(JOBS) SAN=1 build
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  sh tests/run.sh build-san build-san/bin

# Memcheck on every test program and every bin/draw, bin/caption they start (through
# wrappers, see tests/run.sh). Errors in any process fail the test; leaks count when
# definitely lost. tests/valgrind.supp holds the (commented) library false positives.
# OpenBLAS runs the kernel core/gemm.c picks from cpuid, which under valgrind sees the
# virtual CPU (no AVX-512): HASWELL on an AVX-512 host.
VALGRIND       ?= valgrind
VALGRIND_FLAGS := --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
                  --track-origins=yes --num-callers=30 --vgdb=no \
                  --suppressions=$(CURDIR)/tests/valgrind.supp
VG_TESTS       ?=
VG_CHILDREN    ?= 1
valgrind: data
ifneq ($(NO_DEPS),1)
	@DEPS_VALGRIND=1 sh ./deps.sh
endif
	@command -v $(VALGRIND) >/dev/null 2>&1 || { echo "valgrind: '$(VALGRIND)' not found"; exit 1; }
	@$(MAKE) --no-print-directory -j$(JOBS) VG=1 build-suite
	@ATTEND_VALGRIND="$(VALGRIND) $(VALGRIND_FLAGS)" ATTEND_VALGRIND_CHILDREN=$(VG_CHILDREN) nice -n 10 sh tests/run.sh build-vg build-vg/bin $(VG_TESTS)

ORT_VERSION := 1.30.0
ORT_DIR     := bench-deps/ort
bench-deps:
	@if [ -f $(ORT_DIR)/node_modules/onnxruntime-node/package.json ]; then \
	    echo "bench-deps: onnxruntime-node in $(ORT_DIR)"; \
	elif command -v npm >/dev/null 2>&1; then \
	    mkdir -p $(ORT_DIR) && npm install --prefix $(ORT_DIR) --ignore-scripts --no-audit \
	        --no-fund onnxruntime-node@$(ORT_VERSION) || \
	        echo "bench-deps: npm could not install onnxruntime-node; make bench skips ONNX Runtime"; \
	else \
	    echo "bench-deps: no npm (apt-get install npm); make bench skips ONNX Runtime"; \
	fi

bench: data
ifneq ($(NO_DEPS),1)
	@DEPS_REFERENCE=1 sh ./deps.sh
endif
	@$(MAKE) --no-print-directory bench-deps
	@$(MAKE) --no-print-directory -j$(JOBS) build
	@sh bench/run.sh $(BUILD)

demo: data
	@$(MAKE) --no-print-directory -j$(JOBS) build
	@sh experiments/demo.sh

REPRODUCE ?= quick
reproduce: data
	@$(MAKE) --no-print-directory -j$(JOBS) $(PROGRAMS:%=bin/%)
	@REPRODUCE=$(REPRODUCE) sh experiments/reproduce.sh

test-browser:
ifneq ($(NO_DEPS),1)
	@DEPS_BROWSER=1 sh ./deps.sh
endif
	@$(MAKE) --no-print-directory -j$(JOBS) $(PROGRAMS:%=bin/%)
	@sh tests/browser/run.sh bin $(BUILD)/browser

fixtures:
ifneq ($(NO_DEPS),1)
	@DEPS_REFERENCE=1 sh ./deps.sh
endif
	/usr/bin/python3 bench/reference/make_fixtures.py tests/fixtures

parity-encoders:
ifneq ($(NO_DEPS),1)
	@DEPS_REFERENCE=1 sh ./deps.sh
endif
	@$(MAKE) --no-print-directory -j$(JOBS) $(BUILD)/bench/parity_encoders
	/usr/bin/python3 bench/reference/encoders_ref.py full $(BUILD)/parity-encoders
	$(BUILD)/bench/parity_encoders $(BUILD)/parity-encoders

clean:
	rm -rf build build-san build-vg bin

-include $(TOOLS:$(BUILD)/tools/%=$(BUILD)/datasets/tools/%.d) $(LIB_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(PROGRAMS:%=$(BUILD)/cli/%.d) $(TESTS:=.d) \
         $(BENCHES:=.d) $(TEST_SUPPORT_OBJS:.o=.d) $(BENCH_SUPPORT_OBJS:.o=.d)

include tests/fuzz/fuzz.mk
