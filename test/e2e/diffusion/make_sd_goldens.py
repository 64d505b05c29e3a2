#!/usr/bin/env python3
"""Writes the Stable Diffusion fixtures' manifests (Inputs/NAME.json) and
their goldens (Inputs/NAME/) from Hugging Face diffusers 0.27.2 and
transformers 4.40.2 (../shared/reference), on torch 1.13's CPU in float32.
CI needs none of it: it reads the committed files with numpy.

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/diffusion/make_sd_goldens.py [NAME...]

MODELS holds four published pipelines' files (runwayml/stable-diffusion-v1-5,
stabilityai/stable-diffusion-2-1, stabilityai/stable-diffusion-xl-base-1.0,
runwayml/stable-diffusion-inpainting) with only widths and depths cut
(each value cut is marked "cut"; the manifests keep every other published
value). For each model this script

1. writes the manifest: those files and every tensor's name and shape as
   diffusers and transformers save the cut configs;
2. builds the fixture with make_sd_fixture.py (random weights from the
   manifest's seed) and loads it with UNet2DConditionModel, AutoencoderKL,
   CLIPTextModel[WithProjection] and CLIPTokenizer, every tensor used;
3. checks that the f16, bf16 and fp16-variant folders hold the same values,
   and that diffusers' own LDM converters (convert_ldm_unet_checkpoint,
   convert_ldm_vae_checkpoint, create_text_encoder_from_ldm_clip_checkpoint,
   create_text_encoder_from_open_clip_checkpoint) give back every tensor
   of the folder from make_sd_fixture.py --single-file's file, bit for bit;
4. writes the goldens (raw little-endian f32, or i32 for ids) and
   Inputs/NAME/goldens.json, which gives each file's shape and meaning, the
   per-call checks in tfmc's entry points (`calls`: entry, input files,
   output files; check_sd_calls.py runs them) and the whole pipelines
   (`pipelines`: scheduler config, timesteps, seed, the noise and every
   draw the pipeline took from its generator, the latents after each step,
   the image):
   - text: the ids of PROMPT, NEGATIVE ("") and LONG (truncated at 77) as
     the pipeline's tokenizer pads them (max_length 77), and the pipeline's
     prompt_embeds for each (SD 1.x, 2.x: the text encoder's last hidden
     state, after the final layer norm; SD 2.x's diffusers config has 23 of
     OpenCLIP's 24 layers, so that is the penultimate layer; SDXL: the
     penultimate hidden state (hidden_states[-2], no final norm) of each
     encoder, concatenated, and the second encoder's projected pooled
     output, text_embeds);
   - the UNet at t = 1, 500 and 999 on seeded latents [C, h, w] with the
     prompt's embeddings, and at t = 500 with the negative prompt's (SDXL:
     with text_embeds and time_ids (h*8, w*8, 0, 0, h*8, w*8));
   - the VAE: decode_latents = vae.decode(latents / scaling_factor).sample
     [3, H, W]; encode_image of Inputs/init-96x64.png in [-1, 1]
     (Inputs/init-96x64.pixels.bin [3, H, W]): the latent distribution's
     mean then logvar [8, h, w];
   - pipelines with guidance 7.5, negative prompt "", 64x96 pixels:
     text-to-image from noise.bin [4, h, w] (passed as `latents=`, before
     init_noise_sigma scales it) with DDIM, PNDM, Euler, Euler ancestral and
     DPM-Solver++ 2M (Euler and DPM++ also with Karras sigmas); image-to-
     image of Inputs/init-96x64.png at strength 0.75; inpainting of it
     under Inputs/mask-96x64.png (white is repainted). Each scheduler is
     `Class.from_config(published scheduler config)`, as users swap them;
     its resolved config is in goldens.json.

It prints each output's max |value| (and asserts they are finite and not
flat), and the sizes of the fixture folders and goldens. Two runs write
the same bytes. diffusers' attention scores are computed with zeros, not
torch.empty, as baddbmm's ignored input (see _attention_scores: torch
1.13 read that memory and now and then gave NaN).

The published values were checked against copies of the files found in
public code (SDXL's unet and scheduler configs, SD 2.x's unet config and
its text encoder's 23 layers, SD 1.5's PNDM scheduler config); the rest
is transcribed from the model cards' files as remembered, and these are
the least sure: the inpainting model's scheduler (DDIMScheduler, not
PNDM); no scaling_factor in SD 1.x's and 2.x's vae/config.json (0.18215,
diffusers' default); SD 2.1's model_index.json (a feature_extractor,
safety_checker [null, null], requires_safety_checker false) and its
preprocessor_config.json (written in SD 1.5's older form); the
_diffusers_version, transformers_version and _name_or_path strings, and
the tokenizer_config.json fields beside pad_token and model_max_length.
"""
import json
import os
import re
import shutil
import sys
import tempfile
import time

import numpy as np
import torch
from PIL import Image

torch.set_num_threads(1)

import diffusers  # noqa: E402
import transformers as tf  # noqa: E402
from diffusers import (AutoencoderKL, DDIMScheduler,  # noqa: E402
                       DPMSolverMultistepScheduler,
                       EulerAncestralDiscreteScheduler, EulerDiscreteScheduler,
                       PNDMScheduler, StableDiffusionImg2ImgPipeline,
                       StableDiffusionInpaintPipeline, StableDiffusionPipeline,
                       StableDiffusionXLPipeline, UNet2DConditionModel)
from diffusers.loaders import single_file_utils as sfu  # noqa: E402
from safetensors.torch import load_file  # noqa: E402



def _attention_scores(self, query, key, attention_mask=None):
    """diffusers' Attention.get_attention_scores, with zeros and beta 1 where
    it passes torch.empty and beta 0 to baddbmm: torch 1.13's CPU baddbmm
    with beta 0 reads its result buffer, uninitialized, on some shapes (a
    batch of 1, 6 queries, 6 keys, heads of 2, among others), and 0 times
    a NaN there turned whole pipelines into NaN now and then. Adding zeros
    gives the same scores every time."""
    dtype = query.dtype
    if self.upcast_attention:
        query, key = query.float(), key.float()
    if attention_mask is None:
        base = torch.zeros(query.shape[0], query.shape[1], key.shape[1],
                           dtype=query.dtype, device=query.device)
    else:
        base = attention_mask
    scores = torch.baddbmm(base, query, key.transpose(-1, -2), beta=1,
                           alpha=self.scale)
    if self.upcast_softmax:
        scores = scores.float()
    return scores.softmax(dim=-1).to(dtype)


