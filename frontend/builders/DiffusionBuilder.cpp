//===- DiffusionBuilder.cpp - a UNet's and VAE's entry points as tfm IR ---===//
//
// diffusers 0.27's UNet2DConditionModel.forward and AutoencoderKL.decode,
// block by block (DiffusionBuilder.h). Feature maps are batches
// [N, H, W, C]: the UNet's two halves of classifier-free guidance (N = 2)
// go through one call, so every convolution and projection reads its
// weight once for both; the VAE's N is 1. A ResnetBlock2D's time embedding
// is added to its first convolution's output, a [C] vector shared by the
// batch where the time embedding is (the timestep is): it becomes part of
// that convolution's bias (conv1.bias + time_emb_proj(silu(emb))). SDXL's
// differs per half (the pooled text joins it) and is broadcast.
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
  int64_t n = type.getDimSize(0), c = type.getDimSize(3), pad = kernel / 2;
  std::array<int64_t, 4> pads =
      padding.value_or(std::array<int64_t, 4>{pad, pad, pad, pad});
  int64_t h = (type.getDimSize(1) + pads[0] + pads[2] - kernel) / stride + 1,
          w = (type.getDimSize(2) + pads[1] + pads[3] - kernel) / stride + 1;
  Value weight = declarations.readAs(b, name + ".weight",
                                     {out, c, kernel, kernel},
                                     {out, c * kernel * kernel});
  if (!bias)
    bias = this->weight(name + ".bias", {out});
  return Conv2dOp::create(b, named(name), featureMap(n, h, w, out), x, weight,
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
  Value bias, perImage;
  if (timeFeatures) {
    Value t = linear(timeFeatures, name + ".time_emb_proj.weight", {out});
    if (cast<RankedTensorType>(t.getType()).getDimSize(0) == 1) {
      // One embedding for the batch: part of conv1's bias.
      t = tensor::CollapseShapeOp::create(
          b, named(name + ".time_emb_proj"),
          RankedTensorType::get({out}, b.getF32Type()), t,
          SmallVector<ReassociationIndices>{{0, 1}});
      bias = add(weight(name + ".conv1.bias", {out}), t);
    } else {
      perImage = t; // [N, out], added to each image's map after conv1
    }
  }
  h = conv(h, name + ".conv1", out, 3, 1, bias);
  if (perImage) {
    auto type = cast<RankedTensorType>(h.getType());
    Value init = tensor::EmptyOp::create(b, named(name + ".time_emb_proj"),
                                         type.getShape(), b.getF32Type());
    Value spread = linalg::BroadcastOp::create(
                       b, named(name + ".time_emb_proj"), perImage, init,
                       ArrayRef<int64_t>{1, 2})
                       ->getResult(0);
    h = add(h, spread);
  }
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
      RankedTensorType::get({type.getDimSize(0) * type.getDimSize(1) *
                                 type.getDimSize(2),
                             type.getDimSize(3)},
                            b.getF32Type()),
      map, SmallVector<ReassociationIndices>{{0, 1, 2}, {3}});
}

Value DiffusionIRBuilder::mapOf(Value rows, int64_t n, int64_t h, int64_t w) {
  auto type = cast<RankedTensorType>(rows.getType());
  return tensor::ExpandShapeOp::create(
      b, rows.getLoc(), featureMap(n, h, w, type.getDimSize(1)), rows,
      SmallVector<ReassociationIndices>{{0, 1, 2}, {3}});
}

Value DiffusionIRBuilder::permuted(Value x, ArrayRef<int64_t> permutation) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape;
  for (int64_t d : permutation)
    shape.push_back(type.getDimSize(d));
  Value init =
      tensor::EmptyOp::create(b, x.getLoc(), shape, b.getF32Type());
  return linalg::TransposeOp::create(b, x.getLoc(), x, init, permutation)
      ->getResult(0);
}

Value DiffusionIRBuilder::channelsLast(Value nchw) {
  return permuted(nchw, {0, 2, 3, 1});
}

Value DiffusionIRBuilder::channelsFirst(Value nhwc) {
  return permuted(nhwc, {0, 3, 1, 2});
}

Value DiffusionIRBuilder::batchOfOne(Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<int64_t> shape = {1};
  llvm::append_range(shape, type.getShape());
  SmallVector<ReassociationIndices> first = {{0, 1}};
  for (int64_t d = 1; d < type.getRank(); ++d)
    first.push_back({d + 1});
  return tensor::ExpandShapeOp::create(
      b, x.getLoc(), RankedTensorType::get(shape, type.getElementType()), x,
      first);
}

