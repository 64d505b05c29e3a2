"""The C API's structures and functions as ctypes sees them: a transcription
of runtime/include/tfm/tfm_model_abi.h and tfm_runtime.h (ABI version 26),
field for field; test/python/abi.test checks every structure's layout and
the constants against the headers (check_abi.py), and the other tests
against compiled models."""

import ctypes

import numpy as np

ABI_VERSION = 34
MAX_RANK = 6

ROLE_NAMES = {0: "token_ids", 1: "features", 2: "start_position",
              3: "cache_slot", 4: "token_type_ids", 5: "sequence_lengths",
              6: "decoder_token_ids", 7: "encoded_length", 8: "positions",
              9: "cache_sequences", 10: "chunk_lengths",
              11: "global_attention", 16: "logits",
              17: "hidden_states", 18: "embedding",
              19: "alignment_weights"}
# tfm_dtype's values in order.
DTYPE_NAMES = {0: "f32", 1: "i32", 2: "i64", 3: "i8", 4: "bf16", 5: "f16"}
NUMPY_DTYPES = {"f32": np.float32, "i32": np.int32, "i64": np.int64,
                "i8": np.int8, "f16": np.float16, "bf16": np.uint16}


class Status(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("message", ctypes.c_char * 512)]


class TensorDesc(ctypes.Structure):
    _fields_ = [("role", ctypes.c_int32), ("dtype", ctypes.c_int32),
                ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_RANK),
                ("bound", ctypes.c_int64)]


class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int32),
                ("rank", ctypes.c_int32),
                ("shape", ctypes.c_int64 * MAX_RANK),
                ("owner", ctypes.c_void_p)]


class EntryPoint(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("num_inputs", ctypes.c_int32),
                ("inputs", ctypes.POINTER(TensorDesc)),
                ("num_outputs", ctypes.c_int32),
                ("outputs", ctypes.POINTER(TensorDesc)),
                ("num_caches", ctypes.c_int32),
                ("caches", ctypes.POINTER(ctypes.c_int32)),
                ("call", ctypes.c_void_p), ("function", ctypes.c_void_p)]


class WaveformInput(ctypes.Structure):
    """tfm_waveform_input: a Wav2Vec2-style model's samples and CTC
    decoding."""
    _fields_ = [("sampling_rate", ctypes.c_int64),
                ("min_samples", ctypes.c_int64),
                ("frame_samples", ctypes.c_int64),
                ("blank", ctypes.c_int32), ("word_delimiter", ctypes.c_int32),
                ("clean_up", ctypes.c_int32), ("lowercase", ctypes.c_int32)]


class DiffusionDesc(ctypes.Structure):
    """tfm_diffusion_desc: a Stable Diffusion pipeline's constants."""
    _fields_ = [("latent_channels", ctypes.c_int64),
                ("unet_in_channels", ctypes.c_int64),
                ("latent_height", ctypes.c_int64),
                ("latent_width", ctypes.c_int64),
                ("vae_scale_factor", ctypes.c_int64),
                ("text_tokens", ctypes.c_int64),
                ("pad_token", ctypes.c_int64),
                ("pad_token_2", ctypes.c_int64),
                ("force_zeros_for_empty_prompt", ctypes.c_int64),
                ("scaling_factor", ctypes.c_float),
                ("scheduler_config", ctypes.c_char_p)]


class LoraTarget(ctypes.Structure):
    _fields_ = [("weight", ctypes.c_char_p), ("in_features", ctypes.c_int64),
                ("out_features", ctypes.c_int64)]


class LoraDesc(ctypes.Structure):
    _fields_ = [("slots", ctypes.c_int32), ("rank", ctypes.c_int32),
                ("num_targets", ctypes.c_int32),
                ("targets", ctypes.POINTER(LoraTarget))]