from diffusers.models.attention_processor import Attention  # noqa: E402

Attention.get_attention_scores = _attention_scores

HERE = os.path.dirname(os.path.abspath(__file__))
INPUTS = os.path.join(HERE, "Inputs")
sys.path.insert(0, HERE)
import make_sd_fixture  # noqa: E402

PROMPT = "A photograph of an astronaut riding a horse on Mars, 4k, highly detailed!"
NEGATIVE = ""
LONG = ("a painting of a city at night with neon lights and rain in the "
        "streets, a portrait of a woman with red hair in a green dress, oil on "
        "canvas, a cat sitting on a wooden table next to a cup of coffee in "
        "the morning, an old castle on a hill above a river valley at sunset, "
        "golden hour, a bowl of fruit with apples oranges and bananas")
HEIGHT, WIDTH = 64, 96  # pixels; latents 8 x 12
GUIDANCE = 7.5
SEED = 1234  # torch.Generator().manual_seed(SEED) for every pipeline
TIMESTEPS = (1, 500, 999)

ADDED_TOKEN = {"__type": "AddedToken", "lstrip": False, "normalized": True,
               "rstrip": False, "single_word": False}


def clip_tokenizer(pad, name_or_path):
    """CLIPTokenizer's files as the published folders have them; `pad` is
    <|endoftext|> (SD 1.x, SDXL's first) or "!" (SD 2.x, SDXL's second)."""
    def token(content, typed=True):
        t = dict(ADDED_TOKEN, content=content)
        if not typed:
            t.pop("__type")
        return t
    return {"bpe": {"merges": 486, "files": {  # cut: 49408 -> 1000 tokens
        "tokenizer_config.json": {
            "add_prefix_space": False,
            "bos_token": token("<|startoftext|>"),
            "do_lower_case": True,
            "eos_token": token("<|endoftext|>"),
            "errors": "replace",
            "model_max_length": 77,
            "name_or_path": name_or_path,
            "pad_token": pad if pad == "!" else "<|endoftext|>",
            "tokenizer_class": "CLIPTokenizer",
            "unk_token": token("<|endoftext|>")},
        "special_tokens_map.json": {
            "bos_token": token("<|startoftext|>", False),
            "eos_token": token("<|endoftext|>", False),
            "pad_token": pad,
            "unk_token": token("<|endoftext|>", False)}}}}


VOCAB = 512 + 486 + 2


def clip_text(hidden_act, hidden, heads, layers, projection, version, dtype,
              name_or_path=None, with_projection=False):
    config = {
        "architectures": ["CLIPTextModelWithProjection" if with_projection
                          else "CLIPTextModel"],
        "attention_dropout": 0.0, "bos_token_id": 0, "dropout": 0.0,
        "eos_token_id": 2, "hidden_act": hidden_act,
        "hidden_size": hidden,                      # cut
        "initializer_factor": 1.0, "initializer_range": 0.02,
        "intermediate_size": 4 * hidden,            # cut
        "layer_norm_eps": 1e-05, "max_position_embeddings": 77,
        "model_type": "clip_text_model",
        "num_attention_heads": heads,               # cut (heads of 8)
        "num_hidden_layers": layers,                # cut
        "pad_token_id": 1,
        "projection_dim": projection,               # cut
        "torch_dtype": dtype, "transformers_version": version,
        "vocab_size": VOCAB}                        # cut
    if name_or_path:
        config = {"_name_or_path": name_or_path, **config}
    return config


SD_SCHEDULER_COMMON = {"beta_end": 0.012, "beta_schedule": "scaled_linear",
                       "beta_start": 0.00085}
FEATURE_EXTRACTOR = {"files": {"preprocessor_config.json": {
    "crop_size": 224, "do_center_crop": True, "do_convert_rgb": True,
    "do_normalize": True, "do_resize": True,
    "feature_extractor_type": "CLIPFeatureExtractor",
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "resample": 3, "size": 224}}}


def sd_vae(version, **extra):
    return {"_class_name": "AutoencoderKL", "_diffusers_version": version,
            "act_fn": "silu",
            "block_out_channels": [16, 32, 32, 32],   # cut: [128, 256, 512, 512]
            "down_block_types": ["DownEncoderBlock2D"] * 4,
            **({"force_upcast": True} if "scaling_factor" in extra else {}),
            "in_channels": 3, "latent_channels": 4,
            "layers_per_block": 1,                    # cut: 2
            "norm_num_groups": 8,                     # cut: 32
            "out_channels": 3,
            "sample_size": 64,                        # cut: 512 / 768 / 1024
            **extra,
            "up_block_types": ["UpDecoderBlock2D"] * 4}


def sd1_unet(in_channels):
    return {"_class_name": "UNet2DConditionModel", "_diffusers_version": "0.6.0",
            "act_fn": "silu",
            "attention_head_dim": 8,                  # published (8 heads)
            "block_out_channels": [16, 32, 32],       # cut: [320, 640, 1280, 1280]
            "center_input_sample": False,
            "cross_attention_dim": 32,                # cut: 768
            "down_block_types": ["CrossAttnDownBlock2D", "CrossAttnDownBlock2D",
                                 "DownBlock2D"],      # cut: 4 stages
            "downsample_padding": 1, "flip_sin_to_cos": True, "freq_shift": 0,
            "in_channels": in_channels,
            "layers_per_block": 1,                    # cut: 2
            "mid_block_scale_factor": 1, "norm_eps": 1e-05,
            "norm_num_groups": 8,                     # cut: 32
            "out_channels": 4,
            "sample_size": 8,                         # cut: 64
            "up_block_types": ["UpBlock2D", "CrossAttnUpBlock2D",
                               "CrossAttnUpBlock2D"]}


SD1_MODEL_INDEX = {
    "feature_extractor": ["transformers", "CLIPImageProcessor"],
    "safety_checker": ["stable_diffusion", "StableDiffusionSafetyChecker"],
    "text_encoder": ["transformers", "CLIPTextModel"],
    "tokenizer": ["transformers", "CLIPTokenizer"],
    "unet": ["diffusers", "UNet2DConditionModel"],
    "vae": ["diffusers", "AutoencoderKL"]}

