//===- ChatTemplates.h - where a model's chat template comes from -*- C++ -*-===//
//
// A chat model says how a conversation becomes its prompt with a Jinja
// template. tfmc keeps it on the module (tfm.model's chat_template) and in
// the compiled model (tfm_model_desc.chat_template) for tfm-serve's
// /v1/chat/completions; the compiler does not interpret it.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_TOKENIZERS_CHATTEMPLATES_H
#define TFM_FRONTEND_TOKENIZERS_CHATTEMPLATES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <string>

namespace mlir::tfm {

/// The largest chat template kept (real ones are a few KiB).
constexpr size_t kMaxChatTemplateBytes = size_t(1) << 20;

/// Checks that `text` (from `source`, for the message) can be carried as
/// a C string: no NUL byte, at most kMaxChatTemplateBytes.
llvm::Error checkChatTemplate(const llvm::Twine &source, llvm::StringRef text);

/// A Hugging Face directory's template: chat_template.jinja, or a
/// processor's chat_template.json ({"chat_template": ...}), or
/// tokenizer_config.json's chat_template (a string, or named templates of
/// which the one named "default" is taken, as transformers does); empty
/// when there is none.
llvm::Expected<std::string>
readHuggingFaceChatTemplate(llvm::StringRef directory);

/// The template in the file `path` (tfmc --chat-template).
llvm::Expected<std::string> readChatTemplateFile(llvm::StringRef path);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_TOKENIZERS_CHATTEMPLATES_H
