#!/usr/bin/env bash
# gpu_bench.sh - decode and prefill speed of models compiled with
# --target=cuda, on the GPU they run on, beside that GPU's copy bandwidth
# (the bound of a decode step: its weight bytes over it) and PyTorch's
# prefill of the same shape (BF16, scaled_dot_product_attention).
#
# Here (needs the build and ../shared):
#   bash bench/gpu_bench.sh --bundle build/gpu-bench
# which compiles a 124 M LLaMA and a 1.1 B one of TinyLlama's shape
# (bench/make_random_model.py llama|tinyllama --tiled, so that their
# weights compress small enough to carry: zstd --long, whose executable
# travels along), each with f32 and with bf16 weights, into the folder;
# there:
#   bash bench/gpu_bench.sh --run build/gpu-bench
# prints one JSON line per measurement: decode after a 128-token prompt
# and prefill of 512 tokens for both, of 2048 for the 1.1 B (the 124 M's
# context is 1024), PyTorch's prefill of the same shapes beside them.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode="$1" dir="$2"
prompt() { # N: N token ids in [3, 30000)
  /usr/bin/env python3 -c "import sys; n=int(sys.argv[1]); print(' '.join(str(3 + (7919 * i) % 29997) for i in range(n)))" "$1"
}
shapes="llama124m:llama tinyllama1b:tinyllama"
dtypes="f32 bf16"
# Each shape's executables: NAME (f32 weights) and NAME-bf16.
executables() {
  for entry in $shapes; do
    for dtype in $dtypes; do
      if [ "$dtype" = f32 ]; then echo "${entry%%:*}"; else echo "${entry%%:*}-$dtype"; fi
    done
  done
}
if [ "$mode" = --bundle ]; then
  command -v zstd >/dev/null ||
    { echo "gpu_bench.sh: --bundle compresses with zstd: apt-get install zstd" >&2; exit 1; }
  rm -rf "$dir" && mkdir -p "$dir"
  for entry in $shapes; do
    name="${entry%%:*}" shape="${entry#*:}"
    /usr/bin/python3 "$root/bench/make_random_model.py" "$shape" "$dir/$name-hf" --tiled
    for dtype in $dtypes; do
      out="$dir/$name"; [ "$dtype" = f32 ] || out="$dir/$name-$dtype"
      "$root/build/bin/tfmc" -q "$dir/$name-hf" --target=cuda --weights=external \
        --weights-dtype="$dtype" -o "$out"
    done
    rm -rf "$dir/$name-hf"
  done
  cp "$(command -v zstd)" "$dir/zstd"
  bash "$root/test/gpu/copy-libs.sh" "$dir/lib" "$dir/llama124m" "$dir/zstd"
  for name in $(executables); do
    zstd -q --rm -1 --long=27 "$dir/$name.weights" "$dir/$name"
  done
  cp "$root/bench/make_random_model.py" "$dir/"
  du -sh "$dir"
  exit 0
fi
[ "$mode" = --run ] || { echo "usage: gpu_bench.sh --bundle|--run DIR" >&2; exit 2; }
export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unpack() { "$dir/zstd" -q -d --long=27 -o "$2" "$1"; }
for name in $(executables); do
  [ -f "$dir/$name.weights" ] || unpack "$dir/$name.weights.zst" "$dir/$name.weights"
  [ -f "$dir/$name" ] || { unpack "$dir/$name.zst" "$dir/$name" && chmod +x "$dir/$name"; }
done
python3 - <<'PY'
import json, torch
x = torch.empty(1 << 28, dtype=torch.float32, device="cuda")  # 1 GiB
y = torch.empty_like(x)
for _ in range(3): y.copy_(x)
torch.cuda.synchronize()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(20): y.copy_(x)
end.record(); torch.cuda.synchronize()
seconds = start.elapsed_time(end) / 1e3 / 20
# Read plus written bytes: what a stream of reads alone runs at, about.
print(json.dumps({"gpu": torch.cuda.get_device_name(), "copy_gb_per_s": round(2 * x.numel() * 4 / seconds / 1e9, 1)}))
PY
tfmc() { # MODEL PROMPT_TOKENS NEW_TOKENS: one JSON line of the model's --stats
  local stats engine="tfmc-cuda f32"
  case "$1" in *-bf16) engine="tfmc-cuda bf16" ;; esac
  if stats=$(timeout 180 "$dir/$1" --tokens "$(prompt "$2")" -n "$3" --ignore-eos \
      --warmup 1 --stats 2>&1 >/dev/null | grep prompt_tokens); then
    echo "{\"engine\": \"$engine\", \"model\": \"$1\", \"stats\": $stats}"
  else
    echo "{\"engine\": \"$engine\", \"model\": \"$1\", \"prompt_tokens\": $2, \"error\": \"no --stats line\"}"
  fi
}
# Prefill alone (-n 0): a 2048-token prompt fills the 1.1 B's context.
for suffix in "" -bf16; do
  tfmc llama124m$suffix 128 64
  tfmc llama124m$suffix 512 0
  tfmc tinyllama1b$suffix 128 64
  tfmc tinyllama1b$suffix 512 0
  tfmc tinyllama1b$suffix 2048 0
done
python3 - "$dir" <<'PY'
import json, sys, time, torch
sys.path.insert(0, sys.argv[1])
from transformers import LlamaConfig, LlamaForCausalLM
import make_random_model as m
for name, shape, lengths in (("llama124m", "llama", (512,)),
                             ("tinyllama1b", "tinyllama", (512, 2048))):
    config = LlamaConfig(**{k: v for k, v in m.SHAPES[shape].items() if k != "model_type"})
    config._attn_implementation = "sdpa"
    # Made on the GPU in BF16 (random weights, as tfmc's): a 1.1 B model
    # initialized on the CPU first would take longer than its timings.
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = LlamaForCausalLM(config).eval()
    torch.set_default_dtype(torch.float32)
    for n in lengths:
        ids = torch.randint(3, 30000, (1, n), device="cuda")
        with torch.no_grad():
            for _ in range(3): model(ids)
            torch.cuda.synchronize(); start = time.perf_counter()
            for _ in range(10): model(ids)
            torch.cuda.synchronize(); seconds = (time.perf_counter() - start) / 10
        print(json.dumps({"engine": "pytorch bf16 sdpa", "model": name, "prompt_tokens": n, "prefill_tokens_per_s": round(n / seconds, 1)}))
    del model
PY