class ModelDesc(ctypes.Structure):
    _fields_ = [("abi_version", ctypes.c_uint32), ("target", ctypes.c_int32),
                ("name", ctypes.c_char_p), ("family", ctypes.c_char_p),
                ("vocab_size", ctypes.c_int64),
                ("max_context", ctypes.c_int64),
                ("bos_token", ctypes.c_int32), ("eos_token", ctypes.c_int32),
                ("add_bos", ctypes.c_int32),
                ("weights", ctypes.c_void_p),
                ("weights_file", ctypes.c_char_p),
                ("weights_appended", ctypes.c_int),
                ("weights_size", ctypes.c_uint64),
                ("weights_checksum", ctypes.c_uint64),
                ("decode_weight_bytes", ctypes.c_uint64),
                ("tokenizer", ctypes.c_void_p),
                ("tokenizer_size", ctypes.c_uint64),
                ("chat_template", ctypes.c_char_p),
                ("num_labels", ctypes.c_int32),
                ("labels", ctypes.POINTER(ctypes.c_char_p)),
                ("image_preprocessing", ctypes.c_void_p),
                ("generation", ctypes.c_void_p),
                ("audio_preprocessing", ctypes.c_void_p),
                ("num_entry_points", ctypes.c_int32),
                ("entry_points", ctypes.POINTER(EntryPoint)),
                ("num_caches", ctypes.c_int32),
                ("caches", ctypes.c_void_p),
                ("ranks", ctypes.c_int32),
                ("rank_stride", ctypes.c_uint64),
                ("rank_checksums", ctypes.c_void_p),
                ("replicated_weights_size", ctypes.c_uint64),
                ("logit_scale", ctypes.c_float),
                ("waveform", ctypes.POINTER(WaveformInput)),
                ("diffusion", ctypes.POINTER(DiffusionDesc)),
                ("num_stop_tokens", ctypes.c_int32),
                ("stop_tokens", ctypes.POINTER(ctypes.c_int32)),
                ("lora", ctypes.POINTER(LoraDesc)),
                ("pipeline_stages", ctypes.c_int32),
                ("image_token", ctypes.c_int32),
                ("image_rows_bidirectional", ctypes.c_int32),
                ("image_tiles_marked", ctypes.c_int32),
                ("image_tile_tokens", ctypes.c_int32 * 2),
                ("sigmoid_scores", ctypes.c_int32),
                ("logit_bias", ctypes.c_float),
                ("pad_texts", ctypes.c_int32),
                ("text_pad_token", ctypes.c_int32)]


class SamplerOptions(ctypes.Structure):
    _fields_ = [("temperature", ctypes.c_float), ("top_k", ctypes.c_int32),
                ("top_p", ctypes.c_float),
                ("repetition_penalty", ctypes.c_float),
                ("seed", ctypes.c_uint64)]


ON_TOKEN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int32,
                            ctypes.c_void_p, ctypes.c_size_t)


ON_IMAGE_STEP = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int32,
                                 ctypes.c_int32)


class ImageRequest(ctypes.Structure):
    """tfm_image_request: one image of a diffusion pipeline."""
    _fields_ = [("prompt", ctypes.c_char_p),
                ("negative_prompt", ctypes.c_char_p),
                ("steps", ctypes.c_int32), ("guidance", ctypes.c_float),
                ("seed", ctypes.c_uint64), ("scheduler", ctypes.c_char_p),
                ("noise", ctypes.POINTER(ctypes.c_float)),
                ("progress", ON_IMAGE_STEP), ("user", ctypes.c_void_p),
                ("init_image", ctypes.POINTER(ctypes.c_float)),
                ("strength", ctypes.c_float),
                ("mask", ctypes.POINTER(ctypes.c_float))]


