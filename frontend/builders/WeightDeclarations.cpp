//===- WeightDeclarations.cpp - a builder's reads of checkpoint tensors ---===//

#include "frontend/builders/WeightDeclarations.h"
#include "frontend/builders/DecoderSpec.h"
#include "frontend/formats/ErrorMessages.h"

#include "llvm/ADT/StringExtras.h"

#include <map>

using namespace mlir;
using namespace mlir::tfm;

std::optional<StringRef> mlir::tfm::checkpointDtype(WeightFormat dtype) {
  if (dtype == WeightFormat::F32)
    return std::nullopt;
  return StringRef(dtypeName(dtype));
}

std::string mlir::tfm::describeRequantized(const WeightStore &weights) {
  std::map<WeightFormat, int> counts; // in WeightFormat's order
  int total = 0;
  for (const std::string &name : weights.names())
    if (WeightFormat dtype = weights.lookup(name)->dtype();
        checkpointRequantizes(dtype)) {
      ++counts[dtype];
      ++total;
    }
  if (!total)
    return "";
  std::string parts;
  for (auto [dtype, count] : counts)
    parts += (parts.empty() ? "" : ", ") + std::to_string(count) + " " +
             checkpointName(dtype);
  return std::to_string(total) + " tensors to " +
         checkpointDtype(counts.begin()->first)->str() + " (" + parts + ")";
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
