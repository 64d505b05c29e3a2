#!/usr/bin/env python3
"""Writes test/runtime/Inputs/schedulers.bin, the goldens of SchedulersTest.cpp.

The reference is diffusers 0.27.2 on torch 1.13 (../shared/reference/setup.sh):

    source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/runtime/make_scheduler_goldens.py

Each sampling run starts from a published (or deliberately odd)
scheduler_config.json, applies what diffusers' pipelines change in it when
they are built, switches to the scheduler a user names with
`XScheduler.from_config(pipe.scheduler.config, ...)`, sets the steps, and
runs the pipeline's loop: latents = torch.randn(generator) * init_noise_sigma
(or, image-to-image, add_noise of a fixed image's latents at the first
timestep get_timesteps leaves), then for each timestep scale_model_input,
a synthetic model, and step with the same generator. The model is
output[k] = 0.5 * input[k] + float32(sin(t / 100 + 0.37 k)), computed in
float32 so that C computes the same bits. Recorded: the timesteps,
init_noise_sigma, the first call, the latents before the first step and
after every step. Also recorded: alphas_cumprod of each beta schedule, and
torch.randn draws (first values and a checksum of all) for several seeds
and sizes, continuing one generator across draws, for the AVX2 kernel torch
runs on x86 and the portable one (ATEN_CPU_CAPABILITY=default).

Format (little endian): "TFMSCHED", u32 version, then records, each a u8
tag: 1 run, 2 alphas_cumprod, 3 randn, 0 end. Strings are u16 length +
bytes; write_run, write_alphas and randn_records write the records, and
SchedulersTest.cpp's goldens() reads them.
"""

import inspect
import math
import os
import struct
import subprocess
import sys
import types

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "Inputs",
                   "schedulers.bin")

# The published scheduler_config.json files (Hugging Face Hub).
SD15 = {  # runwayml/stable-diffusion-v1-5
    "_class_name": "PNDMScheduler", "_diffusers_version": "0.6.0",
    "beta_end": 0.012, "beta_schedule": "scaled_linear", "beta_start": 0.00085,
    "num_train_timesteps": 1000, "set_alpha_to_one": False,
    "skip_prk_steps": True, "steps_offset": 1, "trained_betas": None,
    "clip_sample": False}
SD21 = {  # stabilityai/stable-diffusion-2-1
    "_class_name": "DDIMScheduler", "_diffusers_version": "0.8.0",
    "beta_end": 0.012, "beta_schedule": "scaled_linear", "beta_start": 0.00085,
    "clip_sample": False, "num_train_timesteps": 1000,
    "prediction_type": "v_prediction", "set_alpha_to_one": False,
    "skip_prk_steps": True, "steps_offset": 1, "trained_betas": None}
SDXL = {  # stabilityai/stable-diffusion-xl-base-1.0
    "_class_name": "EulerDiscreteScheduler",
    "_diffusers_version": "0.19.0.dev0",
    "beta_end": 0.012, "beta_schedule": "scaled_linear", "beta_start": 0.00085,
    "clip_sample": False, "interpolation_type": "linear",
    "num_train_timesteps": 1000, "prediction_type": "epsilon",
    "sample_max_value": 1.0, "set_alpha_to_one": False,
    "skip_prk_steps": True, "steps_offset": 1, "timestep_spacing": "leading",
    "trained_betas": None, "use_karras_sigmas": False}
# Not published: what the published ones do not reach.
ZSNR = {  # zero terminal SNR, trailing, v (Lin et al. 2023)
    "_class_name": "DDIMScheduler", "beta_end": 0.012,
    "beta_schedule": "scaled_linear", "beta_start": 0.00085,
    "clip_sample": False, "prediction_type": "v_prediction",
    "rescale_betas_zero_snr": True, "timestep_spacing": "trailing",
    "set_alpha_to_one": False, "steps_offset": 1}
