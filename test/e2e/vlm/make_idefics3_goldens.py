#!/usr/bin/env python3
"""Writes the Idefics3 / SmolVLM vision-language fixture
(test/e2e/vlm/Inputs/idefics3/: config.json, model.safetensors,
preprocessor_config.json, processor_config.json, chat_template.json and the
tokenizer's files but tokenizer.model; tiny random weights: a two-block
SigLIP-like tower on 32x32 tiles in 8x8 patches, a two-layer LLaMA text
model), Inputs/idefics3-nosplit/preprocessor_config.json and their goldens.

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/vlm/make_idefics3_goldens.py

transformers 4.40 (../shared/reference) predates Idefics3 (4.46), so this
transcribes 4.46's Idefics3ForConditionalGeneration, Idefics3ImageProcessor
and Idefics3Processor onto 4.40's classes. The source read is the stored
huggingface/transformers version at commit 000c8eae (modeling, image
processing and processing): the 4.46-era files (an Idefics3VisionConfig of
model_type "idefics3", a processor with `global_img_token`, the image
processor's get_resize_output_image_size with max_image_size=1820 and no
"square the image" branch, see do_image_splitting false below). Later
versions differ: vision model_type "idefics3_vision" (sub-config refactor),
MAX_IMAGE_SIZE 4096 in place of 1820 (no effect at these sizes), and a
no-split branch that squashes the image to max_image_size.

- the vision tower is 4.40's Idefics2VisionTransformer: 4.46's
  Idefics3VisionEmbeddings, VisionAttention, VisionMLP, EncoderLayer,
  Encoder and VisionTransformer.forward are "Copied from" Idefics2/SigLIP
  and read line for line the same as 4.40's (conv patch embedding "valid";
  position ids bucketed: fractional coords arange(0, 1 - 1e-6, 1/n) per
  axis bucketized right=True on arange(1/side, 1, 1/side); the patch mask
  turned into an additive key mask only when some patch is masked;
  post_layernorm last). The only differences are not numerical: 4.46's
  tower is a PreTrainedModel (same weight names) and reads patch_size from
  itself. For a full 32x32 tile (4x4 patches) the coords 0, .25, .5, .75
  bucket exactly to 0..3 (quarters are exact in binary): position id =
  patch index, checked below;
- the connector (Idefics3Connector): pixel_shuffle with scale_factor 2,
  transcribed verbatim, then Idefics3SimpleMLP, Linear(32 * 4, 64,
  bias=False) (modality_projection.proj). Its order, checked below: output
  row r = 2 * (i // 2) + (j // 2) of the 4x4 patch grid (i, j) = (row,
  col), i.e. r covers rows 2R, 2R+1 and columns 2C, 2C+1 with R = r // 2,
  C = r % 2; feature f = 64 * (i % 2) + 32 * (j % 2) + d: [patch (2R, 2C),
  patch (2R, 2C+1), patch (2R+1, 2C), patch (2R+1, 2C+1)], 32 each;
- inputs_merger: the <image> tokens' embedding rows are replaced, in
  order, by the tiles' [4, 64] features in the processor's tile order (no
  scaling; LLaMA does not scale embeddings); the model first drops tiles
  that are all 0.0 (batch padding images; none here, asserted);
- the text model is 4.40's LlamaModel, and lm_head a separate Linear
  (tie_word_embeddings false), as LlamaForCausalLM runs them: plain causal
  attention over the whole prompt, image rows included;
- the image processor (Idefics3ImageProcessor, PIL like transformers):
  resize the longest edge to size.longest_edge (96) keeping the aspect:
  w >= h: w = 96, h = int(96 / (w0 / h0)), +1 if odd; else h = 96,
  w = int(96 * (w0 / h0)), +1 if odd (then a no-op cap at 1820);
  resize_for_vision_encoder: w >= h: w = ceil(w / 32) * 32,
  h = ceil(int(w / (w1 / h1)) / 32) * 32 (else the same with h first);
  split_image: if larger than 32, ceil(h / 32) x ceil(w / 32) crops of
  ceil(h / rows) x ceil(w / cols) (exactly 32 here), row by row, then the
  whole image resized to 32x32 last (its "global" tile; split_image is not
  passed the configured resample and uses its LANCZOS default); a 32x32
  image is not split (rows = cols = 0, one tile). Every resize goes through
  4.46's own to_pil_image (astype(uint8), Image.fromarray) and PIL's
  resize with resample 1 (LANCZOS), np.array back, so the rounding is
  PIL's (PIL returns a copy when the size does not change). Then
  convert_to_rgb (RGBA over white, back to RGB: identity here), rescale
  (uint8 * 1/255 in float64, to float32), normalize ((x - 0.5) / 0.5 in
  float32), pad to the largest tile (none: all 32x32, pixel_attention_mask
  all ones, hence no patch masked), channels first;
- the processor (Idefics3Processor): each "<image>" of the TEXT becomes,
  for an image split into rows x cols, for each tile row
  ("<fake_token_around_image><row_i_col_j>" + "<image>" * 4 for each j)
  + "\\n", then "\\n<fake_token_around_image><global-img>" + "<image>" * 4
  + "<fake_token_around_image>"; an unsplit image becomes
  "<fake_token_around_image><global-img>" + "<image>" * 4
  + "<fake_token_around_image>". image_seq_len 4 = (32 / 8)^2 / 2^2. The
  text is then tokenized with BOS;
- the tokenizer is stories260K's SentencePiece model through 4.40's slow
  LlamaTokenizer (legacy) with the specials added: <fake_token_around_image>
  512, <image> 513, <global-img> 514, <end_of_utterance> 515,
  <row_1_col_1> .. <row_3_col_3> 516 .. 524 (row-major); the vocabulary is
  padded to 528. The added tokens split the text and SentencePiece prefixes
  each piece between them with "▁": "User:" is ▁ U s er : (410 471 419
  285 467); a tile row's "\\n" is ▁ <0x0A> (410 13), the "\\n\\n" before
  the global tile ▁ <0x0A> <0x0A> (410 13 13); "What" after the image is
  ▁ W h at (410 448 415 294); the "\\nAssistant:" after <end_of_utterance>
  is ▁ <0x0A> A s s is t an t : (410 13 447 419 419 293 413 303 413 467);
  two images meet as <fake_token_around_image> <fake_token_around_image>
  (512 512). (SmolVLM's own GPT-2 style tokenizer adds no such "▁".)

do_image_splitting false: 4.46 (the stored source) only resizes to
size.longest_edge: photo.png becomes one 78 x 96 (h x w) tile; one image
needs no padding (pixel_attention_mask all ones, no patch masked), the
tower sees 9 x 12 patches (position ids bucketed from 9 and 12 per axis),
and pixel_shuffle cannot view 108 patches as a square: it raises (checked
below). With several images of different sizes it would pad each to the
largest (zeros after normalizing, bottom and right), pixel_attention_mask 1
on the image; the model marks a patch valid when any of its pixels is
(unfold 8 x 8, sum > 0), masked patches keep position id 0 and are hidden
as keys (additive min); pixel_shuffle would still need a square. Later
transformers square the image to max_image_size (32x32, LANCZOS, from the
96-edge image) in that case: one tile, no padding, no masked patch, the
single-image prompt. The idefics3-nosplit goldens follow that later
behaviour.

Goldens in Inputs/, little-endian f32 unless said: idefics3.tile.bin, the
features [4, 64] of pixels.f32 [3, 32, 32] (make_llava_goldens.py's) as
one tile; for photo (../vision/Inputs/images/photo.png, 45 x 37) and wide
(Inputs/wide.png, 100 x 30): idefics3.<name>.tiles.bin, the processor's
pixel_values [tiles, 3, 32, 32] (row-major tiles, the global tile last),
idefics3.<name>.grid.txt, "rows cols", idefics3.<name>.rows.bin, the
tiles' features in that order [tiles * 4, 64]; idefics3.ids.txt, TEXT's
expanded ids with photo; idefics3.logits.bin, its last-position logits
[1, 528]; idefics3.greedy.txt, 6 greedy new ids (each step a whole forward);
idefics3.wide.ids.txt and idefics3.wide.logits.bin, TEXT with wide;
idefics3.two.ids.txt and idefics3.two.logits.bin, TWO with photo then
wide; idefics3.nosplit.tiles.bin [1, 3, 32, 32], idefics3.nosplit.ids.txt
and idefics3.nosplit.logits.bin, TEXT with photo unsplit (above).
"""
import json
import math
import os
import sys

