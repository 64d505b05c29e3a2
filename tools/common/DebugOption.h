//===- DebugOption.h - the --tfm-debug-only= option -------------*- C++ -*-===//
//
// Debian's LLVM has no assertions and therefore no -debug/-debug-only. The
// tools offer --tfm-debug-only=a,b instead: it turns on llvm::DebugFlag for
// the named DEBUG_TYPEs, which our code (built without NDEBUG) prints with
// LLVM_DEBUG.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_COMMON_DEBUGOPTION_H
#define TFM_TOOLS_COMMON_DEBUGOPTION_H

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Debug.h"

#include <string>
#include <vector>

namespace mlir::tfm {

/// Registers --tfm-debug-only. Call before parsing the command line.
inline void registerDebugOnlyOption() {
  // LLVM copies the type names, so a local list of what was seen suffices.
  static std::vector<std::string> seen;
  static llvm::cl::list<std::string> option(
      "tfm-debug-only",
      llvm::cl::desc("Print debug output of the given comma-separated debug "
                     "types (replaces -debug-only, absent from Debian's LLVM)"),
      llvm::cl::value_desc("types"), llvm::cl::CommaSeparated,
      llvm::cl::callback([](const std::string &name) {
        seen.push_back(name);
        std::vector<const char *> raw;
        for (const std::string &n : seen)
          raw.push_back(n.c_str());
        llvm::DebugFlag = true;
        llvm::setCurrentDebugTypes(raw.data(), raw.size());
      }));
}

} // namespace mlir::tfm

#endif // TFM_TOOLS_COMMON_DEBUGOPTION_H
