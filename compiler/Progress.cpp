//===- Progress.cpp - what a long compile is doing, on stderr ------------===//

#include "compiler/Progress.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <unistd.h>

using namespace mlir::tfm;

Progress::Progress(bool enabled, double after)
    : enabled(enabled), terminal(isatty(STDERR_FILENO)), after(after),
      start(std::chrono::steady_clock::now()) {}

Progress::~Progress() { endLine(); }

bool Progress::visible() {
  if (!enabled)
    return false;
  std::chrono::duration<double> elapsed =
      std::chrono::steady_clock::now() - start;
  return elapsed.count() >= after;
}

void Progress::endLine() {
  if (lineOpen)
    llvm::errs() << "\n";
  lineOpen = false;
}

void Progress::stage(llvm::StringRef name) {
  current = name.str();
  announced = false;
  lastTenth = -1;
  if (!visible())
    return;
  endLine();
  llvm::errs() << "tfmc: " << current << "\n";
  announced = true;
}

void Progress::advance(uint64_t done, uint64_t total) {
  if (!visible() || total == 0)
    return;
  if (!announced) {
    endLine();
    llvm::errs() << "tfmc: " << current << "\n";
    announced = true;
  }
  double fraction = double(std::min(done, total)) / double(total);
  // GB, or MB for a blob under 1 GB.
  bool gigabytes = total >= 1000000000;
  double scale = gigabytes ? 1e-9 : 1e-6;
  const char *unit = gigabytes ? "GB" : "MB";
  if (terminal) {
    // Redrawn in place, at most ten times a second.
    auto now = std::chrono::steady_clock::now();
    if (done < total && now - lastDraw < std::chrono::milliseconds(100))
      return;
    lastDraw = now;
    constexpr int kWidth = 30;
    int filled = int(fraction * kWidth);
    llvm::errs() << "\r  [" << std::string(filled, '#')
                 << std::string(kWidth - filled, '-') << "] "
                 << llvm::format("%3.0f%% %.2f / %.2f %s", 100 * fraction,
                                 done * scale, total * scale, unit);
    lineOpen = true;
    if (done >= total)
      endLine();
    return;
  }
  int tenth = int(fraction * 10);
  if (tenth == lastTenth)
    return;
  lastTenth = tenth;
  llvm::errs() << llvm::format("  %3d%% (%.2f of %.2f %s)\n", tenth * 10,
                               done * scale, total * scale, unit);
}
