//===- Reasoning.h - a thinking model's reasoning apart from its answer ---===//
//
// Thinking models write their reasoning before their answer: Qwen3's, QwQ's
// and DeepSeek-R1's between <think> and </think> (tokens of their own),
// gpt-oss's in harmony's analysis channel (<|channel|>analysis<|message|>
// ... <|end|>, then <|start|>assistant<|channel|>final<|message|> and the
// answer), Gemma 4's in its thought channel (<|channel>thought\n ...
// <channel|>, the two brackets special tokens). The router tells, token by token, which part of the output a
// token belongs to, so that a chat response carries the reasoning apart, as
// `reasoning_content` (llama.cpp's and vLLM's field), and the answer alone
// as `content`.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_REASONING_H
#define TFM_SERVE_REASONING_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tfm::serve {

/// A token's spelling (what the tokenizer decodes it to, special tokens
/// included).
using TokenSpelling = std::function<std::string(int32_t)>;

/// The tokens that mark reasoning in a model's vocabulary; -1: absent.
struct ReasoningMarkers {
  /// <think> and </think>.
  int32_t thinkOpen = -1, thinkClose = -1;
  /// harmony's <|start|>, <|channel|>, <|message|> and <|end|>.
  int32_t start = -1, channel = -1, message = -1, end = -1;
  /// Gemma 4's <|channel> and <channel|>.
  int32_t channelOpen = -1, channelClose = -1;

  bool think() const { return thinkOpen >= 0 && thinkClose >= 0; }
  bool harmony() const {
    return start >= 0 && channel >= 0 && message >= 0 && end >= 0;
  }
  bool gemma4() const { return channelOpen >= 0 && channelClose >= 0; }
  bool any() const { return think() || harmony() || gemma4(); }
  /// "think", "harmony", "gemma4" or "none", for messages.
  const char *name() const;
};

/// The markers among the `vocabulary` tokens, by their spellings.
ReasoningMarkers findReasoningMarkers(int64_t vocabulary,
                                      const TokenSpelling &spell);

/// Which part of a chat's output a generated token belongs to.
enum class TokenPart {
  Content,   // the answer
  Reasoning, // the thoughts before it
  Markup,    // a marker, or a harmony header ("<|channel|>analysis")
};

/// Routes generated tokens to their parts. It starts where the prompt
/// leaves it: a template that opens <think> itself (DeepSeek-R1's) leaves
/// the model inside its reasoning; harmony's ends in a header
/// (<|start|>assistant) whose channel the model writes.
class ReasoningRouter {
public:
  ReasoningRouter(const ReasoningMarkers &markers,
                  const std::vector<int32_t> &prompt, TokenSpelling spell);
  TokenPart route(int32_t token);

private:
  void appendHeader(const std::string &text);

  /// Header and Body: a harmony message's; ChannelName and Dropped: a
  /// Gemma 4 channel's name (up to its newline), and a channel other than
  /// thought, whose text is not output.
  enum class State { Answer, Thinking, Header, Body, ChannelName, Dropped };
  ReasoningMarkers markers;
  TokenSpelling spell;
  State state = State::Answer;
  /// A harmony header's (or a Gemma 4 channel name's) text so far, and
  /// whether the body after it is the analysis channel's.
  std::string header;
  bool analysis = false;
};

} // namespace tfm::serve

#endif // TFM_SERVE_REASONING_H
