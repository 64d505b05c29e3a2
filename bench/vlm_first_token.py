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
figure is the best of the rounds. llama.cpp's llama-mtmd-cli is not in
this run (docs/plans/vision-language.md).
"""
import argparse
import json
import os
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PUBLISHED = os.path.join(ROOT, "test", "e2e", "vlm", "published",
                         "llava-1.5-7b-hf.json")
IMAGE_TOKEN = 32000


def prompt_ids():
    """BOS, 15 ids, the image's placeholder, 15 ids: a 32-token question."""
    words = list(range(1000, 1015))
    return [1] + words + [IMAGE_TOKEN] + [w + 100 for w in words]


def make_model(directory, text_layers):
    import torch
    import transformers as tf
    if os.path.exists(os.path.join(directory, "config.json")):
        return
    with open(PUBLISHED) as f:
        fields = json.load(f)
    fields["text_config"]["num_hidden_layers"] = text_layers
    for key in ("architectures", "model_type", "transformers_version",
                "torch_dtype"):
        fields.pop(key, None)
    torch.manual_seed(0)
    model = tf.LlavaForConditionalGeneration(tf.LlavaConfig(**fields))
    model.to(torch.bfloat16).save_pretrained(directory,
                                             safe_serialization=True)


def torch_times(directory, pixels, rounds):
    import torch
    import transformers as tf
    torch.set_num_threads(2)
    model = tf.LlavaForConditionalGeneration.from_pretrained(
        directory, torch_dtype=torch.float32).eval()
    ids = torch.tensor([prompt_ids()])
    values = torch.from_numpy(pixels)[None]
    config = model.config
    image, first = [], []
    with torch.no_grad():
        for _ in range(rounds):
            start = time.perf_counter()
            states = model.vision_tower(values, output_hidden_states=True)
            model.multi_modal_projector(
                states.hidden_states[config.vision_feature_layer][:, 1:])
            image.append(time.perf_counter() - start)
            start = time.perf_counter()
            model(input_ids=ids, pixel_values=values,
                  attention_mask=torch.ones_like(ids))
            first.append(time.perf_counter() - start)
    return min(image), min(first)


def tfmc_times(directory, work, pixels_path, rounds):
    exe = os.path.join(work, "llava")
    if not os.path.exists(exe):
        subprocess.run([os.path.join(ROOT, "build", "bin", "tfmc"), "-q",
                        directory, "--max-context", "1024", "-o", exe],
                       check=True)
    tokens = " ".join(str(t) for t in prompt_ids())
    image, first = [], []
    for _ in range(rounds + 1):  # the first maps the weights in
        run = subprocess.run([exe, "--tokens", tokens, "--pixels",
                              pixels_path, "-n", "1", "--print-ids",
                              "--stats"], capture_output=True, text=True,
                             check=True)
        stats = json.loads(run.stderr.strip().splitlines()[-1])
        image.append(stats["image_seconds"])
        first.append(stats["image_seconds"] + stats["prefill_seconds"])
    return min(image[1:]), min(first[1:])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--text-layers", type=int, default=4)
    args = parser.parse_args()
    import numpy as np
    os.makedirs(args.work, exist_ok=True)
    directory = os.path.join(args.work, "model")
    make_model(directory, args.text_layers)
    pixels = np.random.default_rng(0).standard_normal(
        (3, 336, 336)).astype(np.float32)
    pixels_path = os.path.join(args.work, "pixels.f32")
    pixels.tofile(pixels_path)
    tfmc_image, tfmc_first = tfmc_times(directory, args.work, pixels_path,
                                        args.rounds)
    torch_image, torch_first = torch_times(directory, pixels, args.rounds)
    print(f"LLaVA-1.5 shape, text depth {args.text_layers} of 32; one "
          f"336 px image (576 rows) and a 32-token question")
    print(f"{'':28s}{'tfmc':>10s}{'PyTorch':>10s}{'ratio':>8s}")
    for name, ours, theirs in (("image encoding (s)", tfmc_image,
                                torch_image),
                               ("time to first token (s)", tfmc_first,
                                torch_first)):
        print(f"{name:28s}{ours:10.3f}{theirs:10.3f}"
              f"{theirs / ours:7.2f}x")


if __name__ == "__main__":
    main()
