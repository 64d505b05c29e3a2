#!/usr/bin/env bash
# sparse_attention.sh - attention time against sequence length, full
# causal attention against a sliding window of 512 (GPT-Neo's local layers,
# Mistral's window), through the runtime's fused kernel
# (bench/sparse_attention.c). Run from the repository root after the
# build: bash bench/sparse_attention.sh [longest tokens, default 16384]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cc -O2 -I"$root/runtime/include" "$root/bench/sparse_attention.c" \
  "$root/build/lib/libtfmrt.a" -lopenblas -lutf8proc -lm -lpthread \
  -o "$out/sparse_attention"
echo "# $(date -u +%Y-%m-%d) $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
"$out/sparse_attention" "$@"
