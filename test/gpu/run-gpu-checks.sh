#!/usr/bin/env bash
# run-gpu-checks.sh - what --target=cuda must do on a real GPU, run on a
# machine with an NVIDIA GPU and its driver (no LLVM or CUDA toolkit
# needed): the models of make-bundle.sh against the references the CPU
# tests use (transformers' logits, llama2.c's greedy tokens).
#
#   bash test/gpu/run-gpu-checks.sh BUNDLE [OUT]
#
# Prints one line per check and exits non-zero when any fails. A bundle of
# make-bundle.sh --emulators runs here, without a GPU: each CUDA executable
# X through X.emu.so, the CUDA emulator holding its kernels compiled for
# the CPU (runtime/cuda/cuda_emulator.h).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bundle="$1"
out="${2:-$(mktemp -d)}"
mkdir -p "$out"
# make-bundle.sh packs a GPU bundle into one archive (an emulator
# bundle stays unpacked).
if [ -f "$bundle/bundle.tar.xz" ] && [ ! -f "$bundle/stories260K" ]; then
  xz -dc "$bundle/bundle.tar.xz" | tar xf - -C "$bundle" || exit
fi
export LD_LIBRARY_PATH="$bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
inputs="$root/test/e2e/Inputs"
rm -f "$out"/*.result
run_model() { # EXE ARGS...: on the GPU, or through EXE's emulator
  local exe="$1"; shift
  if [ -f "$exe.emu.so" ]; then
    TFM_CUDA_DRIVER="$exe.emu.so" "$exe" "$@"
  else
    "$exe" "$@"
  fi
}
export -f run_model
# TFM_GPU_CHECK_JOBS=N runs N checks at once (a GPU has room for many of
# these small models; the checks write apart), TFM_GPU_CHECK_TIMEOUT
# bounds each (seconds): a hung kernel costs one check, not the run.
check_jobs="${TFM_GPU_CHECK_JOBS:-1}"
check_timeout="${TFM_GPU_CHECK_TIMEOUT:-180}"
run_check() { # NAME COMMAND...: runs it, reports PASS or FAIL with its output
  local name="$1" report; shift
  if timeout "$check_timeout" "$@" > "$out/$name.log" 2>&1; then
    report="PASS $name: $(tail -1 "$out/$name.log")"; echo pass > "$out/$name.result"
  else
    report="FAIL $name (exit $?):"$'\n'"$(tail -20 "$out/$name.log")"
    echo fail > "$out/$name.result"
  fi
  echo "$report" # one write, so that parallel checks' reports stay whole
}
check() { # NAME COMMAND...
  if [ "$check_jobs" -le 1 ]; then run_check "$@"; return; fi
  while [ "$(jobs -rp | wc -l)" -ge "$check_jobs" ]; do wait -n; done
  run_check "$@" &
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
[ -f "$bundle/unsupported.txt" ] && sed 's/^/UNSUPPORTED /' "$bundle/unsupported.txt"

# Logits within 1e-3 of the reference the CPU tests use (make_goldens.py,
# transformers' LlamaForCausalLM in f32). The f16 and bf16 checkpoints'
# weights stay narrow on the GPU and the prompt's products run on tensor
# cores, which multiply the activations rounded to the weights' type: their
# reference is the same model with every product's activations so rounded
# (.tensor-core.logits.bin; 0.067 and 0.011 from the exact ones), within
# 5e-3 (f32 sums in another order can round an activation the other way).
tokens="1 17 42 5 63 0 28 9 33 12 50 7"
logits_check() { # MODEL GOLDEN TOL
  check "$1-logits" bash -c "run_model '$bundle/$1' --tokens '$tokens' -n 0 \
    --logits '$out/$1.logits' && python3 '$root/test/e2e/compare_logits.py' \
    '$out/$1.logits' '$inputs/$2' --tol $3"
}
logits_check llama-mha-f32 llama-mha-f32.logits.bin 1e-3
for model in llama-gqa-f16-untied llama-gqa-bf16-sharded; do
  logits_check "$model" "$model.tensor-core.logits.bin" 5e-3
  # Diagnostic: compiled --no-cuda-tensor-cores, the products widen the
  # weights on CUDA cores and match the exact reference.
  logits_check "$model-no-mma" "$model.logits.bin" 1e-3
done
# Every decoder family of the CPU tests (GPT-2, Gemma, GPT-NeoX, Phi,
# Qwen2, OLMo, StableLM, StarCoder2, LLaMA's RoPE scalings, Mistral's
# window): the forward pass's logits, and the cache path's (a prefill of
# 3, then a decode step a token) against the same rows, within 1e-3 of
# transformers' (make_family_goldens.py, make_goldens.py).
for exe in "$bundle"/family-*; do
  case "$exe" in *.gz|*.emu.so) continue ;; esac
  name="${exe##*/family-}"
  golden="$root/test/e2e/families/Inputs/$name.logits.bin"
  [ -f "$golden" ] || golden="$inputs/$name.logits.bin"
  # LongRoPE rotates each row by its own sequence length, as cached
  # generation does: tfmc's forward and decode both match that golden.
  cached="${golden%.logits.bin}.cached.logits.bin"
  [ -f "$cached" ] && golden="$cached"
  check "$name-forward" bash -c "run_model '$exe' --tokens '$tokens' -n 0 --logits \
    '$out/$name.forward' && python3 '$root/test/e2e/compare_logits.py' \
    '$out/$name.forward' '$golden' --tol 1e-3"
  check "$name-decode" bash -c "run_model '$exe' --tokens '1 17 42' --ignore-eos --force-tokens \
    '5 63 0 28 9 33 12 50 7' --step-logits '$out/$name.decode' && python3 \
    '$root/test/e2e/compare_logits.py' '$out/$name.decode' '$golden' \
    --expected-rows 2:11 --row-size 64 --tol 1e-3"
