#!/usr/bin/env python3
"""bench/vlm_first_token.py: the time to the first token of a LLaVA-1.5
shape (llava-1.5-7b-hf's config as published: the CLIP ViT-L/14 tower at
336 px, 24 layers, 576 image rows; the 4096-wide LLaMA text model, its
depth cut to --text-layers of 32 to fit the machine; random bf16 weights)
for one image and a 32-token question, tfmc against transformers 4.40's
LlavaForConditionalGeneration on PyTorch, and the image's encoding alone.

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 bench/vlm_first_token.py --work /tmp/vlmb [--rounds 3]

tfmc: the folder compiled to an executable (the bf16 weights kept as
stored), run with --pixels and -n 1 --stats: image_seconds (@encode_image)
plus prefill_seconds (the prompt's 608 positions, the image's rows through
@prefill_embeddings). PyTorch: the model in f32 (its CPU kernels have no
bf16 GEMM here), torch.set_num_threads(2), no grad: the vision tower and
projector alone, then forward() of the prompt with the image (4.40
computes every position's logits; the first token needs the last's). Each
figure is the best of the rounds.

With --llama-cpp SRC (llama.cpp's source, llama-mtmd-cli built in
SRC/build/bin), the same weights as llama.cpp keeps them: the text model
through its convert_hf_to_gguf.py (bf16, as stored; stories260K's
tokenizer.model with <image> added, since the random model has none), the
tower and projector through its legacy convert_image_encoder_to_gguf.py
(mmproj-model-f16.gguf, as published LLaVA 1.5 mmproj files are). tfmc
compiles that pair (--mmproj) and llama-mtmd-cli runs it, both on one
336 px PNG and the same question in Vicuna's format ("USER: <image>\n...
\nASSISTANT:", mtmd's --chat-template vicuna), 2 threads: tfmc's
image_seconds and image_seconds + prefill_seconds; llama.cpp's "mtmd batch
encoding done in" (the image) and llama_perf's prompt eval time, which
runs from the first prompt chunk's decode to the first logits and so
holds the image's encoding (its tokens counted with the prompt's). mtmd
runs one ViT block fewer than the file holds (llama.cpp issue #25817):
its encoding does 22 of the 23 blocks tfmc does.

With --next, llava-v1.6-mistral-7b-hf's shape instead (Mistral's text
model cut to --text-layers, the same tower) and a 672 px PNG, which
LlavaNextImageProcessor cuts into five 336 px tiles (2,928 image rows):
tfmc's executable on the file (tfm_image_tokens: the tiles through
@encode_image, laid out) against 4.40's LlavaNextForConditionalGeneration
(the tower and projector on the five tiles; forward() with the image).

With --gemma3, gemma-3-4b-it's shape (SigLIP-So400m at 896 px: 4096
patches through 27 layers, pooled to 256 rows; the 2560-wide text model
cut to --text-layers of 34, its 262,208-id embedding kept) and one image
between <start_of_image> and <end_of_image> (289 positions): tfmc's
executable with --pixels against transformers 4.50's
Gemma3ForConditionalGeneration as make_gemma3_goldens.py transcribes it
onto 4.40's SigLIP and Gemma (f32; its image rows attending both ways).

With --smolvlm, SmolVLM-256M-Instruct's shape whole (published/: the
SigLIP-base tower at 512 px, 12 layers, each tile's 1024 patches
shuffled to 64 rows; the 576-wide, 30-layer LLaMA text model; random bf16
weights) and a 512 px PNG, which Idefics3ImageProcessor resizes to 2048 px
and cuts into 4 x 4 tiles and the whole (17 tiles, 1088 rows): tfmc's
executable on the file (decoding, Lanczos resizes, the tiles through
@encode_image, the processor's tokens around them) against 4.46's
Idefics3ForConditionalGeneration as make_idefics3_goldens.py transcribes
it onto 4.40's Idefics2 tower and LLaMA (f32): its preprocessing (PIL's
Lanczos) and the tower with the connector, then the same and forward()
of the prompt.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PUBLISHED = os.path.join(ROOT, "test", "e2e", "vlm", "published",
                         "llava-1.5-7b-hf.json")
PUBLISHED_NEXT = os.path.join(ROOT, "test", "e2e", "vlm", "published",
                              "llava-v1.6-mistral-7b-hf.json")
PUBLISHED_GEMMA3 = os.path.join(ROOT, "test", "e2e", "vlm", "published",
                                "gemma-3-4b-it.json")
IMAGE_TOKEN = 32000
NEXT_SIDE = 672  # the --next image: llava-v1.6's 2 x 2 tiles, no unpadding
# Gemma3TextConfig's and SiglipVisionConfig's defaults for what
# gemma-3-4b-it's config leaves out.
GEMMA3_TEXT_DEFAULTS = dict(
    vocab_size=262208, num_attention_heads=8, num_key_value_heads=4,
    head_dim=256, hidden_activation="gelu_pytorch_tanh",
    max_position_embeddings=131072, rms_norm_eps=1e-6, pad_token_id=0,
    eos_token_id=1, bos_token_id=2, tie_word_embeddings=True,
    rope_theta=1000000.0, attention_bias=False, attention_dropout=0.0,
    query_pre_attn_scalar=256, sliding_window_pattern=6,
    rope_local_base_freq=10000.0, attn_logit_softcapping=None,
    final_logit_softcapping=None)
GEMMA3_VISION_DEFAULTS = dict(num_channels=3, layer_norm_eps=1e-6,
                              hidden_act="gelu_pytorch_tanh",
                              attention_dropout=0.0)


def prompt_ids():
    """BOS, 15 ids, the image's placeholder, 15 ids: a 32-token question."""
    words = list(range(1000, 1015))
    return [1] + words + [IMAGE_TOKEN] + [w + 100 for w in words]


