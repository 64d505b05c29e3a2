//===- ModelIRBuilder.cpp - the layer helpers every builder shares --------===//

#include "frontend/builders/ModelIRBuilder.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

Value ModelIRBuilder::attend(Location loc, Value q, Value k, Value v,
                             bool causal, const AttentionOptions &options) {
  FloatAttr scale = options.scale;
  if (!scale) {
    int64_t headDim = cast<RankedTensorType>(q.getType()).getShape().back();
    scale = b.getF32FloatAttr(1.0 / std::sqrt(double(headDim)));
  }
  Type result = options.resultType ? options.resultType : q.getType();
  return AttentionOp::create(
      b, loc, result, q, k, v, /*bias=*/Value(),
      /*lengths=*/Value(), options.relativeBias, options.sinks, scale,
      causal ? b.getUnitAttr() : UnitAttr(), options.window,
      options.maxDistance, options.softcap);
}

Value ModelIRBuilder::beginEntryPoint(llvm::StringRef name, Type input,
                                      InputRole role, Type result,
                                      OutputRole output) {
  MLIRContext *ctx = b.getContext();
  auto function = func::FuncOp::create(b, named(name), name,
                                       b.getFunctionType({input}, {result}));
  function.setArgAttr(0, kInputArgAttrName, InputRoleAttr::get(ctx, role));
  function.setResultAttr(0, kOutputResultAttrName,
                         OutputRoleAttr::get(ctx, output));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  return entry->getArgument(0);
}
