#!/usr/bin/env python3
"""Writes test/e2e/clip/Inputs/siglip-tokenized/: a SiglipModel (tiny random
weights; 64 text positions, as SigLIP's) with a SentencePiece Unigram
spiece.model trained here on ../shared/data/tinystories-eval.txt (<pad> 0,
</s> 1, <unk> 2, as SigLIP's), and tokenizer_config.json naming
SiglipTokenizer; and, with transformers 4.40's SiglipTokenizer,
SiglipProcessor and SiglipModel (../shared/reference, with Debian's
python3-protobuf, which SiglipTokenizer needs):

- siglip-tokenized.texts.txt and .ids.txt: texts, one a line, and their
  ids as SiglipProcessor gives them to the model (padding="max_length",
  the processor's documented call and the pipelines'): lowercased,
  ASCII punctuation removed, whitespace runs one space, </s> at the end,
  padded with </s> to 64;
- siglip-tokenized.text.embeds.bin: SiglipModel.get_text_features of the
  first text (little-endian f32);
- siglip-tokenized.scores.txt: logits_per_image of
  ../vision/Inputs/images/photo.png against the first three texts (their
  padded ids, without an attention mask, as SigLIP was trained), and
  their sigmoids (what the executable prints).

Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    apt-get install python3-protobuf
    /usr/bin/python3 test/e2e/clip/make_siglip_tokenizer.py
"""
import json
import os

import sentencepiece as spm
import torch
import transformers as tf
from PIL import Image

import make_siglip_goldens

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs")
NAME = "siglip-tokenized"
CORPUS = os.path.join(HERE, "..", "..", "..", "..", "shared", "data",
                      "tinystories-eval.txt")
PIECES = 160
TEXT = dict(vocab_size=PIECES, hidden_size=32, intermediate_size=48,
            num_hidden_layers=2, num_attention_heads=4,
            max_position_embeddings=64)
VISION = dict(hidden_size=32, intermediate_size=48, num_hidden_layers=2,
              num_attention_heads=4, image_size=32, patch_size=8)
PREPROCESSOR = {"do_normalize": True, "do_rescale": True, "do_resize": True,
                "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
                "image_processor_type": "SiglipImageProcessor",
                "processor_class": "SiglipProcessor",
                "resample": 3, "rescale_factor": 0.00392156862745098,
                "size": {"height": 32, "width": 32}}
# What canonicalize_text and the lowercasing touch: punctuation inside
# and beside words, runs of whitespace and tabs, capitals, accented and
# non-Latin letters, a literal U+2581, leading spaces, </s> written in the
# text, and a text of punctuation alone.
TEXTS = [
    "a photo of a cat",
    "A Photo of a DOG.",
    "a diagram",
    "Once upon a time, there was a little girl named Lily!",
    "  Tom's   ball\twas (very) \"red\"...",
    "Café naïve — “quoted” 日本",
    "it\u2581was sunny",
    "the end </s> of it",
    "?!",
]


def randomize(model, seed):
    make_siglip_goldens.randomize(model, seed)
    with torch.no_grad():
        # A scale and bias of SigLIP's kind (exp(2.3) ~ 10; a negative
        # bias), so that both show in the scores.
        model.logit_scale.fill_(2.3)
        model.logit_bias.fill_(-1.7)


def main():
    directory = os.path.join(OUT, NAME)
    os.makedirs(directory, exist_ok=True)
    # Trained in the folder under a relative prefix, which the model
    # records: the same bytes wherever it is regenerated.
    corpus = os.path.abspath(CORPUS)
    here = os.getcwd()
    os.chdir(directory)
    try:
        spm.SentencePieceTrainer.train(
            input=corpus, model_prefix="spiece", vocab_size=PIECES,
            model_type="unigram", character_coverage=1.0, num_threads=1,
            pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
        os.remove("spiece.vocab")
    finally:
        os.chdir(here)
    tokenizer = tf.SiglipTokenizer(os.path.join(directory, "spiece.model"))
    tokenizer.save_pretrained(directory)
    with open(os.path.join(directory, "preprocessor_config.json"), "w") as f:
        json.dump(PREPROCESSOR, f, indent=2)
    model = tf.SiglipModel(tf.SiglipConfig(text_config=TEXT,
                                           vision_config=VISION))
    randomize(model, 3)
    model.eval().save_pretrained(directory, safe_serialization=True)
    # save_pretrained rewrote the tokenizer's files: keep the trained model.
    processor = tf.SiglipProcessor(
        image_processor=tf.SiglipImageProcessor(**PREPROCESSOR),
        tokenizer=tf.SiglipTokenizer(os.path.join(directory, "spiece.model")))

    ids = [processor(text=t, padding="max_length").input_ids[0].tolist()
           for t in TEXTS]
    with open(os.path.join(OUT, NAME + ".texts.txt"), "w",
              encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in TEXTS))
    with open(os.path.join(OUT, NAME + ".ids.txt"), "w") as f:
        f.write("".join(" ".join(map(str, i)) + "\n" for i in ids))
    for text, i in zip(TEXTS, ids):
        print(repr(text), tokenizer.convert_ids_to_tokens(
            [t for t in i if t != 1]))

    photo = Image.open(os.path.join(HERE, "..", "vision", "Inputs", "images",
                                    "photo.png"))
    inputs = processor(text=TEXTS[:3], images=photo, padding="max_length",
                       return_tensors="pt")
    # The padded ids alone, as SigLIP was trained (big_vision, open_clip:
    # the pads are attended) and as transformers' conversion checked it;
    # 4.40's processor also returns an attention_mask, which SiglipModel
    # would apply to the pads.
    with torch.no_grad():
        out = model(input_ids=inputs.input_ids,
                    pixel_values=inputs.pixel_values)
        embeds = model.get_text_features(
            input_ids=inputs.input_ids[:1])[0]
    embeds.numpy().astype("<f4").tofile(
        os.path.join(OUT, NAME + ".text.embeds.bin"))
    logits = out.logits_per_image[0]
    with open(os.path.join(OUT, NAME + ".scores.txt"), "w") as f:
        for text, logit in zip(TEXTS[:3], logits.tolist()):
            f.write("%.4f  logit %.4f  %s\n" % (
                torch.sigmoid(torch.tensor(logit)).item(), logit, text))
    print(open(os.path.join(OUT, NAME + ".scores.txt")).read())


if __name__ == "__main__":
    main()