def make_model(directory, text_layers, next_model):
    import torch
    import transformers as tf
    if os.path.exists(os.path.join(directory, "config.json")):
        return
    with open(PUBLISHED_NEXT if next_model else PUBLISHED) as f:
        fields = json.load(f)
    fields["text_config"]["num_hidden_layers"] = text_layers
    for key in ("architectures", "model_type", "transformers_version",
                "torch_dtype", "use_image_newline_parameter"):
        fields.pop(key, None)
    torch.manual_seed(0)
    if next_model:
        model = tf.LlavaNextForConditionalGeneration(
            tf.LlavaNextConfig(**fields))
        # llava-v1.6's processor, which tfmc reads the tiles' steps from.
        side = fields["vision_config"]["image_size"]
        tf.LlavaNextImageProcessor(
            size={"shortest_edge": side},
            crop_size={"height": side, "width": side},
            image_grid_pinpoints=fields["image_grid_pinpoints"]
        ).save_pretrained(directory)
    else:
        model = tf.LlavaForConditionalGeneration(tf.LlavaConfig(**fields))
    model.to(torch.bfloat16).save_pretrained(directory,
                                             safe_serialization=True)


def gemma3_reference():
    """make_gemma3_goldens.py's transcription of 4.50's model."""
    sys.path.insert(0, os.path.join(ROOT, "test", "e2e", "vlm"))
    import make_gemma3_goldens
    return make_gemma3_goldens


def gemma3_config(text_layers):
    with open(PUBLISHED_GEMMA3) as f:
        config = json.load(f)
    config["text_config"] = {**GEMMA3_TEXT_DEFAULTS, **config["text_config"],
                             "num_hidden_layers": text_layers}
    config["vision_config"] = {**GEMMA3_VISION_DEFAULTS,
                               **config["vision_config"]}
    return config


