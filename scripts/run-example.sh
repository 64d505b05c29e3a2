#!/usr/bin/env bash
# run-example.sh - the README's first command: installs the dependencies,
# builds tfmc, compiles the bundled example model (examples/sorter, a tiny
# LLaMA that sorts digits) into a native executable and runs it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
bash "$root/scripts/build.sh"
mkdir -p "$root/build/examples"
"$root/build/bin/tfmc" "$root/examples/sorter/model" -o "$root/build/examples/sorter"
echo "compiled build/examples/sorter; running it:"
for prompt in "7 3 9 1 5 >" "4 4 0 8 2 6 1 >" "9 8 7 6 5 4 3 2 >"; do
  "$root/build/examples/sorter" --prompt "$prompt" -n 20
done