import numpy as np
import safetensors.torch
import torch
import transformers as tf
from PIL import Image
from transformers.image_transforms import normalize, rescale
from transformers.image_utils import ChannelDimension
from transformers.models.idefics2.configuration_idefics2 import (
    Idefics2VisionConfig)
from transformers.models.idefics2.modeling_idefics2 import (
    Idefics2VisionTransformer)
from transformers.tokenization_utils import AddedToken

from make_llava_goldens import OUT, STORIES, randomize, write

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE, IMAGE, GLOBAL, END = 512, 513, 514, 515
IMAGE_SEQ_LEN = 4
NEW = 6
TEXT = "User:<image>What is in the picture?<end_of_utterance>\nAssistant:"
TWO = "User:<image><image>Compare them.<end_of_utterance>\nAssistant:"
SPECIALS = (["<fake_token_around_image>", "<image>", "<global-img>",
             "<end_of_utterance>"]
            + [f"<row_{i}_col_{j}>" for i in range(1, 4) for j in range(1, 4)])
VISION = dict(model_type="idefics3", hidden_size=32, intermediate_size=64,
              num_hidden_layers=2, num_attention_heads=2, num_channels=3,
              image_size=32, patch_size=8, layer_norm_eps=1e-6,
              hidden_act="gelu_pytorch_tanh", attention_dropout=0.0,
              initializer_range=0.02)
