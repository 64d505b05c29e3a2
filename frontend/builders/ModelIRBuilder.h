//===- ModelIRBuilder.h - what every model builder starts from -*- C++ -*-===//
//
// The part the decoder, encoder, vision and encoder-decoder builders share:
// an OpBuilder, the checkpoint reads (WeightDeclarations), locations that
// name what an op is, row-typed results and the biased projections.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_BUILDERS_MODELIRBUILDER_H
#define TFM_FRONTEND_BUILDERS_MODELIRBUILDER_H

#include "frontend/builders/WeightDeclarations.h"

namespace mlir::tfm {

class ModelIRBuilder {
public:
  /// The checkpoint's tensors the module reads; finish() checks them.
  WeightDeclarations declarations;

protected:
  /// `family` names the config in messages ("the bert config implies").
  ModelIRBuilder(MLIRContext &context, const WeightStore &weights,
                 llvm::StringRef checkpoint, llvm::StringRef family)
      : declarations(weights, checkpoint, family), b(&context) {}

  /// A location naming what an op is ("layer 3 attention").
  Location named(const llvm::Twine &what) {
    return NameLoc::get(b.getStringAttr(what));
  }
  /// tensor<rows x columns x f32>.
  RankedTensorType matrix(int64_t rows, int64_t columns) {
    return RankedTensorType::get({rows, columns}, b.getF32Type());
  }
  /// tensor<?x...xf32>: one row per position, `trailing` after it.
  RankedTensorType rows(ArrayRef<int64_t> trailing) {
    SmallVector<int64_t> shape = {ShapedType::kDynamic};
    shape.append(trailing.begin(), trailing.end());
    return RankedTensorType::get(shape, b.getF32Type());
  }
  /// A tfm.weight of `name`, checked to exist with `shape`.
  Value weight(const std::string &name, std::vector<int64_t> shape) {
    return declarations.read(b, name, shape);
  }
  /// x·Wᵀ + b for the [out, in] weight `name` and its bias, as
  /// [x's rows, resultShape...], with an optional activation epilogue.
  Value linear(Value x, const std::string &name, ArrayRef<int64_t> resultShape,
               std::optional<ActivationKind> activation = std::nullopt) {
    return declarations.biasedLinear(b, x, name, resultShape, activation);
  }

  /// Starts entry point `@name(input) -> result`, its input and result
  /// marked with their roles, and builds on in its body: its argument.
  Value beginEntryPoint(llvm::StringRef name, Type input, InputRole role,
                        Type result, OutputRole output);

  /// What a family adds to scaled dot-product attention; the defaults are
  /// plain softmax(q·kᵀ/√head_dim)·v with q's type.
  struct AttentionOptions {
    /// The scores' scale; null: 1/√(q's head dim).
    FloatAttr scale;
    /// The result's type when v's head dim differs from q's (MLA).
    Type resultType;
    /// T5's bucketed relative position table and its max distance.
    Value relativeBias;
    IntegerAttr maxDistance;
    /// gpt-oss's per-head sinks, a sliding window, Gemma's logit softcap.
    Value sinks;
    IntegerAttr window;
    FloatAttr softcap;
  };
  /// tfm.attention over q, k, v ([rows, heads, head dim]): the one layer
  /// helper every builder's attention block calls (as llama.cpp's
  /// build_attn), causal or bidirectional.
  Value attend(Location loc, Value q, Value k, Value v, bool causal,
               const AttentionOptions &options);
  Value attend(Location loc, Value q, Value k, Value v, bool causal) {
    return attend(loc, q, k, v, causal, AttentionOptions());
  }

  OpBuilder b;
};

} // namespace mlir::tfm

#endif // TFM_FRONTEND_BUILDERS_MODELIRBUILDER_H
