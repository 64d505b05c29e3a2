#!/usr/bin/env python3
"""Independent numerical reference ("goldens") for Qwen2.5-VL (Qwen2_5_VLForConditionalGeneration).

Usage:
    source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 make_qwen25vl_goldens.py OUTDIR [--image some.png] [--image2 other.png]

Runs on torch 1.13 + transformers 4.40.2 (no Qwen2-VL / Qwen2.5-VL there).  The Qwen2.5-VL parts are
transcribed from transformers v4.49.0 (the release that added Qwen2.5-VL), read at commit
c877c9fa5bc5ef32310dd2ba5115e0e9d9862f95^ (= the main-branch commit from which v4.49.0 was cut; the bump to
4.50.0.dev0 touched no model file):
    src/transformers/models/qwen2_5_vl/modeling_qwen2_5_vl.py
    src/transformers/models/qwen2_5_vl/configuration_qwen2_5_vl.py
    src/transformers/models/qwen2_5_vl/processing_qwen2_5_vl.py
    src/transformers/models/qwen2_vl/image_processing_qwen2_vl.py   (Qwen2.5-VL uses Qwen2VLImageProcessor in 4.49)
What 4.40 already has is reused from 4.40: Qwen2DecoderLayer / Qwen2MLP / Qwen2RMSNorm / rotate_half / repeat_kv /
DynamicCache, and the image_transforms helpers (resize, rescale, normalize, convert_to_rgb) used by the image processor.
Places where 4.40 and 4.49 differ are marked "4.40 vs 4.49:" below, with the choice made.

Everything is float32 on CPU, eager attention (4.49 "eager" classes; torch 1.13 has no F.scaled_dot_product_attention).
"""
import argparse
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image

from transformers.activations import ACT2FN
from transformers.cache_utils import DynamicCache
from transformers.image_transforms import convert_to_rgb, normalize, rescale, resize, to_channel_dimension_format
from transformers.image_utils import (
    OPENAI_CLIP_MEAN,
    OPENAI_CLIP_STD,
    ChannelDimension,
    PILImageResampling,
    get_image_size,
    infer_channel_dimension_format,
    to_numpy_array,
)
from transformers.models.qwen2.configuration_qwen2 import Qwen2Config
from transformers.models.qwen2.modeling_qwen2 import (
    Qwen2Attention,
    Qwen2DecoderLayer,
    Qwen2ForCausalLM,
    Qwen2RMSNorm,
    repeat_kv,
    rotate_half,
)

torch.set_num_threads(1)  # the machine is shared; everything here is tiny

# ----------------------------------------------------------------------------------------------------------------
# Tiny configuration (field names exactly as in Qwen2_5_VLConfig / Qwen2_5_VLVisionConfig of 4.49)
# ----------------------------------------------------------------------------------------------------------------
VOCAB = 200
SPECIAL = {  # ids chosen inside the tiny vocab; names/ordering as in the published Qwen2.5-VL config
    "<|endoftext|>": 195,      # bos_token_id (published 151643)
    "<|im_end|>": 196,         # eos_token_id (published 151645)
    "<|vision_start|>": 190,   # vision_start_token_id (published 151652)
    "<|vision_end|>": 191,     # vision_end_token_id (published 151653)
    "<|vision_pad|>": 192,     # vision_token_id (published 151654; not read by the 4.49 model code)
    "<|image_pad|>": 193,      # image_token_id (published 151655)
    "<|video_pad|>": 194,      # video_token_id (published 151656)
}

VISION_CONFIG = {
    "depth": 4,
    "hidden_act": "silu",
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_heads": 2,
    "in_channels": 3,
    "in_chans": 3,              # published configs spell it in_chans (ignored by 4.49, which reads in_channels)
    "out_hidden_size": 64,      # == text hidden_size
    "patch_size": 14,
    "spatial_merge_size": 2,
    "spatial_patch_size": 14,   # published, ignored by 4.49
    "temporal_patch_size": 2,
    "tokens_per_second": 2,
    "window_size": 56,          # -> 56 // 2 // 14 = 2 merged tokens (4 patches) per window side
    "fullatt_block_indexes": [1, 3],
    "model_type": "qwen2_5_vl",
}

TEXT_CONFIG = {
    "architectures": ["Qwen2_5_VLForConditionalGeneration"],
    "attention_dropout": 0.0,
    "bos_token_id": SPECIAL["<|endoftext|>"],
    "eos_token_id": SPECIAL["<|im_end|>"],
    "vision_start_token_id": SPECIAL["<|vision_start|>"],
    "vision_end_token_id": SPECIAL["<|vision_end|>"],
    "vision_token_id": SPECIAL["<|vision_pad|>"],
    "image_token_id": SPECIAL["<|image_pad|>"],
    "video_token_id": SPECIAL["<|video_pad|>"],
    "hidden_act": "silu",
    "hidden_size": 64,
    "initializer_range": 0.02,
    "intermediate_size": 128,
    "max_position_embeddings": 4096,
    "max_window_layers": 2,
    "model_type": "qwen2_5_vl",
    "num_attention_heads": 4,     # head_dim 16
    "num_hidden_layers": 2,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-06,
    # The real model uses 1e6.  A small theta makes every rotary frequency (hence the h and w sections of M-RoPE)
    # matter for the logits, so a mis-assigned section shows up in the goldens.
    "rope_theta": 100.0,
    "sliding_window": 4096,
    "tie_word_embeddings": False,
    "torch_dtype": "float32",
    "transformers_version": "4.49.0",
    "use_cache": True,
    "use_sliding_window": False,
    "vision_config": VISION_CONFIG,
    # Hub form.  NOTE: 4.49's Qwen2_5_VLConfig.__init__ rewrites this in place to
    # {"type": "default", "mrope_section": [...], "rope_type": "default"}, so a config.json written by 4.49's own
    # save_pretrained carries that form instead; both mean the same thing (plain RoPE + mrope_section).
    "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},   # sums to head_dim/2 = 8
    "vocab_size": VOCAB,
}

# Published Qwen2.5-VL preprocessor_config.json, with max_pixels shrunk for the test (published: 12845056).
PREPROCESSOR_CONFIG = {
    "min_pixels": 3136,
    "max_pixels": 28 * 28 * 24,   # 18816: 150x100 fits as is, 300x120 is scaled down by smart_resize
    "patch_size": 14,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "image_processor_type": "Qwen2VLImageProcessor",
    "processor_class": "Qwen2_5_VLProcessor",
}


class Cfg:
    """Attribute view of a dict (stands in for PretrainedConfig; nested vision_config too)."""

    def __init__(self, d):
        for k, v in d.items():
            setattr(self, k, Cfg(v) if isinstance(v, dict) and k == "vision_config" else v)


# ----------------------------------------------------------------------------------------------------------------
# Image processor: Qwen2VLImageProcessor (4.49) on top of 4.40's image_transforms
# ----------------------------------------------------------------------------------------------------------------
def smart_resize(height, width, factor=28, min_pixels=56 * 56, max_pixels=14 * 14 * 4 * 1280):
    """Verbatim from 4.49 image_processing_qwen2_vl.py.  NB: Python round() is round-half-to-even."""
    if height < factor or width < factor:
        raise ValueError(f"height:{height} or width:{width} must be larger than factor:{factor}")
    elif max(height, width) / min(height, width) > 200:
        raise ValueError(f"absolute aspect ratio must be smaller than 200, got {max(height, width) / min(height, width)}")
    h_bar = round(height / factor) * factor
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