Value DiffusionIRBuilder::onlyImage(Value x) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<ReassociationIndices> first = {{0, 1}};
  for (int64_t d = 2; d < type.getRank(); ++d)
    first.push_back({d});
  return tensor::CollapseShapeOp::create(
      b, x.getLoc(),
      RankedTensorType::get(type.getShape().drop_front(),
                            type.getElementType()),
      x, first);
}

Value DiffusionIRBuilder::rowRange(Value rows, int64_t start, int64_t n) {
  auto type = cast<RankedTensorType>(rows.getType());
  SmallVector<int64_t> offsets(type.getRank(), 0), sizes(type.getShape()),
      strides(type.getRank(), 1);
  offsets[0] = start;
  sizes[0] = n;
  return tensor::ExtractSliceOp::create(
      b, rows.getLoc(), RankedTensorType::get(sizes, type.getElementType()),
      rows, ValueRange(), ValueRange(), ValueRange(),
      b.getDenseI64ArrayAttr(offsets), b.getDenseI64ArrayAttr(sizes),
      b.getDenseI64ArrayAttr(strides));
}

Value DiffusionIRBuilder::repeatRows(Value rows, int64_t times) {
  if (times == 1)
    return rows;
  SmallVector<Value> copies(times, rows);
  return tensor::ConcatOp::create(b, rows.getLoc(), 0, copies);
}

Value DiffusionIRBuilder::columns(Value rows, int64_t start, int64_t n) {
  int64_t s = cast<RankedTensorType>(rows.getType()).getDimSize(0);
  return tensor::ExtractSliceOp::create(
      b, rows.getLoc(), RankedTensorType::get({s, n}, b.getF32Type()), rows,
      ValueRange(), ValueRange(), ValueRange(),
      b.getDenseI64ArrayAttr({0, start}), b.getDenseI64ArrayAttr({s, n}),
      b.getDenseI64ArrayAttr({1, 1}));
}

Value DiffusionIRBuilder::attention(
    Value x, int64_t images, int64_t heads, ArrayRef<std::string> names,
    bool biased, ArrayRef<std::pair<Value, Value>> keysValues) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t d = type.getDimSize(1), headDim = d / heads,
          rows = type.getDimSize(0) / images;
  auto project = [&](Value in, const std::string &name) {
    return biased ? linear(in, name, {heads, headDim})
                  : declarations.unbiasedLinear(b, in, name, {heads, headDim});
  };
  auto split = [&](Value flat) { // [T, D] -> [T, heads, headDim]
    int64_t t = cast<RankedTensorType>(flat.getType()).getDimSize(0);
    return tensor::ExpandShapeOp::create(
        b, flat.getLoc(),
        RankedTensorType::get({t, heads, headDim}, b.getF32Type()), flat,
        SmallVector<ReassociationIndices>{{0}, {1, 2}});
  };
  // The projections over every image's rows at once; attention image by
  // image (self-attention: its own rows; cross: its own text's).
  Value q = project(x, names[0]), k, v;
  if (keysValues.empty()) {
    k = project(x, names[1]);
    v = project(x, names[2]);
  }
  SmallVector<Value> attended;
  for (int64_t i = 0; i < images; ++i) {
    Value qi = images == 1 ? q : rowRange(q, i * rows, rows);
    Value ki, vi;
    if (keysValues.empty()) {
      ki = images == 1 ? k : rowRange(k, i * rows, rows);
      vi = images == 1 ? v : rowRange(v, i * rows, rows);
    } else {
      ki = split(keysValues[i].first);
      vi = split(keysValues[i].second);
    }
    attended.push_back(attend(named(names[0]), qi, ki, vi, /*causal=*/false));
  }
  Value joined = attended.size() == 1
                     ? attended.front()
                     : tensor::ConcatOp::create(b, named(names[0]), 0,
                                                attended)
                           .getResult();
  return linear(joined, names[3], {d});
}

std::vector<DiffusionIRBuilder::CrossAttention>
DiffusionIRBuilder::crossAttentions(const UNetSpec &spec) const {
  std::vector<CrossAttention> all;
  auto add = [&](const std::string &attentions, int64_t channels,
                 int64_t layers) {
    for (int64_t layer = 0; layer < layers; ++layer)
      all.push_back({attentions + ".transformer_blocks." +
                         std::to_string(layer) + ".attn2",
                     channels});
  };
  const std::string &p = spec.prefix;
  size_t n = spec.stages.size();
  for (size_t i = 0; i < n; ++i)
    for (int64_t j = 0; spec.stages[i].crossAttention && j < spec.layersPerBlock;
         ++j)
      add(p + "down_blocks." + std::to_string(i) + ".attentions." +
              std::to_string(j),
          spec.stages[i].channels, spec.stages[i].transformerLayers);
  add(p + "mid_block.attentions.0", spec.stages.back().channels,
      spec.stages.back().transformerLayers);
  for (size_t i = 0; i < n; ++i) {
    const UNetStage &stage = spec.stages[n - 1 - i];
    for (int64_t j = 0; stage.crossAttention && j <= spec.layersPerBlock; ++j)
      add(p + "up_blocks." + std::to_string(i) + ".attentions." +
              std::to_string(j),
          stage.channels, stage.transformerLayers);
  }
  return all;
}

