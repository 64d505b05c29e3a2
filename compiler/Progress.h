//===- Progress.h - what a long compile is doing, on stderr ------*- C++ -*-===//
//
// A compile of a real-size model takes a while (writing a few GB of
// weights is most of it): once it has run for `after` seconds, tfmc names
// each stage on stderr and shows the weights written out of the total, as
// a bar redrawn in place on a terminal and as a line every 10% otherwise
// (logs, pipes). `-q` turns it off.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_PROGRESS_H
#define TFM_COMPILER_PROGRESS_H

#include "llvm/ADT/StringRef.h"

#include <chrono>
#include <cstdint>
#include <string>

namespace mlir::tfm {

class Progress {
public:
  /// Shows nothing when `enabled` is false, and nothing before `after`
  /// seconds have passed since construction.
  Progress(bool enabled, double after);
  ~Progress();
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  /// A new stage ("lowering", "writing weights", ...).
  void stage(llvm::StringRef name);
  /// `done` of `total` bytes of the current stage.
  void advance(uint64_t done, uint64_t total);

private:
  bool visible();
  void endLine();

  bool enabled, terminal;
  double after;
  std::chrono::steady_clock::time_point start, lastDraw;
  std::string current;
  bool announced = false, lineOpen = false;
  int lastTenth = -1;
};

} // namespace mlir::tfm

#endif // TFM_COMPILER_PROGRESS_H