def gemma3_prompt(config, placeholders):
    """BOS, 15 ids, <start_of_image>, `placeholders` of the image's rows
    (one: tfmc widens it to the rows), <end_of_image>, 15 ids."""
    words = list(range(1000, 1015))
    return ([2] + words + [config["boi_token_index"]] +
            [config["image_token_index"]] * placeholders +
            [config["eoi_token_index"]] + [w + 100 for w in words])


def make_gemma3(directory, text_layers):
    """gemma-3-4b-it's shape, random weights saved in bf16 under 4.50's
    names, with its processor's preprocessor_config.json (896 px)."""
    import safetensors.torch
    import torch
    if os.path.exists(os.path.join(directory, "config.json")):
        return
    config = gemma3_config(text_layers)
    torch.manual_seed(0)
    model = gemma3_reference().Gemma3ForConditionalGeneration440(config)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    side = config["vision_config"]["image_size"]
    with open(os.path.join(directory, "preprocessor_config.json"), "w") as f:
        json.dump({"image_processor_type": "Gemma3ImageProcessor",
                   "size": {"height": side, "width": side}, "resample": 2,
                   "image_mean": [0.5] * 3, "image_std": [0.5] * 3,
                   "image_seq_length": config["mm_tokens_per_image"]}, f)
    weights = {k: v.to(torch.bfloat16).contiguous()
               for k, v in model.state_dict().items()
               if k != "language_model.lm_head.weight"}
    safetensors.torch.save_file(weights, os.path.join(
        directory, "model.safetensors"), metadata={"format": "pt"})


def gemma3_torch_times(directory, text_layers, pixels, rounds):
    """The transcription in f32 with the folder's weights: the tower and
    projector alone, then the prompt's logits with the image."""
    import safetensors.torch
    import torch
    torch.set_num_threads(2)
    config = gemma3_config(text_layers)
    model = gemma3_reference().Gemma3ForConditionalGeneration440(config)
    state = {k: v.float() for k, v in safetensors.torch.load_file(
        os.path.join(directory, "model.safetensors")).items()}
    model.load_state_dict(state, strict=False)  # lm_head: tied
    model.language_model.tie_weights()
    model.eval()
    ids = torch.tensor(gemma3_prompt(config, config["mm_tokens_per_image"]))
    values = torch.from_numpy(pixels)[None]
    image, first = [], []
    with torch.no_grad():
        for _ in range(rounds):
            start = time.perf_counter()
            model.image_tokens(values)
            image.append(time.perf_counter() - start)
            start = time.perf_counter()
            model(ids, values)
            first.append(time.perf_counter() - start)
    return min(image), min(first)


def gemma3_bench(args):
    import numpy as np
    directory = os.path.join(args.work, "gemma3-model")
    make_gemma3(directory, args.text_layers)
    config = gemma3_config(args.text_layers)
    side = config["vision_config"]["image_size"]
    pixels = np.random.default_rng(0).standard_normal(
        (3, side, side)).astype(np.float32)
    pixels_path = os.path.join(args.work, f"pixels-{side}.f32")
    pixels.tofile(pixels_path)
    prompt = gemma3_prompt(config, 1)
    ours_image, ours_first = run_tfmc(
        os.path.join(args.work, "gemma3"), [directory],
        ["--tokens", " ".join(map(str, prompt)), "--pixels", pixels_path,
         "--print-ids"], args.rounds)
    theirs_image, theirs_first = gemma3_torch_times(
        directory, args.text_layers, pixels, args.rounds)
    report(f"Gemma 3 shape (gemma-3-4b-it), text depth {args.text_layers} "
           f"of 34; one {side} px image (256 rows of 4096 patches) and a "
           f"32-token question", "PyTorch", (ours_image, theirs_image),
           (ours_first, theirs_first))


PUBLISHED_SMOLVLM = os.path.join(ROOT, "test", "e2e", "vlm", "published",
                                 "smolvlm-256m-instruct.json")
SMOLVLM_PROMPT = ("User:<image>What is in this picture? Tell me about the "
                  "colors and the shapes.<end_of_utterance>\nAssistant:")


