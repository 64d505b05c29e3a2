#!/usr/bin/env python3
"""Writes the LLaVA fixtures (test/e2e/vlm/Inputs/<name>/: config.json,
model.safetensors, preprocessor_config.json; tiny random weights: a CLIP
vision tower on 32x32 images in 8x8 patches, a 128-token text model) and
their goldens with transformers 4.40's LlavaForConditionalGeneration
(../shared/reference):

- llava: a LLaMA text model (grouped KV heads, a vocabulary padded to
  520), the vision tower's hidden_states[-2] (vision_feature_layer -2, its
  last block unread) without the class token ("default"), as llava-1.5
  configs say; its tokenizer is stories260K's SentencePiece model with
  <image> (512) and <pad> (513) added, as llava-1.5-7b-hf's adds them to
  LLaMA's (the folder holds the tokenizer's other files; the tests that
  tokenize copy ../shared's tokenizer.model in);
- llava-full: a Qwen2 text model (biased Q, K, V), hidden_states[1] of a
  two-block tower with the class token kept ("full"), a GELU-tanh
  projector; no tokenizer (the prompt is PROMPT's ids, its placeholder
  120).

Goldens, little-endian f32 unless said: <name>.image.bin, the projected
image tokens [rows, text hidden] of pixels.f32 [3, 32, 32];
<name>.ids.txt, the prompt's ids (llava: TEXT through LlavaProcessor's
tokenizer); <name>.logits.bin, the last position's logits [1, vocab] of
the prompt, whose one image placeholder 4.40 widens to the image's rows;
<name>.greedy.txt, the ids of the greedy continuation (NEW tokens), and
llava.greedy.text their text;
<name>.photo.logits.bin: the same prompt with
../vision/Inputs/images/photo.png through CLIPImageProcessor (shortest
edge 32, bicubic, center crop 32).

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/vlm/make_llava_goldens.py
"""
import json
import os

import numpy as np
import torch
import transformers as tf
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs")
PROMPT = [1, 17, 42, 120, 5, 63, 88, 9]
TEXT = "USER: <image>\nWhat is in the picture? ASSISTANT:"
STORIES = os.path.join(HERE, "..", "..", "..", "..", "shared", "models",
                       "stories260K-hf", "tokenizer.model")
NEW = 6
VISION = dict(hidden_size=32, intermediate_size=48, num_attention_heads=4,
              image_size=32, patch_size=8, projection_dim=24,
              model_type="clip_vision_model")
TEXT_MODEL = dict(vocab_size=128, hidden_size=64, intermediate_size=96,
            num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, max_position_embeddings=128,
            rms_norm_eps=1e-5)
PREPROCESSOR = {"crop_size": {"height": 32, "width": 32},
                "do_center_crop": True, "do_normalize": True,
                "do_resize": True, "do_rescale": True,
                "do_convert_rgb": True,
                "image_processor_type": "CLIPImageProcessor",
                "image_mean": [0.48145466, 0.4578275, 0.40821073],
                "image_std": [0.26862954, 0.26130258, 0.27577711],
                "rescale_factor": 0.00392156862745098,
                "resample": 3, "size": {"shortest_edge": 32}}
FIXTURES = {
    "llava": dict(
        vision_config=dict(VISION, num_hidden_layers=3),
        text_config=dict(TEXT_MODEL, model_type="llama", vocab_size=520),
        vision_feature_layer=-2, vision_feature_select_strategy="default",
        projector_hidden_act="gelu", image_token_index=512),
    "llava-full": dict(
        vision_config=dict(VISION, num_hidden_layers=2),
        text_config=dict(TEXT_MODEL, model_type="qwen2",
                         tie_word_embeddings=False),
        vision_feature_layer=1, vision_feature_select_strategy="full",
        projector_hidden_act="gelu_pytorch_tanh", image_token_index=120),
}


def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            scale = "norm" in name and name.endswith("weight")
            p.copy_(1 + 0.2 * noise if scale else 0.3 * noise)


def write(name, tensor):
    tensor.detach().numpy().astype("<f4").tofile(os.path.join(OUT, name))
    print(name, tuple(tensor.shape))


def image_tokens(model, pixels):
    config = model.config
    states = model.vision_tower(pixels, output_hidden_states=True)
    chosen = states.hidden_states[config.vision_feature_layer]
    if config.vision_feature_select_strategy == "default":
        chosen = chosen[:, 1:]
    return model.multi_modal_projector(chosen)


def main():
    os.makedirs(OUT, exist_ok=True)
    g = torch.Generator().manual_seed(11)
    pixels = torch.randn((1, 3, 32, 32), generator=g)
    write("pixels.f32", pixels[0])
    processor = tf.CLIPImageProcessor(**PREPROCESSOR)
    photo = Image.open(os.path.join(HERE, "..", "vision", "Inputs", "images",
                                    "photo.png"))
    processed = processor(photo, return_tensors="pt").pixel_values
    for seed, (name, fields) in enumerate(FIXTURES.items(), start=1):
        config = tf.LlavaConfig(**fields)
        model = tf.LlavaForConditionalGeneration(config).eval()
        randomize(model, seed)
        directory = os.path.join(OUT, name)
        model.save_pretrained(directory, safe_serialization=True)
        ids = torch.tensor([PROMPT])
        if name == "llava":
            tokenizer = tf.LlamaTokenizer(STORIES, legacy=True)
            tokenizer.add_tokens(["<image>", "<pad>"], special_tokens=True)
            tokenizer.pad_token = "<pad>"
            tokenizer.save_pretrained(directory)
            # The SentencePiece model stays in ../shared: tests copy it in.
            os.remove(os.path.join(directory, "tokenizer.model"))
            ids = tokenizer(TEXT, return_tensors="pt").input_ids
            assert ids[0].tolist().count(512) == 1
        with open(os.path.join(OUT, name + ".ids.txt"), "w") as f:
            f.write(" ".join(str(t) for t in ids[0].tolist()) + "\n")
        with open(os.path.join(directory, "preprocessor_config.json"),
                  "w") as f:
            json.dump(PREPROCESSOR, f, indent=2)
        with torch.no_grad():
            write(name + ".image.bin", image_tokens(model, pixels)[0])
            mask = torch.ones_like(ids)
            logits = model(input_ids=ids, pixel_values=pixels,
                           attention_mask=mask).logits
            write(name + ".logits.bin", logits[0, -1:])
            photo_logits = model(input_ids=ids, pixel_values=processed,
                                 attention_mask=mask).logits
            write(name + ".photo.logits.bin", photo_logits[0, -1:])
            out = model.generate(input_ids=ids, pixel_values=pixels,
                                 max_new_tokens=NEW, do_sample=False,
                                 attention_mask=mask)
        greedy = out[0, -NEW:].tolist()
        with open(os.path.join(OUT, name + ".greedy.txt"), "w") as f:
            f.write(" ".join(str(t) for t in greedy) + "\n")
        if name == "llava":
            with open(os.path.join(OUT, name + ".greedy.text"), "w") as f:
                f.write(tokenizer.decode(greedy) + "\n")
        print(name + ".greedy.txt", greedy)


if __name__ == "__main__":
    main()