COSINE = {  # squaredcos_cap_v2, linspace, DDIM's own clipping kept
    "_class_name": "DDIMScheduler", "beta_schedule": "squaredcos_cap_v2",
    "clip_sample": True, "clip_sample_range": 0.8,
    "timestep_spacing": "linspace", "num_train_timesteps": 1000}
SAMPLE = {  # x0 prediction, linear betas
    "_class_name": "DDIMScheduler", "beta_schedule": "linear",
    "prediction_type": "sample", "clip_sample": False, "steps_offset": 1}
PRK = {  # PNDM with its Runge-Kutta warm-up
    "_class_name": "PNDMScheduler", "beta_end": 0.012,
    "beta_schedule": "scaled_linear", "beta_start": 0.00085,
    "skip_prk_steps": False, "steps_offset": 1, "set_alpha_to_one": False}
PRK_V = dict(PRK, prediction_type="v_prediction", timestep_spacing="trailing")
DPM_OPTIONS = {  # the DPM++ switches the SD configs leave at their defaults
    "_class_name": "DPMSolverMultistepScheduler", "beta_end": 0.012,
    "beta_schedule": "scaled_linear", "beta_start": 0.00085,
    "steps_offset": 1, "timestep_spacing": "leading"}
EULER_OPTIONS = {
    "_class_name": "EulerDiscreteScheduler", "beta_end": 0.012,
    "beta_schedule": "scaled_linear", "beta_start": 0.00085,
    "timestep_spacing": "trailing"}

# A user's scheduler name: the class and from_config's keyword arguments.
NAMES = {
    "ddim": ("DDIMScheduler", {}),
    "pndm": ("PNDMScheduler", {}),
    "euler": ("EulerDiscreteScheduler", {"use_karras_sigmas": False}),
    "euler_karras": ("EulerDiscreteScheduler", {"use_karras_sigmas": True}),
    "euler_a": ("EulerAncestralDiscreteScheduler", {}),
    "dpm++2m": ("DPMSolverMultistepScheduler",
                {"use_karras_sigmas": False, "algorithm_type": "dpmsolver++"}),
    "dpm++2m_karras": ("DPMSolverMultistepScheduler",
                       {"use_karras_sigmas": True,
                        "algorithm_type": "dpmsolver++"}),
    "dpm++2m_sde": ("DPMSolverMultistepScheduler",
                    {"use_karras_sigmas": False,
                     "algorithm_type": "sde-dpmsolver++"}),
    "dpm++2m_sde_karras": ("DPMSolverMultistepScheduler",
                           {"use_karras_sigmas": True,
                            "algorithm_type": "sde-dpmsolver++"}),
}
PIPELINES = {"txt2img": 0, "img2img": 1, "inpaint": 2, "xl": 3}

N = 20  # latents [1, 4, 5, 1]: small, >= 16 and not a multiple of 16, so
       # that torch.randn takes its 16-wide path with the tail redrawn


def s16(b, text):
    data = text.encode()
    b += struct.pack("<H", len(data)) + data


def floats(b, values):
    values = np.asarray(values, dtype=np.float32).ravel()
    b += struct.pack("<i", len(values)) + values.astype("<f4").tobytes()


def pipeline_fixups(scheduler, pipeline):
    """What StableDiffusion{,Img2Img,Inpaint}Pipeline.__init__ change."""
    from diffusers.configuration_utils import FrozenDict
    if pipeline == "xl":
        return
    config = scheduler.config
    if hasattr(config, "steps_offset") and config.steps_offset != 1:
        new = dict(scheduler.config)
        new["steps_offset"] = 1
        scheduler._internal_dict = FrozenDict(new)
    if pipeline in ("txt2img", "img2img"):
        if hasattr(scheduler.config, "clip_sample") and \
                scheduler.config.clip_sample is True:
            new = dict(scheduler.config)
            new["clip_sample"] = False
            scheduler._internal_dict = FrozenDict(new)
    else:
        if hasattr(scheduler.config, "skip_prk_steps") and \
                scheduler.config.skip_prk_steps is False:
            new = dict(scheduler.config)
            new["skip_prk_steps"] = True
            scheduler._internal_dict = FrozenDict(new)


