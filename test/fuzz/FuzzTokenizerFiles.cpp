//===- FuzzTokenizerFiles.cpp - tokenizer files, read and run -------------===//
//
// Every tokenizer file format tfmc reads, through readTokenizerAt as
// `tfmc --tokenizer PATH` (and a model directory) reads it: llama2.c's
// tokenizer.bin, SentencePiece's .model, tokenizer.json, vocab.json +
// merges.txt, vocab.txt with tokenizer_config.json, T5/Marian/fairseq
// SentencePiece folders. A vocabulary that reads is serialized as the
// compiler embeds it, which the runtime must then accept, and is run on the
// input's text and a few others (FuzzTokenizerUse.h).
//
// The input's parts: the model's vocabulary size (decimal), the path read
// ("." for the directory, else one of kFiles), a text, then (name, content)
// pairs for the files of kFiles.
//
// With TFM_FUZZ_SAVE_BLOB=PATH, a run writes the serialized tokenizer as a
// seed of fuzz-tokenizer (scripts/fuzz.sh seeds).
//
//===----------------------------------------------------------------------===//

#include "frontend/tokenizers/Tokenizer.h"
#include "test/fuzz/FuzzErrors.h"
#include "test/fuzz/FuzzFiles.h"
#include "test/fuzz/FuzzTokenizerUse.h"

#include <algorithm>
#include <charconv>

namespace {

constexpr std::string_view kFiles[] = {
    "tokenizer.bin",   "tokenizer.model",       "tokenizer.json",
    "vocab.json",      "merges.txt",            "vocab.txt",
    "tokenizer_config.json", "special_tokens_map.json", "spiece.model",
    "sentencepiece.bpe.model", "source.spm",     "target.spm",
    "tokenizer.gguf", // a GGUF file's tokenizer (--tokenizer FILE.gguf)
};

constexpr const char *kTexts[] = {
    "Once upon a time, there was a little fox.",
    "  Hello\tWORLD!! 123 [MASK] <mask> </s> <extra_id_0> >>fra<< don't",
    "caf\xc3\xa9 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80 \xff\xfe",
};

constexpr size_t kMaxTextBytes = 8192;

bool isKnownFile(std::string_view name) {
  return std::find(std::begin(kFiles), std::end(kFiles), name) !=
         std::end(kFiles);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string_view> parts = tfm_fuzz::splitAllParts(data, size);
  parts.resize(std::max<size_t>(parts.size(), 3));
  int64_t vocabSize = 0;
  std::from_chars(parts[0].data(), parts[0].data() + parts[0].size(),
                  vocabSize);
  if (parts[1] != "." && !isKnownFile(parts[1]))
    return 0;
  for (std::string_view name : kFiles)
    tfm_fuzz::removeFile(name);
  for (size_t i = 3; i + 1 < parts.size(); i += 2)
    if (isKnownFile(parts[i]))
      tfm_fuzz::writeFile(parts[i], parts[i + 1]);
  std::string path = tfm_fuzz::scratchDirectory();
  if (parts[1] != ".")
    path += "/" + std::string(parts[1]);

  llvm::Expected<mlir::tfm::TokenizerVocab> vocab =
      mlir::tfm::readTokenizerAt(path, vocabSize);
  if (!vocab) {
    tfm_fuzz::expectMessage(vocab.takeError());
    return 0;
  }
  std::string blob = mlir::tfm::serializeTokenizer(*vocab);
  if (const char *save = std::getenv("TFM_FUZZ_SAVE_BLOB"))
    tfm_fuzz::writePath(save, blob);
  tfm_tokenizer *tokenizer = nullptr;
  tfm_status status;
  if (tfm_tokenizer_new(reinterpret_cast<const uint8_t *>(blob.data()),
                        blob.size(), &tokenizer, &status) != TFM_OK)
    std::abort(); // the runtime refuses what the compiler wrote
  // The text's first 8 KB: it is encoded ten times (both framings, counted
  // then written, and as a pair), and past that size a run measured only
  // the sanitizers' cost per byte (65 KB: 1.5 s); fuzz-tokenizer takes
  // texts of any length.
  tfm_fuzz::exerciseTokenizer(tokenizer,
                              std::string(parts[2].substr(0, kMaxTextBytes)));
  for (const char *text : kTexts)
    tfm_fuzz::exerciseTokenizer(tokenizer, text);
  tfm_tokenizer_free(tokenizer);
  return 0;
}
