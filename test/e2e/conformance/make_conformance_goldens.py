#!/usr/bin/env python3
"""Writes the conformance suite's manifests (Inputs/NAME.json) and goldens
(Inputs/NAME.logits.bin): for each model, its published config.json,
generation_config.json and tokenizer_config.json values, cut down only in
depth (2 layers) and width (a few heads of a few dimensions, a narrow MLP),
with the published vocabulary size, padding, tied or untied head, special
token ids, rope scaling and epsilons kept; the tokenizer's published shape;
the tensor names transformers 4.40 saves for the cut config. make_fixture.py
writes the checkpoint (random bf16 weights from a seed); the golden is
transformers' logits of every position of the model's TOKENS, at the
columns make_fixture.py --columns keeps. Llama 3's rope scaling postdates
4.40: its golden runs LlamaForCausalLM with the inverse frequencies
replaced by the published formula's (as make_family_goldens.py does).

    bash ../shared/reference/setup.sh && source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/conformance/make_conformance_goldens.py [NAME...]
"""
import json
import os
import shutil
import struct
import sys
import tempfile

import torch
import transformers as tf

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import make_fixture  # noqa: E402
from make_family_goldens import (llama3_inverse_frequencies,  # noqa: E402
                                 Gemma2ForCausalLM440, OlmoeForCausalLM440,
                                 Phi3ForCausalLM440, Qwen3ForCausalLM440,
                                 Qwen3MoeForCausalLM440)

OUT = os.path.join(HERE, "Inputs")

GPT2_BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False,
                   "trim_offsets": True, "use_regex": True}
LLAMA3_SPLIT = {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     "behavior": "Isolated", "invert": False},
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
     "use_regex": False}]}
QWEN2_SPLIT = {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     "behavior": "Isolated", "invert": False},
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False,
     "use_regex": False}]}
STARCODER_SPLIT = {"type": "Sequence", "pretokenizers": [
    {"type": "Digits", "individual_digits": True},
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
     "use_regex": True}]}


def added(first, names, special=True):
    return {str(first + i): {"content": n, "special": special}
            for i, n in enumerate(names)}


def spaces(first, longest, shortest):
    """GPT-NeoX-20B's and CodeGen's added runs of spaces, longest first."""
    return added(first, [" " * n for n in range(longest, shortest - 1, -1)],
                 special=False)


QWEN2_ADDED = added(151643, [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>",
    "<|object_ref_end|>", "<|box_start|>", "<|box_end|>", "<|quad_start|>",
    "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
    "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>"])
for _id in ("151657", "151658", "151659", "151660", "151661", "151662",
            "151663", "151664"):
    QWEN2_ADDED[_id]["special"] = False
# Qwen3's: Qwen2's and four more that are text (tool responses, thinking).
QWEN3_ADDED = {**QWEN2_ADDED, **added(151665, [
    "<tool_response>", "</tool_response>", "<think>", "</think>"],
    special=False)}
LLAMA3_ADDED = added(128000, [
    "<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
    "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>",
    "<|reserved_special_token_2|>", "<|start_header_id|>",
    "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>", "<|python_tag|>"] +
    [f"<|reserved_special_token_{i}|>" for i in range(3, 248)])
NEOX_ADDED = {**added(0, ["<|endoftext|>", "<|padding|>"]),
              **spaces(50254, 24, 2)}
OLMO_ADDED = {**added(0, ["|||IP_ADDRESS|||"]), **added(1, ["<|padding|>"]),
              **spaces(50254, 24, 2),
              **added(50277, ["|||EMAIL_ADDRESS|||", "|||PHONE_NUMBER|||",
                              "<|endoftext|>"])}
CODEGEN_ADDED = {**added(50256, ["<|endoftext|>"]), **spaces(50257, 31, 2),
                 **added(50287, ["\t" * n for n in range(9, 1, -1)],
                         special=False)}
STARCODER_ADDED = added(0, [
    "<|endoftext|>", "<fim_prefix>", "<fim_middle>", "<fim_suffix>",
    "<fim_pad>", "<repo_name>", "<file_sep>", "<issue_start>",
    "<issue_comment>", "<issue_closed>", "<jupyter_start>", "<jupyter_text>",
    "<jupyter_code>", "<jupyter_output>", "<jupyter_script>",
    "<empty_output>", "<code_to_intermediate>", "<intermediate_to_code>",
    "<pr>", "<pr_status>", "<pr_is_merged>", "<pr_base>", "<pr_file>",
    "<pr_base_code>", "<pr_diff>", "<pr_diff_hunk>", "<pr_comment>",
    "<pr_event_id>", "<pr_review>", "<pr_review_state>",
    "<pr_review_comment>", "<pr_in_reply_to_review_id>",
    "<pr_in_reply_to_comment_id>", "<pr_diff_hunk_comment_line>",
    "<NAME>", "<EMAIL>", "<KEY>", "<PASSWORD>"])


def tokenizer_config(added_tokens, **fields):
    return {"added_tokens_decoder": {
        i: {"content": t["content"], "lstrip": False, "normalized": False,
            "rstrip": False, "single_word": False,
            "special": t.get("special", True)}
        for i, t in added_tokens.items()}, **fields}


def byte_level(normal, added_tokens, pre, normalizer=None, ignore_merges=False,
               post_processor=None):
    return {"kind": "byte_level_bpe", "normal_tokens": normal,
            "added_tokens": added_tokens, "pre_tokenizer": pre,
            "normalizer": normalizer, "ignore_merges": ignore_merges,
            "post_processor": post_processor}


def bos_template(bos, bos_id):
    """A TemplateProcessing post-processor that puts BOS first (Llama 3's)."""
    return {"type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": bos, "type_id": 0}},
                       {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": bos, "type_id": 0}},
                     {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": bos, "type_id": 1}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {bos: {"id": bos, "ids": [bos_id],
                                     "tokens": [bos]}}}