MODELS = {
    "stable-diffusion-v1-5": dict(
        published="runwayml/stable-diffusion-v1-5", seed=15, layout="sd1",
        model_index={"_class_name": "StableDiffusionPipeline",
                     "_diffusers_version": "0.6.0", **SD1_MODEL_INDEX,
                     "scheduler": ["diffusers", "PNDMScheduler"]},
        unet=sd1_unet(4), vae=sd_vae("0.6.0"),
        text_encoder=clip_text("quick_gelu", 32, 4, 2, 32, "4.22.0.dev0",
                               "float32", "openai/clip-vit-large-patch14"),
        tokenizer=clip_tokenizer("<|endoftext|>", "openai/clip-vit-large-patch14"),
        scheduler={"_class_name": "PNDMScheduler", "_diffusers_version": "0.6.0",
                   **SD_SCHEDULER_COMMON, "num_train_timesteps": 1000,
                   "set_alpha_to_one": False, "skip_prk_steps": True,
                   "steps_offset": 1, "trained_betas": None,
                   "clip_sample": False},
        feature_extractor=FEATURE_EXTRACTOR),
    "stable-diffusion-2-1": dict(
        published="stabilityai/stable-diffusion-2-1", seed=21, layout="sd2",
        model_index={"_class_name": "StableDiffusionPipeline",
                     "_diffusers_version": "0.10.0.dev0",
                     "feature_extractor": ["transformers", "CLIPImageProcessor"],
                     "requires_safety_checker": False,
                     "safety_checker": [None, None],
                     "scheduler": ["diffusers", "DDIMScheduler"],
                     "text_encoder": ["transformers", "CLIPTextModel"],
                     "tokenizer": ["transformers", "CLIPTokenizer"],
                     "unet": ["diffusers", "UNet2DConditionModel"],
                     "vae": ["diffusers", "AutoencoderKL"]},
        unet={"_class_name": "UNet2DConditionModel",
              "_diffusers_version": "0.10.0.dev0", "act_fn": "silu",
              "attention_head_dim": [2, 4, 4],        # cut: [5, 10, 20, 20] (heads of 8, not 64)
              "block_out_channels": [16, 32, 32],     # cut: [320, 640, 1280, 1280]
              "center_input_sample": False,
              "cross_attention_dim": 48,              # cut: 1024
              "down_block_types": ["CrossAttnDownBlock2D", "CrossAttnDownBlock2D",
                                   "DownBlock2D"],
              "downsample_padding": 1, "dual_cross_attention": False,
              "flip_sin_to_cos": True, "freq_shift": 0, "in_channels": 4,
              "layers_per_block": 1,                  # cut: 2
              "mid_block_scale_factor": 1, "norm_eps": 1e-05,
              "norm_num_groups": 8,                   # cut: 32
              "num_class_embeds": None, "only_cross_attention": False,
              "out_channels": 4,
              "sample_size": 8,                       # cut: 96
              "up_block_types": ["UpBlock2D", "CrossAttnUpBlock2D",
                                 "CrossAttnUpBlock2D"],
              "upcast_attention": True, "use_linear_projection": True},
        vae=sd_vae("0.8.0"),
        # 23 of OpenCLIP ViT-H's 24 layers, published; cut to 2 of 3
        text_encoder=clip_text("gelu", 48, 6, 2, 24, "4.25.0.dev0", "float32",
                               "hf-models/stable-diffusion-v2-768x768/text_encoder"),
        tokenizer=clip_tokenizer("!", "hf-models/stable-diffusion-v2-768x768/tokenizer"),
        scheduler={"_class_name": "DDIMScheduler", "_diffusers_version": "0.8.0",
                   **SD_SCHEDULER_COMMON, "clip_sample": False,
                   "num_train_timesteps": 1000, "prediction_type": "v_prediction",
                   "set_alpha_to_one": False, "skip_prk_steps": True,
                   "steps_offset": 1, "trained_betas": None},
        feature_extractor=FEATURE_EXTRACTOR),
    "stable-diffusion-xl-base-1.0": dict(
        published="stabilityai/stable-diffusion-xl-base-1.0", seed=10, layout="sdxl",
        model_index={"_class_name": "StableDiffusionXLPipeline",
                     "_diffusers_version": "0.19.0.dev0",
                     "force_zeros_for_empty_prompt": True,
                     "add_watermarker": None,
                     "scheduler": ["diffusers", "EulerDiscreteScheduler"],
                     "text_encoder": ["transformers", "CLIPTextModel"],
                     "text_encoder_2": ["transformers", "CLIPTextModelWithProjection"],
                     "tokenizer": ["transformers", "CLIPTokenizer"],
                     "tokenizer_2": ["transformers", "CLIPTokenizer"],
                     "unet": ["diffusers", "UNet2DConditionModel"],
                     "vae": ["diffusers", "AutoencoderKL"]},
        unet={"_class_name": "UNet2DConditionModel",
              "_diffusers_version": "0.19.0.dev0", "act_fn": "silu",
              "addition_embed_type": "text_time",
              "addition_embed_type_num_heads": 64,
              "addition_time_embed_dim": 16,          # cut: 256
              "attention_head_dim": [2, 4, 4],        # cut: [5, 10, 20] (heads of 8, not 64)
              "block_out_channels": [16, 32, 32],     # cut: [320, 640, 1280]
              "center_input_sample": False, "class_embed_type": None,
              "class_embeddings_concat": False, "conv_in_kernel": 3,
              "conv_out_kernel": 3,
              "cross_attention_dim": 96,              # cut: 2048 (768 + 1280 -> 32 + 64)
              "cross_attention_norm": None,
              "down_block_types": ["DownBlock2D", "CrossAttnDownBlock2D",
                                   "CrossAttnDownBlock2D"],
              "downsample_padding": 1, "dual_cross_attention": False,
              "encoder_hid_dim": None, "encoder_hid_dim_type": None,
              "flip_sin_to_cos": True, "freq_shift": 0, "in_channels": 4,
              "layers_per_block": 1,                  # cut: 2
              "mid_block_only_cross_attention": None,
              "mid_block_scale_factor": 1,
              "mid_block_type": "UNetMidBlock2DCrossAttn", "norm_eps": 1e-05,
              "norm_num_groups": 8,                   # cut: 32
              "num_attention_heads": None, "num_class_embeds": None,
              "only_cross_attention": False, "out_channels": 4,
              "projection_class_embeddings_input_dim": 160,  # cut: 2816 (1280 + 6 x 256 -> 64 + 6 x 16)
              "resnet_out_scale_factor": 1.0, "resnet_skip_time_act": False,
              "resnet_time_scale_shift": "default",
              "sample_size": 8,                       # cut: 128
              "time_cond_proj_dim": None, "time_embedding_act_fn": None,
              "time_embedding_dim": None, "time_embedding_type": "positional",
              "timestep_post_act": None,
              "transformer_layers_per_block": [1, 1, 2],  # cut: [1, 2, 10]
              "up_block_types": ["CrossAttnUpBlock2D", "CrossAttnUpBlock2D",
                                 "UpBlock2D"],
              "upcast_attention": None, "use_linear_projection": True},
        vae=sd_vae("0.20.0.dev0", scaling_factor=0.13025),
        text_encoder=clip_text("quick_gelu", 32, 4, 3, 32, "4.32.0.dev0", "float16"),
        text_encoder_2=clip_text("gelu", 64, 8, 3, 64, "4.32.0.dev0", "float16",
                                 with_projection=True),
        tokenizer=clip_tokenizer("<|endoftext|>", "openai/clip-vit-large-patch14"),
        tokenizer_2=clip_tokenizer("!", "laion/CLIP-ViT-bigG-14-laion2B-39B-b160k"),
        scheduler={"_class_name": "EulerDiscreteScheduler",
                   "_diffusers_version": "0.19.0.dev0", **SD_SCHEDULER_COMMON,
                   "clip_sample": False, "interpolation_type": "linear",
                   "num_train_timesteps": 1000, "prediction_type": "epsilon",
                   "sample_max_value": 1.0, "set_alpha_to_one": False,
                   "skip_prk_steps": True, "steps_offset": 1,
                   "timestep_spacing": "leading", "trained_betas": None,
                   "use_karras_sigmas": False}),
    "stable-diffusion-inpainting": dict(
        published="runwayml/stable-diffusion-inpainting", seed=9, layout="sd1",
        model_index={"_class_name": "StableDiffusionInpaintPipeline",
                     "_diffusers_version": "0.6.0", **SD1_MODEL_INDEX,
                     "scheduler": ["diffusers", "DDIMScheduler"]},
        unet=sd1_unet(9), vae=sd_vae("0.6.0"),
        text_encoder=clip_text("quick_gelu", 32, 4, 2, 32, "4.22.0.dev0",
                               "float32", "openai/clip-vit-large-patch14"),
        tokenizer=clip_tokenizer("<|endoftext|>", "openai/clip-vit-large-patch14"),
        scheduler={"_class_name": "DDIMScheduler", "_diffusers_version": "0.6.0",
                   **SD_SCHEDULER_COMMON, "clip_sample": False,
                   "num_train_timesteps": 1000, "set_alpha_to_one": False,
                   "steps_offset": 1, "trained_betas": None,
                   "skip_prk_steps": True},
        feature_extractor=FEATURE_EXTRACTOR),
}