done
# Encoders (bidirectional attention, token types) and vision transformers
# (pixels in): their outputs within 1e-3 of transformers'
# (make_encoder_goldens.py, make_vision_goldens.py).
encoders="$root/test/e2e/encoders/Inputs"
vision="$root/test/e2e/vision/Inputs"
bert_tokens=(--tokens "2 17 42 5 63 0 28 9 33 3")
bert_types=(--token-types "0 0 0 0 0 1 1 1 1 1")
roberta_tokens=(--tokens "0 17 42 1 63 5 28 9 2")
pixels=(--pixels "$vision/pixels.f32")
output_check() { # CHECK EXE GOLDEN ARGS...: EXE ARGS --output vs GOLDEN
  local name="$1" exe="$bundle/$2" golden="$3"; shift 3
  check "$name" bash -c 'run_model "$@" --output "'"$out/$name"'.out" && python3 \
    "'"$root"'/test/e2e/compare_logits.py" "'"$out/$name"'.out" "'"$golden"'" --tol 1e-3' \
    _ "$exe" "$@"
}
output_check bert-hidden encoder-bert "$encoders/bert.hidden.bin" "${bert_tokens[@]}" "${bert_types[@]}"
output_check bert-pooled encoder-bert "$encoders/bert.pooled.bin" --call pool "${bert_tokens[@]}" "${bert_types[@]}"
output_check bert-mlm encoder-bert-mlm "$encoders/bert-mlm.logits.bin" "${bert_tokens[@]}"
output_check bert-sequence encoder-bert-sequence "$encoders/bert-sequence.logits.bin" "${bert_tokens[@]}" "${bert_types[@]}"
output_check bert-tokens encoder-bert-tokens "$encoders/bert-tokens.logits.bin" "${bert_tokens[@]}" "${bert_types[@]}"
output_check distilbert-mlm encoder-distilbert-mlm "$encoders/distilbert-mlm.logits.bin" "${bert_tokens[@]}"
output_check electra-mlm encoder-electra-mlm "$encoders/electra-mlm.logits.bin" "${bert_tokens[@]}"
output_check roberta-mlm encoder-roberta-mlm "$encoders/roberta-mlm.logits.bin" "${roberta_tokens[@]}"
output_check roberta-sequence encoder-roberta-sequence "$encoders/roberta-sequence.logits.bin" "${roberta_tokens[@]}"
output_check vit-hidden vision-vit "$vision/vit.hidden.bin" "${pixels[@]}"
for name in vit-classifier deit-classifier deit-teacher; do
  output_check "$name" "vision-$name" "$vision/$name.logits.bin" "${pixels[@]}"
done
# Encoder-decoders: each decode step's logits (teacher-forced) within 1e-3
# of transformers', and the greedy and beam tokens the CPU tests expect
# (make_seq2seq_goldens.py, make_whisper_goldens.py).
seq2seq="$root/test/e2e/seq2seq/Inputs"
seq2seq_check() { # NAME SOURCE-ARGS FORCED
  local name="$1" source="$2" forced="$3" exe="$bundle/seq2seq-$1"
  check "$name-steps" bash -c "run_model '$exe' $source --force-tokens '$forced' \
    --step-logits '$out/$name.steps' && python3 '$root/test/e2e/compare_logits.py' \
    '$out/$name.steps' '$seq2seq/$name.logits.bin' --tol 1e-3"
}
seq2seq_check bart "--tokens '5 17 42 9 33 21 0'" "12 7 30 5 48 1"
seq2seq_check mbart "--tokens '5 17 42 9 33 21 0'" "12 7 30 5 48 1"
seq2seq_check marian "--tokens '5 17 42 9 33 21 0'" "12 7 30 2 48 1"
t5_source="--tokens '5 17 42 9 33 21 8 60 12 3 44 19 27 50 6 38 11 25 1'"
t5_forced="12 7 30 5 48 22 9 41 3 17 58 33 6 20 14 1"
seq2seq_check t5 "$t5_source" "$t5_forced"
seq2seq_check t5-v1.1 "$t5_source" "$t5_forced"
seq2seq_check whisper "--features '$seq2seq/whisper.features.bin'" "266 267 268 72 101 108 259 32 1"
check bart-beams bash -c "for b in 2 4; do for s in '5 17 42 9 33 21 0' '7 3 50 0' \
  '30 31 0' '60 5 0'; do run_model '$bundle/seq2seq-bart' --tokens \"\$s\" -n 12 --beams \$b; \
  done; done > '$out/bart.beams' && diff '$out/bart.beams' '$seq2seq/bart.beams.txt' && echo 'beams equal'"
