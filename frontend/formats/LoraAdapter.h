//===- LoraAdapter.h - PEFT LoRA adapters merged into a checkpoint -*- C++
//-*-===//
//
// `tfmc MODEL --lora DIR[:scale]`: a PEFT LoRA adapter folder
// (adapter_config.json + adapter_model.safetensors) merged into the base
// checkpoint's weights before the family reads them, as PEFT's
// merge_and_unload does: W + scale · s · B·A for every adapted module,
// where s is lora_alpha / r (lora_alpha / √r with use_rslora), and the
// modules_to_save copies in place of the base's tensors. The merged
// weights keep the base tensor's dtype (a bf16 checkpoint's merge is
// rounded to bf16, as PEFT's merge in a bf16 model is), so the compiled
// model is the one a merged folder would give.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FORMATS_LORAADAPTER_H
#define TFM_FRONTEND_FORMATS_LORAADAPTER_H

#include "frontend/formats/WeightStore.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::tfm {

/// One --lora argument: the adapter folder and the factor on its update.
struct LoraAdapterSpec {
  std::string directory;
  double scale = 1.0;
};

/// Parses "DIR" or "DIR:SCALE" (a finite number; a folder whose name has
/// a colon is given with an explicit scale).
llvm::Expected<LoraAdapterSpec> parseLoraArgument(llvm::StringRef argument);

/// Merges the adapter into `store`, whose tensors carry the base model's
/// Hugging Face names ("model.layers.0.self_attn.q_proj.weight"). Every
/// adapter tensor must find its base tensor with the shapes the adapter's
/// rank implies; what the merge does not implement (DoRA, LoRA biases,
/// other PEFT methods, weights stored in blocks) is refused, naming the
/// file and the tensor. Adds a line to `notes` saying what was merged;
/// returns the names of the tensors it changed.
llvm::Expected<std::vector<std::string>>
mergeLoraAdapter(const LoraAdapterSpec &adapter, WeightStore &store,
                 std::vector<std::string> &notes);

/// Merges llama.cpp's GGUF LoRA file `adapter.directory` (general.type
/// "adapter", adapter.lora.alpha, W.lora_a [r, in] and W.lora_b [out, r]
/// by the model's GGUF names) into `store`, the tensors of a model read
/// from GGUF: W + scale · alpha / r · B·A (scale alone without alpha, as
/// llama.cpp applies it). Float weights only: a block-quantized one is
/// refused, pointing at run-time adapters.
llvm::Expected<std::vector<std::string>>
mergeGgufLoraAdapter(const LoraAdapterSpec &adapter, WeightStore &store,
                     std::vector<std::string> &notes);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FORMATS_LORAADAPTER_H
