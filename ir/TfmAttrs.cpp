//===- TfmAttrs.cpp - checks of what a module says about itself ---------===//
//
// Verifiers of the attributes in TfmAttrs.td and of every `tfm.`-prefixed
// attribute on an op, argument or result: the dialect owns that namespace,
// so an unknown or misplaced one is an error rather than silently ignored.
//
//===----------------------------------------------------------------------===//

#include "ir/DiffusionAttr.h"
#include "ir/ExpandedKeyAttr.h"
#include "ir/StopTokensAttr.h"
#include "ir/TfmOps.h"
#include "ir/TfmSharding.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

LogicalResult
ModelAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                  StringRef family, int64_t vocabSize, int64_t maxContext,
                  int32_t bosToken, int32_t eosToken, bool addBos,
                  StringRef tokenizer, int64_t hiddenSize, int64_t numLayers,
                  int64_t numHeads, int64_t numKVHeads, ArrayAttr labels,
                  ImagePreprocessingAttr image, GenerationAttr generation,
                  AudioPreprocessingAttr audio, WaveformAttr waveform,
                  StringRef chatTemplate) {
  if (family.empty())
    return emitError() << "expected a non-empty model family";
  if (vocabSize < 0 || maxContext <= 0)
    return emitError() << "expected vocab_size >= 0 and max_context > 0, got "
                       << vocabSize << " and " << maxContext;
  for (auto [name, token] : {std::pair<StringRef, int32_t>{"bos", bosToken},
                             {"eos", eosToken}})
    if (token < -1 || (vocabSize > 0 && token >= vocabSize))
      return emitError() << "expected " << name
                         << "_token in [-1, vocab_size = " << vocabSize
                         << "), got " << token;
  if (addBos && bosToken < 0)
    return emitError() << "add_bos needs a bos_token";
  // The runtime gets it as a C string.
  if (size_t nul = chatTemplate.find('\0'); nul != StringRef::npos)
    return emitError() << "expected a chat_template without NUL bytes, found "
                          "one at offset "
                       << nul;
  if (hiddenSize < 0 || numLayers < 0 || numHeads < 0 || numKVHeads < 0)
    return emitError() << "expected non-negative sizes";
  if (labels && !llvm::all_of(labels, llvm::IsaPred<StringAttr>))
    return emitError() << "expected labels to be strings";
  if (waveform && waveform.getBlank() >= 0 &&
      (!labels || waveform.getBlank() >= int64_t(labels.size()) ||
       waveform.getWordDelimiter() >= int64_t(labels.size())))
    return emitError() << "expected a CTC model's labels to hold its blank "
                          "and word delimiter";
  return success();
}

LogicalResult AudioPreprocessingAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, int64_t melBins,
    int64_t samplingRate, int64_t nFft, int64_t hopLength, int64_t samples,
    bool kaldi, int64_t windowLength, int64_t frames, bool normalize,
    FloatAttr mean, FloatAttr std) {
  if (melBins <= 0 || samplingRate <= 0 || nFft < 2 || nFft % 2 != 0 ||
      hopLength <= 0 || samples < hopLength)
    return emitError() << "expected positive mel bins, sampling rate and hop "
                          "length, an even n_fft and at least one hop of "
                          "samples";
  if (kaldi && (windowLength <= 0 || windowLength > nFft || frames <= 0))
    return emitError() << "expected Kaldi filterbanks of a window no longer "
                          "than n_fft and a positive frame count";
  if (normalize && (!mean || !std || std.getValueAsDouble() <= 0))
    return emitError() << "expected a mean and a positive std to normalize "
                          "with";
  return success();
}

LogicalResult WaveformAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                             int64_t samplingRate, int64_t minSamples,
                             int64_t frameSamples, int32_t blank,
                             int32_t wordDelimiter, bool, bool) {
  if (samplingRate <= 0 || minSamples <= 0 || frameSamples <= 0)
    return emitError() << "expected a positive sampling rate, receptive field "
                          "and frame";
  if (blank < -1 || wordDelimiter < -1 ||
      (blank >= 0 && wordDelimiter == blank))
    return emitError() << "expected a blank label (or -1: no CTC head) and a "
                          "word delimiter (or -1) apart from it";
  return success();
}

