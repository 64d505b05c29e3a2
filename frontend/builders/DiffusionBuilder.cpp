//===- DiffusionBuilder.cpp - a UNet's and VAE's entry points as tfm IR ---===//
//
// diffusers 0.27's UNet2DConditionModel.forward and AutoencoderKL.decode,
// block by block (DiffusionBuilder.h). A ResnetBlock2D's time embedding is
// added to its first convolution's output, a [C] vector: it becomes part of
// that convolution's bias (conv1.bias + time_emb_proj(silu(emb))), so no
// broadcast is needed.
//
//===----------------------------------------------------------------------===//

#include "frontend/builders/DiffusionBuilder.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {
std::string at(const std::string &prefix, const llvm::Twine &rest) {
  return prefix + rest.str();
}
} // namespace

Value DiffusionIRBuilder::conv(Value x, const std::string &name, int64_t out,
                               int64_t kernel, int64_t stride, Value bias,
                               std::optional<std::array<int64_t, 4>> padding) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t c = type.getDimSize(2), pad = kernel / 2;
  std::array<int64_t, 4> pads =
      padding.value_or(std::array<int64_t, 4>{pad, pad, pad, pad});
  int64_t h = (type.getDimSize(0) + pads[0] + pads[2] - kernel) / stride + 1,
          w = (type.getDimSize(1) + pads[1] + pads[3] - kernel) / stride + 1;
  Value weight = declarations.readAs(b, name + ".weight",
                                     {out, c, kernel, kernel},
                                     {out, c * kernel * kernel});
  if (!bias)
    bias = this->weight(name + ".bias", {out});
  return Conv2dOp::create(b, named(name), featureMap(h, w, out), x, weight,
                          bias, b.getI64IntegerAttr(kernel),
                          b.getI64IntegerAttr(stride),
                          b.getDenseI64ArrayAttr(pads));
}

Value DiffusionIRBuilder::groupNorm(Value x, const std::string &name,
                                    int64_t groups, double epsilon,
                                    bool silu) {
  int64_t c = channelsOf(x);
  return GroupNormOp::create(
      b, named(name), x.getType(), x, weight(name + ".weight", {c}),
      weight(name + ".bias", {c}), b.getI64IntegerAttr(groups),
      b.getF32FloatAttr(epsilon), silu ? b.getUnitAttr() : UnitAttr());
}

Value DiffusionIRBuilder::add(Value x, Value y) {
  return AddOp::create(b, x.getLoc(), x, y);
}

Value DiffusionIRBuilder::resnet(Value x, const std::string &name, int64_t out,
                                 int64_t groups, double epsilon,
                                 Value timeFeatures) {
  Value h = groupNorm(x, name + ".norm1", groups, epsilon, /*silu=*/true);
  Value bias;
  if (timeFeatures) {
    Value t = linear(timeFeatures, name + ".time_emb_proj.weight", {out});
    t = tensor::CollapseShapeOp::create(
        b, named(name + ".time_emb_proj"),
        RankedTensorType::get({out}, b.getF32Type()), t,
        SmallVector<ReassociationIndices>{{0, 1}});
    bias = add(weight(name + ".conv1.bias", {out}), t);
  }
  h = conv(h, name + ".conv1", out, 3, 1, bias);
  h = groupNorm(h, name + ".norm2", groups, epsilon, /*silu=*/true);
  h = conv(h, name + ".conv2", out, 3);
  Value shortcut =
      channelsOf(x) == out ? x : conv(x, name + ".conv_shortcut", out, 1);
  return add(shortcut, h);
}

Value DiffusionIRBuilder::rowsOf(Value map) {
  auto type = cast<RankedTensorType>(map.getType());
  return tensor::CollapseShapeOp::create(
      b, map.getLoc(),
      RankedTensorType::get({type.getDimSize(0) * type.getDimSize(1),
                             type.getDimSize(2)},
                            b.getF32Type()),
      map, SmallVector<ReassociationIndices>{{0, 1}, {2}});
}

Value DiffusionIRBuilder::mapOf(Value rows, int64_t h, int64_t w) {
  auto type = cast<RankedTensorType>(rows.getType());
  return tensor::ExpandShapeOp::create(
      b, rows.getLoc(), featureMap(h, w, type.getDimSize(1)), rows,
      SmallVector<ReassociationIndices>{{0, 1}, {2}});
}

