//===- TfmAttrs.td - what a tfm module says about itself ---*- tablegen -*-===//
//
// The attributes that make a tfm module self-describing: the model on the
// module (`tfm.model`), and the role of each entry point's arguments and
// results (`tfm.input`, `tfm.output`, `tfm.cache`). The packager, the
// runtime's entry-point table and the driver read these and nothing else,
// so a module compiles the same whether a frontend built it or it was read
// from a `.mlir` file.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_ATTRS_TD
#define TFM_ATTRS_TD

include "ir/TfmBase.td"

def Tfm_InputRole : I32EnumAttr<"InputRole",
    "what an entry point's argument carries", [
      I32EnumAttrCase<"token_ids", 0>,      // tensor<?xi32>
      I32EnumAttrCase<"features", 1>,       // f32 features (audio, pixels)
      I32EnumAttrCase<"start_position", 2>, // index: position of the first token
      I32EnumAttrCase<"cache_slot", 3>,     // index: cache slot of the first token
      I32EnumAttrCase<"token_type_ids", 4>, // tensor<?xi32>: BERT's segments
      // tensor<?xi32>: the lengths of sequences packed end to end in the
      // token ids (tfm-pack-sequences)
      I32EnumAttrCase<"sequence_lengths", 5>,
      // tensor<?xi32>: an encoder-decoder's decoder ids (teacher forcing,
      // or the tokens generated so far)
      I32EnumAttrCase<"decoder_token_ids", 6>,
      // index: how many source positions the cross-attention cache holds
      // (an encoder-decoder's @prefill and @decode)
      I32EnumAttrCase<"encoded_length", 7>,
      // tensor<?xi32>: each row's position (@decode_batch: one token of
      // each of several sequences; @prefill_batch: every chunk's tokens)
      I32EnumAttrCase<"positions", 8>,
      // tensor<?xi32>: which sequence of a batched cache each row
      // (@decode_batch) or each chunk (@prefill_batch) reads and appends to
      I32EnumAttrCase<"cache_sequences", 9>,
      // tensor<?xi32>: how many tokens each chunk of @prefill_batch has
      // (consecutive positions of one sequence, chunks end to end)
      I32EnumAttrCase<"chunk_lengths", 10>,
      // tensor<?xi32>: which tokens attend to and are attended by every
      // token (nonzero: global; Longformer's global_attention_mask)
      I32EnumAttrCase<"global_attention", 11>
    ]> {
  let cppNamespace = "::mlir::tfm";
  let genSpecializedAttr = 0;
}
def Tfm_InputRoleAttr : EnumAttr<Tfm_Dialect, Tfm_InputRole, "input"> {
  let assemblyFormat = "`<` $value `>`";
}

def Tfm_OutputRole : I32EnumAttr<"OutputRole",
    "what an entry point's result carries", [
      I32EnumAttrCase<"logits", 0>,        // [positions, vocab]
      I32EnumAttrCase<"hidden_states", 1>, // [positions, hidden]
      I32EnumAttrCase<"embedding", 2>,     // [hidden], pooled; [sequences, hidden] packed
      I32EnumAttrCase<"alignment_weights", 3> // [positions, heads, source positions]
    ]> {
  let cppNamespace = "::mlir::tfm";
  let genSpecializedAttr = 0;
}
def Tfm_OutputRoleAttr : EnumAttr<Tfm_Dialect, Tfm_OutputRole, "output"> {
  let assemblyFormat = "`<` $value `>`";
}

def Tfm_CacheKind : I32EnumAttr<"CacheKind",
    "what state a cache argument holds between calls", [
      // Keys and values of the tokens seen so far, appended by each call.
      I32EnumAttrCase<"self_attention", 0>,
      // Keys and values of the encoder's output, written once, then read.
      I32EnumAttrCase<"cross_attention", 1>,
      // Windowed layers' keys and values beside a batched self-attention
      // cache of the other layers: each layer a ring of its window's last
      // positions, rewritten in place as the sequence goes on (so never
      // shared between sequences).
      I32EnumAttrCase<"self_attention_rings", 2>,
      // Recurrent layers' fixed-size states (Gated DeltaNet's convolution
      // inputs and delta-rule matrices), f32 [elements] a sequence or
      // [sequences, elements] batched: rewritten in place by each call,
      // started from zeros at position 0 (so never shared or paged).
      I32EnumAttrCase<"recurrent_state", 3>
    ]> {
  let cppNamespace = "::mlir::tfm";
  let genSpecializedAttr = 0;
}