# Weight gains (powers of two, make_sd_fixture.py's `gains`): the decoder's
# last convolution kept small, so that the images stay mostly inside
# [-1, 1] (the pipelines clamp them) and the comparisons see the values.
GAINS = {"vae/decoder.conv_out.weight": -1}

SCHEDULERS = {
    "ddim": (DDIMScheduler, {}),
    "pndm": (PNDMScheduler, {}),
    "euler": (EulerDiscreteScheduler, {}),
    "euler-karras": (EulerDiscreteScheduler, {"use_karras_sigmas": True}),
    "euler-ancestral": (EulerAncestralDiscreteScheduler, {}),
    "dpmpp-2m": (DPMSolverMultistepScheduler, {}),
    "dpmpp-2m-karras": (DPMSolverMultistepScheduler, {"use_karras_sigmas": True}),
}
# A run's fourth field: no negative prompt at all (negative_prompt=None),
# which SDXL's force_zeros_for_empty_prompt turns into zeros.
NO_NEGATIVE = "no negative prompt"
# (kind, scheduler, steps[, NO_NEGATIVE]) per model
RUNS = {
    "stable-diffusion-v1-5": [
        ("txt2img", s, 4) for s in ("ddim", "pndm", "euler", "euler-karras",
                                    "euler-ancestral", "dpmpp-2m",
                                    "dpmpp-2m-karras")] + [
        ("img2img", s, 4) for s in ("ddim", "euler", "euler-ancestral",
                                    "dpmpp-2m-karras")],
    "stable-diffusion-2-1": [
        ("txt2img", s, 4) for s in ("ddim", "euler", "euler-ancestral",
                                    "dpmpp-2m-karras")] + [
        ("img2img", "ddim", 4)],
    "stable-diffusion-xl-base-1.0": [("txt2img", "euler", 4),
                                     ("txt2img", "dpmpp-2m", 3),
                                     ("txt2img", "euler", 3, NO_NEGATIVE)],
    "stable-diffusion-inpainting": [
        ("inpaint", s, 4) for s in ("ddim", "euler-ancestral", "dpmpp-2m")],
}

TEXT_ENCODERS = ("text_encoder", "text_encoder_2")


def model_class(comp, config):
    if comp == "unet":
        return UNet2DConditionModel.from_config(config)
    if comp == "vae":
        return AutoencoderKL.from_config(config)
    cls = (tf.CLIPTextModelWithProjection if "WithProjection" in
           config["architectures"][0] else tf.CLIPTextModel)
    return cls(tf.CLIPTextConfig(**config))


def manifest_of(name, spec):
    components = {}
    for comp in ("unet", "vae") + TEXT_ENCODERS:
        if comp not in spec:
            continue
        torch.manual_seed(0)
        model = model_class(comp, spec[comp])
        components[comp] = {
            "config": spec[comp],
            "tensors": [[n, list(t.shape)] for n, t in model.state_dict().items()]}
    for comp in ("tokenizer", "tokenizer_2"):
        if comp in spec:
            components[comp] = spec[comp]
    components["scheduler"] = {"files": {"scheduler_config.json": spec["scheduler"]}}
    if "feature_extractor" in spec:
        components["feature_extractor"] = spec["feature_extractor"]
    return {"name": name, "published": spec["published"],
            "note": "written by make_sd_goldens.py; make_sd_fixture.py writes the "
                    "folder. Configs are the published ones with widths and "
                    "depths cut (see MODELS in make_sd_goldens.py)",
            "seed": spec["seed"], "dtype": "f32",
            "single_file": {"layout": spec["layout"]},
            "gains": GAINS, "model_index": spec["model_index"],
            "components": components}


def compact_json(value):
    """JSON with one line per list of numbers or strings (a shape, a
    block list) and per [name, shape] tensor."""
    text = json.dumps(value, indent=1)
    flat = re.compile(r"\[[^\[\]{}]*\]")
    text = flat.sub(lambda m: " ".join(m[0].split()).replace("[ ", "[")
                    .replace(" ]", "]"), text)
    pair = re.compile(r"\[\s*(\"[^\"]*\"),\s*(\[[^\[\]]*\])\s*\]")
    text = pair.sub(lambda m: f"[{m[1]}, {m[2]}]", text) + "\n"
    assert json.loads(text) == value
    return text