Value DiffusionIRBuilder::channelsLast(Value chw) {
  auto type = cast<RankedTensorType>(chw.getType());
  Value init = tensor::EmptyOp::create(
      b, chw.getLoc(),
      ArrayRef<int64_t>{type.getDimSize(1), type.getDimSize(2),
                        type.getDimSize(0)},
      b.getF32Type());
  return linalg::TransposeOp::create(b, chw.getLoc(), chw, init,
                                     ArrayRef<int64_t>{1, 2, 0})
      ->getResult(0);
}

Value DiffusionIRBuilder::channelsFirst(Value hwc) {
  auto type = cast<RankedTensorType>(hwc.getType());
  Value init = tensor::EmptyOp::create(
      b, hwc.getLoc(),
      ArrayRef<int64_t>{type.getDimSize(2), type.getDimSize(0),
                        type.getDimSize(1)},
      b.getF32Type());
  return linalg::TransposeOp::create(b, hwc.getLoc(), hwc, init,
                                     ArrayRef<int64_t>{2, 0, 1})
      ->getResult(0);
}

Value DiffusionIRBuilder::columns(Value rows, int64_t start, int64_t n) {
  int64_t s = cast<RankedTensorType>(rows.getType()).getDimSize(0);
  return tensor::ExtractSliceOp::create(
      b, rows.getLoc(), RankedTensorType::get({s, n}, b.getF32Type()), rows,
      ValueRange(), ValueRange(), ValueRange(),
      b.getDenseI64ArrayAttr({0, start}), b.getDenseI64ArrayAttr({s, n}),
      b.getDenseI64ArrayAttr({1, 1}));
}

Value DiffusionIRBuilder::attention(Value x, Value context, int64_t heads,
                                    ArrayRef<std::string> names,
                                    bool biased) {
  int64_t d = cast<RankedTensorType>(x.getType()).getDimSize(1);
  int64_t headDim = d / heads;
  if (!context)
    context = x;
  auto project = [&](Value in, const std::string &name) {
    return biased ? linear(in, name, {heads, headDim})
                  : declarations.unbiasedLinear(b, in, name, {heads, headDim});
  };
  Value q = project(x, names[0]), k = project(context, names[1]),
        v = project(context, names[2]);
  Value attended = AttentionOp::create(
      b, named(names[0]), q.getType(), q, k, v, /*bias=*/Value(),
      /*lengths=*/Value(), /*relative_bias=*/Value(),
      b.getF32FloatAttr(1.0 / std::sqrt(double(headDim))),
      /*causal=*/UnitAttr(), /*window=*/IntegerAttr(),
      /*max_distance=*/IntegerAttr(), /*softcap=*/FloatAttr());
  return linear(attended, names[3], {d});
}

Value DiffusionIRBuilder::transformer(Value x, const std::string &name,
                                      const UNetSpec &spec, int64_t heads,
                                      int64_t layers, Value text) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t h = type.getDimSize(0), w = type.getDimSize(1),
          c = type.getDimSize(2);
  if (heads <= 0 || c % heads)
    declarations.fail(name + ": " + std::to_string(heads) +
                      " attention heads do not divide its " +
                      std::to_string(c) + " channels");
  Value normed = groupNorm(x, name + ".norm", spec.normGroups, 1e-6, false);
  Value rows = spec.linearProjection
                   ? linear(rowsOf(normed), name + ".proj_in.weight", {c})
                   : rowsOf(conv(normed, name + ".proj_in", c, 1));
  for (int64_t layer = 0; layer < layers; ++layer) {
    std::string block = at(name, ".transformer_blocks." + llvm::Twine(layer));
    auto names = [&](llvm::StringRef attn) {
      std::string p = block + "." + attn.str();
      return std::vector<std::string>{p + ".to_q.weight", p + ".to_k.weight",
                                      p + ".to_v.weight",
                                      p + ".to_out.0.weight"};
    };
    Value n = declarations.biasedLayerNorm(b, rows, block + ".norm1.weight", c,
                                           1e-5);
    rows = add(attention(n, Value(), heads, names("attn1"), false), rows);
    n = declarations.biasedLayerNorm(b, rows, block + ".norm2.weight", c, 1e-5);
    rows = add(attention(n, text, heads, names("attn2"), false), rows);
    n = declarations.biasedLayerNorm(b, rows, block + ".norm3.weight", c, 1e-5);
    // GEGLU: the projection's first half times gelu of its second.
    int64_t inner = 4 * c;
    Value both = linear(n, block + ".ff.net.0.proj.weight", {2 * inner});
    Value gate = ActivationOp::create(b, named(block + ".ff gate"),
                                      ActivationKind::gelu,
                                      columns(both, inner, inner));
    Value gated = MulOp::create(b, named(block + ".ff"),
                                columns(both, 0, inner), gate);
    rows = add(linear(gated, block + ".ff.net.2.weight", {c}), rows);
  }
  Value out = spec.linearProjection
                  ? mapOf(linear(rows, name + ".proj_out.weight", {c}), h, w)
                  : conv(mapOf(rows, h, w), name + ".proj_out", c, 1);
  return add(out, x);
}

