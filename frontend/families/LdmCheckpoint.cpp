//===- LdmCheckpoint.cpp - LDM names to diffusers' ------------------------===//
//
// The inverse of test/e2e/diffusion/ldm_names.py's tables (diffusers
// 0.27.2's convert_ldm_unet_checkpoint, convert_ldm_vae_checkpoint and the
// CLIP / OpenCLIP text encoder converters). With L = layers_per_block and
// per = L + 1, UNet input block k >= 1 is down stage (k - 1) / per, slot
// (k - 1) % per (the last slot its downsampler), output block k up stage
// k / per, slot k % per; a resnet's inner names are LDM's own.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/LdmCheckpoint.h"
#include "frontend/formats/ErrorMessages.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <optional>

using namespace mlir;
using namespace mlir::tfm;

namespace {

constexpr llvm::StringLiteral kUNet = "model.diffusion_model.",
                              kVae = "first_stage_model.",
                              kClip = "cond_stage_model.transformer.",
                              kOpenClip = "cond_stage_model.model.",
                              // SDXL's two text encoders.
                              kXlClip = "conditioner.embedders.0.transformer.",
                              kXlOpenClip = "conditioner.embedders.1.model.";

/// `rest` with its leading component renamed by `pairs` (LDM -> diffusers).
std::string renamed(llvm::StringRef rest,
                    llvm::ArrayRef<std::pair<llvm::StringRef, llvm::StringRef>>
                        pairs) {
  for (auto [old, now] : pairs)
    if (rest == old || rest.starts_with((old + ".").str()))
      return (now + rest.drop_front(old.size())).str();
  return rest.str();
}

std::string unetResnet(llvm::StringRef rest) {
  return renamed(rest, {{"in_layers.0", "norm1"},
                        {"in_layers.2", "conv1"},
                        {"emb_layers.1", "time_emb_proj"},
                        {"out_layers.0", "norm2"},
                        {"out_layers.3", "conv2"},
                        {"skip_connection", "conv_shortcut"}});
}

/// Splits "K.S.rest" into its block and slot numbers.
bool blockSlot(llvm::StringRef name, int64_t &block, int64_t &slot,
               llvm::StringRef &rest) {
  auto [k, afterK] = name.split('.');
  auto [s, after] = afterK.split('.');
  rest = after;
  return !k.getAsInteger(10, block) && !s.getAsInteger(10, slot) &&
         !rest.empty();
}

/// The diffusers name of a UNet tensor (prefix stripped), or nothing.
std::optional<std::string> unetName(llvm::StringRef name,
                                    const LdmLayout &layout) {
  for (auto [old, now] :
       {std::pair<llvm::StringRef, llvm::StringRef>{"time_embed.0.",
                                                    "time_embedding.linear_1."},
        {"time_embed.2.", "time_embedding.linear_2."},
        {"label_emb.0.0.", "add_embedding.linear_1."},
        {"label_emb.0.2.", "add_embedding.linear_2."},
        {"input_blocks.0.0.", "conv_in."},
        {"out.0.", "conv_norm_out."},
        {"out.2.", "conv_out."}})
    if (name.starts_with(old))
      return (now + name.drop_front(old.size())).str();
  int64_t per = layout.unetLayersPerBlock + 1, block, slot;
  llvm::StringRef rest;
  if (name.consume_front("input_blocks.") && blockSlot(name, block, slot, rest)) {
    int64_t stage = (block - 1) / per, layer = (block - 1) % per;
    std::string at = "down_blocks." + std::to_string(stage);
    if (layer == per - 1 && slot == 0 && rest.consume_front("op."))
      return at + ".downsamplers.0.conv." + rest.str();
    if (slot == 0)
      return at + ".resnets." + std::to_string(layer) + "." + unetResnet(rest);
    if (slot == 1)
      return at + ".attentions." + std::to_string(layer) + "." + rest.str();
    return std::nullopt;
  }
  if (name.consume_front("middle_block.")) {
    // "middle_block.N.rest": N 0 and 2 the resnets, 1 the attention.
    auto [n, after] = name.split('.');
    if (n == "1")
      return "mid_block.attentions.0." + after.str();
    if (n == "0" || n == "2")
      return "mid_block.resnets." + std::string(n == "0" ? "0" : "1") + "." +
             unetResnet(after);
    return std::nullopt;
  }
  if (name.consume_front("output_blocks.") && blockSlot(name, block, slot, rest)) {
    int64_t stage = block / per, layer = block % per;
    std::string at = "up_blocks." + std::to_string(stage);
    bool attention = stage < int64_t(layout.unetStageAttention.size()) &&
                     layout.unetStageAttention[stage];
    if (slot == 0)
      return at + ".resnets." + std::to_string(layer) + "." + unetResnet(rest);
    if (layer == per - 1 && slot == (attention ? 2 : 1) &&
        rest.consume_front("conv."))
      return at + ".upsamplers.0.conv." + rest.str();
    if (slot == 1 && attention)
      return at + ".attentions." + std::to_string(layer) + "." + rest.str();
    return std::nullopt;
  }
  return std::nullopt;
}

std::string vaeResnet(llvm::StringRef rest) {
  return renamed(rest, {{"nin_shortcut", "conv_shortcut"}});
}

/// The diffusers name of a VAE tensor (prefix stripped), or nothing; sets
/// `matrix` for the mid attention's 1x1 convolutions read as [C, C].
std::optional<std::string> vaeName(llvm::StringRef name,
                                   const LdmLayout &layout, bool &matrix) {
  matrix = false;
  if (name.starts_with("quant_conv.") || name.starts_with("post_quant_conv."))
    return name.str();
  auto [half, rest] = name.split('.');
  if (half != "encoder" && half != "decoder")
    return std::nullopt;
  std::string at = half.str() + ".";
  if (rest.starts_with("conv_in.") || rest.starts_with("conv_out."))
    return at + rest.str();
  if (rest.consume_front("norm_out."))
    return at + "conv_norm_out." + rest.str();
  int64_t stage, index;
  if (rest.consume_front("mid.")) {
    if (rest.consume_front("block_1."))
      return at + "mid_block.resnets.0." + vaeResnet(rest);
    if (rest.consume_front("block_2."))
      return at + "mid_block.resnets.1." + vaeResnet(rest);
    if (rest.consume_front("attn_1.")) {
      std::string inner =
          renamed(rest, {{"norm", "group_norm"},
                         {"q", "to_q"},
                         {"k", "to_k"},
                         {"v", "to_v"},
                         {"proj_out", "to_out.0"}});
      matrix = !rest.starts_with("norm.") && rest.ends_with(".weight");
      return at + "mid_block.attentions.0." + inner;
    }
    return std::nullopt;
  }
  bool down = rest.consume_front("down."), up = !down && rest.consume_front("up.");
  if (!down && !up)
    return std::nullopt;
  auto [s, inner] = rest.split('.');
  if (s.getAsInteger(10, stage) || stage < 0 || stage >= layout.vaeStages)
    return std::nullopt;
  // The decoder's up.i is diffusers' up_blocks[n - 1 - i].
  int64_t block = down ? stage : layout.vaeStages - 1 - stage;
  std::string blocks = at + (down ? "down_blocks." : "up_blocks.") +
                       std::to_string(block);
  if (inner.consume_front("block.")) {
    auto [j, afterJ] = inner.split('.');
    if (j.getAsInteger(10, index))
      return std::nullopt;
    return blocks + ".resnets." + j.str() + "." + vaeResnet(afterJ);
  }
  if (down && inner.consume_front("downsample.conv."))
    return blocks + ".downsamplers.0.conv." + inner.str();
  if (up && inner.consume_front("upsample.conv."))
    return blocks + ".upsamplers.0.conv." + inner.str();
  return std::nullopt;
}

/// An OpenCLIP tower's tensor as CLIPTextModel's, into `text`: its first
/// `layers` blocks, its projection if `projection`. Returns false for a
/// name it does not know; drops (true, counted) the layers past the
/// config's and what the text model does not have.
bool addOpenClip(llvm::StringRef name, const WeightTensor &tensor,
                 int64_t layers, bool projection, WeightStore &text,
                 int &dropped) {
  const std::string model = "text_model.";
  if (name == "token_embedding.weight") {
    text.add(model + "embeddings.token_embedding.weight", tensor);
  } else if (name == "positional_embedding") {
    text.add(model + "embeddings.position_embedding.weight", tensor);
  } else if (name.starts_with("ln_final.")) {
    text.add(model + "final_layer_norm." +
                 name.drop_front(llvm::StringRef("ln_final.").size()).str(),
             tensor);
  } else if (name == "text_projection") {
    // x @ text_projection ([C, proj]): diffusers' Linear weight [proj, C].
    if (projection)
      text.add("text_projection.weight",
               tensor.transposeRows(0, tensor.shape().back()));
    else
      ++dropped;
  } else if (name == "logit_scale") {
    ++dropped;
  } else if (name.consume_front("transformer.resblocks.")) {
    auto [i, rest] = name.split('.');
    int64_t layer;
    if (i.getAsInteger(10, layer))
      return false;
    if (layer >= layers) { // SD 2.x reads the penultimate layer
      ++dropped;
      return true;
    }
    std::string at = model + "encoder.layers." + i.str() + ".";
    if (rest == "attn.in_proj_weight" || rest == "attn.in_proj_bias") {
      // q, k and v stacked on the first dimension.
      int64_t c = tensor.shape()[0] / 3;
      bool weight = rest.ends_with("weight");
      const char *parts[] = {"q_proj", "k_proj", "v_proj"};
      for (int64_t p = 0; p < 3; ++p) {
        std::vector<int64_t> rows;
        for (int64_t r = 0; r < c; ++r)
          rows.push_back(p * c + r);
        std::vector<int64_t> shape = tensor.shape();
        shape[0] = c;
        text.add(at + "self_attn." + parts[p] + (weight ? ".weight" : ".bias"),
                 tensor.selectRows(std::move(rows), shape));
      }
      return true;
    }
    std::string inner = renamed(rest, {{"attn.out_proj", "self_attn.out_proj"},
                                       {"ln_1", "layer_norm1"},
                                       {"ln_2", "layer_norm2"},
                                       {"mlp.c_fc", "mlp.fc1"},
                                       {"mlp.c_proj", "mlp.fc2"}});
    if (inner == rest.str())
      return false;
    text.add(at + inner, tensor);
  } else {
    return false;
  }
  return true;
}

} // namespace