TEXT_MODEL = dict(model_type="llama", vocab_size=528, hidden_size=64,
                  intermediate_size=128, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2,
                  hidden_act="silu", rms_norm_eps=1e-5, rope_theta=10000.0,
                  rope_scaling=None, max_position_embeddings=512,
                  attention_bias=False, attention_dropout=0.0,
                  bos_token_id=1, eos_token_id=2, tie_word_embeddings=False,
                  initializer_range=0.02, use_cache=True)
CONFIG = dict(architectures=["Idefics3ForConditionalGeneration"],
              model_type="idefics3", image_token_id=IMAGE, scale_factor=2,
              tie_word_embeddings=False, use_cache=True, pad_token_id=0,
              vision_config=VISION, text_config=TEXT_MODEL,
              torch_dtype="float32", transformers_version="4.46.0")
# As Idefics3ImageProcessor saves it (its processor_class as the processor
# adds it).
PREPROCESSOR = {"do_convert_rgb": True, "do_image_splitting": True,
                "do_normalize": True, "do_pad": True, "do_rescale": True,
                "do_resize": True, "image_mean": [0.5, 0.5, 0.5],
                "image_processor_type": "Idefics3ImageProcessor",
                "image_std": [0.5, 0.5, 0.5],
                "max_image_size": {"longest_edge": 32},
                "processor_class": "Idefics3Processor", "resample": 1,
                "rescale_factor": 0.00392156862745098,
                "size": {"longest_edge": 96}}
PROCESSOR = {"image_seq_len": IMAGE_SEQ_LEN,
             "processor_class": "Idefics3Processor"}
