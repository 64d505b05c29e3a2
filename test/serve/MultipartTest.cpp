//===- MultipartTest.cpp - tfm-serve's multipart/form-data fields ---------===//
//
// What parseMultipartForm gives for the uploads of the transcription
// endpoints: each field by name; an array's items (the OpenAI SDKs send
// timestamp_granularities: ["word", "segment"] as two
// "timestamp_granularities[]" parts) one a line; any other name given
// twice refused by name.
//
//===----------------------------------------------------------------------===//

#include "serve/Multipart.h"

#include <gtest/gtest.h>

using namespace tfm::serve;

namespace {

const char kType[] = "multipart/form-data; boundary=XyZ";

std::string part(const std::string &name, const std::string &value) {
  return "--XyZ\r\nContent-Disposition: form-data; name=\"" + name +
         "\"\r\n\r\n" + value + "\r\n";
}

TEST(MultipartTest, FieldsByName) {
  std::map<std::string, std::string> fields;
  std::string body =
      part("model", "whisper") + part("language", "de") + "--XyZ--\r\n";
  EXPECT_EQ(parseMultipartForm(kType, body, fields), std::nullopt);
  EXPECT_EQ(fields.size(), 2u);
  EXPECT_EQ(fields["model"], "whisper");
  EXPECT_EQ(fields["language"], "de");
}

TEST(MultipartTest, ArrayItemsOneALine) {
  std::map<std::string, std::string> fields;
  std::string body = part("timestamp_granularities[]", "word") +
                     part("timestamp_granularities[]", "segment") +
                     "--XyZ--\r\n";
  EXPECT_EQ(parseMultipartForm(kType, body, fields), std::nullopt);
  EXPECT_EQ(fields["timestamp_granularities[]"], "word\nsegment");
}

TEST(MultipartTest, OtherFieldsTwiceRefused) {
  std::map<std::string, std::string> fields;
  std::string body =
      part("language", "de") + part("language", "fr") + "--XyZ--\r\n";
  EXPECT_EQ(parseMultipartForm(kType, body, fields),
            "the multipart form gives the field 'language' twice");
}

} // namespace