bool mlir::tfm::isLdmCheckpoint(const WeightStore &store) {
  return llvm::any_of(store.names(), [](const std::string &name) {
    return llvm::StringRef(name).starts_with(kUNet);
  });
}

llvm::Error mlir::tfm::splitLdmCheckpoint(WeightStore &&file,
                                          llvm::StringRef path,
                                          const LdmLayout &layout,
                                          WeightStore &text, WeightStore *text2,
                                          WeightStore &unet, WeightStore &vae,
                                          std::vector<std::string> &notes) {
  int dropped = 0;
  std::vector<std::string> unknown;
  for (const std::string &full : file.names()) {
    llvm::StringRef name(full);
    const WeightTensor &tensor = *file.lookup(name);
    if (name.consume_front(kUNet)) {
      if (std::optional<std::string> now = unetName(name, layout))
        unet.add(*now, tensor);
      else
        unknown.push_back(full);
    } else if (name.consume_front(kVae)) {
      bool matrix = false;
      if (std::optional<std::string> now = vaeName(name, layout, matrix)) {
        if (matrix) { // a [C, C, 1, 1] convolution as the [C, C] matrix
          std::vector<int64_t> rows;
          for (int64_t r = 0; r < tensor.rows(); ++r)
            rows.push_back(r);
          vae.add(*now, tensor.selectRows(std::move(rows),
                                          {tensor.rows(), tensor.cols()}));
        } else {
          vae.add(*now, tensor);
        }
      } else {
        unknown.push_back(full);
      }
    } else if (name.consume_front(kClip) ||
               (text2 && name.consume_front(kXlClip))) {
      if (!name.ends_with("embeddings.position_ids"))
        text.add(name, tensor); // transformers' own names
    } else if (name.consume_front(kOpenClip)) {
      if (!addOpenClip(name, tensor, layout.textLayers, layout.textProjection,
                       text, dropped))
        unknown.push_back(full);
    } else if (text2 && name.consume_front(kXlOpenClip)) {
      if (!addOpenClip(name, tensor, layout.text2Layers, /*projection=*/true,
                       *text2, dropped))
        unknown.push_back(full);
    } else if (!text2 && name.starts_with("conditioner.")) {
      return makeError(path + ": an SDXL checkpoint (conditioner.embedders."
                              "*), but the config folder's pipeline has one "
                              "text encoder: give SDXL's folder");
    } else if (name.starts_with("model_ema.") ||
               llvm::is_contained(
                   {"betas", "alphas_cumprod", "alphas_cumprod_prev",
                    "sqrt_alphas_cumprod", "sqrt_one_minus_alphas_cumprod",
                    "log_one_minus_alphas_cumprod", "sqrt_recip_alphas_cumprod",
                    "sqrt_recipm1_alphas_cumprod", "posterior_variance",
                    "posterior_log_variance_clipped", "posterior_mean_coef1",
                    "posterior_mean_coef2", "logvar"},
                   name)) {
      ++dropped; // the training code's schedule and EMA copies
    } else {
      unknown.push_back(full);
    }
  }
  if (!unknown.empty())
    return makeError(path + ": " + llvm::Twine(unknown.size()) +
                     " tensors are not a Stable Diffusion 1.x, 2.x or XL "
                     "checkpoint's (under the config folder's layers per "
                     "block), the first '" +
                     unknown.front() + "'");
  if (dropped)
    notes.push_back((path + ": " + llvm::Twine(dropped) +
                     " tensors that the pipeline does not read (the "
                     "training schedule, EMA copies, unused text layers) "
                     "are left out")
                        .str());
  // The tensors view the file's mapping: it goes with the UNet's.
  unet.keepFilesOf(std::move(file));
  return llvm::Error::success();
}
