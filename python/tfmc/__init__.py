"""tfmc from Python: compile a model, load the library, call it.

    import tfmc
    tfmc.compile("TinyLlama-1.1B", "libtiny.so")
    m = tfmc.load("libtiny.so")
    print(m.generate("Once upon a time", max_tokens=32))
    for piece in m.generate("Once", max_tokens=8, stream=True):
        print(piece, end="")
    e = tfmc.load("libminilm.so").embed(["a sentence", "another"])  # [2, 384]
    print(tfmc.load("libwav2vec2.so").transcribe("speech.wav"))

ctypes over the C API (runtime/include/tfm/tfm_runtime.h), which a model
library brings with it (libtfmrt.so): nothing to build, and ctypes releases
the GIL for every call into the runtime. NumPy arrays go in without copies
where they are contiguous and of the entry point's dtype.
"""

import codecs
import contextlib
import ctypes
import json
import math
import os
import queue
import re
import subprocess
import sys
import threading
import weakref

import numpy as np

from tfmc._abi import (ROLE_NAMES, DTYPE_NAMES, NUMPY_DTYPES, Status,
                       Tensor, GenerateOptions, GenerateResult,
                       GenerationRules, ModelDesc, WhisperOptions,
                       CtcChunking,
                       SamplerOptions, ON_TOKEN, ImageRequest, ON_IMAGE_STEP,
                       declare)

__all__ = ["TfmcError", "compile", "load", "Model", "Engine"]

_DTYPE_CODES = {name: code for code, name in DTYPE_NAMES.items()}
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


class TfmcError(Exception):
    """What tfmc or the runtime said was wrong."""


_LIBC = ctypes.CDLL(None)
_LIBC.free.argtypes = [ctypes.c_void_p]


def _built_library(name, variable):
    """The shared library `name`: where $`variable` says, beside the built
    runtime (build/lib), or where the loader finds it; None when none
    loads."""
    built = os.path.join(_ROOT, "build", "lib", name)
    for path in (os.environ.get(variable), built, name):
        if not path:
            continue
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def _media_library():
    """libtfmrt_media.so (audio decoding, resampling), beside the built
    libtfmrt.so or where the loader finds it; None when there is none."""
    library = _built_library("libtfmrt_media.so", "TFM_MEDIA_LIBRARY")
    if library is None:
        return None
    library.tfm_audio_read.restype = ctypes.c_int
    library.tfm_audio_read.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p,
        ctypes.POINTER(ctypes.POINTER(ctypes.c_float)),
        ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(Status)]
    library.tfm_log_mel.restype = ctypes.c_int
    library.tfm_log_mel.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(ctypes.c_float), ctypes.c_int64,
        ctypes.POINTER(ctypes.c_float), ctypes.c_int64,
        ctypes.POINTER(Status)]
    library.tfm_audio_read_all.restype = ctypes.c_int
    library.tfm_audio_read_all.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_double,
        ctypes.POINTER(ctypes.POINTER(ctypes.c_float)),
        ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(Status)]
    library.tfm_image_tokens.restype = ctypes.c_int
    library.tfm_image_tokens.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.POINTER(Tensor),
        ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(Status)]
    library.tfm_image_tokens_memory.restype = ctypes.c_int
    library.tfm_image_tokens_memory.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint8), ctypes.c_size_t,
        ctypes.POINTER(Tensor), ctypes.POINTER(ctypes.c_int64),
        ctypes.POINTER(Status)]
    library.tfm_image_encode_png.restype = ctypes.c_int
    library.tfm_image_encode_png.argtypes = [
        ctypes.POINTER(ctypes.c_float), ctypes.c_int64, ctypes.c_int64,
        ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)),
        ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(Status)]
    library.tfm_image_tiles.restype = ctypes.c_int
    library.tfm_image_tiles.argtypes = [
        ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
        ctypes.POINTER(Tensor), ctypes.POINTER(ctypes.c_int64),
        ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(Status)]
    library.tfm_log_mel_all.restype = ctypes.c_int
    library.tfm_log_mel_all.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(ctypes.c_float), ctypes.c_int64,
        ctypes.POINTER(ctypes.POINTER(ctypes.c_float)),
        ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(Status)]
    return library


def _runtime_library():
    """libtfmrt.so, for what the package asks of the runtime before a model
    library is loaded (tfm_model_library_check): the built one, or where
    the loader finds it; None when there is none. A model library loaded
    afterwards binds to this copy (the loader matches its name)."""
    library = _built_library("libtfmrt.so", "TFM_RUNTIME_LIBRARY")
    if library is None:
        return None
    library.tfm_model_library_check.restype = ctypes.c_int
    library.tfm_model_library_check.argtypes = [ctypes.c_char_p,
                                                ctypes.POINTER(Status)]
    return library


def _c_text(text, what):
    """`text` as the UTF-8 of a C string. The runtime reads text up to its
    first NUL, so a NUL would cut it there silently ("Once\0 upon" would
    be "Once"): refused by offset, as is text UTF-8 cannot hold (a lone
    surrogate)."""
    if not isinstance(text, str):
        raise TfmcError(f"{what} must be a str, not {type(text).__name__}")
    at = text.find("\0")
    if at >= 0:
        raise TfmcError(f"{what} contains a NUL character at offset {at}")
    try:
        return text.encode()
    except UnicodeEncodeError as e:
        raise TfmcError(f"{what} is not valid Unicode: {e.reason} at offset "
                        f"{e.start}") from None


def _c_path(path, what):
    """A file's path for the runtime: as _c_text, a NUL would cut it."""
    data = os.fsencode(path)
    at = data.find(b"\0")
    if at >= 0:
        raise TfmcError(f"{what} contains a NUL character at offset {at}")
    return data


def _is_integer(value):
    return isinstance(value, (int, np.integer)) and \
        not isinstance(value, (bool, np.bool_))


