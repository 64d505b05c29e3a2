#!/usr/bin/env python3
"""Writes the goldens of a CTC recognizer on audio longer than it hears at
once (test/e2e/speech/Inputs/wav2vec2-ctc-words.<case>.json): transformers
4.40's automatic-speech-recognition pipeline (its chunking transcribed
in ctc_pipeline.py from pipelines/automatic_speech_recognition.py: the
pipelines package does not import without the tokenizers library, but the
model, feature extractor and tokenizer are 4.40's own) over the
wav2vec2-ctc fixture
(make_speech_goldens.py) on 3 min of speech-like audio
(speech_like_audio.py, as ctc-chunks.test writes it), in overlapping
chunks (chunk_length_s, stride_length_s: each chunk's logits but its
strides kept, the kept frames' labels joined, then decoded whole), with
return_timestamps="word": the text, and each word's start and end (s) from
its first and last CTC frame.

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/speech/make_ctc_chunks_goldens.py
"""
import json
import os
import shutil
import sys
import tempfile
import wave

import numpy as np
import torch
import transformers as tf
from safetensors.torch import load_file, save_file

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ctc_pipeline  # noqa: E402
import speech_like_audio  # noqa: E402

OUT = os.path.join(HERE, "Inputs")
# The audio (seconds, seed, silent stretches) and each case's chunking:
# the pipeline's stride default (a sixth of the chunk each side) and a
# given one.
AUDIO = (180, 3, [(60, 100)])
CASES = {"180s-chunks-10": dict(chunk_length_s=10, stride_length_s=2),
         "180s-chunks-6": dict(chunk_length_s=6)}
# The fixture's random head never writes the word delimiter "|" (label 4):
# its copy wav2vec2-ctc-words raises that label's bias by DELIMITER_BIAS,
# so that about a fifth of the frames are delimiters and words have times.
DELIMITER_BIAS = 1.6


def transcribe(model, extractor, tokenizer, samples, chunk_length_s,
               stride_length_s=None):
    """The pipeline's preprocess, _forward and postprocess for a CTC model
    with chunk_length_s and return_timestamps="word" (ctc_pipeline.py's
    chunking; 4.40's model, feature extractor and tokenizer)."""
    align = model.config.inputs_to_logits_ratio
    rate = extractor.sampling_rate

    def logits_of(chunk):
        inputs = extractor(chunk, sampling_rate=rate, return_tensors="pt")
        with torch.no_grad():
            return model(inputs.input_values).logits[0].numpy()

    items = ctc_pipeline.chunked_labels(logits_of, samples, chunk_length_s,
                                        stride_length_s, rate, align)
    text = tokenizer.decode(items, skip_special_tokens=False)
    offsets = tokenizer.decode(items, skip_special_tokens=False,
                               output_char_offsets=True)["char_offsets"]
    offsets = tokenizer._get_word_offsets(offsets,
                                          tokenizer.replace_word_delimiter_char)
    words = [dict(word=o["word"],
                  start=round(o["start_offset"] * align / rate, 4),
                  end=round(o["end_offset"] * align / rate, 4))
             for o in offsets]
    return text, words


def write_words_fixture():
    """wav2vec2-ctc with the delimiter's bias raised, as wav2vec2-ctc-words."""
    source = os.path.join(OUT, "wav2vec2-ctc")
    folder = os.path.join(OUT, "wav2vec2-ctc-words")
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(source, folder)
    model = tf.Wav2Vec2ForCTC.from_pretrained(source).eval()
    with torch.no_grad():
        model.lm_head.bias[4] += DELIMITER_BIAS
    weights = {k: v.contiguous() for k, v in model.state_dict().items()}
    tensors = load_file(os.path.join(source, "model.safetensors"))
    save_file({k: weights[k] if k in weights else v
               for k, v in tensors.items()},
              os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    return folder


def main():
    folder = write_words_fixture()
    model = tf.Wav2Vec2ForCTC.from_pretrained(folder).eval()
    extractor = tf.Wav2Vec2FeatureExtractor.from_pretrained(folder)
    tokenizer = tf.Wav2Vec2CTCTokenizer.from_pretrained(folder)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "180s.wav")
        speech_like_audio.write(path, *AUDIO)
        with wave.open(path) as w:
            pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2")
    samples = pcm.astype(np.float32) / 32768  # as libsndfile reads it
    for case, chunking in CASES.items():
        text, words = transcribe(model, extractor, tokenizer, samples,
                                 **chunking)
        golden = dict(audio=dict(zip(("seconds", "seed", "silences"), AUDIO)),
                      chunking=chunking, text=text, words=words)
        with open(os.path.join(OUT, f"wav2vec2-ctc-words.{case}.json"),
                  "w") as f:
            json.dump(golden, f, indent=1)
        print(case, len(text), "characters,", len(words), "words")


if __name__ == "__main__":
    main()
