#!/usr/bin/env python3
"""Writes a tiny cross-encoder (test/tools/Inputs/bert-reranker/: a
BertForSequenceClassification with one label, random weights, and a
character-level WordPiece vocab.txt of 64 ids) and its golden
(bert-reranker.scores.json: for QUERY and each of DOCUMENTS, the
sigmoid of the logit transformers 4.40 gives the pair as BertTokenizer
frames it, [CLS] query [SEP] document [SEP] with token types 0 then 1;
sentence-transformers' CrossEncoder scores one label so). Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/tools/make_reranker_fixture.py
"""
import json
import os
import string
import sys

import torch
import transformers as tf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e", "encoders"))
from make_encoder_goldens import SIZES, random_model  # noqa: E402

OUT = os.path.join(HERE, "Inputs", "bert-reranker")
VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] +
         list(string.ascii_lowercase) +
         ["##" + c for c in string.ascii_lowercase] + list(".,!?;:-"))
QUERY = "where do cats sleep?"
DOCUMENTS = ["cats sleep on the mat.", "the stock fell.",
             "a dog in the park", "cats nap in the sun, often.", "ok"]


def main():
    os.makedirs(OUT, exist_ok=True)
    config = tf.BertConfig(**dict(SIZES, max_position_embeddings=64),
                           hidden_act="gelu", num_labels=1)
    model = random_model(tf.BertForSequenceClassification, config, 21)
    model.save_pretrained(OUT, safe_serialization=True)
    with open(os.path.join(OUT, "vocab.txt"), "w") as f:
        f.write("\n".join(VOCAB) + "\n")
    tokenizer = tf.BertTokenizer(os.path.join(OUT, "vocab.txt"))
    scores = []
    for document in DOCUMENTS:
        pair = tokenizer(QUERY, document, return_tensors="pt")
        with torch.no_grad():
            logit = model(**pair).logits[0, 0]
        scores.append(float(torch.sigmoid(logit)))
    with open(os.path.join(HERE, "Inputs", "bert-reranker.scores.json"),
              "w") as f:
        json.dump({"query": QUERY, "documents": DOCUMENTS, "scores": scores},
                  f, indent=1)
    print(scores)


if __name__ == "__main__":
    main()
