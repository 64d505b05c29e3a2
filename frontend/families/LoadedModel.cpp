//===- LoadedModel.cpp - what a family's reader produces ------------------===//

#include "frontend/families/LoadedModel.h"

using namespace mlir::tfm;

void mlir::tfm::recordDecoderShape(LoadedModel &model,
                                   const DecoderSpec &spec) {
  model.vocabSize = spec.vocabSize;
  model.maxContext = spec.maxContext;
  model.hiddenSize = spec.hiddenSize;
  model.numLayers = spec.numLayers;
  model.numHeads = spec.numHeads;
  model.numKVHeads = spec.numKVHeads;
}