# Idefics3-8B-Llama3's template but its leading "<|begin_of_text|>" (the
# tokenizer adds BOS here): TEXT is its rendering of one user turn (an
# image, then the question) with add_generation_prompt.
CHAT_TEMPLATE = (
    "{% for message in messages %}{{message['role'].capitalize()}}"
    "{% if message['content'][0]['type'] == 'image' %}{{':'}}"
    "{% else %}{{': '}}{% endif %}{% for line in message['content'] %}"
    "{% if line['type'] == 'text' %}{{line['text']}}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}"
    "{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}")


# --- the image processor (4.46's Idefics3ImageProcessor) ------------------

def pil_resize(image, height, width, resample):
    """Idefics3ImageProcessor.resize with {"height", "width"}: its own
    to_pil_image (astype(uint8), fromarray), PIL's resize, np.array."""
    assert image.ndim == 3 and image.shape[-1] == 3
    pil = Image.fromarray(image.astype(np.uint8), mode=None)
    return np.array(pil.resize((width, height), resample=resample))


def longest_edge_size(height, width, max_len, cap=1820):
    """get_resize_output_image_size: _resize_output_size_rescale_to_max_len
    then _resize_output_size_scale_below_upper_bound."""
    aspect_ratio = width / height
    if width >= height:
        width = max_len
        height = int(width / aspect_ratio)
        if height % 2 != 0:
            height += 1
    elif height > width:
        height = max_len
        width = int(height * aspect_ratio)
        if width % 2 != 0:
            width += 1
    height, width = max(height, 1), max(width, 1)
    aspect_ratio = width / height
    if width >= height and width > cap:
        width = cap
        height = int(width / aspect_ratio)
    elif height > width and height > cap:
        height = cap
        width = int(height * aspect_ratio)
    return max(height, 1), max(width, 1)


def vision_encoder_size(height, width, tile):
    """resize_for_vision_encoder's size."""
    aspect_ratio = width / height
    if width >= height:
        width = math.ceil(width / tile) * tile
        height = int(width / aspect_ratio)
        height = math.ceil(height / tile) * tile
    elif height > width:
        height = math.ceil(height / tile) * tile
        width = int(height * aspect_ratio)
        width = math.ceil(width / tile) * tile
    return height, width


def split_image(image, tile):
    """split_image: the crops row by row, then the whole image as tile x
    tile (LANCZOS: split_image's default, the configured resample is not
    passed), or the image alone (0, 0) when it is no larger than a tile."""
    height, width = image.shape[:2]
    frames = []
    if height > tile or width > tile:
        rows, cols = math.ceil(height / tile), math.ceil(width / tile)
        crop_h, crop_w = math.ceil(height / rows), math.ceil(width / cols)
        for r in range(rows):
            for c in range(cols):
                frames.append(image[r * crop_h:min((r + 1) * crop_h, height),
                                    c * crop_w:min((c + 1) * crop_w, width)])
        if (height, width) != (tile, tile):
            image = pil_resize(image, tile, tile, Image.LANCZOS)
    else:
        rows = cols = 0
    frames.append(image)
    return frames, rows, cols


def convert_to_rgb(image):
    """4.46's convert_to_rgb of an array: RGBA over white, back to RGB."""
    rgba = Image.fromarray(image.astype(np.uint8)).convert("RGBA")
    background = Image.new("RGBA", rgba.size, (255, 255, 255))
    return np.array(Image.alpha_composite(background, rgba).convert("RGB"))


