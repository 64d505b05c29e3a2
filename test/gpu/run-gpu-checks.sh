#!/usr/bin/env bash
# run-gpu-checks.sh - what --target=cuda must do on a real GPU, run on a
# machine with an NVIDIA GPU and its driver (no LLVM or CUDA toolkit
# needed): the models of make-bundle.sh against the references the CPU
# tests use (transformers' logits, llama2.c's greedy tokens).
#
#   bash test/gpu/run-gpu-checks.sh BUNDLE [OUT]
#
# Prints one line per check and exits non-zero when any fails.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bundle="$1"
out="${2:-$(mktemp -d)}"
mkdir -p "$out"
for packed in "$bundle"/*.gz; do
  [ -f "${packed%.gz}" ] || { gunzip -k "$packed" && chmod +x "${packed%.gz}"; }
done
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
inputs="$root/test/e2e/Inputs"
failed=0
check() { # NAME COMMAND...: runs it, reports PASS or FAIL with its output
  local name="$1"; shift
  if timeout 180 "$@" > "$out/$name.log" 2>&1; then
    echo "PASS $name: $(tail -1 "$out/$name.log")"
  else
    echo "FAIL $name:"; tail -20 "$out/$name.log"; failed=1
  fi
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true

# Logits within 1e-3 of the references the CPU tests use: transformers'
# LlamaForCausalLM (f32), and for the f16 and bf16 checkpoints, whose
# weights stay narrow on the GPU and widen as the kernels load them, the
# same model computed in f32 from those weights (make_goldens.py).
tokens="1 17 42 5 63 0 28 9 33 12 50 7"
for model in llama-mha-f32 llama-gqa-f16-untied llama-gqa-bf16-sharded; do
  check "$model-logits" bash -c "'$bundle/$model' --tokens '$tokens' -n 0 \
    --logits '$out/$model.logits' && python3 '$root/test/e2e/compare_logits.py' \
    '$out/$model.logits' '$inputs/$model.logits.bin' --tol 1e-3"
done
# stories260K's 200 greedy tokens equal the CPU's (llama2.c's reference).
check stories260K-greedy bash -c "'$bundle/stories260K' -n 200 --print-ids \
  > '$out/stories260K.ids' && diff -w '$out/stories260K.ids' \
  '$inputs/stories260K.greedy200.txt' && echo '200 greedy tokens equal'"
# With bf16 weights, the same greedy tokens as the CPU's bf16 build (its
# products widened to f32 as the GPU's are: TFM_BF16_DOT=0).
check stories260K-bf16-greedy bash -c "'$bundle/stories260K-bf16' -n 200 --print-ids \
  > '$out/stories260K-bf16.ids' && TFM_BF16_DOT=0 '$bundle/stories260K-bf16-cpu' -n 200 \
  --print-ids > '$out/stories260K-bf16-cpu.ids' && diff -w '$out/stories260K-bf16.ids' \
  '$out/stories260K-bf16-cpu.ids' && echo '200 greedy tokens equal'"
check stories260K-text bash -c "'$bundle/stories260K' --prompt 'Once upon a time' \
  -n 40 --stats"
exit $failed