def model(latent_input, t):
    x = latent_input.numpy().astype(np.float32).ravel()
    bias = np.array([math.sin(float(t) / 100.0 + 0.37 * k) for k in range(N)],
                    dtype=np.float32)
    out = np.float32(0.5) * x + bias
    return torch.from_numpy(out.reshape(latent_input.shape))


def image_latents():
    return np.array([0.8 * math.cos(0.3 * k + 0.5) for k in range(N)],
                    dtype=np.float32)


def write_run(b, label, folder, name, steps, pipeline="txt2img", eta=0.0,
              seed=0, strength=None):
    import diffusers
    folder_class = getattr(diffusers, folder["_class_name"])
    scheduler = folder_class.from_config(dict(folder))
    pipeline_fixups(scheduler, pipeline)
    if name:
        cls, kwargs = NAMES[name]
        scheduler = getattr(diffusers, cls).from_config(scheduler.config,
                                                        **kwargs)
    scheduler.set_timesteps(steps)
    generator = torch.Generator().manual_seed(seed)
    shape = (1, 4, 5, 1)
    first = 0
    timesteps = scheduler.timesteps
    sigma = float(scheduler.init_noise_sigma)
    if strength is None:
        latents = torch.randn(shape, generator=generator) * \
            scheduler.init_noise_sigma
    else:
        fake = types.SimpleNamespace(scheduler=scheduler)
        timesteps, _ = diffusers.StableDiffusionImg2ImgPipeline.get_timesteps(
            fake, steps, strength, "cpu")
        first = len(scheduler.timesteps) - len(timesteps)
        noise = torch.randn(shape, generator=generator)
        init = torch.from_numpy(image_latents().reshape(shape))
        latents = scheduler.add_noise(init, noise, timesteps[:1])
    step_kwargs = {}
    parameters = inspect.signature(scheduler.step).parameters
    if "eta" in parameters:
        step_kwargs["eta"] = eta
    if "generator" in parameters:
        step_kwargs["generator"] = generator
    samples = [latents.numpy().copy()]
    for t in timesteps:
        latent_input = scheduler.scale_model_input(latents, t)
        output = model(latent_input, t)
        latents = scheduler.step(output, t, latents, **step_kwargs,
                                 return_dict=False)[0]
        samples.append(latents.numpy().copy())

    b += b"\x01"
    s16(b, label)
    entries = [(k, v) for k, v in folder.items() if k != "_class_name"]
    b += struct.pack("<H", len(entries))
    for key, value in entries:
        s16(b, key)
        if isinstance(value, bool):
            b += b"\x02" + struct.pack("<B", value)
        elif isinstance(value, str):
            b += b"\x00"
            s16(b, value)
        elif value is None:
            b += b"\x03"
        elif isinstance(value, (int, float)):
            b += b"\x01" + struct.pack("<d", value)
        else:
            raise ValueError(f"{key}: {value!r}")
    s16(b, folder["_class_name"])
    s16(b, name or "")
    b += struct.pack("<BdiQid", PIPELINES[pipeline], eta, steps, seed, N,
                     -1.0 if strength is None else strength)
    floats(b, scheduler.timesteps.double().numpy())
    b += struct.pack("<fi", sigma, first)
    floats(b, np.stack(samples))
    return len(scheduler.timesteps)


def write_alphas(b, label, config):
    import diffusers
    scheduler = getattr(diffusers, config["_class_name"]).from_config(config)
    b += b"\x02"
    s16(b, label)
    entries = [(k, v) for k, v in config.items() if k != "_class_name"]
    b += struct.pack("<H", len(entries))
    for key, value in entries:
        s16(b, key)
        if isinstance(value, bool):
            b += b"\x02" + struct.pack("<B", value)
        elif isinstance(value, str):
            b += b"\x00"
            s16(b, value)
        else:
            b += b"\x01" + struct.pack("<d", value)
    s16(b, config["_class_name"])
    floats(b, scheduler.alphas_cumprod.numpy())


