//===- TfmDialect.h - the tfm dialect ---------------------------*- C++ -*-===//
//
// Declares the tfm dialect and its enum attributes. Include "ir/TfmOps.h" for
// the ops.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_IR_TFMDIALECT_H
#define TFM_IR_TFMDIALECT_H

#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "ir/TfmDialect.h.inc"
#include "ir/WeightFormat.h"

namespace mlir::tfm {

/// On the module: the model it implements (a ModelAttr).
inline constexpr llvm::StringLiteral kModelAttrName = "tfm.model";
/// On an entry point's argument: what it carries (an InputRoleAttr).
inline constexpr llvm::StringLiteral kInputArgAttrName = "tfm.input";
/// On an entry point's argument: state kept between calls and updated in
/// place (a CacheAttr; set by tfm-kv-cache).
inline constexpr llvm::StringLiteral kCacheArgAttrName = "tfm.cache";
/// On an entry point's result: what it carries (an OutputRoleAttr).
inline constexpr llvm::StringLiteral kOutputResultAttrName = "tfm.output";
/// On a tfm.weight_decl: the storage its checkpoint keeps the weight in
/// ("bf16", "f16", "int8", "int4"), which tfm-quantize-weights keeps under
/// dtype=checkpoint; absent: f32.
inline constexpr llvm::StringLiteral kCheckpointDtypeAttrName =
    "tfm.checkpoint_dtype";
/// Whether a checkpoint dtype (or block format) is kept only as a
/// checkpoint stores it, its blocks copied (no encoder from f32): the
/// K-quants and "mxfp4" (OCP's blocks of 32 with an E8M0 exponent).
inline bool isCheckpointOnlyDtype(llvm::StringRef dtype) {
  std::optional<WeightFormat> format = formatOfDtype(dtype);
  return format && isCopiedFromCheckpoint(*format);
}
/// Elements of a checkpoint-only dtype's blocks along a row, which a split
/// of its columns must keep whole: 256 (K-quants) or 32 (mxfp4).
inline int64_t checkpointBlockColumns(llvm::StringRef dtype) {
  return checkpointBlockElements(*formatOfDtype(dtype));
}
/// On the module of a CLIP model: the scale of its text-image similarities,
/// exp(logit_scale) (a positive FloatAttr).
inline constexpr llvm::StringLiteral kLogitScaleAttrName = "tfm.logit_scale";
/// On the module of a SigLIP model: the bias of its text-image scores
/// (a FloatAttr), which are each pair's sigmoid(scale · cosine + bias)
/// rather than CLIP's softmax over the texts.
inline constexpr llvm::StringLiteral kLogitBiasAttrName = "tfm.logit_bias";
/// On the module of a model whose texts are padded to its context with
/// this token id (an IntegerAttr) wherever the runtime tokenizes them:
/// SigLIP's processor is called with padding="max_length", and its text
/// tower pools its last position.
inline constexpr llvm::StringLiteral kTextPadTokenAttrName =
    "tfm.text_pad_token";
/// On the module of a vision-language model (LLaVA): the placeholder token
/// id (a non-negative IntegerAttr) whose positions in a prompt take the
/// rows of @encode_image instead of their embeddings (tfm-kv-cache then
/// derives @prefill_embeddings).
inline constexpr llvm::StringLiteral kImageTokenAttrName = "tfm.image_token";
/// On the module of a vision-language model whose image rows attend to
/// each other both ways inside the causal text (Gemma 3; a UnitAttr): in
/// @prefill_embeddings every new row sees every other new row (the
/// runtime runs an image's rows in one call), windows limiting only the
/// keys behind.
inline constexpr llvm::StringLiteral kImageRowsBidirectionalAttrName =
    "tfm.image_rows_bidirectional";
/// On the module of a vision-language model whose processor writes tokens
/// of its own around an image's rows (SmolVLM, Idefics3): [the token around
/// each tile, the token before the whole image] (`<fake_token_around_image>`,
/// `<global-img>`; a DenseI64ArrayAttr of two ids), by which the runtime
/// lays out an image's prompt ids (tfm_image_prompt_ids).
inline constexpr llvm::StringLiteral kImageTileTokensAttrName =
    "tfm.image_tile_tokens";
/// On the scf.if that runs one expert's projections (tfm-expand-experts):
/// the share of tokens routed to it on average, top_k / experts (an
/// f64 FloatAttr), by which a decode step's weight reads count its weights.
inline constexpr llvm::StringLiteral kExpertShareAttrName = "tfm.expert_share";

/// On the module of a model with run-time LoRA adapter slots
/// (tfm-lora-slots): {slots, rank, targets = [weight names], features =
/// [in, out for each target]}, the table tfm.lora ops index by `target`.
inline constexpr llvm::StringLiteral kLoraAttrName = "tfm.lora";
} // namespace mlir::tfm
#include "ir/TfmEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/TfmAttrs.h.inc"

#endif // TFM_IR_TFMDIALECT_H