def folder_size(path):
    return sum(os.path.getsize(os.path.join(d, f))
               for d, _, files in os.walk(path) for f in files)


def load_components(folder, manifest, variant=None):
    loaded = {}
    for comp, spec in manifest["components"].items():
        if "tensors" in spec:
            path = os.path.join(folder, comp)
            if comp in ("unet", "vae"):
                cls = UNet2DConditionModel if comp == "unet" else AutoencoderKL
                model, info = cls.from_pretrained(
                    path, torch_dtype=torch.float32, variant=variant,
                    output_loading_info=True)
            else:
                cls = (tf.CLIPTextModelWithProjection
                       if "WithProjection" in spec["config"]["architectures"][0]
                       else tf.CLIPTextModel)
                model, info = cls.from_pretrained(
                    path, torch_dtype=torch.float32, variant=variant,
                    output_loading_info=True)
            bad = {k: v for k, v in info.items() if v and k != "error_msgs"}
            if bad or info.get("error_msgs"):
                raise SystemExit(f"{comp}: loading left {bad} {info.get('error_msgs')}")
            loaded[comp] = model.eval()
        elif comp.startswith("tokenizer"):
            loaded[comp] = tf.CLIPTokenizer.from_pretrained(os.path.join(folder, comp))
    loaded["scheduler"] = getattr(diffusers, manifest["components"]["scheduler"]["files"]
                                  ["scheduler_config.json"]["_class_name"]
                                  ).from_pretrained(folder, subfolder="scheduler")
    return loaded


def same_state(a, b, what):
    sa, sb = a.state_dict(), b.state_dict()
    if sa.keys() != sb.keys():
        raise SystemExit(f"{what}: names differ: {set(sa) ^ set(sb)}")
    for k in sa:
        if not torch.equal(sa[k], sb[k]):
            raise SystemExit(f"{what}: {k} differs")


def check_dtypes(manifest, models, work):
    """The f16, bf16 and fp16-variant folders hold the f32 folder's values."""
    for dtype, variant in (("f16", None), ("bf16", None), ("f16", "fp16"),
                           ("bf16", "fp16")):
        folder = os.path.join(work, f"{dtype}-{variant}")
        make_sd_fixture.write_fixture(manifest, folder, dtype, variant)
        other = load_components(folder, manifest, variant)
        for comp in models:
            if hasattr(models[comp], "state_dict") and comp != "scheduler":
                same_state(models[comp], other[comp], f"{dtype} {variant} {comp}")
        shutil.rmtree(folder)
    return "f16, bf16, fp16-variant (f16 and bf16) folders: every tensor equal to f32's"


def check_single_file(manifest, folder, models, work):
    """diffusers' LDM converters give back the folder's tensors from the
    single file (f32 and f16)."""
    notes = []
    for dtype in ("f32", "f16"):
        path = os.path.join(work, f"single-{dtype}.safetensors")
        make_sd_fixture.write_single_file(manifest, path, dtype)
        size = os.path.getsize(path)
        ckpt = {k: (v.float() if v.is_floating_point() else v)
                for k, v in load_file(path).items()}
        layout = manifest["single_file"]["layout"]
        comps = manifest["components"]
        got = {
            "unet": sfu.convert_ldm_unet_checkpoint(dict(ckpt), comps["unet"]["config"]),
            "vae": sfu.convert_ldm_vae_checkpoint(dict(ckpt), comps["vae"]["config"]),
        }
        te = os.path.join(folder, "text_encoder")
        if layout == "sd1":
            got["text_encoder"] = sfu.create_text_encoder_from_ldm_clip_checkpoint(
                te, dict(ckpt)).state_dict()
        elif layout == "sd2":
            # diffusers drops OpenCLIP ViT-H's unused 24th block by name
            # (resblocks.23); the cut file's unused block is resblocks.L.
            last = comps["text_encoder"]["config"]["num_hidden_layers"]
            trimmed = {k: v for k, v in ckpt.items()
                       if f"transformer.resblocks.{last}." not in k}
            got["text_encoder"] = sfu.create_text_encoder_from_open_clip_checkpoint(
                te, trimmed).state_dict()
        else:
            got["text_encoder"] = sfu.create_text_encoder_from_ldm_clip_checkpoint(
                te, dict(ckpt)).state_dict()
            got["text_encoder_2"] = sfu.create_text_encoder_from_open_clip_checkpoint(
                os.path.join(folder, "text_encoder_2"), dict(ckpt),
                prefix="conditioner.embedders.1.model.",
                has_projection=True).state_dict()
        used = 0
        for comp, state in got.items():
            want = models[comp].state_dict()
            if set(state) != set(want):
                raise SystemExit(f"single file {comp}: {set(state) ^ set(want)}")
            for k, v in want.items():
                if not torch.equal(state[k].reshape(v.shape), v) or \
                        state[k].shape != v.shape:
                    raise SystemExit(f"single file {comp}: {k} differs")
            used += len(want)
        notes.append(f"single file {dtype} ({size / 1e6:.2f} MB, {len(ckpt)} "
                     f"tensors): diffusers' converters give back all {used} "
                     "tensors of the folder, equal")
        os.remove(path)
    return notes


# ---------------------------------------------------------------- goldens

class Goldens:
    def __init__(self, name):
        self.dir = os.path.join(INPUTS, name)
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        self.files = {}
        self.peaks = []

    def save(self, file, array, what, dtype="f32", check=True):
        array = np.asarray(array.detach().cpu() if torch.is_tensor(array) else array)
        np_dtype = {"f32": "<f4", "i32": "<i4"}[dtype]
        array = np.ascontiguousarray(array.astype(np_dtype))
        array.tofile(os.path.join(self.dir, file))
        self.files[file] = {"shape": list(array.shape), "dtype": dtype, "what": what}
        if check and dtype == "f32":
            if not np.isfinite(array).all():
                raise SystemExit(f"{file}: not finite")
            if array.size > 1 and float(array.std()) < 1e-3:
                raise SystemExit(f"{file}: flat (std {array.std():.3g})")
            self.peaks.append((file, float(np.abs(array).max()),
                               float(array.std())))
        return file


