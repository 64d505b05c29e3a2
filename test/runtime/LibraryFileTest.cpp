//===- LibraryFileTest.cpp - a model library's file checked before dlopen -===//
//
// tfm_model_library_check, which the Python package and tfm-serve call
// before dlopen (a library cut inside its ELF image is mapped anyway and
// kills the process with SIGBUS): a whole ELF file passes, as does one cut
// after its image (appended weights are tfm_model_load's to check); cuts
// inside the image, anywhere from the ELF header to the section headers,
// are refused naming the file, its size and the size the image needs; so
// are files that are not ELF, empty, missing, or for another machine.
//
//===----------------------------------------------------------------------===//

#include "tfm/tfm_runtime.h"

#include <gtest/gtest.h>

#include <elf.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

std::vector<char> readAll(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string writeTemporary(const std::vector<char> &bytes, size_t size) {
  std::string path = testing::TempDir() + "library-file-test.so";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(size));
  return path;
}

/// Where this test's own ELF image ends: its section headers, last.
uint64_t imageEnd(const std::vector<char> &bytes) {
  Elf64_Ehdr header;
  std::memcpy(&header, bytes.data(), sizeof header);
  return header.e_shoff + uint64_t{header.e_shnum} * header.e_shentsize;
}

TEST(LibraryFile, WholeFilesAndFilesCutAfterTheImagePass) {
  std::vector<char> self = readAll("/proc/self/exe");
  ASSERT_GT(self.size(), sizeof(Elf64_Ehdr));
  tfm_status status;
  std::string whole = writeTemporary(self, self.size());
  EXPECT_EQ(tfm_model_library_check(whole.c_str(), &status), TFM_OK)
      << status.message;
  // Bytes after the image (weights) are not the image's.
  self.resize(self.size() + 4096, 'w');
  std::string longer = writeTemporary(self, self.size());
  EXPECT_EQ(tfm_model_library_check(longer.c_str(), &status), TFM_OK)
      << status.message;
}

TEST(LibraryFile, CutsInsideTheImageAreRefusedWithTheSizes) {
  std::vector<char> self = readAll("/proc/self/exe");
  uint64_t end = imageEnd(self);
  ASSERT_EQ(end, self.size());
  for (uint64_t cut : {uint64_t{sizeof(Elf64_Ehdr)}, uint64_t{4096}, end / 4,
                       end / 2, end - 4096, end - 1}) {
    std::string path = writeTemporary(self, cut);
    tfm_status status;
    EXPECT_EQ(tfm_model_library_check(path.c_str(), &status), TFM_ERROR_IO);
    std::string expected = "'" + path + "' is truncated: the file has " +
                           std::to_string(cut) + " bytes, its ELF image needs ";
    EXPECT_EQ(std::string(status.message).substr(0, expected.size()), expected)
        << status.message;
  }
  // The last cut needs exactly the whole file: the section headers end it.
  std::string path = writeTemporary(self, end - 1);
  tfm_status status;
  tfm_model_library_check(path.c_str(), &status);
  EXPECT_NE(std::string(status.message).find("needs " + std::to_string(end)),
            std::string::npos)
      << status.message;
}

TEST(LibraryFile, RefusesWhatIsNoELFImageOfThisMachine) {
  tfm_status status;
  std::vector<char> text(100, 'x');
  std::string path = writeTemporary(text, text.size());
  EXPECT_EQ(tfm_model_library_check(path.c_str(), &status), TFM_ERROR_IO);
  EXPECT_EQ(std::string(status.message),
            "'" + path +
                "' is not a shared library (no ELF header in its 100 "
                "bytes)");
  path = writeTemporary(text, 0);
  EXPECT_EQ(tfm_model_library_check(path.c_str(), &status), TFM_ERROR_IO);
  EXPECT_NE(std::string(status.message).find("in its 0 bytes"),
            std::string::npos);
  std::vector<char> self = readAll("/proc/self/exe");
  self[EI_CLASS] = ELFCLASS32;
  path = writeTemporary(self, self.size());
  EXPECT_EQ(tfm_model_library_check(path.c_str(), &status), TFM_ERROR_IO);
  EXPECT_NE(std::string(status.message).find("for another kind of machine"),
            std::string::npos)
      << status.message;
  std::remove(path.c_str());
  EXPECT_EQ(tfm_model_library_check(path.c_str(), &status), TFM_ERROR_IO);
  EXPECT_EQ(std::string(status.message),
            "cannot open '" + path + "': No such file or directory");
  EXPECT_EQ(tfm_model_library_check(nullptr, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tfm_model_library_check("/", &status), TFM_ERROR_IO);
  EXPECT_EQ(std::string(status.message), "'/' is not a regular file");
}

} // namespace
