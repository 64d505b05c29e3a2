#!/bin/bash
# GGUF files from llama.cpp's own converter (convert_hf_to_gguf.py), not
# write_gguf.py's imitation: for each conformance model named, its fixture
# converted by llama.cpp and compiled by tfmc gives the logits of the
# Hugging Face folder compiled by tfmc (which the conformance suite checks
# against transformers), both with f32 weights. Not run by CI: it needs
# llama.cpp's source (npm pack node-llama-cpp carries it, see
# bench/compare_weight_formats.py) and transformers (../shared/reference).
#
#   bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
#   bash test/e2e/conformance/check_llama_cpp_converter.sh LLAMA_CPP_SRC \
#       olmoe-1b-7b-0924 qwen3-30b-a3b ...
set -euo pipefail
llama=$(cd "$1" && pwd); shift
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
work=$(mktemp -d)
trap '[ -n "${KEEP_WORK:-}" ] || rm -rf "$work"' EXIT
tfmc="$root/build/bin/tfmc"
status=0
for name in "$@"; do
  manifest="$here/Inputs/$name.json"
  dir="$work/$name"
  /usr/bin/python3 "$here/make_fixture.py" "$manifest" "$dir"
  # The converter reads a SentencePiece model's pieces only where
  # tokenizer.model is (Gemma 3 counts them): an empty one stands in, in a
  # copy of the fixture that tfmc does not read.
  mkdir "$dir.in" && cp "$dir"/* "$dir.in"/
  if [ ! -e "$dir/tokenizer.json" ]; then : > "$dir.in/tokenizer.model"; fi
  if ! (cd "$llama" && PYTHONPATH="$llama/gguf-py:${PYTHONPATH:-}" \
        /usr/bin/python3 "$here/llama_cpp_converter.py" "$dir.in" \
        --outfile "$dir.gguf" --outtype f32 > "$dir.log" 2>&1); then
    echo "$name: llama.cpp's converter failed: $(tail -1 "$dir.log")"
    status=1
    continue
  fi
  tokens=$(/usr/bin/python3 -c "import json, sys; print(' '.join(map(str, json.load(open(sys.argv[1]))['tokens'])))" "$manifest")
  "$tfmc" -q "$dir" --weights-dtype=f32 -o "$dir.hf"
  "$tfmc" -q "$dir.gguf" --weights-dtype=f32 -o "$dir.converted"
  "$dir.hf" --tokens "$tokens" -n 0 --logits "$dir.hf.logits" > /dev/null
  "$dir.converted" --tokens "$tokens" -n 0 --logits "$dir.converted.logits" > /dev/null
  result=$(python3 "$root/test/e2e/compare_logits.py" "$dir.converted.logits" \
           "$dir.hf.logits" --tol 1e-4) || status=1
  echo "$name: $result"
done
exit $status