def preprocess(images, config, log=None):
    """Idefics3ImageProcessor.preprocess of one prompt's images: the tiles
    [n, 3, tile, tile] (all images' tiles in order), each image's (rows,
    cols), and pixel_attention_mask."""
    resample = config["resample"]
    tile = config["max_image_size"]["longest_edge"]
    frames, grids = [], []
    for name, pil in images:
        assert pil.mode == "RGB"  # no palette to carry
        image = np.array(pil)
        steps = [image.shape[:2]]
        if config["do_resize"]:
            size = longest_edge_size(*image.shape[:2],
                                     config["size"]["longest_edge"])
            image = pil_resize(image, *size, resample)
            steps.append(image.shape[:2])
        if config["do_image_splitting"]:
            size = vision_encoder_size(*image.shape[:2], tile)
            image = pil_resize(image, *size, resample)
            steps.append(image.shape[:2])
            split, rows, cols = split_image(image, tile)
        else:
            # Later transformers' "We square the images to max_image_size"
            # (4.46 has no such step: see the docstring).
            split = [pil_resize(image, tile, tile, resample)]
            rows = cols = 0
            steps.append(split[0].shape[:2])
        if log is not None:
            log.append((name, steps, (rows, cols), len(split)))
        frames += split
        grids.append((rows, cols))
    if config["do_convert_rgb"]:
        frames = [convert_to_rgb(f) for f in frames]
    if config["do_rescale"]:
        frames = [rescale(f, config["rescale_factor"],
                          input_data_format=ChannelDimension.LAST)
                  for f in frames]
    if config["do_normalize"]:
        frames = [normalize(f, config["image_mean"], config["image_std"],
                            input_data_format=ChannelDimension.LAST)
                  for f in frames]
    # do_pad: to the largest tile of the batch, the mask 1 on the image.
    pad_h = max(f.shape[0] for f in frames)
    pad_w = max(f.shape[1] for f in frames)
    mask = np.zeros((len(frames), pad_h, pad_w), dtype=np.int64)
    padded = np.zeros((len(frames), pad_h, pad_w, 3), dtype=np.float32)
    for k, f in enumerate(frames):
        padded[k, :f.shape[0], :f.shape[1]] = f
        mask[k, :f.shape[0], :f.shape[1]] = 1
    tiles = torch.from_numpy(padded.transpose(0, 3, 1, 2).copy())
    return tiles, grids, torch.from_numpy(mask)


# --- the processor's prompt expansion (4.46's Idefics3Processor) -----------

def image_prompt(rows, cols):
    image = "<image>" * IMAGE_SEQ_LEN
    if rows == 0 and cols == 0:
        return ("<fake_token_around_image><global-img>" + image
                + "<fake_token_around_image>")
    text = ""
    for i in range(rows):
        for j in range(cols):
            text += (f"<fake_token_around_image><row_{i + 1}_col_{j + 1}>"
                     + image)
        text += "\n"
    return (text + "\n<fake_token_around_image><global-img>" + image
            + "<fake_token_around_image>")


def expand(prompt, grids):
    pieces = prompt.split("<image>")
    assert len(pieces) == len(grids) + 1
    text = pieces[0]
    for grid, piece in zip(grids, pieces[1:]):
        text += image_prompt(*grid) + piece
    return text


# --- the model ------------------------------------------------------------

