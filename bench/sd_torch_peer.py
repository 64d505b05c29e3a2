#!/usr/bin/env python3
"""The PyTorch peer of bench/sd_bench.sh: diffusers 0.27.2's
UNet2DConditionModel and AutoencoderKL on Debian's torch 1.13 (CPU,
float32), on the weights of a diffusers folder (make_sd15_weights.py).
Prints one JSON line.

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    OMP_NUM_THREADS=N OPENBLAS_NUM_THREADS=N /usr/bin/python3 \\
        bench/sd_torch_peer.py FOLDER --threads N [--steps 4] [--decodes 2]

A step is what StableDiffusionPipeline does per step with guidance: one
UNet forward on a batch of 2 (the latents twice; the negative and the
positive prompt's text states) at the UNet's sample_size (64x64 latents,
512x512 images for SD 1.5). A decode is vae.decode of one latent. Each is
run once first (not timed: allocation, oneDNN's primitive cache), then
`--steps` steps and `--decodes` decodes are timed one by one, under
torch.inference_mode(). Inputs are seeded normals.

The weights are read from the folder's safetensors straight into the
modules' parameters (initialized by nothing: torch's initializers are
switched off while the modules are built), so that the process's peak RSS
(getrusage) is the parameters, the activations and Python/torch, as
tfmc's harness measures its own; the text encoder is not loaded (the
benchmark times the UNet and the VAE). Every parameter and buffer of
both modules must be in the files, with its shape.

--channels-last runs the convolutions in torch.channels_last (oneDNN's
preferred layout), to try whether it is PyTorch's faster setting here.
conv_flops are counted with forward hooks on every Conv2d during the
untimed first call: 2 * Cout * Hout * Wout * Cin/groups * kh * kw, an
independent count of what sd_flops.py computes from the config.
"""
import argparse
import json
import os
import resource
import statistics
import struct
import time

import numpy as np
import torch

ST_DTYPES = {"F32": np.float32, "F16": np.float16}


def read_safetensors(path, params):
    """Reads each tensor of `path` into params[name] (a torch tensor);
    returns the names read."""
    seen = set()
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        base = 8 + size
        for name, spec in header.items():
            if name == "__metadata__":
                continue
            if name not in params:
                raise SystemExit(f"{path}: {name} is not a parameter")
            target = params[name]
            if list(target.shape) != spec["shape"]:
                raise SystemExit(f"{path}: {name} is {spec['shape']}, the "
                                 f"module's {list(target.shape)}")
            begin, end = spec["data_offsets"]
            f.seek(base + begin)
            if spec["dtype"] == "F32":
                f.readinto(memoryview(target.numpy()).cast("B"))
            elif spec["dtype"] in ("F16", "BF16"):
                raw = np.frombuffer(f.read(end - begin), np.uint16)
                if spec["dtype"] == "F16":
                    values = raw.view(np.float16).astype(np.float32)
                else:
                    values = (raw.astype(np.uint32) << 16).view(np.float32)
                target.numpy()[...] = values.reshape(spec["shape"])
            else:
                raise SystemExit(f"{path}: {name} is {spec['dtype']}")
            seen.add(name)
    return seen


def load(cls, folder, component):
    # The initializers would write every parameter, only to be overwritten.
    saved = {}
    for name in ("kaiming_uniform_", "uniform_", "normal_", "zeros_",
                 "ones_", "xavier_uniform_", "constant_"):
        saved[name] = getattr(torch.nn.init, name)
        setattr(torch.nn.init, name, lambda tensor, *a, **k: tensor)
    try:
        with open(os.path.join(folder, component, "config.json")) as f:
            model = cls.from_config(json.load(f))
    finally:
        for name, function in saved.items():
            setattr(torch.nn.init, name, function)
    model.eval().requires_grad_(False)
    params = dict(model.named_parameters())
    params.update(model.named_buffers())
    for name, value in params.items():
        if value.dtype != torch.float32 or not value.is_contiguous():
            raise SystemExit(f"{component}.{name}: {value.dtype}")
    seen = read_safetensors(
        os.path.join(folder, component, "diffusion_pytorch_model.safetensors"),
        params)
    missing = set(params) - seen
    if missing:
        raise SystemExit(f"{component}: not in the file: {sorted(missing)[:5]}")
    return model


