//===- FuzzFiles.h - fuzz inputs written as the files readers open -*- C++ -*-//
//
// tfmc's readers take paths (they map files, find siblings in a model
// directory), so each fuzz target writes its input as those files in a
// scratch directory of its own and calls the reader as tfmc does. An input
// holding several parts (files, or a blob and a text) separates them with
// kPartSeparator, a line of its own that scripts/fuzz.sh gives libFuzzer as
// a dictionary entry, so that seeds stay readable and mutations can move
// bytes between parts. Plain C++ (no LLVM): the runtime's targets use it.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TEST_FUZZ_FUZZFILES_H
#define TFM_TEST_FUZZ_FUZZFILES_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace tfm_fuzz {

/// Between the parts of a multi-part input.
constexpr std::string_view kPartSeparator = "\n--tfm-fuzz-next-part--\n";

/// A directory of this process's own under TMPDIR (default /dev/shm, which
/// keeps the writes in memory, else /tmp).
inline const std::string &scratchDirectory() {
  static const std::string directory = [] {
    const char *base = std::getenv("TMPDIR");
    std::string root =
        base ? base : (access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    std::string path =
        root + "/tfm-fuzz-" + std::to_string(static_cast<long>(getpid()));
    if (mkdir(path.c_str(), 0700) != 0 && access(path.c_str(), W_OK) != 0)
      std::abort();
    return path;
  }();
  return directory;
}

/// Writes `bytes` to `path`.
inline void writePath(const std::string &path, std::string_view bytes) {
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file)
    std::abort();
  if (!bytes.empty() &&
      std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size())
    std::abort();
  std::fclose(file);
}

/// Writes `bytes` as `name` in the scratch directory; returns its path.
inline std::string writeFile(std::string_view name, std::string_view bytes) {
  std::string path = scratchDirectory() + "/" + std::string(name);
  writePath(path, bytes);
  return path;
}

/// Removes `name` from the scratch directory, if there.
inline void removeFile(std::string_view name) {
  std::remove((scratchDirectory() + "/" + std::string(name)).c_str());
}

/// The input's parts, split at kPartSeparator: exactly `count` (the last
/// keeps any further separators; missing ones are empty).
inline std::vector<std::string_view> splitParts(const uint8_t *data,
                                                size_t size, size_t count) {
  std::string_view rest(reinterpret_cast<const char *>(data), size);
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < count) {
    size_t at = rest.find(kPartSeparator);
    if (at == std::string_view::npos) {
      parts.push_back(rest);
      rest = {};
      continue;
    }
    parts.push_back(rest.substr(0, at));
    rest = rest.substr(at + kPartSeparator.size());
  }
  parts.push_back(rest);
  return parts;
}

/// The input's parts at every separator (for inputs of any length).
inline std::vector<std::string_view> splitAllParts(const uint8_t *data,
                                                   size_t size) {
  std::string_view rest(reinterpret_cast<const char *>(data), size);
  std::vector<std::string_view> parts;
  for (size_t at; (at = rest.find(kPartSeparator)) != std::string_view::npos;) {
    parts.push_back(rest.substr(0, at));
    rest = rest.substr(at + kPartSeparator.size());
  }
  parts.push_back(rest);
  return parts;
}

} // namespace tfm_fuzz

#endif // TFM_TEST_FUZZ_FUZZFILES_H
