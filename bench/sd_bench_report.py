#!/usr/bin/env python3
"""The table of bench/sd_bench.sh: every cell of one results folder, with
issue 72's targets beside them. Prints Markdown, writes summary.json there.

    sd_bench_report.py RESULTS_DIR WEIGHTS_DIR

Columns: tfmc (the checkpoint's f32 weights), tfmc-DTYPE (--tfmc-dtypes),
diffusers, sd.cpp. Cells (medians of the timed runs):
- step: seconds per denoising step with guidance (tfmc: one @denoise on a
  batch of 2; diffusers: the UNet on a batch of 2; sd.cpp: its progress
  bar's s/it).
  The first step is not in the median: for tfmc and diffusers it is an
  untimed warm-up call, for sd.cpp the first of its --steps (its graph is
  built and allocated there);
- decode: seconds for one VAE decode of a 512x512 image (sd.cpp: its one
  decode_first_stage, graph building included);
- speedup: the peer's median step (decode) time over each tfmc column's;
  targets: tfmc >= 2x diffusers and >= 1.5x sd.cpp per step;
- convs / FP32 peak: the UNet's convolution FLOPs per step (sd_flops.py,
  from the config; diffusers' Conv2d hooks count them again) over the
  whole step's time, as a fraction of the FP32 peak hwlimits measured on
  the same threads. The step also runs attention and linear layers, so
  this is a lower bound on the convolutions' own rate (the target is
  >= 80%); "all counted FLOPs" adds the attention and linear layers';
- peak RSS: /usr/bin/time's maximum resident set of the process that ran
  the steps and decodes (tfmc: the library maps all three components'
  weights, pages resident where read; diffusers: UNet and VAE only, the
  text encoder not loaded; sd.cpp: the whole txt2img run, text encoder
  included), beside the folder's weights (all components, as stored);
  target: peak <= weights + 1 GB.
"""
import json
import os
import sys

PEERS = (("diffusers", "torch"), ("sd.cpp", "sdcpp"))


def load(path):
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def weight_bytes(folder):
    total = 0
    for comp, stem in (("unet", "diffusion_pytorch_model"),
                       ("vae", "diffusion_pytorch_model"),
                       ("text_encoder", "model")):
        with open(os.path.join(folder, comp, stem + ".safetensors"), "rb") as f:
            header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
        total += sum(v["data_offsets"][1] - v["data_offsets"][0]
                     for k, v in header.items() if k != "__metadata__")
    return total


def seconds(v):
    return "—" if v is None else (f"{v:.3f}" if v < 10 else f"{v:.2f}")