LogicalResult ImagePreprocessingAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, int64_t resizeHeight,
    int64_t resizeWidth, int64_t shortestEdge, int32_t resample,
    int64_t cropHeight, int64_t cropWidth, FloatAttr rescale, bool normalize,
    DenseF32ArrayAttr mean, DenseF32ArrayAttr std,
    DenseI64ArrayAttr gridPinpoints, int64_t longestEdge, bool splitTiles) {
  if (longestEdge < 0)
    return emitError() << "expected a non-negative longest edge";
  if (longestEdge > 0 && (resizeHeight <= 0 || resizeHeight != resizeWidth ||
                          cropHeight || gridPinpoints))
    return emitError() << "expected a square resize, no crop and no grid "
                          "pinpoints with a longest edge";
  if (splitTiles && !longestEdge)
    return emitError() << "expected a longest edge to split tiles by";
  if (resizeHeight < 0 || resizeWidth < 0 || shortestEdge < 0 ||
      cropHeight < 0 || cropWidth < 0)
    return emitError() << "expected non-negative sizes";
  if ((resizeHeight == 0) != (resizeWidth == 0) ||
      (cropHeight == 0) != (cropWidth == 0))
    return emitError() << "expected a resize and a crop of two sizes, or none";
  if (resample < 0 || resample > 5)
    return emitError() << "expected resample in [0, 5] (Pillow's filters), "
                          "got "
                       << resample;
  if (!rescale || !rescale.getType().isF64() ||
      !rescale.getValue().isFinite() || rescale.getValue().isNegative())
    return emitError() << "expected a finite, non-negative f64 rescale";
  if (!mean || !std || mean.size() != 3 || std.size() != 3)
    return emitError() << "expected three means and three deviations (RGB)";
  if (llvm::any_of(std.asArrayRef(), [](float s) { return !(s > 0); }))
    return emitError() << "expected positive deviations";
  if (!gridPinpoints)
    return success();
  llvm::ArrayRef<int64_t> sizes = gridPinpoints.asArrayRef();
  if (sizes.empty() || sizes.size() % 2)
    return emitError() << "expected grid pinpoints as height, width pairs";
  if (cropHeight <= 0 || cropHeight != cropWidth || shortestEdge <= 0)
    return emitError() << "expected a square crop and a shortest edge with "
                          "grid pinpoints";
  if (llvm::any_of(
          sizes, [&](int64_t size) { return size <= 0 || size % cropHeight; }))
    return emitError() << "expected grid pinpoints that are multiples of "
                          "the crop, "
                       << cropHeight;
  return success();
}

LogicalResult CacheAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                CacheKind kind, int64_t window) {
  if (window < 0)
    return emitError() << "expected a non-negative cache window, got "
                       << window;
  if (window > 0 && kind != CacheKind::self_attention &&
      kind != CacheKind::self_attention_rings)
    return emitError()
           << "only a self-attention cache and its rings have a window";
  return success();
}

//===----------------------------------------------------------------------===//
// WeightDeclOp, WeightOp
//===----------------------------------------------------------------------===//

LogicalResult
BlockQuantAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                       WeightFormat format) {
  if (!isBlockFormat(format))
    return emitError() << "expected a format kept in blocks, got "
                       << formatName(format);
  return success();
}

LogicalResult mlir::tfm::verifyWeightStorage(Operation *op, StringRef what,
                                             RankedTensorType type) {
  Type element = type.getElementType();
  Attribute encoding = type.getEncoding();
  if (isa<FloatType>(element)) {
    if (encoding)
      return op->emitOpError() << "expected " << what
                               << " of floats to have no encoding, got "
                               << encoding;
    return success();
  }
  auto quant = dyn_cast_or_null<BlockQuantAttr>(encoding);
  if (!quant)
    return op->emitOpError() << "expected " << what << " of " << element
                             << " codes to have a #tfm.block_quant encoding";
  if (element.getIntOrFloatBitWidth() != quant.codeBits())
    return op->emitOpError()
           << "expected " << what << " in " << formatName(quant.getFormat())
           << " to hold i" << quant.codeBits() << " codes, got " << element;
  if (type.getRank() != 2)
    return op->emitOpError() << "expected " << what
                             << " in blocks to be a matrix, got rank "
                             << type.getRank();
  int64_t cols = type.getDimSize(1);
  WeightFormat format = quant.getFormat();
  int64_t rowMultiple = checkpointBlockElements(format);
  if (isCopiedFromCheckpoint(format) && !ShapedType::isDynamic(cols) &&
      cols % rowMultiple != 0)
    return op->emitOpError()
           << "expected " << what << " in " << formatName(format)
           << " to have rows of whole "
           << (isKQuant(format) ? "super-blocks" : "blocks")
           << " (a multiple of " << rowMultiple << " elements), got " << cols;
  return success();
}