Value DiffusionIRBuilder::timeFeatures(Value timestep, Value textEmbeds,
                                       Value timeIds, const UNetSpec &spec) {
  const std::string &p = spec.prefix;
  int64_t c0 = spec.stages.front().channels, t = spec.timeEmbedDim();
  auto sinusoids = [&](Value steps, int64_t n, int64_t dim) {
    return TimestepEmbeddingOp::create(
        b, named("time_proj"), RankedTensorType::get({n, dim}, b.getF32Type()),
        steps, b.getF32FloatAttr(spec.freqShift), b.getF32FloatAttr(1.0),
        b.getF32FloatAttr(10000.0),
        spec.flipSinToCos ? b.getUnitAttr() : UnitAttr());
  };
  Value emb = linear(sinusoids(timestep, 1, c0),
                     p + "time_embedding.linear_1.weight", {t},
                     ActivationKind::silu);
  emb = linear(emb, p + "time_embedding.linear_2.weight", {t});
  if (spec.textTime) {
    // add_embedding(concat(text_embeds, add_time_proj(time_ids))).
    Value ids = sinusoids(timeIds, 6, spec.addTimeDim);
    ids = tensor::CollapseShapeOp::create(
        b, named("add_time_proj"),
        RankedTensorType::get({1, 6 * spec.addTimeDim}, b.getF32Type()), ids,
        SmallVector<ReassociationIndices>{{0, 1}});
    Value pooled = tensor::ExpandShapeOp::create(
        b, named("text_embeds"),
        RankedTensorType::get({1, spec.pooledDim}, b.getF32Type()),
        textEmbeds, SmallVector<ReassociationIndices>{{0, 1}});
    Value joined = tensor::ConcatOp::create(b, named("add_embedding input"),
                                            1, ValueRange{pooled, ids});
    Value added = linear(joined, p + "add_embedding.linear_1.weight", {t},
                         ActivationKind::silu);
    added = linear(added, p + "add_embedding.linear_2.weight", {t});
    emb = add(emb, added);
  }
  return ActivationOp::create(b, named("time features"), ActivationKind::silu,
                              emb);
}

void DiffusionIRBuilder::entryPoint(ModuleOp module, llvm::StringRef name,
                                    ArrayRef<Type> inputs,
                                    llvm::function_ref<Value(ValueRange)> body) {
  MLIRContext *ctx = b.getContext();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToEnd(module.getBody());
  auto function = func::FuncOp::create(b, named(name), name,
                                       b.getFunctionType(inputs, {}));
  for (unsigned i = 0; i < inputs.size(); ++i)
    function.setArgAttr(i, kInputArgAttrName,
                        InputRoleAttr::get(ctx, InputRole::features));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value result = body(entry->getArguments());
  func::ReturnOp::create(b, named(name), result);
  function.setType(b.getFunctionType(inputs, {result.getType()}));
  function.setResultAttr(0, kOutputResultAttrName,
                         OutputRoleAttr::get(ctx, OutputRole::hidden_states));
}