def conv_hooks(model, count):
    def hook(module, inputs, output):
        cin = module.in_channels // module.groups
        kh, kw = module.kernel_size
        count[0] += 2 * output.shape[0] * output.shape[1] * output.shape[2] * \
            output.shape[3] * cin * kh * kw
    return [m.register_forward_hook(hook) for m in model.modules()
            if isinstance(m, torch.nn.Conv2d)]


def timed(function, runs):
    """The seconds of each of `runs` calls, and the last call's result."""
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return times, result


def finite(what, values):
    """A benchmark of NaNs would time other code paths: refused."""
    if not torch.isfinite(values).all():
        raise SystemExit(f"{what} gave values that are not finite")


def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--decodes", type=int, default=2)
    parser.add_argument("--channels-last", action="store_true")
    parser.add_argument("--only", choices=("unet", "vae"))
    args = parser.parse_args()
    if args.steps < 1 or args.decodes < 1:
        parser.error("--steps and --decodes: at least 1")
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    from diffusers import AutoencoderKL, UNet2DConditionModel
    import diffusers

    out = {"engine": "diffusers", "diffusers": diffusers.__version__,
           "torch": torch.__version__, "threads": torch.get_num_threads(),
           "channels_last": args.channels_last}
    fmt = torch.channels_last if args.channels_last else torch.contiguous_format
    generator = torch.Generator().manual_seed(0)
    start = time.perf_counter()
    unet = vae = None
    if args.only != "vae":
        unet = load(UNet2DConditionModel, args.folder, "unet").to(memory_format=fmt)
    if args.only != "unet":
        vae = load(AutoencoderKL, args.folder, "vae").to(memory_format=fmt)
    out["load_s"] = time.perf_counter() - start
    out["rss_after_load_mb"] = rss_mb()

    with torch.inference_mode():
        if unet is not None:
            c = unet.config
            size = c.sample_size
            latents = torch.randn(1, c.in_channels, size, size,
                                  generator=generator).to(memory_format=fmt)
            text = torch.randn(2, 77, c.cross_attention_dim, generator=generator)
            timestep = torch.tensor(500)

            def step():
                # Guidance's two halves in one batch, as the pipeline runs.
                pair = torch.cat([latents] * 2)
                noise = unet(pair, timestep, encoder_hidden_states=text).sample
                uncond, cond = noise.chunk(2)
                return uncond + 7.5 * (cond - uncond)

            count = [0]
            hooks = conv_hooks(unet, count)
            first = timed(step, 1)[0][0]
            for h in hooks:
                h.remove()
            out["unet_conv_flops_per_step"] = count[0]
            out["unet_first_step_s"] = first
            out["step_s"], last = timed(step, args.steps)
            out["step_median_s"] = statistics.median(out["step_s"])
            finite("a step", last)
            out["latent"] = [size, size]
        if vae is not None:
            c = vae.config
            size = (unet.config.sample_size if unet is not None
                    else c.sample_size // 2 ** (len(c.block_out_channels) - 1))
            z = torch.randn(1, c.latent_channels, size, size,
                            generator=generator).to(memory_format=fmt)

            def decode():
                return vae.decode(z / c.scaling_factor).sample

            count = [0]
            hooks = conv_hooks(vae, count)
            first = timed(decode, 1)[0][0]
            for h in hooks:
                h.remove()
            out["vae_conv_flops_per_decode"] = count[0]
            out["vae_first_decode_s"] = first
            out["decode_s"], last = timed(decode, args.decodes)
            out["decode_median_s"] = statistics.median(out["decode_s"])
            finite("a decode", last)
    out["peak_rss_mb"] = rss_mb()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
