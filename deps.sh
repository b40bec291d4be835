#!/bin/sh
# deps.sh: find what the toolkit needs, one line per dependency (found / missing).
# Missing Debian packages are installed with apt-get when run as root; otherwise the
# exact command is printed and the script exits non-zero. `make deps` runs this;
# DEPS_BROWSER=1 (set by `make test-browser`) adds Chromium; DEPS_REFERENCE=1 (set by
# `make bench`, `make fixtures` and `make parity-encoders`) adds the PyTorch side of the
# references (Debian's python3-torch, python3-torchvision, python3-numpy); DEPS_FUZZ=1 (set
# by `make fuzz` and `make fuzz-seeds`) adds clang with libFuzzer; DEPS_VALGRIND=1 (set by
# `make valgrind`) adds valgrind.
set -u
missing=""
say() { printf '  %-22s %s\n' "$1" "$2"; }

has() { command -v "$1" >/dev/null 2>&1; }
have_pc() { command -v pkg-config >/dev/null 2>&1 && pkg-config --exists "$1" 2>/dev/null; }
trial() { # trial compile: header and library
    command -v cc >/dev/null 2>&1 || return 1
    printf '#include <%s>\nint main(void){return 0;}\n' "$1" > "${TMPDIR:-/tmp}/attend_probe.c"
    cc "${TMPDIR:-/tmp}/attend_probe.c" -o "${TMPDIR:-/tmp}/attend_probe" "$2" 2>/dev/null
    status=$?
    rm -f "${TMPDIR:-/tmp}/attend_probe.c" "${TMPDIR:-/tmp}/attend_probe"
    return $status
}
has_mpi() { have_pc ompi-c && has mpirun; }
has_libfuzzer() { # clang links a fuzz target (the runtime is a package of its own)
    has clang || return 1
    printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){return 0;}\n' > "${TMPDIR:-/tmp}/attend_fuzz_probe.c"
    clang -fsanitize=fuzzer "${TMPDIR:-/tmp}/attend_fuzz_probe.c" -o "${TMPDIR:-/tmp}/attend_fuzz_probe" 2>/dev/null
    status=$?
    rm -f "${TMPDIR:-/tmp}/attend_fuzz_probe.c" "${TMPDIR:-/tmp}/attend_fuzz_probe"
    return $status
}
check() { # name, package, test...
    name=$1; pkg=$2; shift 2
    if "$@"; then say "$name" found; else say "$name" "missing (Debian package $pkg)"; missing="$missing $pkg"; fi
}

echo "dependencies:"
check "C compiler"     gcc                   has cc
check "pkg-config"     pkg-config            has pkg-config
check "OpenBLAS"       libopenblas-dev       have_pc openblas
check "libpng"         libpng-dev            have_pc libpng
check "zlib"           zlib1g-dev            have_pc zlib
check "stb_image"      libstb-dev            have_pc stb
check "cJSON"          libcjson-dev          have_pc libcjson
check "giflib"         libgif-dev            trial gif_lib.h -lgif
check "Open MPI"       "libopenmpi-dev openmpi-bin" has_mpi
check "npm"            npm                   has npm
check "Fashion-MNIST"  dataset-fashion-mnist test -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
# The Bible verse pairs of `text translate --data bible-en-es` (datasets/bible.h): two SWORD
# modules and mod2imp, which exports a module as text by reference.
check "SWORD mod2imp"  libsword-utils        has mod2imp
check "WEB (SWORD)"    sword-text-web        test -f /usr/share/sword/mods.d/engWEB2015eb.conf
check "RV 1909 (SWORD)" sword-text-sparv     test -f /usr/share/sword/mods.d/spaRV1909eb.conf
# Only when asked (make test-browser): headless Chromium for the reports' browser test.
if [ "${DEPS_BROWSER:-0}" = 1 ]; then
    check "Chromium"       chromium              has chromium
fi
# Only when asked (make bench, make fixtures, make parity-encoders): the PyTorch references,
# run with Debian's /usr/bin/python3.
has_py() { [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import $1" >/dev/null 2>&1; }
if [ "${DEPS_REFERENCE:-0}" = 1 ]; then
    check "python3"        python3               test -x /usr/bin/python3
    check "NumPy"          python3-numpy         has_py numpy
    check "PyTorch"        python3-torch         has_py torch
    check "torchvision"    python3-torchvision   has_py torchvision
fi

if [ "${DEPS_FUZZ:-0}" = 1 ]; then
    check "clang, libFuzzer"  "clang libclang-rt-dev" has_libfuzzer
fi
if [ "${DEPS_VALGRIND:-0}" = 1 ]; then
    check "valgrind"       valgrind              has valgrind
fi

[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q && apt-get install -y -q --no-install-recommends $missing || {
        echo "deps: apt-get failed; run: apt-get install$missing" >&2; exit 1; }
    exit 0
fi
echo "deps: missing packages; run as root:  apt-get update && apt-get install -y$missing" >&2
exit 1
