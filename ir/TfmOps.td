//===- TfmOps.td - tfm dialect operations ------------------*- tablegen -*-===//
//
// One op per transformer concept. Shapes are checked by hand-written
// verifiers (TfmOps.cpp) whose messages name the operand and the numbers.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_OPS_TD
#define TFM_OPS_TD

include "ir/TfmBase.td"
include "ir/TfmAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

//===----------------------------------------------------------------------===//
// Weights and token-level ops
//===----------------------------------------------------------------------===//

def Tfm_WeightDeclOp : Tfm_Op<"weight_decl", [Symbol, HasParent<"ModuleOp">]> {
  let summary = "declares one tensor of the model's weights";
  let description = [{
    Declares a weight of the module by its name in the checkpoint, with the
    type it is stored as: the packager converts the checkpoint's tensor (of
    any stored dtype) to this element type and checks its shape. Every
    `tfm.weight` of the name must have this type. A weight stored as bf16,
    f16 or block-quantized integer codes (`#tfm.block_quant`) is read
    through `tfm.dequantize`.

    ```mlir
    tfm.weight_decl @"model.norm.weight" : tensor<512xf32>
    tfm.weight_decl @"model.layers.0.mlp.up_proj.weight" : tensor<1376x512xbf16>
    tfm.weight_decl @"lm_head.weight" : tensor<32000x512xi4, #tfm.block_quant<q4_0>>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttrOf<Tfm_WeightTensor>:$type);
  let assemblyFormat = "$sym_name attr-dict `:` $type";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    RankedTensorType getTensorType() {
      return ::llvm::cast<RankedTensorType>(getType());
    }
  }];
}

def Tfm_WeightOp : Tfm_Op<"weight", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "reads a declared weight";
  let description = [{
    The value of the weight declared by `tfm.weight_decl @name`; its type
    must be the declaration's. The IR never holds weight values: codegen
    turns each `tfm.weight` into an address inside the packaged weight
    blob, so IR dumps stay readable at any model size.

    ```mlir
    %wq = tfm.weight @"model.layers.0.self_attn.q_proj.weight" : tensor<512x512xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Tfm_WeightTensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Tfm_DequantizeOp : Tfm_Op<"dequantize", [Pure]> {
  let summary = "the f32 values of a weight stored in a narrower format";
  let description = [{
    Widens a weight stored as bf16 or f16, or as block-quantized codes
    (`#tfm.block_quant`: each element its block's scale times its code), to
    f32 of the same shape. tfm-quantize-weights puts it between a
    `tfm.weight` (or a `tfm.concat` of weights) and the ops that read it.
    Codegen does not materialize it where a kernel reads the format: a
    `tfm.linear` whose weight is dequantized calls the format's GEMM/GEMV,
    which widens in registers, and a `tfm.embedding` gathers and widens only
    the rows it looks up.

    ```mlir
    %w = tfm.weight @"model.layers.0.mlp.down_proj.weight" : tensor<512x1376xi8, #tfm.block_quant<q8_0>>
    %f = tfm.dequantize %w : tensor<512x1376xi8, #tfm.block_quant<q8_0>> -> tensor<512x1376xf32>
    ```
  }];
  let arguments = (ins Tfm_WeightTensor:$input);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The block format of the input, if it is block-quantized.
    std::optional<WeightFormat> getBlockFormat();
  }];
}

def Tfm_PositionIdsOp : Tfm_Op<"position_ids", [Pure, AttrSizedOperandSegments]> {
  let summary = "the positions of a sequence of tokens";
  let description = [{
    Produces `offset + [0, 1, ..., len(tokens) - 1]`, the absolute position
    of every token of `tokens`. `offset` (an `index`, default 0) is where the
    sequence starts in the context, e.g. after a cached prefix.

    With `padding_id` (RoBERTa and its descendants), padding tokens do not
    count: token `i` is at `padding_id + #{j <= i : tokens[j] != padding_id}`,
    and a padding token itself at `padding_id`, as transformers'
    `create_position_ids_from_input_ids` numbers them.

    With `lengths` (`[sequences]`, summing to the token count), `tokens`
    holds several sequences end to end (tfm-pack-sequences) and each one's
    positions start again from 0 (or from `padding_id`).

    ```mlir
    %pos = tfm.position_ids %tokens : tensor<?xi32> -> tensor<?xi32>
    %pos2 = tfm.position_ids %tokens offset %start : tensor<?xi32> -> tensor<?xi32>
    %pos3 = tfm.position_ids %tokens {padding_id = 1 : i64} : tensor<?xi32> -> tensor<?xi32>
    %pos4 = tfm.position_ids %tokens lengths %lengths : tensor<?xi32> : tensor<?xi32> -> tensor<?xi32>
    ```
  }];
  let arguments = (ins Tfm_IntTensor:$tokens, Optional<Index>:$offset,
                       Optional<Tfm_IntTensor>:$lengths,
                       OptionalAttr<I64Attr>:$padding_id);
  let results = (outs Tfm_IntTensor:$result);
  let assemblyFormat = [{
    $tokens (`offset` $offset^)? (`lengths` $lengths^ `:` type($lengths))?
    attr-dict `:` type($tokens) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_EmbeddingOp : Tfm_Op<"embedding", [Pure, Tfm_PositionWise]> {
  let summary = "row lookup of token ids in an embedding table";
  let description = [{
    `result[i, :] = table[ids[i], :] * scale`. `table` is `[vocab, dim]`,
    `ids` is `[seq]`; the result is `[seq, dim]`. Ids outside `[0, vocab)`
    are a user error that the runtime reports before running the model.
    The optional `scale` (Gemma's `sqrt(hidden)`) multiplies the rows
    looked up, not the table, which a tied LM head reads unscaled.

    ```mlir
    %x = tfm.embedding %wte[%tokens] : tensor<512x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    %g = tfm.embedding %wte[%tokens] {scale = 8.0 : f32} : tensor<512x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$table, Tfm_IntTensor:$ids,
                       OptionalAttr<F32Attr>:$scale);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $table `[` $ids `]` attr-dict `:` type($table) `,` type($ids) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Projections and elementwise ops
//===----------------------------------------------------------------------===//

def Tfm_LinearOp : Tfm_Op<"linear", [Pure, Tfm_PositionWise]> {
  let summary = "x·Wᵀ + b, a linear projection with the checkpoint's [out, in] weight";
  let description = [{
    Multiplies every row of `input` by the transposed `weight` (`[out, in]`,
    as checkpoints store it) and adds the optional `bias` (`[out]`). The input
    is `[seq, in]` or `[seq, heads, head_dim]` with `heads * head_dim = in`
    (the attention output feeding the output projection); the result is
    `[seq, out]` or `[seq, heads, head_dim]` with `heads * head_dim = out`
    (a projection split into heads).

    ```mlir
    %q = tfm.linear %h, %wq : (tensor<?x512xf32>, tensor<512x512xf32>) -> tensor<?x8x64xf32>
    %y = tfm.linear %x, %w bias %b : (tensor<?x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>) -> tensor<?x3072xf32>
    ```

    Epilogues (made by `tfm-fuse-mlp`): `activation` applies an activation
    after the bias. `gated` (with an activation, without a bias) makes the
    weight `[2·out, in]`, the gate's rows then the up projection's, and the
    result `act(x·W_gateᵀ) * (x·W_upᵀ)` (SwiGLU, GeGLU).

    ```mlir
    %h = tfm.linear %x, %w bias %b activation gelu_tanh : (tensor<?x768xf32>, tensor<3072x768xf32>, tensor<3072xf32>) -> tensor<?x3072xf32>
    %g = tfm.linear %x, %wgu activation silu gated : (tensor<?x768xf32>, tensor<4096x768xf32>) -> tensor<?x2048xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_FloatTensor:$weight,
                       Optional<Tfm_FloatTensor>:$bias,
                       OptionalAttr<Tfm_ActivationKindAttr>:$activation,
                       UnitAttr:$gated);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? (`activation` ``$activation^)? (`gated` $gated^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let builders = [
    // A plain projection (no epilogue), as frontends build them.
    OpBuilder<(ins "Type":$result, "Value":$input, "Value":$weight,
                   CArg<"Value", "{}">:$bias), [{
      build($_builder, $_state, result, input, weight, bias,
            ActivationKindAttr(), UnitAttr());
    }]>
  ];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of input features (`in`) and output features (`out`; half
    /// the weight's rows when `gated`).
    int64_t getInFeatures();
    int64_t getOutFeatures();
  }];
}

def Tfm_HeadLinearOp : Tfm_Op<"head_linear", [Pure, Tfm_PositionWise]> {
  let summary = "a projection of its own for each head: x[:, h]·W_hᵀ";
  let description = [{
    `result[i, h, :] = input[i, h, :] · W_hᵀ` where `W_h` is rows
    `[h·out, (h+1)·out)` of `weight` (`[heads·out, in]`, each head's block
    in the `[out, in]` orientation of `tfm.linear`). The input is
    `[seq, heads, in]`, the result `[seq, heads, out]`.

    Multi-head latent attention (DeepSeek-V2/V3) uses it twice: to absorb
    each head's key up-projection into its query (`q_nope → q·W_ukᵀ`, out
    = the latent width) and to expand each head's attended latent into its
    value (`o → o·W_uvᵀ`), so that the cache holds one latent row per
    position instead of every head's key and value.

    ```mlir
    %qa = tfm.head_linear %qn, %wk : (tensor<?x16x128xf32>, tensor<8192x128xf32>) -> tensor<?x16x512xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_FloatTensor:$weight);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_LoraOp : Tfm_Op<"lora", [Pure,
    AllTypesMatch<["projected", "result"]>]> {
  let summary = "a projection's output plus the low-rank update of the "
                "adapter each row runs with";
  let description = [{
    `result[i] = projected[i] + B_a·(A_a·input[i])`, where `projected` is
    `tfm.linear`'s output for `input` and `(A_a, B_a)` is LoRA target
    `target`'s pair in the adapter `a` that row `i` of the call runs with
    (tfm_lora_load; `B_a` carries the adapter's scale). The adapters are
    loaded at run time into the slots `tfm-lora-slots` made, listed in the
    module's `tfm.lora` attribute; the runtime says which adapter each row
    of a call uses (one for every row of a session's call, a sequence's for
    each row of a batched call), and a row without one is `projected` as
    it is. Row `i` is the call's row `i`: the cache derivations keep the op
    on the rows of the entry point's tokens (it acts on each row, but is
    not moved onto a subset of them).

    ```mlir
    %q1 = tfm.lora %h, %q {target = 0 : i64} : tensor<?x64xf32>, tensor<?x4x16xf32> -> tensor<?x4x16xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_FloatTensor:$projected,
                       I64Attr:$target);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $projected attr-dict `:` type($input) `,` type($projected)
    `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_ConcatOp : Tfm_Op<"concat", [Pure]> {
  let summary = "tensors joined along their first dimension";
  let description = [{
    `result = [inputs[0]; inputs[1]; ...]` along dimension 0; the other
    dimensions agree. `tfm-fuse-qkv` and `tfm-fuse-mlp` join sibling
    projections' weights with it. When every input is a `tfm.weight`,
    codegen places them back to back in the weight blob and the result
    costs nothing at run time.

    ```mlir
    %wqkv = tfm.concat %wq, %wk, %wv : (tensor<512x512xf32>, tensor<128x512xf32>, tensor<128x512xf32>) -> tensor<768x512xf32>
    ```
  }];
  let arguments = (ins Variadic<Tfm_WeightTensor>:$inputs);
  let results = (outs Tfm_WeightTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type($inputs, results)
  }];
  let hasVerifier = 1;
}

def Tfm_ActivationOp : Tfm_Op<"activation", [Pure, Tfm_PositionWise,
    SameOperandsAndResultType]> {
  let summary = "elementwise activation: gelu, gelu_tanh, quick_gelu, relu, silu, tanh or sigmoid";
  let description = [{
    Applies the activation function `kind` to every element:
    `gelu` is the exact `x·Φ(x)`, `gelu_tanh` GPT-2's tanh approximation,
    `quick_gelu` CLIP's `x·σ(1.702·x)`, `silu` is `x·σ(x)`.

    ```mlir
    %y = tfm.activation gelu_tanh %x : tensor<?x3072xf32>
    ```
  }];
  let arguments = (ins Tfm_ActivationKindAttr:$kind, Tfm_FloatTensor:$input);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "``$kind $input attr-dict `:` type($result)";
  let hasFolder = 1;
}

def Tfm_ClampOp : Tfm_Op<"clamp", [Pure, Tfm_PositionWise,
    SameOperandsAndResultType]> {
  let summary = "elementwise clamp to [min, max]";
  let description = [{
    `result = min(max(input, min), max)` for every element: OLMo's
    `clip_qkv`, which clamps Q, K and V to `[-clip_qkv, clip_qkv]` after
    their projections (OlmoAttention).

    ```mlir
    %q = tfm.clamp %x {max = 8.0 : f32, min = -8.0 : f32} : tensor<?x4x16xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, F32Attr:$min, F32Attr:$max);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tfm_SoftcapOp : Tfm_Op<"softcap", [Pure, Tfm_PositionWise,
    SameOperandsAndResultType]> {
  let summary = "elementwise soft-capping: cap · tanh(x / cap)";
  let description = [{
    Squashes every element smoothly into `(-cap, cap)`: Gemma 2's final
    logits (`final_logit_softcapping`). Attention's scores have their own
    `softcap` on `tfm.attention`.

    ```mlir
    %logits = tfm.softcap %x {cap = 30.0 : f32} : tensor<?x256000xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, F32Attr:$cap);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tfm_ScaleOp : Tfm_Op<"scale", [Pure, Tfm_PositionWise,
    SameOperandsAndResultType]> {
  let summary = "elementwise multiplication by a constant";
  let description = [{
    `result = input · factor`: Gemma 4's `layer_scalar`, which multiplies
    the whole residual stream at the end of each layer (a number in the
    checkpoint, read when the model is built).

    ```mlir
    %x2 = tfm.scale %x1 {factor = 0.5 : f32} : tensor<?x1536xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, F32Attr:$factor);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tfm_PoolOp : Tfm_Op<"pool", [Pure]> {
  let summary = "one vector for a sequence: mean, first token or max, normalized";
  let description = [{
    Reduces the hidden states `input` (`[tokens, d]`) over the tokens to one
    `[d]` vector, as sentence embedders pool (sentence-transformers'
    `Pooling`): `mean` averages them, `cls` takes the first, `max` the
    largest value of each feature. With `normalize`, the vector is divided
    by its L2 norm (at least 1e-12, as `torch.nn.functional.normalize`).

    With `lengths` (`[sequences]`), the rows hold several sequences end to
    end (tfm-pack-sequences) and each is pooled alone: the result is
    `[sequences, d]`.

    ```mlir
    %e = tfm.pool mean %h {normalize} : tensor<?x384xf32> -> tensor<384xf32>
    %b = tfm.pool cls %h lengths %n : tensor<?xi32> : tensor<?x384xf32> -> tensor<?x384xf32>
    ```
  }];
  let arguments = (ins Tfm_PoolingKindAttr:$kind, Tfm_FloatTensor:$input,
                       Optional<Tfm_IntTensor>:$lengths, UnitAttr:$normalize);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    ``$kind $input (`lengths` $lengths^ `:` type($lengths))? attr-dict `:`
    type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_TokenRowOp : Tfm_Op<"token_row", [Pure]> {
  let summary = "the hidden state at a token: CLIP's end-of-text pooling";
  let description = [{
    The row of `input` (`[tokens, d]`) at the first position where
    `tokens` holds `token_id`, as a `[d]` vector; row 0 when no position
    does (as `(ids == eos).argmax()` gives). Without `token_id`, the row at
    the first position of the largest id: CLIP's first checkpoints pool at
    their end-of-text token that way, its id being the vocabulary's last.

    ```mlir
    %p = tfm.token_row %h at %ids {token_id = 49407} : tensor<?x512xf32>, tensor<?xi32> -> tensor<512xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_IntTensor:$tokens,
                       OptionalAttr<I64Attr>:$token_id);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `at` $tokens attr-dict `:` type($input) `,` type($tokens) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_PatchesOp : Tfm_Op<"patches", [Pure]> {
  let summary = "an image's square patches, one per row";
  let description = [{
    Cuts the image `input` (`[channels, height, width]`) into `patch` x
    `patch` squares and returns them row by row (left to right, then top to
    bottom), each flattened channel-major: `result[py * (W / patch) + px,
    (c * patch + ky) * patch + kx] = input[c, py * patch + ky, px * patch +
    kx]`. A vision transformer's patch embedding, the stride-`patch`
    convolution, is then a `tfm.linear` with the convolution's
    `[out, channels * patch * patch]` weight.

    With `strides` (`[rows, columns]`), patches start every `strides[0]` rows
    and `strides[1]` columns and may overlap (the Audio Spectrogram
    Transformer's 16x16 patches every 10): `((H - patch) / strides[0] + 1)
    * ((W - patch) / strides[1] + 1)` of them, as a convolution with those
    strides takes.

    ```mlir
    %p = tfm.patches %image {patch = 16} : tensor<3x224x224xf32> -> tensor<196x768xf32>
    %s = tfm.patches %fbank {patch = 16, strides = array<i64: 10, 10>} : tensor<1x128x1024xf32> -> tensor<1212x256xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, I64Attr:$patch,
                       OptionalAttr<DenseI64ArrayAttr>:$strides);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_WindowsOp : Tfm_Op<"windows", [Pure]> {
  let summary = "the sliding windows of a 1-D convolution, one per row";
  let description = [{
    The inputs of a 1-D convolution with `kernel` taps, `stride` and zero
    `padding` on both ends: `input` is `[length, channels]` (one row per
    position), or with `channels_first` `[channels, length]` (Whisper's
    log-mel features `[mel bins, frames]`). Row `t` of the result holds the
    `kernel` positions from `t * stride - padding` on, channel-major:
    `result[t, c * kernel + j] = input[t * stride + j - padding, c]`, zero
    outside the input, for `(length + 2 * padding - kernel) / stride + 1`
    rows. The convolution is then a `tfm.linear` with its `[out, channels
    * kernel]` weight, as a vision transformer's patch embedding is after
    `tfm.patches`.

    ```mlir
    %w = tfm.windows %mel {channels_first, kernel = 3, padding = 1, stride = 1} : tensor<80x3000xf32> -> tensor<3000x240xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, I64Attr:$kernel,
                       I64Attr:$stride, I64Attr:$padding,
                       UnitAttr:$channels_first);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Result rows for `length` input positions (dynamic stays dynamic).
    int64_t windowCount(int64_t length);
  }];
}

def Tfm_GatherRowsOp : Tfm_Op<"gather_rows", [Pure]> {
  let summary = "rows of a tensor in a fixed order: Swin's windows";
  let description = [{
    `result[i, :] = input[rows[i], :]` for the constant row list `rows`:
    a static rearrangement of the tokens, such as Swin's cyclic shift and
    partition into windows (and its inverse), or the 2x2 neighbourhoods a
    patch merging concatenates.

    ```mlir
    %w = tfm.gather_rows %x {rows = array<i64: 0, 1, 4, 5, 2, 3, 6, 7>} : tensor<8x96xf32> -> tensor<8x96xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, DenseI64ArrayAttr:$rows);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

class Tfm_BinaryElementwiseOp<string mnemonic, string what>
    : Tfm_Op<mnemonic, [Pure, Tfm_PositionWise, Commutative,
                        SameOperandsAndResultType]> {
  let summary = "elementwise " # what # " of two tensors of one shape";
  let arguments = (ins Tfm_FloatTensor:$lhs, Tfm_FloatTensor:$rhs);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Tfm_AddOp : Tfm_BinaryElementwiseOp<"add", "sum"> {
  let description = [{
    Residual connections: `result = lhs + rhs`, both of the result's type.

    ```mlir
    %x1 = tfm.add %x, %attn : tensor<?x512xf32>
    ```
  }];
}

def Tfm_MulOp : Tfm_BinaryElementwiseOp<"mul", "product"> {
  let description = [{
    Gates, e.g. SwiGLU's `silu(x·W1ᵀ) * (x·W3ᵀ)`: `result = lhs * rhs`.

    ```mlir
    %g = tfm.mul %a, %b : tensor<?x1376xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

def Tfm_LayerNormOp : Tfm_Op<"layer_norm", [Pure, Tfm_PositionWise]> {
  let summary = "LayerNorm over the last dimension, with scale and optional shift";
  let description = [{
    `(x - mean(x)) / sqrt(var(x) + epsilon) * gamma + beta` over the last
    dimension of `input` (`[seq, d]`); `gamma` and `beta` are `[d]`.

    ```mlir
    %h = tfm.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<?x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<?x768xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_FloatTensor:$gamma,
                       Optional<Tfm_FloatTensor>:$beta, F32Attr:$epsilon);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma (`,` $beta^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_ChannelNormOp : Tfm_Op<"channel_norm", [Pure, AttrSizedOperandSegments]> {
  let summary = "each column normalized over the rows: GroupNorm per channel";
  let description = [{
    `(x - mean) / sqrt(var + epsilon)` of each column of `input`
    (`[positions, channels]`) over all its rows, then `* gamma + beta` where
    given (`[channels]`). The statistics span the whole sequence, so the op
    is not position-wise: Wav2Vec2's first convolution normalizes so
    (GroupNorm with one group per channel), and on the `[samples, 1]`
    waveform without `gamma` it is the feature extractor's zero-mean,
    unit-variance normalization.

    ```mlir
    %n = tfm.channel_norm %x, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<?x512xf32>, tensor<512xf32>, tensor<512xf32>) -> tensor<?x512xf32>
    %w = tfm.channel_norm %samples {epsilon = 1.0e-7 : f32} : (tensor<?x1xf32>) -> tensor<?x1xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Optional<Tfm_FloatTensor>:$gamma,
                       Optional<Tfm_FloatTensor>:$beta, F32Attr:$epsilon);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`,` $gamma^)? (`,` $beta^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_RmsNormOp : Tfm_Op<"rms_norm", [Pure, Tfm_PositionWise]> {
  let summary = "RMSNorm over the last dimension";
  let description = [{
    `x / sqrt(mean(x²) + epsilon) * gamma` over the last dimension of
    `input` (`[seq, d]`, or `[seq, heads, d]`: each head normed alone, as
    Qwen3 norms Q and K); `gamma` is `[d]`.

    ```mlir
    %h = tfm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_FloatTensor:$gamma,
                       F32Attr:$epsilon);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_AddRmsNormOp : Tfm_Op<"add_rms_norm", [Pure, Tfm_PositionWise,
    AllTypesMatch<["lhs", "rhs", "sum", "result"]>]> {
  let summary = "a residual add and the RMSNorm of the sum, in one pass";
  let description = [{
    `sum = lhs + rhs` and `result = rms_norm(sum, gamma)`, as
    `tfm-fuse-norm` makes them from a `tfm.add` whose sum feeds a
    `tfm.rms_norm` (and the next residual add).

    ```mlir
    %x1, %h = tfm.add_rms_norm %x, %attn, %g {epsilon = 1.0e-5 : f32} : tensor<?x64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$lhs, Tfm_FloatTensor:$rhs,
                       Tfm_FloatTensor:$gamma, F32Attr:$epsilon);
  let results = (outs Tfm_FloatTensor:$sum, Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $gamma attr-dict `:` type($lhs) `,` type($gamma)
  }];
  let hasVerifier = 1;
}

def Tfm_AddLayerNormOp : Tfm_Op<"add_layer_norm", [Pure, Tfm_PositionWise,
    AllTypesMatch<["lhs", "rhs", "sum", "result"]>]> {
  let summary = "a residual add and the LayerNorm of the sum, in one pass";
  let description = [{
    `sum = lhs + rhs` and `result = layer_norm(sum, gamma, beta)`, as
    `tfm-fuse-norm` makes them from a `tfm.add` whose sum feeds a
    `tfm.layer_norm`.

    ```mlir
    %x1, %h = tfm.add_layer_norm %x, %attn, %g, %b {epsilon = 1.0e-5 : f32} : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$lhs, Tfm_FloatTensor:$rhs,
                       Tfm_FloatTensor:$gamma, Optional<Tfm_FloatTensor>:$beta,
                       F32Attr:$epsilon);
  let results = (outs Tfm_FloatTensor:$sum, Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $gamma (`,` $beta^)? attr-dict `:` type($lhs) `,` type($gamma) (`,` type($beta)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Positions
//===----------------------------------------------------------------------===//

def Tfm_RopeOp : Tfm_Op<"rope", [Pure, Tfm_PositionWise,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding of queries or keys";
  let description = [{
    Rotates pairs of each head's dimensions of `input` (`[seq, heads,
    head_dim]`) by the angle `positions[s] * f[i]`, where the inverse
    frequencies are `f[i] = theta^(-2i/rotary_dim)`, or the
    `frequencies` given (`rotary_dim / 2` values: what scaled RoPE variants
    such as linear position interpolation and Llama 3's banded scaling
    compute from the config; a pair of frequency 0 passes through, as
    Gemma 4's proportional RoPE leaves three quarters of its full layers'
    pairs).

    With `sections` (`k` counts of rotated pairs, summing to
    `rotary_dim / 2`), `positions` is `[seq, k]`: each row has one position
    per section, and pair `i` of section `c` rotates by `positions[s, c] *
    f[i]`, `i` counted over all pairs. Qwen2-VL's multimodal RoPE gives
    text and image tokens `(t, h, w)` positions over sections such as
    `[16, 24, 24]`; Qwen2.5-VL's vision tower rotates by a patch's `(h, w)`
    over two halves, its frequencies repeated in each.

    `style` picks the pairs: `interleaved`
    rotates `(2i, 2i+1)` (llama2.c, Meta), `rotate_half` rotates
    `(i, i + rotary_dim/2)` (Hugging Face). With `rotary_dim` (partial
    rotary: GPT-NeoX, Phi, StableLM) only the first `rotary_dim` dimensions
    of each head rotate; the rest pass through unchanged. It defaults to
    `head_dim`.

    With `ntk_factor` and `ntk_context` (dynamic NTK scaling, Hugging
    Face's `rope_scaling: {"type": "dynamic"}`), a row at position `p` past
    the context the model was trained on (`p + 1 > ntk_context`) rotates
    with the base `theta · (ntk_factor · (p + 1) / ntk_context −
    (ntk_factor − 1))^(rotary_dim / (rotary_dim − 2))`: the base
    transformers computes for a sequence of `p + 1` tokens. Each row gets
    its own sequence length's base, as if the tokens were decoded one at a
    time with transformers' cache (a key keeps the rotation it was cached
    with), so that any split of a sequence into calls gives the same
    result; transformers' uncached forward instead rotates every position
    of a sequence with its last position's base.

    With `long_frequencies` and `long_context` (Phi-3's LongRoPE), a row at
    position `p` past the context of the short factors (`p + 1 >
    long_context`) rotates with `long_frequencies` instead of
    `frequencies`: again each row by its own sequence length, as
    transformers' cached decoding does (its uncached forward rotates every
    position of a sequence longer than `long_context` with the long ones).

    ```mlir
    %qr = tfm.rope rotate_half %q, %pos {theta = 1.0e4 : f32} : tensor<?x8x64xf32>, tensor<?xi32>
    %kr = tfm.rope rotate_half %k, %pos {theta = 1.0e4 : f32, rotary_dim = 16 : i64} : tensor<?x8x64xf32>, tensor<?xi32>
    %mr = tfm.rope rotate_half %q, %thw {theta = 1.0e6 : f32, sections = array<i64: 8, 12, 12>} : tensor<?x8x64xf32>, tensor<?x3xi32>
    ```
  }];
  let arguments = (ins Tfm_RopeStyleAttr:$style, Tfm_FloatTensor:$input,
                       Tfm_IntTensor:$positions, F32Attr:$theta,
                       OptionalAttr<I64Attr>:$rotary_dim,
                       OptionalAttr<DenseF32ArrayAttr>:$frequencies,
                       OptionalAttr<F32Attr>:$ntk_factor,
                       OptionalAttr<I64Attr>:$ntk_context,
                       OptionalAttr<DenseF32ArrayAttr>:$long_frequencies,
                       OptionalAttr<I64Attr>:$long_context,
                       OptionalAttr<DenseI64ArrayAttr>:$sections);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    ``$style $input `,` $positions attr-dict `:` type($input) `,` type($positions)
  }];
  let extraClassDeclaration = [{
    /// The dimensions of each head that rotate (the leading ones).
    int64_t getRotaryDims() {
      return getRotaryDim().value_or(getInput().getType().getDimSize(2));
    }
    /// The inverse frequency of each rotated pair, `getRotaryDims() / 2`
    /// of them.
    SmallVector<double> getInverseFrequencies();
  }];
  let hasVerifier = 1;
}

def Tfm_SinusoidalPositionOp : Tfm_Op<"sinusoidal_position", [Pure, Tfm_PositionWise]> {
  let summary = "fixed sinusoidal position vectors (the original Transformer's)";
  let description = [{
    For each position `p` of `positions` a `[dim]` vector of
    `sin(p / base^(2i/dim))` and `cos(p / base^(2i/dim))`, `i < dim/2`;
    `layout` says whether sin and cos alternate (`interleaved`) or come as
    two halves (`concat`). Computed in double and rounded to f32, as the
    reference implementations build their tables.

    ```mlir
    %pe = tfm.sinusoidal_position interleaved %pos {base = 1.0e4 : f32} : tensor<?xi32> -> tensor<?x512xf32>
    ```
  }];
  let arguments = (ins Tfm_SinusoidLayoutAttr:$layout, Tfm_IntTensor:$positions,
                       F32Attr:$base);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    ``$layout $positions attr-dict `:` type($positions) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def Tfm_AttentionOp : Tfm_Op<"attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "scaled dot-product attention: self, causal, cross, grouped-query";
  let description = [{
    `softmax(scale · q·kᵀ + bias + mask) · v` per head. `query` is
    `[s, heads, head_dim]`, `key` `[t, kv_heads, head_dim]`, `value`
    `[t, kv_heads, value_dim]`; the result is `[s, heads, value_dim]`.
    Query head `h` reads KV head `h / (heads / kv_heads)`, so `kv_heads`
    must divide `heads` (grouped-query and multi-query attention).

    With `causal`, query `i` sees keys `j <= i + (t - s)`: the queries are the
    last `s` positions of the `t` keys. `window = w` hides the keys `w` or
    more positions behind the query (`j <= i + (t - s) - w`): with `causal`,
    it sees the `w` most recent keys (sliding-window attention); without,
    those and every later key (Gemma 3's image rows, which see each other
    both ways within a sliding layer's window). An
    optional additive `bias` `[heads, s, t]` carries arbitrary terms.
    Cross-attention is the case `s != t` without `causal`.

    With `relative_bias` (T5), a learned table `[buckets, heads]` adds
    `table[bucket(query position - key position), h]` to every score, the
    positions counted as for `causal` (queries are the last `s` of the `t`
    keys), so a cached decode step gets the terms of its true position.
    Distances are bucketed as transformers' T5 does: exactly below
    `buckets / 4` (bidirectional) or `buckets / 2` (causal), then
    logarithmically up to `max_distance`, beyond which they share the last
    bucket; bidirectional attention (not `causal`) gives keys after the
    query their own half of the buckets. Every layer may read the same
    table: the terms depend only on the distance, and no `[heads, s, t]`
    tensor is ever built for them.

    With `lengths` (`[sequences]`, tfm-pack-sequences), queries and keys are
    the same `s = t` rows holding several sequences end to end, and a query
    sees only the keys of its own sequence (under `causal`, the earlier
    ones): a block-diagonal mask, which the fused kernel never materializes.

    With `softcap = c` (Gemma 2), every scaled score `x` becomes
    `c · tanh(x / c)` before the bias and the mask.

    With `sinks` (`[heads]`, gpt-oss's attention sinks), head `h`'s softmax
    has one more logit, `sinks[h]`, in its denominator only: it weighs no
    value, is neither scaled nor masked, and lets a query give part of its
    attention to nothing, `p_j = e^(s_j) / (Σ_k e^(s_k) + e^(sinks[h]))`.

    ```mlir
    %a = tfm.attention %q, %k, %v {causal, scale = 0.125 : f32} : (tensor<?x8x64xf32>, tensor<?x2x64xf32>, tensor<?x2x64xf32>) -> tensor<?x8x64xf32>
    %t5 = tfm.attention %q, %k, %v relative_bias %table {max_distance = 128 : i64, scale = 1.0 : f32} : (tensor<?x8x64xf32>, tensor<?x8x64xf32>, tensor<?x8x64xf32>, tensor<32x8xf32>) -> tensor<?x8x64xf32>
    %oss = tfm.attention %q, %k, %v sinks %s {causal, scale = 0.125 : f32, window = 128 : i64} : (tensor<?x8x64xf32>, tensor<?x2x64xf32>, tensor<?x2x64xf32>, tensor<8xf32>) -> tensor<?x8x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$query, Tfm_FloatTensor:$key,
                       Tfm_FloatTensor:$value, Optional<Tfm_FloatTensor>:$bias,
                       Optional<Tfm_IntTensor>:$lengths,
                       Optional<Tfm_FloatTensor>:$relative_bias,
                       Optional<Tfm_FloatTensor>:$sinks,
                       F32Attr:$scale, UnitAttr:$causal,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<I64Attr>:$max_distance,
                       OptionalAttr<F32Attr>:$softcap);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`bias` $bias^)? (`lengths` $lengths^)?
    (`relative_bias` $relative_bias^)? (`sinks` $sinks^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let hasCanonicalizer = 1;
}

def Tfm_AttentionWeightsOp : Tfm_Op<"attention_weights", [Pure]> {
  let summary = "the attention probabilities of chosen heads, unmasked";
  let description = [{
    `softmax(scale · q·kᵀ)` over the keys for the query heads listed in
    `heads`, in that order: `query` is `[s, heads, head_dim]`, `key`
    `[t, kv_heads, head_dim]` (query head `h` reads KV head
    `h / (heads / kv_heads)`, as in `tfm.attention`), the result
    `[s, n, t]` for `n` listed heads. No mask: it is what a
    cross-attention looks at, which Whisper's word timestamps align to the
    audio (transformers' `output_attentions`). It adds nothing to the
    attention it mirrors, which stays fused.

    ```mlir
    %w = tfm.attention_weights %q, %k {heads = array<i64: 1, 3>, scale = 0.125 : f32} : (tensor<?x4x64xf32>, tensor<1500x4x64xf32>) -> tensor<?x2x1500xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$query, Tfm_FloatTensor:$key,
                       DenseI64ArrayAttr:$heads, F32Attr:$scale);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_WindowAttentionOp : Tfm_Op<"window_attention", [Pure]> {
  let summary = "attention within fixed windows of rows, with a bias per window";
  let description = [{
    The rows of `query`, `key` and `value` (`[s, heads, head_dim]`, `s` a
    multiple of `window`) form `s / window` windows of consecutive rows;
    each query attends to the keys of its own window only:
    `softmax(scale · q·kᵀ + bias[w mod b, h]) · v` for window `w`, with
    `bias` `[b, heads, window, window]` (Swin's relative-position bias,
    `b` = 1, plus the shifted windows' mask, `b` = windows). Scores exist a
    window at a time, `[heads, window, window]`, never `[heads, s, s]`.

    ```mlir
    %a = tfm.window_attention %q, %k, %v, %bias {scale = 0.17677 : f32, window = 49 : i64} : (tensor<3136x3x32xf32>, tensor<3136x3x32xf32>, tensor<3136x3x32xf32>, tensor<64x3x49x49xf32>) -> tensor<3136x3x32xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$query, Tfm_FloatTensor:$key,
                       Tfm_FloatTensor:$value, Tfm_FloatTensor:$bias,
                       I64Attr:$window, F32Attr:$scale);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $bias attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_SparseAttentionOp : Tfm_Op<"sparse_attention", [Pure]> {
  let summary = "Longformer's attention: a sliding window plus global tokens";
  let description = [{
    Bidirectional self-attention over `s` rows (`[s, heads, head_dim]`
    operands and result) with Longformer's sparse pattern. A token is
    global when `global[j] != 0` (an `i32 [s]` mask, optional) or
    `j < global_prefix` (the classifiers' first token).

    - A query `i` that is not global attends with `query`, `key` and
      `value` to the keys within `window` of it (`|i - j| <= window`) and
      to every global key: `softmax(scale · q·kᵀ)` over that set.
    - A global query attends to every key, with its own projections:
      `global_query`, `global_key` and `global_value`.

    The fused kernel visits only the key tiles the window reaches plus the
    global keys, so a layer's cost grows linearly in `s` for a fixed
    number of global tokens; the reference lowering materializes
    `[heads, s, s]`.

    ```mlir
    %a = tfm.sparse_attention %q, %k, %v, %gq, %gk, %gv global %mask {scale = 0.125 : f32, window = 256 : i64} : (tensor<?x12x64xf32>, tensor<?x12x64xf32>, tensor<?x12x64xf32>, tensor<?x12x64xf32>, tensor<?x12x64xf32>, tensor<?x12x64xf32>, tensor<?xi32>) -> tensor<?x12x64xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$query, Tfm_FloatTensor:$key,
                       Tfm_FloatTensor:$value, Tfm_FloatTensor:$global_query,
                       Tfm_FloatTensor:$global_key,
                       Tfm_FloatTensor:$global_value,
                       Optional<Tfm_IntTensor>:$global,
                       I64Attr:$window, F32Attr:$scale,
                       DefaultValuedAttr<I64Attr, "0">:$global_prefix);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $global_query `,` $global_key `,`
    $global_value (`global` $global^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Recurrent layers (linear attention): a fixed-size state carried along
//===----------------------------------------------------------------------===//

def Tfm_CausalConv1dOp : Tfm_Op<"causal_conv1d",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "a causal depthwise convolution along the positions";
  let description = [{
    `result[t, c] = Σ_{j<K} weight[c, j] · x[t + j, c]` where `x` is
    `[state; input]`: the `K − 1` inputs before the first new position,
    then the new ones. `input` and `result` are `[s, C]`, `weight` `[C, K]`
    (Hugging Face's `conv1d.weight` squeezed, GGUF's `ssm_conv1d` as
    stored), `state` and `final_state` `[K − 1, C]`. `final_state` is the
    last `K − 1` rows of `x`: what the next call continues from.

    Without `state` the past is zeros (a sequence's first call, `@forward`);
    with `reset` true the state is read as zeros too, so that a cache
    reused for a new sequence needs no clearing. No activation is applied
    (Gated DeltaNet follows it with SiLU).

    ```mlir
    %y, %s = tfm.causal_conv1d %mix, %w : (tensor<?x6144xf32>, tensor<6144x4xf32>) -> (tensor<?x6144xf32>, tensor<3x6144xf32>)
    %y2, %s2 = tfm.causal_conv1d %mix, %w state %s0 reset %first : (tensor<?x6144xf32>, tensor<6144x4xf32>, tensor<3x6144xf32>, i1) -> (tensor<?x6144xf32>, tensor<3x6144xf32>)
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_FloatTensor:$weight,
                       Optional<Tfm_FloatTensor>:$state, Optional<I1>:$reset);
  let results = (outs Tfm_FloatTensor:$result, Tfm_FloatTensor:$final_state);
  let assemblyFormat = [{
    $input `,` $weight (`state` $state^)? (`reset` $reset^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_GatedDeltaRuleOp : Tfm_Op<"gated_delta_rule",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "Gated DeltaNet's recurrence over the positions (Qwen3-Next, Qwen3.5)";
  let description = [{
    Each value head `h` keeps a state `S_h` (`[dk, dv]`) that every
    position `t` updates and reads:

    ```
    g    = decay[h] · softplus(alpha[t, h])        (≤ 0: a log decay)
    S_h ← exp(g) · S_h
    S_h ← S_h + k_t ⊗ beta[t, h] · (v_t − S_hᵀ k_t)
    o_t  = scale · S_hᵀ q_t
    ```

    `query` and `key` are `[s, Hk, dk]` (L2-normalized by the model),
    `value` and `result` `[s, Hv, dv]`, `alpha` and `beta` `[s, Hv]`
    (`beta` already sigmoided, `alpha` the projection plus `dt_bias`),
    `decay` `[Hv]` (`−exp(A_log)`, GGUF's `ssm_a` as stored), `state` and
    `final_state` `[Hv, dk, dv]`. `Hk` divides `Hv`; value head `h` reads
    key head `h / (Hv / Hk)` (grouped, Hugging Face's order), or `h mod Hk`
    with `tiled` (llama.cpp's qwen35 GGUF files, whose value heads are
    reordered). `scale` is `dk^-1/2` in every published model.

    Without `state` the state starts at zeros (`@forward`); `reset` true
    reads it as zeros, as for `tfm.causal_conv1d`. How the positions are
    grouped into chunks is the lowering's choice: the recurrence is the
    op's meaning.

    ```mlir
    %o, %S = tfm.gated_delta_rule %q, %k, %v, %a, %decay, %beta {scale = 0.0883883 : f32} : (tensor<?x16x128xf32>, tensor<?x16x128xf32>, tensor<?x32x128xf32>, tensor<?x32xf32>, tensor<32xf32>, tensor<?x32xf32>) -> (tensor<?x32x128xf32>, tensor<32x128x128xf32>)
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$query, Tfm_FloatTensor:$key,
                       Tfm_FloatTensor:$value, Tfm_FloatTensor:$alpha,
                       Tfm_FloatTensor:$decay, Tfm_FloatTensor:$beta,
                       Optional<Tfm_FloatTensor>:$state, Optional<I1>:$reset,
                       F32Attr:$scale, UnitAttr:$tiled);
  let results = (outs Tfm_FloatTensor:$result, Tfm_FloatTensor:$final_state);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $alpha `,` $decay `,` $beta
    (`state` $state^)? (`reset` $reset^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

def Tfm_MoeOp : Tfm_Op<"moe", [Pure, Tfm_PositionWise,
    AttrSizedOperandSegments]> {
  let summary = "a mixture-of-experts MLP: each token through its top-k "
                "experts";
  let description = [{
    Each row of `input` (`[seq, d]`) is routed by its row of
    `router_logits` (`[seq, experts]`): the softmax over the experts, the
    `top_k` largest (renormalized to sum to 1 with `normalize`, as Mixtral
    and Qwen2-MoE's norm_topk_prob do), and the sum of those experts'
    gated MLPs, `down · (act(gate · x) * (up · x))`, each times its weight.
    `experts` lists every expert's `gate` (`[f, d]`), `up` (`[f, d]`) and
    `down` (`[d, f]`) in turn. A `shared` expert (Qwen2-MoE's), its `gate`,
    `up` and `down` and a gate vector `[1, d]`, runs on every token, its
    output times `sigmoid(x · gate vector)` added to the routed experts'
    (without a gate vector, DeepSeek's, it is added as it is).

    The experts and their weights are chosen as `tfm.route` chooses them,
    with the same `scoring`, `selection_bias`, `groups`, `top_groups`,
    `routed_scale` and `expert_scales`.

    gpt-oss's experts: `expert_biases` lists every expert's gate (`[f]`),
    up (`[f]`) and down (`[d]`) biases in turn, added to its projections;
    with `swiglu_limit = L` the gate's pre-activation is capped at `L` and
    up's clamped to `[-L, L]` and offset by one,
    `down · (act(min(g, L)) * (clamp(u, -L, L) + 1))`.

    Each token's output depends on its own row only. `tfm-expand-experts`
    turns the op into one group of projections per expert over the tokens
    routed to it, so that a step reads only the experts its tokens chose.

    ```mlir
    %y = tfm.moe %x, %logits, [%g0, %u0, %d0, %g1, %u1, %d1] {activation = #tfm<activation_kind silu>, normalize, top_k = 1 : i64} : (tensor<?x8xf32>, tensor<?x2xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_FloatTensor:$router_logits,
                       Variadic<Tfm_WeightTensor>:$experts,
                       Variadic<Tfm_WeightTensor>:$shared,
                       Optional<Tfm_FloatTensor>:$selection_bias,
                       Optional<Tfm_FloatTensor>:$expert_scales,
                       Variadic<Tfm_WeightTensor>:$expert_biases,
                       I64Attr:$top_k, UnitAttr:$normalize,
                       Tfm_ActivationKindAttr:$activation,
                       DefaultValuedAttr<Tfm_RouterScoringAttr,
                                         "RouterScoring::softmax">:$scoring,
                       OptionalAttr<I64Attr>:$groups,
                       OptionalAttr<I64Attr>:$top_groups,
                       OptionalAttr<F32Attr>:$routed_scale,
                       OptionalAttr<F32Attr>:$swiglu_limit);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $router_logits `,` `[` $experts `]`
    (`shared` `[` $shared^ `]`)? (`selection_bias` $selection_bias^)?
    (`expert_scales` $expert_scales^)?
    (`biases` `[` $expert_biases^ `]`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_RouteOp : Tfm_Op<"route", [Pure, Tfm_PositionWise,
    AttrSizedOperandSegments]> {
  let summary = "each token's top-k experts and their weights";
  let description = [{
    For each row of `router_logits` (`[seq, experts]`): the scores (the
    softmax over the experts, or each logit's σ with `scoring = sigmoid`),
    then the `top_k` largest in decreasing order (the lower index first
    among equals), as `experts` (`[seq, top_k]`, i32) and their scores as
    `weights` (`[seq, top_k]`), renormalized to sum to 1 with `normalize`
    and then multiplied by `routed_scale` and by the chosen expert's entry
    of `expert_scales` (`[experts]`, Gemma 4's per_expert_scale).

    DeepSeek-V3's choice: `selection_bias` (`[experts]`) is added to the
    scores for choosing only (the weights stay unbiased); with `groups = G`
    and `top_groups = g`, the experts form `G` consecutive groups, each
    scored by the sum of its two largest biased scores (its one score if it
    has one expert), and only experts of the `g` best groups are chosen.

    ```mlir
    %w, %e = tfm.route %logits {normalize, top_k = 2 : i64} : tensor<?x8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    %w3, %e3 = tfm.route %logits selection_bias %b {groups = 4 : i64, normalize, routed_scale = 2.5 : f32, scoring = #tfm<router_scoring sigmoid>, top_groups = 2 : i64, top_k = 2 : i64} : tensor<?x8xf32>, tensor<8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    %w4, %e4 = tfm.route %logits expert_scales %s {normalize, top_k = 2 : i64} : tensor<?x8xf32> expert_scales tensor<8xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$router_logits,
                       Optional<Tfm_FloatTensor>:$selection_bias,
                       Optional<Tfm_FloatTensor>:$expert_scales,
                       I64Attr:$top_k, UnitAttr:$normalize,
                       DefaultValuedAttr<Tfm_RouterScoringAttr,
                                         "RouterScoring::softmax">:$scoring,
                       OptionalAttr<I64Attr>:$groups,
                       OptionalAttr<I64Attr>:$top_groups,
                       OptionalAttr<F32Attr>:$routed_scale);
  let results = (outs Tfm_FloatTensor:$weights, Tfm_IntTensor:$experts);
  let assemblyFormat = [{
    $router_logits (`selection_bias` $selection_bias^)?
    (`expert_scales` $expert_scales^)? attr-dict `:`
    type($router_logits) (`,` type($selection_bias)^)?
    (`expert_scales` type($expert_scales)^)? `->` type($weights)
    `,` type($experts)
  }];
  let hasVerifier = 1;
}

def Tfm_ExpertRowsOp : Tfm_Op<"expert_rows", [Pure]> {
  let summary = "the tokens routed to one expert, and their weights";
  let description = [{
    The rows `i` (ascending) for which `experts[i, j] == expert` for some
    `j`, as `rows` (`[n]`, i32), and `weights[i, j]` for each, as
    `scales` (`[n]`); `n` is known at run time only.

    ```mlir
    %rows, %scales = tfm.expert_rows %e, %w {expert = 3 : i64} : tensor<?x2xi32>, tensor<?x2xf32> -> tensor<?xi32>, tensor<?xf32>
    ```
  }];
  let arguments = (ins Tfm_IntTensor:$experts, Tfm_FloatTensor:$weights,
                       I64Attr:$expert);
  let results = (outs Tfm_IntTensor:$rows, Tfm_FloatTensor:$scales);
  let assemblyFormat = [{
    $experts `,` $weights attr-dict `:` type($experts) `,` type($weights)
    `->` type($rows) `,` type($scales)
  }];
  let hasVerifier = 1;
}

def Tfm_TakeRowsOp : Tfm_Op<"take_rows", [Pure]> {
  let summary = "rows of a tensor picked at run time";
  let description = [{
    `result[i, :] = input[rows[i], :]`, the row list a tensor
    (`tfm.expert_rows`' tokens); each must be a row of `input`.

    ```mlir
    %t = tfm.take_rows %x[%rows] : tensor<?x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_IntTensor:$rows);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `[` $rows `]` attr-dict `:` type($input) `,` type($rows) `->`
    type($result)
  }];
  let hasVerifier = 1;
}

def Tfm_ScatterAddRowsOp : Tfm_Op<"scatter_add_rows", [Pure,
    AllTypesMatch<["into", "result"]>]> {
  let summary = "rows scaled and added into a tensor at run-time rows";
  let description = [{
    `result = into` with `scales[i] * values[i, :]` added to row `rows[i]`
    for each `i` in turn: an expert's outputs back to its tokens.

    ```mlir
    %y1 = tfm.scatter_add_rows %values, %scales into %y0[%rows] : tensor<?x8xf32>, tensor<?xf32>, tensor<?x8xf32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$values, Tfm_FloatTensor:$scales,
                       Tfm_FloatTensor:$into, Tfm_IntTensor:$rows);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $values `,` $scales `into` $into `[` $rows `]` attr-dict `:`
    type($values) `,` type($scales) `,` type($into) `,` type($rows)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pipeline stages (produced by tfm-pipeline-stages)
//===----------------------------------------------------------------------===//
// A model split into P stages of layers runs as P MPI ranks that all run
// the same code: stage s, on rank (s + 1) mod P, holds layers
// [s·L/P, (s+1)·L/P) in the places of the first stage's. The last stage
// is rank 0's, which answers. These ops move a stage's rows between
// ranks. Every rank runs the same entry point on the same tokens, so the
// rows a rank receives have the shape of its own operand.

def Tfm_PipelineReceiveOp : Tfm_Op<"pipeline_receive", [Pure,
    Tfm_PositionWise, SameOperandsAndResultType]> {
  let summary = "a stage's input rows: the previous stage's output";
  let description = [{
    On the first stage the result is `input`, the rows the embedding made.
    On stage s > 0 it is the rows stage s - 1 sent with
    `tfm.pipeline_send`, of `input`'s shape.

    ```mlir
    %x = tfm.pipeline_receive %embedded : tensor<?x2048xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Tfm_PipelineSendOp : Tfm_Op<"pipeline_send", [Tfm_PositionWise,
    MemoryEffects<[MemWrite]>]> {
  let summary = "a stage's output rows, sent to the next stage";
  let description = [{
    Stage s < P - 1 sends `input` to stage s + 1, whose
    `tfm.pipeline_receive` takes it; the last stage sends nothing. It has
    no result: the rank goes on with its own rows (the last stage into the
    final norm and the head).

    ```mlir
    tfm.pipeline_send %x : tensor<?x2048xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Tfm_PipelineLastStageOp : Tfm_Op<"pipeline_last_stage", [Pure]> {
  let summary = "whether this rank runs the last pipeline stage";
  let description = [{
    True on rank 0, which runs the last stage. The final norm and the LM
    head run under it (`scf.if`): the other stages' logits would be
    dropped, so they skip them.

    ```mlir
    %last = tfm.pipeline_last_stage
    ```
  }];
  let results = (outs I1:$result);
  let assemblyFormat = "attr-dict";
}

def Tfm_PipelineStageLayersOp : Tfm_Op<"pipeline_stage_layers", [Pure]> {
  let summary = "how many of the code's layers this rank's stage runs";
  let description = [{
    Stages of unequal layers (tfm-pipeline-stages balances them by their
    weights): every rank runs the same code, which holds the longest
    stage's layers, and a layer past its own stage's count runs on no rows
    and passes the stage's rows through. `layers` lists each stage's count,
    first stage to last; the result is this rank's stage's.

    ```mlir
    %layers = tfm.pipeline_stage_layers [3, 2]
    ```
  }];
  let arguments = (ins DenseI64ArrayAttr:$layers);
  let results = (outs Index:$result);
  let assemblyFormat = "$layers attr-dict";
}

def Tfm_PipelineCollectOp : Tfm_Op<"pipeline_collect", [Pure,
    Tfm_PositionWise, SameOperandsAndResultType]> {
  let summary = "the logits rank 0 returns";
  let description = [{
    The result is `input`. It marks what the entry point returns: rank 0,
    which runs the last stage, samples and answers from it, and the other
    ranks' results (empty: the head runs on the last stage only) are
    dropped. What only it reads runs on the last stage
    (tfm-pipeline-last-stage), and the weight formats keep an LM head's
    storage through it.

    ```mlir
    %logits = tfm.pipeline_collect %own : tensor<?x32000xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// KV cache (produced by tfm-kv-cache)
//===----------------------------------------------------------------------===//

def Tfm_KVCacheAppendOp : Tfm_Op<"kv_cache_append", [Pure,
    AllTypesMatch<["cache", "result"]>]> {
  let summary = "write one layer's new keys and values into the KV cache";
  let description = [{
    The cache holds every layer's keys and values, `[layers, 2, capacity,
    kv_heads, head_dim]` (index 0 of the second dimension is K, 1 is V).
    This op returns the cache with `key` and `value` (`[s, kv_heads,
    head_dim]`) written to layer `layer` at positions `[position, position
    + s)`. The runtime guarantees `position + s <= capacity`. After
    bufferization the cache is updated in place.

    A latent cache (multi-head latent attention, whose values are the
    leading columns of its keys) has one plane a layer, `[layers, 1,
    capacity, 1, width]`: it holds the keys alone, and the op then has no
    `value`.

    An int8 cache (`tfm-kv-cache`'s `kv-dtype=int8`) holds rows quantized
    by `tfm.quantize_rows`: its last dimension is `head_dim + 4` bytes, and
    so are the keys and values appended and read.

    ```mlir
    %c1 = tfm.kv_cache_append %c0[2], %k, %v at %pos : tensor<4x2x512x4x16xf32>, tensor<?x4x16xf32>, tensor<?x4x16xf32>
    %l1 = tfm.kv_cache_append %l0[2], %row at %pos : tensor<4x1x512x1x576xf32>, tensor<?x1x576xf32>
    ```
  }];
  let arguments = (ins Tfm_CacheTensor:$cache, Tfm_CacheTensor:$key,
                       Optional<Tfm_CacheTensor>:$value, Index:$position,
                       I64Attr:$layer);
  let results = (outs Tfm_CacheTensor:$result);
  let assemblyFormat = [{
    $cache `[` $layer `]` `,` $key (`,` $value^)? `at` $position attr-dict `:`
    type($cache) `,` type($key) (`,` type($value)^)?
  }];
  let hasVerifier = 1;
}

def Tfm_KVCacheReadOp : Tfm_Op<"kv_cache_read", [Pure]> {
  let summary = "the cached prefix of one layer's keys and values";
  let description = [{
    Returns positions `[0, length)` of layer `layer`'s keys and values from a
    cache laid out as for `tfm.kv_cache_append`; of a latent cache (one
    plane a layer), the keys alone.

    ```mlir
    %k, %v = tfm.kv_cache_read %c1[2] length %len : tensor<4x2x512x4x16xf32> -> tensor<?x4x16xf32>, tensor<?x4x16xf32>
    %rows = tfm.kv_cache_read %l1[2] length %len : tensor<4x1x512x1x576xf32> -> tensor<?x1x576xf32>
    ```
  }];
  let arguments = (ins Tfm_CacheTensor:$cache, Index:$length, I64Attr:$layer);
  let results = (outs Tfm_CacheTensor:$key, Optional<Tfm_CacheTensor>:$value);
  let assemblyFormat = [{
    $cache `[` $layer `]` `length` $length attr-dict `:` type($cache) `->`
    type($key) (`,` type($value)^)?
  }];
  let hasVerifier = 1;
}

def Tfm_KVRingAppendOp : Tfm_Op<"kv_ring_append", [Pure,
    AllTypesMatch<["cache", "result"]>]> {
  let summary = "write a windowed layer's new keys and values into its ring";
  let description = [{
    A layer that attends to the last `window` positions only (GPT-Neo's
    local layers beside global ones) keeps just those: rows `[offset,
    offset + window)` of plane `plane` of the cache (laid out as for
    `tfm.kv_cache_append`) are a ring, position `p` at row `offset + p mod
    window`. This op writes `key` and `value` (`[s, kv_heads, head_dim]`),
    positions `[position, position + s)`; of more than `window` rows only
    the last `window` are kept.

    ```mlir
    %c1 = tfm.kv_ring_append %c0[2] rows 4 ring 4, %k, %v at %pos : tensor<3x2x32x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>
    ```
  }];
  let arguments = (ins Tfm_CacheTensor:$cache, Tfm_CacheTensor:$key,
                       Tfm_CacheTensor:$value, Index:$position,
                       I64Attr:$plane, I64Attr:$offset, I64Attr:$window);
  let results = (outs Tfm_CacheTensor:$result);
  let assemblyFormat = [{
    $cache `[` $plane `]` `rows` $offset `ring` $window `,` $key `,` $value
    `at` $position attr-dict `:` type($cache) `,` type($key) `,` type($value)
  }];
  let hasVerifier = 1;
}

def Tfm_KVRingReadOp : Tfm_Op<"kv_ring_read", [Pure]> {
  let summary = "what a windowed layer's new positions see: the ring's "
                "earlier positions, then their own";
  let description = [{
    Returns positions `[first, end)` of the ring that `tfm.kv_ring_append`
    writes (`end - first < window`, the last positions appended), oldest
    first, followed by `new_key` and `new_value` (the positions from `end`
    on). They are read from the cache before the new rows overwrite the
    ring's oldest.

    ```mlir
    %k, %v = tfm.kv_ring_read %c[2] rows 4 ring 4 positions %first to %end then %nk, %nv : tensor<3x2x32x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32> -> tensor<?x4x8xf32>, tensor<?x4x8xf32>
    ```
  }];
  let arguments = (ins Tfm_CacheTensor:$cache, Index:$first, Index:$end,
                       Tfm_CacheTensor:$new_key, Tfm_CacheTensor:$new_value,
                       I64Attr:$plane, I64Attr:$offset, I64Attr:$window);
  let results = (outs Tfm_CacheTensor:$key, Tfm_CacheTensor:$value);
  let assemblyFormat = [{
    $cache `[` $plane `]` `rows` $offset `ring` $window `positions` $first
    `to` $end `then` $new_key `,` $new_value attr-dict `:` type($cache) `,`
    type($new_key) `,` type($new_value) `->` type($key) `,` type($value)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Row storage of narrow KV caches (int8, bf16, f16)
//===----------------------------------------------------------------------===//

def Tfm_QuantizeRowsOp : Tfm_Op<"quantize_rows", [Pure]> {
  let summary = "f32 rows as a narrow KV cache stores them: int8 codes "
                "with a scale per row, or bf16/f16 values";
  let description = [{
    Stores every row of the last dimension (`n` floats) in the result's
    element type, what a narrow KV cache holds (`tfm-kv-cache`'s
    `kv-dtype`):

    - `i8`: quantized symmetrically, `scale = max |x| / 127`, `code =
      round(x / scale)` in `[-127, 127]` (a row of zeros: scale 0, codes 0).
      A result row is `n + 4` bytes: the `n` codes, then the scale's f32
      bytes (little-endian), so a row is self-contained and a cache of such
      rows keeps its positions' layout: one scale per position and KV head.
    - `bf16`, `f16`: each value rounded to the nearest (ties to even), the
      same shape.

    ```mlir
    %q = tfm.quantize_rows %k : tensor<?x4x64xf32> -> tensor<?x4x68xi8>
    %h = tfm.quantize_rows %k : tensor<?x4x64xf32> -> tensor<?x4x64xbf16>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input);
  let results = (outs Tfm_StoredRowsTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Bytes after an int8 row's codes: its f32 scale.
    static constexpr int64_t kScaleBytes = 4;
  }];
}

def Tfm_DequantizeRowsOp : Tfm_Op<"dequantize_rows", [Pure]> {
  let summary = "the f32 values of rows stored by tfm.quantize_rows";
  let description = [{
    `x = code · scale` for every int8 row of `n + 4` bytes (`n` codes, then
    the row's f32 scale); bf16 and f16 values widened exactly. Codegen does
    not materialize it where the attention kernel reads stored rows: a
    `tfm.attention` whose keys and values are dequantized rows calls the
    kernel's variant for their storage (`_rows_i8`, `_rows_bf16`,
    `_rows_f16`), which widens them a tile at a time.

    ```mlir
    %k = tfm.dequantize_rows %q : tensor<?x4x68xi8> -> tensor<?x4x64xf32>
    ```
  }];
  let arguments = (ins Tfm_StoredRowsTensor:$input);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Images: a diffusion UNet's and autoencoder's feature maps, [H, W, C]
//===----------------------------------------------------------------------===//

def Tfm_Conv2dOp : Tfm_Op<"conv2d", [Pure]> {
  let summary = "a 2-D convolution of a [H, W, C] feature map or a batch of them";
  let description = [{
    `result[y, x, o] = bias[o] + sum over c, ky, kx of
    weight[o, (c * kernel + ky) * kernel + kx] *
    input[y * stride + ky - top, x * stride + kx - left, c]`, zero outside
    the input: PyTorch's `Conv2d` on one image whose feature map is stored
    position-major (`[H, W, C]`, one row of channels per pixel). `weight` is
    the checkpoint's `[out, C, kernel, kernel]` read as `[out, C * kernel *
    kernel]`; `padding` is `[top, left, bottom, right]` (a VAE encoder's
    downsampling pads only the bottom and right). The result has
    `(H + top + bottom - kernel) / stride + 1` rows of as many columns.

    A batch of maps `[N, H, W, C]` (a UNet's two halves of classifier-free
    guidance) gives `[N, Ho, Wo, out]`, each image convolved alone.

    `tfm-convolutions-as-gemm` rewrites it as `tfm.image_windows` and a
    `tfm.linear` (a 1x1 convolution as the linear alone), so that the weight
    formats, panels and GEMM kernels of every projection apply: a batch's
    windows are one GEMM's rows, so each weight is read once for all.

    ```mlir
    %y = tfm.conv2d %x, %w bias %b {kernel = 3, padding = array<i64: 1, 1, 1, 1>, stride = 1} : (tensor<64x64x320xf32>, tensor<320x2880xf32>, tensor<320xf32>) -> tensor<64x64x320xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_FloatTensor:$weight,
                       Optional<Tfm_FloatTensor>:$bias, I64Attr:$kernel,
                       I64Attr:$stride, DenseI64ArrayAttr:$padding);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_ImageWindowsOp : Tfm_Op<"image_windows", [Pure]> {
  let summary = "a 2-D convolution's inputs, one window per row (im2col)";
  let description = [{
    The `kernel` x `kernel` windows of the `[H, W, C]` feature map `input`
    that a `tfm.conv2d` with these `stride` and `padding` (`[top, left,
    bottom, right]`) reads, one per output pixel in row-major order, each
    flattened channel-major as the convolution's weight is:
    `result[y * Wo + x, (c * kernel + ky) * kernel + kx] =
    input[y * stride + ky - top, x * stride + kx - left, c]`, zero in the
    padding. The convolution is then a `tfm.linear`. A batch `[N, H, W, C]`
    gives the windows of each image in turn, `N·Ho·Wo` rows.

    ```mlir
    %w = tfm.image_windows %x {kernel = 3, padding = array<i64: 1, 1, 1, 1>, stride = 2} : tensor<64x64x320xf32> -> tensor<1024x2880xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, I64Attr:$kernel,
                       I64Attr:$stride, DenseI64ArrayAttr:$padding);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tfm_GroupNormOp : Tfm_Op<"group_norm", [Pure]> {
  let summary = "GroupNorm over a feature map's positions, optionally followed by SiLU";
  let description = [{
    PyTorch's `GroupNorm(groups, C)` on one image stored position-major
    (`[H, W, C]`, or `[positions, C]`; a batch `[N, H, W, C]` normalizes
    each image by its own statistics): the channels fall into `groups`
    consecutive groups, and each group is normalized by the mean and
    variance of all its values over every position, then scaled by `gamma`
    and shifted by `beta` (`[C]`). With `silu`, `x·σ(x)` follows, as a
    UNet's and a VAE's blocks apply it after almost every norm.

    ```mlir
    %n = tfm.group_norm %x, %g, %b {epsilon = 1.0e-5 : f32, groups = 32 : i64, silu} : (tensor<64x64x320xf32>, tensor<320xf32>, tensor<320xf32>) -> tensor<64x64x320xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input, Tfm_FloatTensor:$gamma,
                       Tfm_FloatTensor:$beta, I64Attr:$groups,
                       F32Attr:$epsilon, UnitAttr:$silu);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfm_UpsampleNearestOp : Tfm_Op<"upsample_nearest", [Pure]> {
  let summary = "a feature map enlarged by an integer factor, each pixel repeated";
  let description = [{
    `result[y, x, c] = input[y / f, x / f, c]` for the `[H, W, C]` input and
    the `[f·H, f·W, C]` result (each image of a batch `[N, H, W, C]` alike): `F.interpolate(scale_factor=f,
    mode="nearest")`, a UNet's and a VAE decoder's upsampling before their
    convolution.

    ```mlir
    %u = tfm.upsample_nearest %x : tensor<8x8x1280xf32> -> tensor<16x16x1280xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$input);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tfm_TimestepEmbeddingOp : Tfm_Op<"timestep_embedding", [Pure]> {
  let summary = "a diffusion timestep's sinusoidal embedding";
  let description = [{
    For each (fractional) timestep `t` of `timesteps` a `[dim]` vector: with
    `half = dim / 2` frequencies `f_i = exp(-ln(max_period) * i / (half -
    downscale_freq_shift))`, the `half` values `sin(scale * t * f_i)` then
    the `half` values `cos(scale * t * f_i)`, or cos first with
    `flip_sin_to_cos`: diffusers' `get_timestep_embedding`, computed in f32
    as it is.

    ```mlir
    %e = tfm.timestep_embedding %t {downscale_freq_shift = 0.0 : f32, flip_sin_to_cos, max_period = 1.0e4 : f32, scale = 1.0 : f32} : tensor<1xf32> -> tensor<1x320xf32>
    ```
  }];
  let arguments = (ins Tfm_FloatTensor:$timesteps, F32Attr:$downscale_freq_shift,
                       F32Attr:$scale, F32Attr:$max_period,
                       UnitAttr:$flip_sin_to_cos);
  let results = (outs Tfm_FloatTensor:$result);
  let assemblyFormat = "$timesteps attr-dict `:` type($timesteps) `->` type($result)";
  let hasVerifier = 1;
}

#endif // TFM_OPS_TD
