//===- Swin.h - the Swin Transformer ----------------------------*- C++ -*-===//
//
// transformers' SwinModel and SwinForImageClassification from Hugging Face
// directories (model_type swin): shifted-window attention with relative
// position biases (tfm.window_attention over tokens rearranged by
// tfm.gather_rows), hierarchical stages joined by patch merging.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_SWIN_H
#define TFM_FRONTEND_FAMILIES_SWIN_H

#include "frontend/families/LoadedModel.h"
#include "frontend/formats/ConfigReader.h"

namespace mlir::tfm {

/// Builds the module of the Swin model `config` describes into `model`,
/// whose weights are loaded; `labels` are id2label's names.
llvm::Error loadSwin(MLIRContext &context, ConfigReader &config,
                     llvm::ArrayRef<std::string> architectures,
                     std::vector<std::string> labels,
                     llvm::StringRef checkpoint, llvm::StringRef configPath,
                     LoadedModel &model);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_SWIN_H
