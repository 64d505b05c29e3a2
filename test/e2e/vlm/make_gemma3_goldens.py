#!/usr/bin/env python3
"""Writes the Gemma 3 vision-language fixture (test/e2e/vlm/Inputs/gemma3/:
config.json, model.safetensors, preprocessor_config.json,
processor_config.json and the tokenizer's files but tokenizer.model; tiny
random weights: a two-block SigLIP tower on 32x32 images in 4x4 patches,
a four-layer Gemma 3 text model) and its goldens. transformers 4.40
(../shared/reference) predates Gemma 3, so this transcribes 4.50's
Gemma3ForConditionalGeneration onto 4.40's classes:

- the vision tower is 4.40's SiglipVisionModel, whose last_hidden_state
  (after post_layernorm) are the image features; 4.40 always builds the
  pooling head, which 4.50 leaves out for vision_use_head false: it is
  replaced by an identity, so that no head.* weight is saved;
- the projector (Gemma3MultiModalProjector): the 8x8 patch grid
  average-pooled to 4x4 (mm_tokens_per_image 16), Gemma's (1 + w) RMSNorm
  (eps: the vision layer_norm_eps), then x @ W, W stored [vision hidden,
  text hidden];
- the text model is ../make_family_goldens.py's Gemma2ForCausalLM440 with
  a Gemma 3 config (layers 0 and 2 sliding, window 24, RoPE base 100;
  1 and 3 global, base 10000 with linear scaling 2). Text embeddings are
  scaled by sqrt(hidden); the image features replace the placeholders'
  rows unscaled (4.40's GemmaModel scales what it is given, so those rows
  go in divided by the same f32 normalizer, 8 here: exact);
- the attention mask: causal, except that an image token's query also sees
  every token of ITS image, later ones included; sliding layers further
  hide keys j <= i - 24 (the past only). This differs from 4.50 on
  purpose: 4.50 lets image tokens see those of every image of the prompt;
  transformers later restricted it to the same image (PR #38295), as here;
- the processor (Gemma3Processor): each "<start_of_image>" of the prompt
  becomes "\\n\\n<start_of_image>" + 16 "<image_soft_token>" +
  "<end_of_image>\\n\\n" before tokenizing (with BOS); the image processor
  resizes to 32x32 with PIL's bilinear filter, rescales by 1/255 and
  normalizes with mean and std 0.5 (4.40's SiglipImageProcessor, the same
  steps);
- the tokenizer is stories260K's SentencePiece model through 4.40's slow
  LlamaTokenizer (legacy) with Gemma 3's specials added: <start_of_image>
  512, <end_of_image> 513, <image_soft_token> 514, <start_of_turn> 515,
  <end_of_turn> 516, <pad> 517, and "\\n\\n" 518, not special. The added
  tokens split the text (leftmost, longest match) and SentencePiece then
  prefixes each piece between them with "▁" (Gemma's own tokenizer adds
  none): "user\\n" + "\\n\\n" (= "user\\n\\n\\n") gives ▁u s er (318 419
  285), "\\n\\n" (518), then the lone "\\n" as ▁ <0x0A> (410 13); after
  "<end_of_image>\\n\\n" the text starts with ▁ (410); two images'
  "<end_of_image>\\n\\n\\n\\n<start_of_image>" is 513 518 518 512.

Goldens in Inputs/, little-endian f32 unless said, the image pixels.f32
[3, 32, 32] (make_llava_goldens.py's) unless said:
gemma3.image.bin, its image tokens [16, 64]; gemma3.ids.txt, TEXT's ids;
gemma3.logits.bin, TEXT's last-position logits [1, 520];
gemma3.photo.pixels.bin, ../vision/Inputs/images/photo.png preprocessed
[3, 32, 32], and gemma3.photo.logits.bin, TEXT's logits with it;
gemma3.greedy.txt, 6 greedy new ids (each step a whole forward, the new
tokens causal text); gemma3.two.ids.txt and gemma3.two.logits.bin, TWO's
(photo.png, then Inputs/wide.png); gemma3.causal.logits.bin, TEXT's logits
with a plain causal mask (no image token sees a later one).

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/vlm/make_gemma3_goldens.py
"""
import json
import os
import sys

