#!/usr/bin/env bash
# sparse_attention.sh - attention time against sequence length, full
# attention against a window of 512: causal (GPT-Neo's local layers,
# Mistral's window) and Longformer's (256 on either side plus a global
# token), through the runtime's fused kernels (bench/sparse_attention.c). Run from the repository root after the
# build: bash bench/sparse_attention.sh [longest tokens, default 16384]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cc -O2 -I"$root/runtime/include" "$root/bench/sparse_attention.c" \
  "$root/build/lib/libtfmrt.a" -lopenblas -lutf8proc -lz -lm -lpthread \
  -o "$out/sparse_attention"
echo "# $(date -u +%Y-%m-%d) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
"$out/sparse_attention" "$@"
