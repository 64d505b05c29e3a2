//===- RankWeights.h - one rank's weights of a split model ------*- C++ -*-===//
//
// A model compiled with --ranks N gets one weight blob per rank
// (ModelPackager.cpp writes them as sections of one file): a weight split
// over the ranks is read as the rank's part of the checkpoint's tensor, a
// summed bias as itself on rank 0 and zeros elsewhere, as the module's
// tfm.rank_weights records (ir/TfmSharding.h).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_PACKAGING_RANKWEIGHTS_H
#define TFM_CODEGEN_PACKAGING_RANKWEIGHTS_H

#include "codegen/packaging/ModelPackager.h"

#include "mlir/IR/BuiltinOps.h"

namespace mlir::tfm {

/// How a split model's weights divide among its ranks.
class RankWeights {
public:
  explicit RankWeights(ModuleOp module);

  /// What MPI rank `rank` stores of weight `name`, given the checkpoint's
  /// whole tensor `whole` (its part as tensor rank `rank` mod the weight's
  /// ranks: pipeline stages are groups of those); `whole` itself where the
  /// weight is replicated. An error names a split tfmc cannot take of its
  /// storage.
  llvm::Expected<WeightRows> part(llvm::StringRef name, WeightRows whole,
                                  int64_t rank) const;

  /// Whether every rank holds weight `name` alike.
  bool isReplicated(llvm::StringRef name) const;

  /// The checkpoint tensor rank `rank` holds in weight `name`'s place: the
  /// rank's own expert in a local expert's place (expert parallelism), its
  /// stage's layer in a first-stage layer's place (pipeline stages), else
  /// `name`.
  llvm::StringRef source(llvm::StringRef name, int64_t rank) const;

private:
  DictionaryAttr parts;
  DictionaryAttr weightSources;
};

} // namespace mlir::tfm

#endif // TFM_CODEGEN_PACKAGING_RANKWEIGHTS_H
