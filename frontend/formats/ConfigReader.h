//===- ConfigReader.h - typed access to config.json -------------*- C++ -*-===//
//
// Reading a Hugging Face config.json field by field, with messages that name
// the file and the field; the first problem is kept and reported once the
// whole config has been read.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FORMATS_CONFIGREADER_H
#define TFM_FRONTEND_FORMATS_CONFIGREADER_H

#include "frontend/formats/ErrorMessages.h"
#include "ir/TfmDialect.h"

#include "llvm/ADT/StringSwitch.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tfm {

/// Typed access to config.json fields with messages that name the field.
class ConfigReader {
public:
  ConfigReader(const llvm::json::Object &object, std::string path)
      : object(object), path(std::move(path)) {}

  int64_t integer(llvm::StringRef key, std::optional<int64_t> fallback = {}) {
    const llvm::json::Value *value = object.get(key);
    if (!value || value->kind() == llvm::json::Value::Null) {
      if (!fallback)
        fail("missing integer field '" + key + "'");
      return fallback.value_or(0);
    }
    // Some configs list several ids (e.g. eos_token_id); the first counts.
    if (const llvm::json::Array *list = value->getAsArray())
      if (!list->empty())
        value = &list->front();
    if (std::optional<int64_t> v = value->getAsInteger())
      return *v;
    fail("field '" + key + "' must be an integer");
    return 0;
  }
  /// `fallback` when absent or null (configs write unset values as null:
  /// OLMo's "clip_qkv": null).
  double number(llvm::StringRef key, double fallback) {
    const llvm::json::Value *value = object.get(key);
    if (!value || value->kind() == llvm::json::Value::Null)
      return fallback;
    if (std::optional<double> v = value->getAsNumber())
      return *v;
    fail("field '" + key + "' must be a number");
    return fallback;
  }
  /// A size or count that is positive where given (sliding_window,
  /// head_dim, num_local_experts): `fallback` when absent or null (a
  /// missing field without one). 0 or a negative value is refused, never
  /// read as "none": the reference takes it as the number it is (a window
  /// of 0 positions, 0 experts), not as the field left out.
  int64_t positiveInteger(llvm::StringRef key,
                          std::optional<int64_t> fallback = {}) {
    const llvm::json::Value *value = object.get(key);
    if (!value || value->kind() == llvm::json::Value::Null) {
      if (!fallback)
        fail("missing integer field '" + key + "'");
      return fallback.value_or(0);
    }
    std::optional<int64_t> v = value->getAsInteger();
    if (!v || *v <= 0) {
      fail("config value " + key + " must be a positive integer or null, "
           "got " + formatValue(*value));
      return fallback.value_or(0);
    }
    return *v;
  }
  /// A finite number that is positive where given (soft-caps, clip_qkv, a
  /// RoPE base): `fallback` when absent or null; 0, a negative number,
  /// infinity or NaN is refused, since the reference divides by it or
  /// clamps to it rather than leaving it out.
  double positiveNumber(llvm::StringRef key, double fallback) {
    const llvm::json::Value *value = object.get(key);
    if (!value || value->kind() == llvm::json::Value::Null)
      return fallback;
    std::optional<double> v = value->getAsNumber();
    if (!v || !(*v > 0) || std::isinf(*v)) {
      fail("config value " + key + " must be a positive number or null, "
           "got " + formatValue(*value));
      return fallback;
    }
    return *v;
  }
  bool boolean(llvm::StringRef key, bool fallback) {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return fallback;
    if (std::optional<bool> v = value->getAsBoolean())
      return *v;
    fail("field '" + key + "' must be true or false");
    return fallback;
  }
  /// A string field: `fallback` when absent or null (published configs
  /// write null for a setting left at its default, as Gemma 4's
  /// use_bidirectional_attention).
  std::string string(llvm::StringRef key, llvm::StringRef fallback) {
    const llvm::json::Value *value = object.get(key);
    if (!value || value->kind() == llvm::json::Value::Null)
      return fallback.str();
    if (std::optional<llvm::StringRef> v = value->getAsString())
      return v->str();
    fail("field '" + key + "' must be a string");
    return fallback.str();
  }
  /// A nested object (rope_scaling), or null when absent or null.
  const llvm::json::Object *nested(llvm::StringRef key) {
    const llvm::json::Value *value = object.get(key);
    if (!value || value->kind() == llvm::json::Value::Null)
      return nullptr;
    if (const llvm::json::Object *nested = value->getAsObject())
      return nested;
    fail("field '" + key + "' must be an object");
    return nullptr;
  }
  const std::string &file() const { return path; }
  /// The config's fields as JSON, for checks the typed readers do not make.
  const llvm::json::Object &raw() const { return object; }
  /// Refuses a field that changes the model in a way not implemented.
  void refuseUnlessAbsent(llvm::StringRef key, llvm::StringRef why) {
    const llvm::json::Value *value = object.get(key);
    if (value && value->kind() != llvm::json::Value::Null &&
        value->getAsBoolean() != std::optional<bool>(false))
      fail("unsupported config value '" + key + "' (" + why + ")");
  }
  /// The activation function `key` names (transformers' ACT2FN names that
  /// tfmc implements), `fallback` when absent; gelu (and a failure) when it
  /// names another.
  ActivationKind activation(llvm::StringRef key, llvm::StringRef fallback) {
    return activationNamed(string(key, fallback), key);
  }
  /// The activation function `name` (an ACT2FN name read from `key`).
  ActivationKind activationNamed(const std::string &name,
                                 llvm::StringRef key) {
    std::optional<ActivationKind> kind =
        llvm::StringSwitch<std::optional<ActivationKind>>(name)
            .Cases({"gelu_new", "gelu_pytorch_tanh", "gelu_fast"},
                   ActivationKind::gelu_tanh)
            .Case("gelu", ActivationKind::gelu)
            .Case("relu", ActivationKind::relu)
            .Cases({"silu", "swish"}, ActivationKind::silu)
            .Case("quick_gelu", ActivationKind::quick_gelu)
            .Default(std::nullopt);
    if (!kind)
      fail("unsupported config value " + key + " = '" + name +
           "' (supported: gelu, gelu_new, gelu_pytorch_tanh, quick_gelu, "
           "relu, silu)");
    return kind.value_or(ActivationKind::gelu);
  }
  /// The strings of array `key` (["BertForMaskedLM"]); empty when absent,
  /// a failure when it is not an array of strings.
  std::vector<std::string> strings(llvm::StringRef key) {
    std::vector<std::string> result;
    const llvm::json::Value *value = object.get(key);
    if (!value || value->kind() == llvm::json::Value::Null)
      return result;
    const llvm::json::Array *array = value->getAsArray();
    for (size_t i = 0; array && i < array->size(); ++i)
      if (std::optional<llvm::StringRef> s = (*array)[i].getAsString())
        result.push_back(s->str());
    if (!array || result.size() != array->size())
      fail("field '" + key + "' must be an array of strings");
    return result;
  }
  /// The positive integers of array `key` (Swin's depths, Wav2Vec2's
  /// conv_kernel): a non-empty list, or with `count` exactly that many,
  /// whose size `countFrom` names in the failure.
  std::vector<int64_t> positiveIntegers(llvm::StringRef key,
                                        std::optional<size_t> count = {},
                                        llvm::StringRef countFrom = "") {
    std::vector<int64_t> values;
    const llvm::json::Value *value = object.get(key);
    const llvm::json::Array *list = value ? value->getAsArray() : nullptr;
    for (size_t i = 0; list && i < list->size(); ++i)
      if (std::optional<int64_t> v = (*list)[i].getAsInteger(); v && *v > 0)
        values.push_back(*v);
    if (!list || values.size() != list->size() ||
        (count ? values.size() != *count : values.empty()))
      fail("field '" + key + "' must list " +
           (count ? llvm::Twine(*count) + " " : llvm::Twine()) +
           "positive integers" +
           (count ? " (" + countFrom + ")" : llvm::Twine()));
    return values;
  }
  void fail(const llvm::Twine &message) {
    if (errors.empty())
      errors = path + ": " + message.str();
  }
  llvm::Error takeError() {
    return errors.empty() ? llvm::Error::success() : makeError(errors);
  }
  /// The whole config, for readers of optional fields.
  const llvm::json::Object &fields() const { return object; }

private:
  /// A value as the config writes it, for messages ("0", "-2.5", "\"x\"").
  static std::string formatValue(const llvm::json::Value &value) {
    std::string text;
    llvm::raw_string_ostream(text) << value;
    return text;
  }

  const llvm::json::Object &object;
  std::string path;
  std::string errors;
};

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FORMATS_CONFIGREADER_H