def main():
    results, weights = sys.argv[1], sys.argv[2]
    flops = load(os.path.join(results, "flops.json"))
    hw = load(os.path.join(results, "hw.json")) or {}
    tfmcs = sorted((f[:-5] for f in os.listdir(results)
                    if f.startswith("tfmc") and f.endswith(".json")),
                   key=lambda n: (n != "tfmc", n)) or ["tfmc"]
    engines = {n: load(os.path.join(results, n + ".json")) for n in tfmcs}
    for name, file in PEERS:
        engines[name] = load(os.path.join(results, file + ".json"))
    names = list(engines)
    peak = hw.get("fp32_peak_gflops")
    wbytes = weight_bytes(weights)
    step_flops = {k: 2 * v for k, v in flops["unet_forward"].items()}
    decode_flops = flops["vae_decode"]

    def cell(n, key):
        return (engines[n] or {}).get(key)

    def error(n):
        return "not run" if engines[n] is None else engines[n].get("error")

    rows = []

    def row(label, values):
        rows.append([label] + values)

    def measured(label, key):
        """Medians, or the engine's error where it failed."""
        row(label, [f"({error(n)[:70]})" if error(n) else seconds(cell(n, key))
                    for n in names])

    def listed(label, key):
        row(label, [", ".join(seconds(x) for x in cell(n, key) or []) or "—"
                    for n in names])

    def first(label, *keys):
        row(label, [seconds(next((cell(n, k) for k in keys if cell(n, k)), None))
                    for n in names])

    measured("UNet step with guidance, median (s)", "step_median_s")
    listed("  steps timed (s)", "step_s")
    first("  first step, not in the median (s)", "first_step_s", "unet_first_step_s")
    image = "x".join(str(8 * v) for v in flops["latent"])
    measured(f"VAE decode {image}, median (s)", "decode_median_s")
    listed("  decodes timed (s)", "decode_s")
    first("  first decode, not in the median (s)", "first_decode_s",
          "vae_first_decode_s")

    def ratio(n, peer, key):
        a, b = cell(n, key), cell(peer, key)
        return b / a if a and b else None

    for peer, _ in PEERS:
        cells = []
        for n in names:
            r, rd = ratio(n, peer, "step_median_s"), ratio(n, peer, "decode_median_s")
            cells.append("" if n not in tfmcs else
                         f"{'—' if r is None else f'{r:.2f}x'} / "
                         f"{'—' if rd is None else f'{rd:.2f}x'}")
        row(f"speedup over {peer}: step / decode", cells)

    def fraction(n, flop, key):
        t = cell(n, key)
        return flop / t / (peak * 1e9) if t and peak else None

    def percent(v):
        return "—" if v is None else f"{100 * v:.0f}%"

    for label, flop, key in (
            ("UNet convs / FP32 peak (conv FLOPs over the step's time)",
             step_flops["conv"], "step_median_s"),
            ("UNet all counted FLOPs / FP32 peak", step_flops["total"],
             "step_median_s"),
            ("VAE convs / FP32 peak", decode_flops["conv"], "decode_median_s")):
        row(label, [percent(fraction(n, flop, key)) for n in names])

    def rss(n):
        return cell(n, "time_peak_rss_mb")
    wmb = wbytes / 2**20
    row("peak RSS (MB)", ["—" if rss(n) is None else f"{rss(n):.0f}" for n in names])
    row(f"  minus the weights ({wmb:.0f} MB, all components)",
        ["—" if rss(n) is None else f"{rss(n) - wmb:+.0f} MB" for n in names])
    row("load (s)", [seconds(cell(n, "load_s")) for n in names])
    row("tfmc compile: wall, peak RSS, library",
        [f"{cell(n, 'compile_wall')}, {cell(n, 'compile_peak_rss_mb'):.0f} MB, "
         f"{cell(n, 'library_bytes') / 2**20:.0f} MB"
         if n in tfmcs and cell(n, "compile_wall") else "" for n in names])
    if any(cell(n, "pipeline_step_s") for n in tfmcs):
        row("generate_image: steps (s); whole call (s)",
            [", ".join(seconds(x) for x in cell(n, "pipeline_step_s")) +
             f"; {seconds(cell(n, 'pipeline_s'))}" if cell(n, "pipeline_step_s")
             else "" for n in names])
    if cell("sd.cpp", "sampling_s") is not None:
        row("sd.cpp: sampling, text encoding (s)",
            ["" if n != "sd.cpp" else
             f"{seconds(cell(n, 'sampling_s'))}, {seconds(cell(n, 'text_s'))}"
             for n in names])

    hooks = cell("diffusers", "unet_conv_flops_per_step")
    if hooks is None:
        check = "not counted"
    elif hooks == step_flops["conv"] and \
            cell("diffusers", "vae_conv_flops_per_decode") == decode_flops["conv"]:
        check = "the same"
    else:
        check = (f"DIFFERENT: {hooks} per step, "
                 f"{cell('diffusers', 'vae_conv_flops_per_decode')} per decode")
    print(f"latent {flops['latent'][0]}x{flops['latent'][1]}: a step (2 UNet "
          f"forwards) is {step_flops['conv'] / 1e9:.1f} GFLOP of convolutions, "
          f"{step_flops['total'] / 1e9:.1f} counted in all; a VAE decode "
          f"{decode_flops['conv'] / 1e9:.1f} GFLOP of convolutions "
          f"(diffusers' Conv2d hooks: {check})")
    print(f"machine, {hw.get('threads', '?')} threads: FP32 peak "
          f"{hw.get('fp32_peak_gflops', '?')} GFLOP/s, OpenBLAS SGEMM "
          f"{hw.get('openblas_sgemm_128x2304x768_gflops', '?')} GFLOP/s, read "
          f"{hw.get('read_gb_per_s', '?')} GB/s; threads used: " +
          ", ".join(f"{n} {cell(n, 'threads') or cell(n, 'threads_env') or '?'}"
                    for n in names))
    print()
    print("| cell | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")

    targets = {}
    main_engine = "tfmc"
    r = {peer: ratio(main_engine, peer, "step_median_s") for peer, _ in PEERS}
    conv = fraction(main_engine, step_flops["conv"], "step_median_s")
    limit = wmb + 1024
    for label, value, met in (
            ("step >= 2x diffusers", r["diffusers"] and f"{r['diffusers']:.2f}x",
             None if r["diffusers"] is None else r["diffusers"] >= 2),
            ("step >= 1.5x sd.cpp", r["sd.cpp"] and f"{r['sd.cpp']:.2f}x",
             None if r["sd.cpp"] is None else r["sd.cpp"] >= 1.5),
            ("convolutions >= 80% of FP32 peak (lower bound: all of the "
             "step's time)", conv and f"{100 * conv:.0f}%",
             None if conv is None else conv >= 0.8),
            (f"peak RSS <= weights + 1 GB ({limit:.0f} MB)",
             rss(main_engine) and f"{rss(main_engine):.0f} MB",
             None if rss(main_engine) is None else rss(main_engine) <= limit)):
        targets[label] = {"value": value, "met": met}
    print()
    print("| target (tfmc, f32 weights) | value | met |")
    print("|---|---|---|")
    for label, t in targets.items():
        met = "—" if t["met"] is None else ("yes" if t["met"] else "no")
        print(f"| {label} | {t['value'] or '—'} | {met} |")
    with open(os.path.join(results, "summary.json"), "w") as f:
        json.dump({"results": results, "weight_bytes": wbytes, "flops": flops,
                   "hw": hw, "engines": engines, "targets": targets}, f, indent=1)


if __name__ == "__main__":
    main()
