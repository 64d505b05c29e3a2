#!/usr/bin/env python3
"""Writes a Stable Diffusion fixture from a manifest (stdlib only, so that
CI builds the fixtures without a Python ML stack):

    make_sd_fixture.py MANIFEST OUT_DIR [--dtype f32|f16|bf16] [--variant fp16]
    make_sd_fixture.py --single-file MANIFEST OUT.safetensors [--dtype ...]

A manifest (Inputs/NAME.json, written by make_sd_goldens.py) holds a
published pipeline's files (model_index.json, and each component's
config.json, scheduler_config.json, tokenizer_config.json,
special_tokens_map.json, preprocessor_config.json) with only widths and
depths cut down, and every component's tensor names and shapes as diffusers
0.27.2 and transformers 4.40.2 save the cut configs.

OUT_DIR becomes the diffusers folder people download: model_index.json;
unet/ and vae/ (config.json, diffusion_pytorch_model.safetensors);
text_encoder/ (and SDXL's text_encoder_2/: config.json, model.safetensors);
tokenizer/ (and tokenizer_2/: vocab.json, merges.txt, tokenizer_config.json,
special_tokens_map.json); scheduler/scheduler_config.json; and
feature_extractor/preprocessor_config.json where the published folder has
one (the safety checker's folder is not written; model_index.json still
names it, as published). --dtype writes the weights as f16 or bf16 (the
default is the manifest's, f32); --variant fp16 (or the manifest's
`variant`) names the weight files diffusion_pytorch_model.fp16.safetensors
and model.fp16.safetensors, as the published fp16 variants are named.
Every weight is exactly representable in f32, f16 and bf16 (7 mantissa
bits, exponents in f16's normal range), so every dtype and variant holds
the same values and has the same goldens.

--single-file writes the same weights as one checkpoint with the original
LDM names (model.diffusion_model.*, first_stage_model.*, and
cond_stage_model.* or conditioner.embedders.*; the table is ldm_names.py),
with what the published single files hold beside them.

The weights are drawn from the manifest's seed and each tensor's name (the
same on every machine, in any order): magnitudes in [s, 2s) with random
signs, s a power of two near 0.65/sqrt(fan-in) (GroupNorm/LayerNorm
weights positive in [0.5, 1), biases in [1/32, 1/16)), shifted by the
manifest's `gains` (powers of two, by fnmatch pattern on "component/name").

The tokenizer is CLIP's format with a small vocabulary: the 256 byte
characters, the same with "</w>", merges learned here from CORPUS (as many
as the manifest asks), then <|startoftext|> and <|endoftext|>.
"""
import array
import collections
import fnmatch
import functools
import json
import math
import os
import random
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ldm_names  # noqa: E402

# Words the merges are learned from: captions of the kind prompts are.
CORPUS = """
a photograph of an astronaut riding a horse on the moon , highly detailed
a painting of a city at night with neon lights and rain in the streets
a portrait of a woman with red hair in a green dress , oil on canvas
a cat sitting on a wooden table next to a cup of coffee in the morning
an old castle on a hill above a river valley at sunset , golden hour
a bowl of fruit with apples oranges and bananas , still life , studio light
a futuristic car driving through a desert landscape under a purple sky
the mountains are covered in snow and the lake reflects the clouds
children playing football in a park during summer , wide angle photo
a watercolor illustration of a fox in a forest full of flowers and trees
a close up photo of a dog wearing sunglasses on the beach , bokeh
an ancient temple hidden in the jungle , cinematic lighting , concept art
a robot reading a book in a library with tall shelves and warm light
a small boat floating on a calm ocean under the stars , digital art
a bridge over a river in a quiet village , autumn leaves , soft focus
a steaming bowl of ramen with eggs and noodles , food photography
a knight in shining armor standing in front of a dragon , fantasy art
a modern kitchen interior with white cabinets and large windows
an owl perched on a branch at dusk , detailed feathers , nature photo
a busy market street in the afternoon with colorful umbrellas and people
a lighthouse on a rocky coast during a storm with crashing waves
a spaceship orbiting a blue planet with rings , science fiction scene
a field of sunflowers under a clear sky , vibrant colors , high resolution
a chess board with wooden pieces on a table , shallow depth of field
a girl holding an umbrella walking through the rain in tokyo at night
a sketch of a vintage train station with travelers and luggage
a waterfall in a tropical forest with mist and sunlight through leaves
a ceramic vase with blue patterns on a marble floor , product shot
an elephant walking across the savanna at dawn , national geographic
a cozy cabin in the woods with smoke rising from the chimney in winter
"""


