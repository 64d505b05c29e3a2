#!/usr/bin/env python3
"""Writes the encoder fixtures (test/e2e/encoders/Inputs/<name>/: config.json
+ model.safetensors, tiny random weights) and their goldens
(<name>.hidden.bin: little-endian f32 [len(TOKENS), hidden], the last hidden
state of TOKENS with TYPES as token types; RoBERTa's with ROBERTA_TOKENS,
which hold a padding token (id 1) that its positions skip) with the Hugging Face
transformers 4.40 model classes (../shared/reference). Regenerate with

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/encoders/make_encoder_goldens.py
"""
import os

import torch
import transformers as tf

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs")
TOKENS = [2, 17, 42, 5, 63, 0, 28, 9, 33, 3]
TYPES = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
ROBERTA_TOKENS = [0, 17, 42, 1, 63, 5, 28, 9, 2]
SIZES = dict(vocab_size=64, hidden_size=32, intermediate_size=48,
             num_hidden_layers=2, num_attention_heads=4,
             max_position_embeddings=16, type_vocab_size=2)


def randomize(model, seed):
    """Weights large enough that the outputs are far from flat; norm scales
    around 1 and every bias non-zero."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=g)
            is_scale = ("LayerNorm" in name or "layer_norm" in name) and name.endswith("weight")
            p.copy_(1 + 0.2 * noise if is_scale else 0.2 * noise)


def random_model(model_class, config, seed, **kwargs):
    """model_class(config) for inference with eager attention, its weights
    drawn from `seed` (torch's own initialization too)."""
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = model_class(config, **kwargs).eval()
    randomize(model, seed)
    return model


def write(name, model, tokens=TOKENS, types=TYPES):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    with torch.no_grad():
        extra = {} if types is None else {"token_type_ids": torch.tensor([types])}
        hidden = model(torch.tensor([tokens]), **extra).last_hidden_state[0]
    hidden.numpy().astype("<f4").tofile(os.path.join(OUT, name + ".hidden.bin"))
    print(f"{name}: hidden {tuple(hidden.shape)}, max |h| {hidden.abs().max():.2f}")


def write_mlm(name, model, tokens):
    """A *ForMaskedLM fixture: the logits of every position, f32 [tokens,
    vocab], as <name>.logits.bin."""
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    with torch.no_grad():
        logits = model(torch.tensor([tokens])).logits[0]
    logits.numpy().astype("<f4").tofile(os.path.join(OUT, name + ".logits.bin"))
    print(f"{name}: logits {tuple(logits.shape)}, max |l| {logits.abs().max():.2f}")


def write_classifier(name, model, tokens, types=None):
    """A classification fixture: logits, f32 [labels] per sequence or
    [tokens, labels] per token, as <name>.logits.bin."""
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    model.save_pretrained(folder, safe_serialization=True)
    extra = {} if types is None else {"token_type_ids": torch.tensor([types])}
    with torch.no_grad():
        logits = model(torch.tensor([tokens]), **extra).logits[0]
    logits.numpy().astype("<f4").tofile(os.path.join(OUT, name + ".logits.bin"))
    print(f"{name}: logits {tuple(logits.shape)}")


def main():
    config = tf.BertConfig(**SIZES, hidden_act="gelu")
    model = random_model(tf.BertModel, config, 1)
    write("bert", model)
    config = tf.ElectraConfig(**SIZES, embedding_size=16, hidden_act="gelu")
    model = random_model(tf.ElectraModel, config, 4)
    write("electra", model)
    config = tf.DistilBertConfig(vocab_size=64, dim=32, hidden_dim=48, n_layers=2,
                                 n_heads=4, max_position_embeddings=16,
                                 activation="gelu")
    model = random_model(tf.DistilBertModel, config, 5)
    write("distilbert", model, types=None)
    for name, config_class, model_class, seed in [
            ("roberta", tf.RobertaConfig, tf.RobertaModel, 2),
            ("xlm-roberta", tf.XLMRobertaConfig, tf.XLMRobertaModel, 3)]:
        sizes = dict(SIZES, max_position_embeddings=18, type_vocab_size=1)
        config = config_class(**sizes, hidden_act="gelu", pad_token_id=1,
                              layer_norm_eps=1e-5)
        model = random_model(model_class, config, seed, add_pooling_layer=False)
        write(name, model, ROBERTA_TOKENS, [0] * len(ROBERTA_TOKENS))
    # Masked-LM heads: BERT's transform uses hidden_act (here the tanh
    # GELU, to tell it from RoBERTa's head, which always uses the exact one).
    config = tf.BertConfig(**SIZES, hidden_act="gelu_new")
    model = random_model(tf.BertForMaskedLM, config, 6)
    write_mlm("bert-mlm", model, TOKENS)
    config = tf.RobertaConfig(**dict(SIZES, max_position_embeddings=18,
                                     type_vocab_size=1),
                              hidden_act="gelu", pad_token_id=1, layer_norm_eps=1e-5)
    model = random_model(tf.RobertaForMaskedLM, config, 7)
    write_mlm("roberta-mlm", model, ROBERTA_TOKENS)
    # DistilBERT's head (vocab_transform, activation, vocab_layer_norm, tied
    # vocab_projector) and ELECTRA's generator head, which narrows to the
    # embedding size with the exact GELU whatever hidden_act says.
    distil_sizes = dict(vocab_size=64, dim=32, hidden_dim=48, n_layers=2,
                        n_heads=4, max_position_embeddings=16)
    config = tf.DistilBertConfig(**distil_sizes, activation="gelu")
    model = random_model(tf.DistilBertForMaskedLM, config, 13)
    write_mlm("distilbert-mlm", model, TOKENS)
    config = tf.ElectraConfig(**SIZES, embedding_size=16, hidden_act="gelu_new")
    model = random_model(tf.ElectraForMaskedLM, config, 14)
    write_mlm("electra-mlm", model, TOKENS)
    # Classifiers, three labels named in id2label.
    labels = {"id2label": {"0": "negative", "1": "neutral", "2": "positive"},
              "label2id": {"negative": 0, "neutral": 1, "positive": 2}}
    config = tf.BertConfig(**SIZES, hidden_act="gelu", **labels)
    model = random_model(tf.BertForSequenceClassification, config, 8)
    write_classifier("bert-sequence", model, TOKENS, TYPES)
    model = random_model(tf.BertForTokenClassification, config, 9)
    write_classifier("bert-tokens", model, TOKENS, TYPES)
    config = tf.RobertaConfig(**dict(SIZES, max_position_embeddings=18,
                                     type_vocab_size=1),
                              hidden_act="gelu", pad_token_id=1, layer_norm_eps=1e-5,
                              **labels)
    model = random_model(tf.RobertaForSequenceClassification, config, 10)
    write_classifier("roberta-sequence", model, ROBERTA_TOKENS)
    model = random_model(tf.RobertaForTokenClassification, config, 11)
    write_classifier("roberta-tokens", model, ROBERTA_TOKENS)
    config = tf.ElectraConfig(**SIZES, embedding_size=16, hidden_act="gelu", **labels)
    model = random_model(tf.ElectraForTokenClassification, config, 12)
    write_classifier("electra-tokens", model, TOKENS, TYPES)
    # ELECTRA's sequence head: dense + exact GELU + out_proj on the first
    # token; DistilBERT's: pre_classifier + ReLU + classifier.
    model = random_model(tf.ElectraForSequenceClassification, config, 15)
    write_classifier("electra-sequence", model, TOKENS, TYPES)
    config = tf.DistilBertConfig(**distil_sizes, activation="gelu", **labels)
    model = random_model(tf.DistilBertForSequenceClassification, config, 16)
    write_classifier("distilbert-sequence", model, TOKENS)
    model = random_model(tf.DistilBertForTokenClassification, config, 17)
    write_classifier("distilbert-tokens", model, TOKENS)


if __name__ == "__main__":
    main()
