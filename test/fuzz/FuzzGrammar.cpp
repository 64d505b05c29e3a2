//===- FuzzGrammar.cpp - GBNF grammars and texts followed through them ----===//
//
// The runtime's grammar (runtime/grammar/): any text as GBNF (from a
// request's `grammar` field or --grammar-file), then, where it parses, any
// text followed through it code point by code point as the token mask
// does (the stacks after each, the range check of a character a token
// leaves unfinished); and the same text as a JSON Schema, whose grammar
// must parse. The input's parts: the grammar (a NUL in it ends it, as a C
// string does), then the text. A refusal must say what is wrong.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzFiles.h"

extern "C" {
#include "runtime/grammar/grammar_internal.h"
}

#include <cstdlib>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string_view> parts = tfm_fuzz::splitParts(data, size, 2);
  std::string gbnf(parts[0]);
  // The same text as a JSON Schema (a request's response_format), and the
  // grammar written from it parsed in turn.
  char *written = nullptr;
  tfm_status status;
  if (tfm_json_schema_to_gbnf(gbnf.c_str(), &written, &status) == TFM_OK) {
    tfm_grammar_rules schemaRules;
    char schemaError[400];
    if (!tfm_grammar_parse(written, &schemaRules, schemaError,
                           sizeof schemaError))
      std::abort(); // a schema's grammar always parses
    tfm_grammar_rules_free(&schemaRules);
    std::free(written);
  } else if (!status.message[0]) {
    std::abort();
  }
  tfm_grammar_rules rules;
  char error[400];
  if (!tfm_grammar_parse(gbnf.c_str(), &rules, error, sizeof error)) {
    if (!error[0])
      std::abort(); // a refusal says what is wrong
    return 0;
  }
  std::vector<uint32_t> scratch(TFM_GRAMMAR_SCRATCH);
  tfm_grammar_stacks stacks{}, next{};
  // A grammar too ambiguous to follow (TFM_GRAMMAR_TOO_AMBIGUOUS) stops
  // where it becomes so.
  if (tfm_grammar_start(&rules, &stacks, scratch.data()) == TFM_GRAMMAR_DONE) {
    // Bytes as code points (a byte >= 0x80 stands for a character past
    // ASCII, every 64th for one past the BMP), and the range a character
    // begun would span.
    for (unsigned char byte : parts[1]) {
      uint32_t code = byte < 0x80 ? byte : 0x80u + byte * 37u;
      if (byte % 64 == 63)
        code += 0x10000;
      (void)tfm_grammar_admits_range(&rules, &stacks, code, code + 63);
      if (tfm_grammar_accept_char(&rules, &stacks, code, &next,
                                  scratch.data()) != TFM_GRAMMAR_DONE)
        break;
      std::swap(stacks, next);
      if (stacks.count == 0)
        break;
    }
    (void)tfm_grammar_may_end(&stacks);
  }
  tfm_grammar_stacks_free(&stacks);
  tfm_grammar_stacks_free(&next);
  tfm_grammar_rules_free(&rules);
  return 0;
}
