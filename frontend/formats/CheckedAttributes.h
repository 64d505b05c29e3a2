//===- CheckedAttributes.h - attributes from file values --------*- C++ -*-===//
//
// An attribute whose verifier rejects its parameters aborts in `get` (an
// assertion, or worse without assertions). Values read from a checkpoint
// are user input, so the frontend builds such attributes with getChecked
// and turns the verifier's message into an llvm::Error naming where the
// values came from.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FORMATS_CHECKEDATTRIBUTES_H
#define TFM_FRONTEND_FORMATS_CHECKEDATTRIBUTES_H

#include "frontend/formats/ErrorMessages.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/MLIRContext.h"

#include <string>

namespace mlir::tfm {

/// AttrT::getChecked(context, args...), or an error "<where>: <the
/// verifier's message>" when the verifier rejects them. `args` must have
/// the parameters' own types (StringRef, not std::string): they are
/// forwarded to the storage as given.
template <typename AttrT, typename... Args>
llvm::Expected<AttrT> getCheckedAttr(const llvm::Twine &where,
                                     MLIRContext *context, Args &&...args) {
  std::string message;
  // Captures the verifier's diagnostic instead of printing it.
  ScopedDiagnosticHandler capture(context, [&](Diagnostic &diagnostic) {
    message = diagnostic.str();
    return success();
  });
  AttrT attr = AttrT::getChecked(
      [&] { return emitError(UnknownLoc::get(context)); }, context,
      std::forward<Args>(args)...);
  if (!attr)
    return makeError(where + ": " + message);
  return attr;
}

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FORMATS_CHECKEDATTRIBUTES_H