class SimpleMLP(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.proj = torch.nn.Linear(
            config["vision_config"]["hidden_size"]
            * config["scale_factor"] ** 2,
            config["text_config"]["hidden_size"], bias=False)

    def forward(self, x):
        return self.proj(x)


class Connector(torch.nn.Module):
    """4.46's Idefics3Connector."""

    def __init__(self, config):
        super().__init__()
        self.scale_factor = config["scale_factor"]
        self.modality_projection = SimpleMLP(config)

    @staticmethod
    def pixel_shuffle(x, scale_factor=2):
        bsz, seq, embed_dim = x.size()
        height = width = int(seq ** 0.5)
        x = x.view(bsz, height, width, embed_dim)
        x = x.view(bsz, height, int(width / scale_factor),
                   embed_dim * scale_factor)
        x = x.permute(0, 2, 1, 3)
        x = x.reshape(bsz, int(width / scale_factor),
                      int(height / scale_factor),
                      embed_dim * (scale_factor ** 2))
        x = x.permute(0, 2, 1, 3)
        x = x.reshape(bsz, int(seq / (scale_factor ** 2)),
                      embed_dim * (scale_factor ** 2))
        return x

    def forward(self, image_hidden_states):
        return self.modality_projection(
            self.pixel_shuffle(image_hidden_states, self.scale_factor))


class Idefics3Model440(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        vision = Idefics2VisionConfig(**{
            k: v for k, v in config["vision_config"].items()
            if k != "model_type"})
        vision._attn_implementation = "eager"
        self.vision_model = Idefics2VisionTransformer(vision)
        self.connector = Connector(config)
        text = tf.LlamaConfig(**{k: v for k, v in config["text_config"].items()
                                 if k != "model_type"})
        text._attn_implementation = "eager"
        self.text_model = tf.LlamaModel(text)


class Idefics3ForConditionalGeneration440(torch.nn.Module):
    """Its attributes name the weights as 4.46's class does."""

    def __init__(self, config=None):
        super().__init__()
        config = config or CONFIG
        self.image_token_id = config["image_token_id"]
        self.patch_size = config["vision_config"]["patch_size"]
        self.model = Idefics3Model440(config)
        self.lm_head = torch.nn.Linear(config["text_config"]["hidden_size"],
                                       config["text_config"]["vocab_size"],
                                       bias=False)

    def image_features(self, tiles, pixel_mask=None):
        """Idefics3Model.forward's vision part: [tiles, 4, 64]."""
        real = (tiles == 0.0).sum(dim=(-1, -2, -3)) != tiles[0].numel()
        assert bool(real.all())  # no padding image to drop here
        if pixel_mask is None:
            pixel_mask = torch.ones((tiles.shape[0],) + tiles.shape[2:],
                                    dtype=torch.bool)
        p = self.patch_size
        subgrid = pixel_mask.unfold(1, p, p).unfold(2, p, p)
        patch_mask = (subgrid.sum(dim=(-1, -2)) > 0).bool()
        states = self.model.vision_model(
            pixel_values=tiles, patch_attention_mask=patch_mask
        ).last_hidden_state
        return self.model.connector(states)

    def forward(self, ids, tiles, pixel_mask=None):
        """The logits [len(ids), vocab] of one prompt (ids: 1D)."""
        embeds = self.model.text_model.embed_tokens(ids[None])
        image = ids == self.image_token_id
        features = self.image_features(tiles, pixel_mask)
        features = features.reshape(-1, embeds.shape[-1])
        assert image.sum() == features.shape[0]
        embeds[0, image] = features
        hidden = self.model.text_model(inputs_embeds=embeds,
                                       use_cache=False).last_hidden_state
        return self.lm_head(hidden)[0].float()


# --- checks ---------------------------------------------------------------

def check_pixel_shuffle():
    """Output row r, feature f <- patch (i, j) of the 4x4 grid, feature d."""
    side, d = 4, 32
    index = torch.arange(side * side * d, dtype=torch.float64)
    out = Connector.pixel_shuffle(index.view(1, side * side, d), 2)[0]
    for r in range(4):
        for f in range(4 * d):
            i = 2 * (r // 2) + f // (2 * d)
            j = 2 * (r % 2) + (f // d) % 2
            assert out[r, f].item() == (i * side + j) * d + f % d


def check_position_ids(model):
    """A full tile's bucketed position ids are the patch indices."""
    seen = {}
    embeddings = model.model.vision_model.embeddings
    def record(module, args, out):
        seen["ids"] = args[0].clone()

    hook = embeddings.position_embedding.register_forward_hook(record)
    with torch.no_grad():
        model.image_features(torch.ones(1, 3, 32, 32))
    hook.remove()
    assert seen["ids"].tolist() == [list(range(16))], seen["ids"]


def check_unsquared_nosplit_raises(model, photo):
    """4.46's do_image_splitting false: the 78 x 96 image alone."""
    image = np.array(photo)
    size = longest_edge_size(*image.shape[:2],
                             PREPROCESSOR["size"]["longest_edge"])
    image = pil_resize(image, *size, PREPROCESSOR["resample"])
    tiles = torch.from_numpy(
        ((image / 255.0).astype(np.float32) - 0.5) / 0.5
    ).permute(2, 0, 1)[None].contiguous()
    try:
        with torch.no_grad():
            model.image_features(tiles)
    except RuntimeError as error:
        print("4.46 no-split", tuple(tiles.shape), "raises:",
              str(error).splitlines()[0])
        return
    raise AssertionError("4.46's unsquared no-split path ran")


# --- the fixture ----------------------------------------------------------

def tokenizer_folder(directory):
    tokenizer = tf.LlamaTokenizer(STORIES, legacy=True)
    tokenizer.add_tokens([AddedToken(t, special=True, normalized=False)
                          for t in SPECIALS], special_tokens=True)
    # What Idefics3Processor's constructor does to its tokenizer.
    tokenizer.add_special_tokens({"additional_special_tokens": [
        AddedToken(t, normalized=False, special=True)
        for t in ("<fake_token_around_image>", "<image>",
                  "<end_of_utterance>")]})
    assert tokenizer.convert_tokens_to_ids(SPECIALS) == list(range(512, 525))
    tokenizer.save_pretrained(directory)
    # The SentencePiece model stays in ../shared: tests copy it in.
    os.remove(os.path.join(directory, "tokenizer.model"))
    return tokenizer


def save_model(model, directory):
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2, sort_keys=True)
    for name, content in (("preprocessor_config.json", PREPROCESSOR),
                          ("processor_config.json", PROCESSOR),
                          ("chat_template.json",
                           {"chat_template": CHAT_TEMPLATE})):
        with open(os.path.join(directory, name), "w") as f:
            json.dump(content, f, indent=2, sort_keys=True)
    weights = {k: v.contiguous() for k, v in model.state_dict().items()}
    assert all(k.startswith(("model.vision_model.", "model.text_model.",
                             "model.connector.modality_projection.proj.",
                             "lm_head.")) for k in weights)
    path = os.path.join(directory, "model.safetensors")
    safetensors.torch.save_file(weights, path, metadata={"format": "pt"})
    print("model.safetensors:", len(weights), "tensors")


def save_text(name, text):
    with open(os.path.join(OUT, name), "w") as f:
        f.write(text + "\n")
    print(name, text if len(text) < 60 else text[:60] + "...")


def save_ids(name, ids):
    save_text(name, " ".join(str(t) for t in ids.tolist()))


def main():
    torch.set_num_threads(1)
    directory = os.path.join(OUT, "idefics3")
    os.makedirs(directory, exist_ok=True)
    model = Idefics3ForConditionalGeneration440().eval()
    randomize(model, 7)  # a seed whose greedy continuation varies
    save_model(model, directory)
    tokenizer = tokenizer_folder(directory)
    nosplit_dir = os.path.join(OUT, "idefics3-nosplit")
    os.makedirs(nosplit_dir, exist_ok=True)
    nosplit_config = dict(PREPROCESSOR, do_image_splitting=False)
    with open(os.path.join(nosplit_dir, "preprocessor_config.json"),
              "w") as f:
        json.dump(nosplit_config, f, indent=2, sort_keys=True)

    import jinja2
    rendered = jinja2.Template(CHAT_TEMPLATE).render(
        messages=[{"role": "user", "content": [
            {"type": "image"},
            {"type": "text", "text": "What is in the picture?"}]}],
        add_generation_prompt=True)
    assert rendered == TEXT, repr(rendered)

    check_pixel_shuffle()
    check_position_ids(model)

    photo = Image.open(os.path.join(HERE, "..", "vision", "Inputs", "images",
                                    "photo.png"))
    wide = Image.open(os.path.join(OUT, "wide.png"))
    images = {"photo": photo, "wide": wide}
    check_unsquared_nosplit_raises(model, photo)

    log = []
    processed = {}
    for name, image in images.items():
        tiles, grids, mask = preprocess([(name, image)], PREPROCESSOR, log)
        assert bool(mask.all())  # nothing padded: no patch masked
        processed[name] = (tiles, grids)
        write(f"idefics3.{name}.tiles.bin", tiles)
        save_text(f"idefics3.{name}.grid.txt", "%d %d" % grids[0])
    for name, steps, grid, count in log:
        print(f"  {name}: (h, w) {' -> '.join(map(str, steps))},"
              f" grid {grid}, {count} tiles")
    both, both_grids, both_mask = preprocess(
        [("photo", photo), ("wide", wide)], PREPROCESSOR)
    assert bool(both_mask.all())
    assert torch.equal(both, torch.cat([processed["photo"][0],
                                        processed["wide"][0]]))
    nosplit_log = []
    nosplit, nosplit_grids, nosplit_mask = preprocess(
        [("photo", photo)], nosplit_config, nosplit_log)
    assert bool(nosplit_mask.all()) and nosplit_grids == [(0, 0)]
    print("  no-split photo: (h, w)",
          " -> ".join(map(str, nosplit_log[0][1])))
    write("idefics3.nosplit.tiles.bin", nosplit)

    def encode(prompt, grids):
        return tokenizer(expand(prompt, grids),
                         return_tensors="pt").input_ids[0]

    ids = encode(TEXT, processed["photo"][1])
    wide_ids = encode(TEXT, processed["wide"][1])
    two = encode(TWO, both_grids)
    nosplit_ids = encode(TEXT, nosplit_grids)
    for sequence, count in ((ids, 10), (wide_ids, 4), (two, 14),
                            (nosplit_ids, 1)):
        assert sequence.tolist().count(IMAGE) == count * IMAGE_SEQ_LEN
        assert sequence[0].item() == 1
    save_ids("idefics3.ids.txt", ids)
    save_ids("idefics3.wide.ids.txt", wide_ids)
    save_ids("idefics3.two.ids.txt", two)
    save_ids("idefics3.nosplit.ids.txt", nosplit_ids)
    tokens = tokenizer.convert_ids_to_tokens(ids.tolist())
    compact = []
    for t, i in zip(tokens, ids.tolist()):
        if compact and compact[-1][0] == t and i == IMAGE:
            compact[-1][1] += 1
        else:
            compact.append([t, 1])
    print("tokens:", " ".join(t if n == 1 else f"{t}*{n}"
                              for t, n in compact))
    print("ids:", ids.tolist())

    with torch.no_grad():
        pixels = np.fromfile(os.path.join(OUT, "pixels.f32"), dtype="<f4")
        pixels = torch.from_numpy(pixels).reshape(1, 3, 32, 32)
        tile = model.image_features(pixels)[0]
        write("idefics3.tile.bin", tile)
        print("  tile features[0, :4]", tile[0, :4].tolist())
        for name, (tiles, _) in processed.items():
            rows = model.image_features(tiles).reshape(-1, 64)
            write(f"idefics3.{name}.rows.bin", rows)
        logits = model(ids, processed["photo"][0])[-1:]
        write("idefics3.logits.bin", logits)
        print("  logits[0, :4]", logits[0, :4].tolist(),
              "max |logit|", logits.abs().max().item())
        write("idefics3.wide.logits.bin",
              model(wide_ids, processed["wide"][0])[-1:])
        write("idefics3.two.logits.bin", model(two, both)[-1:])
        write("idefics3.nosplit.logits.bin", model(nosplit_ids, nosplit)[-1:])
        sequence = ids
        for _ in range(NEW):
            step = model(sequence, processed["photo"][0])[-1].argmax()
            assert step.item() != IMAGE
            sequence = torch.cat([sequence, step[None]])
    greedy = sequence[len(ids):]
    save_ids("idefics3.greedy.txt", greedy)
    print("  greedy text", repr(tokenizer.decode(greedy.tolist())))


if __name__ == "__main__":
    sys.exit(main())
