#!/usr/bin/env bash
# build.sh - installs the dependencies, configures (Release, Ninja, ccache)
# and builds tfmc into ./build. Safe to run again: every step is incremental.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/install-deps.sh"
if [ ! -f "$root/build/build.ninja" ]; then
  cmake -G Ninja -S "$root" -B "$root/build" \
    -DCMAKE_BUILD_TYPE=Release \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
ninja -C "$root/build" -j"${TFM_JOBS:-2}"