std::vector<std::pair<Value, Value>>
DiffusionIRBuilder::nextKeysValues(const std::string &attention,
                                   int64_t channels) {
  auto f32 = b.getF32Type();
  int64_t images = cast<RankedTensorType>(keysValues.getType()).getDimSize(0);
  if (nextCross >= pendingCross.size() ||
      pendingCross[nextCross].name != attention ||
      pendingCross[nextCross].channels != channels) {
    declarations.fail(attention + ": not the cross-attention "
                      "@text_keys_values computed next");
    Value zero = tensor::EmptyOp::create(
        b, named(attention), ArrayRef<int64_t>{textTokens, channels}, f32);
    return std::vector<std::pair<Value, Value>>(images, {zero, zero});
  }
  ++nextCross;
  int64_t n = textTokens * channels;
  // Image i's keys (or values) at [i, offset, offset + n) as [T, c].
  auto slice = [&](int64_t image, int64_t offset, const char *what) {
    Location loc = named(attention + what);
    Value flat = tensor::ExtractSliceOp::create(
        b, loc, RankedTensorType::get({n}, f32), keysValues, ValueRange(),
        ValueRange(), ValueRange(), b.getDenseI64ArrayAttr({image, offset}),
        b.getDenseI64ArrayAttr({1, n}), b.getDenseI64ArrayAttr({1, 1}));
    return Value(tensor::ExpandShapeOp::create(
        b, loc, RankedTensorType::get({textTokens, channels}, f32), flat,
        SmallVector<ReassociationIndices>{{0, 1}}));
  };
  std::vector<std::pair<Value, Value>> perImage;
  for (int64_t i = 0; i < images; ++i)
    perImage.push_back({slice(i, keysValuesOffset, " keys"),
                        slice(i, keysValuesOffset + n, " values")});
  keysValuesOffset += 2 * n;
  return perImage;
}

