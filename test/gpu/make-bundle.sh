#!/usr/bin/env bash
# make-bundle.sh - compiles the GPU checks' models with --target=cuda here
# (the GPU machine has no LLVM/MLIR) and gathers them, with the shared
# libraries they load that a bare machine may lack, into one folder:
#
#   bash test/gpu/make-bundle.sh [--emulators] [BUNDLE]   # default build/gpu-bundle
#
# then, on a machine with an NVIDIA GPU and its driver, from the repository
# root: bash test/gpu/run-gpu-checks.sh BUNDLE (which unpacks its
# bundle.tar.xz). With --emulators, each CUDA executable X also gets X.emu.so
# (--emit=cuda-emulator), nothing is packed, and run-gpu-checks.sh runs
# the same checks here, each model's kernels on the CPU.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
emulators=0
if [ "${1:-}" = --emulators ]; then emulators=1; shift; fi
bundle="${1:-$root/build/gpu-bundle}"
tfmc="$root/build/bin/tfmc"
shared="$root/../shared/models"
rm -rf "$bundle" && mkdir -p "$bundle"
cuda_model() { # OUT TFMC-ARGS...: a --target=cuda build (and its emulator)
  local out="$1"; shift
  # Explicit returns: a caller's `if` turns set -e off inside the function.
  "$tfmc" -q "$@" --target=cuda -o "$out" || return
  if [ $emulators = 1 ]; then
    "$tfmc" -q "$@" --target=cuda --emit=cuda-emulator -o "$out.emu.so" || return
  fi
}
# f32 checkpoints stay f32 on request (bf16 is the GPU's default).
cuda_model "$bundle/stories260K" "$shared/stories260K/stories260K.bin" --tokenizer "$shared/stories260K/tok512.bin" \
  --weights-dtype=f32
cuda_model "$bundle/llama-mha-f32" "$root/test/e2e/Inputs/llama-mha-f32" --weights-dtype=f32
# The f16 and bf16 checkpoints keep their dtype in device memory.
cuda_model "$bundle/llama-gqa-f16-untied" "$root/test/e2e/Inputs/llama-gqa-f16-untied"
cuda_model "$bundle/llama-gqa-bf16-sharded" "$root/test/e2e/Inputs/llama-gqa-bf16-sharded"
cuda_model "$bundle/stories260K-bf16" "$shared/stories260K/stories260K.bin" --tokenizer "$shared/stories260K/tok512.bin" \
  --weights-dtype=bf16
"$tfmc" -q "$shared/stories260K/stories260K.bin" --tokenizer "$shared/stories260K/tok512.bin" \
  --weights-dtype=bf16 --mcpu=x86-64-v3 -o "$bundle/stories260K-bf16-cpu"
# PTX for a newer GPU than the H100/H200's sm_90, which their driver must
# refuse (run-gpu-checks.sh checks that the model fails cleanly).
[ $emulators = 1 ] || "$tfmc" -q "$shared/stories260K/stories260K.bin" --tokenizer "$shared/stories260K/tok512.bin" \
  --target=cuda --cuda-arch=sm_120 -o "$bundle/stories260K-sm120"
# The same without the tensor-core GEMM, and without the split decode
# attention: where a check fails, these say which of them to suspect.
for model in llama-gqa-f16-untied llama-gqa-bf16-sharded; do
  cuda_model "$bundle/$model-no-mma" "$root/test/e2e/Inputs/$model" --no-cuda-tensor-cores
done
cuda_model "$bundle/stories260K-no-split" "$shared/stories260K/stories260K.bin" --tokenizer "$shared/stories260K/tok512.bin" \
  --weights-dtype=f32 --no-cuda-split-attention
cuda_model "$bundle/stories260K-no-fuse-norms" "$shared/stories260K/stories260K.bin" --tokenizer "$shared/stories260K/tok512.bin" \
  --weights-dtype=f32 --no-cuda-fuse-norms
cuda_model "$bundle/stories260K-no-fuse-elementwise" "$shared/stories260K/stories260K.bin" \
  --tokenizer "$shared/stories260K/tok512.bin" --weights-dtype=f32 --no-cuda-fuse-elementwise
# Every decoder family the CPU tests check against transformers (f32
# checkpoints, f32 on the GPU too: their goldens are f32 logits).
for dir in "$root"/test/e2e/families/Inputs/*/ "$root/test/e2e/Inputs/gpt2-f32" \
           "$root/test/e2e/Inputs/mistral-window4"; do
  name="$(basename "$dir")"
  [ -f "$(dirname "$dir")/$name.logits.bin" ] || continue
  # A family the CUDA target cannot compile yet (mixtures of experts'
  # routing, recurrent layers) is listed in unsupported.txt with tfmc's
  # message, which run-gpu-checks.sh prints: the bundle holds the rest.
  if ! message=$(cuda_model "$bundle/family-$name" "$dir" --weights-dtype=f32 2>&1); then
    echo "family-$name: $(echo "$message" | grep -m1 error)" >> "$bundle/unsupported.txt"
    rm -f "$bundle/family-$name" "$bundle/family-$name.emu.so"
  fi
done
# Encoders (BERT, DistilBERT, ELECTRA, RoBERTa: hidden states, pooler, heads).
for name in bert bert-mlm bert-sequence bert-tokens distilbert-mlm electra-mlm \
            roberta-mlm roberta-sequence; do
  cuda_model "$bundle/encoder-$name" "$root/test/e2e/encoders/Inputs/$name" --weights-dtype=f32
done
# Vision transformers (ViT, DeiT: pixels in).
for name in vit vit-classifier deit-classifier deit-teacher; do
  cuda_model "$bundle/vision-$name" "$root/test/e2e/vision/Inputs/$name" --weights-dtype=f32
done
# Encoder-decoders (BART, mBART, Marian, T5, T5 v1.1, Whisper): their cross-attention
# and beams' caches in GPU memory.
for name in bart mbart marian t5 t5-v1.1 whisper; do
  cuda_model "$bundle/seq2seq-$name" "$root/test/e2e/seq2seq/Inputs/$name" --weights-dtype=f32
done
# Every executable's libraries: vision and audio models load libjpeg and
# the like, which the GPU machine lacks.
find "$bundle" -maxdepth 1 -type f -perm -u+x ! -name '*.emu.so' -print0 |
  xargs -0 bash "$root/test/gpu/copy-libs.sh" "$bundle/lib"
[ $emulators = 1 ] && { du -sh --apparent-size "$bundle"; exit 0; }
# PTX is text and the executables share their runtime: one solid xz
# archive of them all (and the libraries) is what fits beside the
# repository in a device run (64 MiB); run-gpu-checks.sh unpacks it.
tar cf - -C "$bundle" --exclude=bundle.tar.xz . | xz -9 -T2 > "$bundle/bundle.tar.xz"
find "$bundle" -mindepth 1 ! -name bundle.tar.xz -delete
du -sh --apparent-size "$bundle"