def idefics3_reference():
    """make_idefics3_goldens.py's transcription of 4.46's model, and
    make_published_llava.py's SmolVLM processor files and tokenizer."""
    sys.path.insert(0, os.path.join(ROOT, "test", "e2e", "vlm"))
    import make_idefics3_goldens
    import make_published_llava
    return make_idefics3_goldens, make_published_llava


def smolvlm_config():
    with open(PUBLISHED_SMOLVLM) as f:
        return json.load(f)


def make_smolvlm(directory):
    """SmolVLM-256M-Instruct's shape, random weights saved in bf16 under
    4.46's names, its processor's files and a tokenizer with its added
    tokens."""
    import safetensors.torch
    import torch
    if os.path.exists(os.path.join(directory, "config.json")):
        return
    goldens, published = idefics3_reference()
    config = smolvlm_config()
    torch.manual_seed(0)
    model = goldens.Idefics3ForConditionalGeneration440(config)
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    with open(os.path.join(directory, "preprocessor_config.json"), "w") as f:
        json.dump(published.SMOLVLM_PROCESSOR, f, indent=2)
    with open(os.path.join(directory, "processor_config.json"), "w") as f:
        json.dump({"image_seq_len": 64}, f)
    published.write_smolvlm_tokenizer(directory)
    weights = {k: v.to(torch.bfloat16).contiguous()
               for k, v in model.state_dict().items()}
    safetensors.torch.save_file(weights, os.path.join(
        directory, "model.safetensors"), metadata={"format": "pt"})


def smolvlm_ids(config, grid, length):
    """A prompt of `length` ids with the image's layout for `grid` (the
    token values other than the image's placeholders do not change the
    work): BOS, "User:", the tiles, the question."""
    image = config["image_token_id"]
    layout = []
    for r in range(grid[0]):
        for c in range(grid[1]):
            layout += [49189, 49153 + r * 6 + c] + [image] * 64
        layout += [13]
    layout += [13, 49189, 49152] + [image] * 64 + [49189]
    head = [1, 59, 118, 104, 117, 30]
    return head + layout + [60] * (length - len(head) - len(layout))


def smolvlm_torch_times(directory, image_path, length, rounds):
    """The transcription in f32 with the folder's weights: preprocessing,
    the tower and connector; then preprocessing and the prompt's logits."""
    import safetensors.torch
    import torch
    from PIL import Image
    torch.set_num_threads(2)
    goldens, published = idefics3_reference()
    config = smolvlm_config()
    model = goldens.Idefics3ForConditionalGeneration440(config)
    model.load_state_dict({k: v.float() for k, v in
                           safetensors.torch.load_file(os.path.join(
                               directory, "model.safetensors")).items()})
    model.eval()
    picture = [("image", Image.open(image_path).convert("RGB"))]
    processor = published.SMOLVLM_PROCESSOR
    _, grids, _ = goldens.preprocess(picture, processor)
    ids = torch.tensor(smolvlm_ids(config, grids[0], length))
    image, first = [], []
    with torch.no_grad():
        for _ in range(rounds):
            start = time.perf_counter()
            tiles, _, mask = goldens.preprocess(picture, processor)
            model.image_features(tiles, mask)
            image.append(time.perf_counter() - start)
            start = time.perf_counter()
            tiles, _, mask = goldens.preprocess(picture, processor)
            model(ids, tiles, mask)
            first.append(time.perf_counter() - start)
    return min(image), min(first), len(tiles)


