//===- ChatTemplates.cpp - where a model's chat template comes from -------===//

#include "frontend/tokenizers/ChatTemplates.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/JsonFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir::tfm;

llvm::Error mlir::tfm::checkChatTemplate(const llvm::Twine &source,
                                         llvm::StringRef text) {
  if (text.size() > kMaxChatTemplateBytes)
    return makeError(source + ": the chat template is " +
                     llvm::Twine(text.size()) + " bytes; at most " +
                     llvm::Twine(kMaxChatTemplateBytes) + " are kept");
  if (size_t nul = text.find('\0'); nul != llvm::StringRef::npos)
    return makeError(source + ": the chat template has a NUL byte at offset " +
                     llvm::Twine(nul));
  return llvm::Error::success();
}

llvm::Expected<std::string>
mlir::tfm::readChatTemplateFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError("chat template '" + path +
                     "': " + buffer.getError().message());
  llvm::StringRef text = (*buffer)->getBuffer();
  std::string source = ("chat template '" + path + "'").str();
  if (llvm::Error err = checkChatTemplate(source, text))
    return std::move(err);
  return text.str();
}

llvm::Expected<std::string>
mlir::tfm::readHuggingFaceChatTemplate(llvm::StringRef directory) {
  // Newer checkpoints keep it in a file of its own, which wins.
  llvm::SmallString<256> jinja(directory);
  llvm::sys::path::append(jinja, "chat_template.jinja");
  if (llvm::sys::fs::exists(jinja))
    return readChatTemplateFile(jinja);
  // A vision-language model's processor keeps its own (llava-hf's,
  // Qwen2-VL's: the one that writes image parts), which vLLM prefers to
  // the tokenizer's.
  llvm::SmallString<256> processor(directory);
  llvm::sys::path::append(processor, "chat_template.json");
  if (llvm::sys::fs::exists(processor)) {
    llvm::Expected<llvm::json::Value> json = readJsonFile(processor);
    if (!json)
      return json.takeError();
    const llvm::json::Object *object = json->getAsObject();
    std::optional<llvm::StringRef> text =
        object ? object->getString("chat_template") : std::nullopt;
    std::string source = (processor + ": chat_template").str();
    if (!text)
      return makeError(source + " must be a string");
    if (llvm::Error err = checkChatTemplate(source, *text))
      return std::move(err);
    return text->str();
  }
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, "tokenizer_config.json");
  if (!llvm::sys::fs::exists(path))
    return std::string();
  llvm::Expected<llvm::json::Value> json = readJsonFile(path);
  if (!json)
    return json.takeError();
  const llvm::json::Object *config = json->getAsObject();
  const llvm::json::Value *value =
      config ? config->get("chat_template") : nullptr;
  if (!value || value->getAsNull())
    return std::string();
  std::string source = (path + ": chat_template").str();
  auto checked = [&](llvm::StringRef text) -> llvm::Expected<std::string> {
    if (llvm::Error err = checkChatTemplate(source, text))
      return std::move(err);
    return text.str();
  };
  if (std::optional<llvm::StringRef> text = value->getAsString())
    return checked(*text);
  const llvm::json::Array *named = value->getAsArray();
  if (!named)
    return makeError(source + " must be a string or a list of {\"name\", "
                              "\"template\"} objects");
  std::string names;
  for (const llvm::json::Value &entry : *named) {
    const llvm::json::Object *object = entry.getAsObject();
    std::optional<llvm::StringRef> name =
        object ? object->getString("name") : std::nullopt;
    std::optional<llvm::StringRef> text =
        object ? object->getString("template") : std::nullopt;
    if (!name || !text)
      return makeError(source + " must be a string or a list of {\"name\", "
                                "\"template\"} objects");
    if (*name == "default")
      return checked(*text);
    names += (names.empty() ? "'" : ", '") + name->str() + "'";
  }
  return makeError(source + " names templates " + names +
                   " and none 'default'; choose one with --chat-template FILE");
}
