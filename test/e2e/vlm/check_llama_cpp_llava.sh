#!/bin/bash
# LLaVA 1.5 converted by llama.cpp's own converters, not
# write_llava_gguf.py's imitation: llava.test's folder (with stories260K's
# tokenizer.model) through convert_hf_to_gguf.py for the text model and
# the legacy convert_image_encoder_to_gguf.py (a CLIP folder saved from
# the tower, the projector saved as llava.projector, --use-f32: its patch
# embedding and projector stay F16) for the mmproj file, compiled by
# tfmc with --mmproj: the folder's image tokens (f16's rounding), logits
# within 1e-4 of the golden's where the image is the same, and the greedy
# ids. Not run by CI: it needs llama.cpp's source (npm pack
# node-llama-cpp carries it) and transformers (../shared/reference).
#
#   bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
#   bash test/e2e/vlm/check_llama_cpp_llava.sh LLAMA_CPP_SRC
FIXTURE=llava
source "$(dirname "$0")/llama_cpp_fixture.sh"
(cd "$llama" && /usr/bin/python3 "$root/test/e2e/conformance/llama_cpp_converter.py" \
   --keep-vocab "$work/llava" --outfile "$work/text.gguf" --outtype f32 \
   > "$work/text.log" 2>&1)
/usr/bin/python3 - "$work" <<'EOF'
import sys
import torch
import transformers
work = sys.argv[1]
model = transformers.LlavaForConditionalGeneration.from_pretrained(f"{work}/llava")
model.vision_tower.save_pretrained(f"{work}/clip")
torch.save({k: v for k, v in model.state_dict().items()
            if k.startswith("multi_modal_projector.")}, f"{work}/llava.projector")
EOF
(cd "$llama/tools/mtmd/legacy-models" && /usr/bin/python3 convert_image_encoder_to_gguf.py \
   -m "$work/clip" --llava-projector "$work/llava.projector" \
   --output-dir "$work/mmproj" --clip-model-is-vision --use-f32 \
   > "$work/mmproj.log" 2>&1)
tfmc="$root/build/bin/tfmc"
"$tfmc" -q "$work/text.gguf" --mmproj "$work/mmproj/mmproj-model-f32.gguf" -o "$work/llava.exe"
compare="$root/test/e2e/compare_logits.py"
"$work/llava.exe" --call encode_image --pixels "$here/Inputs/pixels.f32" --output "$work/image"
/usr/bin/python3 "$compare" "$work/image" "$here/Inputs/llava.image.bin" --tol 0.1 --row-size 64 --min-cosine 0.99999
tokens="1 410 471 437 459 461 467 512 410 13 448 415 294 410 293 322 265 282 417 429 413 425 276 450 410 447 437 437 442 437 434 447 458 434 467"
ids=$("$work/llava.exe" --tokens "$tokens" --pixels "$here/Inputs/pixels.f32" -n 6 --print-ids)
same_greedy_ids "$ids" "$here/Inputs/llava.greedy.txt"
