#!/usr/bin/env python3
"""FLOPs of one Stable Diffusion UNet forward and one VAE decode, from the
diffusers configs (unet/config.json, vae/config.json), for the benchmark's
fractions of the FP32 peak (bench/sd_bench.sh):

    sd_flops.py FOLDER [--latent 64x64] [--text 77]     # prints JSON

It walks the blocks as diffusers 0.27.2 builds them for SD 1.x and 2.x
(UNet2DConditionModel with CrossAttnDownBlock2D / DownBlock2D,
UNetMidBlock2DCrossAttn, UpBlock2D / CrossAttnUpBlock2D; AutoencoderKL's
Decoder with UpDecoderBlock2D), counting a multiply-add as 2 FLOPs:

- conv: every Conv2d diffusers runs (3x3 convolutions, the strided
  downsamplers, the convolutions after nearest upsampling, 1x1 shortcuts,
  and the 1x1 proj_in/proj_out of SD 1.x's Transformer2DModel, which are
  linear layers where use_linear_projection is set, SD 2.x);
- linear: the attention projections, GEGLU's, the time embedding's, each
  resnet's time projection (per forward, as diffusers runs them);
- attention: QK^T and PV.

sd_torch_peer.py counts the convolutions' FLOPs again with forward hooks
on diffusers' own modules (conv_flops there); the benchmark shows both.
Norms, activations, softmax and the skip concatenations are not counted.
"""
import argparse
import json
import os


def conv(cin, cout, k, h, w):
    return 2 * cin * cout * k * k * h * w


class Count:
    def __init__(self):
        self.conv = self.linear = self.attention = 0

    def as_dict(self):
        return {"conv": self.conv, "linear": self.linear,
                "attention": self.attention,
                "total": self.conv + self.linear + self.attention}


def resnet(n, cin, cout, h, w, temb=None):
    n.conv += conv(cin, cout, 3, h, w) + conv(cout, cout, 3, h, w)
    if cin != cout:
        n.conv += conv(cin, cout, 1, h, w)
    if temb:
        n.linear += 2 * temb * cout


def attention(n, tokens, keys, c, kv_dim):
    """One attention layer: q from `tokens` rows of c, k and v from `keys`
    rows of kv_dim, out projection."""
    n.linear += 2 * tokens * c * c * 2 + 2 * keys * kv_dim * c * 2
    n.attention += 2 * 2 * tokens * keys * c


def transformer(n, c, h, w, text, cross_dim, linear_projection, layers=1):
    tokens = h * w
    projections = 2 * 2 * tokens * c * c
    if linear_projection:
        n.linear += projections
    else:
        n.conv += projections
    for _ in range(layers):
        attention(n, tokens, tokens, c, c)           # attn1
        attention(n, tokens, text, c, cross_dim)     # attn2
        n.linear += 2 * tokens * c * 8 * c + 2 * tokens * 4 * c * c  # GEGLU


def unet(config, h, w, text=77):
    n = Count()
    blocks = config["block_out_channels"]
    layers = config["layers_per_block"]
    cross = config["cross_attention_dim"]
    linear_projection = config.get("use_linear_projection", False)
    depth = config.get("transformer_layers_per_block", 1)
    if isinstance(depth, int):
        depth = [depth] * len(blocks)
    if config.get("addition_embed_type") or config.get("class_embed_type"):
        raise SystemExit("sd_flops.py counts SD 1.x / 2.x UNets")
    temb = blocks[0] * 4
    n.linear += 2 * blocks[0] * temb + 2 * temb * temb  # time_embedding
    n.conv += conv(config["in_channels"], blocks[0], 3, h, w)
    skips = [blocks[0]]
    out = blocks[0]
    for i, kind in enumerate(config["down_block_types"]):
        cin, out = out, blocks[i]
        for j in range(layers):
            resnet(n, cin if j == 0 else out, out, h, w, temb)
            if kind.startswith("CrossAttn"):
                transformer(n, out, h, w, text, cross, linear_projection, depth[i])
            skips.append(out)
        if i < len(blocks) - 1:
            h, w = (h + 1) // 2, (w + 1) // 2
            n.conv += conv(out, out, 3, h, w)
            skips.append(out)
    c = blocks[-1]
    resnet(n, c, c, h, w, temb)
    transformer(n, c, h, w, text, cross, linear_projection, depth[-1])
    resnet(n, c, c, h, w, temb)
    reversed_blocks = blocks[::-1]
    reversed_depth = depth[::-1]
    prev = reversed_blocks[0]
    for i, kind in enumerate(config["up_block_types"]):
        out = reversed_blocks[i]
        for j in range(layers + 1):
            skip = skips.pop()
            cin = prev if j == 0 else out
            resnet(n, cin + skip, out, h, w, temb)
            if kind.startswith("CrossAttn"):
                transformer(n, out, h, w, text, cross, linear_projection,
                            reversed_depth[i])
        prev = out
        if i < len(blocks) - 1:
            h, w = h * 2, w * 2
            n.conv += conv(out, out, 3, h, w)
    assert not skips
    n.conv += conv(blocks[0], config["out_channels"], 3, h, w)
    return n


def vae_decode(config, h, w):
    n = Count()
    latent = config["latent_channels"]
    blocks = config["block_out_channels"][::-1]
    layers = config["layers_per_block"] + 1
    n.conv += conv(latent, latent, 1, h, w)  # post_quant_conv
    n.conv += conv(latent, blocks[0], 3, h, w)
    c = blocks[0]
    resnet(n, c, c, h, w)
    attention(n, h * w, h * w, c, c)  # the mid block's one head
    resnet(n, c, c, h, w)
    out = blocks[0]
    for i in range(len(blocks)):
        cin, out = out, blocks[i]
        for j in range(layers):
            resnet(n, cin if j == 0 else out, out, h, w)
        if i < len(blocks) - 1:
            h, w = h * 2, w * 2
            n.conv += conv(out, out, 3, h, w)
    n.conv += conv(blocks[-1], config["out_channels"], 3, h, w)
    return n


def folder_flops(folder, latent_h=None, latent_w=None, text=77):
    with open(os.path.join(folder, "unet", "config.json")) as f:
        unet_config = json.load(f)
    with open(os.path.join(folder, "vae", "config.json")) as f:
        vae_config = json.load(f)
    size = unet_config["sample_size"]
    latent_h = latent_h or size
    latent_w = latent_w or size
    return {"latent": [latent_h, latent_w],
            "unet_forward": unet(unet_config, latent_h, latent_w, text).as_dict(),
            "vae_decode": vae_decode(vae_config, latent_h, latent_w).as_dict()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--latent", help="HxW (default: the UNet's sample_size)")
    parser.add_argument("--text", type=int, default=77)
    args = parser.parse_args()
    h = w = None
    if args.latent:
        h, w = (int(v) for v in args.latent.lower().split("x"))
    print(json.dumps(folder_flops(args.folder, h, w, args.text)))


if __name__ == "__main__":
    main()
