//===- WeightDeclarations.cpp - a builder's reads of checkpoint tensors ---===//

#include "frontend/builders/WeightDeclarations.h"
#include "frontend/ErrorMessages.h"
#include "frontend/builders/DecoderSpec.h"

#include "llvm/ADT/StringExtras.h"

#include <map>

using namespace mlir;
using namespace mlir::tfm;

/// What keeping a checkpoint's dtype makes of the formats no kernel reads:
/// their decoded values requantized into int8, within 1/254 of each
/// block's peak of the file's numbers. Four bits would add an error of the
/// order of theirs (Q3_K into int4 or int4-min moved test logits 7x as far
/// from the file's as int8 did); --weights-dtype=int4 asks for it.
constexpr llvm::StringLiteral kRequantizedDtype = "int8";

bool mlir::tfm::checkpointRequantizes(WeightDtype dtype) {
  switch (dtype) {
  case WeightDtype::F32:
  case WeightDtype::F16:
  case WeightDtype::BF16:
  case WeightDtype::Q8_0:
  case WeightDtype::Q4_0:
  case WeightDtype::Q4_1:
  case WeightDtype::Q4_K:
  case WeightDtype::Q5_K:
  case WeightDtype::Q6_K:
  case WeightDtype::MXFP4: return false;
  case WeightDtype::Q5_0:
  case WeightDtype::Q5_1:
  case WeightDtype::Q2_K:
  case WeightDtype::Q3_K:
  case WeightDtype::IQ4_NL:
  case WeightDtype::IQ4_XS: return true;
  }
  return false;
}

std::optional<StringRef> mlir::tfm::checkpointDtype(WeightDtype dtype) {
  if (checkpointRequantizes(dtype))
    return StringRef(kRequantizedDtype);
  switch (dtype) {
  case WeightDtype::F16: return StringRef("f16");
  case WeightDtype::BF16: return StringRef("bf16");
  case WeightDtype::Q4_0: return StringRef("int4");
  case WeightDtype::Q4_1: return StringRef("int4-min");
  case WeightDtype::Q8_0: return StringRef("int8");
  // The K-quants and MXFP4 keep their blocks (the q4_k, q5_k, q6_k and
  // mxfp4 block kernels).
  case WeightDtype::Q4_K: return StringRef("q4_k");
  case WeightDtype::Q5_K: return StringRef("q5_k");
  case WeightDtype::Q6_K: return StringRef("q6_k");
  case WeightDtype::MXFP4: return StringRef("mxfp4");
  default: return std::nullopt; // f32
  }
}

std::string mlir::tfm::describeRequantized(const WeightStore &weights) {
  std::map<WeightDtype, int> counts; // in WeightDtype's order
  int total = 0;
  for (const std::string &name : weights.names())
    if (WeightDtype dtype = weights.lookup(name)->dtype();
        checkpointRequantizes(dtype)) {
      ++counts[dtype];
      ++total;
    }
  if (!total)
    return "";
  std::string parts;
  for (auto [dtype, count] : counts)
    parts += (parts.empty() ? "" : ", ") + std::to_string(count) + " " +
             dtypeName(dtype);
  return std::to_string(total) + " tensors to " + kRequantizedDtype.str() +
         " (" + parts + ")";
}

Value WeightDeclarations::read(OpBuilder &b, const std::string &name,
                               const std::vector<int64_t> &shape) {
  return readAs(b, name, shape, shape);
}

Value WeightDeclarations::readAs(OpBuilder &b, const std::string &name,
                                 const std::vector<int64_t> &stored,
                                 const std::vector<int64_t> &shape) {
  WeightDeclOp decl = declareAs(b, name, stored, shape);
  return WeightOp::create(b, decl.getLoc(), decl.getTensorType(), name);
}

WeightDeclOp WeightDeclarations::declare(OpBuilder &b, const std::string &name,
                                         const std::vector<int64_t> &shape) {
  return declareAs(b, name, shape, shape);
}

