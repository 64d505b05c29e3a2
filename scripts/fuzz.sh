#!/usr/bin/env bash
# fuzz.sh - builds the libFuzzer targets (test/fuzz; clang-22 with ASan and
# UBSan, into ./build-sanitize) and runs each for a given time from its
# seed corpus, then prints one line per target: executions, coverage,
# corpus size, and findings (crashes, leaks, timeouts over 1 s, inputs
# that need more than 2 GB). Exits non-zero when any target found
# something; its input is left in build-sanitize/fuzz-findings/TARGET/.
#
#   bash scripts/fuzz.sh [--seconds N] [--runs N] [TARGET...]
#
# With both --seconds and --runs a target stops at whichever comes first
# (the issue's campaign: --seconds 3600 --runs 10000000).
#   bash scripts/fuzz.sh --smoke   # the test command's short, repeatable run
#   bash scripts/fuzz.sh --seeds   # rewrite test/fuzz/corpus from the tests
#
# --smoke runs each target for the number of executions that
# test/fuzz/smoke-runs lists (about 20 s each here) from a fixed random
# seed, and without the kept corpus, so that a commit's result is the same
# on every run and every machine: CI fails on a regression, never on the
# luck of a campaign. Its timeout is 5 s (1 s otherwise) for slower hosts.
#
# New inputs that reach new code go to build-sanitize/fuzz-corpus/TARGET/
# (kept between runs, not committed); the committed seeds and the
# regression inputs of fixed findings (test/fuzz/regressions/TARGET/) are
# read, never written. TFM_FUZZ_JOBS runs that many targets at once.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-sanitize"
seconds=""
runs=""
seeds=0
smoke=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --runs) runs="$2"; shift 2 ;;
    --seeds) seeds=1; shift ;;
    --smoke) smoke=1; shift ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option '$1'" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done

[ -n "$seconds$runs" ] || seconds=60
bash "$root/scripts/build.sh" --sanitize --target fuzz-targets >&2
if [ "$seeds" = 1 ]; then
  /usr/bin/python3 "$root/test/fuzz/make_seeds.py" \
    --tokenizer-files "$build/fuzz/fuzz-tokenizer-files"
  exit 0
fi
if [ ${#targets[@]} -eq 0 ]; then
  for path in "$build"/fuzz/fuzz-*; do targets+=("$(basename "$path")"); done
fi

# One target: runs it, then prints its summary line from libFuzzer's log.
fuzz_one() {
  local target="$1"
  local work="$build/fuzz-corpus/$target" findings="$build/fuzz-findings/$target/"
  local log="$build/fuzz-logs/$target.log"
  mkdir -p "$work" "$findings" "$(dirname "$log")"
  local corpora=("$work" "$root/test/fuzz/corpus/$target")
  local limit=() timeout=1 shown=""
  [ -n "$seconds" ] && limit+=(-max_total_time="$seconds") && shown="${seconds}s"
  [ -n "$runs" ] && limit+=(-runs="$runs") && shown="${shown:+$shown/}$runs"
  if [ "$smoke" = 1 ]; then
    # A fresh, empty working corpus each time: nothing a campaign kept.
    work="$(mktemp -d)"
    corpora=("$work" "$root/test/fuzz/corpus/$target")
    shown="$(awk -v t="$target" '$1 == t { print $2 }' \
      "$root/test/fuzz/smoke-runs")"
    [ -n "$shown" ] || { echo "fuzz.sh: $target is not in test/fuzz/smoke-runs" >&2; return 2; }
    limit=(-runs="$shown" -seed=1)
    timeout=5
    # Its own log: a campaign of the same target may be running.
    log="$build/fuzz-logs/smoke/$target.log"
    mkdir -p "$(dirname "$log")"
  fi
  [ -d "$root/test/fuzz/regressions/$target" ] &&
    corpora+=("$root/test/fuzz/regressions/$target")
  local status=0
  # The targets' own stderr (refusals are printed by some readers) is
  # closed; libFuzzer's and the sanitizers' reports still come through.
  # Debian's LLVM and MLIR are not instrumented: their inline
  # BumpPtrAllocator code in our files poisons slabs theirs then hands out
  # unpoisoned, so manual poisoning is ignored (allow_user_poisoning=0), as
  # in the lit suite (test/lit.cfg.py).
  ASAN_OPTIONS=detect_leaks=1:allow_user_poisoning=0 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/fuzz/$target" "${limit[@]}" -timeout="$timeout" -rss_limit_mb=2048 \
      -max_len=$((512 * 1024)) -close_fd_mask=3 -print_final_stats=1 \
      -dict="$root/test/fuzz/fuzz.dict" -artifact_prefix="$findings" \
      "${corpora[@]}" >"$log" 2>&1 || status=$?
  [ "$smoke" = 1 ] && rm -rf "$work"
  awk -v target="$target" -v status="$status" -v shown="$shown" '
    /^#[0-9]+/ && / cov: / { for (i = 1; i <= NF; ++i) {
        if ($i == "cov:") cov = $(i + 1)
        if ($i == "ft:") ft = $(i + 1)
        if ($i == "corp:") corp = $(i + 1) } }
    /stat::number_of_executed_units:/ { execs = $2 }
    /stat::average_exec_per_sec:/ { rate = $2 }
    /ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|ALARM: working on the last Unit/ {
      finding = finding ? finding : $0 }
    END {
      printf "%-22s %9s %11s execs %8s/s  cov %6s  ft %7s  corpus %6s  %s\n",
        target, shown, execs, rate, cov, ft, corp,
        status == 0 ? "no findings" : "FINDING: " substr(finding, 1, 120)
    }' "$log"
  return "$status"
}

failed=0
jobs="${TFM_FUZZ_JOBS:-1}"
for target in "${targets[@]}"; do
  if [ ! -x "$build/fuzz/$target" ]; then
    echo "fuzz.sh: no target '$target' in $build/fuzz" >&2
    exit 2
  fi
  if [ "$jobs" -gt 1 ]; then
    fuzz_one "$target" &
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || failed=1; done
  else
    fuzz_one "$target" || failed=1
  fi
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
[ "$failed" = 0 ] || echo "fuzz.sh: findings above; logs in $build/fuzz-logs" >&2
exit "$failed"
