#!/usr/bin/env bash
# gpu_kernel_times.sh - where one decode step's GPU time goes, without
# TFM_CUDA_PROFILE's wait after every launch: Nsight Compute's
# gpu__time_duration of each kernel of the third decode step after a
# 128-token prompt, summed by launch shape, beside the step's wall time
# (--stats). The gap between the two is what launching costs.
#
#   bash bench/gpu_kernel_times.sh BENCH_DIR MODEL OUT   # on the GPU machine
#
# BENCH_DIR is bench/gpu_bench.sh --bundle's folder, MODEL one of its
# executables (tinyllama1b-bf16); OUT gets ncu.csv and kernel-times.txt.
set -euo pipefail
dir="$1" model="$2" out="$3"
mkdir -p "$out"
export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unpack() { "$dir/zstd" -q -d --long=27 -o "$2" "$1"; }
[ -f "$dir/$model.weights" ] || unpack "$dir/$model.weights.zst" "$dir/$model.weights"
[ -f "$dir/$model" ] || { unpack "$dir/$model.zst" "$dir/$model" && chmod +x "$dir/$model"; }
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
prompt=$(python3 -c "print(' '.join(str(3 + (7919 * i) % 29997) for i in range(128)))")
run() { "$dir/$model" --tokens "$prompt" --ignore-eos "$@"; }
# Launches of the prefill alone, and with one decode step: what to skip.
launches() { TFM_CUDA_PROFILE=1 run "$@" 2>&1 >/dev/null | sed -n 's/^TFM_CUDA_PROFILE: \([0-9]*\) launches.*/\1/p'; }
prefill=$(launches -n 1)
step=$(( $(launches -n 2) - prefill ))
wall=$(run -n 64 --warmup 1 --stats 2>&1 >/dev/null | grep -o '"decode_tokens_per_s": [0-9.]*' | grep -o '[0-9.]*$')
"$ncu" --clock-control none --metrics gpu__time_duration.sum --csv \
  --launch-skip $((prefill + 2 * step)) --launch-count "$step" \
  --log-file "$out/ncu.csv" "$dir/$model" --tokens "$prompt" -n 4 --ignore-eos > /dev/null
python3 - "$out/ncu.csv" "$step" "$wall" > "$out/kernel-times.txt" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"'))
        if r.get("Metric Name") == "gpu__time_duration.sum"]
scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
shapes = {}
for r in rows:
    us = float(r["Metric Value"].replace(",", "")) * scale[r["Metric Unit"]]
    key = (r["Grid Size"], r["Block Size"])
    shapes.setdefault(key, [0.0, 0])
    shapes[key][0] += us; shapes[key][1] += 1
total = sum(v[0] for v in shapes.values())
step_us = 1e6 / float(sys.argv[3])
print(f"one decode step: {len(rows)} kernels of {sys.argv[2]} launches, {total:.0f} us in kernels, "
      f"{step_us:.0f} us a step at {float(sys.argv[3]):.1f} tok/s (--stats, 64 tokens)")
for (grid, block), (us, n) in sorted(shapes.items(), key=lambda x: -x[1][0]):
    print(f"  {us:8.1f} us  {n:4d} kernels  grid {grid} block {block}  ({us / n:.1f} us each)")
PY
cat "$out/kernel-times.txt"