def smolvlm_bench(args):
    directory = os.path.join(args.work, "smolvlm-model")
    make_smolvlm(directory)
    image = random_png(os.path.join(args.work, "image-512.png"), 512)
    prompt = os.path.join(args.work, "smolvlm-prompt.txt")
    with open(prompt, "w") as f:
        f.write(SMOLVLM_PROMPT)
    exe = os.path.join(args.work, "smolvlm")
    ours_image, ours_first = run_tfmc(
        exe, [directory], ["--prompt-file", prompt, image, "--print-ids"],
        args.rounds, context=2048)
    stats = subprocess.run([exe, "--prompt-file", prompt, image, "-n", "1",
                            "--stats"], capture_output=True, text=True,
                           check=True).stderr.strip().splitlines()[-1]
    length = json.loads(stats)["prompt_tokens"]
    theirs_image, theirs_first, tiles = smolvlm_torch_times(
        directory, image, length, args.rounds)
    report(f"SmolVLM shape (SmolVLM-256M-Instruct), whole; one 512 px "
           f"image ({tiles} tiles of 512 px, {length} prompt positions)",
           "PyTorch", (ours_image, theirs_image), (ours_first, theirs_first))


def torch_rounds(model, tiles, inputs, rounds):
    """The best of `rounds` (the tower and projector on `tiles`;
    model(**inputs), the prompt with its image), no grad."""
    import torch
    config = model.config
    image, first = [], []
    with torch.no_grad():
        for _ in range(rounds):
            start = time.perf_counter()
            states = model.vision_tower(tiles, output_hidden_states=True)
            model.multi_modal_projector(
                states.hidden_states[config.vision_feature_layer][:, 1:])
            image.append(time.perf_counter() - start)
            start = time.perf_counter()
            model(**inputs)
            first.append(time.perf_counter() - start)
    return min(image), min(first)


def next_times(directory, image_path, rounds):
    """PyTorch's LLaVA-NeXT: the five tiles through the tower and the
    projector, then forward() with the image; and the tile count."""
    import torch
    import transformers as tf
    from PIL import Image
    torch.set_num_threads(2)
    model = tf.LlavaNextForConditionalGeneration.from_pretrained(
        directory, torch_dtype=torch.float32).eval()
    processed = tf.LlavaNextImageProcessor.from_pretrained(directory)(
        Image.open(image_path), return_tensors="pt")
    ids = torch.tensor([prompt_ids()])
    tiles = processed.pixel_values[0]
    inputs = dict(input_ids=ids, pixel_values=processed.pixel_values,
                  image_sizes=processed.image_sizes,
                  attention_mask=torch.ones_like(ids))
    return torch_rounds(model, tiles, inputs, rounds) + (len(tiles),)


def torch_times(directory, pixels, rounds):
    import torch
    import transformers as tf
    torch.set_num_threads(2)
    model = tf.LlavaForConditionalGeneration.from_pretrained(
        directory, torch_dtype=torch.float32).eval()
    ids = torch.tensor([prompt_ids()])
    values = torch.from_numpy(pixels)[None]
    inputs = dict(input_ids=ids, pixel_values=values,
                  attention_mask=torch.ones_like(ids))
    return torch_rounds(model, values, inputs, rounds)


def run_tfmc(exe, compile_args, run_args, rounds, context=1024):
    """Compiles `exe` (tfmc COMPILE_ARGS) unless it exists, then runs it
    with RUN_ARGS, -n 1 --stats: the best image_seconds and image_seconds +
    prefill_seconds of the rounds after a first that maps the weights in."""
    if not os.path.exists(exe):
        subprocess.run([os.path.join(ROOT, "build", "bin", "tfmc"), "-q"] +
                       compile_args + ["--max-context", str(context), "-o",
                                       exe], check=True)
    image, first = [], []
    for _ in range(rounds + 1):
        run = subprocess.run([exe] + run_args + ["-n", "1", "--stats"],
                             capture_output=True, text=True, check=True)
        stats = json.loads(run.stderr.strip().splitlines()[-1])
        image.append(stats["image_seconds"])
        first.append(stats["image_seconds"] + stats["prefill_seconds"])
    return min(image[1:]), min(first[1:])


def tfmc_times(directory, work, pixels_path, rounds):
    tokens = " ".join(str(t) for t in prompt_ids())
    return run_tfmc(os.path.join(work, "llava"), [directory],
                    ["--tokens", tokens, "--pixels", pixels_path,
                     "--print-ids"], rounds)