LogicalResult WeightDeclOp::verify() {
  if (getSymName().empty())
    return emitOpError("expected a non-empty weight name");
  if (!getTensorType().hasStaticShape())
    return emitOpError() << "expected weight '" << getSymName()
                         << "' to have a static shape, got " << getType();
  return verifyWeightStorage(*this, "weight '" + getSymName().str() + "'",
                             getTensorType());
}

/// Whether `type` is one rank's part of the weight `decl` declares whole
/// (tfm.split_over_ranks; shard-partition reads the part before
/// tfm-localize-sharded-weights declares it).
static bool isRankPart(WeightDeclOp decl, Type type) {
  auto split = decl->getAttrOfType<DenseI64ArrayAttr>(kSplitOverRanksAttrName);
  auto whole = dyn_cast<RankedTensorType>(decl.getType());
  auto part = dyn_cast<RankedTensorType>(type);
  if (!split || !whole || !part || whole.getRank() != part.getRank() ||
      whole.getElementType() != part.getElementType())
    return false;
  for (int64_t d = 0; d < whole.getRank(); ++d)
    if (part.getDimSize(d) != (d == split[0] ? whole.getDimSize(d) / split[1]
                                             : whole.getDimSize(d)))
      return false;
  return true;
}

LogicalResult
WeightOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto decl =
      symbolTable.lookupNearestSymbolFrom<WeightDeclOp>(*this, getNameAttr());
  if (!decl)
    return emitOpError() << "refers to '" << getName()
                         << "', which no tfm.weight_decl declares";
  if (decl.getType() != getType() && !isRankPart(decl, getType()))
    return emitOpError() << "reads weight '" << getName() << "' as "
                         << getType() << ", but it is declared as "
                         << decl.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Dialect attributes
//===----------------------------------------------------------------------===//