void DiffusionIRBuilder::buildDenoise(ModuleOp module, const UNetSpec &spec) {
  auto f32 = b.getF32Type();
  SmallVector<Type> inputs = {
      RankedTensorType::get({spec.inChannels, spec.height, spec.width}, f32),
      RankedTensorType::get({1}, f32),
      RankedTensorType::get({spec.textTokens, spec.crossAttentionDim}, f32)};
  if (spec.textTime) {
    inputs.push_back(RankedTensorType::get({spec.pooledDim}, f32));
    inputs.push_back(RankedTensorType::get({6}, f32));
  }
  entryPoint(module, "denoise", inputs, [&](ValueRange args) -> Value {
    const std::string &p = spec.prefix;
    int64_t groups = spec.normGroups;
    double eps = spec.normEpsilon;
    Value text = args[2];
    Value time = timeFeatures(args[1], spec.textTime ? args[3] : Value(),
                              spec.textTime ? args[4] : Value(), spec);
    Value x = conv(channelsLast(args[0]), p + "conv_in",
                   spec.stages.front().channels, 3);
    std::vector<Value> skips = {x};
    size_t n = spec.stages.size();
    for (size_t i = 0; i < n; ++i) {
      const UNetStage &stage = spec.stages[i];
      std::string block = at(p, "down_blocks." + llvm::Twine(i));
      for (int64_t j = 0; j < spec.layersPerBlock; ++j) {
        x = resnet(x, at(block, ".resnets." + llvm::Twine(j)), stage.channels,
                   groups, eps, time);
        if (stage.crossAttention)
          x = transformer(x, at(block, ".attentions." + llvm::Twine(j)), spec,
                          stage.heads, stage.transformerLayers, text);
        skips.push_back(x);
      }
      if (i + 1 < n) {
        x = conv(x, block + ".downsamplers.0.conv", stage.channels, 3, 2);
        skips.push_back(x);
      }
    }
    const UNetStage &last = spec.stages.back();
    x = resnet(x, p + "mid_block.resnets.0", last.channels, groups, eps, time);
    x = transformer(x, p + "mid_block.attentions.0", spec, spec.midHeads,
                    last.transformerLayers, text);
    x = resnet(x, p + "mid_block.resnets.1", last.channels, groups, eps, time);
    for (size_t i = 0; i < n; ++i) {
      const UNetStage &stage = spec.stages[n - 1 - i];
      std::string block = at(p, "up_blocks." + llvm::Twine(i));
      for (int64_t j = 0; j <= spec.layersPerBlock; ++j) {
        Value skip = skips.back();
        skips.pop_back();
        x = tensor::ConcatOp::create(b, named(block + " skip"), 2,
                                     ValueRange{x, skip});
        x = resnet(x, at(block, ".resnets." + llvm::Twine(j)), stage.channels,
                   groups, eps, time);
        if (stage.crossAttention)
          x = transformer(x, at(block, ".attentions." + llvm::Twine(j)), spec,
                          stage.heads, stage.transformerLayers, text);
      }
      if (i + 1 < n) {
        auto type = cast<RankedTensorType>(x.getType());
        x = UpsampleNearestOp::create(
            b, named(block + ".upsamplers.0"),
            featureMap(2 * type.getDimSize(0), 2 * type.getDimSize(1),
                       stage.channels),
            x);
        x = conv(x, block + ".upsamplers.0.conv", stage.channels, 3);
      }
    }
    x = groupNorm(x, p + "conv_norm_out", groups, eps, /*silu=*/true);
    x = conv(x, p + "conv_out", spec.outChannels, 3);
    return channelsFirst(x);
  });
}

Value DiffusionIRBuilder::vaeMidBlock(Value x, const VaeSpec &spec,
                                      const std::string &coder) {
  const double eps = 1e-6;
  std::string mid = spec.prefix + coder + ".mid_block";
  int64_t c = channelsOf(x), groups = spec.normGroups;
  x = resnet(x, mid + ".resnets.0", c, groups, eps, Value());
  // The single-head self-attention, with biases and its own GroupNorm,
  // added to its input.
  std::string a = mid + ".attentions.0";
  std::vector<std::string> names =
      spec.deprecatedAttentionNames
          ? std::vector<std::string>{a + ".query.weight", a + ".key.weight",
                                     a + ".value.weight",
                                     a + ".proj_attn.weight"}
          : std::vector<std::string>{a + ".to_q.weight", a + ".to_k.weight",
                                     a + ".to_v.weight",
                                     a + ".to_out.0.weight"};
  auto type = cast<RankedTensorType>(x.getType());
  Value normed = groupNorm(x, a + ".group_norm", groups, eps, false);
  Value attended = attention(rowsOf(normed), Value(), 1, names, true);
  x = add(mapOf(attended, type.getDimSize(0), type.getDimSize(1)), x);
  return resnet(x, mid + ".resnets.1", c, groups, eps, Value());
}