RANDN_CASES = [  # seed, the sizes drawn one after another
    (0, [16]), (0, [17]), (0, [100]), (0, [4 * 64 * 64]), (42, [4 * 64 * 64]),
    (1234, [3]), (5, [1]), (7, [15]), (2**32 + 5, [40]),
    (31337, [4 * 128 * 128]), (2**63 + 12345, [4 * 96 * 96 + 3]),
    (3, [5, 3, 7, 100, 2, 4 * 64 * 64, 1]),
    (9, [4 * 64 * 64, 4 * 64 * 64, 4 * 64 * 64]),
]


def randn_records():
    """Run in a subprocess per kernel: torch reads ATEN_CPU_CAPABILITY once."""
    out = bytearray()
    for seed, sizes in RANDN_CASES:
        generator = torch.Generator().manual_seed(seed)
        out += struct.pack("<QI", seed, len(sizes))
        for n in sizes:
            x = torch.randn(n, generator=generator).numpy()
            digest = 0xcbf29ce484222325
            for byte in x.astype("<f4").tobytes():
                digest = ((digest ^ byte) * 0x100000001b3) & (2**64 - 1)
            head = np.zeros(8, np.float32)
            head[:min(8, n)] = x[:8]
            out += struct.pack("<qQ", n, digest) + head.tobytes()
    return bytes(out)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--randn":
        sys.stdout.buffer.write(randn_records())
        return
    b = bytearray(b"TFMSCHED" + struct.pack("<I", 1))
    runs = 0
    for folder_label, folder, pipeline in (("sd15", SD15, "txt2img"),
                                           ("sd21", SD21, "txt2img"),
                                           ("sdxl", SDXL, "xl")):
        for name in [""] + list(NAMES):
            for steps in (3, 20):
                write_run(b, f"{folder_label}/{name or 'folder'}/{steps}",
                          folder, name, steps, pipeline, seed=steps)
                runs += 1
    extra = [
        ("zsnr/ddim/4", ZSNR, "", 4, {}),
        ("zsnr/euler/5", ZSNR, "euler", 5, {}),
        ("zsnr/euler_a/4", ZSNR, "euler_a", 4, {}),
        ("zsnr/dpm++2m/6", ZSNR, "dpm++2m", 6, {}),
        ("zsnr/dpm++2m_karras/6", ZSNR, "dpm++2m_karras", 6, {}),
        ("zsnr/pndm/5", ZSNR, "pndm", 5, {}),
        ("cosine/ddim-clip/7", COSINE, "", 7, {"pipeline": "xl"}),
        ("cosine/ddim-fixups/7", COSINE, "", 7, {}),
        ("cosine/euler/7", COSINE, "euler", 7, {}),
        ("cosine/dpm++2m/7", COSINE, "dpm++2m", 7, {}),
        ("sample/ddim/4", SAMPLE, "", 4, {}),
        ("sample/euler/4", SAMPLE, "euler", 4, {}),
        ("sample/dpm++2m/4", SAMPLE, "dpm++2m", 4, {}),
        ("sd21/ddim-eta/4", SD21, "", 4, {"eta": 0.6}),
        ("sd15/ddim-eta/20", SD15, "ddim", 20, {"eta": 1.0}),
        ("prk/pndm/4", PRK, "", 4, {"pipeline": "xl"}),
        ("prk/pndm/20", PRK, "", 20, {"pipeline": "xl"}),
        ("prk-v/pndm/9", PRK_V, "", 9, {"pipeline": "xl"}),
        ("prk/inpaint-fixup/6", PRK, "", 6, {"pipeline": "inpaint"}),
        ("sd15/pndm/1", SD15, "", 1, {}),
        ("sd15/euler_a/1", SD15, "euler_a", 1, {}),
        ("sd15/dpm++2m/1", SD15, "dpm++2m", 1, {}),
        ("dpm/order1/5", dict(DPM_OPTIONS, solver_order=1), "", 5, {}),
        ("dpm/heun/6", dict(DPM_OPTIONS, solver_type="heun"), "", 6, {}),
        ("dpm/sde-heun/6", dict(DPM_OPTIONS, solver_type="heun",
                                algorithm_type="sde-dpmsolver++"), "", 6, {}),
        ("dpm/sigma_min/6", dict(DPM_OPTIONS, final_sigmas_type="sigma_min",
                                 lower_order_final=False), "", 6, {}),
        ("dpm/euler_at_final/16", dict(DPM_OPTIONS, euler_at_final=True,
                                       final_sigmas_type="sigma_min"), "", 16,
         {}),
        ("dpm/lower_order_final-off/8", dict(
            DPM_OPTIONS, lower_order_final=False), "", 8, {}),
        ("dpm/lu_lambdas/7", dict(DPM_OPTIONS, use_lu_lambdas=True), "", 7, {}),
        ("dpm/clipped/7", dict(DPM_OPTIONS, lambda_min_clipped=-2.0,
                               timestep_spacing="linspace"), "", 7, {}),
        ("dpm/trailing-v/7", dict(DPM_OPTIONS, timestep_spacing="trailing",
                                  prediction_type="v_prediction"), "", 7, {}),
        ("dpm/karras-sigma-max/7", dict(DPM_OPTIONS, use_karras_sigmas=True,
                                        sigma_max=10.0), "", 7, {}),
        ("euler/trailing/6", EULER_OPTIONS, "", 6, {}),
        ("euler/log_linear/6", dict(EULER_OPTIONS,
                                    interpolation_type="log_linear"), "", 6,
         {}),
        ("euler/karras-range/6", dict(EULER_OPTIONS, use_karras_sigmas=True,
                                      sigma_min=0.05, sigma_max=20.0), "", 6,
         {}),
        ("euler/continuous-v/6", dict(EULER_OPTIONS, timestep_type="continuous",
                                      prediction_type="v_prediction",
                                      use_karras_sigmas=True), "", 6, {}),
        ("euler_a/trailing/6", EULER_OPTIONS, "euler_a", 6, {}),
    ]
    for label, folder, name, steps, options in extra:
        write_run(b, label, folder, name, steps, **options, seed=runs)
        runs += 1
    # Image-to-image: every scheduler from its first remaining timestep.
    for folder_label, folder, pipeline in (("sd15", SD15, "img2img"),
                                           ("sdxl", SDXL, "xl")):
        for name in [""] + list(NAMES):
            for steps, strength in ((10, 0.6), (12, 0.35), (4, 1.0)):
                write_run(b, f"{folder_label}/img2img/{name or 'folder'}/"
                             f"{steps}/{strength}", folder, name, steps,
                          pipeline, seed=runs, strength=strength)
                runs += 1
    for label, config in (
            ("linear", {"_class_name": "DDIMScheduler"}),
            ("scaled_linear", {"_class_name": "PNDMScheduler",
                               "beta_start": 0.00085, "beta_end": 0.012,
                               "beta_schedule": "scaled_linear"}),
            ("squaredcos_cap_v2", {"_class_name": "DDIMScheduler",
                                   "beta_schedule": "squaredcos_cap_v2"}),
            ("zsnr-euler", dict(ZSNR, _class_name="EulerDiscreteScheduler")),
            ("linear-1010", {"_class_name": "DDIMScheduler",
                             "num_train_timesteps": 1010,
                             "beta_start": 0.0002, "beta_end": 0.03})):
        write_alphas(b, label, config)
    for kernel, capability in ((0, "avx2"), (1, "default")):
        data = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--randn"],
            check=True, capture_output=True,
            env=dict(os.environ, ATEN_CPU_CAPABILITY=capability)).stdout
        b += b"\x03" + struct.pack("<BI", kernel, len(RANDN_CASES)) + data
    b += b"\x00"
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "wb") as f:
        f.write(b)
    print(f"{OUT}: {runs} runs, {len(b)} bytes")

if __name__ == "__main__":
    main()