def _shown(value):
    """`value` as a message shows it: NumPy scalars as Python's."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _c_integer(value, what, low, high):
    """An integer option for a C field of range [low, high]: ctypes would
    keep its low bits silently (2**32 + 8 as 8)."""
    if not _is_integer(value):
        raise TfmcError(f"{what} must be an integer, got {_shown(value)}")
    if value < low:
        raise TfmcError(f"{what} must be at least {low}, got {value}")
    if value > high:
        raise TfmcError(f"{what} must be at most {high}, got {value}")
    return int(value)


_INT32_MAX, _INT64_MAX = 2**31 - 1, 2**63 - 1


def _integer_array(value, dtype, what):
    """`value` as a contiguous array of the integer NumPy `dtype`, checked
    first: a cast would truncate floats (1.9 as 1) and wrap integers the
    dtype cannot hold (2**33 + 5 as 5), so both are refused by position."""
    array = np.asarray(value)
    if array.size and array.dtype.kind not in "iu":
        flat = array.ravel()
        bad = next((i for i, v in enumerate(flat) if not _is_integer(v)), None)
        if bad is not None:
            raise TfmcError(f"{what}: {_shown(flat[bad])} at position {bad} "
                            "is not an integer")
    info = np.iinfo(dtype)
    flat = array.ravel()
    outside = np.flatnonzero((flat < info.min) | (flat > info.max)) \
        if array.size else []
    if len(outside):
        at = int(outside[0])
        raise TfmcError(f"{what}: {int(flat[at])} at position {at} does not "
                        f"fit {np.dtype(dtype).name}")
    return np.ascontiguousarray(array, dtype=dtype)


def _tensor_of(array, dtype):
    """A tfm_tensor over contiguous `array` (of tfm dtype name `dtype`), in
    place: the array must outlive the call."""
    tensor = Tensor()
    tensor.data = array.ctypes.data
    tensor.dtype = _DTYPE_CODES[dtype]
    tensor.rank = array.ndim
    for k, n in enumerate(array.shape):
        tensor.shape[k] = n
    return tensor


class _OutputBuffer:
    """Releases one output tensor of tfm_model_call once nothing views it
    (see Model._output_array). Holds the library, so the runtime outlives
    its buffers."""

    def __init__(self, library, tensor):
        self._library = library
        self._tensor = Tensor()
        ctypes.pointer(self._tensor)[0] = tensor

    def __del__(self):
        self._library.tfm_tensor_release(ctypes.byref(self._tensor))


def _image_media():
    """libtfmrt_media.so for images, or TfmcError saying it is missing."""
    media = _media_library()
    if media is None:
        raise TfmcError("libtfmrt_media.so (image decoding) is not found: "
                        "set TFM_MEDIA_LIBRARY, or give preprocessed pixels")
    return media


def _tfmc_path():
    built = os.path.join(_ROOT, "build", "bin", "tfmc")
    return os.environ.get("TFMC", built if os.path.exists(built) else "tfmc")


def compile(model, output, weights_dtype=None, kv_dtype=None, target=None,
            emit="lib", args=(), progress=True, lora=(), lora_slots=0,
            lora_rank=None, compute_dtype=None, mmproj=None):
    """Runs tfmc on `model` (a model folder, GGUF file, .mlir, ...) writing
    `output` (a shared library by default). `compute_dtype`: what the GEMMs
    multiply in, "bf16", "int8" or "f32" (tfmc --compute-dtype). `mmproj`:
    llama.cpp's mmproj file, a GGUF model's image side (tfmc --mmproj). `lora`: PEFT LoRA adapter
    folders (or GGUF LoRA files, for a GGUF model) merged into a decoder's
    weights (tfmc --lora), each a path or a (path, scale) pair; one path
    alone may be given bare. `lora_slots` > 0: slots for adapters loaded at
    run time (Model.load_lora), of rank up to `lora_rank` (16). Its
    progress goes to stderr unless `progress` is False; a failure raises
    TfmcError with tfmc's error lines."""
    command = [_tfmc_path(), str(model), "-o", str(output), "--emit=" + emit]
    if lora_slots:
        command.append(f"--lora-slots={int(lora_slots)}")
    if lora_rank is not None:
        command.append(f"--lora-rank={int(lora_rank)}")
    for adapter in [lora] if isinstance(lora, (str, os.PathLike)) else lora:
        path, scale = adapter if isinstance(adapter, tuple) else (adapter, None)
        command.append("--lora=" + str(path) +
                       ("" if scale is None else f":{float(scale)!r}"))
    if weights_dtype:
        command.append("--weights-dtype=" + weights_dtype)
    if kv_dtype:
        command.append("--kv-dtype=" + kv_dtype)
    if compute_dtype:
        command.append("--compute-dtype=" + compute_dtype)
    if mmproj:
        command.append("--mmproj=" + str(mmproj))
    if target:
        command.append("--target=" + target)
    if not progress:
        command.append("-q")
    command += list(args)
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    errors = []
    for line in process.stderr:
        if "error" in line:
            errors.append(line.rstrip("\n"))
        if progress:
            sys.stderr.write(line)
    if process.wait() != 0:
        raise TfmcError("\n".join(errors) or
                        f"tfmc exited with status {process.returncode}")
    return output


def load(path, symbol=None):
    """The model compiled into the shared library `path` (tfmc
    --emit=lib): libNAME.so exports NAME_model, or `symbol`."""
    return Model(path, symbol)


def _check(code, status):
    if code != 0:
        raise TfmcError(status.message.decode(errors="replace"))