class Qwen2VLImageProcessor:
    """Transcription of 4.49 Qwen2VLImageProcessor._preprocess for still images (videos omitted).

    4.40 vs 4.49: image_transforms.rescale is `image * scale` in 4.40 and `image.astype(float64) * scale` in 4.49;
    for the uint8 arrays that come out of PIL both give float64 products then .astype(float32): identical.  resize()
    and normalize() are the same code in both (checked by diff).  We call 4.40's helpers.
    4.49 reads min_pixels/max_pixels from the attributes (the `size` dict is not used for smart_resize in 4.49;
    later releases read size["shortest_edge"/"longest_edge"]).
    """

    def __init__(self, cfg):
        self.min_pixels = cfg["min_pixels"]
        self.max_pixels = cfg["max_pixels"]
        self.patch_size = cfg["patch_size"]
        self.temporal_patch_size = cfg["temporal_patch_size"]
        self.merge_size = cfg["merge_size"]
        self.image_mean = cfg.get("image_mean", OPENAI_CLIP_MEAN)
        self.image_std = cfg.get("image_std", OPENAI_CLIP_STD)
        self.resample = PILImageResampling.BICUBIC
        self.rescale_factor = 1 / 255

    def _preprocess(self, image):
        image = convert_to_rgb(image)                       # PIL .convert("RGB") if mode != RGB (alpha dropped)
        image = to_numpy_array(image)                       # HWC uint8
        fmt = infer_channel_dimension_format(image)
        height, width = get_image_size(image, channel_dim=fmt)
        rh, rw = smart_resize(height, width, factor=self.patch_size * self.merge_size,
                              min_pixels=self.min_pixels, max_pixels=self.max_pixels)
        image = resize(image, size=(rh, rw), resample=self.resample, input_data_format=fmt)   # PIL bicubic, uint8
        image = rescale(image, scale=self.rescale_factor, input_data_format=fmt)               # -> float32
        image = normalize(image, mean=self.image_mean, std=self.image_std, input_data_format=fmt)  # float32 math
        image = to_channel_dimension_format(image, ChannelDimension.FIRST, input_channel_dim=fmt)  # CHW
        patches = np.array([image])                                       # [1, C, H, W]
        if patches.shape[0] % self.temporal_patch_size != 0:             # a still image is repeated to T=2
            repeats = np.repeat(patches[-1][np.newaxis], self.temporal_patch_size - 1, axis=0)
            patches = np.concatenate([patches, repeats], axis=0)
        channel = patches.shape[1]
        grid_t = patches.shape[0] // self.temporal_patch_size
        grid_h, grid_w = rh // self.patch_size, rw // self.patch_size
        m, p, tp = self.merge_size, self.patch_size, self.temporal_patch_size
        patches = patches.reshape(grid_t, tp, channel, grid_h // m, m, p, grid_w // m, m, p)
        patches = patches.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
        flat = patches.reshape(grid_t * grid_h * grid_w, channel * tp * p * p)
        return flat, (grid_t, grid_h, grid_w), (rh, rw)

    def __call__(self, images):
        pv, thw, sizes = [], [], []
        for im in images:
            flat, grid, rs = self._preprocess(im)
            pv.extend(flat)
            thw.append(grid)
            sizes.append(rs)
        return np.array(pv), np.array(thw), sizes


def expand_image_tokens(text, image_grid_thw, merge_size, image_token="<|image_pad|>"):
    """Qwen2_5_VLProcessor.__call__ (4.49): each <|image_pad|> -> prod(grid_thw)//merge_size**2 copies, in order."""
    merge_length = merge_size ** 2
    index = 0
    while image_token in text:
        text = text.replace(image_token, "<|placeholder|>" * int(np.prod(image_grid_thw[index]) // merge_length), 1)
        index += 1
    return text.replace("<|placeholder|>", image_token)


def tiny_tokenize(text):
    """Stand-in for the Qwen2 tokenizer: special tokens by string, ordinary tokens written 'tokN' -> id N."""
    import re

    ids = []
    for m in re.finditer(r"<\|[a-z_]+\|>|tok(\d+)", text):
        ids.append(SPECIAL[m.group(0)] if m.group(1) is None else int(m.group(1)))
    return ids


# ----------------------------------------------------------------------------------------------------------------
# Vision tower (transcribed from 4.49; RMSNorm from 4.40, identical formula)
# ----------------------------------------------------------------------------------------------------------------
class Qwen2_5_VisionPatchEmbed(nn.Module):
    def __init__(self, patch_size=14, temporal_patch_size=2, in_channels=3, embed_dim=1152):
        super().__init__()
        self.patch_size, self.temporal_patch_size = patch_size, temporal_patch_size
        self.in_channels, self.embed_dim = in_channels, embed_dim
        k = [temporal_patch_size, patch_size, patch_size]
        self.proj = nn.Conv3d(in_channels, embed_dim, kernel_size=k, stride=k, bias=False)

    def forward(self, x):
        x = x.view(-1, self.in_channels, self.temporal_patch_size, self.patch_size, self.patch_size)
        return self.proj(x.to(self.proj.weight.dtype)).view(-1, self.embed_dim)


class Qwen2_5_VisionRotaryEmbedding(nn.Module):
    def __init__(self, dim, theta=10000.0):
        super().__init__()
        inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, seqlen):
        seq = torch.arange(seqlen, dtype=self.inv_freq.dtype)
        return torch.outer(seq, self.inv_freq)


class Qwen2_5_VLMLP(nn.Module):  # the vision MLP: SwiGLU with biases
    def __init__(self, config, bias=False):
        super().__init__()
        self.gate_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=bias)
        self.up_proj = nn.Linear(config.hidden_size, config.intermediate_size, bias=bias)
        self.down_proj = nn.Linear(config.intermediate_size, config.hidden_size, bias=bias)
        self.act_fn = ACT2FN[config.hidden_act]

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def apply_rotary_pos_emb_vision(q, k, cos, sin):
    oq, ok = q.dtype, k.dtype
    q, k = q.float(), k.float()
    cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)
    q_embed = (q * cos) + (rotate_half(q) * sin)
    k_embed = (k * cos) + (rotate_half(k) * sin)
    return q_embed.to(oq), k_embed.to(ok)


class Qwen2_5_VLVisionAttention(nn.Module):  # 4.49 "eager" vision attention
    def __init__(self, dim, num_heads=16):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, dim // num_heads
        self.qkv = nn.Linear(dim, dim * 3, bias=True)
        self.proj = nn.Linear(dim, dim)

    def forward(self, hidden_states, cu_seqlens, position_embeddings):
        n = hidden_states.shape[0]
        q, k, v = self.qkv(hidden_states).reshape(n, 3, self.num_heads, -1).permute(1, 0, 2, 3).unbind(0)
        cos, sin = position_embeddings
        q, k = apply_rotary_pos_emb_vision(q, k, cos, sin)
        mask = torch.full([1, n, n], torch.finfo(q.dtype).min, dtype=q.dtype)
        for i in range(1, len(cu_seqlens)):
            mask[..., cu_seqlens[i - 1]:cu_seqlens[i], cu_seqlens[i - 1]:cu_seqlens[i]] = 0
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
        w = torch.matmul(q, k.transpose(1, 2)) / math.sqrt(self.head_dim) + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(w, v).transpose(0, 1).reshape(n, -1)
        return self.proj(out)