check whisper-greedy bash -c "run_model '$bundle/seq2seq-whisper' --features \
  '$seq2seq/whisper.features.bin' -n 12 --print-ids > '$out/whisper.ids' && diff \
  '$out/whisper.ids' '$seq2seq/whisper.greedy.txt' && echo '12 greedy tokens equal'"
# stories260K's 200 greedy tokens equal the CPU's (llama2.c's reference).
check stories260K-greedy bash -c "run_model '$bundle/stories260K' -n 200 --print-ids \
  > '$out/stories260K.ids' && diff -w '$out/stories260K.ids' \
  '$inputs/stories260K.greedy200.txt' && echo '200 greedy tokens equal'"
# Diagnostics: the same with decode's attention a block per head
# (--no-cuda-split-attention), with each norm's scaling a kernel of its
# own (--no-cuda-fuse-norms), and with every elementwise generic a kernel
# of its own (--no-cuda-fuse-elementwise).
for variant in no-split no-fuse-norms no-fuse-elementwise; do
  check "stories260K-$variant-greedy" bash -c "run_model '$bundle/stories260K-$variant' -n 200 \
    --print-ids > '$out/stories260K-$variant.ids' && diff -w '$out/stories260K-$variant.ids' \
    '$inputs/stories260K.greedy200.txt' && echo '200 greedy tokens equal'"
done
# With bf16 weights, the same greedy tokens as the CPU's bf16 build (its
# products widened to f32 as the GPU's decode products are: TFM_BF16_DOT=0;
# only the prefill of BOS runs on tensor cores, with rounded activations).
check stories260K-bf16-greedy bash -c "run_model '$bundle/stories260K-bf16' -n 200 --print-ids \
  > '$out/stories260K-bf16.ids' && TFM_BF16_DOT=0 '$bundle/stories260K-bf16-cpu' -n 200 \
  --print-ids > '$out/stories260K-bf16-cpu.ids' && diff -w '$out/stories260K-bf16.ids' \
  '$out/stories260K-bf16-cpu.ids' && echo '200 greedy tokens equal'"
# A prompt of 150 tokens: the tensor-core products over several 64-row
# tiles and the vocabulary's 8 column tiles, against the CPU's bf16 build
# (f32 activations). Rounding the activations moves these logits by up to
# 0.068 (transformers' model with and without it, ../shared/models'
# stories260K-hf); a misplaced fragment moves them by whole units.
long_prompt="1 $(seq -s ' ' 100 249)"
check stories260K-bf16-long-prompt bash -c "run_model '$bundle/stories260K-bf16' \
  --tokens '$long_prompt' -n 0 --logits '$out/long.logits' && TFM_BF16_DOT=0 \
  '$bundle/stories260K-bf16-cpu' --tokens '$long_prompt' -n 0 --logits \
  '$out/long-cpu.logits' && python3 '$root/test/e2e/compare_logits.py' \
  '$out/long.logits' '$out/long-cpu.logits' --tol 0.25"
check stories260K-text bash -c "run_model '$bundle/stories260K' --prompt 'Once upon a time' \
  -n 40 --stats"
# Error paths: PTX for a GPU newer than this one (sm_120) is refused by
# the driver, and the model says so and exits 1, not by a signal (a GPU
# bundle only: the emulator runs any PTX target; cuda-target.test fakes
# the refusal without a GPU).
[ -f "$bundle/stories260K-sm120" ] && check refused-kernel bash -c "run_model '$bundle/stories260K-sm120' -n 4 > '$out/refused.stdout' \
  2> '$out/refused.stderr'; status=\$?; cat '$out/refused.stderr'; [ \$status = 1 ] && \
  grep -q 'the CUDA driver rejected a kernel module' '$out/refused.stderr' && echo 'refused cleanly'"
wait
passes=$(cat "$out"/*.result 2>/dev/null | grep -c pass)
failures=$(cat "$out"/*.result 2>/dev/null | grep -c fail)
echo "gpu checks: $passes passed, $failures failed"
[ "$failures" = 0 ]