QUESTION = ("What is in this picture? Tell me about the colors, the "
            "shapes and the animals you can see there.")


def gguf_files(directory, work, llama):
    """The model as llama.cpp keeps it: (text.gguf, mmproj.gguf)."""
    import torch
    import transformers as tf
    text = os.path.join(work, "text-bf16.gguf")
    mmproj = os.path.join(work, "mmproj", "mmproj-model-f16.gguf")
    if os.path.exists(text) and os.path.exists(mmproj):
        return text, mmproj
    shared = os.path.join(ROOT, "..", "shared", "models", "stories260K-hf")
    folder = os.path.join(work, "model-with-tokenizer")
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(directory):
        if not os.path.exists(os.path.join(folder, name)):
            os.symlink(os.path.join(directory, name),
                       os.path.join(folder, name))
    if not os.path.exists(os.path.join(folder, "tokenizer.model")):
        os.symlink(os.path.join(shared, "tokenizer.model"),
                   os.path.join(folder, "tokenizer.model"))
    with open(os.path.join(folder, "added_tokens.json"), "w") as f:
        json.dump({"<image>": IMAGE_TOKEN, "<pad>": IMAGE_TOKEN + 1}, f)
    env = dict(os.environ, PYTHONPATH=os.path.join(llama, "gguf-py") + ":" +
               os.environ.get("PYTHONPATH", ""))
    subprocess.run([sys.executable, os.path.join(
        ROOT, "test", "e2e", "conformance", "llama_cpp_converter.py"),
        "--keep-vocab", folder, "--outfile", text, "--outtype", "bf16"],
        cwd=llama, env=env, check=True, capture_output=True)
    model = tf.LlavaForConditionalGeneration.from_pretrained(directory)
    clip = os.path.join(work, "clip")
    model.vision_tower.save_pretrained(clip)
    projector = os.path.join(work, "llava.projector")
    torch.save({k: v for k, v in model.state_dict().items()
                if k.startswith("multi_modal_projector.")}, projector)
    del model
    subprocess.run([sys.executable, "convert_image_encoder_to_gguf.py",
                    "-m", clip, "--llava-projector", projector,
                    "--output-dir", os.path.dirname(mmproj),
                    "--clip-model-is-vision"],
                   cwd=os.path.join(llama, "tools", "mtmd", "legacy-models"),
                   env=env, check=True, capture_output=True)
    return text, mmproj