class Qwen2_5_VLVisionBlock(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.norm1 = Qwen2RMSNorm(config.hidden_size, eps=1e-6)   # 4.40 class; same math as 4.49's copy
        self.norm2 = Qwen2RMSNorm(config.hidden_size, eps=1e-6)
        self.attn = Qwen2_5_VLVisionAttention(config.hidden_size, num_heads=config.num_heads)
        self.mlp = Qwen2_5_VLMLP(config, bias=True)

    def forward(self, x, cu_seqlens, position_embeddings):
        x = x + self.attn(self.norm1(x), cu_seqlens=cu_seqlens, position_embeddings=position_embeddings)
        return x + self.mlp(self.norm2(x))


class Qwen2_5_VLPatchMerger(nn.Module):
    def __init__(self, dim, context_dim, spatial_merge_size=2):
        super().__init__()
        self.hidden_size = context_dim * spatial_merge_size ** 2
        self.ln_q = Qwen2RMSNorm(context_dim, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(self.hidden_size, self.hidden_size), nn.GELU(),
                                 nn.Linear(self.hidden_size, dim))

    def forward(self, x):
        return self.mlp(self.ln_q(x).view(-1, self.hidden_size))


class Qwen2_5_VisionTransformer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.spatial_merge_size = config.spatial_merge_size
        self.patch_size = config.patch_size
        self.fullatt_block_indexes = config.fullatt_block_indexes
        self.window_size = config.window_size
        self.spatial_merge_unit = self.spatial_merge_size ** 2
        self.patch_embed = Qwen2_5_VisionPatchEmbed(config.patch_size, config.temporal_patch_size,
                                                    config.in_channels, config.hidden_size)
        head_dim = config.hidden_size // config.num_heads
        self.rotary_pos_emb = Qwen2_5_VisionRotaryEmbedding(head_dim // 2)
        self.blocks = nn.ModuleList([Qwen2_5_VLVisionBlock(config) for _ in range(config.depth)])
        self.merger = Qwen2_5_VLPatchMerger(config.out_hidden_size, config.hidden_size, config.spatial_merge_size)

    def rot_pos_ids(self, grid_thw):
        m = self.spatial_merge_size
        pos_ids = []
        for t, h, w in grid_thw.tolist():
            hpos = torch.arange(h).unsqueeze(1).expand(-1, w).reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).flatten()
            wpos = torch.arange(w).unsqueeze(0).expand(h, -1).reshape(h // m, m, w // m, m).permute(0, 2, 1, 3).flatten()
            pos_ids.append(torch.stack([hpos, wpos], dim=-1).repeat(t, 1))
        return torch.cat(pos_ids, dim=0)

    def rot_pos_emb(self, grid_thw):
        pos_ids = self.rot_pos_ids(grid_thw)
        max_grid_size = int(grid_thw[:, 1:].max())
        full = self.rotary_pos_emb(max_grid_size)
        return full[pos_ids].flatten(1)          # [N, head_dim/2] = [h angles (head_dim/4) | w angles (head_dim/4)]

    def get_window_index(self, grid_thw):
        window_index, cu_window_seqlens, window_index_id = [], [0], 0
        vit_merger_window_size = self.window_size // self.spatial_merge_size // self.patch_size
        for grid_t, grid_h, grid_w in grid_thw.tolist():
            llm_grid_h, llm_grid_w = grid_h // self.spatial_merge_size, grid_w // self.spatial_merge_size
            index = torch.arange(grid_t * llm_grid_h * llm_grid_w).reshape(grid_t, llm_grid_h, llm_grid_w)
            pad_h = vit_merger_window_size - llm_grid_h % vit_merger_window_size   # NB: a full window when divisible
            pad_w = vit_merger_window_size - llm_grid_w % vit_merger_window_size
            num_windows_h = (llm_grid_h + pad_h) // vit_merger_window_size
            num_windows_w = (llm_grid_w + pad_w) // vit_merger_window_size
            index_padded = F.pad(index, (0, pad_w, 0, pad_h), "constant", -100)
            index_padded = index_padded.reshape(grid_t, num_windows_h, vit_merger_window_size,
                                                num_windows_w, vit_merger_window_size)
            index_padded = index_padded.permute(0, 1, 3, 2, 4).reshape(
                grid_t, num_windows_h * num_windows_w, vit_merger_window_size, vit_merger_window_size)
            seqlens = (index_padded != -100).sum([2, 3]).reshape(-1)
            index_padded = index_padded.reshape(-1)
            index_new = index_padded[index_padded != -100]
            window_index.append(index_new + window_index_id)
            cu_tmp = seqlens.cumsum(0) * self.spatial_merge_unit + cu_window_seqlens[-1]
            cu_window_seqlens.extend(cu_tmp.tolist())
            window_index_id += grid_t * llm_grid_h * llm_grid_w
        return torch.cat(window_index, dim=0), cu_window_seqlens

    def forward(self, hidden_states, grid_thw, trace=None):
        hidden_states = self.patch_embed(hidden_states)
        if trace is not None:
            trace["patch_embed"] = hidden_states.clone()
        rotary_pos_emb = self.rot_pos_emb(grid_thw)
        window_index, cu_window_seqlens = self.get_window_index(grid_thw)
        cu_window_seqlens = torch.unique_consecutive(torch.tensor(cu_window_seqlens, dtype=torch.int32))
        seq_len = hidden_states.shape[0]
        u = self.spatial_merge_unit
        hidden_states = hidden_states.reshape(seq_len // u, u, -1)[window_index].reshape(seq_len, -1)
        rotary_pos_emb = rotary_pos_emb.reshape(seq_len // u, u, -1)[window_index].reshape(seq_len, -1)
        emb = torch.cat((rotary_pos_emb, rotary_pos_emb), dim=-1)
        position_embeddings = (emb.cos(), emb.sin())
        cu_seqlens = torch.repeat_interleave(grid_thw[:, 1] * grid_thw[:, 2], grid_thw[:, 0]).cumsum(
            dim=0, dtype=torch.int32)
        cu_seqlens = F.pad(cu_seqlens, (1, 0), value=0)
        if trace is not None:
            trace.update(rot_pos_ids=self.rot_pos_ids(grid_thw), rot_angles=self.rot_pos_emb(grid_thw),
                         window_index=window_index, cu_window_seqlens=cu_window_seqlens, cu_seqlens=cu_seqlens,
                         blocks=[])
        for layer_num, blk in enumerate(self.blocks):
            cu_now = cu_seqlens if layer_num in self.fullatt_block_indexes else cu_window_seqlens
            hidden_states = blk(hidden_states, cu_seqlens=cu_now, position_embeddings=position_embeddings)
            if trace is not None:
                trace["blocks"].append(hidden_states.clone())
        hidden_states = self.merger(hidden_states)
        if trace is not None:
            trace["merger_out_window_order"] = hidden_states.clone()
        reverse_indices = torch.argsort(window_index)
        return hidden_states[reverse_indices, :]


# ----------------------------------------------------------------------------------------------------------------
# Text model: 4.40 Qwen2 decoder layers, with the attention's RoPE replaced by 4.49's multimodal RoPE
# ----------------------------------------------------------------------------------------------------------------
class Qwen2_5_VLRotaryEmbedding(nn.Module):
    """4.49 Qwen2_5_VLRotaryEmbedding for rope_type 'default' (what 'mrope' is converted to): inv_freq as plain RoPE,
    angles computed separately for each of the 3 position rows.  Returns cos/sin [3, B, S, head_dim]."""

    def __init__(self, head_dim, base):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv = self.inv_freq[None, None, :, None].float().expand(3, position_ids.shape[1], -1, 1)
        pos = position_ids[:, :, None, :].float()
        freqs = (inv @ pos).transpose(2, 3)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def apply_multimodal_rotary_pos_emb(q, k, cos, sin, mrope_section, unsqueeze_dim=1):
    mrope_section = mrope_section * 2
    cos = torch.cat([m[i % 3] for i, m in enumerate(cos.split(mrope_section, dim=-1))], dim=-1).unsqueeze(unsqueeze_dim)
    sin = torch.cat([m[i % 3] for i, m in enumerate(sin.split(mrope_section, dim=-1))], dim=-1).unsqueeze(unsqueeze_dim)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


class Qwen2_5_VLAttention(Qwen2Attention):
    """4.40 Qwen2Attention (same q/k/v/o projections, biases on q/k/v, GQA, eager softmax in fp32) with forward
    replaced by 4.49's: `position_ids` is the (3, B, S) M-RoPE index and the rotation is the multimodal one.
    4.40 vs 4.49: 4.40 applies 1-D RoPE from a cached cos/sin table indexed by position_ids; 4.49 computes
    cos/sin per (t, h, w) row and stitches sections.  We follow 4.49."""

    def __init__(self, config, layer_idx, mrope_section):
        super().__init__(config, layer_idx)
        self.rotary_emb = None  # the 4.40 1-D table is not used
        self.mrope_rotary = Qwen2_5_VLRotaryEmbedding(self.head_dim, config.rope_theta)
        self.mrope_section = list(mrope_section)

    def forward(self, hidden_states, attention_mask=None, position_ids=None, past_key_value=None,
                output_attentions=False, use_cache=False, **kwargs):
        bsz, q_len, _ = hidden_states.size()
        q = self.q_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden_states).view(bsz, q_len, -1, self.head_dim).transpose(1, 2)
        cos, sin = self.mrope_rotary(v, position_ids)
        q, k = apply_multimodal_rotary_pos_emb(q, k, cos, sin, self.mrope_section)
        if past_key_value is not None:
            k, v = past_key_value.update(k, v, self.layer_idx, {"sin": sin, "cos": cos})
        k = repeat_kv(k, self.num_key_value_groups)
        v = repeat_kv(v, self.num_key_value_groups)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            w = w + attention_mask[:, :, :, : k.shape[-2]]
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        out = torch.matmul(w, v).transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        return self.o_proj(out), None, past_key_value


def qwen2_config_for_text(cfg):
    c = Qwen2Config(vocab_size=cfg["vocab_size"], hidden_size=cfg["hidden_size"],
                    intermediate_size=cfg["intermediate_size"], num_hidden_layers=cfg["num_hidden_layers"],
                    num_attention_heads=cfg["num_attention_heads"], num_key_value_heads=cfg["num_key_value_heads"],
                    hidden_act=cfg["hidden_act"], max_position_embeddings=cfg["max_position_embeddings"],
                    rms_norm_eps=cfg["rms_norm_eps"], rope_theta=cfg["rope_theta"],
                    sliding_window=cfg["sliding_window"], use_sliding_window=cfg["use_sliding_window"],
                    max_window_layers=cfg["max_window_layers"], tie_word_embeddings=cfg["tie_word_embeddings"],
                    attention_dropout=0.0)
    c._attn_implementation = "eager"
    return c


class Qwen2_5_VLTextModel(nn.Module):
    """Qwen2_5_VLModel (4.49) = embed_tokens + 4.40 Qwen2DecoderLayer x N + norm.
    4.40 vs 4.49: 4.40's Qwen2Model.forward flattens position_ids to 2-D and builds its mask with
    _prepare_4d_causal_attention_mask; we drive the 4.40 layers ourselves with 4.49's (3,B,S) ids and 4.49's
    cache_position-based mask (which, like 4.40's, also applies config.sliding_window even when
    use_sliding_window is false; irrelevant below sliding_window tokens)."""

    def __init__(self, cfg):
        super().__init__()
        qc = qwen2_config_for_text(cfg)
        self.sliding_window = cfg["sliding_window"]
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList()
        for i in range(cfg["num_hidden_layers"]):
            layer = Qwen2DecoderLayer(qc, i)
            layer.self_attn = Qwen2_5_VLAttention(qc, i, cfg["rope_scaling"]["mrope_section"])
            self.layers.append(layer)
        self.norm = Qwen2RMSNorm(cfg["hidden_size"], eps=cfg["rms_norm_eps"])

    def causal_mask(self, seq_len, past, cache_position, dtype):
        target = past + seq_len
        min_dtype = torch.finfo(dtype).min
        mask = torch.full((seq_len, target), min_dtype, dtype=dtype)
        attend_not = torch.arange(target) > cache_position.reshape(-1, 1)
        if self.sliding_window is not None:
            attend_not |= torch.arange(target) <= (cache_position.reshape(-1, 1) - self.sliding_window)
        return (mask * attend_not)[None, None]

    def forward(self, inputs_embeds, position_ids, past_key_values=None, cache_position=None):
        past = past_key_values.get_seq_length() if past_key_values is not None else 0
        if cache_position is None:
            cache_position = torch.arange(past, past + inputs_embeds.shape[1])
        mask = self.causal_mask(inputs_embeds.shape[1], past, cache_position, inputs_embeds.dtype)
        h = inputs_embeds
        for layer in self.layers:
            h = layer(h, attention_mask=mask, position_ids=position_ids, past_key_value=past_key_values,
                      use_cache=past_key_values is not None)[0]
        return self.norm(h)


class Qwen2_5_VLForConditionalGeneration(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.config = Cfg(cfg)
        self.visual = Qwen2_5_VisionTransformer(self.config.vision_config)
        self.model = Qwen2_5_VLTextModel(cfg)
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)
        self.rope_deltas = None

    def get_rope_index(self, input_ids, image_grid_thw=None, video_grid_thw=None, second_per_grid_ts=None,
                       attention_mask=None):
        """Transcribed from 4.49 (images and videos; batch with optional left padding)."""
        spatial_merge_size = self.config.vision_config.spatial_merge_size
        image_token_id, video_token_id = self.config.image_token_id, self.config.video_token_id
        vision_start_token_id = self.config.vision_start_token_id
        mrope_position_deltas = []
        if input_ids is not None and (image_grid_thw is not None or video_grid_thw is not None):
            total_input_ids = input_ids
            if attention_mask is None:
                attention_mask = torch.ones_like(total_input_ids)
            position_ids = torch.ones(3, input_ids.shape[0], input_ids.shape[1], dtype=input_ids.dtype)
            image_index, video_index = 0, 0
            for i, ids in enumerate(total_input_ids):
                ids = ids[attention_mask[i] == 1]
                vision_start_indices = torch.argwhere(ids == vision_start_token_id).squeeze(1)
                vision_tokens = ids[vision_start_indices + 1]
                image_nums = int((vision_tokens == image_token_id).sum())
                video_nums = int((vision_tokens == video_token_id).sum())
                input_tokens = ids.tolist()
                llm_pos_ids_list = []
                st = 0
                remain_images, remain_videos = image_nums, video_nums
                for _ in range(image_nums + video_nums):
                    if image_token_id in input_tokens and remain_images > 0:
                        ed_image = input_tokens.index(image_token_id, st)
                    else:
                        ed_image = len(input_tokens) + 1
                    if video_token_id in input_tokens and remain_videos > 0:
                        ed_video = input_tokens.index(video_token_id, st)
                    else:
                        ed_video = len(input_tokens) + 1
                    if ed_image < ed_video:
                        t, h, w = image_grid_thw[image_index].tolist()
                        second_per_grid_t = 0
                        image_index += 1
                        remain_images -= 1
                        ed = ed_image
                    else:
                        t, h, w = video_grid_thw[video_index].tolist()
                        second_per_grid_t = (float(second_per_grid_ts[video_index])
                                             if second_per_grid_ts is not None else 1.0)
                        video_index += 1
                        remain_videos -= 1
                        ed = ed_video
                    llm_grid_t, llm_grid_h, llm_grid_w = t, h // spatial_merge_size, w // spatial_merge_size
                    text_len = ed - st
                    st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                    llm_pos_ids_list.append(torch.arange(text_len).view(1, -1).expand(3, -1) + st_idx)
                    range_tensor = torch.arange(llm_grid_t).view(-1, 1)
                    expanded_range = range_tensor.expand(-1, llm_grid_h * llm_grid_w)
                    time_tensor = expanded_range * second_per_grid_t * self.config.vision_config.tokens_per_second
                    t_index = time_tensor.long().flatten()
                    h_index = torch.arange(llm_grid_h).view(1, -1, 1).expand(llm_grid_t, -1, llm_grid_w).flatten()
                    w_index = torch.arange(llm_grid_w).view(1, 1, -1).expand(llm_grid_t, llm_grid_h, -1).flatten()
                    llm_pos_ids_list.append(torch.stack([t_index, h_index, w_index]) + text_len + st_idx)
                    st = ed + llm_grid_t * llm_grid_h * llm_grid_w
                if st < len(input_tokens):
                    st_idx = llm_pos_ids_list[-1].max() + 1 if len(llm_pos_ids_list) > 0 else 0
                    text_len = len(input_tokens) - st
                    llm_pos_ids_list.append(torch.arange(text_len).view(1, -1).expand(3, -1) + st_idx)
                llm_positions = torch.cat(llm_pos_ids_list, dim=1).reshape(3, -1)
                position_ids[..., i, attention_mask[i] == 1] = llm_positions
                mrope_position_deltas.append(llm_positions.max() + 1 - len(total_input_ids[i]))
            return position_ids, torch.tensor(mrope_position_deltas).unsqueeze(1)
        if attention_mask is not None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            position_ids = position_ids.unsqueeze(0).expand(3, -1, -1)
            max_position_ids = position_ids.max(0, keepdim=False)[0].max(-1, keepdim=True)[0]
            return position_ids, max_position_ids + 1 - attention_mask.shape[-1]
        position_ids = torch.arange(input_ids.shape[1]).view(1, 1, -1).expand(3, input_ids.shape[0], -1)
        return position_ids, torch.zeros([input_ids.shape[0], 1], dtype=input_ids.dtype)

    def forward(self, input_ids, pixel_values=None, image_grid_thw=None, past_key_values=None, cache_position=None,
                trace=None):
        """4.49 Qwen2_5_VLForConditionalGeneration.forward, batch 1, no attention_mask, images only."""
        inputs_embeds = self.model.embed_tokens(input_ids)
        if pixel_values is not None:
            image_embeds = self.visual(pixel_values, grid_thw=image_grid_thw, trace=trace)
            mask = (input_ids == self.config.image_token_id)
            assert int(mask.sum()) == image_embeds.shape[0], "image tokens vs features"
            inputs_embeds = inputs_embeds.masked_scatter(mask.unsqueeze(-1).expand_as(inputs_embeds), image_embeds)
            if trace is not None:
                trace["image_embeds"] = image_embeds
        if trace is not None:
            trace["inputs_embeds"] = inputs_embeds
        # position ids exactly as 4.49: full get_rope_index on the first (prefill) call, then cache_position+deltas
        if (cache_position is not None and cache_position[0] == 0) or self.rope_deltas is None or (
                past_key_values is None or past_key_values.get_seq_length() == 0):
            position_ids, rope_deltas = self.get_rope_index(input_ids, image_grid_thw, None, None, None)
            self.rope_deltas = rope_deltas
        else:
            b, s, _ = inputs_embeds.shape
            delta = cache_position[0] + self.rope_deltas
            position_ids = torch.arange(s).view(1, -1).expand(b, -1)
            delta = delta.repeat_interleave(b // delta.shape[0], dim=0)
            position_ids = position_ids.add(delta).unsqueeze(0).expand(3, -1, -1)
        if trace is not None:
            trace["position_ids"] = position_ids
        hidden = self.model(inputs_embeds, position_ids, past_key_values, cache_position)
        return self.lm_head(hidden)


# ----------------------------------------------------------------------------------------------------------------
# Weights, saving, loading
# ----------------------------------------------------------------------------------------------------------------
def init_weights(model, seed):
    """Seeded random init.  Larger than HF's normal(0, 0.02) so that activations are O(1) and greedy argmaxes have
    clear margins (a golden should not hinge on 1e-6 ties)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("norm1.weight") or name.endswith("norm2.weight") or "layernorm" in name \
                    or name.endswith("norm.weight") or name.endswith("ln_q.weight"):
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:  # Linear / Conv3d weight: N(0, 1/fan_in)
                fan_in = int(np.prod(p.shape[1:]))
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(fan_in))


def save_hf_folder(model, outdir):
    from safetensors.torch import save_file

    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "config.json"), "w") as f:
        json.dump(model.cfg, f, indent=2)
    with open(os.path.join(outdir, "preprocessor_config.json"), "w") as f:
        json.dump(PREPROCESSOR_CONFIG, f, indent=2)
    sd = {k: v.contiguous() for k, v in model.state_dict().items()}
    save_file(sd, os.path.join(outdir, "model.safetensors"), metadata={"format": "pt"})
    return sd


def load_hf_folder(outdir):
    from safetensors.torch import load_file

    with open(os.path.join(outdir, "config.json")) as f:
        cfg = json.load(f)
    model = Qwen2_5_VLForConditionalGeneration(cfg)
    model.load_state_dict(load_file(os.path.join(outdir, "model.safetensors")), strict=True)
    return model.eval()


# ----------------------------------------------------------------------------------------------------------------
# Independent re-derivations used as checks (written from SPEC.md, not from the HF code paths)
# ----------------------------------------------------------------------------------------------------------------
def pil_bicubic_uint8(img_u8, out_h, out_w):
    """Pillow's ImagingResample (libImaging/Resample.c) for 8-bit RGB, BICUBIC (a = -0.5), box = whole image:
    separable, horizontal pass first into a uint8 temp, then vertical; fixed-point coefficients with 22 fractional
    bits; support scaled by the downscale factor (antialiasing).  Used to check that PIL is what we think it is."""
    PREC = 22

    def filt(x):
        a = -0.5
        x = abs(x)
        if x < 1.0:
            return ((a + 2.0) * x - (a + 3.0)) * x * x + 1
        if x < 2.0:
            return (((x - 5) * x + 8) * x - 4) * a
        return 0.0

    def coeffs(in_size, out_size):
        scale = in_size / out_size
        fscale = max(scale, 1.0)
        support = 2.0 * fscale
        ksize = int(math.ceil(support)) * 2 + 1
        bounds, kk = [], []
        for xx in range(out_size):
            center = (xx + 0.5) * scale
            ss = 1.0 / fscale
            xmin = max(int(center - support + 0.5), 0)
            xmax = min(int(center + support + 0.5), in_size) - xmin
            k = [filt((x + xmin - center + 0.5) * ss) for x in range(xmax)]
            ww = sum(k)
            k = [w / ww if ww != 0.0 else w for w in k]
            ki = [int(-0.5 + w * (1 << PREC)) if w < 0 else int(0.5 + w * (1 << PREC)) for w in k]
            bounds.append((xmin, xmax))
            kk.append(ki + [0] * (ksize - len(ki)))
        return bounds, kk

    def clip8(v):
        v = v >> PREC
        return np.clip(v, 0, 255)

    src = img_u8.astype(np.int64)
    in_h, in_w = src.shape[:2]
    bv, kv = coeffs(in_h, out_h)
    bh, kh = coeffs(in_w, out_w)
    need_h, need_v = out_w != in_w, out_h != in_h
    y_first, y_last = bv[0][0], bv[-1][0] + bv[-1][1]
    if need_h:
        rows = src[y_first:y_last]
        tmp = np.zeros((rows.shape[0], out_w, 3), np.int64)
        for xx, (xmin, xmax) in enumerate(bh):
            k = np.array(kh[xx][:xmax], np.int64)
            acc = (1 << (PREC - 1)) + np.einsum("hxc,x->hc", rows[:, xmin:xmin + xmax], k)
            tmp[:, xx] = clip8(acc)
        bv = [(a - y_first, b) for a, b in bv]
    else:
        tmp = src
    if need_v:
        out = np.zeros((out_h, tmp.shape[1], 3), np.int64)
        for yy, (ymin, ymax) in enumerate(bv):
            k = np.array(kv[yy][:ymax], np.int64)
            acc = (1 << (PREC - 1)) + np.einsum("ywc,y->wc", tmp[ymin:ymin + ymax], k)
            out[yy] = clip8(acc)
    else:
        out = tmp
    return out.astype(np.uint8)


def independent_patchify(chw, patch, merge, tp):
    """pixel_values rows by explicit index arithmetic: row r <-> (bh, bw, mh, mw); col <-> (c, t, y, x)."""
    c, h, w = chw.shape
    gh, gw = h // patch, w // patch
    rows = []
    for bh in range(gh // merge):
        for bw in range(gw // merge):
            for mh in range(merge):
                for mw in range(merge):
                    ph, pw = bh * merge + mh, bw * merge + mw
                    blk = chw[:, ph * patch:(ph + 1) * patch, pw * patch:(pw + 1) * patch]   # [c, y, x]
                    rows.append(np.stack([blk] * tp, axis=1).reshape(-1))                 # [c, t, y, x]
    return np.array(rows)


def independent_vision(model, pixel_values, grid_thw):
    """Vision tower written from SPEC.md: no reordering at all; window/full attention as masks computed from each
    patch's (image, frame, h, w).  Must match the reorder-based HF transcription up to float rounding."""
    vis = model.visual
    cfg = model.config.vision_config
    m, P = cfg.spatial_merge_size, cfg.patch_size
    vmw = cfg.window_size // m // P               # window side, in merged tokens
    hd = cfg.hidden_size // cfg.num_heads
    W = vis.patch_embed.proj.weight.reshape(cfg.hidden_size, -1)
    x = pixel_values @ W.t()
    img, frame, hh, ww = [], [], [], []
    for i, (t, h, w) in enumerate(grid_thw.tolist()):
        for ti in range(t):
            for bh in range(h // m):
                for bw in range(w // m):
                    for mh in range(m):
                        for mw in range(m):
                            img.append(i); frame.append(ti); hh.append(bh * m + mh); ww.append(bw * m + mw)
    img, frame, hh, ww = map(torch.tensor, (img, frame, hh, ww))
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, hd // 2, 2, dtype=torch.float) / (hd // 2)))   # hd/4 freqs
    ang = torch.cat([hh[:, None].float() * inv_freq, ww[:, None].float() * inv_freq], dim=1)      # [N, hd/2]
    ang = torch.cat([ang, ang], dim=1)                                                            # [N, hd]
    cos, sin = ang.cos()[:, None, :], ang.sin()[:, None, :]
    same_frame = (img[:, None] == img[None, :]) & (frame[:, None] == frame[None, :])
    win_r, win_c = (hh // m) // vmw, (ww // m) // vmw
    same_win = same_frame & (win_r[:, None] == win_r[None, :]) & (win_c[:, None] == win_c[None, :])

    def rot(v):
        half = v.shape[-1] // 2
        return torch.cat([-v[..., half:], v[..., :half]], dim=-1)

    def rms(v, wgt, eps):
        return wgt * (v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + eps))

    n = x.shape[0]
    for li, blk in enumerate(vis.blocks):
        allowed = same_frame if li in cfg.fullatt_block_indexes else same_win
        y = rms(x, blk.norm1.weight, 1e-6)
        qkv = (y @ blk.attn.qkv.weight.t() + blk.attn.qkv.bias).reshape(n, 3, cfg.num_heads, hd)
        q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
        q, k = q * cos + rot(q) * sin, k * cos + rot(k) * sin
        s = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(hd)
        s = s.masked_fill(~allowed[None], float("-inf")).softmax(-1)
        a = torch.einsum("hqk,khd->qhd", s, v).reshape(n, -1)
        x = x + a @ blk.attn.proj.weight.t() + blk.attn.proj.bias
        y = rms(x, blk.norm2.weight, 1e-6)
        mlp = blk.mlp
        g = F.silu(y @ mlp.gate_proj.weight.t() + mlp.gate_proj.bias) * (y @ mlp.up_proj.weight.t() + mlp.up_proj.bias)
        x = x + g @ mlp.down_proj.weight.t() + mlp.down_proj.bias
    mg = vis.merger
    y = rms(x, mg.ln_q.weight, 1e-6).reshape(n // (m * m), -1)
    y = F.gelu(y @ mg.mlp[0].weight.t() + mg.mlp[0].bias)
    return y @ mg.mlp[2].weight.t() + mg.mlp[2].bias


def independent_mrope_cos(position_ids, head_dim, theta, section):
    """cos table by per-dimension axis assignment: dim d (mod head_dim/2) -> axis by cumulative section."""
    half = head_dim // 2
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    axis = torch.tensor([0] * section[0] + [1] * section[1] + [2] * section[2])
    pos = position_ids[:, 0, :].float()                     # [3, S]
    ang = pos[axis, :].t() * inv[None, :]                    # [S, half]
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


# ----------------------------------------------------------------------------------------------------------------
# Goldens
# ----------------------------------------------------------------------------------------------------------------
class Writer:
    def __init__(self, outdir):
        self.dir = os.path.join(outdir, "goldens")
        os.makedirs(self.dir, exist_ok=True)
        self.rows = []

    def __call__(self, name, arr, desc):
        arr = arr.detach().cpu().numpy() if torch.is_tensor(arr) else np.asarray(arr)
        if np.issubdtype(arr.dtype, np.floating):
            arr, suffix, dt = arr.astype("<f4"), ".f32.bin", "float32"
        else:
            arr, suffix, dt = arr.astype("<i4"), ".i32.bin", "int32"
        fn = name + suffix
        arr.tofile(os.path.join(self.dir, fn))
        self.rows.append((fn, dt, list(arr.shape), desc))
        return arr


def make_default_image(path, w, h, seed):
    """Deterministic RGB test image: smooth gradients + a few sharp edges (so bicubic over/undershoot is exercised)."""
    rng = np.random.RandomState(seed)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 127.5 + 127.5 * np.sin(xx / 7.0 + yy / 11.0)
    g = 255.0 * xx / max(w - 1, 1)
    b = np.where(((xx // 10) + (yy // 10)) % 2 == 0, 230.0, 20.0)
    img = np.stack([r, g, b], -1) + rng.uniform(-20, 20, size=(h, w, 3))
    img = np.clip(np.round(img), 0, 255).astype(np.uint8)
    Image.fromarray(img, "RGB").save(path)
    return path


def check(name, a, b, atol, log):
    a = a.detach().numpy() if torch.is_tensor(a) else np.asarray(a)
    b = b.detach().numpy() if torch.is_tensor(b) else np.asarray(b)
    assert a.shape == b.shape, (name, a.shape, b.shape)
    err = float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))) if a.size else 0.0
    ok = err <= atol
    log.append(f"{'PASS' if ok else 'FAIL'} {name}: max|diff| = {err:.3g} (tol {atol:g})")
    print(log[-1])
    if not ok:
        raise SystemExit(f"check failed: {name}")


def greedy(model, input_ids, pixel_values, grid_thw, n_new):
    """Greedy decoding with a KV cache, positions as 4.49 generate() produces them (rope_deltas after prefill)."""
    model.rope_deltas = None
    cache = DynamicCache()
    seq = input_ids.shape[1]
    logits = model(input_ids, pixel_values, grid_thw, past_key_values=cache, cache_position=torch.arange(seq))
    step_logits, ids, dec_pos = [logits[0, -1]], [int(logits[0, -1].argmax())], []
    for k in range(1, n_new):
        cp = torch.tensor([seq + k - 1])
        dec_pos.append(int(cp[0] + model.rope_deltas[0, 0]))
        lg = model(torch.tensor([[ids[-1]]]), None, grid_thw, past_key_values=cache, cache_position=cp)
        step_logits.append(lg[0, -1])
        ids.append(int(lg[0, -1].argmax()))
    return ids, torch.stack(step_logits), dec_pos, logits


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--image", help="PNG for image 0 (default: generated 150x100)")
    ap.add_argument("--image2", help="PNG for image 1 of the two-image prompt (default: generated 300x120)")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    out = args.outdir
    os.makedirs(out, exist_ok=True)
    log = []
    W = Writer(out)

    # ---------------- model: build, init, save as a 4.49-style HF folder, reload from disk ----------------
    torch.manual_seed(args.seed)
    m0 = Qwen2_5_VLForConditionalGeneration(TEXT_CONFIG)
    init_weights(m0, args.seed)
    sd = save_hf_folder(m0, os.path.join(out, "model"))
    model = load_hf_folder(os.path.join(out, "model"))
    with open(os.path.join(out, "model", "tensors.txt"), "w") as f:
        for k, v in sd.items():
            f.write(f"{k}\t{list(v.shape)}\n")

    # ---------------- image processor ----------------
    img0_path = args.image or make_default_image(os.path.join(out, "image0.png"), 150, 100, 1)
    img1_path = args.image2 or make_default_image(os.path.join(out, "image1.png"), 300, 120, 2)
    img0, img1 = Image.open(img0_path), Image.open(img1_path)
    with open(os.path.join(out, "model", "preprocessor_config.json")) as f:
        proc = Qwen2VLImageProcessor(json.load(f))
    pv0, thw0, (rs0,) = proc([img0])
    W("img0_pixel_values", pv0, f"image processor output for {os.path.basename(img0_path)} "
      f"(original {img0.size[0]}x{img0.size[1]} WxH, resized to {rs0[1]}x{rs0[0]}): rows in processor order, "
      "cols (c, t, y, x)")
    W("img0_image_grid_thw", thw0, "image_grid_thw (t, h, w) in patches")

    # smart_resize table: [h, w, factor, min_pixels, max_pixels, out_h, out_w]
    cases = []
    for (mn, mx) in [(PREPROCESSOR_CONFIG["min_pixels"], PREPROCESSOR_CONFIG["max_pixels"]), (3136, 12845056)]:
        for (h, w) in [(100, 150), (120, 300), (70, 70), (126, 98), (42, 42), (28, 28), (28, 5000), (1080, 1920),
                       (4000, 3000), (3024, 4032), (50, 9000), (333, 777), (98, 70), (29, 31), (6000, 60)]:
            try:
                oh, ow = smart_resize(h, w, 28, mn, mx)
            except ValueError:
                oh, ow = -1, -1
            cases.append([h, w, 28, mn, mx, oh, ow])
    W("smart_resize_cases", np.array(cases, np.int64),
      "rows [height, width, factor, min_pixels, max_pixels, out_h, out_w]; -1 -1 = ValueError "
      "(side < factor or aspect > 200); note round-half-even cases (70 -> 56, 126 -> 112)")

    # check 1: PIL's resize == our fixed-point re-derivation of Pillow's bicubic (bit exact)
    rgb0 = np.array(img0.convert("RGB"))
    pil_out = np.array(img0.convert("RGB").resize((rs0[1], rs0[0]), Image.BICUBIC))
    check("Pillow bicubic == fixed-point re-derivation (uint8)", pil_out, pil_bicubic_uint8(rgb0, *rs0), 0, log)
    # check 2: 4.40 CLIPImageProcessor (resize to exact size, no crop) + independent patchify == transcription
    from transformers import CLIPImageProcessor

    clip = CLIPImageProcessor(do_resize=True, size={"height": rs0[0], "width": rs0[1]}, resample=3,
                              do_center_crop=False, do_rescale=True, rescale_factor=1 / 255, do_normalize=True,
                              image_mean=PREPROCESSOR_CONFIG["image_mean"], image_std=PREPROCESSOR_CONFIG["image_std"],
                              do_convert_rgb=True)
    clip_chw = clip(img0, return_tensors="np")["pixel_values"][0]
    check("pixel_values vs 4.40 CLIPImageProcessor + independent patchify (bit exact)",
          pv0, independent_patchify(clip_chw, 14, 2, 2), 0, log)
    # check 3: plain numpy formula from SPEC (float32 math) == transcription
    x = (pil_out.astype(np.float64) * (1 / 255)).astype(np.float32)
    x = (x - np.array(PREPROCESSOR_CONFIG["image_mean"], np.float32)) / np.array(PREPROCESSOR_CONFIG["image_std"],
                                                                                   np.float32)
    check("pixel_values vs SPEC numpy formula (bit exact)",
          pv0, independent_patchify(x.transpose(2, 0, 1), 14, 2, 2), 0, log)

    with torch.no_grad():
        # ---------------- (b) vision tower ----------------
        pv0_t, thw0_t = torch.from_numpy(pv0), torch.from_numpy(thw0)
        tr = {}
        vis0 = model.visual(pv0_t, thw0_t, trace=tr)
        W("img0_vision_patch_embed", tr["patch_embed"], "Conv3d patch embedding, processor order [N, vision hidden]")
        W("img0_vision_rot_pos_ids", tr["rot_pos_ids"], "(h, w) patch coordinates per patch, processor order [N, 2]")
        W("img0_vision_rot_angles", tr["rot_angles"],
          "rotary angles per patch, processor order [N, head_dim/2] = concat(h*inv_freq, w*inv_freq)")
        W("img0_vision_window_index", tr["window_index"], "window_index (merge groups, window order -> source group)")
        W("img0_vision_cu_window_seqlens", tr["cu_window_seqlens"], "cu_window_seqlens after unique_consecutive")
        W("img0_vision_cu_seqlens", tr["cu_seqlens"], "cu_seqlens for full-attention blocks")
        for i, b in enumerate(tr["blocks"]):
            W(f"img0_vision_block{i}_out", b, f"output of vision block {i} (WINDOW order) [N, vision hidden]"
              + (" (full attention)" if i in VISION_CONFIG["fullatt_block_indexes"] else " (window attention)"))
        W("img0_vision_merger_out_window_order", tr["merger_out_window_order"], "merger output before argsort undo")
        W("img0_vision_embeds", vis0, "vision tower + merger output, processor (raster-of-2x2) order "
          "[t*h*w/4, text hidden]")
        check("vision tower vs independent mask-based tower (no reordering)",
              vis0, independent_vision(model, pv0_t, thw0_t), 2e-5, log)

        # ---------------- (c)(d)(e) prompt with one image ----------------
        n_new = 6

        def run_prompt(tag, text, images, pv, thw):
            expanded = expand_image_tokens(text, thw, PREPROCESSOR_CONFIG["merge_size"])
            ids = torch.tensor([tiny_tokenize(expanded)])
            W(f"{tag}_input_ids", ids[0], f"prompt {text!r} after <|image_pad|> expansion")
            model.rope_deltas = None
            trace = {}
            logits = model(ids, torch.from_numpy(pv), torch.from_numpy(thw), trace=trace)
            pos, deltas = trace["position_ids"], model.rope_deltas
            W(f"{tag}_position_ids", pos[:, 0, :], "M-RoPE position ids [3 (t,h,w), seq] from get_rope_index")
            W(f"{tag}_rope_deltas", deltas[0], "rope_deltas = max(position_ids)+1-seq_len")
            W(f"{tag}_inputs_embeds", trace["inputs_embeds"][0], "token embeddings with image rows scattered in")
            W(f"{tag}_logits_all", logits[0], "logits at every prompt position [seq, vocab] (no cache)")
            W(f"{tag}_logits_last", logits[0, -1], "logits at the last prompt position [vocab]")
            ids_new, step_logits, dec_pos, prefill_logits = greedy(model, ids, torch.from_numpy(pv),
                                                                   torch.from_numpy(thw), n_new)
            W(f"{tag}_greedy_ids", np.array(ids_new), f"greedy ids for {n_new} new tokens (KV cache; no EOS stop)")
            W(f"{tag}_greedy_step_logits", step_logits, "logits that chose each greedy id [n_new, vocab]")
            W(f"{tag}_decode_positions", np.array(dec_pos),
              "M-RoPE position (same on t,h,w) of each decode-step input token = cache_position + rope_deltas")
            top2 = step_logits.topk(2, dim=-1).values
            margin = float((top2[:, 0] - top2[:, 1]).min())
            log.append(f"INFO {tag}: seq={ids.shape[1]} rope_deltas={int(deltas[0, 0])} greedy={ids_new} "
                       f"min top1-top2 margin={margin:.3g}")
            print(log[-1])
            check(f"{tag}: cached prefill == uncached logits", prefill_logits, logits, 1e-5, log)
            # check: uncached recompute of the whole generated sequence (get_rope_index on it) gives the same logits
            full = torch.cat([ids, torch.tensor([ids_new[:-1]])], dim=1)
            model.rope_deltas = None
            tr2 = {}
            lf = model(full, torch.from_numpy(pv), torch.from_numpy(thw), trace=tr2)
            check(f"{tag}: decode positions == get_rope_index on extended sequence",
                  torch.tensor(dec_pos), tr2["position_ids"][0, 0, ids.shape[1]:], 0, log)
            check(f"{tag}: KV-cache decode logits == uncached recompute",
                  step_logits, lf[0, ids.shape[1] - 1:], 1e-4, log)
            # check: independent M-RoPE cos/sin table
            attn = model.model.layers[0].self_attn
            c_hf, s_hf = attn.mrope_rotary(trace["inputs_embeds"], trace["position_ids"])
            sec = TEXT_CONFIG["rope_scaling"]["mrope_section"]
            c_hf = torch.cat([m[i % 3] for i, m in enumerate(c_hf.split(sec * 2, dim=-1))], dim=-1)[0]
            c_ind, _ = independent_mrope_cos(trace["position_ids"], attn.head_dim, TEXT_CONFIG["rope_theta"], sec)
            check(f"{tag}: M-RoPE cos vs per-dimension axis formula", c_hf, c_ind, 1e-6, log)
            return ids, logits

        text1 = "tok10 tok11 tok12<|vision_start|><|image_pad|><|vision_end|>tok13 tok14 tok15 tok16"
        run_prompt("p1", text1, [img0], pv0, thw0)

        # ---------------- (f) two images of different sizes ----------------
        pv01, thw01, rs01 = proc([img0, img1])
        W("p2_pixel_values", pv01, "pixel_values of both images, image 0 rows then image 1 rows")
        W("p2_image_grid_thw", thw01, f"image_grid_thw [2, 3]; resized sizes (h, w) {rs01}")
        tr = {}
        vis01 = model.visual(torch.from_numpy(pv01), torch.from_numpy(thw01), trace=tr)
        W("p2_vision_embeds", vis01, "vision output for both images in one call [sum t*h*w/4, text hidden]")
        W("p2_vision_window_index", tr["window_index"], "window_index over both images")
        W("p2_vision_cu_window_seqlens", tr["cu_window_seqlens"], "cu_window_seqlens over both images")
        W("p2_vision_cu_seqlens", tr["cu_seqlens"], "cu_seqlens over both images")
        n0 = int(np.prod(thw01[0]) // 4)
        check("two-image tower: image 0 rows == single-image run", vis01[:n0], vis0, 1e-5, log)
        pv1, thw1, _ = proc([img1])
        check("two-image tower: image 1 rows == single-image run", vis01[n0:],
              model.visual(torch.from_numpy(pv1), torch.from_numpy(thw1)), 1e-5, log)
        check("two-image tower vs independent mask-based tower", vis01,
              independent_vision(model, torch.from_numpy(pv01), torch.from_numpy(thw01)), 2e-5, log)
        text2 = ("tok20 tok21<|vision_start|><|image_pad|><|vision_end|>tok22 tok23 tok24"
                 "<|vision_start|><|image_pad|><|vision_end|>tok25 tok26")
        run_prompt("p2", text2, [img0, img1], pv01, thw01)

        # ---------------- text-only: M-RoPE path == 4.40 Qwen2ForCausalLM (1-D RoPE) ----------------
        ids = torch.tensor([[5, 17, 42, 99, 3, 150, 77, 8, 61, 23]])
        model.rope_deltas = None
        lg = model(ids)
        q2 = Qwen2ForCausalLM(qwen2_config_for_text(TEXT_CONFIG)).eval()
        q2.load_state_dict({k: v for k, v in model.state_dict().items() if not k.startswith("visual.")}, strict=True)
        check("text-only logits: M-RoPE transcription vs 4.40 Qwen2ForCausalLM", lg, q2(ids).logits, 2e-5, log)
        W("p0_input_ids", ids[0], "text-only prompt")
        W("p0_logits_all", lg[0], "text-only logits [seq, vocab] (positions 0..seq-1 on all three axes)")

    # ---------------- README ----------------
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("# Qwen2.5-VL tiny-model goldens\n\n")
        f.write("Made by make_qwen25vl_goldens.py (transformers 4.49 Qwen2.5-VL transcribed onto 4.40 + torch 1.13, "
                "float32, eager attention).\n\n")
        f.write("- `model/`: config.json, preprocessor_config.json, model.safetensors (4.49 tensor names), "
                "tensors.txt (name and shape of every tensor).\n")
        f.write(f"- `image0.png`, `image1.png`: the input images (unless given with --image/--image2).\n")
        f.write("- `goldens/*.f32.bin`: raw little-endian float32; `goldens/*.i32.bin`: raw little-endian int32; "
                "C order, shapes below.\n")
        f.write("- Prompts (tokN = token id N, specials from config): p1 = " + repr(text1) +
                "; p2 = " + repr(text2) + "; p0 = text only.\n")
        f.write("- Greedy decoding: 6 tokens, no EOS stop (HF generate would stop at eos_token_id "
                f"{TEXT_CONFIG['eos_token_id']} if produced); position of decode input = cache_position + rope_deltas."
                "\n- config.json uses the hub form rope_scaling {\"type\": \"mrope\", ...}; 4.49's own save_pretrained would "
                "write {\"type\": \"default\", \"mrope_section\": [...], \"rope_type\": \"default\"} (same meaning)."
                "\n- Tolerances: goldens are CPU fp32; a faithful fp32 implementation should match to ~1e-5 "
                "relative (logits ~1e-4 absolute).\n\n")
        f.write("| file | dtype | shape | what |\n|---|---|---|---|\n")
        for fn, dt, shp, desc in W.rows:
            f.write(f"| {fn} | {dt} | {shp} | {desc} |\n")
        f.write("\n## Checks run\n\n```\n" + "\n".join(log) + "\n```\n")
    print("wrote", out)


if __name__ == "__main__":
    main()
