//===- VisionTransformer.h - ViT and DeiT image models ----------*- C++ -*-===//
//
// Vision transformers from Hugging Face directories (model_type vit, deit):
// the image [channels, height, width] in, patch embeddings as a GEMM over
// tfm.patches, a class (and DeiT's distillation) token, learned positions,
// pre-norm blocks; @encode returns the last hidden state, @classify the
// logits of the image classifiers.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_VISIONTRANSFORMER_H
#define TFM_FRONTEND_FAMILIES_VISIONTRANSFORMER_H

#include "frontend/families/LoadedModel.h"
#include "frontend/formats/ConfigReader.h"

namespace mlir::tfm {

/// Whether config.json's model_type is a vision transformer.
bool isVisionFamily(llvm::StringRef modelType);

/// The vision families, for messages ("vit, deit").
std::string supportedVisionFamilies();

/// Builds the module of the vision transformer `config` describes into
/// `model`, whose weights are loaded; `labels` are id2label's names.
llvm::Error loadVisionTransformer(MLIRContext &context,
                                  llvm::StringRef modelType,
                                  ConfigReader &config,
                                  llvm::ArrayRef<std::string> architectures,
                                  std::vector<std::string> labels,
                                  llvm::StringRef checkpoint,
                                  llvm::StringRef configPath,
                                  LoadedModel &model);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_VISIONTRANSFORMER_H
