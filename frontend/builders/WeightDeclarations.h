//===- WeightDeclarations.h - a builder's reads of checkpoint tensors -*- C++ -*-===//
//
// What every model builder does with the checkpoint: each tensor it reads
// is declared once as a tfm.weight_decl (before the functions, in order of
// first use) and read with tfm.weight; a tensor that is missing or shaped
// otherwise than the config implies, and one that nothing read, is an
// error naming it. The encoders' biased projections and LayerNorms read
// their weight and bias pairs through here too.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_BUILDERS_WEIGHTDECLARATIONS_H
#define TFM_FRONTEND_BUILDERS_WEIGHTDECLARATIONS_H

#include "frontend/formats/WeightStore.h"
#include "ir/TfmOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/ADT/StringMap.h"

#include <set>

namespace mlir::tfm {

/// The tfm-quantize-weights dtype that keeps a weight stored as `dtype`
/// (kCheckpointDtypeAttrName; the table's DTYPE, int8 for the formats no
/// kernel reads: checkpointRequantizes); none for f32.
std::optional<StringRef> checkpointDtype(WeightFormat dtype);

/// Says which tensors of `weights` keeping the checkpoint's dtypes
/// requantizes ("14 tensors to int8 (12 Q5_K, 2 Q5_0)"); empty when
/// none.
std::string describeRequantized(const WeightStore &weights);

class WeightDeclarations {
public:
  /// `family` names the config in messages ("the bert config implies").
  WeightDeclarations(const WeightStore &weights, llvm::StringRef checkpoint,
                     llvm::StringRef family)
      : weights(weights), checkpoint(checkpoint.str()), family(family.str()) {}

  /// A tfm.weight of `name` at `b`'s insertion point (inside a function of
  /// a module), declared on first use; checked to exist with `shape`.
  Value read(OpBuilder &b, const std::string &name,
             const std::vector<int64_t> &shape);

  /// As read, for a tensor the checkpoint stores as `stored` and the model
  /// uses as `shape`, the same elements in the same order (a convolution
  /// weight [out, C, p, p] as [out, C·p·p], a [1, n, d] table as [n, d]).
  Value readAs(OpBuilder &b, const std::string &name,
               const std::vector<int64_t> &stored,
               const std::vector<int64_t> &shape);

  /// The declaration of `name` alone, checked as `read` checks it: a
  /// weight a later pass may read (the attribute that names it is the
  /// caller's).
  WeightDeclOp declare(OpBuilder &b, const std::string &name,
                       const std::vector<int64_t> &shape);

  /// x·Wᵀ + b for the [out, in] weight `name` and its bias (biasName), as
  /// [x's rows, resultShape...], with an optional activation epilogue: the
  /// projections of the encoders with a bias everywhere (BERT, ViT).
  Value biasedLinear(OpBuilder &b, Value x, const std::string &name,
                     llvm::ArrayRef<int64_t> resultShape,
                     std::optional<ActivationKind> activation = std::nullopt);

  /// The same for a projection stored without a bias (T5's, Whisper's
  /// k_proj).
  Value unbiasedLinear(OpBuilder &b, Value x, const std::string &name,
                       llvm::ArrayRef<int64_t> resultShape,
                       std::optional<ActivationKind> activation = std::nullopt);

  /// LayerNorm of x with the [d] scale `name` and its bias.
  Value biasedLayerNorm(OpBuilder &b, Value x, const std::string &name,
                        int64_t d, double epsilon);

  /// Records a problem found while building.
  void fail(std::string message) { errors.push_back(std::move(message)); }

  /// `module` once built: the errors, including the checkpoint's tensors
  /// that no read used unless `isIgnored` says they may stay unused, and
  /// then the verifier's.
  llvm::Expected<OwningOpRef<ModuleOp>>
  finish(OwningOpRef<ModuleOp> module,
         llvm::function_ref<bool(llvm::StringRef)> isIgnored);

private:
  WeightDeclOp declareAs(OpBuilder &b, const std::string &name,
                         const std::vector<int64_t> &stored,
                         const std::vector<int64_t> &shape);
  Value linear(OpBuilder &b, Value x, const std::string &name,
               llvm::ArrayRef<int64_t> resultShape,
               std::optional<ActivationKind> activation, bool withBias);

  const WeightStore &weights;
  std::string checkpoint, family;
  std::vector<std::string> errors;
  std::set<std::string> used;
  llvm::StringMap<WeightDeclOp> declared;
  /// The last declaration made: the next goes after it (finding the place
  /// by counting from the module's start cost O(weights) a weight, minutes
  /// for a file claiming thousands of layers).
  WeightDeclOp lastDeclared;
};

} // namespace mlir::tfm

#endif // TFM_FRONTEND_BUILDERS_WEIGHTDECLARATIONS_H
