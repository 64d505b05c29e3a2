#!/usr/bin/env python3
"""Writes the long-form Whisper fixture (test/e2e/speech/Inputs/whisper-long/:
a tiny random WhisperForConditionalGeneration shaped as the published
multilingual checkpoints are for long audio: 30 s windows of 3000 frames,
448 decoder positions, languages, tasks, <|nospeech|>, <|notimestamps|> and
1501 timestamp tokens past the tokenizer's last id; generation_config.json
with forced_decoder_ids [[1, null], [2, transcribe]], lang_to_id,
task_to_id, no_timestamps_token_id, prev_sot_token_id and
max_initial_timestamp_index as openai/whisper-* have them, and
alignment_heads across both decoder layers, listed out of order) and the
goldens
of transformers 4.40's sequential long-form generate() (../shared/reference)
on speech-like audio (speech_like_audio.py) of 75 s and 3 min:

- whisper-long.75s-first-window.txt: generate()'s ids for the 75 s clip's
  first 30 s alone (short-form: the language detected, then transcribe
  and <|notimestamps|>, greedy), after the decoder start token;
- whisper-long.<case>.json: the arguments, the detected or given language
  token, and every segment generate(return_segments=True) gives: start and
  end (s), its tokens, and the window it came from's temperature, average
  log-probability, compression ratio and no-speech probability (the values
  _need_fallback judged the kept sequence by; no no-speech probability
  where no_speech_threshold is None, as 4.40 computes none);
- for the cases with words, every word with its start and end as the ASR
  pipeline gives them (return_timestamps="word"): generate(...,
  return_token_timestamps=True), each segment's token_timestamps end to
  end, then the tokenizer's _decode_asr, which groups the tokens into
  words (_collate_word_timestamps) between each pair of timestamps.

The timestamp tokens' embeddings (the head is tied) are scaled by 0.5 so
that random weights write text between their timestamps. Temperatures
above 0 sample as 4.40 does after torch.manual_seed(SEED), with top_k=0 so
that the whole distribution is sampled, as OpenAI's transcribe samples.
4.40 ends a window with no timestamp pair at time_offset + frames x 0.02;
OpenAI's transcribe (and tfmc) at time_offset + frames x 0.01, the window's
duration: such segments' ends are written the latter way.

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/speech/make_whisper_longform_goldens.py
"""
import json
import os
import sys
import tempfile
import wave

import numpy as np
import torch
import transformers as tf
from transformers.models.whisper import generation_whisper as gw

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "seq2seq"))
from byte_level import write_whisper_tokenizer  # noqa: E402
import speech_like_audio  # noqa: E402

OUT = os.path.join(HERE, "Inputs")
FOLDER = os.path.join(OUT, "whisper-long")
LANGUAGES = ["<|en|>", "<|de|>", "<|fr|>"]
SPECIALS = (["<|startoftranscript|>"] + LANGUAGES +
            ["<|translate|>", "<|transcribe|>", "<|startoflm|>",
             "<|startofprev|>", "<|nospeech|>", "<|notimestamps|>"])
TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
# The audio: (seconds, seed, silent stretches), as whisper-long.test
# writes it.
AUDIO = {"75s": (75, 1, [(40, 50)]), "180s": (180, 3, [(60, 100)])}
# Each case: the audio and generate()'s arguments.
CASES = {
    "75s-greedy": ("75s", dict(temperature=0.0)),
    # Windows whose tokens compress past 2.5 are sampled again, hotter.
    "75s-fallback": ("75s", dict(temperature=TEMPERATURES,
                                 compression_ratio_threshold=2.5,
                                 logprob_threshold=None,
                                 no_speech_threshold=None)),
    "75s-translate": ("75s", dict(temperature=0.0, language="de",
                                  task="translate", prompt="the cat sat")),
    # Windows more likely than 0.0005 to hold no speech, and unlikely
    # text, are skipped.
    "180s-greedy": ("180s", dict(temperature=0.0, no_speech_threshold=0.0005)),
    "180s-fallback": ("180s", dict(temperature=TEMPERATURES,
                                   compression_ratio_threshold=2.5,
                                   logprob_threshold=-1.5)),
    # Word timestamps (the alignment heads' cross-attention, DTW).
    "75s-words": ("75s", dict(temperature=0.0)),
    "180s-words": ("180s", dict(temperature=TEMPERATURES,
                                compression_ratio_threshold=2.5,
                                logprob_threshold=-1.5)),
}
WORDS = ("75s-words", "180s-words")
# [layer, head] of the decoder's cross-attention, out of order.
ALIGNMENT_HEADS = [[1, 2], [0, 1], [1, 0]]
DEFAULTS = dict(compression_ratio_threshold=2.4, logprob_threshold=-1.0,
                no_speech_threshold=0.6, condition_on_prev_tokens=True)
