#!/usr/bin/env bash
# serve-example.sh - builds tfmc and tfm-serve, compiles the bundled example
# model (examples/sorter) as a library and serves it with an OpenAI-
# compatible API on 127.0.0.1:${PORT:-8080} until interrupted.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/build.sh"
mkdir -p "$root/build/examples"
"$root/build/bin/tfmc" "$root/examples/sorter/model" --emit=lib -q \
  -o "$root/build/examples/libsorter.so"
exec "$root/build/bin/tfm-serve" "$root/build/examples/libsorter.so" \
  --port "${PORT:-8080}" "$@"
