#!/usr/bin/env python3
"""The tensor names of Stable Diffusion's single-file checkpoints (the
original LDM / sgm names: `model.diffusion_model.*`, `first_stage_model.*`,
`cond_stage_model.*`, `conditioner.embedders.*`) against the diffusers
folder's names (stdlib only; make_sd_fixture.py --single-file writes a
fixture's weights under these names).

This is the inverse of diffusers 0.27.2's loaders/single_file_utils.py
(convert_ldm_unet_checkpoint, convert_ldm_vae_checkpoint,
create_text_encoder_from_ldm_clip_checkpoint,
create_text_encoder_from_open_clip_checkpoint; the same rules as
pipelines/stable_diffusion/convert_from_ckpt.py). make_sd_goldens.py checks
that those functions, run on a written file, give back every tensor of the
diffusers folder bit for bit.

    ldm_names.py --table MANIFEST    every LDM name of a fixture, as JSON:
                                     {ldm: [component, [diffusers names], transform]}

Prefixes (the file's layout; `single_file.layout` in a manifest):

| layout | UNet                   | VAE                | text encoder(s)                                        |
|--------|------------------------|--------------------|--------------------------------------------------------|
| sd1    | model.diffusion_model. | first_stage_model. | cond_stage_model.transformer. + the HF CLIP names       |
| sd2    | model.diffusion_model. | first_stage_model. | cond_stage_model.model. + OpenCLIP names               |
| sdxl   | model.diffusion_model. | first_stage_model. | conditioner.embedders.0.transformer. + HF CLIP names (text_encoder); conditioner.embedders.1.model. + OpenCLIP names (text_encoder_2) |

UNet (L = layers_per_block, b = stage, l = layer in the stage; the inner
names of a resnet are renamed, those of an attention block are not):

| diffusers                                   | LDM                                              |
|---------------------------------------------|--------------------------------------------------|
| time_embedding.linear_1 / linear_2          | time_embed.0 / time_embed.2                      |
| add_embedding.linear_1 / linear_2 (SDXL)    | label_emb.0.0 / label_emb.0.2                    |
| conv_in                                     | input_blocks.0.0                                 |
| down_blocks.b.resnets.l                     | input_blocks.(1 + b(L+1) + l).0                  |
| down_blocks.b.attentions.l                  | input_blocks.(1 + b(L+1) + l).1                  |
| down_blocks.b.downsamplers.0.conv           | input_blocks.(1 + b(L+1) + L).0.op               |
| mid_block.resnets.0 / attentions.0 / resnets.1 | middle_block.0 / middle_block.1 / middle_block.2 |
| up_blocks.b.resnets.l                       | output_blocks.(b(L+1) + l).0                     |
| up_blocks.b.attentions.l                    | output_blocks.(b(L+1) + l).1                     |
| up_blocks.b.upsamplers.0.conv               | output_blocks.(b(L+1) + L).1.conv without attentions in the stage, .2.conv with them |
| conv_norm_out / conv_out                    | out.0 / out.2                                    |
| resnet norm1, conv1, time_emb_proj, norm2, conv2, conv_shortcut | in_layers.0, in_layers.2, emb_layers.1, out_layers.0, out_layers.3, skip_connection |

VAE (n = number of stages; the decoder's stages are numbered the other way
round):

| diffusers                                   | LDM                                  |
|---------------------------------------------|--------------------------------------|
| encoder/decoder .conv_in, .conv_out         | the same                             |
| encoder/decoder .conv_norm_out              | .norm_out                            |
| quant_conv, post_quant_conv                 | the same                             |
| encoder.down_blocks.i.resnets.j             | encoder.down.i.block.j               |
| encoder.down_blocks.i.downsamplers.0.conv   | encoder.down.i.downsample.conv       |
| decoder.up_blocks.i.resnets.j               | decoder.up.(n-1-i).block.j           |
| decoder.up_blocks.i.upsamplers.0.conv       | decoder.up.(n-1-i).upsample.conv     |
| X.mid_block.resnets.0 / resnets.1           | X.mid.block_1 / X.mid.block_2        |
| X.mid_block.attentions.0.group_norm, to_q, to_k, to_v, to_out.0 | X.mid.attn_1.norm, q, k, v, proj_out; the four projections are 1x1 convolutions there: [C, C] <-> [C, C, 1, 1] |
| resnet conv_shortcut                        | nin_shortcut                         |

OpenCLIP text encoder (SD 2.x's, SDXL's second), P = its prefix:

| diffusers (CLIPTextModel[WithProjection])                  | LDM                                         |
|------------------------------------------------------------|---------------------------------------------|
| text_model.embeddings.token_embedding.weight               | P token_embedding.weight                    |
| text_model.embeddings.position_embedding.weight            | P positional_embedding                      |
| text_model.encoder.layers.i.self_attn.{q,k,v}_proj.weight  | P transformer.resblocks.i.attn.in_proj_weight: q, k, v stacked on dim 0 ([3C, C]) |
| text_model.encoder.layers.i.self_attn.{q,k,v}_proj.bias    | P transformer.resblocks.i.attn.in_proj_bias ([3C]) |
| text_model.encoder.layers.i.self_attn.out_proj             | P transformer.resblocks.i.attn.out_proj     |
| text_model.encoder.layers.i.layer_norm1 / layer_norm2      | P transformer.resblocks.i.ln_1 / ln_2       |
| text_model.encoder.layers.i.mlp.fc1 / fc2                  | P transformer.resblocks.i.mlp.c_fc / c_proj |
| text_model.final_layer_norm                                | P ln_final                                  |
| text_projection.weight [proj, C] (SDXL's second encoder)   | P text_projection, transposed: [C, proj] (x @ text_projection) |

What the LDM file holds beside the diffusers folder's tensors (written by
make_sd_fixture.py as the published files hold them; a reader skips them):
- SD 1.x and SDXL's first encoder: ...text_model.embeddings.position_ids
  (int64 [1, 77]);
- SD 2.x: the OpenCLIP tower's last resblock (resblocks.L for a diffusers
  config of L layers: SD 2.x uses the penultimate layer, so its diffusers
  text_encoder has 23 of OpenCLIP ViT-H's 24 layers and diffusers'
  converter drops `resblocks.23`), its text_projection and logit_scale;
- SDXL's second encoder: logit_scale (its last layer is kept: the pooled
  output goes through it);
- SD 1.x and 2.x (ldm's LatentDiffusion buffers, f32 [1000]): betas,
  alphas_cumprod, alphas_cumprod_prev, sqrt_alphas_cumprod,
  sqrt_one_minus_alphas_cumprod, log_one_minus_alphas_cumprod,
  sqrt_recip_alphas_cumprod, sqrt_recipm1_alphas_cumprod,
  posterior_variance, posterior_log_variance_clipped,
  posterior_mean_coef1, posterior_mean_coef2 (the scaled-linear schedule,
  beta 0.00085 to 0.012 over 1000 steps).

What the names do not carry: the group count of the GroupNorms (LDM's code
fixes 32), the UNet's heads (SD 1.x: 8 heads; SD 2.x, SDXL: heads of 64),
the VAE's scaling factor (0.18215; SDXL 0.13025), the prediction type
(SD 2.x 768: v) and SDXL's time embedding width (256: its label_emb input
is the pooled width + 6 x 256). The cut fixtures keep the published
scaling factors and prediction types, and SD 1.x's 8 heads, but have
groups of 8, SD 2.x's and SDXL's heads of 8 and SDXL's time embedding of
16, so a single-file fixture is read with its diffusers folder's
config.json files (as diffusers >= 0.28 reads
`from_single_file(file, config=folder)`). diffusers 0.27.2's
from_single_file, given an LDM yaml with the cut widths, builds
GroupNorm(32) and fails ("num_channels must be divisible by num_groups").
"""
import json
import re
import sys