def test_image():
    """A smooth 96x64 RGB image (gradients and a disc) and a mask whose
    white rectangle's edges are not on the 8-pixel latent grid."""
    y, x = np.mgrid[0:HEIGHT, 0:WIDTH].astype(np.float64)
    r = 0.5 + 0.5 * np.sin(x / 9.0) * np.cos(y / 13.0)
    g = x / (WIDTH - 1)
    b = 1.0 - y / (HEIGHT - 1)
    disc = ((x - 60) ** 2 + (y - 28) ** 2) < 15 ** 2
    r[disc], g[disc], b[disc] = 0.9, 0.2, 0.1
    rgb = np.stack([r, g, b], -1)
    image = Image.fromarray(np.round(rgb * 255).astype(np.uint8), "RGB")
    mask = np.zeros((HEIGHT, WIDTH), np.uint8)
    mask[13:45, 21:70] = 255
    return image, Image.fromarray(mask, "L")


def write_shared_inputs():
    image, mask = test_image()
    image.save(os.path.join(INPUTS, "init-96x64.png"))
    mask.save(os.path.join(INPUTS, "mask-96x64.png"))
    pixels = (np.asarray(image, np.float32) / 255.0) * 2.0 - 1.0
    pixels = np.ascontiguousarray(pixels.transpose(2, 0, 1)).astype("<f4")
    pixels.tofile(os.path.join(INPUTS, "init-96x64.pixels.bin"))
    return image, mask, torch.from_numpy(pixels)


class DrawRecorder:
    """Wraps randn_tensor where the pipelines, the VAE's latent
    distribution and the ancestral scheduler call it, keeping each draw."""
    MODULES = {
        "pipeline": ["diffusers.pipelines.stable_diffusion.pipeline_stable_diffusion",
                     "diffusers.pipelines.stable_diffusion.pipeline_stable_diffusion_img2img",
                     "diffusers.pipelines.stable_diffusion.pipeline_stable_diffusion_inpaint",
                     "diffusers.pipelines.stable_diffusion_xl.pipeline_stable_diffusion_xl"],
        "vae": ["diffusers.models.autoencoders.vae"],
        "scheduler": ["diffusers.schedulers.scheduling_euler_ancestral_discrete",
                      "diffusers.schedulers.scheduling_ddim",
                      "diffusers.schedulers.scheduling_dpmsolver_multistep"],
    }

    def __init__(self):
        self.draws = []
        self.saved = []
        for who, modules in self.MODULES.items():
            for module in modules:
                mod = sys.modules[module]
                original = mod.randn_tensor
                mod.randn_tensor = self._wrap(who, original)
                self.saved.append((mod, original))

    def _wrap(self, who, original):
        def randn_tensor(*args, **kwargs):
            out = original(*args, **kwargs)
            self.draws.append((who, out.clone()))
            return out
        return randn_tensor

    def close(self):
        for mod, original in self.saved:
            mod.randn_tensor = original


DRAW_MEANING = {
    "pipeline": "initial noise the pipeline drew (img2img: the noise scheduler.add_noise adds to the init latents)",
    "vae": "eps of DiagonalGaussianDistribution.sample (latents = mean + exp(logvar / 2) * eps) when the pipeline encodes an image",
    "scheduler": "noise the scheduler's step drew (Euler ancestral: sigma_up * noise)",
}


def text_goldens(g, name, m, calls):
    """ids and prompt_embeds of PROMPT, NEGATIVE and LONG."""
    out = {"prompt": PROMPT, "negative_prompt": NEGATIVE, "long_prompt": LONG}
    texts = {"prompt": PROMPT, "negative": NEGATIVE, "long": LONG}
    embeds = {}
    xl = "text_encoder_2" in m
    with torch.no_grad():
        for key, text in texts.items():
            ids = {}
            for tok in ("tokenizer", "tokenizer_2") if xl else ("tokenizer",):
                t = m[tok](text, padding="max_length", max_length=77,
                           truncation=True, return_tensors="pt").input_ids
                suffix = "" if tok == "tokenizer" else "_2"
                ids[tok] = t
                g.save(f"text.{key}.ids{suffix}.bin", t[0],
                       f"{tok}'s ids of the {key} text, padded to 77 "
                       f"(pad '{m[tok].pad_token}' = {m[tok].pad_token_id})", "i32")
            if not xl:
                e = m["text_encoder"](ids["tokenizer"])[0]
                embeds[key] = g.save(f"text.{key}.embeds.bin", e[0],
                                     "prompt_embeds [77, D]: last_hidden_state "
                                     "(after final_layer_norm)")
                calls.append({"entry": "encode_text",
                              "inputs": [f"text.{key}.ids.bin"],
                              "outputs": [embeds[key]]})
                continue
            o1 = m["text_encoder"](ids["tokenizer"], output_hidden_states=True)
            o2 = m["text_encoder_2"](ids["tokenizer_2"], output_hidden_states=True)
            h1, h2 = o1.hidden_states[-2], o2.hidden_states[-2]
            pooled = o2.text_embeds
            g.save(f"text.{key}.hidden1.bin", h1[0],
                       "text_encoder's penultimate hidden state [77, 32] "
                       "(hidden_states[-2], no final norm)")
            g.save(f"text.{key}.hidden2.bin", h2[0],
                       "text_encoder_2's penultimate hidden state [77, 64]")
            p = g.save(f"text.{key}.pooled.bin", pooled[0],
                       "text_encoder_2's text_embeds [64]: final_layer_norm of "
                       "the last layer at the first <|endoftext|> (argmax of "
                       "ids: eos_token_id is 2 in the config), times "
                       "text_projection")
            embeds[key] = g.save(f"text.{key}.embeds.bin",
                                 torch.cat([h1, h2], -1)[0],
                                 "prompt_embeds [77, 96]: hidden1 then hidden2")
            embeds[key + ".pooled"] = p
            calls.append({"entry": "encode_text",
                          "inputs": [f"text.{key}.ids.bin", f"text.{key}.ids_2.bin"],
                          "outputs": [embeds[key], p],
                          "note": "SDXL: both tokenizations in, prompt_embeds "
                                  "and pooled text_embeds out (a proposal: "
                                  "the parts are hidden1, hidden2)"})
    return out, embeds


def pipeline_embeds(pipe, xl):
    """prompt_embeds as the pipeline's own encode_prompt gives them."""
    with torch.no_grad():
        if xl:
            return pipe.encode_prompt(PROMPT, device="cpu", num_images_per_prompt=1,
                                      do_classifier_free_guidance=True,
                                      negative_prompt=NEGATIVE)
        return pipe.encode_prompt(PROMPT, "cpu", 1, True, negative_prompt=NEGATIVE)