def gguf_times(text, mmproj, work, image, llama, rounds):
    """(tfmc image, tfmc first token, llama.cpp image, llama.cpp first
    token, prompt positions) on the GGUF pair."""
    prompt = os.path.join(work, "question.txt")
    with open(prompt, "w") as f:
        f.write(f"USER: <image>\n{QUESTION}\nASSISTANT:")
    ours_image, ours_first = run_tfmc(
        os.path.join(work, "llava-gguf"), [text, "--mmproj", mmproj],
        ["--prompt-file", prompt, image], rounds)
    theirs_image, theirs_first, positions = [], [], 0
    for _ in range(rounds):
        run = subprocess.run(
            [os.path.join(llama, "build", "bin", "llama-mtmd-cli"), "-m",
             text, "--mmproj", mmproj, "--image", image, "-p",
             f"<__media__>\n{QUESTION}", "--chat-template", "vicuna",
             "-n", "1", "--temp", "0", "-t", "2", "-c", "1024",
             "-lv", "4"],  # llama_perf's lines are printed at level 4
            capture_output=True, text=True, check=True)
        encoded = re.search(r"mtmd batch encoding done in (\d+) ms",
                            run.stderr)
        evaluated = re.search(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) "
                              r"tokens", run.stderr)
        theirs_image.append(int(encoded.group(1)) / 1000)
        theirs_first.append(float(evaluated.group(1)) / 1000)
        positions = int(evaluated.group(2))
    return (ours_image, ours_first, min(theirs_image), min(theirs_first),
            positions)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--text-layers", type=int, default=4)
    parser.add_argument("--llama-cpp", metavar="SRC",
                        help="llama.cpp's source, llama-mtmd-cli built")
    parser.add_argument("--next", action="store_true",
                        help="llava-v1.6-mistral's shape and a 672 px PNG "
                        "(five tiles) instead")
    parser.add_argument("--gemma3", action="store_true",
                        help="gemma-3-4b-it's shape and an 896 px image "
                        "instead")
    parser.add_argument("--smolvlm", action="store_true",
                        help="SmolVLM-256M-Instruct's shape and a 512 px "
                        "PNG (17 tiles) instead")
    args = parser.parse_args()
    import numpy as np
    os.makedirs(args.work, exist_ok=True)
    if args.gemma3:
        gemma3_bench(args)
        return
    if args.smolvlm:
        smolvlm_bench(args)
        return
    directory = os.path.join(args.work, "next-model" if args.next
                             else "model")
    make_model(directory, args.text_layers, args.next)
    if args.next:
        image = random_png(os.path.join(args.work, "image-672.png"),
                           NEXT_SIDE)
        tokens = " ".join(str(t) for t in prompt_ids())
        ours_image, ours_first = run_tfmc(
            os.path.join(args.work, "llava-next"), [directory],
            ["--tokens", tokens, image, "--print-ids"], args.rounds,
            context=4096)
        theirs_image, theirs_first, tiles = next_times(directory, image,
                                                       args.rounds)
        report(f"LLaVA-NeXT shape (llava-v1.6-mistral), text depth "
               f"{args.text_layers} of 32; one {NEXT_SIDE} px image "
               f"({tiles} tiles of 336 px) and a 32-token question",
               "PyTorch", (ours_image, theirs_image),
               (ours_first, theirs_first))
        return
    pixels = np.random.default_rng(0).standard_normal(
        (3, 336, 336)).astype(np.float32)
    pixels_path = os.path.join(args.work, "pixels.f32")
    pixels.tofile(pixels_path)
    tfmc_image, tfmc_first = tfmc_times(directory, args.work, pixels_path,
                                        args.rounds)
    torch_image, torch_first = torch_times(directory, pixels, args.rounds)
    report(f"LLaVA-1.5 shape, text depth {args.text_layers} of 32; one "
           f"336 px image (576 rows) and a 32-token question", "PyTorch",
           (tfmc_image, torch_image), (tfmc_first, torch_first))
    if args.llama_cpp:
        image = random_png(os.path.join(args.work, "image.png"), 336)
        text, mmproj = gguf_files(directory, args.work, args.llama_cpp)
        ours_image, ours_first, theirs_image, theirs_first, positions = \
            gguf_times(text, mmproj, args.work, image, args.llama_cpp,
                       args.rounds)
        report(f"The same weights as GGUF files (text bf16, mmproj f16), "
               f"a 336 px PNG, {positions} prompt positions", "llama.cpp",
               (ours_image, theirs_image), (ours_first, theirs_first))


def random_png(path, side):
    """A side x side PNG of random pixels at `path`."""
    import numpy as np
    from PIL import Image
    Image.fromarray(np.random.default_rng(1).integers(
        0, 256, (side, side, 3), dtype=np.uint8)).save(path)
    return path


def report(title, peer, image, first):
    """The table: the image's encoding and the first token, (tfmc, peer)
    seconds each, and the peer's time over tfmc's."""
    print(title)
    print(f"{'':28s}{'tfmc':>10s}{peer:>10s}{'ratio':>8s}")
    for name, (ours, theirs) in (("image encoding (s)", image),
                                 ("time to first token (s)", first)):
        print(f"{name:28s}{ours:10.3f}{theirs:10.3f}"
              f"{theirs / ours:7.2f}x")

if __name__ == "__main__":
    main()