import numpy as np
import safetensors.torch
import torch
import transformers as tf
from PIL import Image
from transformers.models.gemma.modeling_gemma import GemmaRMSNorm
from transformers.tokenization_utils import AddedToken

from make_llava_goldens import OUT, STORIES, randomize, write

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from make_family_goldens import Gemma2ForCausalLM440  # noqa: E402

BOI, EOI, SOFT = 512, 513, 514
TOKENS_PER_IMAGE = 16
NEW = 6
TEXT = ("<start_of_turn>user\n<start_of_image>What is in the picture?"
        "<end_of_turn>\n<start_of_turn>model\n")
TWO = ("<start_of_turn>user\n<start_of_image><start_of_image>Compare them."
       "<end_of_turn>\n<start_of_turn>model\n")
SPECIALS = ["<start_of_image>", "<end_of_image>", "<image_soft_token>",
            "<start_of_turn>", "<end_of_turn>", "<pad>"]
VISION = dict(model_type="siglip_vision_model", hidden_size=32,
              intermediate_size=48, num_attention_heads=4,
              num_hidden_layers=2, num_channels=3, image_size=32,
              patch_size=4, layer_norm_eps=1e-6,
              hidden_act="gelu_pytorch_tanh", attention_dropout=0.0,
              vision_use_head=False)
TEXT_MODEL = dict(model_type="gemma3_text", vocab_size=520, hidden_size=64,
                  intermediate_size=96, num_hidden_layers=4,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=16,
                  query_pre_attn_scalar=16,
                  hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6,
                  sliding_window=24, sliding_window_pattern=2,
                  rope_theta=10000.0, rope_local_base_freq=100.0,
                  rope_scaling={"rope_type": "linear", "factor": 2.0},
                  max_position_embeddings=256, bos_token_id=1,
                  eos_token_id=2, pad_token_id=0, tie_word_embeddings=True,
                  attn_logit_softcapping=None, final_logit_softcapping=None,
                  attention_bias=False, attention_dropout=0.0,
                  cache_implementation="hybrid", initializer_range=0.02,
                  use_cache=True)
CONFIG = dict(architectures=["Gemma3ForConditionalGeneration"],
              model_type="gemma3", boi_token_index=BOI, eoi_token_index=EOI,
              image_token_index=SOFT, mm_tokens_per_image=TOKENS_PER_IMAGE,
              initializer_range=0.02, text_config=TEXT_MODEL,
              vision_config=VISION, torch_dtype="float32",
              transformers_version="4.50.0")
# As the 4.50 converter's Gemma3ImageProcessor and Gemma3Processor save it
# (its unset options null).
PREPROCESSOR = {"do_convert_rgb": None, "do_normalize": True,
                "do_pan_and_scan": None, "do_rescale": True,
                "do_resize": True, "image_mean": [0.5, 0.5, 0.5],
                "image_processor_type": "Gemma3ImageProcessor",
                "image_seq_length": TOKENS_PER_IMAGE,
                "image_std": [0.5, 0.5, 0.5],
                "pan_and_scan_max_num_crops": None,
                "pan_and_scan_min_crop_size": None,
                "pan_and_scan_min_ratio_to_activate": None,
                "processor_class": "Gemma3Processor", "resample": 2,
                "rescale_factor": 0.00392156862745098,
                "size": {"height": 32, "width": 32}}


class Projector(torch.nn.Module):
    """4.50's Gemma3MultiModalProjector."""

    def __init__(self, vision, text_hidden, tokens_per_image):
        super().__init__()
        self.mm_input_projection_weight = torch.nn.Parameter(
            torch.zeros(vision["hidden_size"], text_hidden))
        self.mm_soft_emb_norm = GemmaRMSNorm(vision["hidden_size"],
                                             eps=vision["layer_norm_eps"])
        self.side = vision["image_size"] // vision["patch_size"]
        kernel = self.side // int(tokens_per_image ** 0.5)
        self.avg_pool = torch.nn.AvgPool2d(kernel_size=kernel, stride=kernel)

    def forward(self, features):
        b, _, d = features.shape
        grid = features.transpose(1, 2).reshape(b, d, self.side, self.side)
        pooled = self.avg_pool(grid.contiguous()).flatten(2).transpose(1, 2)
        return torch.matmul(self.mm_soft_emb_norm(pooled),
                            self.mm_input_projection_weight)


