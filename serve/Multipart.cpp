//===- Multipart.cpp - a multipart/form-data body's fields ----------------===//

#include "serve/Multipart.h"

#include <algorithm>
#include <cctype>

using namespace tfm::serve;

namespace {

std::string lowered(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return text;
}

/// The value of parameter `name` in a header value's `; name=value` list
/// (quoted or not); nullopt when absent.
std::optional<std::string> parameter(const std::string &header,
                                     const std::string &name) {
  std::string lower = lowered(header);
  for (size_t at = lower.find(';'); at != std::string::npos;
       at = lower.find(';', at + 1)) {
    size_t start = lower.find_first_not_of(" \t", at + 1);
    if (start == std::string::npos)
      return std::nullopt;
    if (lower.compare(start, name.size(), name) != 0 ||
        start + name.size() >= lower.size() ||
        lower[start + name.size()] != '=')
      continue;
    size_t value = start + name.size() + 1;
    if (value < header.size() && header[value] == '"') {
      size_t close = header.find('"', value + 1);
      if (close == std::string::npos)
        return std::nullopt;
      return header.substr(value + 1, close - value - 1);
    }
    size_t end = header.find_first_of("; \t", value);
    return header.substr(value, end == std::string::npos ? std::string::npos
                                                         : end - value);
  }
  return std::nullopt;
}

} // namespace

bool tfm::serve::isMultipartForm(const std::string &contentType) {
  return lowered(contentType).rfind("multipart/form-data", 0) == 0;
}

std::optional<std::string>
tfm::serve::parseMultipartForm(const std::string &contentType,
                               const std::string &body,
                               std::map<std::string, std::string> &fields,
                               size_t maxFields) {
  if (!isMultipartForm(contentType))
    return "the body must be a multipart form (multipart/form-data)";
  std::optional<std::string> boundary = parameter(contentType, "boundary");
  if (!boundary || boundary->empty() || boundary->size() > 70)
    return "the multipart form's Content-Type names no boundary (1 to 70 "
           "characters)";
  const std::string delimiter = "--" + *boundary;
  // The first delimiter starts the body or a line of it.
  size_t at = body.rfind(delimiter, 0) == 0 ? 0 : body.find("\r\n" + delimiter);
  if (at == std::string::npos)
    return "the multipart form has no part (no '" + delimiter + "' line)";
  at += at == 0 ? delimiter.size() : delimiter.size() + 2;
  for (;;) {
    if (body.compare(at, 2, "--") == 0)
      return std::nullopt; // the closing delimiter
    if (body.compare(at, 2, "\r\n") != 0)
      return "the multipart form's delimiter is not followed by a line end";
    at += 2;
    size_t headersEnd = body.find("\r\n\r\n", at);
    if (headersEnd == std::string::npos)
      return "a part of the multipart form has no end to its headers";
    std::optional<std::string> name;
    for (size_t line = at; line < headersEnd;) {
      size_t end = std::min(body.find("\r\n", line), headersEnd);
      std::string header = body.substr(line, end - line);
      if (lowered(header).rfind("content-disposition:", 0) == 0)
        name = parameter(header, "name");
      line = end + 2;
    }
    if (!name || name->empty())
      return "a part of the multipart form has no name (Content-Disposition: "
             "form-data; name=\"...\")";
    size_t content = headersEnd + 4;
    size_t next = body.find("\r\n" + delimiter, content);
    if (next == std::string::npos)
      return "the multipart form's part '" + *name +
             "' does not end (no closing '" + delimiter + "')";
    // An array's items come as fields of one name ending in "[]" (the
    // OpenAI SDKs' timestamp_granularities[]): one value a line.
    bool array = name->size() > 2 && name->substr(name->size() - 2) == "[]";
    auto known = fields.find(*name);
    if (known != fields.end() && !array)
      return "the multipart form gives the field '" + *name + "' twice";
    if (known == fields.end() && fields.size() == maxFields)
      return "the multipart form has more than " + std::to_string(maxFields) +
             " fields";
    std::string value = body.substr(content, next - content);
    if (known != fields.end())
      known->second += "\n" + value;
    else
      fields[*name] = value;
    at = next + 2 + delimiter.size();
  }
}
