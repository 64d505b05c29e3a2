#!/usr/bin/env bash
# build.sh - installs the dependencies, configures (Release, Ninja, ccache)
# and builds tfmc into ./build. Safe to run again: every step is incremental.
#
#   bash scripts/build.sh [--sanitize] [--target TARGET]
#
# --sanitize builds with clang-22, AddressSanitizer and UBSan, and the
# libFuzzer targets of test/fuzz, into ./build-sanitize instead.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
configure=()
target=()
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize)
      build="$root/build-sanitize"
      # -O1, as libFuzzer recommends: the instrumented build is compiled
      # on every CI run (a cold cache), and -O3 made it half of the run.
      configure=(-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22
                 -DTFM_SANITIZE=ON -DTFM_FUZZ=ON
                 "-DCMAKE_C_FLAGS_RELEASE=-O1 -DNDEBUG"
                 "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG")
      shift ;;
    --target) target=("$2"); shift 2 ;;
    *) echo "build.sh: unknown option '$1'" >&2; exit 2 ;;
  esac
done
bash "$root/scripts/install-deps.sh"
# ccache keys on the compile command, whose paths are absolute: relative to
# the checkout, a fresh clone elsewhere (CI's) hits what this one cached.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
if [ ! -f "$build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit "${configure[@]}"
fi
ninja -C "$build" -j"${TFM_JOBS:-2}" "${target[@]}"
bash "$root/scripts/install-python.sh"