class Gemma3ForConditionalGeneration440(torch.nn.Module):
    """Its attributes name the weights as 4.50's class does; the fixture's
    configs unless given (bench/vlm_first_token.py's published shape)."""

    def __init__(self, config=None):
        super().__init__()
        config = config or CONFIG
        self.text_config = config["text_config"]
        self.soft = config["image_token_index"]
        vision = {k: v for k, v in config["vision_config"].items()
                  if k not in ("model_type", "vision_use_head")}
        self.vision_tower = tf.SiglipVisionModel(
            tf.SiglipVisionConfig(**vision))
        # 4.40 always builds the pooling head; 4.50 has none here.
        self.vision_tower.vision_model.head = torch.nn.Identity()
        self.multi_modal_projector = Projector(
            config["vision_config"], self.text_config["hidden_size"],
            config["mm_tokens_per_image"])
        text = tf.GemmaConfig(**{k: v for k, v in self.text_config.items()
                                 if k != "model_type"})
        text._attn_implementation = "eager"
        self.language_model = Gemma2ForCausalLM440(text)

    def image_tokens(self, pixels):
        features = self.vision_tower(pixel_values=pixels).last_hidden_state
        return self.multi_modal_projector(features)

    def forward(self, ids, pixels, bidirectional=True):
        """The logits [len(ids), vocab] of one prompt (ids: 1D)."""
        embeds = self.language_model.model.embed_tokens(ids[None])
        image = ids == self.soft
        features = self.image_tokens(pixels).reshape(-1, embeds.shape[-1])
        assert image.sum() == features.shape[0]
        # 4.40's GemmaModel scales all of inputs_embeds, 4.50 only the text:
        # the image rows go in divided by the same f32 normalizer (8, exact).
        normalizer = torch.tensor(self.text_config["hidden_size"] ** 0.5,
                                  dtype=embeds.dtype)
        embeds[0, image] = features / normalizer
        return self.language_model(
            inputs_embeds=embeds,
            attention_mask=allowed(ids, bidirectional, self.soft),
            use_cache=False).logits[0]


def allowed(ids, bidirectional, soft=SOFT):
    """Which keys each query sees [1, 1, L, L], 1 = attend: 4.40's GemmaModel
    takes a 4D mask in that convention and makes it additive (0 / min);
    gemma2_attention then masks j <= i - window in sliding layers."""
    n = torch.arange(len(ids))
    mask = n[None, :] <= n[:, None]
    if bidirectional:
        image = ids == soft
        starts = image & ~torch.cat([torch.tensor([False]), image[:-1]])
        group = torch.cumsum(starts.long(), 0) * image  # 0: text, k: image k
        mask |= (group[:, None] == group[None, :]) & image[:, None]
    return mask.float()[None, None]


def expand(prompt):
    """Gemma3Processor's placeholder expansion."""
    sequence = ("\n\n<start_of_image>"
                + "<image_soft_token>" * TOKENS_PER_IMAGE
                + "<end_of_image>\n\n")
    return prompt.replace("<start_of_image>", sequence)


def tokenizer_folder(directory):
    tokenizer = tf.LlamaTokenizer(STORIES, legacy=True)
    tokenizer.add_tokens(SPECIALS, special_tokens=True)
    tokenizer.add_tokens([AddedToken("\n\n", special=False, normalized=False)])
    tokenizer.pad_token = "<pad>"
    assert tokenizer.convert_tokens_to_ids(SPECIALS + ["\n\n"]) == list(
        range(512, 519))
    tokenizer.save_pretrained(directory)
    # The SentencePiece model stays in ../shared: tests copy it in.
    os.remove(os.path.join(directory, "tokenizer.model"))
    # 4.50's Gemma3Processor finds its placeholders by these names (4.40
    # does not write them).
    path = os.path.join(directory, "tokenizer_config.json")
    with open(path) as f:
        config = json.load(f)
    names = {"boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
             "image_token": "<image_soft_token>"}
    config.update(names, extra_special_tokens=names)
    with open(path, "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    return tokenizer


def save_model(model, directory):
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2, sort_keys=True)
    for name in ("preprocessor_config.json", "processor_config.json"):
        content = PREPROCESSOR if name.startswith("pre") else {
            "image_seq_length": TOKENS_PER_IMAGE,
            "processor_class": "Gemma3Processor"}
        with open(os.path.join(directory, name), "w") as f:
            json.dump(content, f, indent=2, sort_keys=True)
    # lm_head is embed_tokens (tied), which 4.50 does not save either.
    weights = {k: v.contiguous() for k, v in model.state_dict().items()
               if k != "language_model.lm_head.weight"}
    assert not any(".head." in k for k in weights)
    path = os.path.join(directory, "model.safetensors")
    safetensors.torch.save_file(weights, path, metadata={"format": "pt"})
    print("model.safetensors:", len(weights), "tensors")


