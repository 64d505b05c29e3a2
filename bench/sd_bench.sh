#!/usr/bin/env bash
# sd_bench.sh - the Stable Diffusion benchmark of issue 72, one command: an
# SD 1.5-shaped UNet (860M parameters, 64x64 latents, random weights) in
# seconds per denoising step with classifier-free guidance, and the VAE
# decode of a 512x512 image, side by side for
#   tfmc              the folder compiled with --emit=lib, timed through its
#                     entry points (bench/sd_tfmc_calls.py: a step is
#                     one @denoise call on a batch of both halves);
#   diffusers 0.27.2  on Debian's torch 1.13 (bench/sd_torch_peer.py: a step
#                     is one UNet forward on a batch of 2);
#   stable-diffusion.cpp  built for CPU from its source, on the same folder
#                     (sd-cli -m reads a diffusers folder), a txt2img run of
#                     --steps Euler steps, its per-step (progress bar) and
#                     decode_first_stage times from its own log;
# on the same threads, beside the machine's FP32 peak (bench/hwlimits.c)
# and the FLOPs of a step and a decode (bench/sd_flops.py), then prints a
# table of every cell (bench/sd_bench_report.py says what each one is).
#
#   bash bench/sd_bench.sh [--steps 4] [--decodes 2] [--threads N] [--small]
#        [--only hw,tfmc,torch,sdcpp] [--fresh] [--tfmc-dtypes f16,bf16,int8]
#        [--pipeline-steps N] [--torch-channels-last] [--sdcpp-args "..."]
#
# --threads: default what tfmc's runtime takes, TFM_NUM_THREADS or the
# CPUs this process may run on (runtime/core/thread_pool.c); every engine
# gets that many (TFM_NUM_THREADS; torch.set_num_threads with OMP and
# OpenBLAS threads alike; sd-cli -t; OMP_NUM_THREADS for hwlimits).
# --small: the cut fixture (test/e2e/diffusion, 64x64 images): the smoke
# test of the script, a minute; stable-diffusion.cpp builds SD 1.x's
# published widths whatever the config says, so it is skipped there.
# --tfmc-dtypes: also compile and time tfmc with these --weights-dtype
# (columns "tfmc-DTYPE"). stable-diffusion.cpp keeps every Conv2d kernel in
# f16 whatever --type says (ggml_extend.hpp's Conv2d; its im2col is f16):
# tfmc-f16 is the like-for-like column for its convolutions.
# --pipeline-steps N: tfmc also runs generate_image (the runtime's loop)
# and times its steps, as a check of what the entry-point timing measures.
# --torch-channels-last: diffusers' modules in torch.channels_last.
# --sdcpp-args: more sd-cli options (--diffusion-fa, --diffusion-conv-direct,
# --vae-conv-direct), to look for its fastest setting.
#
# Where things go (SD_BENCH_DATA, default /work/bench-data, outside the
# repository): the weights (sd15-f32/, 4.3 GB of f32, written by
# bench/make_sd15_weights.py when absent, or sd15-small/), the compiled
# libraries (libsd15-<full|small>[-DTYPE].so, compiled again when older
# than tfmc or the weights; the compile's /usr/bin/time -v beside each),
# and results/<full|small>-t<threads>-s<steps>/: each engine's JSON, its
# output, log and /usr/bin/time -v, summary.json. A cell whose JSON is
# there is not measured again (--fresh measures them again): an
# interrupted run goes on where it stopped. A failed engine's cells say
# why, the others still run, and the next run tries it again.
#
# Other paths: TFMC (default build/bin/tfmc), SD_CLI (default
# /work/peers/stable-diffusion.cpp/build/bin/sd-cli), HFREF (the reference
# Python packages, default /tmp/tfm-hfref, unpacked by
# ../shared/reference/setup.sh when absent).
#
# stable-diffusion.cpp as built here (master 97d2990, ggml 8e800ce; the
# snapshot lacked tokenizer vocabularies SD 1.x does not use
# (src/tokenizers/vocab/{t5,umt5,gemma*,mistral*,qwen*,gpt_oss*}.hpp):
# each was stubbed with an empty array):
#   git clone https://github.com/leejet/stable-diffusion.cpp && cd stable-diffusion.cpp
#   git submodule update --init ggml
#   cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
#     -DSD_WEBP=OFF -DSD_WEBM=OFF
#   cmake --build build --target sd-cli -j
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
steps=4 decodes=2 threads="" small=0 only="hw,tfmc,torch,sdcpp" fresh=0
pipeline_steps=0 torch_args="" sdcpp_args="" tfmc_dtypes=""
while [ $# -gt 0 ]; do
  case "$1" in
    --steps) steps="$2"; shift ;;
    --decodes) decodes="$2"; shift ;;
    --threads) threads="$2"; shift ;;
    --small) small=1 ;;
    --only) only="$2"; shift ;;
    --fresh) fresh=1 ;;
    --pipeline-steps) pipeline_steps="$2"; shift ;;
    --torch-channels-last) torch_args="--channels-last" ;;
    --tfmc-dtypes) tfmc_dtypes="${2//,/ }"; shift ;;
    --sdcpp-args) sdcpp_args="$2"; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "sd_bench.sh: unknown option $1 (--help)" >&2; exit 2 ;;
  esac
  shift
