//===- Multipart.h - a multipart/form-data body's fields ---------*- C++ -*-===//
//
// How tfm-serve reads an upload (/v1/audio/transcriptions): RFC 7578's
// multipart/form-data, each part a field named by its Content-Disposition.
// The whole body is in memory already (within --max-request-bytes); this
// splits it, refusing what is malformed by name rather than guessing.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_MULTIPART_H
#define TFM_SERVE_MULTIPART_H

#include <map>
#include <optional>
#include <string>

namespace tfm::serve {

/// Whether `contentType` is multipart/form-data.
bool isMultipartForm(const std::string &contentType);

/// The fields of `body` (name -> content) under `contentType`'s boundary,
/// or a message saying what is malformed. At most `maxFields` names; a
/// name may come twice only as an array's ("name[]"), its values then one
/// a line.
std::optional<std::string>
parseMultipartForm(const std::string &contentType, const std::string &body,
                   std::map<std::string, std::string> &fields,
                   size_t maxFields = 64);

} // namespace tfm::serve

#endif // TFM_SERVE_MULTIPART_H