WeightDeclOp WeightDeclarations::declareAs(OpBuilder &b,
                                           const std::string &name,
                                           const std::vector<int64_t> &stored,
                                           const std::vector<int64_t> &shape) {
  used.insert(name);
  if (std::optional<std::string> error = weights.mismatch(
          checkpoint, name, stored, "the " + family + " config implies"))
    errors.push_back(std::move(*error));
  auto type = RankedTensorType::get(shape, b.getF32Type());
  Location loc = NameLoc::get(b.getStringAttr(name));
  if (!declared.count(name)) {
    // Declarations go before the functions, in first-use order.
    OpBuilder::InsertionGuard guard(b);
    auto module = b.getBlock()->getParentOp()->getParentOfType<ModuleOp>();
    if (lastDeclared)
      b.setInsertionPointAfter(lastDeclared);
    else
      b.setInsertionPointToStart(module.getBody());
    declared[name] = lastDeclared = WeightDeclOp::create(b, loc, name, type);
    if (const WeightTensor *tensor = weights.lookup(name))
      if (std::optional<StringRef> dtype = checkpointDtype(tensor->dtype()))
        declared[name]->setAttr(kCheckpointDtypeAttrName,
                                b.getStringAttr(*dtype));
  }
  return declared[name];
}

Value WeightDeclarations::biasedLinear(
    OpBuilder &b, Value x, const std::string &name,
    llvm::ArrayRef<int64_t> resultShape,
    std::optional<ActivationKind> activation) {
  return linear(b, x, name, resultShape, activation, /*withBias=*/true);
}

Value WeightDeclarations::unbiasedLinear(
    OpBuilder &b, Value x, const std::string &name,
    llvm::ArrayRef<int64_t> resultShape,
    std::optional<ActivationKind> activation) {
  return linear(b, x, name, resultShape, activation, /*withBias=*/false);
}

Value WeightDeclarations::linear(OpBuilder &b, Value x,
                                 const std::string &name,
                                 llvm::ArrayRef<int64_t> resultShape,
                                 std::optional<ActivationKind> activation,
                                 bool withBias) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t in = 1, out = 1;
  for (int64_t d : type.getShape().drop_front())
    in *= d;
  for (int64_t d : resultShape)
    out *= d;
  SmallVector<int64_t> shape = {type.getDimSize(0)};
  shape.append(resultShape.begin(), resultShape.end());
  ActivationKindAttr act =
      activation ? ActivationKindAttr::get(b.getContext(), *activation)
                 : ActivationKindAttr();
  return LinearOp::create(b, x.getLoc(),
                          RankedTensorType::get(shape, b.getF32Type()), x,
                          read(b, name, {out, in}),
                          withBias ? read(b, biasName(name), {out}) : Value(),
                          act, /*gated=*/UnitAttr());
}

Value WeightDeclarations::biasedLayerNorm(OpBuilder &b, Value x,
                                          const std::string &name, int64_t d,
                                          double epsilon) {
  return LayerNormOp::create(b, x.getLoc(), x.getType(), x,
                             read(b, name, {d}), read(b, biasName(name), {d}),
                             b.getF32FloatAttr(epsilon));
}

llvm::Expected<OwningOpRef<ModuleOp>> WeightDeclarations::finish(
    OwningOpRef<ModuleOp> module,
    llvm::function_ref<bool(llvm::StringRef)> isIgnored) {
  for (const std::string &name : weights.names())
    if (!used.count(name) && !isIgnored(name))
      errors.push_back(checkpoint + ": unexpected tensor '" + name +
                       "' for a " + family + " model");
  if (!errors.empty())
    return makeError(llvm::join(errors, "\n"));
  if (failed(module->verify()))
    return makeError("internal error: the " + family +
                     " module does not verify");
  return std::move(module);
}