class GenerateOptions(ctypes.Structure):
    _fields_ = [("max_new_tokens", ctypes.c_int64),
                ("sampler", SamplerOptions),
                ("stop_strings", ctypes.POINTER(ctypes.c_char_p)),
                ("stop_string_count", ctypes.c_int32),
                ("ignore_eos", ctypes.c_int),
                ("forced_tokens", ctypes.POINTER(ctypes.c_int32)),
                ("forced_count", ctypes.c_int64),
                ("on_token", ON_TOKEN), ("on_logits", ctypes.c_void_p),
                ("user", ctypes.c_void_p), ("grammar", ctypes.c_void_p),
                ("lookup_ngram", ctypes.c_int32), ("draft_max", ctypes.c_int32),
                ("draft", ctypes.c_void_p), ("draft_p_min", ctypes.c_float),
                ("lora", ctypes.c_int32)]


class EngineOptions(ctypes.Structure):
    _fields_ = [("max_sequences", ctypes.c_int32),
                ("kv_pool_bytes", ctypes.c_int64),
                ("block_positions", ctypes.c_int32),
                ("prefill_chunk", ctypes.c_int64),
                ("share_prefixes", ctypes.c_int),
                ("max_drafts", ctypes.c_int32),
                ("draft_model", ctypes.c_void_p),
                ("draft_p_min", ctypes.c_float),
                ("micro_batch_rows", ctypes.c_int64)]


class EngineRequest(ctypes.Structure):
    _fields_ = [("prompt", ctypes.POINTER(ctypes.c_int32)),
                ("prompt_count", ctypes.c_int64),
                ("max_new_tokens", ctypes.c_int64),
                ("sampler", SamplerOptions),
                ("ignore_eos", ctypes.c_int),
                ("grammar", ctypes.c_void_p),
                ("lookup_ngram", ctypes.c_int32),
                ("draft_max", ctypes.c_int32), ("lora", ctypes.c_int32),
                ("image_rows", ctypes.POINTER(ctypes.c_float)),
                ("image_row_count", ctypes.c_int64)]


class EngineEvent(ctypes.Structure):
    _fields_ = [("id", ctypes.c_int64), ("token", ctypes.c_int32),
                ("finish", ctypes.c_int),
                ("drafted_tokens", ctypes.c_int64),
                ("accepted_tokens", ctypes.c_int64)]


class EngineStats(ctypes.Structure):
    _fields_ = [("running", ctypes.c_int32), ("waiting", ctypes.c_int32),
                ("kv_blocks", ctypes.c_int64),
                ("kv_blocks_used", ctypes.c_int64),
                ("kv_blocks_shared", ctypes.c_int64),
                ("kv_blocks_cached", ctypes.c_int64),
                ("kv_block_bytes", ctypes.c_int64),
                ("kv_block_positions", ctypes.c_int64),
                ("kv_paged", ctypes.c_int),
                ("prefix_tokens_reused", ctypes.c_int64),
                ("prompt_tokens", ctypes.c_int64),
                ("generated_tokens", ctypes.c_int64),
                ("preemptions", ctypes.c_int64),
                ("steps", ctypes.c_int64),
                ("kv_ring_bytes", ctypes.c_int64),
                ("recurrent_state_bytes", ctypes.c_int64),
                ("drafted_tokens", ctypes.c_int64),
                ("accepted_tokens", ctypes.c_int64),
                ("model_calls", ctypes.c_int64)]


# tfm_finish_reason's values.
FINISH_NAMES = {0: None, 1: "length", 2: "eos", 3: "error"}