class Model:
    """A loaded model: its description, tokenizer, entry points, and the
    language models' generation."""

    def __init__(self, path, symbol=None):
        self._handle = None
        # Calls in flight (_using) and engines, which close() waits for and
        # closes before it frees the model.
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._uses, self._closed = 0, False
        self._engines = weakref.WeakSet()
        # Draft models of speculative decoding, loaded through this
        # model's runtime: id(Model) -> (Model, handle).
        self._drafts = {}
        path = os.path.abspath(path)
        # A library cut short inside its ELF image would be mapped by
        # dlopen and kill the process with SIGBUS: refused here by name.
        runtime = _runtime_library()
        if runtime is not None:
            status = Status()
            _check(runtime.tfm_model_library_check(_c_path(path, "the path"),
                                                   ctypes.byref(status)),
                   status)
        try:
            self._library = ctypes.CDLL(path)
        except OSError as e:
            raise TfmcError(f"cannot load '{path}': {e}") from None
        declare(self._library)
        if symbol is None:
            stem = re.sub(r"^lib", "", os.path.basename(path)).split(".")[0]
            symbol = re.sub(r"[^A-Za-z0-9_]", "_", stem) + "_model"
        try:
            desc = ModelDesc.in_dll(self._library, symbol)
        except ValueError:
            raise TfmcError(f"'{path}' exports no '{symbol}' (tfmc --emit=lib "
                            "-o libNAME.so exports NAME_model)") from None
        self._desc_symbol = desc  # for models that take this one as a draft
        self._handle = ctypes.c_void_p()
        status = Status()
        _check(self._library.tfm_model_load(ctypes.byref(desc), None,
                                            ctypes.byref(self._handle),
                                            ctypes.byref(status)), status)
        self._desc = self._library.tfm_model_get_desc(self._handle).contents
        self._tokenizer = self._library.tfm_model_tokenizer(
            self._handle, ctypes.byref(status))
        self.description = self._describe()

    def close(self):
        """Frees the model: its engines are closed first, calls running on
        other threads (a streamed generation) stop at their next token and
        are waited for; every later use raises TfmcError."""
        lock = getattr(self, "_lock", None)
        if lock is None:  # __init__ failed before it
            return
        with lock:
            if self._closed:
                return
            self._closed = True  # no new use or engine from here on
            while self._uses:
                self._idle.wait()
            engines = list(self._engines)
        for engine in engines:
            engine.close()
        with lock:
            handle, self._handle = self._handle, None
            self._tokenizer = None
            drafts, self._drafts = self._drafts, {}
        for _, draft in drafts.values():
            self._library.tfm_model_free(draft)
        if handle:
            self._library.tfm_model_free(handle)

    def __del__(self):
        self.close()

    def _closed_error(self, what):
        return TfmcError(f"{what}: model '{self.description['name']}' is "
                         "closed")

    @contextlib.contextmanager
    def _using(self, what):
        """The model's handle for one use of the runtime, which close()
        waits for; TfmcError naming `what` once the model is closed (the
        runtime would read freed memory)."""
        with self._lock:
            if self._closed or not self._handle:
                raise self._closed_error(what)
            self._uses += 1
        try:
            yield self._handle
        finally:
            with self._lock:
                self._uses -= 1
                if not self._uses:
                    self._idle.notify_all()

    def _token_ids(self, ids, what):
        """`ids` as a list of ints in [0, vocab): refused by position
        otherwise, before ctypes keeps the low 32 bits of one (2**33 + 5
        would run as token 5) or a float is truncated."""
        if isinstance(ids, (str, bytes)):
            raise TfmcError(f"{what}: give text as str, or a list of token "
                            "ids")
        vocab = self.description["vocab_size"]
        out = []
        for i, token in enumerate(ids):
            if not _is_integer(token):
                raise TfmcError(f"{what}: token id {_shown(token)} at "
                                f"position {i} is not an integer")
            if not 0 <= token < vocab:
                raise TfmcError(f"{what}: token id {int(token)} at position "
                                f"{i} is out of range [0, {vocab})")
            out.append(int(token))
        return out

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # The model's description.

    def _describe(self):
        d = self._desc

        def tensors(count, array):
            return [{"role": ROLE_NAMES.get(array[i].role, array[i].role),
                     "dtype": DTYPE_NAMES[array[i].dtype],
                     "shape": [array[i].shape[k] for k in range(array[i].rank)]}
                    for i in range(count)]

        entries = {}
        for i in range(d.num_entry_points):
            e = d.entry_points[i]
            entries[e.name.decode()] = {
                "inputs": tensors(e.num_inputs, e.inputs),
                "outputs": tensors(e.num_outputs, e.outputs),
                "caches": e.num_caches}
        return {"name": d.name.decode(), "family": d.family.decode(),
                "vocab_size": d.vocab_size, "max_context": d.max_context,
                "bos_token": d.bos_token, "eos_token": d.eos_token,
                "stop_tokens": [d.stop_tokens[i]
                                for i in range(d.num_stop_tokens)],
                "add_bos": bool(d.add_bos),
                "labels": [d.labels[i].decode() for i in range(d.num_labels)],
                "entry_points": entries,
                "has_tokenizer": bool(self._tokenizer),
                "ranks": max(d.ranks, 1),
                "lora": self._describe_lora(d.lora),
                "logit_scale": d.logit_scale,
                "logit_bias": (d.logit_bias if d.sigmoid_scores else None),
                "text_pad_token": (d.text_pad_token if d.pad_texts
                                   else None),
                "sampling_rate": (d.waveform.contents.sampling_rate
                                  if d.waveform else None),
                "image_size": ((d.diffusion.contents.latent_height *
                                d.diffusion.contents.vae_scale_factor,
                                d.diffusion.contents.latent_width *
                                d.diffusion.contents.vae_scale_factor)
                               if d.diffusion else None),
                "latent_shape": ([d.diffusion.contents.latent_channels,
                                  d.diffusion.contents.latent_height,
                                  d.diffusion.contents.latent_width]
                                 if d.diffusion else None)}

    # Text.

    def _need_tokenizer(self):
        if not self._tokenizer:
            raise TfmcError(f"model '{self.description['name']}' was compiled "
                            "without a tokenizer: give token ids")

    def tokenize(self, text, framed=None):
        """The ids of `text`: a language model's prompt (with BOS where the
        model adds it), or with `framed` (the default for models that do
        not generate) an encoder's framed input ([CLS] ... [SEP])."""
        return self._tokenize(text, framed, "tokenize: the text")

    def _tokenize(self, text, framed, what):
        data = _c_text(text, what)
        with self._using(what.split(":")[0]):
            self._need_tokenizer()
            if framed is None:
                framed = not self._generates()
            count = ctypes.c_int64()
            status = Status()
            ids = (ctypes.c_int32 * (len(data) + 8))()
            if framed:
                code = self._library.tfm_tokenizer_encode_text(
                    self._tokenizer, data, None, ids, None, len(ids),
                    ctypes.byref(count), ctypes.byref(status))
            else:
                bos = self._desc.bos_token if self._desc.add_bos else -1
                code = self._library.tfm_tokenizer_encode(
                    self._tokenizer, data, bos, ids, len(ids),
                    ctypes.byref(count), ctypes.byref(status))
        _check(code, status)
        return list(ids[:count.value])

    def detokenize(self, ids):
        """The text of `ids` (special tokens left out)."""
        ids = self._token_ids(ids, "detokenize")
        out, previous = bytearray(), -1
        size = ctypes.c_size_t()
        bos = self._desc.bos_token
        with self._using("detokenize"):
            self._need_tokenizer()
            for token in ids:
                if not self._library.tfm_tokenizer_is_special(self._tokenizer,
                                                              token):
                    piece = self._library.tfm_tokenizer_decode(
                        self._tokenizer, previous, token, bos,
                        ctypes.byref(size))
                    if piece:
                        out += ctypes.string_at(piece, size.value)
                previous = token
        return out.decode(errors="replace")

    # Entry points.

    def call(self, entry, *args, **inputs):
        """Runs entry point `entry` on its inputs (positionally, or by role
        name: token_ids=..., features=...): NumPy arrays or lists, scalars
        for scalar inputs. Returns {role: array} of its outputs."""
        spec = self.description["entry_points"].get(entry)
        if spec is None:
            raise TfmcError(f"model '{self.description['name']}' has no "
                            f"entry point @{entry} (it has: " +
                            ", ".join(self.description["entry_points"]) + ")")
        if spec["caches"]:
            raise TfmcError(f"@{entry} takes caches: use generate()")
        given = list(args)
        for tensor in spec["inputs"][len(given):]:
            if tensor["role"] not in inputs:
                raise TfmcError(f"@{entry} needs its {tensor['role']} input")
            given.append(inputs.pop(tensor["role"]))
        if inputs or len(given) != len(spec["inputs"]):
            raise TfmcError(f"@{entry} takes {len(spec['inputs'])} inputs (" +
                            ", ".join(t["role"] for t in spec["inputs"]) + ")")
        arrays, tensors = [], (Tensor * len(given))()
        for i, (value, tensor) in enumerate(zip(given, spec["inputs"])):
            dtype = NUMPY_DTYPES[tensor["dtype"]]
            if tensor["dtype"] in ("i32", "i64", "i8"):
                array = _integer_array(value, dtype, f"input {i} "
                                       f"({tensor['role']}) of @{entry}")
            else:
                array = np.ascontiguousarray(value, dtype=dtype)
            arrays.append(array)  # alive through the call
            tensors[i] = _tensor_of(array, tensor["dtype"])
        outputs = (Tensor * len(spec["outputs"]))()
        status = Status()
        with self._using(f"call @{entry}") as handle:
            code = self._library.tfm_model_call(
                handle, entry.encode(), tensors, len(given), None, outputs,
                len(outputs), ctypes.byref(status))
        _check(code, status)
        return {tensor["role"]: self._output_array(out)
                for tensor, out in zip(spec["outputs"], outputs)}

    def _output_array(self, out):
        """An output of tfm_model_call as a NumPy array over the runtime's
        own buffer, no copy: the buffer is released (tfm_tensor_release)
        when the last array viewing it is gone."""
        shape = tuple(out.shape[k] for k in range(out.rank))
        dtype = np.dtype(NUMPY_DTYPES[DTYPE_NAMES[out.dtype]])
        count = int(np.prod(shape)) if shape else 1
        if count == 0 or not out.data:
            self._library.tfm_tensor_release(ctypes.byref(out))
            return np.empty(shape, dtype)
        buffer = (ctypes.c_char * (count * dtype.itemsize)).from_address(
            out.data)
        # The array keeps `buffer` alive, and `buffer` its owner.
        buffer._owner = _OutputBuffer(self._library, out)
        return np.frombuffer(buffer, dtype=dtype).reshape(shape)

    def generate_image(self, prompt, negative_prompt=None, steps=50,
                       guidance=7.5, seed=0, scheduler=None, noise=None,
                       progress=None, init_image=None, strength=None,
                       mask=None):
        """An image from a diffusion pipeline (tfmc on a Stable Diffusion
        folder): a NumPy float32 [height, width, 3] array in [0, 1], as
        diffusers' output_type="np". `noise` gives the initial latents
        ([4, height / 8, width / 8], diffusers' `latents=`); otherwise
        they are torch.randn from `seed`, as diffusers draws them.
        `scheduler` names another scheduler than the folder's ("euler_a",
        "dpm++2m_karras", ...); `progress(step, steps)` is called after each
        step. Image-to-image: `init_image` ([height, width, 3] in [0, 1])
        redrawn by `strength` (default 0.8); inpainting (an inpainting
        UNet): `mask` ([height, width] in [0, 1], 0.5 and above redrawn)
        over `init_image`."""
        size = self.description["image_size"]
        if size is None:
            raise TfmcError(f"model '{self.description['name']}' is not a "
                            "diffusion pipeline")
        height, width = size
        request = ImageRequest()
        request.prompt = _c_text(prompt, "the prompt")
        if negative_prompt is not None:
            request.negative_prompt = _c_text(negative_prompt,
                                              "the negative prompt")
        request.steps = _c_integer(steps, "steps", 1, 1000)
        if not isinstance(guidance, (int, float)) or guidance != guidance:
            raise TfmcError(f"guidance must be a number, got "
                            f"{_shown(guidance)}")
        request.guidance = float(guidance)
        request.seed = _c_integer(seed, "seed", 0, 2**64 - 1)
        if scheduler is not None:
            request.scheduler = _c_text(scheduler, "the scheduler")
        latents = None
        if noise is not None:
            shape = self.description["latent_shape"]
            latents = np.ascontiguousarray(noise, dtype=np.float32)
            if list(latents.shape) != shape:
                raise TfmcError(f"noise must be {shape}, got "
                                f"{list(latents.shape)}")
            request.noise = latents.ctypes.data_as(
                ctypes.POINTER(ctypes.c_float))
        kept = []  # the arrays the request points into, alive through it
        for name, value, shape in (("init_image", init_image,
                                    [height, width, 3]),
                                   ("mask", mask, [height, width])):
            if value is None:
                continue
            array = np.ascontiguousarray(value, dtype=np.float32)
            if list(array.shape) != shape:
                raise TfmcError(f"{name} must be {shape}, got "
                                f"{list(array.shape)}")
            kept.append(array)
            setattr(request, name,
                    array.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
        if strength is not None:
            if (not isinstance(strength, (int, float)) or
                    not 0 < strength <= 1):
                raise TfmcError(f"strength must be more than 0 and at most "
                                f"1, got {_shown(strength)}")
            request.strength = float(strength)
        if progress is not None:
            request.progress = ON_IMAGE_STEP(
                lambda user, step, steps: progress(step, steps))
        image = np.empty((height, width, 3), dtype=np.float32)
        notes = ctypes.c_char_p()
        status = Status()
        with self._using("generate_image") as handle:
            code = self._library.tfm_image_generate(
                handle, ctypes.byref(request),
                image.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                image.size, ctypes.byref(notes), ctypes.byref(status))
        _check(code, status)
        return image

    def embed(self, texts):
        """One vector per text (or list of token ids) through @embed
        (sentence embedders, CLIP's @embed_text): a NumPy [n, dim] array,
        or [dim] for one string or one list of token ids. Several texts go
        through the packed twin (@embed_batch) in one call where the model
        has it."""
        # One input: a string, or one list of token ids.
        single = isinstance(texts, str) or (
            len(texts) > 0 and isinstance(texts[0], (int, np.integer)))
        entry = next((e for e in ("embed", "embed_text")
                      if e in self.description["entry_points"]), None)
        if entry is None:
            raise TfmcError(f"model '{self.description['name']}' has no "
                            "@embed or @embed_text")
        inputs = [np.array(self._padded_text(t, f"embed: text {i}")
                           if isinstance(t, str) else
                           self._token_ids(t, f"embed: input {i}"), np.int32)
                  for i, t in enumerate([texts] if single else texts)]
        if not inputs:
            raise TfmcError("embed: no texts")
        spec = self.description["entry_points"][entry]["inputs"]
        types = len(spec) == 2 and spec[1]["role"] == "token_type_ids"
        packed = self.description["entry_points"].get(entry + "_batch")
        if packed is not None and len(inputs) > 1:
            ids = np.concatenate(inputs)
            given = [ids] + ([np.zeros_like(ids)] if types else []) + [
                np.array([len(i) for i in inputs], np.int32)]
            return self.call(entry + "_batch", *given)["embedding"]
        rows = [self.call(entry, i, *([np.zeros_like(i)] if types else []))[
            "embedding"] for i in inputs]
        return rows[0] if single else np.stack(rows)

    def _padded_text(self, text, where):
        """A text's ids, padded to the context where the model's texts are
        (SigLIP's, whose processor pads to max_length)."""
        ids = self._tokenize(text, None, where)
        pad = self.description["text_pad_token"]
        context = self.description["max_context"]
        if pad is not None and len(ids) < context:
            ids = list(ids) + [pad] * (context - len(ids))
        return ids

    def classify(self, inputs, top=None):
        """A classifier's @classify on text, token ids, or (image models)
        preprocessed pixels: its labels with their probabilities (softmax
        of the logits), most likely first, `top` of them (default all)."""
        if "classify" not in self.description["entry_points"]:
            raise TfmcError(f"model '{self.description['name']}' has no "
                            "@classify")
        spec = self.description["entry_points"]["classify"]["inputs"]
        if isinstance(inputs, str):
            inputs = np.array(self._tokenize(inputs, None,
                                             "classify: the text"), np.int32)
        given = [inputs]
        if len(spec) == 2 and spec[1]["role"] == "token_type_ids":
            given.append(np.zeros(len(inputs), np.int32))
        logits = self.call("classify", *given)["logits"].astype(np.float64)
        probabilities = np.exp(logits - logits.max())
        probabilities /= probabilities.sum()
        labels = self.description["labels"] or [
            str(i) for i in range(len(logits))]
        order = np.argsort(-probabilities, kind="stable")[:top]
        return [(labels[i], float(probabilities[i])) for i in order]

    # Speech.

    def read_audio(self, path, max_seconds=None):
        """An audio file (WAV, FLAC, Ogg, ...) as mono f32 samples at the
        model's rate: channels mixed down, resampled with libsoxr
        (tfm_audio_read, libtfmrt_media.so). Whisper's file is cut to its
        30 s unless `max_seconds` asks for all of it, up to that long
        (tfm_audio_read_all)."""
        media = _media_library()
        if media is None:
            raise TfmcError("libtfmrt_media.so (audio decoding) is not found: "
                            "set TFM_MEDIA_LIBRARY, or give samples")
        samples = ctypes.POINTER(ctypes.c_float)()
        count = ctypes.c_int64()
        status = Status()
        path = _c_path(path, "read_audio: the path")
        with self._using("read_audio") as handle:
            if max_seconds is None:
                code = media.tfm_audio_read(handle, path,
                                            ctypes.byref(samples),
                                            ctypes.byref(count),
                                            ctypes.byref(status))
            else:
                code = media.tfm_audio_read_all(
                    handle, path, float(max_seconds), ctypes.byref(samples),
                    ctypes.byref(count), ctypes.byref(status))
        _check(code, status)
        try:
            return np.ctypeslib.as_array(samples, (count.value,)).copy()
        finally:
            _LIBC.free(samples)

    def _take_text(self, text):
        """A malloc'd C string the runtime returned, as str, freed."""
        try:
            return ctypes.string_at(text.value).decode("utf-8", "replace")
        finally:
            _LIBC.free(text)

    def _seq2seq_text(self, source, beams, max_new_tokens, previous=None):
        """tfm_seq2seq_text of `source`; `previous`: Whisper's previous
        text, which conditions the output (tfm_seq2seq_previous_text)."""
        if beams is not None:
            _c_integer(beams, "beams", 1, _INT32_MAX)
        if max_new_tokens is not None:
            _c_integer(max_new_tokens, "max_new_tokens", 1, _INT64_MAX)
        tensor = _tensor_of(source,
                            "i32" if source.dtype == np.int32 else "f32")
        text = ctypes.c_void_p()
        status = Status()
        rules, ids = None, ctypes.POINTER(ctypes.c_int32)()
        if previous is not None:
            previous = _c_text(previous, "transcribe: the prompt")
        with self._using("transcribe" if previous is not None or
                         source.dtype != np.int32 else "translate") as handle:
            if previous is not None:
                rules = GenerationRules()
                self._library.tfm_generation_rules_defaults(
                    handle, ctypes.byref(rules))
                count = ctypes.c_int32()
                _check(self._library.tfm_seq2seq_previous_text(
                    handle, previous, ctypes.byref(ids), ctypes.byref(count),
                    ctypes.byref(status)), status)
                rules.previous, rules.previous_count = ids, count
            try:
                _check(self._library.tfm_seq2seq_text(
                    handle, ctypes.byref(tensor), beams or 0,
                    max_new_tokens or 0,
                    ctypes.byref(rules) if rules else None,
                    ctypes.byref(text), ctypes.byref(status)),
                    status)
            finally:
                _LIBC.free(ctypes.cast(ids, ctypes.c_void_p))
        return self._take_text(text)

    def _encoder_decoder(self):
        entries = self.description["entry_points"]
        return "encode" in entries and "decode" in entries

    def translate(self, text, beams=None, max_new_tokens=None):
        """An encoder-decoder's output for `text` (or its source token ids),
        generated as its generation_config.json says (num_beams unless
        `beams` is given, max_new_tokens likewise; the no-repeat, bad-words
        and forced-token rules), as text without special tokens: Marian,
        BART, mBART, T5."""
        if not self._encoder_decoder():
            raise TfmcError(f"model '{self.description['name']}' is not an "
                            "encoder-decoder (it has no @encode and @decode)")
        if self.description["entry_points"]["encode"]["inputs"][0][
                "dtype"] != "i32":
            raise TfmcError(f"model '{self.description['name']}' takes "
                            "audio: use transcribe()")
        if isinstance(text, str) and not text:
            raise TfmcError("translate: the text is empty")
        source = np.ascontiguousarray(
            self._tokenize(text, True, "translate: the text")
            if isinstance(text, str)
            else self._token_ids(text, "translate"), dtype=np.int32)
        if source.ndim != 1 or len(source) == 0:
            raise TfmcError("translate: the source is empty")
        return self._seq2seq_text(source, beams, max_new_tokens)

    def _samples(self, audio, max_seconds=None):
        if isinstance(audio, (str, bytes, os.PathLike)):
            return self.read_audio(audio, max_seconds)
        samples = np.ascontiguousarray(audio, dtype=np.float32).ravel()
        bad = np.flatnonzero(~np.isfinite(samples))
        if len(bad):
            raise TfmcError(f"transcribe: sample {bad[0]} is "
                            f"{samples[bad[0]]} (samples must be finite)")
        return samples

    def transcribe(self, audio, beams=None, max_new_tokens=None, prompt=None,
                   timestamps=None, language=None, task=None,
                   temperature=(0.0, 0.2, 0.4, 0.6, 0.8, 1.0),
                   compression_ratio_threshold=2.4, logprob_threshold=-1.0,
                   no_speech_threshold=0.6, condition_on_previous=True,
                   seed=0, max_audio_seconds=10800, chunk_length_s=None,
                   stride_length_s=None):
        """A speech model's transcript of `audio`: mono samples at the
        model's rate (description's sampling_rate; a NumPy array or list),
        or an audio file's path (read_audio). A recognizer
        (Wav2Vec2ForCTC, HubertForCTC) decodes greedily, as
        Wav2Vec2CTCTokenizer does, audio longer than it hears at once in
        overlapping chunks as transformers' ASR pipeline does
        (chunk_length_s: 30 by default past its longest clip;
        stride_length_s: a sixth of the chunk); timestamps="word" returns
        verbose_json's dict with each word's start and end. Whisper generates from the clip's
        log-mel features (its first 30 s) as translate() does, with its
        language, task and no-timestamps prompt; `prompt` is the text
        before the clip (OpenAI's, generate()'s prompt_ids), which
        conditions the transcript without being part of it.

        Audio longer than Whisper's 30 s, or timestamps="segment", or a
        `language` or `task` ("transcribe", "translate"), is transcribed
        window by window as OpenAI's transcribe() does (a model with
        timestamp tokens): `temperature` (one, or the fallbacks in turn),
        the thresholds (None: off), condition_on_previous and `seed` as
        it takes them; a file is read up to max_audio_seconds. It returns
        the text, or with timestamps="segment"
        OpenAI's verbose_json as a dict (task, language, duration, text,
        segments with their start and end); timestamps="word" adds its
        words with their start and end, aligned by the cross-attention of
        the alignment heads (a model compiled with generation_config.json's
        alignment_heads), as transformers' return_token_timestamps."""
        waveform = self._desc.waveform
        if not waveform and self._encoder_decoder() and \
                self.description["entry_points"]["encode"]["inputs"][0][
                    "dtype"] == "f32":
            media = _media_library()
            if media is None:
                raise TfmcError("libtfmrt_media.so (log-mel features) is not "
                                "found: set TFM_MEDIA_LIBRARY")
            if chunk_length_s is not None or stride_length_s is not None:
                raise TfmcError("chunk_length_s and stride_length_s are for "
                                "a CTC recognizer: Whisper hears 30 s "
                                "windows, each starting where the last one's "
                                "text ended")
            samples = self._samples(audio, max_audio_seconds)
            shape = self.description["entry_points"]["encode"]["inputs"][0][
                "shape"]
            features, frames = self._log_mel_all(media, samples)
            if timestamps is not None or language is not None or \
                    task is not None or frames > shape[1]:
                if beams is not None or max_new_tokens is not None:
                    raise TfmcError("beams and max_new_tokens decode one "
                                    "30 s window; long-form transcription "
                                    "decodes greedily, with temperature "
                                    "fallback")
                return self._transcribe_windows(
                    features, frames, timestamps, dict(
                        language=language, task=task, prompt=prompt,
                        temperature=temperature,
                        compression_ratio_threshold=(
                            compression_ratio_threshold),
                        logprob_threshold=logprob_threshold,
                        no_speech_threshold=no_speech_threshold,
                        condition_on_previous=condition_on_previous,
                        seed=seed))
            features = np.zeros(shape, np.float32)
            status = Status()
            with self._using("transcribe") as handle:
                code = media.tfm_log_mel(
                    handle,
                    samples.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                    len(samples),
                    features.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                    features.size, ctypes.byref(status))
            _check(code, status)
            return self._seq2seq_text(features, beams, max_new_tokens, prompt)
        if not waveform or waveform.contents.blank < 0:
            raise TfmcError(f"model '{self.description['name']}' is not a "
                            "speech recognizer (no CTC head) or Whisper")
        if beams is not None or max_new_tokens is not None or \
                prompt is not None or language is not None or \
                task is not None:
            raise TfmcError("beams, max_new_tokens, prompt, language and "
                            "task are for Whisper: a CTC recognizer decodes "
                            "greedily, frame by frame")
        if timestamps not in (None, "word"):
            raise TfmcError(f"timestamps={timestamps!r}: a CTC recognizer's "
                            "transcript has words, not segments: None or "
                            "'word'")
        samples = self._samples(audio, max_audio_seconds)
        longest = self._desc.max_context
        if chunk_length_s is None and 0 < longest < len(samples):
            # Longer than the model hears at once: 30 s chunks (at most its
            # longest clip), as the executable chunks them.
            chunk_length_s = min(30.0, longest / waveform.contents.sampling_rate)
        chunking = CtcChunking(chunk_length_s or 0.0,
                               -1.0 if stride_length_s is None
                               else stride_length_s)
        status = Status()
        transcript = ctypes.c_void_p()
        with self._using("transcribe") as handle:
            code = self._library.tfm_ctc_transcribe(
                handle, samples.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                len(samples), ctypes.byref(chunking), ctypes.byref(transcript),
                ctypes.byref(status))
        _check(code, status)
        result = self._verbose_json(transcript)
        return result if timestamps == "word" else result["text"]

    def _verbose_json(self, transcript):
        """A tfm_transcript as verbose_json's dict, the transcript freed."""
        status = Status()
        try:
            text = ctypes.c_void_p()
            code = self._library.tfm_transcript_write(
                transcript, 1, ctypes.byref(text), ctypes.byref(status))
            _check(code, status)
            return json.loads(self._take_text(text))
        finally:
            self._library.tfm_transcript_free(transcript)

    def _log_mel_all(self, media, samples):
        """Log-mel features of every sample (tfm_log_mel_all) as NumPy
        [mel bins, frames], and the frames."""
        features = ctypes.POINTER(ctypes.c_float)()
        frames = ctypes.c_int64()
        status = Status()
        with self._using("transcribe") as handle:
            code = media.tfm_log_mel_all(
                handle, samples.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                len(samples), ctypes.byref(features), ctypes.byref(frames),
                ctypes.byref(status))
        _check(code, status)
        try:
            count = frames.value
            flat = np.ctypeslib.as_array(features,
                                         shape=(count * self._mel_bins(),))
            return flat.reshape(-1, count).copy(), count
        finally:
            _LIBC.free(ctypes.cast(features, ctypes.c_void_p))

    def _mel_bins(self):
        return self.description["entry_points"]["encode"]["inputs"][0][
            "shape"][0]

    def _transcribe_windows(self, features, frames, timestamps, options):
        """Whisper's long-form transcript (tfm_whisper_transcribe)."""
        if timestamps not in (None, "segment", "word"):
            raise TfmcError(f"timestamps={timestamps!r}: expected None, "
                            "'segment' or 'word'")
        o = WhisperOptions()
        self._library.tfm_whisper_options_default(ctypes.byref(o))
        o.word_timestamps = int(timestamps == "word")
        encode = lambda text: text.encode() if text is not None else None
        o.language = encode(options["language"])
        o.task = encode(options["task"])
        o.prompt = encode(options["prompt"])
        o.condition_on_previous = int(bool(options["condition_on_previous"]))
        temperatures = options["temperature"]
        if not isinstance(temperatures, (list, tuple)):
            temperatures = (temperatures,)
        table = (ctypes.c_float * len(temperatures))(*temperatures)
        o.temperatures = table
        o.temperature_count = len(temperatures)
        for name in ("compression_ratio_threshold", "logprob_threshold",
                     "no_speech_threshold"):
            value = options[name]
            setattr(o, name, float("nan") if value is None else float(value))
        o.seed = int(options["seed"])
        status = Status()
        transcript = ctypes.c_void_p()
        with self._using("transcribe") as handle:
            code = self._library.tfm_whisper_transcribe(
                handle,
                features.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
                frames, ctypes.byref(o), ctypes.byref(transcript),
                ctypes.byref(status))
        _check(code, status)
        result = self._verbose_json(transcript)
        return result if timestamps is not None else result["text"]

    # Generation.

    def _generates(self):
        return "prefill" in self.description["entry_points"]

    def generate(self, prompt, max_tokens=128, temperature=0.0, top_p=1.0,
                 top_k=0, seed=0, stop=(), stream=False, grammar=None,
                 json_schema=None, lookup_ngram=0, draft_max=0, draft=None,
                 draft_p_min=0.75, lora=0, images=()):
        """Continues `prompt` (text, or a list of ids). Returns the new
        text, or with stream=True a generator of its pieces as they come
        (the generation runs on a thread; the GIL is free meanwhile).
        `stop`: a string or a list of them. `grammar`: GBNF text
        (llama.cpp's format) the new text must match; a malformed one
        raises TfmcError naming its line and column. `json_schema`: a JSON
        Schema (a dict, or its JSON text) the new text must be an instance
        of; a keyword tfmc does not support raises TfmcError naming its
        path. `lookup_ngram` > 0: speculative decoding by prompt lookup
        (up to `draft_max` drafts a step, 0: 8), for a model compiled with
        tfmc --speculative; the text is the same, sooner where it repeats
        its context. `draft`: a smaller Model of the same vocabulary
        (tfmc.load) that drafts instead, greedily, while its top token is
        at least `draft_p_min` likely. `lora`: an adapter of load_lora to
        generate with (0: none). `images` (a vision-language model's):
        image files, or preprocessed pixels ([3, H, W] f32 arrays), one
        for each of the prompt's image placeholders in order (or the
        prompt holds each image's every row's placeholder)."""
        if self._closed:
            raise self._closed_error("generate")
        if not self._generates():
            raise TfmcError(f"model '{self.description['name']}' does not "
                            "generate (it has no @prefill)")
        ids = (self._tokenize(prompt, None, "generate: the prompt")
               if isinstance(prompt, str)
               else self._token_ids(prompt, "generate"))
        max_tokens = _c_integer(max_tokens, "max_tokens", -_INT64_MAX - 1,
                                _INT64_MAX)
        top_k = _c_integer(top_k, "top_k", -_INT32_MAX - 1, _INT32_MAX)
        seed = _c_integer(seed, "seed", 0, 2**64 - 1)
        lookup_ngram = _c_integer(lookup_ngram, "lookup_ngram", 0, _INT32_MAX)
        draft_max = _c_integer(draft_max, "draft_max", 0, _INT32_MAX)
        lora = _c_integer(lora, "lora", 0, _INT32_MAX)
        draft_handle = self._draft_handle(draft) if draft is not None else None
        image_rows, ids = self._splice_images(ids, images)
        stop = [stop] if isinstance(stop, str) else list(stop)
        stops = [_c_text(s, f"'stop' string {i}") for i, s in enumerate(stop)]
        gbnf = self._grammar_text(grammar, json_schema)
        pieces = queue.Queue() if stream else None
        collected, cut = [], []
        # A character's bytes may come in several tokens (byte-level BPE):
        # each piece is the text completed so far.
        utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

        def on_token(user, token, text, size):
            piece = utf8.decode(ctypes.string_at(text, size) if size else b"")
            (pieces.put if stream else collected.append)(piece)
            if self._closed:  # close() waits for this generation: end it
                cut.append(token)
                return 1
            return 0

        def run():
            with self._using("generate") as handle:
                generate(handle)
            if cut:  # not a whole answer
                raise self._closed_error("generate")

        def generate(handle):
            session, status = ctypes.c_void_p(), Status()
            draft_session = ctypes.c_void_p()
            parsed = self._new_grammar(gbnf)
            try:
                _check(self._library.tfm_session_new(
                    handle, ctypes.byref(session), ctypes.byref(status)),
                    status)
                if draft_handle is not None:
                    _check(self._library.tfm_session_new(
                        draft_handle, ctypes.byref(draft_session),
                        ctypes.byref(status)), status)
                for rows in image_rows:
                    _check(self._library.tfm_session_add_image(
                        session, rows.ctypes.data_as(
                            ctypes.POINTER(ctypes.c_float)), len(rows),
                        ctypes.byref(status)), status)
            except TfmcError:
                self._library.tfm_session_free(session)
                self._library.tfm_grammar_free(parsed)
                raise
            try:
                options = GenerateOptions()
                options.max_new_tokens = max_tokens
                options.sampler = SamplerOptions(temperature, top_k, top_p,
                                                 1.0, seed)
                array = (ctypes.c_char_p * max(len(stops), 1))(*stops)
                options.stop_strings = ctypes.cast(
                    array, ctypes.POINTER(ctypes.c_char_p))
                options.stop_string_count = len(stops)
                callback = ON_TOKEN(on_token)
                options.on_token = callback
                options.grammar = parsed
                options.lookup_ngram = lookup_ngram
                options.draft_max = draft_max
                options.draft = draft_session
                options.draft_p_min = draft_p_min
                options.lora = lora
                prompt_ids = (ctypes.c_int32 * max(len(ids), 1))(*ids)
                _check(self._library.tfm_generate(
                    session, prompt_ids, len(ids), ctypes.byref(options), None,
                    ctypes.byref(status)), status)
                # Bytes of a character the generation ended inside.
                rest = utf8.decode(b"", final=True)
                if rest:
                    (pieces.put if stream else collected.append)(rest)
            finally:
                self._library.tfm_session_free(draft_session)
                self._library.tfm_session_free(session)
                self._library.tfm_grammar_free(parsed)

        if not stream:
            run()
            return "".join(collected)
        return self._stream(run, pieces)

    def image_tokens(self, image):
        """A vision-language model's tokens of an image, the rows its
        placeholders take: a file's (a path) or an 8-bit image's (a NumPy
        uint8 array [height, width, 3] or [height, width], as
        numpy.asarray(PIL.Image) gives) as tfm_image_tokens makes them
        (preprocessed as its processor does; LLaVA-NeXT's tiles laid out
        with their newline rows, Idefics3's one after another), or
        @encode_image's of preprocessed pixels (a float array of its
        input's shape). float32 [rows, hidden]."""
        return self._image_rows_grid(image)[0]

    def _image_rows_grid(self, image):
        """image_tokens' rows and the grid of tiles the image was cut into
        (down, across; (0, 0): one image)."""
        if "prefill_embeddings" not in self.description["entry_points"]:
            raise TfmcError(f"model '{self.description['name']}' takes no "
                            "images: it is not a vision-language model")
        encode = self.description["entry_points"]["encode_image"]
        shape = encode["inputs"][0]["shape"]
        if isinstance(image, (str, os.PathLike)):
            path = os.fspath(image)
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as e:
                raise TfmcError(f"cannot read '{path}': {e.strerror}")
            try:
                return self._encoded_image_tokens(data)
            except TfmcError as e:
                raise TfmcError(f"{path}: {e}") from None
        if isinstance(image, np.ndarray) and image.dtype == np.uint8:
            return self._rgb_image_tokens(image)
        if len(encode["outputs"]) > 1 or self._desc.image_tiles_marked:
            raise TfmcError(f"model '{self.description['name']}' cuts an "
                            "image into tiles and lays out their rows by "
                            "its size: give the image's file, not pixels")
        pixels = np.asarray(image)
        if pixels.shape != tuple(shape):
            raise TfmcError(f"an image's pixels are "
                            f"{list(pixels.shape)}; @encode_image takes "
                            f"{shape} (preprocessed), or give its file")
        rows = self.call("encode_image",
                         pixels.astype(np.float32))["hidden_states"]
        return np.ascontiguousarray(rows, np.float32), (0, 0)

    def _encoded_image_tokens(self, data):
        """tfm_image_tokens_memory of an image file's bytes, with its grid
        of tiles."""
        buffer = (ctypes.c_uint8 * max(len(data), 1)).from_buffer_copy(
            data or b"\0")
        out = Tensor()
        grid = (ctypes.c_int64 * 2)()
        status = Status()
        with self._using("image_tokens") as handle:
            code = _image_media().tfm_image_tokens_memory(
                handle, buffer, len(data), ctypes.byref(out), grid,
                ctypes.byref(status))
        _check(code, status)
        rows = self._output_array(out)
        return np.ascontiguousarray(rows, np.float32), tuple(grid)

    def _rgb_image_tokens(self, image):
        """tfm_image_tokens of an 8-bit image array, given to it as the
        PNG of its pixels (lossless: the same pixels decode)."""
        if image.ndim == 2:
            image = np.repeat(image[:, :, None], 3, axis=2)
        if image.ndim != 3 or image.shape[2] != 3 or 0 in image.shape:
            raise TfmcError(f"an image array is {list(image.shape)}; give "
                            "uint8 [height, width, 3] (RGB) or [height, "
                            "width] (gray)")
        media = _image_media()
        rgb = np.ascontiguousarray(image, dtype=np.float32) / 255
        data = ctypes.POINTER(ctypes.c_uint8)()
        size = ctypes.c_size_t()
        status = Status()
        _check(media.tfm_image_encode_png(
            rgb.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
            image.shape[0], image.shape[1], ctypes.byref(data),
            ctypes.byref(size), ctypes.byref(status)), status)
        try:
            encoded = ctypes.string_at(data, size.value)
        finally:
            _LIBC.free(data)
        return self._encoded_image_tokens(encoded)

    def image_tiles(self, path):
        """An image file's preprocessed tiles, @encode_image's inputs
        (tfm_image_tiles): float32 [tiles, 3, height, width], the grid of
        tiles (down, across; (0, 0) for one image) and the image's
        (height, width)."""
        with open(os.fspath(path), "rb") as f:
            data = f.read()
        out = Tensor()
        grid = (ctypes.c_int64 * 2)()
        size = (ctypes.c_int64 * 2)()
        status = Status()
        with self._using("image_tiles") as handle:
            code = _image_media().tfm_image_tiles(
                handle, data, len(data), ctypes.byref(out), grid, size,
                ctypes.byref(status))
        _check(code, status)
        return self._output_array(out), tuple(grid), tuple(size)

    def _splice_images(self, ids, images):
        """The images' rows and the prompt with one placeholder an image
        replaced by the image's ids (its rows' placeholders, with
        Idefics3's tokens around its tiles: tfm_image_prompt_ids); one a
        row stays (tfm_splice_image_ids)."""
        if "prefill_embeddings" not in self.description["entry_points"]:
            if images:
                raise TfmcError(f"model '{self.description['name']}' takes "
                                "no images: it is not a vision-language "
                                "model")
            return [], ids
        token = self._desc.image_token
        if not images:
            given = sum(1 for i in ids if i == token)
            if given:
                raise TfmcError(f"generate: the prompt holds {given} image "
                                f"placeholders (token {token}) and no image "
                                "is given (images=[...])")
            return [], ids
        inputs = [self._image_rows_grid(image) for image in images]
        image_ids = []
        status = Status()
        for rows, grid in inputs:
            grid = (ctypes.c_int64 * 2)(*grid)
            length = ctypes.c_int64(0)
            with self._using("image_prompt_ids") as handle:
                code = self._library.tfm_image_prompt_ids(
                    handle, grid, len(rows), None, 0, ctypes.byref(length),
                    ctypes.byref(status))
                _check(code, status)
                out = (ctypes.c_int32 * max(length.value, 1))()
                code = self._library.tfm_image_prompt_ids(
                    handle, grid, len(rows), out, length.value,
                    ctypes.byref(length), ctypes.byref(status))
            _check(code, status)
            image_ids.append(out)
        prompt = (ctypes.c_int32 * max(len(ids), 1))(*ids)
        starts = (ctypes.POINTER(ctypes.c_int32) * len(image_ids))(
            *(ctypes.cast(a, ctypes.POINTER(ctypes.c_int32))
              for a in image_ids))
        lengths = (ctypes.c_int64 * len(image_ids))(
            *(len(a) for a in image_ids))
        room = len(ids) + sum(lengths)
        spliced = (ctypes.c_int32 * room)()
        length = ctypes.c_int64(0)
        if self._library.tfm_splice_image_ids(
                token, prompt, len(ids), starts, lengths, len(image_ids),
                spliced, room, ctypes.byref(length),
                ctypes.byref(status)) != 0:
            raise TfmcError("generate: " +
                            status.message.decode(errors="replace"))
        return [rows for rows, _ in inputs], list(spliced[:length.value])

    def load_lora(self, path, scale=1.0):
        """Loads a PEFT LoRA adapter folder (adapter_config.json and
        adapter_model.safetensors), or a GGUF LoRA file of llama.cpp's for
        a model read from GGUF, into a slot of a model compiled with
        tfmc --lora-slots; returns its id, for generate(lora=) and the
        engine's submit(lora=). `scale` multiplies its update. What the
        model cannot take (no slots, none free, a rank above its slots',
        a module it was not compiled to adapt, another model's shapes)
        raises TfmcError naming the file and why."""
        if not isinstance(scale, (int, float)) or not math.isfinite(scale):
            raise TfmcError(f"load_lora: the scale must be a finite number, "
                            f"got {scale!r}")
        directory = _c_path(os.fspath(path), "load_lora: the path")
        with self._using("load_lora") as handle:
            adapter, status = ctypes.c_int32(), Status()
            _check(self._library.tfm_lora_load(
                handle, directory, float(scale), ctypes.byref(adapter),
                ctypes.byref(status)), status)
        return adapter.value

    def unload_lora(self, adapter):
        """Frees an adapter's slot; TfmcError while a generation or an
        engine's request runs with it."""
        adapter = _c_integer(adapter, "adapter", 0, _INT32_MAX)
        with self._using("unload_lora") as handle:
            status = Status()
            _check(self._library.tfm_lora_unload(handle, adapter,
                                                 ctypes.byref(status)),
                   status)

    @staticmethod
    def _describe_lora(lora):
        """Run-time adapter slots (tfmc --lora-slots), or None."""
        if not lora:
            return None
        slots = lora.contents
        return {"slots": slots.slots, "rank": slots.rank,
                "targets": [slots.targets[i].weight.decode()
                            for i in range(slots.num_targets)]}

    def _draft_handle(self, draft):
        """`draft` (a Model) loaded through this model's runtime, once:
        both sessions of a speculative generation are then one runtime's."""
        if not isinstance(draft, Model):
            raise TfmcError("draft: expected a tfmc.Model (tfmc.load), got "
                            f"{type(draft).__name__}")
        if draft._closed:
            raise draft._closed_error("draft")
        with self._lock:
            held = self._drafts.get(id(draft))
            if held is not None and held[0] is draft:
                return held[1]
        handle, status = ctypes.c_void_p(), Status()
        _check(self._library.tfm_model_load(
            ctypes.byref(draft._desc_symbol), None, ctypes.byref(handle),
            ctypes.byref(status)), status)
        with self._lock:
            # Another thread may have loaded it meanwhile: keep one.
            held = self._drafts.get(id(draft))
            if held is not None and held[0] is draft:
                self._library.tfm_model_free(handle)
                return held[1]
            self._drafts[id(draft)] = (draft, handle)
        return handle

    def _grammar_text(self, grammar, json_schema):
        """`grammar` (GBNF) or `json_schema`'s grammar as bytes; None for
        neither."""
        if grammar is not None and json_schema is not None:
            raise TfmcError("give one of 'grammar' and 'json_schema'")
        if json_schema is not None:
            return self._schema_grammar(json_schema)
        return None if grammar is None else _c_text(grammar, "'grammar'")

    def _new_grammar(self, gbnf):
        """A tfm_grammar of GBNF bytes for this model (a c_void_p, NULL for
        None): the caller frees it, or hands it to the engine."""
        parsed = ctypes.c_void_p()
        if gbnf is None:
            return parsed
        if not self._tokenizer:
            raise TfmcError("a grammar needs the model's tokenizer")
        status = Status()
        _check(self._library.tfm_grammar_new(
            gbnf, self._tokenizer, ctypes.byref(self._desc),
            ctypes.byref(parsed), ctypes.byref(status)), status)
        return parsed

    def _schema_grammar(self, schema):
        """A JSON Schema (dict or JSON text) as GBNF bytes."""
        text = schema if isinstance(schema, str) else json.dumps(schema)
        out, status = ctypes.c_void_p(), Status()
        _check(self._library.tfm_json_schema_to_gbnf(
            _c_text(text, "'json_schema'"), ctypes.byref(out),
            ctypes.byref(status)), status)
        try:
            return ctypes.string_at(out)
        finally:
            _LIBC.free(out)

    @staticmethod
    def _stream(run, pieces):
        failure = []

        def worker():
            try:
                run()
            except TfmcError as e:
                failure.append(e)
            finally:
                pieces.put(None)

        thread = threading.Thread(target=worker, daemon=True)
        thread.start()
        while (piece := pieces.get()) is not None:
            yield piece
        thread.join()
        if failure:
            raise failure[0]


from tfmc.engine import Engine  # noqa: E402  (it uses the names above)
