//===- TfmBase.td - tfm dialect definition and enums -------*- tablegen -*-===//
//
// The dialect itself and the enumerations its ops carry. Ops live in
// TfmOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_BASE_TD
#define TFM_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Tfm_Dialect : Dialect {
  let name = "tfm";
  let cppNamespace = "::mlir::tfm";
  let summary = "Transformer building blocks: attention, norms, MLPs, positions";
  let description = [{
    The `tfm` dialect models a transformer at the level its authors think in:
    one op per concept (embedding, linear projection, LayerNorm/RMSNorm,
    rotary or sinusoidal positions, attention, activations, residual adds).
    Activations are ranked tensors `[seq, d]` or `[seq, heads, head_dim]`;
    weights are declared once per module (`tfm.weight_decl`), referenced by
    symbol (`tfm.weight`), and never inlined into the IR. The module says
    what model it is (`tfm.model`) and what each entry point's arguments and
    results are (`tfm.input`, `tfm.cache`, `tfm.output`).
  }];
  let useDefaultAttributePrinterParser = 1;
  // tfm.model on the module, tfm.input/tfm.cache on entry point arguments,
  // tfm.output on results (TfmAttrs.td), and codegen's records.
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
}

def Tfm_ActivationKind : I32EnumAttr<"ActivationKind",
    "elementwise activation function", [
      I32EnumAttrCase<"gelu", 0>,      // exact, erf-based
      I32EnumAttrCase<"gelu_tanh", 1>, // GPT-2's tanh approximation
      I32EnumAttrCase<"relu", 2>,
      I32EnumAttrCase<"silu", 3>,
      I32EnumAttrCase<"tanh", 4>,      // classification heads' pooler
      I32EnumAttrCase<"quick_gelu", 5>, // CLIP's x·σ(1.702·x)
      I32EnumAttrCase<"sigmoid", 6>     // σ(x): Qwen2-MoE's shared expert gate
    ]> {
  let cppNamespace = "::mlir::tfm";
  let genSpecializedAttr = 0;
}
def Tfm_ActivationKindAttr : EnumAttr<Tfm_Dialect, Tfm_ActivationKind,
                                      "activation_kind">;

def Tfm_RouterScoring : I32EnumAttr<"RouterScoring",
    "how a mixture-of-experts router turns its logits into expert scores", [
      // softmax over the experts (Mixtral, Qwen-MoE, OLMoE, DeepSeek-V2)
      I32EnumAttrCase<"softmax", 0>,
      // σ(logit) per expert, independently (DeepSeek-V3, Kimi-K2, GLM-4.5)
      I32EnumAttrCase<"sigmoid", 1>
    ]> {
  let cppNamespace = "::mlir::tfm";
  let genSpecializedAttr = 0;
}
def Tfm_RouterScoringAttr : EnumAttr<Tfm_Dialect, Tfm_RouterScoring,
                                     "router_scoring">;

def Tfm_PoolingKind : I32EnumAttr<"PoolingKind",
    "how a sequence's hidden states become one vector", [
      I32EnumAttrCase<"mean", 0>, // the average over the tokens
      I32EnumAttrCase<"cls", 1>,  // the first token's ([CLS])
      I32EnumAttrCase<"max", 2>   // the largest value of each feature
    ]> {
  let cppNamespace = "::mlir::tfm";
  let genSpecializedAttr = 0;
}
def Tfm_PoolingKindAttr : EnumAttr<Tfm_Dialect, Tfm_PoolingKind,
                                   "pooling_kind">;

def Tfm_RopeStyle : I32EnumAttr<"RopeStyle",
    "which dimensions of a head rotary embedding rotates together", [
      // llama2.c / Meta checkpoints: pairs (2i, 2i+1).
      I32EnumAttrCase<"interleaved", 0>,
      // Hugging Face / GPT-NeoX: pairs (i, i + head_dim/2).
      I32EnumAttrCase<"rotate_half", 1>
    ]> {
  let cppNamespace = "::mlir::tfm";
  let genSpecializedAttr = 0;
}
def Tfm_RopeStyleAttr : EnumAttr<Tfm_Dialect, Tfm_RopeStyle, "rope_style">;

def Tfm_SinusoidLayout : I32EnumAttr<"SinusoidLayout",
    "where sin and cos components sit in a sinusoidal position vector", [
      // The original Transformer: sin at even, cos at odd columns.
      I32EnumAttrCase<"interleaved", 0>,
      // Whisper, tensor2tensor: all sin columns, then all cos columns.
      I32EnumAttrCase<"concat", 1>
    ]> {
  let cppNamespace = "::mlir::tfm";
  let genSpecializedAttr = 0;
}
def Tfm_SinusoidLayoutAttr : EnumAttr<Tfm_Dialect, Tfm_SinusoidLayout,
                                      "sinusoid_layout">;

// Row i (position i) of every result depends on row i of the operands that
// vary with the position and on the whole of operands that do not
// (weights, tables): running the op on new positions only is exact. What
// tfm-kv-cache relies on to run a cached model on the new tokens alone;
// an op without it (attention, anything that mixes positions) stops the
// pass unless the pass knows it. ir/TfmTraits.h.
def Tfm_PositionWise : NativeOpTrait<"PositionWise"> {
  let cppNamespace = "::mlir::OpTrait::tfm";
}

class Tfm_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tfm_Dialect, mnemonic, traits>;

def Tfm_FloatTensor : RankedTensorOf<[AnyFloat]>;
def Tfm_IntTensor : RankedTensorOf<[AnySignlessInteger]>;
// What a weight may be stored as: floats (f32, and bf16/f16 read through
// tfm.dequantize), or integer codes with a #tfm.block_quant encoding.
def Tfm_WeightTensor : RankedTensorOf<[AnyFloat, I8, I<6>, I<5>, I<4>]>;
// What a KV cache and its entries may hold: floats, or rows quantized to
// int8 (tfm.quantize_rows: each row's codes, then its f32 scale's bytes).
def Tfm_CacheTensor : RankedTensorOf<[AnyFloat, I8]>;
// Rows as a narrow KV cache stores them (tfm.quantize_rows): int8 codes with
// a scale per row, or bf16/f16 values.
def Tfm_StoredRowsTensor : RankedTensorOf<[I8, BF16, F16]>;

#endif // TFM_BASE_TD
