#!/usr/bin/env bash
# make-bundle.sh - compiles the GPU checks' models with --target=cuda here
# (the GPU machine has no LLVM/MLIR) and gathers them, with the shared
# libraries they load that a bare machine may lack, into one folder:
#
#   bash test/gpu/make-bundle.sh [BUNDLE]   # default build/gpu-bundle
#
# then, on a machine with an NVIDIA GPU and its driver, from the repository
# root: bash test/gpu/run-gpu-checks.sh BUNDLE (which unpacks the gzipped
# executables).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
bundle="${1:-$root/build/gpu-bundle}"
tfmc="$root/build/bin/tfmc"
shared="$root/../shared/models"
rm -rf "$bundle" && mkdir -p "$bundle"
# f32 checkpoints stay f32 on request (bf16 is the GPU's default).
"$tfmc" -q "$shared/stories260K/stories260K.bin" --tokenizer "$shared/stories260K/tok512.bin" \
  --target=cuda --weights-dtype=f32 -o "$bundle/stories260K"
"$tfmc" -q "$root/test/e2e/Inputs/llama-mha-f32" --target=cuda --weights-dtype=f32 \
  -o "$bundle/llama-mha-f32"
# The f16 and bf16 checkpoints keep their dtype in device memory.
"$tfmc" -q "$root/test/e2e/Inputs/llama-gqa-f16-untied" --target=cuda -o "$bundle/llama-gqa-f16-untied"
"$tfmc" -q "$root/test/e2e/Inputs/llama-gqa-bf16-sharded" --target=cuda -o "$bundle/llama-gqa-bf16-sharded"
"$tfmc" -q "$shared/stories260K/stories260K.bin" --tokenizer "$shared/stories260K/tok512.bin" \
  --target=cuda --weights-dtype=bf16 -o "$bundle/stories260K-bf16"
"$tfmc" -q "$shared/stories260K/stories260K.bin" --tokenizer "$shared/stories260K/tok512.bin" \
  --weights-dtype=bf16 --mcpu=x86-64-v3 -o "$bundle/stories260K-bf16-cpu"
# The same without the tensor-core GEMM, and without the split decode
# attention: where a check fails, these say which of them to suspect.
for model in llama-gqa-f16-untied llama-gqa-bf16-sharded; do
  "$tfmc" -q "$root/test/e2e/Inputs/$model" --target=cuda --no-cuda-tensor-cores \
    -o "$bundle/$model-no-mma"
done
"$tfmc" -q "$shared/stories260K/stories260K.bin" --tokenizer "$shared/stories260K/tok512.bin" \
  --target=cuda --weights-dtype=f32 --no-cuda-split-attention -o "$bundle/stories260K-no-split"
"$tfmc" -q "$shared/stories260K/stories260K.bin" --tokenizer "$shared/stories260K/tok512.bin" \
  --target=cuda --weights-dtype=f32 --no-cuda-fuse-norms -o "$bundle/stories260K-no-fuse-norms"
# Every decoder family the CPU tests check against transformers (f32
# checkpoints, f32 on the GPU too: their goldens are f32 logits).
for dir in "$root"/test/e2e/families/Inputs/*/ "$root/test/e2e/Inputs/gpt2-f32" \
           "$root/test/e2e/Inputs/mistral-window4"; do
  name="$(basename "$dir")"
  [ -f "$(dirname "$dir")/$name.logits.bin" ] || continue
  "$tfmc" -q "$dir" --target=cuda --weights-dtype=f32 -o "$bundle/family-$name"
done
# Encoders (BERT, DistilBERT, ELECTRA, RoBERTa: hidden states, pooler, heads).
for name in bert bert-mlm bert-sequence bert-tokens distilbert-mlm electra-mlm \
            roberta-mlm roberta-sequence; do
  "$tfmc" -q "$root/test/e2e/encoders/Inputs/$name" --target=cuda --weights-dtype=f32 \
    -o "$bundle/encoder-$name"
done
# Vision transformers (ViT, DeiT: pixels in).
for name in vit vit-classifier deit-classifier deit-teacher; do
  "$tfmc" -q "$root/test/e2e/vision/Inputs/$name" --target=cuda --weights-dtype=f32 \
    -o "$bundle/vision-$name"
done
bash "$root/test/gpu/copy-libs.sh" "$bundle/lib" "$bundle"/stories260K* "$bundle"/llama-*
# PTX is text: gzipped (and the libraries), the bundle fits what a device
# run carries.
gzip "$bundle"/stories260K* "$bundle"/llama-* "$bundle"/family-* "$bundle"/encoder-* \
  "$bundle"/vision-* "$bundle"/lib/*
du -sh --apparent-size "$bundle"
