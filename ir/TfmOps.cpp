//===- TfmOps.cpp - tfm op verifiers ------------------------------------===//
//
// Shape and attribute checks of the tfm ops. Every message names the operand
// and the numbers involved; test/ir/invalid.mlir has a case for each.
// Dynamic dimensions are compatible with anything: the runtime checks the
// actual sequence lengths.
//
//===----------------------------------------------------------------------===//

#include "ir/TfmOps.h"

#include <array>
#include <cmath>

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

bool dimsCompatible(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

std::string dimToString(int64_t d) {
  return ShapedType::isDynamic(d) ? "?" : std::to_string(d);
}

/// Product of the dims after the leading (sequence) one, or dynamic if any
/// of them is.
int64_t featureCount(RankedTensorType type) {
  int64_t product = 1;
  for (int64_t d : type.getShape().drop_front()) {
    if (ShapedType::isDynamic(d))
      return ShapedType::kDynamic;
    product *= d;
  }
  return product;
}

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

LogicalResult expectRank(Operation *op, StringRef what, Value v,
                         int64_t rank) {
  int64_t actual = tensorType(v).getRank();
  if (actual != rank)
    return op->emitOpError() << "expected " << what << " to be rank " << rank
                             << ", got rank " << actual;
  return success();
}

LogicalResult expectElementType(Operation *op, StringRef what, Value v,
                                Type expected) {
  Type actual = tensorType(v).getElementType();
  if (actual != expected)
    return op->emitOpError() << "expected " << what << " element type "
                             << actual << " to match " << expected;
  return success();
}

/// Checks `dim` of `what` against `expected`, an extent named `expectedWhat`.
LogicalResult expectDim(Operation *op, StringRef what, int64_t dim,
                        StringRef expectedWhat, int64_t expected) {
  if (!dimsCompatible(dim, expected))
    return op->emitOpError()
           << "expected " << what << " (" << dimToString(dim) << ") to match "
           << expectedWhat << " (" << dimToString(expected) << ")";
  return success();
}

/// Attention's head counts: static in query and key, and the KV heads
/// dividing the query heads (grouped-query attention's groups).
LogicalResult expectHeadGroups(Operation *op, int64_t heads, int64_t kvHeads) {
  if (ShapedType::isDynamic(heads) || ShapedType::isDynamic(kvHeads))
    return op->emitOpError("expected static head counts in query and key");
  if (kvHeads == 0 || heads % kvHeads != 0)
    return op->emitOpError() << "expected kv_heads (" << kvHeads
                             << ") to divide heads (" << heads << ")";
  return success();
}

/// Shared check of a per-feature vector (norm scale/shift): rank 1 and the
/// input's last dimension long.
LogicalResult verifyFeatureVector(Operation *op, StringRef what, Value v,
                                  int64_t features, Type elementType) {
  if (failed(expectRank(op, what, v, 1)) ||
      failed(expectElementType(op, what, v, elementType)))
    return failure();
  return expectDim(op, (what + " size").str(), tensorType(v).getDimSize(0),
                   "input features", features);
}

/// `inputName` names the normalized operand in messages: "input", or "lhs"
/// for the fused add + norm ops (whose operands and results share one type).
/// `eachHead`: a [seq, heads, d] input too, each head normed alone.
LogicalResult verifyNorm(Operation *op, Value input, Value gamma, Value beta,
                         Value result, APFloat epsilon,
                         llvm::StringRef inputName = "input",
                         bool eachHead = false) {
  RankedTensorType inputType = tensorType(input);
  int64_t rank = inputType.getRank();
  if (eachHead && rank != 2 && rank != 3)
    return op->emitOpError() << "expected " << inputName
                             << " of rank 2 ([seq, d]) or 3 ([seq, heads, "
                                "d]), got rank "
                             << rank;
  if (!eachHead && failed(expectRank(op, inputName, input, 2)))
    return failure();
  if (inputType != result.getType())
    return op->emitOpError() << "expected result type " << result.getType()
                             << " to match input type " << inputType;
  int64_t features = inputType.getDimSize(rank - 1);
  Type elementType = inputType.getElementType();
  if (failed(verifyFeatureVector(op, "gamma", gamma, features, elementType)))
    return failure();
  if (beta &&
      failed(verifyFeatureVector(op, "beta", beta, features, elementType)))
    return failure();
  if (epsilon.isNegative() || epsilon.isNaN())
    return op->emitOpError() << "expected a non-negative epsilon, got "
                             << epsilon.convertToDouble();
  return success();
}

} // namespace

//===----------------------------------------------------------------------===//
// PositionIdsOp
//===----------------------------------------------------------------------===//

LogicalResult PositionIdsOp::verify() {
  if (failed(expectRank(*this, "tokens", getTokens(), 1)) ||
      failed(expectRank(*this, "result", getResult(), 1)))
    return failure();
  if (getPaddingId() && getOffset())
    return emitOpError("takes an offset or a padding_id, not both");
  if (getLengths() && getOffset())
    return emitOpError("takes an offset or sequence lengths, not both");
  if (getLengths() && failed(expectRank(*this, "lengths", getLengths(), 1)))
    return failure();
  return expectDim(*this, "result length", getType().getDimSize(0),
                   "tokens length", getTokens().getType().getDimSize(0));
}

//===----------------------------------------------------------------------===//
// ClampOp
//===----------------------------------------------------------------------===//

/// The rows a pipeline op moves between ranks: [rows, features] of f32,
/// what the runtime's transfers take.
static LogicalResult verifyStageRows(Operation *op, Type type) {
  auto tensor = cast<RankedTensorType>(type);
  if (tensor.getRank() != 2 || !tensor.getElementType().isF32())
    return op->emitOpError("moves [rows, features] f32 rows between "
                           "pipeline stages, not ")
           << type;
  return success();
}

LogicalResult PipelineReceiveOp::verify() {
  return verifyStageRows(*this, getType());
}
LogicalResult PipelineSendOp::verify() {
  return verifyStageRows(*this, getInput().getType());
}
LogicalResult PipelineCollectOp::verify() {
  return verifyStageRows(*this, getType());
}

LogicalResult ClampOp::verify() {
  double min = getMin().convertToDouble(), max = getMax().convertToDouble();
  if (!(min <= max))
    return emitOpError("expected min <= max, got ") << min << " and " << max;
  return success();
}

LogicalResult ScaleOp::verify() {
  if (!getFactor().isFinite())
    return emitOpError("expected a finite factor, got ")
           << getFactor().convertToDouble();
  return success();
}