def Tfm_ImagePreprocessingAttr : AttrDef<Tfm_Dialect, "ImagePreprocessing"> {
  let mnemonic = "image_preprocessing";
  let summary = "how an image model's input is made from an image file";
  let description = [{
    An image model's `preprocessor_config.json`, as transformers' image
    processors apply it to a decoded RGB image: resize to `resize_height` x
    `resize_width` (or, when those are 0, the shorter side to
    `shortest_edge`; all 0: no resize) with Pillow's filter `resample`
    (0 nearest, 1 lanczos, 2 bilinear, 3 bicubic, 4 box, 5 hamming), center
    crop to `crop_height` x `crop_width` (0: none), multiply by `rescale`
    (0: none), then with `normalize` subtract `mean` and divide by `std`
    per channel. The runtime's tfm_image_load does this (Pillow's
    arithmetic, exactly).

    `grid_pinpoints` (LLaVA-NeXT's `image_grid_pinpoints`, height and width
    pairs, each a multiple of the crop) makes an image several crops: the
    whole image squashed to `shortest_edge` square, then the image resized
    into the pinpoint that fits it best, padded centred and cut into
    crop-sized tiles, each preprocessed as above (the runtime's
    tfm_image_tiles).

    `longest_edge` (Idefics3's `size.longest_edge`) first resizes the image
    so that its longer side is that, keeping its aspect (the processor's
    rounding). With `split_tiles` (its `do_image_splitting`) it is then
    resized to multiples of the square resize, cut into tiles of that, row
    by row, and squashed to one more, last; without, squashed to the
    square.

    ```mlir
    #tfm.image_preprocessing<resize_height = 224, resize_width = 224,
        resample = 2, rescale = 0.0039215686274509803 : f64, normalize = true,
        mean = array<f32: 0.5, 0.5, 0.5>, std = array<f32: 0.5, 0.5, 0.5>>
    ```
  }];
  let parameters = (ins
    DefaultValuedParameter<"int64_t", "0">:$resize_height,
    DefaultValuedParameter<"int64_t", "0">:$resize_width,
    DefaultValuedParameter<"int64_t", "0">:$shortest_edge,
    DefaultValuedParameter<"int32_t", "2">:$resample,
    DefaultValuedParameter<"int64_t", "0">:$crop_height,
    DefaultValuedParameter<"int64_t", "0">:$crop_width,
    "FloatAttr":$rescale, // f64: the factor of the 0-255 values (0: none)
    DefaultValuedParameter<"bool", "false">:$normalize,
    "DenseF32ArrayAttr":$mean,
    "DenseF32ArrayAttr":$std,
    OptionalParameter<"DenseI64ArrayAttr", "any-resolution tiles' sizes">:$grid_pinpoints,
    DefaultValuedParameter<"int64_t", "0">:$longest_edge,
    DefaultValuedParameter<"bool", "false">:$split_tiles
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Tfm_AudioPreprocessingAttr : AttrDef<Tfm_Dialect, "AudioPreprocessing"> {
  let mnemonic = "audio_preprocessing";
  let summary = "how a speech model's input is made from audio";
  let description = [{
    A speech model's `preprocessor_config.json` (WhisperFeatureExtractor):
    mono audio at `sampling_rate`, padded with silence or cut to
    `samples`, becomes `mel_bins` x (`samples` / `hop_length`) log-mel
    features: a centered STFT (`n_fft`-point periodic Hann windows every
    `hop_length` samples, reflect-padded), power spectra through Slaney mel
    filters from 0 to 8 kHz, log10 clamped at 1e-10 and to 8 below the
    maximum, then (x + 4) / 4. The runtime's tfm_log_mel computes this;
    tfm_audio_load reads and resamples the audio first.

    With `kaldi` (ASTFeatureExtractor), the features are Kaldi-style log
    filterbanks instead: `window_length`-sample frames every `hop_length`
    (the DC offset removed, pre-emphasis 0.97, a symmetric Hann window, an
    `n_fft`-point FFT), power spectra through `mel_bins` triangles on
    Kaldi's mel scale from 20 Hz to Nyquist, the natural log floored at
    FLT_EPSILON, zero-padded or cut to `frames`, then with `normalize`
    (x - mean) / (2 std); tfm_kaldi_fbank computes them.

    ```mlir
    #tfm.audio_preprocessing<mel_bins = 80, sampling_rate = 16000,
        n_fft = 400, hop_length = 160, samples = 480000>
    #tfm.audio_preprocessing<mel_bins = 128, sampling_rate = 16000,
        n_fft = 512, hop_length = 160, samples = 164080, kaldi = true,
        window_length = 400, frames = 1024, normalize = true,
        mean = -4.2677393 : f32, std = 4.5689974 : f32>
    ```
  }];
  let parameters = (ins "int64_t":$mel_bins, "int64_t":$sampling_rate,
                        "int64_t":$n_fft, "int64_t":$hop_length,
                        "int64_t":$samples,
                        DefaultValuedParameter<"bool", "false">:$kaldi,
                        DefaultValuedParameter<"int64_t", "0">:$window_length,
                        DefaultValuedParameter<"int64_t", "0">:$frames,
                        DefaultValuedParameter<"bool", "false">:$normalize,
                        OptionalParameter<"FloatAttr">:$mean,
                        OptionalParameter<"FloatAttr">:$std);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Tfm_WaveformAttr : AttrDef<Tfm_Dialect, "Waveform"> {
  let mnemonic = "waveform";
  let summary = "a speech model that hears raw samples, and its CTC decoding";
  let description = [{
    A Wav2Vec2-style model: its entry point takes mono samples at
    `sampling_rate` (at least `min_samples`, the convolutional feature
    encoder's receptive field) and returns a row for every `frame_samples`
    samples. A recognizer (…ForCTC; `blank` >= 0, -1 otherwise) returns a
    label's logits per frame, the model's `labels` being the CTC vocabulary
    (Wav2Vec2CTCTokenizer's `vocab.json`, by id). Greedy decoding takes each
    frame's best label, merges repeats, drops `blank` (the tokenizer's pad
    token), spells `word_delimiter` (-1: none) as a space, trims the ends,
    with `lowercase` lowercases the text and with `clean_up` joins English
    contractions and punctuation to the word before (transformers'
    clean_up_tokenization).

    ```mlir
    #tfm.waveform<sampling_rate = 16000, min_samples = 400,
        frame_samples = 320, blank = 0, word_delimiter = 4, clean_up = true,
        lowercase = false>
    ```
  }];
  let parameters = (ins "int64_t":$sampling_rate, "int64_t":$min_samples,
                        "int64_t":$frame_samples, "int32_t":$blank,
                        "int32_t":$word_delimiter, "bool":$clean_up,
                        "bool":$lowercase);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Tfm_GenerationAttr : AttrDef<Tfm_Dialect, "Generation"> {
  let mnemonic = "generation";
  let summary = "an encoder-decoder's generation defaults";
  let description = [{
    What transformers' generate() does for the model unless told otherwise,
    from its generation_config.json (or config.json): beam width, the most
    and fewest new tokens (max_length and min_length less the decoder start
    token; 0: none), no_repeat_ngram_size, whether the end-of-sequence
    token is forced last, the length penalty and early stopping of a beam
    search, and the single tokens of bad_words_ids and suppress_tokens,
    never generated; its longer words (`bad_words`, end to end, of
    `bad_word_lengths` tokens each) ban their last token after the others.
    `forced_bos` (forced_bos_token_id, -1: none; mBART's
    target language) is the first generated token. A `prompt`
    (forced_decoder_ids: Whisper's language,
    task and no-timestamps tokens) follows the decoder start token, and the
    `begin_suppressed` tokens (begin_suppress_tokens) never come right after
    it.

    Whisper's word timestamps: `alignment_heads` lists the cross-attention
    heads whose weights follow the audio (generation_config.json's
    [layer, head] pairs, end to end), from which tfm-kv-cache derives
    `@align`; `median_filter_width` (config.json) smooths them over the
    frames before the alignment.

    ```mlir
    #tfm.generation<num_beams = 4, max_new_tokens = 511, forced_eos = true,
        suppressed = [58100]>
    ```
  }];
  let parameters = (ins
    DefaultValuedParameter<"int32_t", "1">:$num_beams,
    DefaultValuedParameter<"int64_t", "0">:$max_new_tokens,
    DefaultValuedParameter<"int64_t", "0">:$min_new_tokens,
    DefaultValuedParameter<"int32_t", "0">:$no_repeat_ngram_size,
    DefaultValuedParameter<"bool", "false">:$forced_eos,
    DefaultValuedParameter<"int32_t", "-1">:$forced_bos,
    OptionalParameter<"FloatAttr", "a beam's score divisor exponent (absent: 1)">:$length_penalty,
    DefaultValuedParameter<"bool", "false">:$early_stopping,
    OptionalParameter<"DenseI32ArrayAttr", "tokens never generated">:$suppressed,
    OptionalParameter<"DenseI32ArrayAttr", "bad words of several tokens, end to end">:$bad_words,
    OptionalParameter<"DenseI32ArrayAttr", "their lengths">:$bad_word_lengths,
    OptionalParameter<"DenseI32ArrayAttr", "tokens forced after the start token">:$prompt,
    OptionalParameter<"DenseI32ArrayAttr", "tokens never first after the prompt">:$begin_suppressed,
    DefaultValuedParameter<"int32_t", "-1">:$no_timestamps,
    DefaultValuedParameter<"int32_t", "-1">:$max_initial_timestamp,
    DefaultValuedParameter<"int32_t", "-1">:$start_of_previous,
    DefaultValuedParameter<"int32_t", "-1">:$transcribe,
    DefaultValuedParameter<"int32_t", "-1">:$translate,
    OptionalParameter<"DenseI32ArrayAttr", "language tokens">:$languages,
    OptionalParameter<"DenseI32ArrayAttr", "[layer, head] pairs, end to end">:$alignment_heads,
    DefaultValuedParameter<"int32_t", "7">:$median_filter_width
  );
  let assemblyFormat = "`<` struct(params) `>`";
}

def Tfm_ModelAttr : AttrDef<Tfm_Dialect, "Model"> {
  let mnemonic = "model";
  let summary = "the model a module implements";
  let description = [{
    On the module, as `tfm.model`: what the driver, packager and runtime
    need to know beyond the entry points' types. `family` is the
    checkpoint's architecture name (`llama`, `gpt2`, ...). Token ids are -1
    where the model has none. `tokenizer` names the tokenizer file the
    frontend read (empty: none); a `.mlir` module is compiled with it unless
    the driver is given another. The sizes are informative (they go to a
    library's header); the entry points' types are what codegen uses.

    ```mlir
    module attributes {tfm.model = #tfm.model<family = "llama",
        vocab_size = 32000, max_context = 2048, bos_token = 1,
        eos_token = 2, add_bos = true, tokenizer = "/m/tokenizer.json",
        hidden_size = 2048, num_layers = 22, num_heads = 32,
        num_kv_heads = 4>} { ... }
    ```

    A classifier names its classes (`labels`, strings by class id: a
    config's `id2label`), which the runtime prints its logits with. An
    image model says how its input is made from an image file (`image`), an
    encoder-decoder how generate() runs by default (`generation`), a speech
    model hearing raw samples what it takes and, as a recognizer, how its
    frames become text (`waveform`, with the CTC vocabulary as its
    `labels`). A chat
    model carries its chat template (`chat_template`: the Jinja source from
    tokenizer_config.json, chat_template.jinja, GGUF's
    `tokenizer.chat_template` or `tfmc --chat-template`), which the
    compiler keeps for the runtime without interpreting it.
  }];
  let parameters = (ins
    StringRefParameter<"the architecture's name">:$family,
    "int64_t":$vocab_size,
    "int64_t":$max_context,
    DefaultValuedParameter<"int32_t", "-1">:$bos_token,
    DefaultValuedParameter<"int32_t", "-1">:$eos_token,
    DefaultValuedParameter<"bool", "false">:$add_bos,
    StringRefParameter<"the tokenizer file", "\"\"">:$tokenizer,
    DefaultValuedParameter<"int64_t", "0">:$hidden_size,
    DefaultValuedParameter<"int64_t", "0">:$num_layers,
    DefaultValuedParameter<"int64_t", "0">:$num_heads,
    DefaultValuedParameter<"int64_t", "0">:$num_kv_heads,
    OptionalParameter<"ArrayAttr", "a classifier's class names, by id">:$labels,
    OptionalParameter<"ImagePreprocessingAttr",
                      "an image model's preprocessing">:$image,
    OptionalParameter<"GenerationAttr",
                      "an encoder-decoder's generation defaults">:$generation,
    OptionalParameter<"AudioPreprocessingAttr",
                      "a speech model's preprocessing">:$audio,
    OptionalParameter<"WaveformAttr",
                      "a waveform speech model's input and decoding">:$waveform,
    StringRefParameter<"the chat template (Jinja source)", "\"\"">:$chat_template
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Tfm_CacheAttr : AttrDef<Tfm_Dialect, "Cache"> {
  let mnemonic = "cache";
  let summary = "an entry point argument that is state kept between calls";
  let description = [{
    On an entry point's argument, as `tfm.cache`: the runtime allocates the
    argument's tensor once per session and passes it to every call, which
    updates it in place. Its shape and element type are the argument's.
    A self-attention cache is `[layers, 2, capacity, kv_heads, head_dim]`;
    `window` (0: none) is the sliding window of every layer, past which the
    runtime may discard the oldest positions. On the windowed layers' rings
    (`self_attention_rings`), `window` is the rows of each ring where they
    are all alike (0: they differ): position `p` is then at row
    `p mod window` of every ring, which the runtime reads to put back rows
    that rejected speculative drafts overwrote.

    ```mlir
    func.func @decode(..., %cache: tensor<2x2x64x4x16xf32>
                          {tfm.cache = #tfm.cache<self_attention>})
    ```
  }];
  let parameters = (ins
    EnumParameter<Tfm_CacheKind>:$kind,
    DefaultValuedParameter<"int64_t", "0">:$window
  );
  let assemblyFormat = "`<` $kind (`,` `window` `=` $window^)? `>`";
  let genVerifyDecl = 1;
}

def Tfm_BlockQuantAttr : AttrDef<Tfm_Dialect, "BlockQuant"> {
  let mnemonic = "block_quant";
  let summary = "tensor encoding: integer codes in blocks, a scale per block";
  let description = [{
    The encoding of a weight stored as integer codes in blocks of
    `blockSize()` (32) consecutive elements of a row (the last dimension),
    each block with its own f16 scale, as llama.cpp's Q8_0, Q4_0 and Q4_1
    store them. The tensor's element type is the code's: `i8` for `q8_0`
    (`w = scale · q`, `q` in [-127, 127]), `i4` for `q4_0`
    (`w = scale · (q - 8)`, `q` in [0, 15]) and for `q4_1`, whose blocks
    also have an f16 minimum (`w = scale · q + min`: 5 bits a weight,
    asymmetric ranges). `q8_channel` is int8 per channel, tfmc's own:
    `q8_0`'s blocks whose scales are equal along a row (the row's largest
    magnitude maps to 127), which the product kernels multiply with
    activations quantized per row. `q4_k` is GGUF's Q4_K kept as the checkpoint stores
    it: blocks of 32 codes in [0, 15] grouped by 8 into super-blocks of 256,
    `w = d · scale · q - dmin · min` with a 6-bit `scale` and `min` per
    block and f16 `d` and `dmin` per super-block (4.5 bits a weight in the
    file, 4.625 in the kernels' layout); its rows are whole super-blocks,
    and only a Q4_K checkpoint tensor can be stored so (the packager copies
    its blocks; there is no encoder from f32). `q6_k` is GGUF's Q6_K kept
    so, `i6` codes: `w = d · scale · (q - 32)`, `q` in [0, 63], an 8-bit
    signed `scale` per 16 elements and an f16 `d` per super-block of 256
    (6.5625 bits a weight, in the file and in the kernels' layout), also
    only from a Q6_K tensor. `q5_k` is GGUF's Q5_K kept so: `q4_k`'s
    metadata and formula with `i5` codes, `q` in [0, 31] (5.5 bits a weight
    in the file, 5.625 in the kernels' layout), only from a Q5_K tensor.
    `mxfp4` is the OCP microscaling FP4 format kept as the checkpoint
    stores it (gpt-oss's experts; GGUF's MXFP4): `i4` codes that name the
    E2M1 values {0, 0.5, 1, 1.5, 2, 3, 4, 6} and their negatives,
    `w = 2^(e - 127) · FP4[q]` with one E8M0 exponent byte `e` per block
    of 32 (4.25 bits a weight in the file and in the kernels' layout),
    only from an MXFP4 tensor (rows of whole blocks).
    A row of another format
    whose length is not a multiple of 32 ends in a zero-padded block.
    `tfm.dequantize` gives the
    f32 values; tfm-quantize-weights makes such weights and codegen stores
    them in the layout its kernels read (runtime/include/tfm/weight_formats.h), so the
    dequantization happens in registers inside the matrix kernels.

    ```mlir
    tfm.weight_decl @"lm_head.weight" : tensor<32000x2048xi8, #tfm.block_quant<q8_0>>
    ```
  }];
  // A format of the table (ir/WeightFormat.h) that tfmc keeps as block
  // panels, printed by its name; the parser refuses any other.
  let parameters = (ins "::mlir::tfm::WeightFormat":$format);
  let assemblyFormat = "`<` custom<BlockFormatName>($format) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Elements per block (a scale each).
    static constexpr int64_t blockSize() { return 32; }
    /// Elements per super-block of q4_k, q5_k and q6_k (the row length's
    /// multiple).
    static constexpr int64_t superBlockSize() { return 256; }
    /// The element type of the codes: i8 (q8_0), i6 (q6_k), i5 (q5_k) or
    /// i4 (q4_0, q4_1, q4_k, mxfp4).
    unsigned codeBits() const { return ::mlir::tfm::codeBits(getFormat()); }
  }];
}

#endif // TFM_ATTRS_TD
