#!/usr/bin/env bash
# gpu_bench.sh - decode and prefill speed of models compiled with
# --target=cuda, on the GPU they run on, beside that GPU's copy bandwidth
# (the bound of a decode step: its weight bytes over it) and PyTorch's
# prefill of the same shape (BF16, scaled_dot_product_attention).
#
# Here (needs the build and ../shared):
#   bash bench/gpu_bench.sh --bundle build/gpu-bench
# which compiles a 124 M LLaMA (bench/make_random_model.py llama --tiled,
# so that its weights gzip small enough to carry) into the folder; there:
#   bash bench/gpu_bench.sh --run build/gpu-bench
# prints one JSON line per measurement.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
mode="$1" dir="$2"
prompt() { # N: N token ids in [3, 30000)
  /usr/bin/env python3 -c "import sys; n=int(sys.argv[1]); print(' '.join(str(3 + (7919 * i) % 29997) for i in range(n)))" "$1"
}
if [ "$mode" = --bundle ]; then
  rm -rf "$dir" && mkdir -p "$dir"
  /usr/bin/python3 "$root/bench/make_random_model.py" llama "$dir/llama124m-hf" --tiled
  "$root/build/bin/tfmc" -q "$dir/llama124m-hf" --target=cuda --weights=external \
    -o "$dir/llama124m"
  bash "$root/test/gpu/copy-libs.sh" "$dir/lib" "$dir/llama124m"
  gzip -1 "$dir/llama124m.weights" "$dir/llama124m"
  rm -rf "$dir/llama124m-hf"
  cp "$root/bench/make_random_model.py" "$dir/"
  du -sh "$dir"
  exit 0
fi
[ "$mode" = --run ] || { echo "usage: gpu_bench.sh --bundle|--run DIR" >&2; exit 2; }
[ -f "$dir/llama124m.weights" ] || gunzip -k "$dir/llama124m.weights.gz"
[ -f "$dir/llama124m" ] || { gunzip -k "$dir/llama124m.gz" && chmod +x "$dir/llama124m"; }
export LD_LIBRARY_PATH="$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
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
tfmc() { # PROMPT_TOKENS NEW_TOKENS: one JSON line of the model's --stats
  local stats
  stats=$(timeout 180 "$dir/llama124m" --tokens "$(prompt "$1")" -n "$2" --ignore-eos \
    --warmup 1 --stats 2>&1 >/dev/null | grep prompt_tokens)
  echo "{\"engine\": \"tfmc-cuda f32\", \"model\": \"llama124m\", \"stats\": $stats}"
}
tfmc 128 64
tfmc 512 1
python3 - "$dir" <<'PY'
import json, sys, time, torch
sys.path.insert(0, sys.argv[1])
from transformers import LlamaConfig, LlamaForCausalLM
import make_random_model as m
config = LlamaConfig(**{k: v for k, v in m.SHAPES["llama"].items() if k != "model_type"})
config._attn_implementation = "sdpa"
model = LlamaForCausalLM(config).to(device="cuda", dtype=torch.bfloat16).eval()
for n in (512,):
    ids = torch.randint(3, 30000, (1, n), device="cuda")
    with torch.no_grad():
        for _ in range(3): model(ids)
        torch.cuda.synchronize(); start = time.perf_counter()
        for _ in range(10): model(ids)
        torch.cuda.synchronize(); seconds = (time.perf_counter() - start) / 10
    print(json.dumps({"engine": "pytorch bf16 sdpa", "model": "llama124m", "prompt_tokens": n, "prefill_tokens_per_s": round(n / seconds, 1)}))
PY