# Each model: its transformers classes, its published files' values (the
# cut sizes marked), a tokenizer of the published shape (None: ids only,
# the published tokenizer is SentencePiece's or tiktoken's), the ids fed.
MODELS = {
    "qwen2.5-0.5b-instruct": dict(
        classes=(tf.Qwen2Config, tf.Qwen2ForCausalLM),
        config={"architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0,
                "bos_token_id": 151643, "eos_token_id": 151645,
                "hidden_act": "silu", "initializer_range": 0.02,
                "max_position_embeddings": 32768, "max_window_layers": 21,
                "model_type": "qwen2", "rms_norm_eps": 1e-06,
                "rope_theta": 1000000.0, "sliding_window": 32768,
                "tie_word_embeddings": True, "torch_dtype": "bfloat16",
                "use_cache": True, "use_sliding_window": False,
                "vocab_size": 151936,
                # cut: 896 wide, 4864, 24 layers, 14/2 heads of 64
                "hidden_size": 28, "intermediate_size": 24,
                "num_hidden_layers": 2, "num_attention_heads": 7,
                "num_key_value_heads": 1},
        generation_config={"bos_token_id": 151643, "do_sample": True,
                           "eos_token_id": [151645, 151643],
                           "pad_token_id": 151643, "repetition_penalty": 1.1,
                           "temperature": 0.7, "top_k": 20, "top_p": 0.8},
        tokenizer=byte_level(151643, QWEN2_ADDED, QWEN2_SPLIT, {"type": "NFC"}),
        tokenizer_config=tokenizer_config(
            QWEN2_ADDED, bos_token=None, eos_token="<|im_end|>",
            pad_token="<|endoftext|>", model_max_length=131072,
            tokenizer_class="Qwen2Tokenizer", errors="replace",
            split_special_tokens=False),
        tokens=[151644, 872, 198, 9707, 11, 1879, 0, 151645, 198, 151664,
                151665, 151935]),
    "pythia-160m": dict(
        classes=(tf.GPTNeoXConfig, tf.GPTNeoXForCausalLM),
        config={"architectures": ["GPTNeoXForCausalLM"], "bos_token_id": 0,
                "eos_token_id": 0, "hidden_act": "gelu",
                "initializer_range": 0.02, "layer_norm_eps": 1e-05,
                "max_position_embeddings": 2048, "model_type": "gpt_neox",
                "rotary_emb_base": 10000, "rotary_pct": 0.25,
                "tie_word_embeddings": False, "torch_dtype": "float16",
                "use_cache": True, "use_parallel_residual": True,
                "vocab_size": 50304,
                # cut: 768 wide, 3072, 12 layers, 12 heads of 64
                "hidden_size": 64, "intermediate_size": 48,
                "num_hidden_layers": 2, "num_attention_heads": 4},
        tokenizer=byte_level(50254, NEOX_ADDED, GPT2_BYTE_LEVEL, {"type": "NFC"}),
        tokenizer_config=tokenizer_config(
            {k: v for k, v in NEOX_ADDED.items() if int(k) < 2},
            bos_token="<|endoftext|>", eos_token="<|endoftext|>",
            unk_token="<|endoftext|>", tokenizer_class="GPTNeoXTokenizer"),
        tokens=[0, 12092, 13, 310, 247, 1071, 50254, 50276, 50277, 50300,
                50303, 187]),
    "phi-2": dict(
        classes=(tf.PhiConfig, tf.PhiForCausalLM),
        config={"architectures": ["PhiForCausalLM"], "attention_dropout": 0.0,
                "bos_token_id": 50256, "embd_pdrop": 0.0,
                "eos_token_id": 50256, "hidden_act": "gelu_new",
                "initializer_range": 0.02, "layer_norm_eps": 1e-05,
                "max_position_embeddings": 2048, "model_type": "phi",
                "partial_rotary_factor": 0.4, "qk_layernorm": False,
                "resid_pdrop": 0.1, "rope_scaling": None, "rope_theta": 10000.0,
                "tie_word_embeddings": False, "torch_dtype": "float16",
                "use_cache": True, "vocab_size": 51200,
                # cut: 2560 wide, 10240, 32 layers, 32 heads of 80
                "hidden_size": 40, "intermediate_size": 32,
                "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 4},
        tokenizer=byte_level(50256, CODEGEN_ADDED, GPT2_BYTE_LEVEL),
        tokenizer_config=tokenizer_config(
            {"50256": CODEGEN_ADDED["50256"]}, bos_token="<|endoftext|>",
            eos_token="<|endoftext|>", unk_token="<|endoftext|>",
            model_max_length=2048, tokenizer_class="CodeGenTokenizer"),
        tokens=[50256, 464, 3139, 7586, 21831, 50257, 50294, 50295, 51000,
                51199, 13, 198]),
    "olmo-1b-hf": dict(
        classes=(tf.OlmoConfig, tf.OlmoForCausalLM),
        config={"architectures": ["OlmoForCausalLM"], "attention_bias": False,
                "attention_dropout": 0.0, "bos_token_id": None,
                "clip_qkv": None, "eos_token_id": 50279, "hidden_act": "silu",
                "initializer_range": 0.02, "max_position_embeddings": 2048,
                "model_type": "olmo", "pad_token_id": 1, "pretraining_tp": 1,
                "rope_scaling": None, "rope_theta": 10000.0,
                "tie_word_embeddings": True, "torch_dtype": "float32",
                "use_cache": True, "vocab_size": 50304,
                # cut: 2048 wide, 8192, 16 layers, 16 heads of 128
                "hidden_size": 32, "intermediate_size": 48,
                "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 4},
        tokenizer=byte_level(50254, OLMO_ADDED, GPT2_BYTE_LEVEL, {"type": "NFC"}),
        tokenizer_config=tokenizer_config(
            {k: v for k, v in OLMO_ADDED.items() if v.get("special", True)},
            eos_token="<|endoftext|>", pad_token="<|padding|>",
            tokenizer_class="GPTNeoXTokenizer"),
        tokens=[50279, 12092, 13, 310, 1, 50277, 50278, 50280, 50303, 187,
                2, 0]),
    "olmo-7b-0424-hf": dict(
        classes=(tf.OlmoConfig, tf.OlmoForCausalLM),
        config={"architectures": ["OlmoForCausalLM"], "attention_bias": False,
                "attention_dropout": 0.0, "bos_token_id": None,
                "clip_qkv": 8.0, "eos_token_id": 50279, "hidden_act": "silu",
                "initializer_range": 0.02, "max_position_embeddings": 4096,
                "model_type": "olmo", "pad_token_id": 1, "pretraining_tp": 1,
                "rope_scaling": None, "rope_theta": 10000.0,
                "tie_word_embeddings": False, "torch_dtype": "float32",
                "use_cache": True, "vocab_size": 50304,
                # cut: 4096 wide, 11008, 32 layers, 32 heads of 128
                "hidden_size": 32, "intermediate_size": 48,
                "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 4},
        tokens=[50279, 12092, 13, 310, 1, 50277, 50278, 50280, 50303, 187,
                2, 0]),
    "stablelm-2-1.6b": dict(
        classes=(tf.StableLmConfig, tf.StableLmForCausalLM),
        config={"architectures": ["StableLmForCausalLM"],
                "bos_token_id": 100257, "eos_token_id": 100257,
                "hidden_act": "silu", "initializer_range": 0.02,
                "layer_norm_eps": 1e-05, "max_position_embeddings": 4096,
                "model_type": "stablelm", "partial_rotary_factor": 0.25,
                "qk_layernorm": False, "rope_scaling": None,
                "rope_theta": 10000, "tie_word_embeddings": False,
                "use_cache": True, "use_parallel_residual": False,
                "use_qkv_bias": True, "vocab_size": 100352,
                # cut: 2048 wide, 5632, 24 layers, 32 heads of 64
                "hidden_size": 64, "intermediate_size": 40,
                "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 4},
        tokens=[100257, 9906, 11, 1917, 0, 100289, 100290, 100351, 13, 198,
                100258, 42]),
    "llama-3.2-1b": dict(
        classes=(tf.LlamaConfig, tf.LlamaForCausalLM),
        config={"architectures": ["LlamaForCausalLM"], "attention_bias": False,
                "attention_dropout": 0.0, "bos_token_id": 128000,
                "eos_token_id": 128001, "hidden_act": "silu",
                "initializer_range": 0.02, "max_position_embeddings": 131072,
                "mlp_bias": False, "model_type": "llama", "pretraining_tp": 1,
                "rms_norm_eps": 1e-05,
                "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0,
                                 "low_freq_factor": 1.0,
                                 "original_max_position_embeddings": 8192,
                                 "rope_type": "llama3"},
                "rope_theta": 500000.0, "tie_word_embeddings": True,
                "torch_dtype": "bfloat16", "use_cache": True,
                "vocab_size": 128256,
                # cut: 2048 wide, 8192, 16 layers, 32/8 heads of 64
                "hidden_size": 32, "intermediate_size": 48,
                "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 1, "head_dim": 8},
        generation_config={"bos_token_id": 128000, "do_sample": True,
                           "eos_token_id": 128001, "temperature": 0.6,
                           "top_p": 0.9},
        tokenizer=byte_level(128000, LLAMA3_ADDED, LLAMA3_SPLIT,
                             ignore_merges=True,
                             post_processor=bos_template("<|begin_of_text|>",
                                                         128000)),
        tokenizer_config=tokenizer_config(
            LLAMA3_ADDED, bos_token="<|begin_of_text|>",
            eos_token="<|end_of_text|>", model_max_length=131072,
            tokenizer_class="PreTrainedTokenizerFast",
            model_input_names=["input_ids", "attention_mask"]),
        tokens=[128000, 9906, 11, 1917, 0, 128006, 128007, 128009, 128255,
                271, 127999, 13]),
    "gpt2": dict(
        classes=(tf.GPT2Config, tf.GPT2LMHeadModel),
        config={"activation_function": "gelu_new",
                "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
                "bos_token_id": 50256, "embd_pdrop": 0.1,
                "eos_token_id": 50256, "initializer_range": 0.02,
                "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
                "n_ctx": 1024, "n_positions": 1024, "resid_pdrop": 0.1,
                "summary_activation": None, "summary_first_dropout": 0.1,
                "summary_proj_to_labels": True, "summary_type": "cls_index",
                "summary_use_proj": True,
                "task_specific_params": {"text-generation": {
                    "do_sample": True, "max_length": 50}},
                "vocab_size": 50257,
                # cut: 768 wide, 12 layers, 12 heads
                "n_embd": 32, "n_head": 4, "n_layer": 2},
        tokenizer=byte_level(50256, added(50256, ["<|endoftext|>"]),
                             GPT2_BYTE_LEVEL),
        tokenizer_config={"model_max_length": 1024},
        tokens=[50256, 15496, 11, 995, 0, 50255, 13, 198, 464, 3290, 318, 50256]),
    "mistral-7b-v0.1": dict(
        classes=(tf.MistralConfig, tf.MistralForCausalLM),
        config={"architectures": ["MistralForCausalLM"], "bos_token_id": 1,
                "eos_token_id": 2, "hidden_act": "silu",
                "initializer_range": 0.02, "max_position_embeddings": 32768,
                "model_type": "mistral", "rms_norm_eps": 1e-05,
                "rope_theta": 10000.0, "sliding_window": 4096,
                "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                "use_cache": True, "vocab_size": 32000,
                # cut: 4096 wide, 14336, 32 layers, 32/8 heads of 128
                "hidden_size": 32, "intermediate_size": 48,
                "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 1},
        generation_config={"bos_token_id": 1, "eos_token_id": 2},
        tokens=[1, 22557, 28725, 1526, 28808, 2, 0, 31999, 13, 28705, 415, 1]),
    "gemma-2b": dict(
        classes=(tf.GemmaConfig, tf.GemmaForCausalLM),
        config={"architectures": ["GemmaForCausalLM"], "attention_bias": False,
                "attention_dropout": 0.0, "bos_token_id": 2,
                "eos_token_id": 1, "hidden_act": "gelu",
                "initializer_range": 0.02, "max_position_embeddings": 8192,
                "model_type": "gemma", "pad_token_id": 0,
                "rms_norm_eps": 1e-06, "rope_scaling": None,
                "rope_theta": 10000.0, "torch_dtype": "bfloat16",
                "use_cache": True, "vocab_size": 256000,
                # cut: 2048 wide, 16384, 18 layers, 8/1 heads of 256
                "hidden_size": 16, "intermediate_size": 32,
                "num_hidden_layers": 2, "num_attention_heads": 8,
                "num_key_value_heads": 1, "head_dim": 4},
        generation_config={"bos_token_id": 2, "eos_token_id": 1,
                           "pad_token_id": 0},
        tokens=[2, 4521, 235269, 2134, 235341, 1, 0, 255999, 106, 107, 108, 3]),
    "starcoder2-3b": dict(
        classes=(tf.Starcoder2Config, tf.Starcoder2ForCausalLM),
        config={"architectures": ["Starcoder2ForCausalLM"],
                "attention_dropout": 0.1, "bos_token_id": 0,
                "embedding_dropout": 0.1, "eos_token_id": 0,
                "hidden_act": "gelu_pytorch_tanh",
                "initializer_range": 0.018042,
                "max_position_embeddings": 16384, "mlp_type": "default",
                "model_type": "starcoder2", "norm_epsilon": 1e-05,
                "norm_type": "layer_norm", "residual_dropout": 0.1,
                "rope_theta": 999999.4420358813, "sliding_window": 4096,
                "torch_dtype": "bfloat16", "use_bias": True,
                "use_cache": True, "vocab_size": 49152,
                # cut: 3072 wide, 12288, 30 layers, 24/2 heads of 128
                "hidden_size": 48, "intermediate_size": 32,
                "num_hidden_layers": 2, "num_attention_heads": 6,
                "num_key_value_heads": 2},
        tokenizer=byte_level(49152 - len(STARCODER_ADDED), STARCODER_ADDED,
                             STARCODER_SPLIT),
        tokenizer_config=tokenizer_config(
            STARCODER_ADDED, bos_token="<|endoftext|>",
            eos_token="<|endoftext|>", unk_token="<|endoftext|>",
            model_max_length=1000000000000000019884624838656,
            tokenizer_class="GPT2Tokenizer"),
        tokens=[0, 589, 17966, 365, 4, 5, 49151, 44, 45, 46, 222, 1]),
    "bert-base-uncased": dict(
        kind="masked-lm",
        classes=(tf.BertConfig, tf.BertForMaskedLM),
        config={"architectures": ["BertForMaskedLM"],
                "attention_probs_dropout_prob": 0.1,
                "gradient_checkpointing": False, "hidden_act": "gelu",
                "hidden_dropout_prob": 0.1, "initializer_range": 0.02,
                "layer_norm_eps": 1e-12, "max_position_embeddings": 512,
                "model_type": "bert", "pad_token_id": 0,
                "position_embedding_type": "absolute",
                "transformers_version": "4.6.0.dev0", "type_vocab_size": 2,
                "use_cache": True, "vocab_size": 30522,
                # cut: 768 wide, 3072, 12 layers, 12 heads
                "hidden_size": 32, "intermediate_size": 48,
                "num_hidden_layers": 2, "num_attention_heads": 4},
        tokens=[101, 7592, 1010, 2088, 999, 102, 30521, 0, 100, 103, 2023,
                102]),
    "roberta-base": dict(
        kind="masked-lm",
        classes=(tf.RobertaConfig, tf.RobertaForMaskedLM),
        config={"architectures": ["RobertaForMaskedLM"],
                "attention_probs_dropout_prob": 0.1, "bos_token_id": 0,
                "eos_token_id": 2, "hidden_act": "gelu",
                "hidden_dropout_prob": 0.1, "initializer_range": 0.02,
                "layer_norm_eps": 1e-05, "max_position_embeddings": 514,
                "model_type": "roberta", "pad_token_id": 1,
                "type_vocab_size": 1, "vocab_size": 50265,
                # cut: 768 wide, 3072, 12 layers, 12 heads
                "hidden_size": 32, "intermediate_size": 48,
                "num_hidden_layers": 2, "num_attention_heads": 4},
        tokens=[0, 31414, 6, 232, 328, 2, 50264, 3, 4, 50263, 1437, 2]),
    "t5-small": dict(
        kind="seq2seq",
        classes=(tf.T5Config, tf.T5ForConditionalGeneration),
        config={"architectures": ["T5ForConditionalGeneration"],
                "decoder_start_token_id": 0,
                "dropout_rate": 0.1, "eos_token_id": 1,
                "initializer_factor": 1.0, "is_encoder_decoder": True,
                "layer_norm_epsilon": 1e-06, "model_type": "t5",
                "n_positions": 512, "output_past": True, "pad_token_id": 0,
                "relative_attention_num_buckets": 32, "vocab_size": 32128,
                # cut: d_model 512, d_ff 2048, 6 layers, 8 heads of 64
                "d_model": 32, "d_ff": 48, "d_kv": 8, "num_layers": 2,
                "num_decoder_layers": 2, "num_heads": 4},
        tokens=[8774, 10, 8, 1712, 19, 1627, 32099, 32127, 5, 1],
        decoder_tokens=[0, 32099, 8, 1712, 32100, 32127, 1]),
    "whisper-tiny": dict(
        kind="speech-seq2seq",
        classes=(tf.WhisperConfig, tf.WhisperForConditionalGeneration),
        config={"activation_dropout": 0.0, "activation_function": "gelu",
                "architectures": ["WhisperForConditionalGeneration"],
                "attention_dropout": 0.0, "begin_suppress_tokens": [220, 50257],
                "bos_token_id": 50257, "decoder_start_token_id": 50258,
                "dropout": 0.0, "eos_token_id": 50257,
                "init_std": 0.02, "is_encoder_decoder": True,
                "max_source_positions": 1500, "max_target_positions": 448,
                "model_type": "whisper", "num_mel_bins": 80,
                "pad_token_id": 50257, "scale_embedding": False,
                "use_cache": True, "vocab_size": 51865,
                # cut: d_model 384, ffn 1536, 4 + 4 layers, 6 heads
                "d_model": 16, "decoder_attention_heads": 2,
                "decoder_ffn_dim": 32, "decoder_layers": 1,
                "encoder_attention_heads": 2, "encoder_ffn_dim": 32,
                "encoder_layers": 1, "num_hidden_layers": 1},
        preprocessor_config={"chunk_length": 30, "feature_extractor_type":
                             "WhisperFeatureExtractor", "feature_size": 80,
                             "hop_length": 160, "n_fft": 400,
                             "n_samples": 480000, "nb_max_frames": 3000,
                             "padding_side": "right", "padding_value": 0.0,
                             "processor_class": "WhisperProcessor",
                             "return_attention_mask": False,
                             "sampling_rate": 16000},
        features=[80, 3000, 7],
        tokens=[],
        decoder_tokens=[50258, 50259, 50359, 50363, 2425, 11, 1002, 0,
                        51864, 50257]),
    "distilbert-base-uncased": dict(
        kind="masked-lm",
        classes=(tf.DistilBertConfig, tf.DistilBertForMaskedLM),
        config={"activation": "gelu", "architectures": ["DistilBertForMaskedLM"],
                "attention_dropout": 0.1, "dropout": 0.1,
                "initializer_range": 0.02, "max_position_embeddings": 512,
                "model_type": "distilbert", "pad_token_id": 0,
                "qa_dropout": 0.1, "seq_classif_dropout": 0.2,
                "sinusoidal_pos_embds": False, "tie_weights_": True,
                "vocab_size": 30522,
                # cut: dim 768, hidden_dim 3072, 6 layers, 12 heads
                "dim": 32, "hidden_dim": 48, "n_layers": 2, "n_heads": 4},
        tokens=[101, 7592, 1010, 2088, 999, 102, 30521, 0, 100, 103, 2023,
                102]),
    "xlm-roberta-base": dict(
        kind="masked-lm",
        classes=(tf.XLMRobertaConfig, tf.XLMRobertaForMaskedLM),
        config={"architectures": ["XLMRobertaForMaskedLM"],
                "attention_probs_dropout_prob": 0.1, "bos_token_id": 0,
                "eos_token_id": 2, "hidden_act": "gelu",
                "hidden_dropout_prob": 0.1, "initializer_range": 0.02,
                "layer_norm_eps": 1e-05, "max_position_embeddings": 514,
                "model_type": "xlm-roberta", "output_past": True,
                "pad_token_id": 1, "position_embedding_type": "absolute",
                "type_vocab_size": 1, "use_cache": True, "vocab_size": 250002,
                # cut: 768 wide, 3072, 12 layers, 12 heads
                "hidden_size": 16, "intermediate_size": 24,
                "num_hidden_layers": 2, "num_attention_heads": 4},
        tokens=[0, 35378, 4, 8999, 38, 2, 250001, 3, 250000, 6, 5, 2]),
    "electra-small-generator": dict(
        kind="masked-lm",
        classes=(tf.ElectraConfig, tf.ElectraForMaskedLM),
        config={"architectures": ["ElectraForMaskedLM"],
                "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
                "hidden_dropout_prob": 0.1, "initializer_range": 0.02,
                "layer_norm_eps": 1e-12, "max_position_embeddings": 512,
                "model_type": "electra", "pad_token_id": 0,
                "type_vocab_size": 2, "vocab_size": 30522,
                # cut: embeddings 128, 256 wide, 1024, 12 layers, 4 heads
                "embedding_size": 16, "hidden_size": 32,
                "intermediate_size": 48, "num_hidden_layers": 2,
                "num_attention_heads": 4},
        tokens=[101, 7592, 1010, 2088, 999, 102, 30521, 0, 100, 103, 2023,
                102]),
    "bart-base": dict(
        kind="seq2seq",
        classes=(tf.BartConfig, tf.BartForConditionalGeneration),
        config={"activation_dropout": 0.1, "activation_function": "gelu",
                "add_bias_logits": False, "add_final_layer_norm": False,
                "architectures": ["BartModel"], "attention_dropout": 0.1,
                "bos_token_id": 0, "classif_dropout": 0.1,
                "classifier_dropout": 0.0, "decoder_layerdrop": 0.0,
                "decoder_start_token_id": 2, "dropout": 0.1,
                "early_stopping": True, "encoder_layerdrop": 0.0,
                "eos_token_id": 2, "forced_eos_token_id": 2,
                "gradient_checkpointing": False, "init_std": 0.02,
                "is_encoder_decoder": True, "max_position_embeddings": 1024,
                "model_type": "bart", "no_repeat_ngram_size": 3,
                "normalize_before": False, "normalize_embedding": True,
                "num_beams": 4, "pad_token_id": 1, "scale_embedding": False,
                "use_cache": True, "vocab_size": 50265,
                # cut: d_model 768, ffn 3072, 6 + 6 layers, 12 heads
                "d_model": 32, "decoder_attention_heads": 4,
                "decoder_ffn_dim": 48, "decoder_layers": 2,
                "encoder_attention_heads": 4, "encoder_ffn_dim": 48,
                "encoder_layers": 2, "num_hidden_layers": 2},
        tokens=[0, 31414, 6, 232, 328, 50264, 3, 50263, 2],
        decoder_tokens=[2, 0, 31414, 6, 232, 50264, 1, 2]),
    "opus-mt-en-de": dict(
        kind="seq2seq",
        classes=(tf.MarianConfig, tf.MarianMTModel),
        config={"activation_dropout": 0.0, "activation_function": "swish",
                "add_bias_logits": False, "add_final_layer_norm": False,
                "architectures": ["MarianMTModel"], "attention_dropout": 0.0,
                "bad_words_ids": [[58100]], "bos_token_id": 0,
                "classif_dropout": 0.0, "classifier_dropout": 0.0,
                "decoder_layerdrop": 0.0, "decoder_start_token_id": 58100,
                "decoder_vocab_size": 58101, "dropout": 0.1,
                "encoder_layerdrop": 0.0, "eos_token_id": 0,
                "forced_eos_token_id": 0, "init_std": 0.02,
                "is_encoder_decoder": True, "max_length": 512,
                "max_position_embeddings": 512, "model_type": "marian",
                "normalize_before": False, "normalize_embedding": False,
                "num_beams": 4, "pad_token_id": 58100,
                "scale_embedding": True,
                "share_encoder_decoder_embeddings": True,
                "static_position_embeddings": True, "vocab_size": 58101,
                # cut: d_model 512, ffn 2048, 6 + 6 layers, 8 heads
                "d_model": 32, "decoder_attention_heads": 4,
                "decoder_ffn_dim": 48, "decoder_layers": 2,
                "encoder_attention_heads": 4, "encoder_ffn_dim": 48,
                "encoder_layers": 2, "num_hidden_layers": 2},
        tokens=[160, 2072, 5, 58099, 3, 0],
        decoder_tokens=[58100, 3, 2072, 58099, 5, 58100, 0]),
    "vit-base-patch16-224": dict(
        kind="image-classification",
        classes=(tf.ViTConfig, tf.ViTForImageClassification),
        config={"architectures": ["ViTForImageClassification"],
                "attention_probs_dropout_prob": 0.0, "hidden_act": "gelu",
                "hidden_dropout_prob": 0.0, "image_size": 224,
                "initializer_range": 0.02, "layer_norm_eps": 1e-12,
                "model_type": "vit", "num_channels": 3, "patch_size": 16,
                "qkv_bias": True,
                # 1000 ImageNet classes (published names not kept)
                "id2label": {str(i): f"class {i}" for i in range(1000)},
                "label2id": {f"class {i}": i for i in range(1000)},
                # cut: 768 wide, 3072, 12 layers, 12 heads
                "hidden_size": 32, "intermediate_size": 48,
                "num_hidden_layers": 2, "num_attention_heads": 4},
        preprocessor_config={"do_normalize": True, "do_resize": True,
                             "image_mean": [0.5, 0.5, 0.5],
                             "image_processor_type": "ViTImageProcessor",
                             "image_std": [0.5, 0.5, 0.5], "resample": 2,
                             "size": 224},
        features=[3, 224 * 224, 11],
        tokens=[]),
    "mbart-large-cc25": dict(
        kind="seq2seq",
        classes=(tf.MBartConfig, tf.MBartForConditionalGeneration),
        config={"activation_dropout": 0.0, "activation_function": "gelu",
                "add_bias_logits": False, "add_final_layer_norm": True,
                "architectures": ["MBartForConditionalGeneration"],
                "attention_dropout": 0.0, "bos_token_id": 0,
                "classif_dropout": 0.0, "decoder_layerdrop": 0.0,
                "dropout": 0.1, "encoder_layerdrop": 0.0, "eos_token_id": 2,
                "init_std": 0.02, "is_encoder_decoder": True,
                "max_position_embeddings": 1024, "model_type": "mbart",
                "normalize_before": True, "normalize_embedding": True,
                "output_past": True, "pad_token_id": 1,
                "scale_embedding": True, "static_position_embeddings": False,
                "vocab_size": 250027,
                # cut: d_model 1024, ffn 4096, 12 + 12 layers, 16 heads
                "d_model": 16, "decoder_attention_heads": 4,
                "decoder_ffn_dim": 24, "decoder_layers": 2,
                "encoder_attention_heads": 4, "encoder_ffn_dim": 24,
                "encoder_layers": 2, "num_hidden_layers": 2},
        tokens=[35378, 4, 8999, 38, 2, 250004],
        # No decoder_start_token_id: generation starts from BOS (0).
        decoder_tokens=[0, 250004, 35378, 4, 250026, 5, 2]),
    "deit-base-distilled-patch16-224": dict(
        kind="image-classification",
        classes=(tf.DeiTConfig, tf.DeiTForImageClassificationWithTeacher),
        config={"architectures": ["DeiTForImageClassificationWithTeacher"],
                "attention_probs_dropout_prob": 0.0, "encoder_stride": 16,
                "hidden_act": "gelu", "hidden_dropout_prob": 0.0,
                "image_size": 224, "initializer_range": 0.02,
                "layer_norm_eps": 1e-12, "model_type": "deit",
                "num_channels": 3, "patch_size": 16, "qkv_bias": True,
                # 1000 ImageNet classes (published names not kept)
                "id2label": {str(i): f"class {i}" for i in range(1000)},
                "label2id": {f"class {i}": i for i in range(1000)},
                # cut: 768 wide, 3072, 12 layers, 12 heads
                "hidden_size": 32, "intermediate_size": 48,
                "num_hidden_layers": 2, "num_attention_heads": 4},
        preprocessor_config={"crop_size": 224, "do_center_crop": True,
                             "do_normalize": True, "do_resize": True,
                             "image_mean": [0.485, 0.456, 0.406],
                             "image_processor_type": "DeiTImageProcessor",
                             "image_std": [0.229, 0.224, 0.225],
                             "resample": 3, "size": 256},
        features=[3, 224 * 224, 13],
        tokens=[]),
    "wav2vec2-base-960h": dict(
        kind="speech-ctc",
        classes=(tf.Wav2Vec2Config, tf.Wav2Vec2ForCTC),
        config={"activation_dropout": 0.1, "apply_spec_augment": True,
                "architectures": ["Wav2Vec2ForCTC"], "attention_dropout": 0.1,
                "bos_token_id": 1, "conv_bias": False,
                "conv_kernel": [10, 3, 3, 3, 3, 2, 2],
                "conv_stride": [5, 2, 2, 2, 2, 2, 2],
                "ctc_loss_reduction": "sum", "ctc_zero_infinity": False,
                "do_stable_layer_norm": False, "eos_token_id": 2,
                "feat_extract_activation": "gelu",
                "feat_extract_dropout": 0.0, "feat_extract_norm": "group",
                "feat_proj_dropout": 0.1, "final_dropout": 0.1,
                "hidden_act": "gelu", "hidden_dropout": 0.1,
                "initializer_range": 0.02, "layer_norm_eps": 1e-05,
                "layerdrop": 0.1, "mask_feature_length": 10,
                "mask_feature_prob": 0.0, "mask_time_length": 10,
                "mask_time_prob": 0.05, "model_type": "wav2vec2",
                "num_conv_pos_embedding_groups": 16,
                "num_conv_pos_embeddings": 128, "num_feat_extract_layers": 7,
                "pad_token_id": 0, "vocab_size": 32,
                # cut: conv_dim 512 x 7, 768 wide, 3072, 12 layers, 12 heads
                "conv_dim": [16] * 7, "hidden_size": 32,
                "intermediate_size": 48, "num_hidden_layers": 2,
                "num_attention_heads": 4},
        preprocessor_config={"do_normalize": True,
                             "feature_extractor_type": "Wav2Vec2FeatureExtractor",
                             "feature_size": 1, "padding_side": "right",
                             "padding_value": 0.0,
                             "return_attention_mask": False,
                             "sampling_rate": 16000},
        tokenizer_config={"bos_token": "<s>", "do_lower_case": False,
                          "do_normalize": True, "eos_token": "</s>",
                          "pad_token": "<pad>", "return_attention_mask": False,
                          "unk_token": "<unk>", "word_delimiter_token": "|"},
        audio=[8000, 17],
        tokens=[]),
    "hubert-large-ls960-ft": dict(
        kind="speech-ctc",
        classes=(tf.HubertConfig, tf.HubertForCTC),
        config={"activation_dropout": 0.1, "apply_spec_augment": True,
                "architectures": ["HubertForCTC"], "attention_dropout": 0.1,
                "bos_token_id": 1, "conv_bias": True,
                "conv_kernel": [10, 3, 3, 3, 3, 2, 2],
                "conv_stride": [5, 2, 2, 2, 2, 2, 2],
                "ctc_loss_reduction": "sum", "ctc_zero_infinity": False,
                "do_stable_layer_norm": True, "eos_token_id": 2,
                "feat_extract_activation": "gelu",
                "feat_extract_dropout": 0.0, "feat_extract_norm": "layer",
                "feat_proj_dropout": 0.1, "final_dropout": 0.1,
                "hidden_act": "gelu", "hidden_dropout": 0.1,
                "initializer_range": 0.02, "layer_norm_eps": 1e-05,
                "layerdrop": 0.1, "mask_feature_length": 10,
                "mask_feature_prob": 0.0, "mask_time_length": 10,
                "mask_time_prob": 0.05, "model_type": "hubert",
                "num_conv_pos_embedding_groups": 16,
                "num_conv_pos_embeddings": 128, "num_feat_extract_layers": 7,
                "pad_token_id": 0, "vocab_size": 32,
                # cut: conv_dim 512 x 7, 1024 wide, 4096, 24 layers, 16 heads
                "conv_dim": [16] * 7, "hidden_size": 32,
                "intermediate_size": 48, "num_hidden_layers": 2,
                "num_attention_heads": 4},
        preprocessor_config={"do_normalize": True,
                             "feature_extractor_type": "Wav2Vec2FeatureExtractor",
                             "feature_size": 1, "padding_side": "right",
                             "padding_value": 0, "return_attention_mask": True,
                             "sampling_rate": 16000},
        tokenizer_config={"bos_token": "<s>", "do_lower_case": False,
                          "eos_token": "</s>", "pad_token": "<pad>",
                          "unk_token": "<unk>", "word_delimiter_token": "|"},
        audio=[8000, 19],
        tokens=[]),
    "ast-finetuned-audioset-10-10-0.4593": dict(
        kind="audio-classification",
        classes=(tf.ASTConfig, tf.ASTForAudioClassification),
        config={"architectures": ["ASTForAudioClassification"],
                "attention_probs_dropout_prob": 0.0, "frequency_stride": 10,
                "hidden_act": "gelu", "hidden_dropout_prob": 0.0,
                "initializer_range": 0.02, "layer_norm_eps": 1e-12,
                "max_length": 1024, "model_type": "audio-spectrogram-transformer",
                "num_mel_bins": 128, "patch_size": 16, "qkv_bias": True,
                "time_stride": 10,
                # AudioSet's 527 classes (published names not kept)
                "id2label": {str(i): f"class {i}" for i in range(527)},
                "label2id": {f"class {i}": i for i in range(527)},
                # cut: 768 wide, 3072, 12 layers, 12 heads
                "hidden_size": 32, "intermediate_size": 48,
                "num_hidden_layers": 2, "num_attention_heads": 4},
        preprocessor_config={"do_normalize": True,
                             "feature_extractor_type": "ASTFeatureExtractor",
                             "feature_size": 1, "max_length": 1024,
                             "mean": -4.2677393, "num_mel_bins": 128,
                             "padding_side": "right", "padding_value": 0.0,
                             "return_attention_mask": False,
                             "sampling_rate": 16000, "std": 4.5689974},
        audio=[16000, 23],
        tokens=[]),
    "swin-tiny-patch4-window7-224": dict(
        kind="image-classification",
        classes=(tf.SwinConfig, tf.SwinForImageClassification),
        config={"architectures": ["SwinForImageClassification"],
                "attention_probs_dropout_prob": 0.0, "drop_path_rate": 0.1,
                "encoder_stride": 32, "hidden_act": "gelu",
                "hidden_dropout_prob": 0.0, "image_size": 224,
                "initializer_range": 0.02, "layer_norm_eps": 1e-05,
                "mlp_ratio": 4.0, "model_type": "swin", "num_channels": 3,
                "num_heads": [3, 6, 12, 24], "patch_size": 4,
                "patch_norm": True, "qkv_bias": True,
                "use_absolute_embeddings": False, "window_size": 7,
                # 1000 ImageNet classes (published names not kept)
                "id2label": {str(i): f"class {i}" for i in range(1000)},
                "label2id": {f"class {i}": i for i in range(1000)},
                # cut: embed_dim 96, depths [2, 2, 6, 2]
                "embed_dim": 24, "depths": [2, 2, 2, 2]},
        preprocessor_config={"do_normalize": True, "do_resize": True,
                             "image_mean": [0.485, 0.456, 0.406],
                             "image_processor_type": "ViTImageProcessor",
                             "image_std": [0.229, 0.224, 0.225],
                             "resample": 3,
                             "size": {"height": 224, "width": 224}},
        features=[3, 224 * 224, 29],
        tokens=[]),
    "longformer-base-4096": dict(
        kind="masked-lm",
        classes=(tf.LongformerConfig, tf.LongformerForMaskedLM),
        config={"architectures": ["LongformerForMaskedLM"],
                "attention_mode": "longformer",
                "attention_probs_dropout_prob": 0.1, "bos_token_id": 0,
                "eos_token_id": 2, "gradient_checkpointing": False,
                "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
                "ignore_attention_mask": False, "initializer_range": 0.02,
                "layer_norm_eps": 1e-05, "max_position_embeddings": 4098,
                "model_type": "longformer", "pad_token_id": 1,
                "sep_token_id": 2, "type_vocab_size": 1,
                "vocab_size": 50265,
                # cut: 768 wide, 3072, 12 layers, 12 heads, and
                # attention_window 512 (every layer) to 4 and 6, so that
                # the 20 tokens see a window, not each other
                "hidden_size": 32, "intermediate_size": 48,
                "num_hidden_layers": 2, "num_attention_heads": 4,
                "attention_window": [4, 6]},
        tokens=[0, 31414, 6, 232, 328, 2, 50264, 3, 4, 50263, 1437, 2,
                713, 16, 10, 1296, 9, 5, 1263, 2]),
    "gpt-neo-125m": dict(
        classes=(tf.GPTNeoConfig, tf.GPTNeoForCausalLM),
        config={"activation_function": "gelu_new",
                "architectures": ["GPTNeoForCausalLM"],
                "attention_dropout": 0, "bos_token_id": 50256,
                "embed_dropout": 0, "eos_token_id": 50256,
                "gradient_checkpointing": False, "initializer_range": 0.02,
                "intermediate_size": None, "layer_norm_epsilon": 1e-05,
                "max_position_embeddings": 2048, "model_type": "gpt_neo",
                "resid_dropout": 0, "summary_activation": None,
                "summary_first_dropout": 0.1, "summary_proj_to_labels": True,
                "summary_type": "cls_index", "summary_use_proj": True,
                "tokenizer_class": "GPT2Tokenizer", "use_cache": True,
                "vocab_size": 50257,
                # cut: 768 wide, 12 layers ([["global", "local"], 6]), 12
                # heads, and window_size 256 to 4, so that the 12 tokens
                # see a window and the local layers' rings wrap
                "hidden_size": 32, "num_heads": 4, "num_layers": 4,
                "attention_types": [[["global", "local"], 2]],
                "attention_layers": ["global", "local", "global", "local"],
                "window_size": 4},
        tokenizer=byte_level(50256, added(50256, ["<|endoftext|>"]),
                             GPT2_BYTE_LEVEL),
        tokenizer_config={"model_max_length": 2048},
        tokens=[50256, 15496, 11, 995, 0, 50255, 13, 198, 464, 3290, 318, 50256]),
    "qwen3-0.6b": dict(
        # transformers 4.51's Qwen3 as 4.40's Llama with its per-head Q and
        # K norms (make_family_goldens.Qwen3ForCausalLM440)
        classes=(tf.LlamaConfig, Qwen3ForCausalLM440),
        config={"architectures": ["Qwen3ForCausalLM"], "attention_bias": False,
                "attention_dropout": 0.0, "bos_token_id": 151643,
                "eos_token_id": 151645, "hidden_act": "silu",
                "initializer_range": 0.02, "max_position_embeddings": 40960,
                "max_window_layers": 28, "model_type": "qwen3",
                "rms_norm_eps": 1e-06, "rope_scaling": None,
                "rope_theta": 1000000, "sliding_window": None,
                "tie_word_embeddings": True, "torch_dtype": "bfloat16",
                "use_cache": True, "use_sliding_window": False,
                "vocab_size": 151936,
                # cut: 1024 wide, 3072, 28 layers, 16/8 heads of 128
                "hidden_size": 32, "intermediate_size": 24,
                "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 2, "head_dim": 8},
        generation_config={"bos_token_id": 151643, "do_sample": True,
                           "eos_token_id": [151645, 151643],
                           "pad_token_id": 151643, "temperature": 0.6,
                           "top_k": 20, "top_p": 0.95},
        tokenizer=byte_level(151643, QWEN3_ADDED, QWEN2_SPLIT, {"type": "NFC"}),
        tokenizer_config=tokenizer_config(
            QWEN3_ADDED, bos_token=None, eos_token="<|im_end|>",
            pad_token="<|endoftext|>", model_max_length=131072,
            tokenizer_class="Qwen2Tokenizer", errors="replace",
            split_special_tokens=False),
        tokens=[151644, 872, 198, 9707, 11, 1879, 0, 151645, 198, 151667,
                151668, 151935]),
    "mixtral-8x7b-v0.1": dict(
        classes=(tf.MixtralConfig, tf.MixtralForCausalLM),
        config={"architectures": ["MixtralForCausalLM"],
                "attention_dropout": 0.0, "bos_token_id": 1,
                "eos_token_id": 2, "hidden_act": "silu",
                "initializer_range": 0.02, "max_position_embeddings": 32768,
                "model_type": "mixtral", "num_experts_per_tok": 2,
                "num_local_experts": 8, "output_router_logits": False,
                "rms_norm_eps": 1e-05, "rope_theta": 1000000.0,
                "router_aux_loss_coef": 0.02, "sliding_window": None,
                "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                "use_cache": True, "vocab_size": 32000,
                # cut: 4096 wide, experts of 14336, 32 layers, 32/8 heads
                # of 128
                "hidden_size": 32, "intermediate_size": 48,
                "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 1},
        generation_config={"bos_token_id": 1, "eos_token_id": 2},
        tokens=[1, 22557, 28725, 1526, 28808, 2, 0, 31999, 13, 28705, 415, 1]),
    "qwen1.5-moe-a2.7b": dict(
        classes=(tf.Qwen2MoeConfig, tf.Qwen2MoeForCausalLM),
        config={"architectures": ["Qwen2MoeForCausalLM"],
                "attention_dropout": 0.0, "bos_token_id": 151643,
                "decoder_sparse_step": 1, "eos_token_id": 151643,
                "hidden_act": "silu", "initializer_range": 0.02,
                "max_position_embeddings": 8192, "max_window_layers": 21,
                "model_type": "qwen2_moe", "norm_topk_prob": False,
                "num_experts": 60, "num_experts_per_tok": 4,
                "output_router_logits": False, "rms_norm_eps": 1e-06,
                "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
                "sliding_window": 32768, "tie_word_embeddings": False,
                "torch_dtype": "bfloat16", "use_cache": True,
                "use_sliding_window": False, "vocab_size": 151936,
                # cut: 2048 wide, 5632, 24 layers, 16 heads of 128,
                # experts of 1408 and a shared expert of 5632
                "hidden_size": 32, "intermediate_size": 48,
                "moe_intermediate_size": 16,
                "shared_expert_intermediate_size": 48,
                "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 4},
        generation_config={"bos_token_id": 151643, "do_sample": False,
                           "eos_token_id": 151643, "max_new_tokens": 2048},
        tokenizer=byte_level(151643, QWEN2_ADDED, QWEN2_SPLIT, {"type": "NFC"}),
        tokenizer_config=tokenizer_config(
            QWEN2_ADDED, bos_token=None, eos_token="<|endoftext|>",
            pad_token="<|endoftext|>", model_max_length=8192,
            tokenizer_class="Qwen2Tokenizer", errors="replace",
            split_special_tokens=False),
        tokens=[151644, 872, 198, 9707, 11, 1879, 0, 151645, 198, 151664,
                151643, 151935]),
    "olmoe-1b-7b-0924": dict(
        # transformers 4.45's OLMoE as 4.40's Mixtral with its whole-row Q
        # and K norms and its routing (make_family_goldens.OlmoeForCausalLM440)
        classes=(tf.MixtralConfig, OlmoeForCausalLM440),
        config={"architectures": ["OlmoeForCausalLM"], "attention_bias": False,
                "attention_dropout": 0.0, "clip_qkv": None,
                "eos_token_id": 50279, "hidden_act": "silu",
                "initializer_range": 0.02, "max_position_embeddings": 4096,
                "model_type": "olmoe", "norm_topk_prob": False,
                "num_experts": 64, "num_experts_per_tok": 8,
                "output_router_logits": False, "pad_token_id": 1,
                "rms_norm_eps": 1e-05, "rope_scaling": None,
                "rope_theta": 10000.0, "router_aux_loss_coef": 0.01,
                "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                "use_cache": True, "vocab_size": 50304,
                # cut: 2048 wide, experts of 1024, 16 layers, 16 heads of
                # 128
                "hidden_size": 32, "intermediate_size": 16,
                "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 4},
        generation_config={"eos_token_id": 50279, "pad_token_id": 1},
        tokenizer=byte_level(50254, OLMO_ADDED, GPT2_BYTE_LEVEL, {"type": "NFC"}),
        tokenizer_config=tokenizer_config(
            {k: v for k, v in OLMO_ADDED.items() if v.get("special", True)},
            eos_token="<|endoftext|>", pad_token="<|padding|>",
            tokenizer_class="GPTNeoXTokenizer"),
        tokens=[50279, 12092, 13, 310, 1, 50277, 50278, 50280, 50303, 187,
                2, 0]),
    "gemma-2-2b-it": dict(
        # transformers 4.42's Gemma 2 on 4.40's Gemma
        # (make_family_goldens.Gemma2ForCausalLM440)
        classes=(tf.GemmaConfig, Gemma2ForCausalLM440),
        config={"architectures": ["Gemma2ForCausalLM"], "attention_bias": False,
                "attention_dropout": 0.0, "attn_logit_softcapping": 50.0,
                "bos_token_id": 2, "cache_implementation": "hybrid",
                "eos_token_id": [1, 107], "final_logit_softcapping": 30.0,
                "hidden_act": "gelu_pytorch_tanh",
                "hidden_activation": "gelu_pytorch_tanh",
                "initializer_range": 0.02, "max_position_embeddings": 8192,
                "model_type": "gemma2", "pad_token_id": 0,
                "rms_norm_eps": 1e-06, "rope_theta": 10000.0,
                "torch_dtype": "float32", "use_cache": True,
                "vocab_size": 256000,
                # cut: 2304 wide, 9216, 26 layers, 8/4 heads of 256,
                # query_pre_attn_scalar 256 (the head size, cut with it),
                # a window of 4096
                "hidden_size": 16, "intermediate_size": 32,
                "num_hidden_layers": 2, "num_attention_heads": 8,
                "num_key_value_heads": 4, "head_dim": 4,
                "query_pre_attn_scalar": 4, "sliding_window": 4},
        generation_config={"bos_token_id": 2, "cache_implementation": "hybrid",
                           "eos_token_id": [1, 107], "pad_token_id": 0},
        tokens=[2, 4521, 235269, 2134, 235341, 1, 0, 255999, 106, 107, 108, 3]),
    "gemma-3-1b-it": dict(
        # transformers 4.50's Gemma 3 on 4.40's Gemma
        # (make_family_goldens.Gemma2ForCausalLM440)
        classes=(tf.GemmaConfig, Gemma2ForCausalLM440),
        config={"architectures": ["Gemma3ForCausalLM"], "attention_bias": False,
                "attention_dropout": 0.0, "attn_logit_softcapping": None,
                "bos_token_id": 2, "cache_implementation": "hybrid",
                "eos_token_id": [1, 106], "final_logit_softcapping": None,
                "hidden_activation": "gelu_pytorch_tanh",
                "initializer_range": 0.02, "max_position_embeddings": 32768,
                "model_type": "gemma3_text", "pad_token_id": 0,
                "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000,
                "rope_scaling": None, "rope_theta": 1000000,
                "sliding_window_pattern": 6, "torch_dtype": "bfloat16",
                "use_cache": True, "vocab_size": 262144,
                # cut: 1152 wide, 6912, 26 layers (6 kept: five local, one
                # global), 4/1 heads of 256, query_pre_attn_scalar 256 (the
                # head size, cut with it), a window of 512
                "hidden_size": 16, "intermediate_size": 32,
                "num_hidden_layers": 6, "num_attention_heads": 4,
                "num_key_value_heads": 1, "head_dim": 4,
                "query_pre_attn_scalar": 4, "sliding_window": 4},
        generation_config={"bos_token_id": 2, "cache_implementation": "hybrid",
                           "do_sample": True, "eos_token_id": [1, 106],
                           "pad_token_id": 0, "top_k": 64, "top_p": 0.95},
        tokens=[2, 4521, 235269, 2134, 235341, 1, 0, 262143, 106, 107, 108, 3]),
    "qwen3-30b-a3b": dict(
        # transformers 4.51's Qwen3-MoE on 4.40's Mixtral
        # (make_family_goldens.Qwen3MoeForCausalLM440)
        classes=(tf.MixtralConfig, Qwen3MoeForCausalLM440),
        config={"architectures": ["Qwen3MoeForCausalLM"],
                "attention_bias": False, "attention_dropout": 0.0,
                "bos_token_id": 151643, "decoder_sparse_step": 1,
                "eos_token_id": 151645, "hidden_act": "silu",
                "initializer_range": 0.02, "max_position_embeddings": 40960,
                "max_window_layers": 48, "mlp_only_layers": [],
                "model_type": "qwen3_moe", "norm_topk_prob": True,
                "num_experts": 128, "num_experts_per_tok": 8,
                "output_router_logits": False, "rms_norm_eps": 1e-06,
                "rope_scaling": None, "rope_theta": 1000000.0,
                "router_aux_loss_coef": 0.001, "sliding_window": None,
                "tie_word_embeddings": False, "torch_dtype": "bfloat16",
                "use_cache": True, "use_sliding_window": False,
                "vocab_size": 151936,
                # cut: 2048 wide, experts of 768, 48 layers, 32/4 heads of
                # 128
                "hidden_size": 32, "intermediate_size": 48,
                "moe_intermediate_size": 16, "num_hidden_layers": 2,
                "num_attention_heads": 4, "num_key_value_heads": 2,
                "head_dim": 8},
        generation_config={"bos_token_id": 151643, "do_sample": True,
                           "eos_token_id": [151645, 151643],
                           "pad_token_id": 151643, "temperature": 0.6,
                           "top_k": 20, "top_p": 0.95},
        tokenizer=byte_level(151643, QWEN3_ADDED, QWEN2_SPLIT, {"type": "NFC"}),
        tokenizer_config=tokenizer_config(
            QWEN3_ADDED, bos_token=None, eos_token="<|im_end|>",
            pad_token="<|endoftext|>", model_max_length=131072,
            tokenizer_class="Qwen2Tokenizer", errors="replace",
            split_special_tokens=False),
        tokens=[151644, 872, 198, 9707, 11, 1879, 0, 151645, 198, 151667,
                151668, 151935]),
    "phi-3-mini-4k-instruct": dict(
        # transformers 4.41's Phi-3 on 4.40's Mistral
        # (make_family_goldens.Phi3ForCausalLM440: fused qkv_proj and
        # gate_up_proj)
        classes=(tf.MistralConfig, Phi3ForCausalLM440),
        config={"architectures": ["Phi3ForCausalLM"], "attention_bias": False,
                "attention_dropout": 0.0, "bos_token_id": 1,
                "embd_pdrop": 0.0, "eos_token_id": 32000,
                "hidden_act": "silu", "initializer_range": 0.02,
                "max_position_embeddings": 4096, "model_type": "phi3",
                "original_max_position_embeddings": 4096,
                "pad_token_id": 32000, "resid_pdrop": 0.0,
                "rms_norm_eps": 1e-05, "rope_scaling": None,
                "rope_theta": 10000.0, "tie_word_embeddings": False,
                "torch_dtype": "bfloat16", "use_cache": True,
                "vocab_size": 32064,
                # cut: 3072 wide, 8192, 32 layers, 32 heads of 96, a window
                # of 2047
                "hidden_size": 32, "intermediate_size": 48,
                "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 4, "sliding_window": 5},
        generation_config={"bos_token_id": 1, "eos_token_id": [32000, 32001,
                                                               32007],
                           "pad_token_id": 32000},
        tokens=[1, 22557, 28725, 1526, 28808, 32000, 0, 32063, 32010, 13,
                415, 2]),
}
SEEDS = {name: 1000 + i for i, name in enumerate(MODELS)}
# LibriSpeech's characters, as wav2vec2-base-960h's and
# hubert-large-ls960-ft's vocab.json number them.
LIBRISPEECH_VOCAB = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "|": 4,
                     **{c: 5 + i for i, c in
                        enumerate("ETAONIHSRDLUMWCFGYPBVK'XJQZ")}}

# What each tokenizer makes of one prompt, by the published tokenizer's
# rules on the fixture's vocabulary (bytes, then Ġt, he, Ġthe, then
# fillers, ids around the added tokens): BOS first only where the
# published tokenizer adds it (Llama 3's post-processor); special and added
# tokens matched whole (<|im_start|>; GPT-NeoX's and CodeGen's runs of
# spaces, which are text); StarCoder's digits one at a time.
PROMPT = "<|im_start|>user\n the 123  x<|endoftext|>"
PROMPT_IDS = {
    "qwen2.5-0.5b-instruct": [151644, 117, 115, 101, 114, 10, 258, 32, 49, 50,
                              51, 32, 32, 120, 151643],
    "llama-3.2-1b": [128000] + [ord(c) for c in "<|im_start|>user\n"] +
                    [258, 32, 49, 50, 51, 32, 32, 120] +
                    [ord(c) for c in "<|endoftext|>"],
    "qwen3-0.6b": [151644, 117, 115, 101, 114, 10, 258, 32, 49, 50, 51, 32,
                   32, 120, 151643],
    "qwen1.5-moe-a2.7b": [151644, 117, 115, 101, 114, 10, 258, 32, 49, 50,
                          51, 32, 32, 120, 151643],
    "qwen3-30b-a3b": [151644, 117, 115, 101, 114, 10, 258, 32, 49, 50, 51,
                      32, 32, 120, 151643],
    "pythia-160m": [ord(c) + 2 for c in "<|im_start|>user\n"] +
                   [260, 34, 51, 52, 53, 50276, 122, 0],
    "phi-2": [ord(c) for c in "<|im_start|>user\n"] +
             [258, 32, 49, 50, 51, 50286, 120, 50256],
    "olmo-1b-hf": [ord(c) + 2 for c in "<|im_start|>user\n"] +
                  [260, 34, 51, 52, 53, 50276, 122, 50279],
    "olmoe-1b-7b-0924": [ord(c) + 2 for c in "<|im_start|>user\n"] +
                        [260, 34, 51, 52, 53, 50276, 122, 50279],
    "gpt2": [ord(c) for c in "<|im_start|>user\n"] +
            [258, 32, 49, 50, 51, 32, 32, 120, 50256],
    "gpt-neo-125m": [ord(c) for c in "<|im_start|>user\n"] +
                    [258, 32, 49, 50, 51, 32, 32, 120, 50256],
    "starcoder2-3b": [ord(c) + 38 for c in "<|im_start|>user\n"] +
                     [296, 70, 87, 88, 89, 70, 70, 158, 0],
}


def hf_config(config):
    """`config` as transformers 4.40 takes it: Llama 3's rope_scaling
    (which it refuses) left out, applied by golden()."""
    scaling = config.get("rope_scaling") or {}
    if scaling.get("rope_type") == "llama3":
        config = {**config, "rope_scaling": None}
    return config


def tensor_names(spec, config):
    """The names and shapes transformers saves for `config`."""
    config_class, model_class = spec["classes"]
    model = model_class(config_class(**hf_config(config)))
    with tempfile.TemporaryDirectory() as directory:
        model.save_pretrained(directory, safe_serialization=True)
        with open(os.path.join(directory, "model.safetensors"), "rb") as f:
            (length,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(length))
    # Integer buffers (Swin's relative_position_index) are not weights:
    # the model rebuilds them.
    return [[name, header[name]["shape"]] for name in sorted(header)
            if name != "__metadata__" and header[name]["dtype"].startswith(
                ("F", "BF"))]


def golden(name, spec, manifest_path):
    config_class, model_class = spec["classes"]
    fixture = tempfile.mkdtemp()
    make_fixture.write_fixture(manifest_path, fixture)
    config = config_class(**hf_config(spec["config"]))
    config._attn_implementation = "eager"
    model = model_class.from_pretrained(
        fixture, config=config, torch_dtype=torch.float32).eval()
    scaling = spec["config"].get("rope_scaling") or {}
    if scaling.get("rope_type") == "llama3":
        dim = config.hidden_size // config.num_attention_heads
        inverse = llama3_inverse_frequencies(
            config.rope_theta, dim, scaling["factor"],
            scaling["low_freq_factor"], scaling["high_freq_factor"],
            scaling["original_max_position_embeddings"])
        for layer in model.model.layers:
            layer.self_attn.rotary_emb.inv_freq.copy_(inverse)
    kind = spec.get("kind", "decoder")
    with torch.no_grad():
        if kind == "seq2seq":
            logits = model(input_ids=torch.tensor([spec["tokens"]]),
                           decoder_input_ids=torch.tensor(
                               [spec["decoder_tokens"]])).logits[0].float()
        elif kind == "image-classification":
            features = torch.frombuffer(bytearray(open(os.path.join(
                fixture, "features.bin"), "rb").read()), dtype=torch.float32)
            size = spec["config"]["image_size"]
            logits = model(pixel_values=features.view(1, 3, size, size)).logits
        elif kind == "speech-ctc":
            import numpy as np
            import wave
            with wave.open(os.path.join(fixture, "clip.wav"), "rb") as w:
                pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2")
            extractor = tf.Wav2Vec2FeatureExtractor(
                **{k: v for k, v in spec["preprocessor_config"].items()
                   if k != "feature_extractor_type"})
            values = extractor(pcm.astype(np.float32) / 32768.0,
                               sampling_rate=16000,
                               return_tensors="pt").input_values
            logits = model(values).logits[0]
            tokenizer = tf.Wav2Vec2CTCTokenizer.from_pretrained(fixture)
            transcript = tokenizer.batch_decode(logits.argmax(-1)[None])[0]
            with open(manifest_path, encoding="utf-8") as f:
                manifest = json.load(f)
            manifest["frames"] = logits.shape[0]
            manifest["transcript"] = transcript
            with open(manifest_path, "w", encoding="utf-8") as f:
                json.dump(manifest, f, indent=1, ensure_ascii=False)
        elif kind == "audio-classification":
            import numpy as np
            import wave
            with wave.open(os.path.join(fixture, "clip.wav"), "rb") as w:
                pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2")
            extractor = tf.ASTFeatureExtractor(
                **{k: v for k, v in spec["preprocessor_config"].items()
                   if k != "feature_extractor_type"})
            values = extractor(pcm.astype(np.float32) / 32768.0,
                               sampling_rate=16000,
                               return_tensors="pt").input_values
            logits = model(values).logits
        elif kind == "speech-seq2seq":
            features = torch.frombuffer(bytearray(open(os.path.join(
                fixture, "features.bin"), "rb").read()), dtype=torch.float32)
            logits = model(input_features=features.view(1, 80, -1),
                           decoder_input_ids=torch.tensor(
                               [spec["decoder_tokens"]])).logits[0].float()
        else:
            logits = model(torch.tensor([spec["tokens"]])).logits[0].float()
    vocab = make_fixture.output_width(spec["config"])
    keep = make_fixture.columns(vocab)
    logits[:, keep].numpy().astype("<f4").tofile(
        os.path.join(OUT, name + ".logits.bin"))
    print(f"{name}: logits {tuple(logits.shape)}, {len(keep)} columns kept, "
          f"max |logit| {logits.abs().max():.2f}")
    shutil.rmtree(fixture)


def main(names):
    """Every model's manifest and golden, or only those named."""
    os.makedirs(OUT, exist_ok=True)
    for name, spec in MODELS.items():
        if names and name not in names:
            continue
        manifest = {key: spec[key] for key in
                    ("config", "generation_config", "tokenizer_config",
                     "tokenizer", "tokens", "decoder_tokens", "kind",
                     "preprocessor_config", "features", "audio")
                    if key in spec}
        if spec.get("kind") == "speech-ctc":
            manifest["vocab"] = LIBRISPEECH_VOCAB
        manifest["seed"] = SEEDS[name]
        if name in PROMPT_IDS:
            manifest["prompt"] = PROMPT
            manifest["prompt_ids"] = PROMPT_IDS[name]
        manifest["tensors"] = tensor_names(spec, spec["config"])
        path = os.path.join(OUT, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1, ensure_ascii=False)
        golden(name, spec, path)


if __name__ == "__main__":
    main(sys.argv[1:])
