//===- Reasoning.cpp - a thinking model's reasoning apart from its answer -===//

#include "serve/Reasoning.h"

#include <algorithm>

using namespace tfm::serve;

const char *ReasoningMarkers::name() const {
  return think()     ? "think"
         : harmony() ? "harmony"
         : gemma4()  ? "gemma4"
                     : "none";
}

ReasoningMarkers tfm::serve::findReasoningMarkers(int64_t vocabulary,
                                                  const TokenSpelling &spell) {
  ReasoningMarkers found;
  struct Marker {
    const char *spelling;
    int32_t *id;
  } markers[] = {{"<think>", &found.thinkOpen},
                 {"</think>", &found.thinkClose},
                 {"<|start|>", &found.start},
                 {"<|channel|>", &found.channel},
                 {"<|message|>", &found.message},
                 {"<|end|>", &found.end},
                 {"<|channel>", &found.channelOpen},
                 {"<channel|>", &found.channelClose}};
  for (int64_t id = 0; id < vocabulary && id <= INT32_MAX; ++id) {
    std::string text = spell(int32_t(id));
    // Every marker is spelled "<...>": most tokens are passed at once.
    if (text.size() < 7 || text.front() != '<' || text.back() != '>')
      continue;
    for (Marker &marker : markers)
      if (*marker.id < 0 && text == marker.spelling)
        *marker.id = int32_t(id);
  }
  return found;
}

namespace {

/// The channel a harmony header names ("<|channel|>analysis" and perhaps
/// " to=functions.f" or "<|constrain|>json" after it): the word after
/// <|channel|>; empty where it names none.
std::string channelOf(const std::string &header) {
  static const std::string kChannel = "<|channel|>";
  size_t at = header.find(kChannel);
  if (at == std::string::npos)
    return "";
  size_t begin = at + kChannel.size(), end = begin;
  while (end < header.size() && header[end] != ' ' && header[end] != '<')
    ++end;
  return header.substr(begin, end - begin);
}

} // namespace

ReasoningRouter::ReasoningRouter(const ReasoningMarkers &markers,
                                 const std::vector<int32_t> &prompt,
                                 TokenSpelling spell)
    : markers(markers), spell(std::move(spell)) {
  // The prompt's own markers say where the model starts: inside <think>
  // where the template opened it and did not close it, in a header after
  // harmony's <|start|>assistant.
  for (int32_t token : prompt)
    (void)route(token);
}

TokenPart ReasoningRouter::route(int32_t token) {
  if (markers.think()) {
    if (token == markers.thinkOpen) {
      state = State::Thinking;
      return TokenPart::Markup;
    }
    if (token == markers.thinkClose) {
      state = State::Answer;
      return TokenPart::Markup;
    }
  }
  if (markers.harmony()) {
    if (token == markers.start) {
      state = State::Header;
      header.clear();
      return TokenPart::Markup;
    }
    if (token == markers.end) {
      state = State::Answer;
      return TokenPart::Markup;
    }
    if (token == markers.message && state == State::Header) {
      analysis = channelOf(header) == "analysis";
      state = State::Body;
      return TokenPart::Markup;
    }
    // A header the model begins without <|start|> (its role given).
    if (token == markers.channel && state != State::Header) {
      state = State::Header;
      header.clear();
    }
    if (state == State::Header) {
      appendHeader(spell(token));
      return TokenPart::Markup;
    }
  }
  if (markers.gemma4()) {
    if (token == markers.channelOpen) {
      state = State::ChannelName;
      header.clear();
      return TokenPart::Markup;
    }
    if (token == markers.channelClose) {
      state = State::Answer;
      return TokenPart::Markup;
    }
    // The channel's name ends with its line: "thought\n" opens the
    // reasoning; another channel's text is dropped, as llama.cpp does.
    if (state == State::ChannelName) {
      appendHeader(spell(token));
      if (header.find('\n') != std::string::npos)
        state = header.rfind("thought", 0) == 0 ? State::Thinking
                                                : State::Dropped;
      return TokenPart::Markup;
    }
    if (state == State::Dropped)
      return TokenPart::Markup;
  }
  switch (state) {
  case State::Thinking:
    return TokenPart::Reasoning;
  case State::Body:
    return analysis ? TokenPart::Reasoning : TokenPart::Content;
  default:
    return TokenPart::Content;
  }
}

void ReasoningRouter::appendHeader(const std::string &text) {
  // A header is a few words; a model that never ends one does not make it
  // grow without bound.
  constexpr size_t kLongestHeader = 256;
  header.append(text, 0, kLongestHeader - std::min(header.size(), kLongestHeader));
}