def bytes_to_unicode():
    """CLIP's (and GPT-2's) byte characters, in vocabulary order."""
    bs = (list(range(ord("!"), ord("~") + 1)) +
          list(range(ord("\u00a1"), ord("\u00ac") + 1)) +
          list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


@functools.lru_cache(maxsize=None)
def learn_merges(count):
    """The first `count` merges of byte-level BPE over CORPUS, words ending
    in "</w>" as CLIP's; the most frequent pair first, ties broken by the
    pair's spelling (largest first)."""
    encoder = bytes_to_unicode()
    words = collections.Counter(
        tuple(encoder[b] for b in w.encode("utf-8"))
        for w in CORPUS.lower().split())
    words = {w[:-1] + (w[-1] + "</w>",): n for w, n in words.items()}
    merges = []
    while len(merges) < count:
        pairs = collections.Counter()
        for w, n in words.items():
            for pair in zip(w, w[1:]):
                pairs[pair] += n
        if not pairs:
            raise SystemExit(f"CORPUS gives only {len(merges)} merges, "
                             f"{count} asked")
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        merges.append(best)
        merged = {}
        for w, n in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] = n
        words = merged
    return merges


def write_tokenizer(spec, out):
    os.makedirs(out, exist_ok=True)
    merges = learn_merges(spec["merges"])
    pieces = list(bytes_to_unicode().values())
    pieces += [p + "</w>" for p in pieces]
    pieces += ["".join(m) for m in merges]
    pieces += ["<|startoftext|>", "<|endoftext|>"]
    vocab = {}
    for p in pieces:
        vocab.setdefault(p, len(vocab))
    if len(vocab) != len(pieces):
        raise SystemExit("a merge repeats a token")
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{a} {b}\n")
    for name, content in spec["files"].items():
        write_json(os.path.join(out, name), content)
    return len(vocab)


def write_json(path, content):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(content, f, indent=2, ensure_ascii=False)
        f.write("\n")