namespace {

/// Codegen's records on the module (WeightLayout.h) and the frontend's
/// checkpoint dtype on weight declarations: accepted there.
LogicalResult verifyRecord(Operation *op, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  bool onModule = isa<ModuleOp>(op);
  if (name == "tfm.weight_layout" || name == "tfm.weight_panels" ||
      name == "tfm.weight_formats" || name == kRankWeightsAttrName ||
      name == kRankWeightSourcesAttrName) {
    if (onModule && isa<DictionaryAttr>(attr.getValue()))
      return success();
  } else if (name == "tfm.weight_bytes" || name == "tfm.decode_weight_bytes" ||
             name == kPipelineStagesAttrName) {
    if (onModule && isa<IntegerAttr>(attr.getValue()))
      return success();
  } else if (name == kSplitOverRanksAttrName) {
    auto split = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (isa<WeightDeclOp>(op) && split && split.size() == 2 && split[1] > 1)
      return success();
  } else if (name == kPartialOverRanksAttrName) {
    auto ranks = dyn_cast<IntegerAttr>(attr.getValue());
    if (isa<WeightDeclOp>(op) && ranks && ranks.getInt() > 1)
      return success();
  } else if (name == kStopTokensAttrName) {
    auto tokens = dyn_cast<DenseI32ArrayAttr>(attr.getValue());
    if (onModule && tokens &&
        llvm::all_of(tokens.asArrayRef(), [](int32_t t) { return t >= 0; }))
      return success();
  } else if (name == kLogitScaleAttrName) {
    auto scale = dyn_cast<FloatAttr>(attr.getValue());
    if (onModule && scale && scale.getValueAsDouble() > 0)
      return success();
  } else if (name == kLogitBiasAttrName) {
    auto bias = dyn_cast<FloatAttr>(attr.getValue());
    if (onModule && bias && std::isfinite(bias.getValueAsDouble()))
      return success();
  } else if (name == kImageTokenAttrName || name == kTextPadTokenAttrName) {
    auto token = dyn_cast<IntegerAttr>(attr.getValue());
    if (onModule && token && token.getInt() >= 0)
      return success();
  } else if (name == kImageTileTokensAttrName) {
    auto tokens = dyn_cast<DenseI64ArrayAttr>(attr.getValue());
    if (onModule && tokens && tokens.size() == 2 &&
        llvm::all_of(tokens.asArrayRef(), [](int64_t t) { return t >= 0; }))
      return success();
  } else if (name == kImageRowsBidirectionalAttrName) {
    if (onModule && isa<UnitAttr>(attr.getValue()))
      return success();
  } else if (name == kDiffusionAttrName) {
    auto fields = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!onModule || !fields)
      return op->emitError() << "'" << name
                             << "' belongs on the module, as a dictionary";
    for (llvm::StringRef key : kDiffusionIntegerFields)
      if (!fields.getAs<IntegerAttr>(key))
        return op->emitError() << "'" << name << "' needs the integer '"
                               << key << "'";
    auto scale = fields.getAs<FloatAttr>("scaling_factor");
    if (!scale || !(scale.getValueAsDouble() > 0))
      return op->emitError() << "'" << name
                             << "' needs a positive 'scaling_factor'";
    if (!fields.getAs<StringAttr>("scheduler_config"))
      return op->emitError() << "'" << name
                             << "' needs the string 'scheduler_config'";
    return success();
  } else if (name == kLoraAttrName) {
    auto fields = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!onModule || !fields)
      return op->emitError()
             << "'" << name << "' belongs on the module, as a dictionary";
    for (llvm::StringRef key : {"slots", "rank"}) {
      auto value = fields.getAs<IntegerAttr>(key);
      if (!value || value.getInt() < 1)
        return op->emitError()
               << "'" << name << "' needs a positive '" << key << "'";
    }
    auto targets = fields.getAs<ArrayAttr>("targets");
    auto features = fields.getAs<DenseI64ArrayAttr>("features");
    if (!targets || !llvm::all_of(targets, llvm::IsaPred<StringAttr>) ||
        !features || features.size() != 2 * int64_t(targets.size()) ||
        !llvm::all_of(features.asArrayRef(), [](int64_t n) { return n > 0; }))
      return op->emitError()
             << "'" << name
             << "' needs 'targets' (weight names) and 'features' (a "
                "positive in and out for each)";
    return success();
  } else if (name == kCheckpointDtypeAttrName) {
    if (isa<WeightDeclOp>(op) && isa<StringAttr>(attr.getValue()))
      return success();
  } else if (name == kExpandedKeyAttrName) {
    if (isa<AttentionOp>(op) && isa<FlatSymbolRefAttr>(attr.getValue()))
      return success();
  } else if (name == kExpertShareAttrName) {
    auto share = dyn_cast<FloatAttr>(attr.getValue());
    double value = share ? share.getValueAsDouble() : 0;
    if (isa<scf::IfOp>(op) && value > 0 && value <= 1)
      return success();
  } else {
    return op->emitError() << "unknown tfm attribute '" << name << "'";
  }
  return op->emitError() << "'" << name << "' is not valid here";
}

} // namespace

LogicalResult TfmDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  if (attr.getName() != "tfm.model")
    return verifyRecord(op, attr);
  if (!isa<ModuleOp>(op))
    return op->emitError("'tfm.model' belongs on the module");
  if (!isa<ModelAttr>(attr.getValue()))
    return op->emitError("'tfm.model' must be a #tfm.model, got ")
           << attr.getValue();
  return success();
}

