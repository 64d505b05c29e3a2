#!/bin/bash
# Gemma 3 converted by llama.cpp's own convert_hf_to_gguf.py, not
# write_llava_gguf.py's imitation: gemma3.test's folder (with stories260K's
# tokenizer.model) into the text GGUF (--outtype f32) and the mmproj file
# (--mmproj: its projection stays F16), compiled by tfmc with --mmproj:
# the folder's image tokens (f16's rounding), the prompt's logits within
# f16's rounding of the golden, and the greedy ids. The text file gets the
# fixture's layer pattern of 2 (gemma3.attention.sliding_window_pattern,
# which llama.cpp reads and its converter does not write) with gguf-py's
# editor. Not run by CI: it needs llama.cpp's source (npm pack
# node-llama-cpp carries it) and transformers (../shared/reference).
#
#   bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
#   bash test/e2e/vlm/check_llama_cpp_gemma3.sh LLAMA_CPP_SRC
FIXTURE=gemma3
source "$(dirname "$0")/llama_cpp_fixture.sh"
converter="$root/test/e2e/conformance/llama_cpp_converter.py"
(cd "$llama" && /usr/bin/python3 "$converter" --keep-vocab "$work/gemma3" \
   --outfile "$work/converted.gguf" --outtype f32 > "$work/text.log" 2>&1)
(cd "$llama" && /usr/bin/python3 "$converter" --mmproj "$work/gemma3" \
   --outfile "$work/mmproj.gguf" --outtype f32 > "$work/mmproj.log" 2>&1)
/usr/bin/python3 - "$work" <<'PY'
import sys
import gguf
work = sys.argv[1]
reader = gguf.GGUFReader(f"{work}/converted.gguf")
writer = gguf.GGUFWriter(f"{work}/text.gguf", "gemma3")
for field in reader.fields.values():
    if field.name.startswith("GGUF.") or field.name == "general.architecture":
        continue
    value = field.contents()
    kind = field.types[0]
    if kind == gguf.GGUFValueType.ARRAY:
        writer.add_key_value(field.name, value, kind, sub_type=field.types[-1])
    else:
        writer.add_key_value(field.name, value, kind)
writer.add_uint32("gemma3.attention.sliding_window_pattern", 2)
for tensor in reader.tensors:
    writer.add_tensor(tensor.name, tensor.data, raw_shape=tensor.data.shape,
                      raw_dtype=tensor.tensor_type)
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
PY
tfmc="$root/build/bin/tfmc"
"$tfmc" -q "$work/text.gguf" --mmproj "$work/mmproj.gguf" -o "$work/gemma3.exe"
compare="$root/test/e2e/compare_logits.py"
"$work/gemma3.exe" --call encode_image --pixels "$here/Inputs/pixels.f32" --output "$work/image"
/usr/bin/python3 "$compare" "$work/image" "$here/Inputs/gemma3.image.bin" --tol 0.05 --row-size 64 --min-cosine 0.9999
printf '<start_of_turn>user\n<start_of_image>What is in the picture?<end_of_turn>\n<start_of_turn>model\n' > "$work/prompt.txt"
"$work/gemma3.exe" --prompt-file "$work/prompt.txt" --tokenize > "$work/ids.txt"
diff "$work/ids.txt" "$here/Inputs/gemma3.ids.txt"
"$work/gemma3.exe" --prompt-file "$work/prompt.txt" --pixels "$here/Inputs/pixels.f32" -n 1 --step-logits "$work/first"
/usr/bin/python3 "$compare" "$work/first" "$here/Inputs/gemma3.logits.bin" --tol 0.05
ids=$("$work/gemma3.exe" --prompt-file "$work/prompt.txt" --pixels "$here/Inputs/pixels.f32" -n 6 --print-ids)
same_greedy_ids "$ids" "$here/Inputs/gemma3.greedy.txt"