def save_ids(name, ids):
    with open(os.path.join(OUT, name), "w") as f:
        f.write(" ".join(str(t) for t in ids.tolist()) + "\n")
    print(name, ids.tolist())


def main():
    directory = os.path.join(OUT, "gemma3")
    os.makedirs(directory, exist_ok=True)
    model = Gemma3ForConditionalGeneration440().eval()
    randomize(model, 5)  # a seed whose greedy continuation varies
    save_model(model, directory)
    tokenizer = tokenizer_folder(directory)

    pixels = torch.from_numpy(np.fromfile(os.path.join(OUT, "pixels.f32"),
                                          dtype="<f4").reshape(1, 3, 32, 32))
    photo = Image.open(os.path.join(HERE, "..", "vision", "Inputs", "images",
                                    "photo.png"))
    assert photo.mode == "RGB"  # Gemma 3's processor converts nothing
    processor = tf.SiglipImageProcessor(
        size=PREPROCESSOR["size"], resample=PREPROCESSOR["resample"],
        rescale_factor=PREPROCESSOR["rescale_factor"],
        image_mean=PREPROCESSOR["image_mean"],
        image_std=PREPROCESSOR["image_std"])
    photo = processor(photo, return_tensors="pt").pixel_values
    write("gemma3.photo.pixels.bin", photo[0])
    wide = Image.open(os.path.join(OUT, "wide.png"))
    assert wide.mode == "RGB"
    wide = processor(wide, return_tensors="pt").pixel_values

    ids = tokenizer(expand(TEXT), return_tensors="pt").input_ids[0]
    two = tokenizer(expand(TWO), return_tensors="pt").input_ids[0]
    assert ids.tolist().count(SOFT) == TOKENS_PER_IMAGE
    assert two.tolist().count(SOFT) == 2 * TOKENS_PER_IMAGE
    save_ids("gemma3.ids.txt", ids)
    save_ids("gemma3.two.ids.txt", two)
    print("tokens:", tokenizer.convert_ids_to_tokens(ids.tolist()))
    gap = two.tolist()
    first_end = gap.index(EOI)
    print("between the two images:", tokenizer.convert_ids_to_tokens(
        gap[first_end:gap.index(BOI, first_end) + 1]))

    with torch.no_grad():
        tokens = model.image_tokens(pixels)[0]
        write("gemma3.image.bin", tokens)
        print("  image tokens[0, :4]", tokens[0, :4].tolist())
        logits = model(ids, pixels)[-1:]
        write("gemma3.logits.bin", logits)
        print("  logits[0, :4]", logits[0, :4].tolist(),
              "max |logit|", logits.abs().max().item())
        write("gemma3.photo.logits.bin", model(ids, photo)[-1:])
        write("gemma3.two.logits.bin",
              model(two, torch.cat([photo, wide]))[-1:])
        causal = model(ids, pixels, bidirectional=False)[-1:]
        write("gemma3.causal.logits.bin", causal)
        difference = (causal - logits).abs().max().item()
        print("max |causal - bidirectional|", difference)
        assert difference > 1e-3
        sequence = ids
        for _ in range(NEW):
            step = model(sequence, pixels)[-1].argmax()
            sequence = torch.cat([sequence, step[None]])
    greedy = sequence[len(ids):]
    save_ids("gemma3.greedy.txt", greedy)
    print("  greedy text", repr(tokenizer.decode(greedy.tolist())))


if __name__ == "__main__":
    main()