LogicalResult TfmDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                   unsigned index,
                                                   NamedAttribute attr) {
  // Lowered code's mark of an input in the caller's memory (codegen/linalg
  // sets it for the GPU target, whose placement removes it).
  if (attr.getName() == "tfm.host_input") {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError("'tfm.host_input' is a unit attribute");
    return success();
  }
  auto func = dyn_cast<func::FuncOp>(op);
  if (!func)
    return op->emitError() << "'" << attr.getName().getValue()
                           << "' belongs on a function argument";
  Type type = func.getArgumentTypes()[index];
  auto tensor = dyn_cast<RankedTensorType>(type);
  auto fail = [&](const Twine &what) {
    return op->emitError() << "argument " << index << " of @"
                           << func.getSymName() << ": " << what << ", got "
                           << type;
  };
  if (attr.getName() == "tfm.input") {
    auto kind = dyn_cast<InputRoleAttr>(attr.getValue());
    if (!kind)
      return fail("'tfm.input' must be a #tfm.input");
    switch (kind.getValue()) {
    case InputRole::token_ids:
    case InputRole::token_type_ids:
    case InputRole::decoder_token_ids:
      if (!tensor || tensor.getRank() != 1 ||
          !tensor.getElementType().isSignlessInteger(32))
        return fail("token ids are a tensor<?xi32>");
      return success();
    case InputRole::global_attention:
      if (!tensor || tensor.getRank() != 1 ||
          !tensor.getElementType().isSignlessInteger(32))
        return fail("a global attention mask is a tensor<?xi32>");
      return success();
    case InputRole::sequence_lengths:
    case InputRole::positions:
    case InputRole::cache_sequences:
    case InputRole::chunk_lengths:
      if (!tensor || tensor.getRank() != 1 ||
          !tensor.getElementType().isSignlessInteger(32))
        return fail("sequence lengths, positions, cache sequences and chunk "
                    "lengths are a tensor<?xi32>");
      return success();
    case InputRole::features:
      if (!tensor || !isa<FloatType>(tensor.getElementType()))
        return fail("features are a float tensor");
      return success();
    case InputRole::start_position:
    case InputRole::cache_slot:
    case InputRole::encoded_length:
      if (!type.isIndex())
        return fail("a position or slot is an index");
      return success();
    }
  }
  if (attr.getName() == "tfm.cache") {
    auto cache = dyn_cast<CacheAttr>(attr.getValue());
    if (!cache)
      return fail("'tfm.cache' must be a #tfm.cache");
    if (cache.getKind() == CacheKind::recurrent_state) {
      // [elements] a sequence, or [sequences, elements] batched.
      if (!tensor || !tensor.getElementType().isF32() || tensor.getRank() < 1 ||
          tensor.getRank() > 2 ||
          ShapedType::isDynamic(tensor.getShape().back()))
        return fail("a recurrent state cache is f32 [elements], or "
                    "[sequences, elements] batched");
      return success();
    }
    // One sequence's cache, or a batched cache of any number of them
    // (@decode_batch).
    bool batched = tensor && tensor.getRank() == 6;
    ArrayRef<int64_t> sequence =
        tensor ? tensor.getShape().drop_front(batched ? 1 : 0)
               : ArrayRef<int64_t>();
    // i8: an int8 cache's rows (codes and scale, tfm.quantize_rows).
    if (!tensor || ShapedType::isDynamicShape(sequence) ||
        !(isa<FloatType>(tensor.getElementType()) ||
          tensor.getElementType().isInteger(8)))
      return fail("a cache is a float or i8 tensor of static shape (but for "
                  "a batched cache's sequences)");
    // One plane a layer: a latent cache's keys, which are its values too.
    if (sequence.size() != 5 || (sequence[1] != 2 && sequence[1] != 1))
      return fail("a key/value cache is [layers, 2, capacity, kv_heads, "
                  "head_dim] (1 plane a layer for a latent cache), or "
                  "[sequences, layers, 2, capacity, kv_heads, head_dim]");
    // Rings alike: each as long as the cache's rows (a shorter one would
    // be at the shortest window, not at the rows).
    if (cache.getKind() == CacheKind::self_attention_rings &&
        cache.getWindow() > 0 && cache.getWindow() != sequence[2])
      return fail("rings' window " + llvm::Twine(cache.getWindow()) +
                  " is not their " + llvm::Twine(sequence[2]) + " rows");
    return success();
  }
  return op->emitError() << "unknown tfm argument attribute '"
                         << attr.getName().getValue() << "'";
}

LogicalResult TfmDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                      unsigned index,
                                                      NamedAttribute attr) {
  if (attr.getName() != "tfm.output")
    return op->emitError() << "unknown tfm result attribute '"
                           << attr.getName().getValue() << "'";
  if (!isa<OutputRoleAttr>(attr.getValue()))
    return op->emitError() << "result " << index
                           << ": 'tfm.output' must be a #tfm.output";
  return success();
}
