#!/usr/bin/env python3
"""Checks one model of the conformance suite (stdlib only):

    check_conformance.py Inputs/NAME.json WORK_DIR TFMC [--gguf ARCH]

With --gguf, the checkpoint is converted to a GGUF file first (as
llama.cpp's converter lays it out: write_gguf.py --hf, f32) and that file
compiled: the same logits, from llama.cpp's format.

Writes the real-shaped checkpoint (make_fixture.py), compiles it with
tfmc (f32 weights: the model's arithmetic, not a narrow format's, is what
is checked), and compares with transformers' logits (NAME.logits.bin, at
make_fixture.py's columns) within 1e-4: every position through @forward,
then positions 2 on through the KV cache (a prefill of 3, the rest forced
one token at a time), and the prompt's ids where the manifest gives them.
Prints one OK line per check; exits 1 on the first mismatch."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_fixture  # noqa: E402

sys.path.insert(0, os.path.dirname(HERE))
import compare_logits  # noqa: E402


def run(*command):
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        sys.stderr.write(result.stdout + result.stderr)
        sys.exit(f"failed: {' '.join(command)}")
    return result


def compare(actual, expected, vocab, rows, label):
    kept = actual + ".kept"
    make_fixture.select(actual, vocab, kept)
    width = len(make_fixture.columns(vocab))
    sys.argv = ["compare_logits.py", kept, expected, "--tol", "1e-4",
                "--expected-rows", rows, "--row-size", str(width)]
    print(label + ": ", end="", flush=True)
    if compare_logits.main() != 0:
        sys.exit(1)


def main():
    manifest_path, work, tfmc, *options = sys.argv[1:]
    gguf_arch = options[1] if options[:1] == ["--gguf"] else None
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    name = os.path.basename(manifest_path)[:-len(".json")]
    golden = os.path.join(os.path.dirname(manifest_path), name + ".logits.bin")
    vocab = make_fixture.output_width(manifest["config"])
    tokens = [str(t) for t in manifest["tokens"]]
    model = os.path.join(work, name)
    make_fixture.write_fixture(manifest_path, model)
    exe = model + ".exe"
    if gguf_arch:
        gguf = model + ".gguf"
        run(sys.executable, os.path.join(os.path.dirname(HERE), "write_gguf.py"),
            gguf, "--hf", model, "--arch", gguf_arch)
        manifest.pop("prompt", None)  # the file carries no tokenizer here
        run(tfmc, gguf, "--weights-dtype=f32", "-q", "-o", exe)
    else:
        run(tfmc, model, "--weights-dtype=f32", "-q", "-o", exe)
    kind = manifest.get("kind", "decoder")
    if kind == "image-classification":
        logits = model + ".logits"
        run(exe, "--pixels", os.path.join(model, "features.bin"), "--output",
            logits)
        compare(logits, golden, vocab, "0:1", "classify")
        return
    if kind == "audio-classification":
        # The filterbank of clip.wav, computed by the executable, classified.
        logits = model + ".logits"
        run(exe, os.path.join(model, "clip.wav"), "--output", logits)
        compare(logits, golden, vocab, "0:1", "classify")
        return
    if kind == "speech-ctc":
        # A waveform recognizer: the CTC head's logits of clip.wav, then its
        # transcript.
        logits = model + ".logits"
        clip = os.path.join(model, "clip.wav")
        run(exe, "--call", "recognize", clip, "--output", logits)
        compare(logits, golden, vocab, f"0:{manifest['frames']}", "recognize")
        text = run(exe, clip).stdout.rstrip("\n")
        if text != manifest["transcript"]:
            sys.exit(f"transcribe: MISMATCH: {text!r}, expected "
                     f"{manifest['transcript']!r}")
        print(f"transcribe: OK: {len(text)} characters")
        return
    if kind == "masked-lm":
        # An encoder's masked-LM logits of every position.
        logits = model + ".logits"
        run(exe, "--tokens", " ".join(tokens), "--output", logits)
        compare(logits, golden, vocab, f"0:{len(tokens)}", "encode")
        return
    if kind in ("seq2seq", "speech-seq2seq"):
        # Teacher-forced through @forward, then step by step through the
        # caches from the decoder start token.
        source = (["--features", os.path.join(model, "features.bin")]
                  if kind == "speech-seq2seq" else ["--tokens", " ".join(tokens)])
        decoder = [str(t) for t in manifest["decoder_tokens"]]
        forward = model + ".forward"
        run(exe, *source, "--decoder-tokens", " ".join(decoder), "--logits",
            forward)
        compare(forward, golden, vocab, f"0:{len(decoder)}", "forward")
        steps = model + ".steps"
        run(exe, *source, "--force-tokens",
            " ".join(decoder[1:] + [decoder[-1]]), "-n", str(len(decoder)),
            "--ignore-eos", "--print-ids", "--step-logits", steps)
        compare(steps, golden, vocab, f"0:{len(decoder)}", "decode")
        return
    forward = model + ".forward"
    run(exe, "--tokens", " ".join(tokens), "-n", "0", "--logits", forward)
    compare(forward, golden, vocab, f"0:{len(tokens)}", "forward")
    decode = model + ".decode"
    run(exe, "--tokens", " ".join(tokens[:3]), "--force-tokens",
        " ".join(tokens[3:]), "-n", str(len(tokens) - 3), "--ignore-eos",
        "--print-ids", "--step-logits", decode)
    compare(decode, golden, vocab, f"2:{len(tokens) - 1}", "decode")
    if "prompt" in manifest:
        ids = run(exe, "--prompt", manifest["prompt"], "--tokenize").stdout.split()
        expected = [str(i) for i in manifest["prompt_ids"]]
        if ids != expected:
            sys.exit(f"tokenize: MISMATCH: {' '.join(ids)}, expected "
                     f"{' '.join(expected)}")
        print(f"tokenize: OK: {len(ids)} ids")


if __name__ == "__main__":
    main()