SEED = 0


def write_tokenizer():
    return write_whisper_tokenizer(FOLDER, SPECIALS)[0]


def make_model(tokenizer):
    ids = dict(zip(SPECIALS, tokenizer.convert_tokens_to_ids(SPECIALS)))
    eos = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    no_timestamps = ids["<|notimestamps|>"]
    # Control bytes and those past ASCII never come, so that every text
    # is plain; so do the special tokens but <|startofprev|>, as in
    # the published suppress_tokens.
    suppressed = (list(range(0, 32)) + list(range(127, 256)) +
                  [ids[s] for s in SPECIALS if s != "<|startofprev|>"])
    config = tf.WhisperConfig(
        vocab_size=len(tokenizer) + 1501, num_mel_bins=80, encoder_layers=2,
        decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
        d_model=32, encoder_ffn_dim=48, decoder_ffn_dim=48,
        max_source_positions=1500, max_target_positions=448,
        pad_token_id=eos, bos_token_id=eos, eos_token_id=eos,
        decoder_start_token_id=ids["<|startoftranscript|>"],
        begin_suppress_tokens=[32, eos], suppress_tokens=suppressed)
    config._attn_implementation = "eager"
    torch.manual_seed(0)
    model = tf.WhisperForConditionalGeneration(config).eval()
    g = torch.Generator().manual_seed(8)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "embed_positions" in name and "encoder" in name:
                continue  # the sinusoids transformers initializes
            noise = torch.randn(p.shape, generator=g)
            is_scale = "layer_norm" in name and name.endswith("weight")
            p.copy_(1 + 0.3 * noise if is_scale else 0.5 * noise)
        model.model.decoder.embed_tokens.weight[no_timestamps + 1:] *= 0.5
    gc = model.generation_config
    gc.forced_decoder_ids = [[1, None], [2, ids["<|transcribe|>"]]]
    gc.lang_to_id = {k: ids[k] for k in LANGUAGES}
    gc.task_to_id = {"translate": ids["<|translate|>"],
                     "transcribe": ids["<|transcribe|>"]}
    gc.is_multilingual = True
    gc.no_timestamps_token_id = no_timestamps
    gc.prev_sot_token_id = ids["<|startofprev|>"]
    gc.max_initial_timestamp_index = 50
    gc.alignment_heads = ALIGNMENT_HEADS
    gc.suppress_tokens = suppressed
    gc.begin_suppress_tokens = [32, eos]
    gc.max_length = 448
    gc.return_timestamps = False
    model.save_pretrained(FOLDER, safe_serialization=True)
    tf.WhisperFeatureExtractor(feature_size=80).save_pretrained(FOLDER)
    return model


class Recorder:
    """What 4.40 decided in each window: the last _need_fallback call of a
    window judged the sequence it kept."""

    def __init__(self):
        self.last = None
        self.wrap_need_fallback()
        self.wrap_retrieve_segment()

    def wrap_need_fallback(self):
        original = gw.WhisperGenerationMixin._need_fallback
        recorder = self

        def need_fallback(model, seek_sequence, seek_outputs, index,
                          logits_processor, generation_config, vocab_size,
                          temperature):
            result = original(model, seek_sequence, seek_outputs, index,
                              logits_processor, generation_config, vocab_size,
                              temperature)
            ratio = model._retrieve_compression_ratio(seek_sequence,
                                                      vocab_size)
            logprob = model._retrieve_avg_logprobs(
                seek_outputs[index]["scores"], seek_sequence,
                generation_config.eos_token_id, temperature)
            no_speech = gw._get_attr_from_logit_processors(
                logits_processor, tf.generation.logits_process.
                WhisperNoSpeechDetection, "no_speech_prob")
            recorder.last = dict(
                temperature=float(temperature or 0.0),
                compression_ratio=float(ratio),
                avg_logprob=float(logprob),
                no_speech_prob=(float(no_speech[index])
                                if no_speech is not None else None))
            return result
        gw.WhisperGenerationMixin._need_fallback = need_fallback

    def wrap_retrieve_segment(self):
        original = gw.WhisperGenerationMixin._retrieve_segment
        recorder = self

        def retrieve_segment(seek_sequence, seek_outputs, time_offset,
                             timestamp_begin, seek_num_frames, time_precision,
                             input_stride, prev_idx, idx,
                             return_token_timestamps):
            segments, offset = original(
                seek_sequence, seek_outputs, time_offset, timestamp_begin,
                seek_num_frames, time_precision, input_stride, prev_idx, idx,
                return_token_timestamps)
            pairs = (seek_sequence[:-1].ge(timestamp_begin) &
                     seek_sequence[1:].ge(timestamp_begin)).any()
            for s in segments:
                s.update(recorder.last)
                if not pairs:
                    # 4.40 adds frames x time_precision; the window's
                    # duration is frames x 0.01 (time_precision / stride).
                    last = seek_sequence[seek_sequence.ge(timestamp_begin)]
                    if last.numel() == 0 or last[-1].item() == timestamp_begin:
                        s["end"] = (time_offset[prev_idx] +
                                    seek_num_frames[prev_idx] *
                                    time_precision / input_stride)
            return segments, offset
        gw.WhisperGenerationMixin._retrieve_segment = staticmethod(
            retrieve_segment)