Value DiffusionIRBuilder::transformer(Value x, const std::string &name,
                                      const UNetSpec &spec, int64_t heads,
                                      int64_t layers) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t images = type.getDimSize(0), h = type.getDimSize(1),
          w = type.getDimSize(2), c = type.getDimSize(3);
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
    rows = add(attention(n, images, heads, names("attn1"), false), rows);
    n = declarations.biasedLayerNorm(b, rows, block + ".norm2.weight", c, 1e-5);
    rows = add(attention(n, images, heads, names("attn2"), false,
                         nextKeysValues(block + ".attn2", c)),
               rows);
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
  Value out =
      spec.linearProjection
          ? mapOf(linear(rows, name + ".proj_out.weight", {c}), images, h, w)
          : conv(mapOf(rows, images, h, w), name + ".proj_out", c, 1);
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
    // add_embedding(concat(text_embeds, add_time_proj(time_ids))), one per
    // image (the pooled texts differ; the time ids are shared): [N, T].
    int64_t images = spec.batch;
    Value ids = sinusoids(timeIds, 6, spec.addTimeDim);
    // [6, dim] -> [6·dim] -> one row [1, 6·dim].
    ids = tensor::CollapseShapeOp::create(
        b, named("add_time_proj"),
        RankedTensorType::get({6 * spec.addTimeDim}, b.getF32Type()), ids,
        SmallVector<ReassociationIndices>{{0, 1}});
    ids = tensor::ExpandShapeOp::create(
        b, named("add_time_proj"),
        RankedTensorType::get({1, 6 * spec.addTimeDim}, b.getF32Type()), ids,
        SmallVector<ReassociationIndices>{{0, 1}});
    Value joined = tensor::ConcatOp::create(
        b, named("add_embedding input"), 1,
        ValueRange{textEmbeds, repeatRows(ids, images)});
    Value added = linear(joined, p + "add_embedding.linear_1.weight", {t},
                         ActivationKind::silu);
    added = linear(added, p + "add_embedding.linear_2.weight", {t});
    emb = add(repeatRows(emb, images), added);
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
  // The text's keys and values for every cross-attention, once per
  // prompt: each [T, c] keys then values, flattened end to end.
  pendingCross = crossAttentions(spec);
  textTokens = spec.textTokens;
  int64_t total = 0;
  for (const CrossAttention &cross : pendingCross)
    total += 2 * spec.textTokens * cross.channels;
  int64_t images = spec.batch;
  if (pendingCross.empty())
    declarations.fail("the UNet has no cross-attention to read the text");
  entryPoint(
      module, "text_keys_values",
      {RankedTensorType::get({spec.textTokens, spec.crossAttentionDim}, f32)},
      [&](ValueRange args) -> Value {
        SmallVector<Value> parts;
        for (const CrossAttention &cross : pendingCross)
          for (const char *projection : {".to_k.weight", ".to_v.weight"}) {
            Value rows = declarations.unbiasedLinear(
                b, args[0], cross.name + projection, {cross.channels});
            parts.push_back(tensor::CollapseShapeOp::create(
                b, named(cross.name + projection),
                RankedTensorType::get({spec.textTokens * cross.channels}, f32),
                rows, SmallVector<ReassociationIndices>{{0, 1}}));
          }
        return tensor::ConcatOp::create(b, named("text_keys_values"), 0,
                                        parts);
      });
  SmallVector<Type> inputs = {
      RankedTensorType::get(
          {images, spec.inChannels, spec.height, spec.width}, f32),
      RankedTensorType::get({1}, f32),
      RankedTensorType::get({images, total}, f32)};
  if (spec.textTime) {
    inputs.push_back(RankedTensorType::get({images, spec.pooledDim}, f32));
    inputs.push_back(RankedTensorType::get({6}, f32));
  }
  entryPoint(module, "denoise", inputs, [&](ValueRange args) -> Value {
    const std::string &p = spec.prefix;
    int64_t groups = spec.normGroups;
    double eps = spec.normEpsilon;
    keysValues = args[2];
    keysValuesOffset = 0;
    nextCross = 0;
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
                          stage.heads, stage.transformerLayers);
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
                    last.transformerLayers);
    x = resnet(x, p + "mid_block.resnets.1", last.channels, groups, eps, time);
    for (size_t i = 0; i < n; ++i) {
      const UNetStage &stage = spec.stages[n - 1 - i];
      std::string block = at(p, "up_blocks." + llvm::Twine(i));
      for (int64_t j = 0; j <= spec.layersPerBlock; ++j) {
        Value skip = skips.back();
        skips.pop_back();
        x = tensor::ConcatOp::create(b, named(block + " skip"), 3,
                                     ValueRange{x, skip});
        x = resnet(x, at(block, ".resnets." + llvm::Twine(j)), stage.channels,
                   groups, eps, time);
        if (stage.crossAttention)
          x = transformer(x, at(block, ".attentions." + llvm::Twine(j)), spec,
                          stage.heads, stage.transformerLayers);
      }
      if (i + 1 < n) {
        x = upsample(x, block + ".upsamplers.0");
        x = conv(x, block + ".upsamplers.0.conv", stage.channels, 3);
      }
    }
    x = groupNorm(x, p + "conv_norm_out", groups, eps, /*silu=*/true);
    x = conv(x, p + "conv_out", spec.outChannels, 3);
    if (nextCross != pendingCross.size())
      declarations.fail("@denoise read " + std::to_string(nextCross) +
                        " of @text_keys_values' " +
                        std::to_string(pendingCross.size()) +
                        " cross-attentions");
    keysValues = Value();
    return channelsFirst(x);
  });
}

Value DiffusionIRBuilder::upsample(Value x, const std::string &name) {
  auto type = cast<RankedTensorType>(x.getType());
  return UpsampleNearestOp::create(
      b, named(name),
      featureMap(type.getDimSize(0), 2 * type.getDimSize(1),
                 2 * type.getDimSize(2), type.getDimSize(3)),
      x);
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
  int64_t images = type.getDimSize(0);
  Value normed = groupNorm(x, a + ".group_norm", groups, eps, false);
  Value attended = attention(rowsOf(normed), images, 1, names, true);
  x = add(mapOf(attended, images, type.getDimSize(1), type.getDimSize(2)), x);
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
    Value x = conv(channelsLast(batchOfOne(args[0])), p + "encoder.conv_in",
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
    return onlyImage(channelsFirst(x));
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
    Value x = conv(channelsLast(batchOfOne(args[0])), p + "post_quant_conv",
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
        x = upsample(x, block + ".upsamplers.0");
        x = conv(x, block + ".upsamplers.0.conv", out, 3);
      }
    }
    x = groupNorm(x, p + "decoder.conv_norm_out", groups, eps, /*silu=*/true);
    x = conv(x, p + "decoder.conv_out", spec.outChannels, 3);
    return onlyImage(channelsFirst(x));
  });
}