def unet_goldens(g, m, embeds, calls):
    unet = m["unet"]
    c = unet.config.in_channels
    h, w = HEIGHT // 8, WIDTH // 8
    xl = "text_encoder_2" in m
    if xl:
        time_ids = torch.tensor([[HEIGHT, WIDTH, 0, 0, HEIGHT, WIDTH]], dtype=torch.float32)
        tfile = g.save("unet.time_ids.bin", time_ids[0],
                       "SDXL time_ids [6]: original size (h, w), crop top-left, "
                       "target size (h, w), in pixels", check=False)
    cases = [(t, "prompt") for t in TIMESTEPS] + [(500, "negative")]
    for t, key in cases:
        gen = torch.Generator().manual_seed(1000 + t + (1 if key == "negative" else 0))
        latents = torch.randn(1, c, h, w, generator=gen)
        text = torch.from_numpy(np.fromfile(os.path.join(g.dir, embeds[key]),
                                            "<f4").reshape(1, 77, -1))
        kwargs = {}
        inputs = [g.save(f"unet.t{t}.{key}.latents.bin", latents[0],
                         f"UNet input [{c}, h, w], randn"),
                  g.save(f"unet.t{t}.timestep.bin", torch.tensor([float(t)]),
                         "timestep f32 [1]", check=False),
                  embeds[key]]
        if xl:
            pooled = torch.from_numpy(np.fromfile(
                os.path.join(g.dir, embeds[key + ".pooled"]), "<f4"))[None]
            kwargs["added_cond_kwargs"] = {"text_embeds": pooled, "time_ids": time_ids}
            inputs += [embeds[key + ".pooled"], tfile]
        with torch.no_grad():
            out = unet(latents, torch.tensor([float(t)]), encoder_hidden_states=text,
                       **kwargs).sample
        calls.append({"entry": "denoise", "inputs": inputs,
                      "outputs": [g.save(f"unet.t{t}.{key}.out.bin", out[0],
                                         "UNet output [4, h, w] (the model's "
                                         "prediction: epsilon, or v for SD 2.x)")]})