def read_wav(path):
    with wave.open(path) as w:
        pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2")
    return pcm.astype(np.float32) / 32768  # as libsndfile reads it


def short_form(model, extractor, audio):
    """generate() on the first 30 s alone, as the executable's
    single-window mode decodes them: the language detected, then
    transcribe and <|notimestamps|>, greedy, suppressions; the ids after
    the decoder start token."""
    features = extractor(audio, sampling_rate=16000,
                         return_tensors="pt").input_features
    with torch.no_grad():
        ids = model.generate(features, max_new_tokens=24)[0].tolist()
    return ids[1:]


def words_of(tokenizer, out):
    """The pipeline's words: each segment's tokens and token_timestamps end
    to end through the tokenizer's _decode_asr (return_timestamps="word")."""
    segments = out["segments"][0]
    tokens = torch.cat([s["tokens"] for s in segments])
    times = torch.cat([s["token_timestamps"] for s in segments])
    _, chunks = tokenizer._decode_asr(
        [{"tokens": tokens[None], "token_timestamps": times[None]}],
        return_timestamps="word", return_language=False,
        time_precision=0.02)
    return [dict(word=c["text"], start=c["timestamp"][0],
                 end=c["timestamp"][1]) for c in chunks["chunks"]]


def main():
    tokenizer = write_tokenizer()
    model = make_model(tokenizer)
    extractor = tf.WhisperFeatureExtractor(feature_size=80)
    Recorder()  # wraps 4.40's methods to note each window's numbers
    audio = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (seconds, seed, silences) in AUDIO.items():
            path = os.path.join(tmp, name + ".wav")
            speech_like_audio.write(path, seconds, seed, silences)
            audio[name] = read_wav(path)
    ids = short_form(model, extractor, audio["75s"])
    with open(os.path.join(OUT, "whisper-long.75s-first-window.txt"),
              "w") as f:
        f.write(" ".join(map(str, ids)) + "\n")
    print("first window", ids)
    for case, (clip, arguments) in CASES.items():
        features = extractor(audio[clip], sampling_rate=16000,
                             truncation=False, padding="longest",
                             return_tensors="pt").input_features
        kwargs = dict(DEFAULTS, **arguments)
        prompt = kwargs.pop("prompt", None)
        if prompt is not None:
            kwargs["prompt_ids"] = torch.tensor(
                tokenizer.get_prompt_ids(prompt))
        if case in WORDS:
            kwargs["return_token_timestamps"] = True
        torch.manual_seed(SEED)
        with torch.no_grad():
            out = model.generate(features, return_segments=True,
                                 return_dict_in_generate=True,
                                 output_scores=True,
                                 return_timestamps=True, top_k=0, **kwargs)
        kwargs.pop("return_token_timestamps", None)
        segments = [dict(start=round(float(s["start"]), 4),
                         end=round(float(s["end"]), 4),
                         tokens=s["tokens"].tolist(),
                         **{k: s[k] for k in ("temperature", "avg_logprob",
                                              "compression_ratio",
                                              "no_speech_prob")})
                    for s in out["segments"][0]]
        if arguments.get("language"):
            language = tokenizer.convert_tokens_to_ids(
                f"<|{arguments['language']}|>")
        else:
            with torch.no_grad():
                language = model.detect_language(features).item()
        golden = dict(language=tokenizer.convert_ids_to_tokens(language),
                      audio=dict(zip(("seconds", "seed", "silences"),
                                     AUDIO[clip])),
                      arguments={k: v for k, v in dict(
                          kwargs, prompt=prompt, seed=SEED).items()
                          if k != "prompt_ids"},
                      frames=int(features.shape[-1]), segments=segments)
        if case in WORDS:
            golden["words"] = words_of(tokenizer, out)
        with open(os.path.join(OUT, f"whisper-long.{case}.json"), "w") as f:
            json.dump(golden, f, indent=1)
        temperatures = sorted({s["temperature"] for s in segments})
        print(case, len(segments), "segments, temperatures", temperatures,
              "last end", segments[-1]["end"] if segments else None)


if __name__ == "__main__":
    main()