def count_of(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def exponent(manifest, comp, name, shape):
    """(e, signed): values in [2^e, 2^(e+1)), random signs when signed."""
    module = name.rsplit(".", 1)[0].rsplit(".", 1)[-1]
    if len(shape) == 1 and name.endswith(".weight") and "norm" in module:
        e, signed = -1, False
    elif name.endswith(".bias") or len(shape) <= 1:
        e, signed = -5, True
    else:
        fan_in = count_of(shape[1:])
        e, signed = round(math.log2(0.65 / math.sqrt(fan_in))), True
    for pattern, shift in manifest.get("gains", {}).items():
        if fnmatch.fnmatchcase(f"{comp}/{name}", pattern):
            e += shift
    if not -14 <= e <= 14:
        raise SystemExit(f"{comp}/{name}: 2^{e} is outside f16's normal range")
    return e, signed


def random_f32(manifest, comp, name, shape, tag=""):
    """The tensor's values as little-endian f32 bytes: 7 random mantissa
    bits, exponent e, random sign (see exponent())."""
    e, signed = exponent(manifest, comp, name, shape)
    n = count_of(shape)
    rng = random.Random(f"{manifest['seed']}/{tag}{comp}/{name}")
    raw = rng.randbytes(2 * n)
    biased = 127 + e
    low = bytes(((biased & 1) << 7) | (b & 0x7F) for b in range(256))
    high = bytes(((b & 0x80) if signed else 0) | (biased >> 1)
                 for b in range(256))
    data = bytearray(4 * n)
    data[2::4] = raw[0::2].translate(low)
    data[3::4] = raw[1::2].translate(high)
    return bytes(data)


def convert(f32, dtype):
    """f32 bytes as `dtype` bytes (exact: the values have 7 mantissa bits)."""
    if dtype == "f32":
        return f32
    if dtype == "bf16":
        out = bytearray(len(f32) // 2)
        out[0::2] = f32[2::4]
        out[1::2] = f32[3::4]
        return bytes(out)
    values = array.array("f")
    values.frombytes(f32)
    if sys.byteorder != "little":
        values.byteswap()
    return struct.pack(f"<{len(values)}e", *values)


ST_DTYPES = {"f32": "F32", "f16": "F16", "bf16": "BF16", "i64": "I64"}


def write_safetensors(path, tensors):
    """tensors: [(name, dtype, shape, bytes)], written sorted by name."""
    header, offset = {}, 0
    tensors = sorted(tensors, key=lambda t: t[0])
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": ST_DTYPES[dtype], "shape": list(shape),
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
    header["__metadata__"] = {"format": "pt"}
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for _, _, _, blob in tensors:
            f.write(blob)


WEIGHT_FILES = {"unet": "diffusion_pytorch_model", "vae": "diffusion_pytorch_model",
                "text_encoder": "model", "text_encoder_2": "model"}


def load_manifest(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_fixture(manifest, out, dtype=None, variant=None):
    if isinstance(manifest, str):
        manifest = load_manifest(manifest)
    dtype = dtype or manifest.get("dtype", "f32")
    variant = variant or manifest.get("variant")
    os.makedirs(out, exist_ok=True)
    write_json(os.path.join(out, "model_index.json"), manifest["model_index"])
    for comp, spec in manifest["components"].items():
        folder = os.path.join(out, comp)
        os.makedirs(folder, exist_ok=True)
        if "bpe" in spec:
            write_tokenizer(spec["bpe"], folder)
            continue
        for name, content in spec.get("files", {}).items():
            write_json(os.path.join(folder, name), content)
        if "tensors" not in spec:
            continue
        write_json(os.path.join(folder, "config.json"), spec["config"])
        tensors = [(name, dtype, shape,
                    convert(random_f32(manifest, comp, name, shape), dtype))
                   for name, shape in spec["tensors"]]
        stem = WEIGHT_FILES[comp] + (f".{variant}" if variant else "")
        write_safetensors(os.path.join(folder, stem + ".safetensors"), tensors)


def linspace(start, end, steps):
    """torch.linspace in float64 (its two-sided formula)."""
    step = (end - start) / (steps - 1)
    half = steps // 2
    return [start + step * i if i < half else end - step * (steps - i - 1)
            for i in range(steps)]


def schedule_buffers():
    """ldm's LatentDiffusion.register_schedule buffers (v_posterior 0) for
    the scaled-linear betas of SD 1.x and 2.x, as f32."""
    betas = [b * b for b in linspace(0.00085 ** 0.5, 0.012 ** 0.5, 1000)]
    alphas = [1.0 - b for b in betas]
    ac, p = [], 1.0
    for a in alphas:
        p *= a
        ac.append(p)
    acp = [1.0] + ac[:-1]
    pv = [b * (1 - q) / (1 - c) for b, q, c in zip(betas, acp, ac)]
    return {
        "betas": betas,
        "alphas_cumprod": ac,
        "alphas_cumprod_prev": acp,
        "sqrt_alphas_cumprod": [math.sqrt(c) for c in ac],
        "sqrt_one_minus_alphas_cumprod": [math.sqrt(1 - c) for c in ac],
        "log_one_minus_alphas_cumprod": [math.log(1 - c) for c in ac],
        "sqrt_recip_alphas_cumprod": [math.sqrt(1 / c) for c in ac],
        "sqrt_recipm1_alphas_cumprod": [math.sqrt(1 / c - 1) for c in ac],
        "posterior_variance": pv,
        "posterior_log_variance_clipped": [math.log(max(v, 1e-20)) for v in pv],
        "posterior_mean_coef1": [b * math.sqrt(q) / (1 - c)
                                 for b, q, c in zip(betas, acp, ac)],
        "posterior_mean_coef2": [(1 - q) * math.sqrt(a) / (1 - c)
                                 for a, q, c in zip(alphas, acp, ac)],
    }


def transposed(f32, shape):
    values = array.array("f")
    values.frombytes(f32)
    rows, cols = shape
    out = array.array("f", (values[r * cols + c]
                            for c in range(cols) for r in range(rows)))
    return out.tobytes()


def single_file_tensors(manifest, dtype=None):
    """[(name, dtype, shape, bytes)] of the LDM single-file checkpoint."""
    dtype = dtype or manifest.get("dtype", "f32")
    kind = manifest["single_file"]["layout"]
    comps = manifest["components"]
    shapes = {comp: dict((n, s) for n, s in spec["tensors"])
              for comp, spec in comps.items() if "tensors" in spec}
    out = []
    for ldm, comp, sources, transform in ldm_names.layout(manifest):
        blobs = [random_f32(manifest, comp, n, shapes[comp][n]) for n in sources]
        shape = list(shapes[comp][sources[0]])
        if transform == "concat":
            shape[0] *= len(sources)
            blob = b"".join(blobs)
        elif transform == "transpose":
            blob = transposed(blobs[0], shape)
            shape = shape[::-1]
        elif transform == "conv1x1":
            blob, shape = blobs[0], shape + [1, 1]
        else:
            blob = blobs[0]
        out.append((ldm, dtype, shape, convert(blob, dtype)))
    position_ids = struct.pack("<77q", *range(77))
    for comp, (style, prefix) in ldm_names.TEXT_PREFIXES[kind].items():
        if style == "hf":
            out.append((prefix + "text_model.embeddings.position_ids", "i64",
                        [1, 77], position_ids))
            continue
        config = comps[comp]["config"]
        hidden = config["hidden_size"]
        extra = []
        if kind == "sd2":
            # OpenCLIP's last layer, which SD 2.x does not use, and the
            # tower's projection (a CLIPTextModel has none).
            last = config["num_hidden_layers"]
            extra = [(n.replace("layers.0.", f"layers.{last}.", 1), s)
                     for n, s in comps[comp]["tensors"]
                     if n.startswith("text_model.encoder.layers.0.")]
            extra.append(("text_projection.weight", [hidden, hidden]))
        shapes_extra = dict(extra)
        for ldm, sources, transform in ldm_names.openclip_names(
                [n for n, _ in extra]):
            blobs = [random_f32(manifest, comp, n, shapes_extra[n], "ldm-extra/")
                     for n in sources]
            shape = list(shapes_extra[sources[0]])
            if transform == "concat":
                shape[0] *= len(sources)
                blob = b"".join(blobs)
            elif transform == "transpose":
                blob, shape = transposed(blobs[0], shape), shape[::-1]
            else:
                blob = blobs[0]
            out.append((prefix + ldm, dtype, shape, convert(blob, dtype)))
        out.append((prefix + "logit_scale", dtype, [],
                    convert(struct.pack("<f", 4.625), dtype)))
    if kind in ("sd1", "sd2"):
        for name, values in schedule_buffers().items():
            out.append((name, "f32", [1000], struct.pack("<1000f", *values)))
    return out


def write_single_file(manifest, path, dtype=None):
    if isinstance(manifest, str):
        manifest = load_manifest(manifest)
    write_safetensors(path, single_file_tensors(manifest, dtype))


def main(argv):
    options = {}
    rest = []
    i = 0
    while i < len(argv):
        if argv[i] in ("--dtype", "--variant"):
            options[argv[i][2:]] = argv[i + 1]
            i += 2
        else:
            rest.append(argv[i])
            i += 1
    if options.get("dtype") not in (None, "f32", "f16", "bf16"):
        sys.exit(f"--dtype {options['dtype']}: f32, f16 or bf16")
    if rest[:1] == ["--single-file"] and len(rest) == 3:
        if "variant" in options:
            sys.exit("--variant names a diffusers folder's files")
        write_single_file(rest[1], rest[2], options.get("dtype"))
    elif len(rest) == 2:
        write_fixture(rest[0], rest[1], options.get("dtype"),
                      options.get("variant"))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