def vae_goldens(g, m, pixels, calls):
    vae = m["vae"]
    sf = vae.config.scaling_factor
    gen = torch.Generator().manual_seed(77)
    latents = torch.randn(1, 4, HEIGHT // 8, WIDTH // 8, generator=gen)
    with torch.no_grad():
        image = vae.decode(latents / sf).sample
        dist = vae.encode(pixels[None]).latent_dist
    calls.append({"entry": "decode_latents",
                  "inputs": [g.save("vae.decode.latents.bin", latents[0],
                                    "latents [4, h, w], randn")],
                  "outputs": [g.save("vae.decode.image.bin", image[0],
                                     f"vae.decode(latents / {sf}).sample "
                                     "[3, H, W] (before the pipeline's /2 + 0.5)")]})
    moments = torch.cat([dist.mean, dist.logvar], 1)
    g.files["../init-96x64.pixels.bin"] = {
        "shape": [3, HEIGHT, WIDTH], "dtype": "f32",
        "what": "Inputs/init-96x64.png as the pipelines see it: RGB / 255 * 2 - 1"}
    calls.append({"entry": "encode_image",
                  "inputs": ["../init-96x64.pixels.bin"],
                  "outputs": [g.save("vae.encode.moments.bin", moments[0],
                                     "vae.encode(pixels).latent_dist: mean "
                                     "[4, h, w] then logvar [4, h, w] (unscaled)")]})


def scheduler_of(kind, base_config):
    cls, extra = SCHEDULERS[kind]
    return cls.from_config(base_config, **extra)


def run_pipeline(g, name, m, kind, sched, steps, image, mask, noise_file, noise,
                 negative=""):
    xl = "text_encoder_2" in m
    scheduler = scheduler_of(sched, m["scheduler"].config)
    common = dict(vae=m["vae"], text_encoder=m["text_encoder"],
                  tokenizer=m["tokenizer"], unet=m["unet"], scheduler=scheduler)
    if xl:
        pipe = StableDiffusionXLPipeline(
            text_encoder_2=m["text_encoder_2"], tokenizer_2=m["tokenizer_2"],
            force_zeros_for_empty_prompt=True, add_watermarker=False, **common)
    else:
        cls = {"txt2img": StableDiffusionPipeline,
               "img2img": StableDiffusionImg2ImgPipeline,
               "inpaint": StableDiffusionInpaintPipeline}[kind]
        pipe = cls(safety_checker=None, feature_extractor=None,
                   requires_safety_checker=False, **common)
    pipe.set_progress_bar_config(disable=True)
    run = f"{kind}-{sched}" + ("-no-negative" if negative is None else "")
    steps_seen = []

    extra = {}

    def on_step(p, i, t, kwargs):
        steps_seen.append((float(t), kwargs["latents"].clone()))
        for key in ("mask", "masked_image_latents"):
            if key in kwargs and key not in extra:
                extra[key] = kwargs[key][0].clone()  # the batch's first half
        return kwargs

    negative = NEGATIVE if negative == "" else negative
    args = dict(prompt=PROMPT, negative_prompt=negative, num_inference_steps=steps,
                guidance_scale=GUIDANCE, height=HEIGHT, width=WIDTH,
                generator=torch.Generator().manual_seed(SEED), output_type="np",
                callback_on_step_end=on_step)
    if kind == "img2img":
        args.update(image=image, strength=0.75)
        args.pop("height"), args.pop("width")
    elif kind == "inpaint":
        args.update(image=image, mask_image=mask, latents=noise[None],
                    callback_on_step_end_tensor_inputs=[
                        "latents", "mask", "masked_image_latents"])
    else:
        args.update(latents=noise[None])
    recorder = DrawRecorder()
    try:
        with torch.no_grad():
            out = pipe(**args).images
    finally:
        recorder.close()
    entry = {"name": run, "pipeline": type(pipe).__name__,
             "scheduler": {"name": sched, "class": type(scheduler).__name__,
                           "config": {k: sorted(v) if k == "_use_default_values" else v
                                      for k, v in dict(scheduler.config).items()}},
             "prompt": PROMPT, "negative_prompt": negative, "steps": steps,
             "guidance_scale": GUIDANCE, "height": HEIGHT, "width": WIDTH,
             "seed": SEED,
             "timesteps": [t for t, _ in steps_seen],
             "scheduler_timesteps": [float(t) for t in scheduler.timesteps]}
    if hasattr(scheduler, "sigmas"):
        entry["scheduler_sigmas"] = [float(s) for s in scheduler.sigmas]
    if kind in ("txt2img", "inpaint"):
        entry["latents"] = noise_file
        entry["init_noise_sigma"] = float(scheduler.init_noise_sigma)
    if kind in ("img2img", "inpaint"):
        entry["init_image"] = "../init-96x64.png"
    if kind == "img2img":
        entry["strength"] = 0.75
    if kind == "inpaint":
        entry["mask_image"] = "../mask-96x64.png"
    if xl:
        entry["time_ids"] = [HEIGHT, WIDTH, 0, 0, HEIGHT, WIDTH]
        entry["note"] = ("negative_prompt None: force_zeros_for_empty_prompt "
                         "makes its states and text_embeds zeros"
                         if negative is None else
                         "negative_prompt '' is given, so it is encoded "
                         "(force_zeros_for_empty_prompt zeroes it only when "
                         "negative_prompt is None)")
    entry["draws"] = []
    for k, (who, value) in enumerate(recorder.draws):
        entry["draws"].append({
            "file": g.save(f"{run}.draw{k}.bin", value[0],
                           f"draw {k} from the generator: {DRAW_MEANING[who]}"),
            "from": who})
    if extra:
        entry["mask_latents"] = g.save(
            f"{run}.mask.bin", extra["mask"],
            "the mask at latent size [1, h, w] (nearest), the UNet's 5th channel")
        entry["masked_image_latents"] = g.save(
            f"{run}.masked_image_latents.bin", extra["masked_image_latents"],
            "the masked image's latents [4, h, w] (image * (mask < 0.5), encoded, "
            "sampled with the vae draw, times scaling_factor): channels 5-8")
    entry["step_latents"] = g.save(
        f"{run}.steps.bin", torch.cat([l for _, l in steps_seen]),
        "latents after each scheduler step [steps, 4, h, w]")
    entry["image"] = g.save(f"{run}.image.bin", out[0],
                            "output_type='np' image [H, W, 3] in [0, 1]")
    return entry


def make(name):
    spec = MODELS[name]
    manifest = manifest_of(name, spec)
    manifest_path = os.path.join(INPUTS, name + ".json")
    with open(manifest_path, "w", encoding="utf-8") as f:
        f.write(compact_json(manifest))
    work = tempfile.mkdtemp(prefix="sd-fixture-")
    try:
        folder = os.path.join(work, name)
        start = time.time()
        make_sd_fixture.write_fixture(manifest_path, folder)
        took = time.time() - start
        size = folder_size(folder)
        print(f"{name}: fixture written in {took:.2f} s, {size / 1e6:.2f} MB")
        m = load_components(folder, manifest)
        verified = [f"fixture folder {size / 1e6:.2f} MB (f32); every tensor "
                    "loaded, none missing or unexpected"]
        verified.append(check_dtypes(manifest, m, work))
        verified += check_single_file(manifest, folder, m, work)
        for v in verified:
            print("  verified:", v)

        g = Goldens(name)
        image, mask, pixels = write_shared_inputs()
        calls = []
        text, embeds = text_goldens(g, name, m, calls)
        unet_goldens(g, m, embeds, calls)
        vae_goldens(g, m, pixels, calls)
        xl = "text_encoder_2" in m
        gen = torch.Generator().manual_seed(SEED + 1)
        noise = torch.randn(4, HEIGHT // 8, WIDTH // 8, generator=gen)
        noise_file = g.save("noise.bin", noise,
                            "initial latents [4, h, w] (randn) passed as "
                            "latents=, before init_noise_sigma scales them")
        pipelines = []
        for kind, sched, steps, *negative in RUNS[name]:
            entry = run_pipeline(g, name, m, kind, sched, steps, image, mask,
                                 noise_file, noise,
                                 None if negative == [NO_NEGATIVE] else "")
            pipelines.append(entry)
        check_encode_prompt(g, m, embeds, xl)
        description = {
            "fixture": name, "published": spec["published"],
            "manifest": f"../{name}.json",
            "made_by": "make_sd_goldens.py (diffusers %s, transformers %s, torch %s, "
                       "float32, CPU)" % (diffusers.__version__, tf.__version__,
                                          torch.__version__),
            "tolerance": "per call: |tfmc - ref| <= 1e-4 * max(1, |ref|); "
                         "pipelines' images within 1e-3",
            "layout": "raw little-endian, row-major; shapes without the batch "
                      "dimension; h = H/8, w = W/8",
            "text": text, "calls": calls, "pipelines": pipelines,
            "verified": verified, "files": g.files}
        description = json.loads(json.dumps(description, default=str))
        with open(os.path.join(g.dir, "goldens.json"), "w", encoding="utf-8") as f:
            f.write(compact_json(description))
        for file, peak, std in g.peaks:
            print(f"  {file:40s} max|x| {peak:9.4f}  std {std:8.4f}")
        print(f"  goldens: {folder_size(g.dir) / 1e6:.2f} MB")
    finally:
        shutil.rmtree(work)


def check_encode_prompt(g, m, embeds, xl):
    common = dict(vae=m["vae"], text_encoder=m["text_encoder"],
                  tokenizer=m["tokenizer"], unet=m["unet"], scheduler=m["scheduler"])
    if xl:
        pipe = StableDiffusionXLPipeline(text_encoder_2=m["text_encoder_2"],
                                         tokenizer_2=m["tokenizer_2"],
                                         add_watermarker=False, **common)
    else:
        pipe = StableDiffusionPipeline(safety_checker=None, feature_extractor=None,
                                       requires_safety_checker=False, **common)
    got = pipeline_embeds(pipe, xl)
    want = [embeds["prompt"], embeds["negative"]]
    if xl:
        want += [embeds["prompt.pooled"], embeds["negative.pooled"]]
    for value, file in zip(got, want):
        ref = np.fromfile(os.path.join(g.dir, file), "<f4")
        if not np.array_equal(value.numpy().reshape(-1), ref):
            raise SystemExit(f"encode_prompt differs from {file}")


def main(argv):
    names = argv or list(MODELS)
    os.makedirs(INPUTS, exist_ok=True)
    for name in names:
        if name not in MODELS:
            sys.exit(f"unknown model {name}: " + ", ".join(MODELS))
        make(name)
    total = sum(os.path.getsize(os.path.join(d, f))
                for d, _, files in os.walk(INPUTS) for f in files
                if not f.endswith(".json") or d != INPUTS)
    print(f"Inputs/: {total / 1e6:.2f} MB")


if __name__ == "__main__":
    main(sys.argv[1:])
