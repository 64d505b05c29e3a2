#!/usr/bin/env bash
# test.sh - builds tfmc and runs every test (lit: IR, passes, codegen,
# frontend, end-to-end, runtime unit tests), then a short, repeatable run of
# every fuzz target from its seeds and regression inputs (scripts/fuzz.sh
# --smoke; a sanitizer build in ./build-sanitize). The README's test
# command. TFM_FUZZ_SMOKE=0 skips the fuzz run.
#
#   bash scripts/test.sh [--sanitize]
#
# --sanitize builds the compiler, the runtime and every test with
# AddressSanitizer and UBSan (./build-sanitize, clang-22) and runs the
# whole suite there instead (compiled models link the instrumented
# runtime); any report fails the test that caused it.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
build_options=()
case "${1:-}" in
  --sanitize) build="$root/build-sanitize"; build_options=(--sanitize) ;;
  "") ;;
  *) echo "test.sh: unknown option '$1'" >&2; exit 2 ;;
esac
bash "$root/scripts/build.sh" "${build_options[@]}"
# As build.sh: ccache hits across checkouts for what `check` compiles.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
ninja -C "$build" check 2>&1 | tee "$log" || status=$?
# One closing line in the plain 'N passed, N failed' form.
awk -F': *' '/^  [A-Z][A-Za-z ]*: +[0-9]+ \(/ {
    kind = $1; sub(/^ +/, "", kind); sub(/ +$/, "", kind); n = $2 + 0
    if (kind == "Passed" || kind == "Expectedly Failed") passed += n
    else if (kind == "Unsupported" || kind == "Skipped" || kind == "Excluded") skipped += n
    else failed += n
  }
  END { printf "tests: %d passed, %d failed, %d skipped\n", passed, failed, skipped }' "$log"
if [ "${TFM_FUZZ_SMOKE:-1}" != 0 ] && [ "$build" = "$root/build" ]; then
  fuzz_status=0
  TFM_FUZZ_JOBS=2 bash "$root/scripts/fuzz.sh" --smoke | tee "$log" ||
    fuzz_status=$?
  echo "fuzz: $(grep -c ' execs ' "$log") targets (smoke)," \
    "$(grep -c 'FINDING' "$log") with findings"
  [ "$fuzz_status" = 0 ] || status=1
fi
exit "$status"