void DiffusionIRBuilder::buildEncodeImage(ModuleOp module,
                                          const VaeSpec &spec) {
  int64_t factor = int64_t(1) << spec.upsamplings();
  auto pixels = RankedTensorType::get(
      {spec.inChannels, spec.height * factor, spec.width * factor},
      b.getF32Type());
  entryPoint(module, "encode_image", {pixels}, [&](ValueRange args) -> Value {
    const std::string &p = spec.prefix;
    int64_t groups = spec.normGroups;
    const double eps = 1e-6;
    Value x = conv(channelsLast(args[0]), p + "encoder.conv_in",
                   spec.blockChannels.front(), 3);
    size_t n = spec.blockChannels.size();
    for (size_t i = 0; i < n; ++i) {
      int64_t out = spec.blockChannels[i];
      std::string block = at(p, "encoder.down_blocks." + llvm::Twine(i));
      for (int64_t j = 0; j < spec.layersPerBlock; ++j)
        x = resnet(x, at(block, ".resnets." + llvm::Twine(j)), out, groups,
                   eps, Value());
      // Downsample2D(padding=0): padded by one row and column at the
      // bottom and right, then a stride-2 3x3 convolution.
      if (i + 1 < n)
        x = conv(x, block + ".downsamplers.0.conv", out, 3, 2, Value(),
                 std::array<int64_t, 4>{0, 0, 1, 1});
    }
    x = vaeMidBlock(x, spec, "encoder");
    x = groupNorm(x, p + "encoder.conv_norm_out", groups, eps, /*silu=*/true);
    x = conv(x, p + "encoder.conv_out", 2 * spec.latentChannels, 3);
    // The mean's and the log-variance's channels.
    x = conv(x, p + "quant_conv", 2 * spec.latentChannels, 1);
    return channelsFirst(x);
  });
}

void DiffusionIRBuilder::buildDecodeLatents(ModuleOp module,
                                            const VaeSpec &spec) {
  auto latents = RankedTensorType::get(
      {spec.latentChannels, spec.height, spec.width}, b.getF32Type());
  entryPoint(module, "decode_latents", {latents}, [&](ValueRange args) -> Value {
    const std::string &p = spec.prefix;
    int64_t groups = spec.normGroups;
    const double eps = 1e-6;
    int64_t top = spec.blockChannels.back();
    Value x = conv(channelsLast(args[0]), p + "post_quant_conv",
                   spec.latentChannels, 1);
    x = conv(x, p + "decoder.conv_in", top, 3);
    x = vaeMidBlock(x, spec, "decoder");
    size_t n = spec.blockChannels.size();
    for (size_t i = 0; i < n; ++i) {
      int64_t out = spec.blockChannels[n - 1 - i];
      std::string block = at(p, "decoder.up_blocks." + llvm::Twine(i));
      for (int64_t j = 0; j <= spec.layersPerBlock; ++j)
        x = resnet(x, at(block, ".resnets." + llvm::Twine(j)), out, groups,
                   eps, Value());
      if (i + 1 < n) {
        auto type = cast<RankedTensorType>(x.getType());
        x = UpsampleNearestOp::create(
            b, named(block + ".upsamplers.0"),
            featureMap(2 * type.getDimSize(0), 2 * type.getDimSize(1), out),
            x);
        x = conv(x, block + ".upsamplers.0.conv", out, 3);
      }
    }
    x = groupNorm(x, p + "decoder.conv_norm_out", groups, eps, /*silu=*/true);
    x = conv(x, p + "decoder.conv_out", spec.outChannels, 3);
    return channelsFirst(x);
  });
}
