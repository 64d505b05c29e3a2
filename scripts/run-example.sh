#!/usr/bin/env bash
# run-example.sh - the README's first command: installs, builds, compiles the
# bundled example and runs it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/build.sh"
"$root/build/bin/tfmc" "$root/examples/llama-block.mlir"