UNET_PREFIX = "model.diffusion_model."
VAE_PREFIX = "first_stage_model."
TEXT_PREFIXES = {
    "sd1": {"text_encoder": ("hf", "cond_stage_model.transformer.")},
    "sd2": {"text_encoder": ("openclip", "cond_stage_model.model.")},
    "sdxl": {"text_encoder": ("hf", "conditioner.embedders.0.transformer."),
             "text_encoder_2": ("openclip", "conditioner.embedders.1.model.")},
}

UNET_TOP = {
    "time_embedding.linear_1": "time_embed.0",
    "time_embedding.linear_2": "time_embed.2",
    "add_embedding.linear_1": "label_emb.0.0",
    "add_embedding.linear_2": "label_emb.0.2",
    "conv_in": "input_blocks.0.0",
    "conv_norm_out": "out.0",
    "conv_out": "out.2",
}
UNET_RESNET = [("norm1", "in_layers.0"), ("conv1", "in_layers.2"),
               ("time_emb_proj", "emb_layers.1"), ("norm2", "out_layers.0"),
               ("conv2", "out_layers.3"), ("conv_shortcut", "skip_connection")]
VAE_TOP = {"conv_norm_out": "norm_out"}
VAE_ATTENTION = [("group_norm", "norm"), ("to_q", "q"), ("to_k", "k"),
                 ("to_v", "v"), ("to_out.0", "proj_out")]