done
threads="${threads:-${TFM_NUM_THREADS:-$(nproc)}}"
data="${SD_BENCH_DATA:-/work/bench-data}"
tfmc="${TFMC:-$root/build/bin/tfmc}"
sd_cli="${SD_CLI:-/work/peers/stable-diffusion.cpp/build/bin/sd-cli}"
hfref="${HFREF:-/tmp/tfm-hfref}"
python=/usr/bin/python3
mkdir -p "$data"

if [ "$small" = 1 ]; then
  mode=small weights="$data/sd15-small" make_flags="--small"
else
  mode=full weights="$data/sd15-f32" make_flags=""
fi
results="$data/results/$mode-t$threads-s$steps"
mkdir -p "$results"
if [ "$fresh" = 1 ]; then
  for engine in ${only//,/ }; do
    case "$engine" in tfmc) rm -f "$results"/tfmc*.json ;; *) rm -f "$results/$engine.json" ;; esac
  done
fi
wanted() { case ",$only," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
# measured ENGINE: its JSON is there, and not a failure's.
measured() { [ -s "$results/$1.json" ] && ! grep -q '"error"' "$results/$1.json"; }
note() { echo "sd_bench: $*" >&2; }
# failed ENGINE WHY: the engine's cells say so.
failed() {
  $python -c 'import json,sys; print(json.dumps({"engine": sys.argv[1], "error": sys.argv[2]}))' \
    "$1" "$2" >"$results/$1.json"
  note "$1 failed: $2"
}
# timed ENGINE CMD...: runs CMD under /usr/bin/time -v, its stdout's last
# line (the engine's JSON, or nothing) in ENGINE.out, stderr in ENGINE.log.
timed() {
  local engine="$1"; shift
  /usr/bin/time -v -o "$results/$engine.time" "$@" >"$results/$engine.out" 2>"$results/$engine.log"
}
peak_kb() { sed -n 's/.*Maximum resident set size (kbytes): //p' "$results/$1.time"; }

note "$mode: $steps steps, $decodes decodes, $threads threads; results in $results"
if [ ! -d "$weights" ]; then
  note "writing the weights to $weights"
  nice -n 10 $python "$root/bench/make_sd15_weights.py" $make_flags "$weights" >&2
fi
$python "$root/bench/sd_flops.py" "$weights" >"$results/flops.json"

# The machine's limits on the same threads.
if wanted hw && ! measured hw; then
  hw="$data/hwlimits"
  if [ ! -x "$hw" ] || [ "$root/bench/hwlimits.c" -nt "$hw" ]; then
    cc -O3 -march=native -fopenmp "$root/bench/hwlimits.c" -lopenblas -o "$hw"
  fi
  note "hwlimits"
  if OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads" "$hw" >"$results/hw.json.tmp"; then
    mv "$results/hw.json.tmp" "$results/hw.json"
  else
    failed hw "hwlimits exited $?"
  fi
fi

# tfmc: compile (when the library is older than tfmc or the weights), then
# time the entry points; once with the checkpoint's own f32 weights
# ("tfmc"), and once per --tfmc-dtypes entry ("tfmc-DTYPE").
for dtype in "" $tfmc_dtypes; do
  engine="tfmc${dtype:+-$dtype}"
  if ! wanted tfmc || measured "$engine"; then continue; fi
  lib="$data/libsd15-$mode${dtype:+-$dtype}.so"
  size="$($python -c 'import json,sys; s = 8 * json.load(open(sys.argv[1]))["sample_size"]; print(f"{s}x{s}")' "$weights/unet/config.json")"
  if [ ! -f "$lib" ] || [ "$tfmc" -nt "$lib" ] || [ "$weights" -nt "$lib" ]; then
    note "$engine: compiling $weights (--image-size $size${dtype:+ --weights-dtype $dtype})"
    rm -f "$lib"
    if ! /usr/bin/time -v -o "$lib.time" "$tfmc" "$weights" --image-size "$size" \
         ${dtype:+--weights-dtype "$dtype"} --emit=lib -o "$lib" >"$results/$engine-compile.log" 2>&1; then
      failed "$engine" "tfmc did not compile the folder: $(grep -m1 -i error "$results/$engine-compile.log" || head -n1 "$results/$engine-compile.log")"
      continue
    fi
  fi
  note "$engine: $steps steps, $decodes decodes"
  if TFM_NUM_THREADS="$threads" timed "$engine" $python "$root/bench/sd_tfmc_calls.py" "$lib" \
       --steps "$steps" --decodes "$decodes" --pipeline-steps "$pipeline_steps"; then
    $python - "$results" "$engine" "$(peak_kb "$engine")" "$lib" "$dtype" <<'EOF' || true
import json, os, sys
results, engine, peak, lib, dtype = sys.argv[1:]
out = json.loads(open(os.path.join(results, engine + ".out")).read().splitlines()[-1])
out["time_peak_rss_mb"] = int(peak) / 1024
out["weights_dtype"] = dtype or "the checkpoint's (f32)"
out["library_bytes"] = os.path.getsize(lib)
if os.path.exists(lib + ".time"):
    for line in open(lib + ".time"):
        if "Maximum resident" in line:
            out["compile_peak_rss_mb"] = int(line.split(":")[1]) / 1024
        if "Elapsed (wall clock)" in line:
            out["compile_wall"] = line.rsplit(": ", 1)[1].strip()
json.dump(out, open(os.path.join(results, engine + ".json"), "w"))
EOF
    [ -s "$results/$engine.json" ] || failed "$engine" "its output did not parse (see $results/$engine.out)"
  else
    failed "$engine" "sd_tfmc_calls.py: $(tail -n1 "$results/$engine.log")"
  fi
done

# diffusers on torch.
if wanted torch && ! measured torch; then
  [ -f "$hfref/env.sh" ] || bash "$root/../shared/reference/setup.sh" "$hfref" >&2
  note "diffusers: $steps steps, $decodes decodes"
  # shellcheck disable=SC1091
  if (source "$hfref/env.sh" &&
      OMP_NUM_THREADS="$threads" OPENBLAS_NUM_THREADS="$threads" timed torch \
        $python "$root/bench/sd_torch_peer.py" "$weights" --threads "$threads" \
        --steps "$steps" --decodes "$decodes" $torch_args); then
    $python - "$results" "$(peak_kb torch)" <<'EOF' || true
import json, os, sys
results, peak = sys.argv[1], int(sys.argv[2])
out = json.loads(open(os.path.join(results, "torch.out")).read().splitlines()[-1])
out["time_peak_rss_mb"] = peak / 1024
json.dump(out, open(os.path.join(results, "torch.json"), "w"))
EOF
    [ -s "$results/torch.json" ] || failed torch "its output did not parse (see $results/torch.out)"
  else
    failed torch "sd_torch_peer.py: $(tail -n1 "$results/torch.log")"
  fi
fi

# stable-diffusion.cpp on the same folder: the whole txt2img run, its
# step and decode times from its log.
if wanted sdcpp && ! measured sdcpp; then
  if [ "$small" = 1 ]; then
    failed sdcpp "skipped: sd.cpp builds SD 1.x's published widths, not the cut fixture's"
  elif [ ! -x "$sd_cli" ]; then
    failed sdcpp "no sd-cli at $sd_cli (SD_CLI)"
  else
    note "stable-diffusion.cpp: $steps steps"
    # shellcheck disable=SC2086
    if timed sdcpp "$sd_cli" -m "$weights" -p "a photo of an astronaut riding a horse" \
         -W 512 -H 512 --steps "$steps" --cfg-scale 7.5 --sampling-method euler \
         -s 1 -t "$threads" --type f32 --eager-load -v -o "$results/sdcpp.png" $sdcpp_args; then
      $python - "$results" "$(peak_kb sdcpp)" "$steps" "$threads" <<'EOF' || true
import json, os, re, statistics, sys
results, peak, steps, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
text = ""
for name in ("sdcpp.out", "sdcpp.log"):
    text += open(os.path.join(results, name), errors="replace").read()
# Progress lines "\r[===>  ] 2/4 - 12.34s/it": the last report of each step.
per_step = {}
for step, total, value, unit in re.findall(r"(\d+)/(\d+) - ([\d.]+)(s/it|it/s)", text):
    if int(total) == steps:
        seconds = float(value) if unit == "s/it" else 1 / float(value)
        per_step[int(step)] = seconds
def taking(what):
    m = re.findall(what + r" completed, taking ([\d.]+) ?s", text)
    return float(m[-1]) if m else None
out = {"engine": "stable-diffusion.cpp", "threads": threads,
       "step_s": [per_step[k] for k in sorted(per_step)],
       "sampling_s": taking("sampling"),
       "decode_s": [taking("decode_first_stage")],
       "text_s": taking("get_learned_condition"),
       "time_peak_rss_mb": peak / 1024}
if len(out["step_s"]) != steps or out["decode_s"][0] is None:
    raise SystemExit(f"sd-cli's log has {len(out['step_s'])} step times of {steps}"
                     f" and decode {out['decode_s']}: see {results}/sdcpp.out")
# The first step also builds and allocates its graph: the median is of the rest.
out["all_step_s"] = out["step_s"]
out["first_step_s"] = out["step_s"][0]
out["step_s"] = out["step_s"][1:] or out["step_s"]
out["step_median_s"] = statistics.median(out["step_s"])
out["decode_median_s"] = out["decode_s"][0]
json.dump(out, open(os.path.join(results, "sdcpp.json"), "w"))
EOF
      [ -s "$results/sdcpp.json" ] || failed sdcpp "its log did not parse (see $results/sdcpp.out)"
    else
      failed sdcpp "sd-cli exited $? (see $results/sdcpp.log)"
    fi
  fi
fi

$python "$root/bench/sd_bench_report.py" "$results" "$weights"
