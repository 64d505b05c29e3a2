#!/bin/bash
# SmolVLM / Idefics3 converted by llama.cpp's own convert_hf_to_gguf.py,
# not write_llava_gguf.py's imitation: idefics3.test's folder (with
# stories260K's tokenizer.model; text_config.architectures set, without
# which the converter refuses the text model) into the text GGUF and the
# mmproj file (--outtype f32), compiled by tfmc with --mmproj: the tile's
# rows, the photo's prompt ids, its logits and greedy ids as the
# folder's. Not run by CI: it needs llama.cpp's source (npm pack
# node-llama-cpp carries it) and transformers (../shared/reference).
#
#   bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
#   bash test/e2e/vlm/check_llama_cpp_idefics3.sh LLAMA_CPP_SRC
FIXTURE=idefics3
source "$(dirname "$0")/llama_cpp_fixture.sh"
/usr/bin/python3 - "$work/idefics3/config.json" <<'PY'
import json
import sys
with open(sys.argv[1]) as f:
    config = json.load(f)
config["text_config"]["architectures"] = ["VLlama3ForCausalLM"]
with open(sys.argv[1], "w") as f:
    json.dump(config, f, indent=2)
PY
converter="$root/test/e2e/conformance/llama_cpp_converter.py"
(cd "$llama" && /usr/bin/python3 "$converter" --keep-vocab "$work/idefics3" \
   --outfile "$work/text.gguf" --outtype f32 > "$work/text.log" 2>&1)
(cd "$llama" && /usr/bin/python3 "$converter" --mmproj "$work/idefics3" \
   --outfile "$work/mmproj.gguf" --outtype f32 > "$work/mmproj.log" 2>&1)
tfmc="$root/build/bin/tfmc"
"$tfmc" -q "$work/text.gguf" --mmproj "$work/mmproj.gguf" -o "$work/idefics3.exe"
"$tfmc" -q "$work/text.gguf" --mmproj "$work/mmproj.gguf" --emit=lib -o "$work/libidefics3.so"
compare="$root/test/e2e/compare_logits.py"
photo="$root/test/e2e/vision/Inputs/images/photo.png"
"$work/idefics3.exe" --call encode_image --pixels "$here/Inputs/pixels.f32" --output "$work/tile"
/usr/bin/python3 "$compare" "$work/tile" "$here/Inputs/idefics3.tile.bin" --tol 1e-4
printf 'User:<image>What is in the picture?<end_of_utterance>\nAssistant:' > "$work/prompt.txt"
PYTHONPATH="$root/python" /usr/bin/python3 "$here/image_prompt_ids.py" \
  "$work/libidefics3.so" "$work/prompt.txt" "$photo" > "$work/ids.txt"
diff "$work/ids.txt" "$here/Inputs/idefics3.ids.txt"
"$work/idefics3.exe" --prompt-file "$work/prompt.txt" "$photo" -n 1 --step-logits "$work/first"
/usr/bin/python3 "$compare" "$work/first" "$here/Inputs/idefics3.logits.bin" --tol 1e-4
ids=$("$work/idefics3.exe" --prompt-file "$work/prompt.txt" "$photo" -n 6 --print-ids)
same_greedy_ids "$ids" "$here/Inputs/idefics3.greedy.txt"
