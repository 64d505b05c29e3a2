#!/usr/bin/env bash
# run-all.sh - everything a GPU machine is asked for, as one command that
# fits a short lease: the checks (run-gpu-checks.sh, eight at a time), the
# benchmarks (bench/gpu_bench.sh --run), the out-of-memory path, and a
# per-kernel profile of the 1.1 B shape (TFM_CUDA_PROFILE), each phase
# bounded in time, its results written to OUT as a few files:
#
#   bash test/gpu/make-bundle.sh build/gpu-bundle      # here
#   bash bench/gpu_bench.sh --bundle build/gpu-bench   # here
#   bash test/gpu/run-all.sh build/gpu-bundle build/gpu-bench OUT   # there
#
# OUT gets gpu.txt (the GPU and driver), checks.txt (a line per check),
# bench.jsonl (gpu_bench.sh's lines), profile.txt (where decode's and
# prefill's time goes, per kernel) and logs.tar.gz (every check's output).
# Exits non-zero when a check failed.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bundle="$1" bench="$2" out="$3"
mkdir -p "$out"
phase() { echo "[$(date +%T), ${SECONDS}s] $*" >&2; }
{
  nvidia-smi
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
    --format=csv
} > "$out/gpu.txt" 2>&1
phase "checks"
TFM_GPU_CHECK_JOBS="${TFM_GPU_CHECK_JOBS:-8}" TFM_GPU_CHECK_TIMEOUT="${TFM_GPU_CHECK_TIMEOUT:-40}" \
  timeout "${CHECKS_SECONDS:-180}" bash "$root/test/gpu/run-gpu-checks.sh" "$bundle" "$out/checks" \
  > "$out/checks.txt" 2>&1
checks=$?
phase "benchmarks"
timeout "${BENCH_SECONDS:-240}" bash "$root/bench/gpu_bench.sh" --run "$bench" \
  > "$out/bench.jsonl" 2> "$out/bench.err"
export LD_LIBRARY_PATH="$bench/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
phase "out of memory"
# Every byte but 1 GiB held by another process: the 1.1 B model's 2.2 GB
# of bf16 weights cannot be uploaded.
if [ -x "$bench/tinyllama1b-bf16" ]; then
  if timeout 150 python3 "$root/test/gpu/hold_gpu_memory.py" 1024 "$bench/tinyllama1b-bf16" \
      --tokens "1 2 3" -n 1 > "$out/checks/out-of-memory.log" 2>&1; then
    echo "PASS out-of-memory: $(tail -1 "$out/checks/out-of-memory.log")" >> "$out/checks.txt"
  else
    { echo "FAIL out-of-memory:"; cat "$out/checks/out-of-memory.log"; } >> "$out/checks.txt"
    checks=1
  fi
fi
phase "profiles"
prompt() { python3 -c "import sys; n=int(sys.argv[1]); print(' '.join(str(3 + (7919 * i) % 29997) for i in range(n)))" "$1"; }
for model in tinyllama1b-bf16 tinyllama1b llama124m-bf16; do
  [ -x "$bench/$model" ] || continue
  for run in "128 32" "512 0" "2048 0"; do
    set -- $run
    echo "== $model: prompt $1, $2 new tokens (TFM_CUDA_PROFILE: every launch waited for)"
    # Every kernel of decode (each layer's have names of their own), the
    # costliest 20 of prefill.
    profile=1; [ "$2" = 0 ] || profile=all
    TFM_CUDA_PROFILE=$profile timeout 60 "$bench/$model" --tokens "$(prompt "$1")" -n "$2" \
      --ignore-eos --stats 2>&1 >/dev/null
  done
done > "$out/profile.txt" 2>&1
phase "done"
tar czf "$out/logs.tar.gz" -C "$out" checks && rm -rf "$out/checks"
exit $checks