OPENCLIP_LAYER = [("self_attn.out_proj", "attn.out_proj"),
                  ("layer_norm1", "ln_1"), ("layer_norm2", "ln_2"),
                  ("mlp.fc1", "mlp.c_fc"), ("mlp.fc2", "mlp.c_proj")]


def _rename(rest, pairs):
    for new, old in pairs:
        if rest == new or rest.startswith(new + "."):
            return old + rest[len(new):]
    return rest


def unet_name(name, config, stages_with_attention):
    """The LDM name (without its prefix) of a diffusers UNet tensor."""
    per = config["layers_per_block"] + 1
    for top, old in UNET_TOP.items():
        if name.startswith(top + "."):
            return old + name[len(top):]
    m = re.match(r"down_blocks\.(\d+)\.(resnets|attentions)\.(\d+)\.(.*)", name)
    if m:
        b, kind, l, rest = int(m[1]), m[2], int(m[3]), m[4]
        block = 1 + b * per + l
        if kind == "resnets":
            return f"input_blocks.{block}.0.{_rename(rest, UNET_RESNET)}"
        return f"input_blocks.{block}.1.{rest}"
    m = re.match(r"down_blocks\.(\d+)\.downsamplers\.0\.conv\.(.*)", name)
    if m:
        return f"input_blocks.{1 + int(m[1]) * per + per - 1}.0.op.{m[2]}"
    m = re.match(r"mid_block\.(resnets|attentions)\.(\d+)\.(.*)", name)
    if m:
        if m[1] == "attentions":
            return f"middle_block.1.{m[3]}"
        return f"middle_block.{2 * int(m[2])}.{_rename(m[3], UNET_RESNET)}"
    m = re.match(r"up_blocks\.(\d+)\.(resnets|attentions)\.(\d+)\.(.*)", name)
    if m:
        b, kind, l, rest = int(m[1]), m[2], int(m[3]), m[4]
        block = b * per + l
        if kind == "resnets":
            return f"output_blocks.{block}.0.{_rename(rest, UNET_RESNET)}"
        return f"output_blocks.{block}.1.{rest}"
    m = re.match(r"up_blocks\.(\d+)\.upsamplers\.0\.conv\.(.*)", name)
    if m:
        b = int(m[1])
        slot = 2 if b in stages_with_attention else 1
        return f"output_blocks.{b * per + per - 1}.{slot}.conv.{m[2]}"
    raise ValueError(f"no LDM name for UNet tensor {name}")


def vae_name(name, stages):
    """The LDM name (without its prefix) and transform of a VAE tensor."""
    if name.startswith(("quant_conv.", "post_quant_conv.")):
        return name, "copy"
    half, rest = name.split(".", 1)
    for new, old in VAE_TOP.items():
        if rest.startswith(new + "."):
            return f"{half}.{old}{rest[len(new):]}", "copy"
    if rest.startswith(("conv_in.", "conv_out.")):
        return name, "copy"
    resnet = [("conv_shortcut", "nin_shortcut")]
    m = re.match(r"down_blocks\.(\d+)\.resnets\.(\d+)\.(.*)", rest)
    if m:
        return f"{half}.down.{m[1]}.block.{m[2]}.{_rename(m[3], resnet)}", "copy"
    m = re.match(r"down_blocks\.(\d+)\.downsamplers\.0\.conv\.(.*)", rest)
    if m:
        return f"{half}.down.{m[1]}.downsample.conv.{m[2]}", "copy"
    m = re.match(r"up_blocks\.(\d+)\.resnets\.(\d+)\.(.*)", rest)
    if m:
        i = stages - 1 - int(m[1])
        return f"{half}.up.{i}.block.{m[2]}.{_rename(m[3], resnet)}", "copy"
    m = re.match(r"up_blocks\.(\d+)\.upsamplers\.0\.conv\.(.*)", rest)
    if m:
        return f"{half}.up.{stages - 1 - int(m[1])}.upsample.conv.{m[2]}", "copy"
    m = re.match(r"mid_block\.resnets\.(\d+)\.(.*)", rest)
    if m:
        return f"{half}.mid.block_{int(m[1]) + 1}.{_rename(m[2], resnet)}", "copy"
    m = re.match(r"mid_block\.attentions\.0\.(.*)", rest)
    if m:
        renamed = _rename(m[1], VAE_ATTENTION)
        conv = renamed.endswith(".weight") and not renamed.startswith("norm.")
        return f"{half}.mid.attn_1.{renamed}", ("conv1x1" if conv else "copy")
    raise ValueError(f"no LDM name for VAE tensor {name}")