class GenerationRules(ctypes.Structure):
    _fields_ = [("no_repeat_ngram_size", ctypes.c_int32),
                ("min_new_tokens", ctypes.c_int64),
                ("forced_eos", ctypes.c_int),
                ("has_forced_bos", ctypes.c_int),
                ("forced_bos", ctypes.c_int32),
                ("suppressed", ctypes.POINTER(ctypes.c_int32)),
                ("suppressed_count", ctypes.c_int32),
                ("bad_words", ctypes.POINTER(ctypes.c_int32)),
                ("bad_word_lengths", ctypes.POINTER(ctypes.c_int32)),
                ("bad_word_count", ctypes.c_int32),
                ("prompt", ctypes.POINTER(ctypes.c_int32)),
                ("prompt_count", ctypes.c_int32),
                ("begin_suppressed", ctypes.POINTER(ctypes.c_int32)),
                ("begin_suppressed_count", ctypes.c_int32),
                ("previous", ctypes.POINTER(ctypes.c_int32)),
                ("previous_count", ctypes.c_int32),
                ("languages", ctypes.POINTER(ctypes.c_int32)),
                ("language_count", ctypes.c_int32)]


PROGRESS = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_double,
                            ctypes.c_double)


class WhisperOptions(ctypes.Structure):
    _fields_ = [("language", ctypes.c_char_p),
                ("task", ctypes.c_char_p),
                ("prompt", ctypes.c_char_p),
                ("condition_on_previous", ctypes.c_int),
                ("word_timestamps", ctypes.c_int),
                ("temperatures", ctypes.POINTER(ctypes.c_float)),
                ("temperature_count", ctypes.c_int32),
                ("compression_ratio_threshold", ctypes.c_double),
                ("logprob_threshold", ctypes.c_double),
                ("no_speech_threshold", ctypes.c_double),
                ("seed", ctypes.c_uint64),
                ("on_progress", PROGRESS),
                ("user", ctypes.c_void_p)]


class CtcChunking(ctypes.Structure):
    _fields_ = [("chunk_seconds", ctypes.c_double),
                ("stride_seconds", ctypes.c_double)]


class GenerateResult(ctypes.Structure):
    _fields_ = [("prompt_tokens", ctypes.c_int64),
                ("generated_tokens", ctypes.c_int64),
                ("prefill_seconds", ctypes.c_double),
                ("decode_seconds", ctypes.c_double),
                ("stop_reason", ctypes.c_int),
                ("drafted_tokens", ctypes.c_int64),
                ("accepted_tokens", ctypes.c_int64)]