LogicalResult SoftcapOp::verify() {
  if (!getCap().isFiniteNonZero() || getCap().isNegative())
    return emitOpError("expected a finite, positive cap, got ")
           << getCap().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// PatchesOp
//===----------------------------------------------------------------------===//

LogicalResult PatchesOp::verify() {
  if (failed(expectRank(*this, "input", getInput(), 3)) ||
      failed(expectRank(*this, "result", getResult(), 2)))
    return failure();
  ArrayRef<int64_t> image = getInput().getType().getShape();
  int64_t patch = getPatch();
  if (ShapedType::isDynamicShape(image))
    return emitOpError("needs an image of static size, got ")
           << getInput().getType();
  int64_t patches = 0;
  if (std::optional<ArrayRef<int64_t>> strides = getStrides()) {
    if (strides->size() != 2 || (*strides)[0] <= 0 || (*strides)[1] <= 0)
      return emitOpError("expected two positive strides");
    if (patch <= 0 || image[1] < patch || image[2] < patch)
      return emitOpError("patch ")
             << patch << " does not fit the image's " << image[1] << "x"
             << image[2];
    patches = ((image[1] - patch) / (*strides)[0] + 1) *
              ((image[2] - patch) / (*strides)[1] + 1);
  } else {
    if (patch <= 0 || image[1] % patch || image[2] % patch)
      return emitOpError("patch ")
             << patch << " does not divide the image's " << image[1] << "x"
             << image[2];
    patches = (image[1] / patch) * (image[2] / patch);
  }
  if (failed(expectDim(*this, "result rows", getType().getDimSize(0),
                       "patches", patches)))
    return failure();
  return expectDim(*this, "result width", getType().getDimSize(1),
                   "patch size", image[0] * patch * patch);
}

LogicalResult GatherRowsOp::verify() {
  if (failed(expectRank(*this, "input", getInput(), 2)) ||
      failed(expectRank(*this, "result", getResult(), 2)))
    return failure();
  RankedTensorType input = getInput().getType(), result = getType();
  if (input.isDynamicDim(0) || result.isDynamicDim(0))
    return emitOpError("expected static row counts");
  if (failed(expectDim(*this, "result rows", result.getDimSize(0),
                       "rows listed", int64_t(getRows().size()))) ||
      failed(expectDim(*this, "result width", result.getDimSize(1),
                       "input width", input.getDimSize(1))))
    return failure();
  for (int64_t row : getRows())
    if (row < 0 || row >= input.getDimSize(0))
      return emitOpError() << "row " << row << " is outside the input's "
                           << input.getDimSize(0);
  return success();
}

int64_t WindowsOp::windowCount(int64_t length) {
  if (ShapedType::isDynamic(length))
    return length;
  return (length + 2 * int64_t(getPadding()) - int64_t(getKernel())) /
             int64_t(getStride()) +
         1;
}

LogicalResult WindowsOp::verify() {
  if (failed(expectRank(*this, "input", getInput(), 2)) ||
      failed(expectRank(*this, "result", getResult(), 2)) ||
      failed(expectElementType(*this, "result", getResult(),
                               getInput().getType().getElementType())))
    return failure();
  // I64Attr reads back unsigned: a negative attribute is a huge value.
  auto kernel = int64_t(getKernel()), stride = int64_t(getStride()),
       padding = int64_t(getPadding());
  if (kernel <= 0 || stride <= 0 || padding < 0 || padding >= kernel)
    return emitOpError() << "expected a positive kernel and stride and a "
                            "padding below the kernel, got kernel "
                         << kernel << ", stride " << stride << ", padding "
                         << padding;
  ArrayRef<int64_t> shape = getInput().getType().getShape();
  int64_t length = shape[getChannelsFirst() ? 1 : 0];
  int64_t channels = shape[getChannelsFirst() ? 0 : 1];
  if (ShapedType::isDynamic(channels))
    return emitOpError("expected a static channel count");
  if (!ShapedType::isDynamic(length) && length + 2 * padding < kernel)
    return emitOpError() << "expected at least one window in " << length
                         << " positions";
  if (failed(expectDim(*this, "result rows", getType().getDimSize(0),
                       "windows", windowCount(length))))
    return failure();
  return expectDim(*this, "result width", getType().getDimSize(1),
                   "channels * kernel", channels * getKernel());
}

//===----------------------------------------------------------------------===//
// TokenRowOp
//===----------------------------------------------------------------------===//

LogicalResult TokenRowOp::verify() {
  if (failed(expectRank(*this, "input", getInput(), 2)) ||
      failed(expectRank(*this, "tokens", getTokens(), 1)) ||
      failed(expectRank(*this, "result", getResult(), 1)) ||
      failed(expectDim(*this, "tokens length",
                       getTokens().getType().getDimSize(0), "input rows",
                       getInput().getType().getDimSize(0))))
    return failure();
  return expectDim(*this, "result width", getType().getDimSize(0),
                   "input width", getInput().getType().getDimSize(1));
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult PoolOp::verify() {
  // Packed sequences pool to one row each.
  int64_t rank = getLengths() ? 2 : 1;
  if (failed(expectRank(*this, "input", getInput(), 2)) ||
      failed(expectRank(*this, "result", getResult(), rank)))
    return failure();
  if (getLengths() && failed(expectRank(*this, "lengths", getLengths(), 1)))
    return failure();
  return expectDim(*this, "result width", getType().getDimSize(rank - 1),
                   "input width", getInput().getType().getDimSize(1));
}

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  if (failed(expectRank(*this, "table", getTable(), 2)) ||
      failed(expectRank(*this, "ids", getIds(), 1)) ||
      failed(expectRank(*this, "result", getResult(), 2)) ||
      failed(expectElementType(*this, "result", getResult(),
                               getTable().getType().getElementType())))
    return failure();
  RankedTensorType resultType = getType();
  if (failed(expectDim(*this, "result rows", resultType.getDimSize(0),
                       "ids length", getIds().getType().getDimSize(0))))
    return failure();
  return expectDim(*this, "result width", resultType.getDimSize(1),
                   "table width", getTable().getType().getDimSize(1));
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

int64_t LinearOp::getInFeatures() {
  return getWeight().getType().getDimSize(1);
}
int64_t LinearOp::getOutFeatures() {
  int64_t rows = getWeight().getType().getDimSize(0);
  return getGated() ? rows / 2 : rows;
}

LogicalResult LinearOp::verify() {
  RankedTensorType inputType = getInput().getType();
  RankedTensorType resultType = getType();
  Type elementType = inputType.getElementType();
  if (failed(expectRank(*this, "weight", getWeight(), 2)) ||
      failed(expectElementType(*this, "weight", getWeight(), elementType)) ||
      failed(expectElementType(*this, "result", getResult(), elementType)))
    return failure();
  if (getGated()) {
    if (!getActivation())
      return emitOpError("expected an activation with 'gated'");
    if (getBias())
      return emitOpError("expected no bias with 'gated'");
    if (getWeight().getType().getDimSize(0) % 2 != 0)
      return emitOpError() << "expected an even number of weight rows with "
                              "'gated' (gate, then up), got "
                           << getWeight().getType().getDimSize(0);
  }
  for (auto [what, type] : {std::pair<StringRef, RankedTensorType>{
                                "input", inputType},
                            {"result", resultType}}) {
    if (type.getRank() != 2 && type.getRank() != 3)
      return emitOpError() << "expected " << what
                           << " to be rank 2 [seq, features] or rank 3 "
                              "[seq, heads, head_dim], got rank "
                           << type.getRank();
  }
  if (failed(expectDim(*this, "input features", featureCount(inputType),
                       "weight in-features", getInFeatures())) ||
      failed(expectDim(*this, "result features", featureCount(resultType),
                       "weight out-features", getOutFeatures())) ||
      failed(expectDim(*this, "result sequence length",
                       resultType.getDimSize(0), "input sequence length",
                       inputType.getDimSize(0))))
    return failure();
  if (Value bias = getBias()) {
    if (failed(expectRank(*this, "bias", bias, 1)) ||
        failed(expectElementType(*this, "bias", bias, elementType)) ||
        failed(expectDim(*this, "bias size", tensorType(bias).getDimSize(0),
                         "weight out-features", getOutFeatures())))
      return failure();
  }
  return success();
}

LogicalResult HeadLinearOp::verify() {
  if (failed(expectRank(*this, "input", getInput(), 3)) ||
      failed(expectRank(*this, "weight", getWeight(), 2)) ||
      failed(expectRank(*this, "result", getResult(), 3)))
    return failure();
  Type elementType = getInput().getType().getElementType();
  if (failed(expectElementType(*this, "weight", getWeight(), elementType)) ||
      failed(expectElementType(*this, "result", getResult(), elementType)))
    return failure();
  ArrayRef<int64_t> x = getInput().getType().getShape();
  ArrayRef<int64_t> w = getWeight().getType().getShape();
  ArrayRef<int64_t> y = getType().getShape();
  if (failed(expectDim(*this, "result sequence length", y[0],
                       "input sequence length", x[0])) ||
      failed(expectDim(*this, "result heads", y[1], "input heads", x[1])) ||
      failed(expectDim(*this, "weight columns", w[1], "input width", x[2])))
    return failure();
  if (ShapedType::isDynamic(x[1]) || ShapedType::isDynamic(y[2]))
    return emitOpError("expected static heads and result width");
  return expectDim(*this, "weight rows", w[0], "heads times result width",
                   x[1] * y[2]);
}

LogicalResult LoraOp::verify() {
  RankedTensorType inputType = getInput().getType();
  RankedTensorType projectedType = getProjected().getType();
  for (auto [what, type] :
       {std::pair<StringRef, RankedTensorType>{"input", inputType},
        {"projected", projectedType}}) {
    if (type.getRank() != 2 && type.getRank() != 3)
      return emitOpError() << "expected " << what
                           << " to be rank 2 [seq, features] or rank 3 "
                              "[seq, heads, head_dim], got rank "
                           << type.getRank();
    if (!type.getElementType().isF32())
      return emitOpError() << "expected " << what << " of f32, got "
                           << type.getElementType();
  }
  // I64Attr reads back unsigned.
  auto target = static_cast<int64_t>(getTarget());
  if (target < 0)
    return emitOpError() << "expected a target index >= 0, got " << target;
  return expectDim(*this, "projected sequence length",
                   projectedType.getDimSize(0), "input sequence length",
                   inputType.getDimSize(0));
}

LogicalResult ConcatOp::verify() {
  if (getInputs().size() < 2)
    return emitOpError() << "expected at least 2 inputs, got "
                         << getInputs().size();
  RankedTensorType resultType = getType();
  // Weights stored in blocks join as they are (tfm-quantize-weights).
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    Attribute encoding = cast<RankedTensorType>(input.getType()).getEncoding();
    if (encoding != resultType.getEncoding())
      return emitOpError() << "expected input " << index << "'s encoding ("
                           << encoding << ") to be the result's ("
                           << resultType.getEncoding() << ")";
  }
  int64_t rows = 0;
  for (auto [index, input] : llvm::enumerate(getInputs())) {
    auto type = cast<RankedTensorType>(input.getType());
    std::string what = "input " + std::to_string(index);
    if (failed(expectRank(*this, what, input, resultType.getRank())) ||
        failed(expectElementType(*this, what, input,
                                 resultType.getElementType())))
      return failure();
    for (int64_t dim = 1; dim < type.getRank(); ++dim)
      if (failed(expectDim(*this, what + " dimension " + std::to_string(dim),
                           type.getDimSize(dim),
                           "result dimension " + std::to_string(dim),
                           resultType.getDimSize(dim))))
        return failure();
    if (type.isDynamicDim(0) || rows == ShapedType::kDynamic)
      rows = ShapedType::kDynamic;
    else
      rows += type.getDimSize(0);
  }
  return expectDim(*this, "result rows", resultType.getDimSize(0),
                   "the inputs' rows together", rows);
}

//===----------------------------------------------------------------------===//
// DequantizeOp
//===----------------------------------------------------------------------===//

std::optional<WeightFormat> DequantizeOp::getBlockFormat() {
  if (auto quant = dyn_cast_or_null<BlockQuantAttr>(
          getInput().getType().getEncoding()))
    return quant.getFormat();
  return std::nullopt;
}

LogicalResult DequantizeOp::verify() {
  RankedTensorType input = getInput().getType();
  if (input.getElementType().isF32())
    return emitOpError("expected the input to be stored narrower than f32");
  if (failed(verifyWeightStorage(*this, "the input", input)) ||
      failed(expectElementType(*this, "result", getResult(),
                               Float32Type::get(getContext()))))
    return failure();
  if (input.getShape() != getType().getShape())
    return emitOpError() << "expected the result's shape to be the input's, "
                         << "got " << getType() << " for " << input;
  return success();
}

//===----------------------------------------------------------------------===//
// Norms
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::verify() {
  return verifyNorm(*this, getInput(), getGamma(), getBeta(), getResult(),
                    getEpsilon());
}

LogicalResult ChannelNormOp::verify() {
  // The scale and the shift come together (GroupNorm's affine pair) or not
  // at all (the waveform's normalization).
  if (getBeta() && !getGamma())
    return emitOpError("expected gamma with beta");
  if (!getGamma()) {
    if (failed(expectRank(*this, "input", getInput(), 2)))
      return failure();
    if (getInput().getType() != getResult().getType())
      return emitOpError() << "expected result type " << getResult().getType()
                           << " to match input type " << getInput().getType();
    if (getEpsilon().isNegative() || getEpsilon().isNaN())
      return emitOpError() << "expected a non-negative epsilon";
    return success();
  }
  return verifyNorm(*this, getInput(), getGamma(), getBeta(), getResult(),
                    getEpsilon());
}

LogicalResult RmsNormOp::verify() {
  // [seq, heads, head_dim] too: each head normed alone (Qwen3's Q and K).
  return verifyNorm(*this, getInput(), getGamma(), Value(), getResult(),
                    getEpsilon(), "input", /*eachHead=*/true);
}

LogicalResult AddLayerNormOp::verify() {
  return verifyNorm(*this, getLhs(), getGamma(), getBeta(), getResult(),
                    getEpsilon(), "lhs");
}

LogicalResult AddRmsNormOp::verify() {
  return verifyNorm(*this, getLhs(), getGamma(), Value(), getResult(),
                    getEpsilon(), "lhs");
}

//===----------------------------------------------------------------------===//
// Positions
//===----------------------------------------------------------------------===//

LogicalResult WindowAttentionOp::verify() {
  for (auto [name, value] : {std::pair<StringRef, Value>{"query", getQuery()},
                             {"key", getKey()},
                             {"value", getValue()}}) {
    if (failed(expectRank(*this, name, value, 3)))
      return failure();
    if (value.getType() != getQuery().getType())
      return emitOpError() << "expected " << name << " of the query's type "
                           << getQuery().getType();
  }
  if (getType() != getQuery().getType())
    return emitOpError() << "expected the result of the query's type";
  if (failed(expectRank(*this, "bias", getBias(), 4)))
    return failure();
  ArrayRef<int64_t> q = getQuery().getType().getShape();
  ArrayRef<int64_t> bias = getBias().getType().getShape();
  int64_t window = getWindow();
  if (ShapedType::isDynamicShape(q) || ShapedType::isDynamicShape(bias))
    return emitOpError("expected static shapes");
  if (window <= 0 || q[0] % window)
    return emitOpError() << "expected windows of " << window
                         << " rows to tile the " << q[0] << " rows";
  int64_t windows = q[0] / window;
  if (bias[1] != q[1] || bias[2] != window || bias[3] != window ||
      bias[0] <= 0 || windows % bias[0])
    return emitOpError() << "expected a bias [b, " << q[1] << ", " << window
                         << ", " << window << "] with b dividing the "
                         << windows << " windows";
  return success();
}

LogicalResult SparseAttentionOp::verify() {
  RankedTensorType type = getQuery().getType();
  if (failed(expectRank(*this, "query", getQuery(), 3)))
    return failure();
  for (auto [name, value] : {std::pair<StringRef, Value>{"key", getKey()},
                             {"value", getValue()},
                             {"global_query", getGlobalQuery()},
                             {"global_key", getGlobalKey()},
                             {"global_value", getGlobalValue()},
                             {"result", getResult()}}) {
    if (value.getType() != type)
      return emitOpError() << "expected " << name << " of the query's type "
                           << type;
  }
  if (ShapedType::isDynamic(type.getDimSize(1)) ||
      ShapedType::isDynamic(type.getDimSize(2)))
    return emitOpError("expected static heads and head_dim");
  if (Value global = getGlobal()) {
    if (failed(expectRank(*this, "global", global, 1)) ||
        failed(expectDim(*this, "global length",
                         tensorType(global).getDimSize(0), "query rows",
                         type.getDimSize(0))))
      return failure();
  }
  // The getters read the attributes unsigned.
  int64_t window = getWindowAttr().getInt();
  if (window <= 0)
    return emitOpError() << "expected a positive window, got " << window;
  int64_t prefix = getGlobalPrefixAttr().getInt();
  if (prefix < 0)
    return emitOpError() << "expected a non-negative global_prefix, got "
                         << prefix;
  if (!getScale().isFiniteNonZero())
    return emitOpError() << "expected a finite, non-zero scale, got "
                         << getScale().convertToDouble();
  return success();
}

LogicalResult RopeOp::verify() {
  std::optional<ArrayRef<int64_t>> sections = getSections();
  if (failed(expectRank(*this, "input", getInput(), 3)) ||
      failed(expectRank(*this, "positions", getPositions(), sections ? 2 : 1)))
    return failure();
  RankedTensorType inputType = getInput().getType();
  int64_t headDim = inputType.getDimSize(2);
  if (ShapedType::isDynamic(headDim) || headDim % 2 != 0)
    return emitOpError() << "expected a static, even head_dim, got "
                         << dimToString(headDim);
  if (failed(expectDim(*this, "positions length",
                       getPositions().getType().getDimSize(0),
                       "input sequence length", inputType.getDimSize(0))))
    return failure();
  if (!(getTheta().convertToDouble() > 0))
    return emitOpError() << "expected a positive theta, got "
                         << getTheta().convertToDouble();
  int64_t rotary = getRotaryDims();
  if (rotary <= 0 || rotary > headDim || rotary % 2 != 0)
    return emitOpError() << "expected rotary_dim to be even and in (0, "
                         << headDim << "], got " << rotary;
  if (sections) {
    int64_t pairs = 0;
    for (int64_t count : *sections) {
      if (count <= 0)
        return emitOpError() << "expected positive sections, got " << count;
      pairs += count;
    }
    if (pairs != rotary / 2)
      return emitOpError() << "expected sections summing to the " << rotary / 2
                           << " rotated pairs, got " << pairs;
    if (failed(expectDim(*this, "positions columns",
                         getPositions().getType().getDimSize(1), "sections",
                         int64_t(sections->size()))))
      return failure();
    if (getNtkFactor() || getLongFrequencies())
      return emitOpError() << "expected sections without dynamic NTK scaling "
                              "or long frequencies";
  }
  for (std::optional<ArrayRef<float>> frequencies :
       {getFrequencies(), getLongFrequencies()}) {
    if (!frequencies)
      continue;
    if (int64_t(frequencies->size()) != rotary / 2)
      return emitOpError() << "expected " << rotary / 2
                           << " frequencies (one per rotated pair), got "
                           << frequencies->size();
    for (auto [i, f] : llvm::enumerate(*frequencies))
      if (!(f >= 0) || std::isinf(f))
        return emitOpError() << "expected finite frequencies of at least 0, got "
                             << f << " at " << i;
  }
  if (getLongFrequencies().has_value() != getLongContext().has_value())
    return emitOpError()
           << "expected long_frequencies and long_context together";
  if (std::optional<uint64_t> longContext = getLongContext()) {
    if (int64_t(*longContext) <= 0)
      return emitOpError() << "expected a positive long_context, got "
                           << int64_t(*longContext);
    if (!getFrequencies() || getNtkFactor())
      return emitOpError() << "expected long_frequencies beside frequencies "
                              "and without dynamic NTK scaling";
  }
  std::optional<APFloat> factor = getNtkFactor();
  std::optional<uint64_t> context = getNtkContext();
  if (factor.has_value() != context.has_value())
    return emitOpError() << "expected ntk_factor and ntk_context together";
  if (factor) {
    if (!(factor->convertToDouble() >= 1) || factor->isInfinity())
      return emitOpError() << "expected a finite ntk_factor >= 1, got "
                           << factor->convertToDouble();
    if (int64_t(*context) <= 0)
      return emitOpError() << "expected a positive ntk_context, got "
                           << int64_t(*context);
    if (getFrequencies())
      return emitOpError() << "dynamic NTK scaling computes its frequencies: "
                              "expected no frequencies";
    if (rotary <= 2)
      return emitOpError() << "dynamic NTK scaling needs rotary_dim > 2, got "
                           << rotary;
  }
  return success();
}

SmallVector<double> RopeOp::getInverseFrequencies() {
  int64_t rotary = getRotaryDims();
  SmallVector<double> inverse;
  if (std::optional<ArrayRef<float>> given = getFrequencies()) {
    inverse.assign(given->begin(), given->end());
    return inverse;
  }
  double theta = getTheta().convertToDouble();
  for (int64_t i = 0; i < rotary / 2; ++i)
    inverse.push_back(1.0 / std::pow(theta, 2.0 * i / rotary));
  return inverse;
}

LogicalResult SinusoidalPositionOp::verify() {
  if (failed(expectRank(*this, "positions", getPositions(), 1)) ||
      failed(expectRank(*this, "result", getResult(), 2)))
    return failure();
  int64_t dim = getType().getDimSize(1);
  if (ShapedType::isDynamic(dim) || dim % 2 != 0)
    return emitOpError() << "expected a static, even result width, got "
                         << dimToString(dim);
  if (failed(expectDim(*this, "result rows", getType().getDimSize(0),
                       "positions length",
                       getPositions().getType().getDimSize(0))))
    return failure();
  if (!(getBase().convertToDouble() > 1))
    return emitOpError() << "expected a base greater than 1, got "
                         << getBase().convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

int64_t mlir::tfm::relativePositionBucket(int64_t distance, int64_t buckets,
                                          int64_t maxDistance,
                                          bool bidirectional) {
  // transformers' T5Attention._relative_position_bucket, with its float32
  // arithmetic, for relative_position = key - query = -distance.
  int64_t bucket = 0, n = buckets;
  if (bidirectional) {
    n /= 2;
    if (distance < 0)
      bucket += n; // the key comes after the query
    distance = std::abs(distance);
  } else {
    distance = std::max<int64_t>(distance, 0);
  }
  int64_t exact = n / 2;
  if (distance < exact)
    return bucket + distance;
  float ratio = float(distance) / float(exact);
  float span = float(std::log(double(maxDistance) / double(exact)));
  auto large = int64_t(std::log(ratio) / span * float(n - exact));
  return bucket + std::min(exact + large, n - 1);
}

LogicalResult AttentionWeightsOp::verify() {
  Operation *op = *this;
  for (auto [what, v] : {std::pair<StringRef, Value>{"query", getQuery()},
                         {"key", getKey()},
                         {"result", getResult()}}) {
    if (failed(expectRank(op, what, v, 3)) ||
        failed(expectElementType(op, what, v, Float32Type::get(getContext()))))
      return failure();
  }
  ArrayRef<int64_t> q = getQuery().getType().getShape();
  ArrayRef<int64_t> k = getKey().getType().getShape();
  ArrayRef<int64_t> r = getType().getShape();
  int64_t heads = q[1];
  if (failed(expectHeadGroups(op, heads, k[1])))
    return failure();
  if (getHeads().empty())
    return emitOpError("expected at least one head");
  for (int64_t head : getHeads())
    if (head < 0 || head >= heads)
      return emitOpError() << "head " << head << " is not one of the query's "
                           << heads << " heads";
  int64_t chosen = int64_t(getHeads().size());
  if (failed(expectDim(op, "key head_dim", k[2], "query head_dim", q[2])) ||
      failed(
          expectDim(op, "result rows", r[0], "query sequence length", q[0])) ||
      failed(expectDim(op, "result heads", r[1], "listed heads", chosen)) ||
      failed(expectDim(op, "result columns", r[2], "key length", k[0])))
    return failure();
  return success();
}

LogicalResult AttentionOp::verify() {
  Operation *op = *this;
  Type elementType = getQuery().getType().getElementType();
  for (auto [what, v] : {std::pair<StringRef, Value>{"query", getQuery()},
                         {"key", getKey()},
                         {"value", getValue()},
                         {"result", getResult()}}) {
    if (failed(expectRank(op, what, v, 3)) ||
        failed(expectElementType(op, what, v, elementType)))
      return failure();
  }
  ArrayRef<int64_t> q = getQuery().getType().getShape();
  ArrayRef<int64_t> k = getKey().getType().getShape();
  ArrayRef<int64_t> v = getValue().getType().getShape();
  ArrayRef<int64_t> r = getType().getShape();
  int64_t heads = q[1], kvHeads = k[1];
  if (failed(expectHeadGroups(op, heads, kvHeads)) ||
      failed(expectDim(op, "value heads", v[1], "key heads", kvHeads)))
    return failure();
  if (failed(expectDim(op, "key head_dim", k[2], "query head_dim", q[2])) ||
      failed(expectDim(op, "value length", v[0], "key length", k[0])) ||
      failed(expectDim(op, "result sequence length", r[0],
                       "query sequence length", q[0])) ||
      failed(expectDim(op, "result heads", r[1], "query heads", heads)) ||
      failed(expectDim(op, "result head_dim", r[2], "value head_dim", v[2])))
    return failure();
  if (Value bias = getBias()) {
    if (failed(expectRank(op, "bias", bias, 3)) ||
        failed(expectElementType(op, "bias", bias, elementType)))
      return failure();
    ArrayRef<int64_t> b = tensorType(bias).getShape();
    if (failed(expectDim(op, "bias heads", b[0], "query heads", heads)) ||
        failed(expectDim(op, "bias rows", b[1], "query sequence length",
                         q[0])) ||
        failed(expectDim(op, "bias columns", b[2], "key length", k[0])))
      return failure();
  }
  if (Value table = getRelativeBias()) {
    if (failed(expectRank(op, "relative_bias", table, 2)) ||
        failed(expectElementType(op, "relative_bias", table, elementType)))
      return failure();
    ArrayRef<int64_t> shape = tensorType(table).getShape();
    if (failed(expectDim(op, "relative_bias heads", shape[1], "query heads",
                         heads)))
      return failure();
    int64_t buckets = shape[0];
    // Each half of a bidirectional table needs an exact and a logarithmic
    // range.
    int64_t least = getCausal() ? 2 : 4;
    if (ShapedType::isDynamic(buckets) || buckets < least ||
        (!getCausal() && buckets % 2 != 0))
      return emitOpError() << "expected a static relative_bias bucket count, "
                           << (getCausal() ? "" : "even and ") << "at least "
                           << least << ", got " << buckets;
    int64_t exact = getCausal() ? buckets / 2 : buckets / 4;
    if (int64_t(getMaxDistance().value_or(0)) <= exact)
      return emitOpError() << "expected 'max_distance' above the " << exact
                           << " exactly bucketed distances with relative_bias";
    if (getLengths())
      return emitOpError("expected no relative_bias over packed sequences");
  } else if (getMaxDistance()) {
    return emitOpError("expected 'max_distance' only with relative_bias");
  }
  if (Value sinks = getSinks()) {
    if (failed(expectRank(op, "sinks", sinks, 1)) ||
        failed(expectElementType(op, "sinks", sinks, elementType)) ||
        failed(expectDim(op, "sinks", tensorType(sinks).getDimSize(0),
                         "query heads", heads)))
      return failure();
  }
  if (Value lengths = getLengths()) {
    // Packed sequences: queries and keys are the same rows.
    if (failed(expectRank(op, "lengths", lengths, 1)) ||
        failed(expectDim(op, "key length", k[0], "query sequence length",
                         q[0])))
      return failure();
  }
  if (std::optional<int64_t> window = getWindow()) {
    if (*window <= 0)
      return emitOpError() << "expected a positive window, got " << *window;
  }
  if (!getScale().isFiniteNonZero())
    return emitOpError() << "expected a finite, non-zero scale, got "
                         << getScale().convertToDouble();
  if (std::optional<APFloat> softcap = getSoftcap())
    if (!softcap->isFiniteNonZero() || softcap->isNegative())
      return emitOpError() << "expected a finite, positive softcap, got "
                           << softcap->convertToDouble();
  return success();
}

//===----------------------------------------------------------------------===//
// Recurrent layers
//===----------------------------------------------------------------------===//

/// A recurrent op's carried state: `finalState` of `expected` shape (all
/// static), and `state`, where given, of its type.
static LogicalResult verifyCarriedState(Operation *op, Value state,
                                        Value finalState,
                                        ArrayRef<int64_t> expected,
                                        Type elementType) {
  RankedTensorType finalType = tensorType(finalState);
  auto want = RankedTensorType::get(expected, elementType);
  if (finalType != want)
    return op->emitOpError() << "expected final_state of type " << want
                             << ", got " << finalType;
  if (state && state.getType() != want)
    return op->emitOpError() << "expected state of type " << want << ", got "
                             << state.getType();
  return success();
}

LogicalResult CausalConv1dOp::verify() {
  if (failed(expectRank(*this, "input", getInput(), 2)) ||
      failed(expectRank(*this, "weight", getWeight(), 2)))
    return failure();
  RankedTensorType inputType = getInput().getType();
  Type elementType = inputType.getElementType();
  ArrayRef<int64_t> w = getWeight().getType().getShape();
  int64_t channels = inputType.getDimSize(1);
  if (ShapedType::isDynamic(channels) || ShapedType::isDynamic(w[1]))
    return emitOpError("expected static channels and kernel width");
  if (w[1] < 2)
    return emitOpError() << "expected a kernel width of at least 2, got "
                         << w[1];
  if (failed(expectElementType(*this, "weight", getWeight(), elementType)) ||
      failed(expectDim(*this, "weight rows", w[0], "input channels",
                       channels)))
    return failure();
  if (getResult().getType() != inputType)
    return emitOpError() << "expected result of the input's type "
                         << inputType << ", got " << getResult().getType();
  if (getReset() && !getState())
    return emitOpError("expected a state beside reset");
  return verifyCarriedState(*this, getState(), getFinalState(),
                            {w[1] - 1, channels}, elementType);
}

LogicalResult GatedDeltaRuleOp::verify() {
  for (auto [what, value, rank] :
       {std::tuple<StringRef, Value, int64_t>{"query", getQuery(), 3},
        {"key", getKey(), 3},
        {"value", getValue(), 3},
        {"alpha", getAlpha(), 2},
        {"decay", getDecay(), 1},
        {"beta", getBeta(), 2},
        {"result", getResult(), 3}})
    if (failed(expectRank(*this, what, value, rank)))
      return failure();
  Type elementType = getValue().getType().getElementType();
  for (auto [what, value] : {std::pair<StringRef, Value>{"query", getQuery()},
                             {"key", getKey()},
                             {"alpha", getAlpha()},
                             {"decay", getDecay()},
                             {"beta", getBeta()},
                             {"result", getResult()}})
    if (failed(expectElementType(*this, what, value, elementType)))
      return failure();
  if (getQuery().getType() != getKey().getType())
    return emitOpError() << "expected query and key of one type, got "
                         << getQuery().getType() << " and "
                         << getKey().getType();
  if (getResult().getType() != getValue().getType())
    return emitOpError() << "expected result of the value's type "
                         << getValue().getType() << ", got "
                         << getResult().getType();
  ArrayRef<int64_t> q = getQuery().getType().getShape();
  ArrayRef<int64_t> v = getValue().getType().getShape();
  int64_t keyHeads = q[1], keyDim = q[2], valueHeads = v[1], valueDim = v[2];
  for (int64_t d : {keyHeads, keyDim, valueHeads, valueDim})
    if (ShapedType::isDynamic(d))
      return emitOpError("expected static heads and head sizes");
  if (valueHeads % keyHeads != 0)
    return emitOpError() << "expected the key heads (" << keyHeads
                         << ") to divide the value heads (" << valueHeads
                         << ")";
  if (failed(expectDim(*this, "key sequence length", q[0],
                       "value sequence length", v[0])))
    return failure();
  for (auto [what, value] : {std::pair<StringRef, Value>{"alpha", getAlpha()},
                             {"beta", getBeta()}}) {
    ArrayRef<int64_t> shape = tensorType(value).getShape();
    if (failed(expectDim(*this, (what + " sequence length").str(), shape[0],
                         "value sequence length", v[0])) ||
        failed(expectDim(*this, (what + " heads").str(), shape[1],
                         "value heads", valueHeads)))
      return failure();
  }
  if (failed(expectDim(*this, "decay size", getDecay().getType().getDimSize(0),
                       "value heads", valueHeads)))
    return failure();
  if (!getScale().isFiniteNonZero())
    return emitOpError() << "expected a finite, non-zero scale, got "
                         << getScale().convertToDouble();
  if (getReset() && !getState())
    return emitOpError("expected a state beside reset");
  return verifyCarriedState(*this, getState(), getFinalState(),
                            {valueHeads, keyDim, valueDim}, elementType);
}

//===----------------------------------------------------------------------===//
// KV cache ops
//===----------------------------------------------------------------------===//

/// Checks the cache layout [layers, planes, capacity, kv_heads, head_dim]
/// (static) against `layer` and the per-layer tensors `entries` ([s,
/// kv_heads, head_dim]; a null one is absent): two planes (keys, values),
/// or with `keysOnly` one (a latent cache, whose values are its keys'
/// leading columns: the op has no value).
static LogicalResult
verifyKVCache(Operation *op, Value cache, int64_t layer,
              ArrayRef<std::pair<StringRef, Value>> entries,
              bool keysOnly = false) {
  RankedTensorType type = tensorType(cache);
  if (type.getRank() != 5 || !type.hasStaticShape())
    return op->emitOpError()
           << "expected a static cache [layers, 2, capacity, kv_heads, "
              "head_dim], got "
           << type;
  ArrayRef<int64_t> shape = type.getShape();
  if (shape[1] != (keysOnly ? 1 : 2))
    return op->emitOpError()
           << "expected the cache's second dimension to be "
           << (keysOnly ? "1 (a latent cache: keys alone, without values)"
                        : "2 (keys, values)")
           << ", got " << shape[1];
  if (layer < 0 || layer >= shape[0])
    return op->emitOpError() << "expected layer " << layer
                             << " to be in [0, " << shape[0] << ")";
  for (auto [what, v] : entries) {
    if (!v)
      continue;
    if (failed(expectRank(op, what, v, 3)) ||
        failed(expectElementType(op, what, v, type.getElementType())))
      return failure();
    ArrayRef<int64_t> entry = tensorType(v).getShape();
    if (failed(expectDim(op, (what + " heads").str(), entry[1],
                         "cache kv_heads", shape[3])) ||
        failed(expectDim(op, (what + " head_dim").str(), entry[2],
                         "cache head_dim", shape[4])))
      return failure();
  }
  return success();
}

LogicalResult KVCacheAppendOp::verify() {
  if (failed(verifyKVCache(*this, getCache(), getLayer(),
                           {{"key", getKey()}, {"value", getValue()}},
                           /*keysOnly=*/!getValue())))
    return failure();
  if (!getValue())
    return success();
  return expectDim(*this, "value length", getValue().getType().getDimSize(0),
                   "key length", getKey().getType().getDimSize(0));
}

LogicalResult KVCacheReadOp::verify() {
  return verifyKVCache(*this, getCache(), getLayer(),
                       {{"key", getKey()}, {"value", getValue()}},
                       /*keysOnly=*/!getValue());
}

/// A ring of `window` rows from row `offset` inside the cache's capacity.
static LogicalResult verifyRing(Operation *op, Value cache, int64_t offset,
                                int64_t window) {
  int64_t capacity = tensorType(cache).getDimSize(2);
  if (window <= 0 || offset < 0 || offset + window > capacity)
    return op->emitOpError() << "expected a ring of a positive window within "
                                "the cache's "
                             << capacity << " rows, got rows [" << offset
                             << ", " << offset + window << ")";
  return success();
}

LogicalResult KVRingAppendOp::verify() {
  if (failed(verifyKVCache(*this, getCache(), getPlaneAttr().getInt(),
                           {{"key", getKey()}, {"value", getValue()}})) ||
      failed(verifyRing(*this, getCache(), getOffsetAttr().getInt(),
                        getWindowAttr().getInt())))
    return failure();
  return expectDim(*this, "value length", getValue().getType().getDimSize(0),
                   "key length", getKey().getType().getDimSize(0));
}

LogicalResult KVRingReadOp::verify() {
  return failure(
      failed(verifyKVCache(*this, getCache(), getPlaneAttr().getInt(),
                           {{"key", getKey()},
                            {"value", getValue()},
                            {"new key", getNewKey()},
                            {"new value", getNewValue()}})) ||
      failed(verifyRing(*this, getCache(), getOffsetAttr().getInt(),
                        getWindowAttr().getInt())) ||
      failed(expectDim(*this, "new value length",
                       getNewValue().getType().getDimSize(0), "new key length",
                       getNewKey().getType().getDimSize(0))));
}

//===----------------------------------------------------------------------===//
// Row quantization
//===----------------------------------------------------------------------===//

/// Shared by tfm.quantize_rows and tfm.dequantize_rows: f32 `floats` rows
/// of a static length n, and `stored` rows of n + 4 bytes (int8: the codes,
/// then the f32 scale) or of n bf16/f16 values, the leading dimensions the
/// same.
static LogicalResult verifyStoredRows(Operation *op, Value floats,
                                      StringRef floatsWhat, Value stored,
                                      StringRef storedWhat) {
  RankedTensorType floatType = tensorType(floats), storedType = tensorType(stored);
  if (failed(expectElementType(op, floatsWhat, floats,
                               Float32Type::get(op->getContext()))))
    return failure();
  int64_t rank = floatType.getRank();
  if (rank == 0)
    return op->emitOpError() << "expected " << floatsWhat << " to have rows";
  if (failed(expectRank(op, storedWhat, stored, rank)))
    return failure();
  for (int64_t d = 0; d + 1 < rank; ++d)
    if (failed(expectDim(op, (storedWhat + " dimension " + Twine(d)).str(),
                         storedType.getDimSize(d),
                         (floatsWhat + " dimension " + Twine(d)).str(),
                         floatType.getDimSize(d))))
      return failure();
  int64_t row = floatType.getDimSize(rank - 1);
  if (ShapedType::isDynamic(row) ||
      ShapedType::isDynamic(storedType.getDimSize(rank - 1)))
    return op->emitOpError() << "expected static rows, got " << floatType
                             << " and " << storedType;
  if (!storedType.getElementType().isInteger(8))
    return expectDim(op, (storedWhat + " row").str(),
                     storedType.getDimSize(rank - 1),
                     (floatsWhat + " row").str(), row);
  return expectDim(op, (storedWhat + " row").str(),
                   storedType.getDimSize(rank - 1),
                   (floatsWhat + " row + 4 (its scale)").str(),
                   row + QuantizeRowsOp::kScaleBytes);
}

LogicalResult QuantizeRowsOp::verify() {
  return verifyStoredRows(*this, getInput(), "input", getResult(), "result");
}

LogicalResult DequantizeRowsOp::verify() {
  return verifyStoredRows(*this, getResult(), "result", getInput(), "input");
}

#define GET_OP_CLASSES
#include "ir/TfmOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

/// top_k in [1, experts].
static LogicalResult verifyTopK(Operation *op, int64_t topK, int64_t experts) {
  if (topK < 1 || (!ShapedType::isDynamic(experts) && topK > experts))
    return op->emitOpError()
           << "expected top_k in [1, " << experts << "], got " << topK;
  return success();
}

/// The routing choice tfm.moe and tfm.route share: a `selection_bias` and
/// `expert_scales` of one value per expert, and `top_groups` of `groups`
/// that divide the experts, enough experts in them for top_k.
static LogicalResult verifyRouter(Operation *op, int64_t experts, int64_t topK,
                                  Value selectionBias, Value expertScales,
                                  std::optional<int64_t> groups,
                                  std::optional<int64_t> topGroups,
                                  std::optional<APFloat> routedScale) {
  if (failed(verifyTopK(op, topK, experts)))
    return failure();
  if (selectionBias &&
      (failed(expectRank(op, "selection bias", selectionBias, 1)) ||
       failed(expectDim(op, "selection bias size",
                        tensorType(selectionBias).getDimSize(0), "experts",
                        experts))))
    return failure();
  if (expertScales &&
      (failed(expectRank(op, "expert scales", expertScales, 1)) ||
       failed(expectDim(op, "expert scales size",
                        tensorType(expertScales).getDimSize(0), "experts",
                        experts))))
    return failure();
  if (groups.has_value() != topGroups.has_value())
    return op->emitOpError("expected groups and top_groups together");
  if (groups) {
    if (ShapedType::isDynamic(experts) || *groups < 1 ||
        experts % *groups != 0)
      return op->emitOpError() << "expected groups dividing the "
                               << dimToString(experts) << " experts, got "
                               << *groups;
    if (*topGroups < 1 || *topGroups > *groups ||
        *topGroups * (experts / *groups) < topK)
      return op->emitOpError()
             << "expected top_groups in [1, " << *groups
             << "] with at least top_k (" << topK
             << ") experts in them, got " << *topGroups;
  }
  if (routedScale && !(routedScale->convertToDouble() > 0))
    return op->emitOpError() << "expected a positive routed_scale, got "
                             << routedScale->convertToDouble();
  return success();
}

/// A gated MLP's `gate` and `up` ([width, features]) and `down`
/// ([features, width]), one of a tfm.moe's experts (`who`: "expert 3's").
static LogicalResult verifyGatedMlp(Operation *op, const std::string &who,
                                    ValueRange weights, int64_t features) {
  int64_t width = tensorType(weights[0]).getRank() == 2
                      ? tensorType(weights[0]).getDimSize(0)
                      : ShapedType::kDynamic;
  static const char *const kParts[] = {"gate", "up", "down"};
  for (int i = 0; i < 3; ++i) {
    std::string what = who + kParts[i];
    if (failed(expectRank(op, what, weights[i], 2)))
      return failure();
    ArrayRef<int64_t> shape = tensorType(weights[i]).getShape();
    bool down = i == 2;
    if (failed(expectDim(op, what + " rows", shape[0],
                         down ? "input features" : "its width",
                         down ? features : width)) ||
        failed(expectDim(op, what + " columns", shape[1],
                         down ? "its width" : "input features",
                         down ? width : features)))
      return failure();
  }
  return success();
}

LogicalResult MoeOp::verify() {
  if (failed(expectRank(*this, "input", getInput(), 2)) ||
      failed(expectRank(*this, "router logits", getRouterLogits(), 2)))
    return failure();
  if (getType() != getInput().getType())
    return emitOpError() << "expected the result of the input's type";
  ArrayRef<int64_t> x = getInput().getType().getShape();
  ArrayRef<int64_t> logits = getRouterLogits().getType().getShape();
  if (failed(expectDim(*this, "router logits rows", logits[0], "input rows",
                       x[0])))
    return failure();
  int64_t experts = logits[1];
  if (ShapedType::isDynamic(experts) ||
      int64_t(getExperts().size()) != 3 * experts)
    return emitOpError() << "expected 3 weights (gate, up, down) for each of "
                         << dimToString(experts) << " experts, got "
                         << getExperts().size();
  if (failed(verifyRouter(*this, experts, getTopK(), getSelectionBias(),
                          getExpertScales(), getGroups(), getTopGroups(),
                          getRoutedScale())))
    return failure();
  for (int64_t e = 0; e < experts; ++e)
    if (failed(verifyGatedMlp(*this, "expert " + std::to_string(e) + "'s ",
                              getExperts().slice(3 * e, 3), x[1])))
      return failure();
  if (!getExpertBiases().empty()) {
    if (int64_t(getExpertBiases().size()) != 3 * experts)
      return emitOpError() << "expected 3 biases (gate, up, down) for each of "
                           << experts << " experts, got "
                           << getExpertBiases().size();
    for (int64_t i = 0; i < 3 * experts; ++i) {
      // A bias has the rows of its projection.
      int64_t rows = tensorType(getExperts()[i]).getDimSize(0);
      ArrayRef<int64_t> bias = tensorType(getExpertBiases()[i]).getShape();
      if (bias.size() != 1 || !dimsCompatible(bias[0], rows))
        return emitOpError() << "expected expert " << i / 3 << "'s "
                             << (i % 3 == 0   ? "gate"
                                 : i % 3 == 1 ? "up"
                                              : "down")
                             << " bias to be [" << rows << "], got "
                             << getExpertBiases()[i].getType();
    }
  }
  if (std::optional<APFloat> limit = getSwigluLimit())
    if (!(limit->convertToDouble() > 0))
      return emitOpError() << "expected a positive swiglu_limit, got "
                           << limit->convertToDouble();
  if (getShared().empty())
    return success();
  if (getShared().size() != 3 && getShared().size() != 4)
    return emitOpError() << "expected the shared expert's gate, up, down and "
                            "optional gate vector, got "
                         << getShared().size() << " weights";
  if (getShared().size() == 3)
    return verifyGatedMlp(*this, "the shared expert's ", getShared(), x[1]);
  ArrayRef<int64_t> vector = tensorType(getShared()[3]).getShape();
  if (vector.size() != 2 || vector[0] != 1 || !dimsCompatible(vector[1], x[1]))
    return emitOpError() << "expected the shared expert's gate vector to be "
                            "[1, "
                         << dimToString(x[1]) << "], got "
                         << getShared()[3].getType();
  return verifyGatedMlp(*this, "the shared expert's ",
                        getShared().take_front(3), x[1]);
}

LogicalResult RouteOp::verify() {
  if (failed(expectRank(*this, "router logits", getRouterLogits(), 2)) ||
      failed(expectRank(*this, "weights", getWeights(), 2)) ||
      failed(expectRank(*this, "experts", getExperts(), 2)))
    return failure();
  ArrayRef<int64_t> logits = getRouterLogits().getType().getShape();
  for (Value result : {getWeights(), getExperts()}) {
    ArrayRef<int64_t> shape = tensorType(result).getShape();
    if (failed(expectDim(*this, "result rows", shape[0], "router logits rows",
                         logits[0])) ||
        failed(
            expectDim(*this, "result columns", shape[1], "top_k", getTopK())))
      return failure();
  }
  return verifyRouter(*this, logits[1], getTopK(), getSelectionBias(),
                      getExpertScales(), getGroups(), getTopGroups(),
                      getRoutedScale());
}

LogicalResult ExpertRowsOp::verify() {
  if (failed(expectRank(*this, "experts", getExperts(), 2)) ||
      failed(expectRank(*this, "rows", getRows(), 1)) ||
      failed(expectRank(*this, "scales", getScales(), 1)))
    return failure();
  if (getExperts().getType().getShape() != getWeights().getType().getShape())
    return emitOpError() << "expected weights of the experts' shape "
                         << getExperts().getType();
  if (getExpert() < 0)
    return emitOpError() << "expected a non-negative expert, got "
                         << getExpert();
  return success();
}

LogicalResult TakeRowsOp::verify() {
  if (failed(expectRank(*this, "input", getInput(), 2)) ||
      failed(expectRank(*this, "rows", getRows(), 1)) ||
      failed(expectRank(*this, "result", getResult(), 2)))
    return failure();
  return failure(
      failed(expectDim(*this, "result rows", getType().getDimSize(0),
                       "row count", getRows().getType().getDimSize(0))) ||
      failed(expectDim(*this, "result columns", getType().getDimSize(1),
                       "input columns", getInput().getType().getDimSize(1))));
}

LogicalResult ScatterAddRowsOp::verify() {
  if (failed(expectRank(*this, "values", getValues(), 2)) ||
      failed(expectRank(*this, "scales", getScales(), 1)) ||
      failed(expectRank(*this, "into", getInto(), 2)) ||
      failed(expectRank(*this, "rows", getRows(), 1)))
    return failure();
  int64_t n = getValues().getType().getDimSize(0);
  return failure(
      failed(expectDim(*this, "scales", getScales().getType().getDimSize(0),
                       "value rows", n)) ||
      failed(expectDim(*this, "rows", getRows().getType().getDimSize(0),
                       "value rows", n)) ||
      failed(expectDim(*this, "value columns",
                       getValues().getType().getDimSize(1), "columns",
                       getInto().getType().getDimSize(1))));
}

//===----------------------------------------------------------------------===//
// Images: Conv2dOp, ImageWindowsOp, GroupNormOp, UpsampleNearestOp,
// TimestepEmbeddingOp
//===----------------------------------------------------------------------===//

/// Checks that `v` is a feature map, [H, W, C] or a batch [N, H, W, C],
/// of static size; returns the rank.
static FailureOr<int64_t> expectFeatureMap(Operation *op, StringRef what,
                                           Value v) {
  RankedTensorType type = tensorType(v);
  if (type.getRank() != 3 && type.getRank() != 4)
    return op->emitOpError() << "expected " << what << " to be a feature map "
                             << "[H, W, C] or a batch of them [N, H, W, C], "
                             << "got rank " << type.getRank();
  if (ShapedType::isDynamicShape(type.getShape()))
    return op->emitOpError() << "needs a feature map of static size, got "
                             << type;
  return type.getRank();
}

/// The [N, H, W, C] extents of a feature map (N = 1 for [H, W, C]).
static std::array<int64_t, 4> mapExtents(Value v) {
  ArrayRef<int64_t> shape = tensorType(v).getShape();
  if (shape.size() == 3)
    return {1, shape[0], shape[1], shape[2]};
  return {shape[0], shape[1], shape[2], shape[3]};
}

/// Checks that `result` is a feature map of `input`'s rank and batch.
static LogicalResult expectSameBatch(Operation *op, Value input,
                                     Value result) {
  FailureOr<int64_t> rank = expectFeatureMap(op, "result", result);
  if (failed(rank))
    return failure();
  if (*rank != tensorType(input).getRank())
    return op->emitOpError() << "expected the result's rank (" << *rank
                             << ") to be the input's ("
                             << tensorType(input).getRank() << ")";
  return expectDim(op, "result images", mapExtents(result)[0], "input images",
                   mapExtents(input)[0]);
}

/// Checks a convolution's window attributes against the feature map
/// `input` and returns the output's rows and columns.
static FailureOr<std::pair<int64_t, int64_t>>
verifyImageWindows(Operation *op, Value input, int64_t kernel, int64_t stride,
                   ArrayRef<int64_t> padding) {
  if (failed(expectFeatureMap(op, "input", input)))
    return failure();
  std::array<int64_t, 4> image = mapExtents(input);
  if (kernel <= 0 || stride <= 0)
    return op->emitOpError() << "expected a positive kernel and stride, got "
                             << kernel << " and " << stride;
  if (padding.size() != 4 ||
      llvm::any_of(padding, [&](int64_t p) { return p < 0 || p >= kernel; }))
    return op->emitOpError("expected padding [top, left, bottom, right], "
                           "each at least 0 and below the kernel");
  int64_t height = image[1] + padding[0] + padding[2],
          width = image[2] + padding[1] + padding[3];
  if (height < kernel || width < kernel)
    return op->emitOpError() << "kernel " << kernel
                             << " does not fit the padded " << height << "x"
                             << width << " input";
  return std::make_pair((height - kernel) / stride + 1,
                        (width - kernel) / stride + 1);
}

LogicalResult Conv2dOp::verify() {
  FailureOr<std::pair<int64_t, int64_t>> size = verifyImageWindows(
      *this, getInput(), getKernel(), getStride(), getPadding());
  if (failed(size) || failed(expectRank(*this, "weight", getWeight(), 2)) ||
      failed(expectSameBatch(*this, getInput(), getResult())))
    return failure();
  int64_t channels = mapExtents(getInput())[3],
          out = getWeight().getType().getDimSize(0);
  std::array<int64_t, 4> result = mapExtents(getResult());
  if (failed(expectDim(*this, "weight columns",
                       getWeight().getType().getDimSize(1),
                       "channels * kernel * kernel",
                       channels * getKernel() * getKernel())) ||
      failed(expectDim(*this, "result rows", result[1], "output rows",
                       size->first)) ||
      failed(expectDim(*this, "result columns", result[2], "output columns",
                       size->second)) ||
      failed(expectDim(*this, "result channels", result[3], "weight rows",
                       out)))
    return failure();
  if (getBias())
    return verifyFeatureVector(*this, "bias", getBias(), out,
                               getType().getElementType());
  return success();
}

LogicalResult ImageWindowsOp::verify() {
  FailureOr<std::pair<int64_t, int64_t>> size = verifyImageWindows(
      *this, getInput(), getKernel(), getStride(), getPadding());
  if (failed(size) || failed(expectRank(*this, "result", getResult(), 2)))
    return failure();
  std::array<int64_t, 4> image = mapExtents(getInput());
  if (failed(expectDim(*this, "result rows", getType().getDimSize(0),
                       "images * output pixels",
                       image[0] * size->first * size->second)))
    return failure();
  return expectDim(*this, "result width", getType().getDimSize(1),
                   "channels * kernel * kernel",
                   image[3] * getKernel() * getKernel());
}

LogicalResult GroupNormOp::verify() {
  RankedTensorType type = getInput().getType();
  if (type.getRank() < 2 || type.getRank() > 4)
    return emitOpError() << "expected input of rank 2 ([positions, C]), 3 "
                            "([H, W, C]) or 4 ([N, H, W, C]), got rank "
                         << type.getRank();
  if (type != getType())
    return emitOpError() << "expected result type " << getType()
                         << " to match input type " << type;
  int64_t channels = type.getDimSize(type.getRank() - 1);
  if (ShapedType::isDynamic(channels) || getGroups() <= 0 ||
      channels % getGroups())
    return emitOpError() << getGroups() << " groups do not divide "
                         << dimToString(channels) << " channels";
  if (failed(verifyFeatureVector(*this, "gamma", getGamma(), channels,
                                 type.getElementType())) ||
      failed(verifyFeatureVector(*this, "beta", getBeta(), channels,
                                 type.getElementType())))
    return failure();
  if (getEpsilon().isNegative() || getEpsilon().isNaN())
    return emitOpError() << "expected a non-negative epsilon, got "
                         << getEpsilon().convertToDouble();
  return success();
}

LogicalResult UpsampleNearestOp::verify() {
  if (failed(expectFeatureMap(*this, "input", getInput())) ||
      failed(expectSameBatch(*this, getInput(), getResult())))
    return failure();
  std::array<int64_t, 4> in = mapExtents(getInput()),
                         out = mapExtents(getResult());
  if (out[1] % in[1] || out[1] / in[1] != out[2] / in[2] ||
      out[2] % in[2] || out[1] < in[1])
    return emitOpError() << "expected the result (" << out[1] << "x"
                         << out[2] << ") to enlarge the input (" << in[1]
                         << "x" << in[2] << ") by one integer factor";
  return expectDim(*this, "result channels", out[3], "input channels", in[3]);
}

LogicalResult TimestepEmbeddingOp::verify() {
  if (failed(expectRank(*this, "timesteps", getTimesteps(), 1)) ||
      failed(expectRank(*this, "result", getResult(), 2)))
    return failure();
  int64_t dim = getType().getDimSize(1);
  if (ShapedType::isDynamic(dim) || dim % 2 != 0 || dim < 2)
    return emitOpError() << "expected a static, even result width, got "
                         << dimToString(dim);
  if (failed(expectDim(*this, "result rows", getType().getDimSize(0),
                       "timesteps", getTimesteps().getType().getDimSize(0))))
    return failure();
  if (!(getMaxPeriod().convertToDouble() > 1))
    return emitOpError() << "expected a max_period greater than 1, got "
                         << getMaxPeriod().convertToDouble();
  if (!(getDownscaleFreqShift().convertToDouble() < double(dim / 2)))
    return emitOpError() << "expected downscale_freq_shift below "
                         << dim / 2 << ", got "
                         << getDownscaleFreqShift().convertToDouble();
  return success();
}