def openclip_names(names):
    """OpenCLIP names for a CLIPTextModel[WithProjection]'s tensors:
    [(ldm name, [diffusers names], transform)]; q, k and v go into one."""
    out, done = [], set()
    fixed = {
        "text_model.embeddings.token_embedding.weight": "token_embedding.weight",
        "text_model.embeddings.position_embedding.weight": "positional_embedding",
        "text_model.final_layer_norm.weight": "ln_final.weight",
        "text_model.final_layer_norm.bias": "ln_final.bias",
    }
    for name in names:
        if name in done:
            continue
        if name in fixed:
            out.append((fixed[name], [name], "copy"))
            continue
        if name == "text_projection.weight":
            out.append(("text_projection", [name], "transpose"))
            continue
        m = re.match(r"text_model\.encoder\.layers\.(\d+)\.(.*)", name)
        if not m:
            raise ValueError(f"no OpenCLIP name for {name}")
        i, rest = m[1], m[2]
        m2 = re.match(r"self_attn\.[qkv]_proj\.(weight|bias)", rest)
        if m2:
            parts = [f"text_model.encoder.layers.{i}.self_attn.{p}_proj.{m2[1]}"
                     for p in "qkv"]
            done.update(parts)
            out.append((f"transformer.resblocks.{i}.attn.in_proj_{m2[1]}",
                        parts, "concat"))
            continue
        out.append((f"transformer.resblocks.{i}.{_rename(rest, OPENCLIP_LAYER)}",
                    [name], "copy"))
    return out


def layout(manifest):
    """Every tensor of the single file that comes from the diffusers
    folder: [(ldm name, component, [diffusers names], transform)], where
    transform is copy, conv1x1 ([C, C] -> [C, C, 1, 1]), transpose, or
    concat (the names' tensors stacked on dim 0)."""
    kind = manifest["single_file"]["layout"]
    comps = manifest["components"]
    out = []
    unet = comps["unet"]
    attention = {int(n.split(".")[1]) for n, _ in unet["tensors"]
                 if n.startswith("up_blocks.") and ".attentions." in n}
    for name, _ in unet["tensors"]:
        out.append((UNET_PREFIX + unet_name(name, unet["config"], attention),
                    "unet", [name], "copy"))
    vae = comps["vae"]
    stages = len(vae["config"]["block_out_channels"])
    for name, _ in vae["tensors"]:
        ldm, transform = vae_name(name, stages)
        out.append((VAE_PREFIX + ldm, "vae", [name], transform))
    for comp, (style, prefix) in TEXT_PREFIXES[kind].items():
        names = [n for n, _ in comps[comp]["tensors"]]
        if style == "hf":
            out.extend((prefix + n, comp, [n], "copy") for n in names)
        else:
            out.extend((prefix + ldm, comp, sources, transform)
                       for ldm, sources, transform in openclip_names(names))
    return out


def main(argv):
    if argv[:1] != ["--table"] or len(argv) != 2:
        sys.exit(__doc__)
    with open(argv[1], encoding="utf-8") as f:
        manifest = json.load(f)
    rows = [f" {json.dumps(ldm)}: {json.dumps([comp, names, transform])}"
            for ldm, comp, names, transform in layout(manifest)]
    sys.stdout.write("{\n" + ",\n".join(rows) + "\n}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