def declare(library):
    """Argument and result types of the runtime functions the package
    calls, reached through the model library (which links libtfmrt.so)."""
    p, i32, i64 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64
    status = ctypes.POINTER(Status)
    signatures = {
        "tfm_model_load": (ctypes.c_int, [ctypes.POINTER(ModelDesc),
                                          ctypes.c_char_p,
                                          ctypes.POINTER(p), status]),
        "tfm_model_free": (None, [p]),
        "tfm_model_get_desc": (ctypes.POINTER(ModelDesc), [p]),
        "tfm_model_tokenizer": (p, [p, status]),
        "tfm_model_call": (ctypes.c_int, [p, ctypes.c_char_p,
                                          ctypes.POINTER(Tensor), i32, p,
                                          ctypes.POINTER(Tensor), i32,
                                          status]),
        "tfm_tensor_release": (None, [ctypes.POINTER(Tensor)]),
        "tfm_tokenizer_encode": (ctypes.c_int, [p, ctypes.c_char_p, i32,
                                                ctypes.POINTER(i32), i64,
                                                ctypes.POINTER(i64), status]),
        "tfm_tokenizer_encode_text": (ctypes.c_int, [
            p, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(i32),
            ctypes.POINTER(i32), i64, ctypes.POINTER(i64), status]),
        "tfm_tokenizer_is_special": (ctypes.c_int, [p, i32]),
        "tfm_tokenizer_decode": (p, [p, i32, i32, i32,
                                     ctypes.POINTER(ctypes.c_size_t)]),
        "tfm_session_new": (ctypes.c_int, [p, ctypes.POINTER(p), status]),
        "tfm_session_add_image": (ctypes.c_int, [
            p, ctypes.POINTER(ctypes.c_float), i64, status]),
        "tfm_image_prompt_ids": (ctypes.c_int, [
            p, ctypes.POINTER(i64), i64, ctypes.POINTER(i32), i64,
            ctypes.POINTER(i64), status]),
        "tfm_splice_image_ids": (ctypes.c_int, [
            i32, ctypes.POINTER(i32), i64,
            ctypes.POINTER(ctypes.POINTER(i32)), ctypes.POINTER(i64), i64,
            ctypes.POINTER(i32), i64, ctypes.POINTER(i64), status]),
        "tfm_lora_load": (ctypes.c_int, [p, ctypes.c_char_p, ctypes.c_float,
                                         ctypes.POINTER(i32), status]),
        "tfm_lora_unload": (ctypes.c_int, [p, i32, status]),
        "tfm_session_free": (None, [p]),
        "tfm_transcribe": (ctypes.c_int, [p, ctypes.POINTER(ctypes.c_float),
                                          i64, ctypes.POINTER(p), status]),
        "tfm_whisper_options_default": (None, [
            ctypes.POINTER(WhisperOptions)]),
        "tfm_whisper_transcribe": (ctypes.c_int, [
            p, ctypes.POINTER(ctypes.c_float), i64,
            ctypes.POINTER(WhisperOptions), ctypes.POINTER(p), status]),
        "tfm_transcript_write": (ctypes.c_int, [p, ctypes.c_int,
                                                ctypes.POINTER(p), status]),
        "tfm_transcript_free": (None, [p]),
        "tfm_ctc_transcribe": (ctypes.c_int, [
            p, ctypes.POINTER(ctypes.c_float), i64,
            ctypes.POINTER(CtcChunking), ctypes.POINTER(p), status]),
        "tfm_seq2seq_text": (ctypes.c_int, [p, ctypes.POINTER(Tensor), i32,
                                            i64,
                                            ctypes.POINTER(GenerationRules),
                                            ctypes.POINTER(p), status]),
        "tfm_generation_rules_defaults": (
            None, [p, ctypes.POINTER(GenerationRules)]),
        "tfm_seq2seq_previous_text": (ctypes.c_int, [
            p, ctypes.c_char_p, ctypes.POINTER(ctypes.POINTER(i32)),
            ctypes.POINTER(i32), status]),
        "tfm_engine_default_options": (EngineOptions, []),
        "tfm_engine_new": (ctypes.c_int, [p, ctypes.POINTER(EngineOptions),
                                          ctypes.POINTER(p), status]),
        "tfm_engine_free": (None, [p]),
        "tfm_engine_submit": (ctypes.c_int, [p, ctypes.POINTER(EngineRequest),
                                             ctypes.POINTER(i64), status]),
        "tfm_engine_cancel": (ctypes.c_int, [p, i64, status]),
        "tfm_engine_step": (ctypes.c_int, [p, ctypes.POINTER(EngineEvent),
                                           i32, ctypes.POINTER(i32), status]),
        "tfm_engine_get_stats": (None, [p, ctypes.POINTER(EngineStats)]),
        "tfm_image_generate": (ctypes.c_int, [
            p, ctypes.POINTER(ImageRequest), ctypes.POINTER(ctypes.c_float),
            i64, ctypes.POINTER(ctypes.c_char_p), status]),
        "tfm_grammar_new": (ctypes.c_int, [ctypes.c_char_p, p,
                                           ctypes.POINTER(ModelDesc),
                                           ctypes.POINTER(p), status]),
        "tfm_grammar_free": (None, [p]),
        "tfm_json_schema_to_gbnf": (ctypes.c_int, [ctypes.c_char_p,
                                                   ctypes.POINTER(p), status]),
        "tfm_generate": (ctypes.c_int, [p, ctypes.POINTER(i32), i64,
                                        ctypes.POINTER(GenerateOptions),
                                        ctypes.POINTER(GenerateResult),
                                        status]),
    }
    for name, (result, arguments) in signatures.items():
        function = getattr(library, name)
        function.restype = result
        function.argtypes = arguments
