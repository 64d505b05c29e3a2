//===- Server.cpp - an OpenAI-compatible server for a compiled model -----===//
//
// What tfm-serve runs (tools/tfm-serve parses its options): loads a
// language model, an embedder, a speech recognizer or a diffusion pipeline
// compiled with `tfmc --emit=lib` and serves it over HTTP (HttpServer.h):
// an embedder's /v1/embeddings (Embeddings.h), a classifier's /classify
// and a cross-encoder's /rerank (Classification.h), both with concurrent
// requests packed into shared calls (EncoderCalls.h), a recognizer's
// /v1/audio/transcriptions (Transcriptions.h), a Stable Diffusion
// pipeline's /v1/images/generations (Images.h), a language model's
// /v1/completions and /v1/chat/completions (streamed with server-sent
// events when asked; chats rendered with the model's chat template,
// jinja/ChatTemplate.h), /v1/models, /health, and /metrics in
// Prometheus' text format; with --api-key, every endpoint but /health for
// the key's holders only; over TLS with --ssl-cert and --ssl-key. HTTP and
// its limits against hostile clients are HttpServer.h's. Requests are
// decoded together by the runtime's batch engine (tfm/tfm_engine.h); see
// Scheduler.h for the threads.
//
//===----------------------------------------------------------------------===//

#include "serve/Server.h"
#include "compiler/LibraryNames.h"
#include "serve/Classification.h"
#include "serve/Embeddings.h"
#include "serve/EncoderCalls.h"
#include "serve/HttpServer.h"
#include "serve/Images.h"
#include "serve/Multipart.h"
#include "serve/OpenAiApi.h"
#include "serve/Scheduler.h"
#include "serve/Transcriptions.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <fstream>
#include <optional>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <unistd.h>

using namespace tfm::serve;
using json = nlohmann::ordered_json;

namespace {

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "tfm-serve: error: %s\n", message.c_str());
  std::exit(1);
}

/// NAME from .../libNAME.so[.x]: the model's name as tfmc exports it.
std::string libraryStem(const std::string &path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  if (base.rfind("lib", 0) == 0)
    base = base.substr(3);
  return base.substr(0, base.find('.'));
}

const tfm_model_desc *loadLibrary(const std::string &path,
                                  const std::string &givenSymbol,
                                  std::string &name) {
  // dlopen maps a library cut short and dies of SIGBUS touching what is
  // not there: its ELF image is checked against the file first.
  tfm_status status;
  if (tfm_model_library_check(path.c_str(), &status) != TFM_OK)
    fail(status.message);
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library)
    fail("cannot load '" + path + "': " + dlerror());
  name = libraryStem(path);
  // tfmc's symbol names: libllama-kv-int8.so exports llama_kv_int8_model.
  std::string symbol = givenSymbol.empty()
                           ? mlir::tfm::identifierFrom(name) + "_model"
                           : givenSymbol;
  auto *desc = static_cast<const tfm_model_desc *>(
      dlsym(library, symbol.c_str()));
  if (!desc)
    fail("'" + path + "' exports no '" + symbol +
         "' (tfmc --emit=lib -o libNAME.so exports NAME_model; "
         "--model-symbol names another)");
  return desc;
}

/// The tokens that spell the tool call format's markers: the special ones
/// are shown to the parser, the opener is a required call's start.
void findToolMarkers(ServedModel &served) {
  if (!served.tokenizer || served.toolFormat == ToolFormat::None)
    return;
  std::vector<std::string> markers = toolMarkers(served.toolFormat);
  for (int64_t id = 0; id < served.desc->vocab_size && id <= INT32_MAX; ++id) {
    auto token = int32_t(id);
    std::string text = served.spelling(token);
    auto found = std::find(markers.begin(), markers.end(), text);
    if (found == markers.end())
      continue;
    if (found == markers.begin() && served.toolOpenerToken < 0)
      served.toolOpenerToken = token;
    if (tfm_tokenizer_is_special(served.tokenizer, token))
      served.toolMarkerTokens.push_back(token);
  }
}

/// The chat template: --chat-template's file (refused at start when it
/// cannot be rendered), or the model's (a problem then only refuses chats).
/// Returns where it came from, for the start-up message.
std::string loadChatTemplate(const ServerOptions &o, ServedModel &served) {
  std::string source, origin;
  if (!o.chatTemplate.empty()) {
    std::ifstream in(o.chatTemplate, std::ios::binary);
    if (!in)
      fail("cannot read the chat template '" + o.chatTemplate + "'");
    std::stringstream text;
    text << in.rdbuf();
    source = text.str();
    origin = "'" + o.chatTemplate + "'";
  } else if (served.desc->chat_template) {
    source = served.desc->chat_template;
    origin = "the model's";
  } else {
    served.chatTemplateProblem =
        "the model has no chat template (tokenizer_config.json's "
        "chat_template, or tfmc --chat-template): /v1/chat/completions needs "
        "one; start tfm-serve with --chat-template FILE";
    served.toolFormatProblem = served.chatTemplateProblem;
    return "none";
  }
  std::string error;
  served.chatTemplate = ChatTemplate::parse(source, error);
  if (served.chatTemplate) {
    served.toolFormat = detectToolFormat(source, served.toolFormatProblem);
    findToolMarkers(served);
    return origin;
  }
  if (!o.chatTemplate.empty())
    fail("the chat template '" + o.chatTemplate + "': " + error);
  served.chatTemplateProblem =
      "the model's chat template cannot be rendered by tfm-serve (" + error +
      "); start tfm-serve with --chat-template FILE";
  return "unusable: " + error;
}

/// What templates call bos_token and eos_token: the tokens' spellings.
void recordSpecialTokens(ServedModel &served) {
  if (!served.tokenizer)
    return;
  for (auto [name, id] : {std::pair<const char *, int32_t>{
                              "bos_token", served.desc->bos_token},
                          {"eos_token", served.desc->eos_token}}) {
    size_t size = 0;
    const char *piece =
        id >= 0 ? tfm_tokenizer_decode(served.tokenizer, -1, id, -1, &size)
                : nullptr;
    if (piece)
      served.specialTokens[name] = std::string(piece, size);
  }
  served.reasoning = findReasoningMarkers(
      served.desc->vocab_size,
      [&served](int32_t token) { return served.spelling(token); });
}

void sendError(HttpResponse &res, const ApiError &error) {
  res.status = error.status;
  res.setContent(jsonText(error.body()), "application/json");
  // A full server is a moment's state: clients may come back.
  if (error.status == 503)
    res.headers.emplace_back("Retry-After", "1");
}

/// Prometheus' text format.
std::string metricsText(const SchedulerStats &s) {
  std::ostringstream out;
  auto metric = [&](const char *name, const char *type, const char *help) {
    out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' '
        << type << '\n';
  };
  // One metric of one sample.
  auto single = [&](const char *name, const char *type, const char *help,
                    auto value) {
    metric(name, type, help);
    out << name << ' ' << value << '\n';
  };
  single("tfm_requests_running", "gauge",
         "Requests holding a KV slot (prefilling or generating).",
         s.engine.running);
  single("tfm_requests_waiting", "gauge", "Requests queued for a slot.",
         s.engine.waiting);
  metric("tfm_requests_total", "counter", "Requests by outcome.");
  out << "tfm_requests_total{outcome=\"admitted\"} " << s.requestsAdmitted
      << "\ntfm_requests_total{outcome=\"rejected\"} " << s.requestsRejected
      << "\ntfm_requests_total{outcome=\"cancelled\"} " << s.requestsCancelled
      << "\ntfm_requests_total{outcome=\"finished\"} " << s.requestsFinished
      << '\n';
  single("tfm_prompt_tokens_total", "counter", "Prompt tokens prefilled.",
         s.engine.prompt_tokens);
  single("tfm_prompt_tokens_reused_total", "counter",
         "Prompt tokens whose KV blocks were shared, not prefilled.",
         s.engine.prefix_tokens_reused);
  single("tfm_generation_tokens_total", "counter", "Tokens generated.",
         s.engine.generated_tokens);
  single("tfm_preemptions_total", "counter",
         "Requests that gave back their KV blocks to be prefilled again.",
         s.engine.preemptions);
  single("tfm_engine_steps_total", "counter", "Batch engine steps.",
         s.engine.steps);
  single("tfm_model_calls_total", "counter",
         "The model's calls the steps made (one a micro-batch for a model in "
         "pipeline stages).",
         s.engine.model_calls);
  metric("tfm_kv_blocks", "gauge", "KV cache blocks by state.");
  out << "tfm_kv_blocks{state=\"total\"} " << s.engine.kv_blocks
      << "\ntfm_kv_blocks{state=\"used\"} " << s.engine.kv_blocks_used
      << "\ntfm_kv_blocks{state=\"shared\"} " << s.engine.kv_blocks_shared
      << "\ntfm_kv_blocks{state=\"cached\"} " << s.engine.kv_blocks_cached
      << '\n';
  single("tfm_kv_block_bytes", "gauge", "Bytes of one KV block.",
         s.engine.kv_block_bytes);
  metric("tfm_time_per_output_token_seconds", "histogram",
         "Time between a request's consecutive tokens.");
  uint64_t cumulative = 0;
  for (size_t b = 0; b <= kTokenGapBuckets.size(); ++b) {
    cumulative += s.tokenGapCounts[b];
    out << "tfm_time_per_output_token_seconds_bucket{le=\"";
    if (b < kTokenGapBuckets.size())
      out << kTokenGapBuckets[b];
    else
      out << "+Inf";
    out << "\"} " << cumulative << '\n';
  }
  out << "tfm_time_per_output_token_seconds_sum " << s.tokenGapSeconds
      << "\ntfm_time_per_output_token_seconds_count " << cumulative << '\n';
  return out.str();
}

/// Where reasoning is apart, text that starts a part of a chat's output
/// loses its leading white space (Qwen3 writes "<think>\n...\n</think>\n\n
/// answer"); `started` says whether the part has begun.
std::string trimStart(std::string text, bool &started) {
  if (!started)
    text.erase(0, text.find_first_not_of(" \t\r\n"));
  started = started || !text.empty();
  return text;
}

/// One completion's progress, shared by a streaming response's calls.
struct Generation {
  std::shared_ptr<Completion> completion;
  TextStream text;
  /// A thinking model's reasoning, apart where the request asks for it:
  /// each token's part, and the reasoning's own text (no stop strings).
  std::optional<ReasoningRouter> router;
  TextStream thoughts;
  bool contentStarted = false, reasoningStarted = false;
  /// A chat with tools: the answer's calls, parsed out of its text
  /// (`calls`, of which a stream has sent `callsSent`).
  ToolRequest tools;
  std::optional<ToolCallParser> toolParser;
  std::vector<ToolCall> calls;
  size_t callsSent = 0;
  /// The drafts so far, for the usage (none where the request drafts
  /// none).
  std::optional<Speculation> drafts() const {
    if (!drafting)
      return std::nullopt;
    std::lock_guard<std::mutex> lock(completion->mutex);
    return Speculation{completion->drafted, completion->accepted};
  }
  size_t seen = 0; // tokens taken from the completion
  bool done = false;
  bool sentFirstChunk = false;
  bool drafting = false; // speculative decoding: usage counts the drafts
  /// The response's model: the adapter the request ran with, or the base.
  std::string modelName;
  Generation(std::shared_ptr<Completion> completion, const ServedModel &model,
             const CompletionRequest &request, uint64_t idSeed)
      : completion(std::move(completion)),
        text(model, request.stop, request.prompt.back(),
             request.parsesToolCalls(model) ? model.toolMarkerTokens
                                            : std::vector<int32_t>{}),
        thoughts(model, {}, request.prompt.back()), tools(request.tools) {
    // Prompt lookup, or else the server's draft model.
    drafting = request.lookupNgram > 0 || !model.draftName.empty();
    modelName = request.loraName.empty() ? model.name : request.loraName;
    if (request.separateReasoning)
      router.emplace(model.reasoning, request.prompt,
                     [&model](int32_t token) { return model.spelling(token); });
    else
      contentStarted = true; // the output as it is
    if (request.parsesToolCalls(model))
      toolParser.emplace(model.toolFormat, tools, request.toolCallOpened,
                         idSeed);
  }

  /// The answer's text through the tool call parser, if any; `last`: the
  /// answer has ended.
  std::string answer(const std::string &piece, bool last) {
    if (!toolParser)
      return piece;
    std::string out = toolParser->add(piece);
    if (last)
      out += toolParser->finish();
    for (ToolCall &call : toolParser->takeCalls())
      calls.push_back(std::move(call));
    return out;
  }

  /// finish_reason: "tool_calls" once the answer called a function, unless
  /// max_tokens cut it ("length").
  const char *finish(const char *reason) const {
    return calls.empty() || std::strcmp(reason, "length") == 0 ? reason
                                                               : "tool_calls";
  }

  /// The calls a stream has not sent yet, as its deltas list them.
  json unsentCalls() {
    json out = json::array();
    for (; callsSent < calls.size(); ++callsSent) {
      json call = calls[callsSent].toJson();
      json delta = {{"index", callsSent}};
      for (auto &[key, value] : call.items())
        delta[key] = value;
      out.push_back(std::move(delta));
    }
    return out;
  }

  json allCalls() const {
    json out = json::array();
    for (const ToolCall &call : calls)
      out.push_back(call.toJson());
    return out;
  }

  /// Waits up to `wait` for tokens; returns the new text (and the new
  /// tokens in `fresh`, the new reasoning in `reasoning`); `done` tells
  /// whether the generation ended (then `reason` says how).
  std::string advance(Scheduler &scheduler, std::chrono::milliseconds wait,
                      const char *&reason, std::string &error,
                      std::vector<int32_t> &fresh, std::string &reasoning) {
    bool finished;
    {
      std::unique_lock<std::mutex> lock(completion->mutex);
      completion->changed.wait_for(lock, wait, [&] {
        return completion->tokens.size() > seen || completion->finished;
      });
      fresh.assign(completion->tokens.begin() + long(seen),
                   completion->tokens.end());
      finished = completion->finished;
      reason = finishReason(completion->reason, false);
      error = completion->error;
    }
    std::string out;
    reasoning.clear();
    for (size_t i = 0; i < fresh.size(); ++i) {
      ++seen;
      TokenPart part = router ? router->route(fresh[i]) : TokenPart::Content;
      if (part == TokenPart::Reasoning)
        reasoning += trimStart(thoughts.add(fresh[i]), reasoningStarted);
      if (part != TokenPart::Content)
        continue;
      std::string piece = text.add(fresh[i]);
      out += trimStart(answer(piece, text.stopped()), contentStarted);
      if (text.stopped()) {
        fresh.resize(i + 1);
        scheduler.cancel(completion);
        reason = finishReason(TFM_FINISH_NONE, true);
        done = true;
        reasoning += trimStart(thoughts.flush(), reasoningStarted);
        return out;
      }
    }
    if (finished) {
      out += trimStart(answer(text.flush(), true), contentStarted);
      reasoning += trimStart(thoughts.flush(), reasoningStarted);
      done = true;
    }
    return out;
  }
};

std::string sseEvent(const json &data) {
  return "data: " + jsonText(data) + "\n\n";
}

} // namespace

namespace {

/// A vision-language model's images in chats (ImageInputs.h): each file's
/// rows and ids as tfm_image_tokens_memory and tfm_image_prompt_ids make them
/// (decoded, preprocessed or tiled as the model's processor does, through
/// @encode_image). The call runs beside the engine's steps (the runtime's pool
/// takes one job at a time).
void acceptImages(tfm_model *model, ServedModel &served) {
  if (!tfm_model_entry_point(model, "encode_image") ||
      !tfm_model_entry_point(model, "prefill_batch_embeddings"))
    return;
  served.imageToken = served.desc->image_token;
  // A processor's marker the tokenizer expands into the placeholders
  // (Gemma 3's <start_of_image>) stands for the image, as its template
  // writes it; else the placeholder, widened to the image's rows.
  served.imageMarker = served.spelling(served.imageToken);
  const char *text = nullptr, *replacement = nullptr;
  for (int32_t i = 0; served.tokenizer; ++i) {
    tfm_tokenizer_prompt_replacement(served.tokenizer, i, &text, &replacement);
    if (!text)
      break;
    if (std::string(replacement).find(served.imageMarker) !=
        std::string::npos) {
      served.imageMarker = text;
      break;
    }
  }
  served.encodeImage = [model](const std::string &file,
                               std::vector<float> &rows,
                               std::vector<int32_t> &ids) -> std::string {
    tfm_tensor out = {};
    tfm_status status;
    int64_t grid[2] = {0, 0};
    if (tfm_image_tokens_memory(model,
                                reinterpret_cast<const uint8_t *>(file.data()),
                                file.size(), &out, grid, &status) != TFM_OK)
      return status.message;
    const float *data = static_cast<const float *>(out.data);
    int64_t count = out.shape[0];
    rows.insert(rows.end(), data, data + count * out.shape[1]);
    tfm_tensor_release(&out);
    int64_t length = 0;
    if (tfm_image_prompt_ids(model, grid, count, nullptr, 0, &length,
                             &status) != TFM_OK)
      return status.message;
    ids.resize(size_t(length));
    if (tfm_image_prompt_ids(model, grid, count, ids.data(), length, &length,
                             &status) != TFM_OK)
      return status.message;
    return "";
  };
}

/// The two generation endpoints (/v1/completions, /v1/chat/completions):
/// they differ in how the prompt is given and in the shape of their
/// responses, answered whole or streamed as server-sent events.
class CompletionEndpoints {
public:
  /// `idle`: how long a connection may go without a byte (--timeout).
  CompletionEndpoints(const ServedModel &served, Scheduler &scheduler,
                      std::chrono::milliseconds idle)
      : served(served), scheduler(scheduler), keepAlive(idle / 2) {
    std::random_device entropy;
    nextSeed = (uint64_t(entropy()) << 32) | entropy();
  }

  void handle(Endpoint endpoint, const HttpRequest &req,
              HttpResponse &res) {
    CompletionRequest request;
    if (auto error = parseCompletionRequest(endpoint, req.body, served,
                                            nextSeed++, request))
      return sendError(res, *error);
    tfm_engine_request submitted = {
        request.prompt.data(), int64_t(request.prompt.size()),
        request.maxTokens,     request.sampler,
        request.ignoreEos,     request.grammar.get(),
        request.lookupNgram,   0,
        request.lora,          request.imageRows.data(),
        request.imageRowCount};
    Scheduler::Refusal refusal;
    std::string why;
    auto completion = scheduler.submit(submitted, refusal, why);
    if (completion)
      (void)request.grammar.release(); // the engine's now
    if (!completion)
      return sendError(res, refusal == Scheduler::Refusal::Full
                                ? ApiError{503, why, "", "server_full"}
                                : ApiError{400, why, "prompt", ""});
    std::string id = (endpoint == Endpoint::Completions ? "cmpl-" : "chatcmpl-") +
                     std::to_string(nextId++);
    int64_t created = int64_t(std::time(nullptr));
    auto generation = std::make_shared<Generation>(completion, served,
                                                   request, nextSeed++);
    if (!request.stream)
      return respondWhole(endpoint, res, generation, id, created);
    res.headers.emplace_back("Cache-Control", "no-cache");
    res.contentType = "text/event-stream";
    res.stream = [this, endpoint, generation, id,
                  created](std::string &out) {
      return streamEvents(endpoint, out, *generation, id, created);
    };
    // Sent whole, or its client gone: nothing more to generate.
    res.streamClosed = [this, generation] {
      scheduler.cancel(generation->completion);
    };
  }

private:
  /// The whole completion in one response, once generation has ended.
  void respondWhole(Endpoint endpoint, HttpResponse &res,
                    const std::shared_ptr<Generation> &generation,
                    const std::string &id, int64_t created) {
    const auto &completion = generation->completion;
    std::string text, error, reasoning, thought;
    const char *reason = nullptr;
    std::vector<int32_t> fresh;
    while (!generation->done) {
      text += generation->advance(scheduler, std::chrono::seconds(1), reason,
                                  error, fresh, thought);
      reasoning += thought;
    }
    if (!error.empty())
      return sendError(res, ApiError{500, error, "", "server_error"});
    json body = completionResponse(
        endpoint, /*streamed=*/false, id, created, generation->modelName,
        completionChoice(endpoint, text, generation->finish(reason), false,
                         false, reasoning, generation->allCalls()));
    body["usage"] = usage(completion->promptTokens, int64_t(generation->seen),
                          generation->drafts());
    res.setContent(jsonText(body), "application/json");
  }

  /// The next server-sent events of a streamed completion, once there are
  /// any: the tokens made since the last, or at the end the finish reason
  /// (or the error) and [DONE]. False when those were the last. A stream
  /// with no token for half the idle timeout (queued, or a long prefill)
  /// gets an SSE comment, which clients skip: the connection would
  /// otherwise be closed as idle.
  bool streamEvents(Endpoint endpoint, std::string &out,
                    Generation &generation, const std::string &id,
                    int64_t created) {
    const char *reason = nullptr;
    std::string error, text, reasoning;
    std::vector<int32_t> fresh;
    auto waited = std::chrono::milliseconds(0);
    const auto step = std::min(keepAlive, std::chrono::milliseconds(1000));
    while (!generation.done && fresh.empty() && waited < keepAlive) {
      text = generation.advance(scheduler, step, reason, error, fresh,
                                reasoning);
      waited += step;
    }
    auto send = [&](const std::string &event) { out += event; };
    if (!generation.done && fresh.empty()) {
      send(": waiting\n\n");
      return true;
    }
    // Each chunk also lists its tokens (an extension, as vLLM's
    // return_tokens_as_token_ids): text may be empty for a while
    // (a stop string's possible start, a model without tokenizer).
    auto chunk = [&](const std::string &piece, const char *finish) {
      json choice = completionChoice(
          endpoint, piece, finish ? generation.finish(finish) : nullptr, true,
          !generation.sentFirstChunk, reasoning, generation.unsentCalls());
      generation.sentFirstChunk = true;
      choice["token_ids"] = fresh;
      json body = completionResponse(endpoint, /*streamed=*/true, id, created,
                                     generation.modelName, std::move(choice));
      if (finish)
        body["usage"] = usage(generation.completion->promptTokens,
                              int64_t(generation.seen), generation.drafts());
      send(sseEvent(body));
    };
    if (!generation.done) {
      chunk(text, nullptr);
      return true;
    }
    if (error.empty())
      chunk(text, reason);
    else
      send(sseEvent(ApiError{500, error, "", "server_error"}.body()));
    send("data: [DONE]\n\n");
    return false;
  }

  const ServedModel &served;
  Scheduler &scheduler;
  std::chrono::milliseconds keepAlive;
  std::atomic<uint64_t> nextSeed{0};
  std::atomic<uint64_t> nextId{1};
};

/// /health, /v1/models and (a language model's) /metrics.
void addInformationRoutes(HttpServer &server, const ServedModel &served,
                          Scheduler *scheduler) {
  server.route("GET", "/health", [](const HttpRequest &, HttpResponse &res) {
    res.setContent("{\"status\":\"ok\"}", "application/json");
  });
  server.route(
      "GET", "/v1/models", [&](const HttpRequest &, HttpResponse &res) {
        json models =
            json::array({{{"id", served.name},
                          {"object", "model"},
                          {"owned_by", "tfmc"},
                          {"max_model_len", served.contextPositions}}});
        // Each LoRA adapter as a model of its own over the base (vLLM's
        // listing), which requests may name as their model.
        for (const auto &[name, id] : served.adapters)
          models.push_back({{"id", name},
                            {"object", "model"},
                            {"owned_by", "tfmc"},
                            {"parent", served.name},
                            {"max_model_len", served.contextPositions}});
        json list = {{"object", "list"}, {"data", models}};
        res.setContent(jsonText(list), "application/json");
      });
  // The batch engine's metrics (a language model's).
  if (scheduler)
    server.route("GET", "/metrics",
               [scheduler](const HttpRequest &, HttpResponse &res) {
                 res.setContent(metricsText(scheduler->stats()),
                                 "text/plain; version=0.0.4");
               });
}

/// An encoder's /metrics: its calls and the inputs they ran (several a call
/// where requests were packed together).
void addEncoderMetrics(HttpServer &server, const EncoderCalls &calls) {
  server.route("GET", "/metrics", [&calls](const HttpRequest &,
                                  HttpResponse &res) {
    std::string text =
        "# HELP tfm_encoder_calls_total Calls of the encoder's entry point.\n"
        "# TYPE tfm_encoder_calls_total counter\n"
        "tfm_encoder_calls_total " +
        std::to_string(calls.callCount()) +
        "\n# HELP tfm_encoder_inputs_total Inputs those calls ran.\n"
        "# TYPE tfm_encoder_inputs_total counter\n"
        "tfm_encoder_inputs_total " +
        std::to_string(calls.inputCount()) + "\n";
    res.setContent(text, "text/plain; version=0.0.4");
  });
}

/// Errors as OpenAI's JSON bodies, also for requests no route answered.
void addErrorWriter(HttpServer &server) {
  server.setErrorWriter(
      [](HttpResponse &res, int status, const std::string &message) {
        sendError(res, ApiError{status, message, "", ""});
      });
}

/// Whether `given` equals `expected`, in time that depends on their lengths
/// only: an attacker timing replies learns nothing of how much of a guess
/// was right.
bool sameKey(const std::string &given, const std::string &expected) {
  size_t longest = std::max(given.size(), expected.size());
  unsigned char difference = given.size() != expected.size();
  for (size_t i = 0; i < longest; ++i) {
    unsigned char a = i < given.size() ? given[i] : 0;
    unsigned char b = i < expected.size() ? expected[i] : 0;
    difference |= a ^ b;
  }
  return difference == 0;
}

/// --api-key: every request but /health carries "Authorization: Bearer
/// KEY", or gets 401 with OpenAI's error object; without a key, a server
/// open to more than this machine says so.
void requireApiKey(HttpServer &server, const ServerOptions &o) {
  if (o.apiKey.empty()) {
    bool loopback = o.host == "localhost" || o.host == "::1" ||
                    o.host.rfind("127.", 0) == 0;
    if (!loopback)
      std::fprintf(stderr,
                   "tfm-serve: warning: listening on %s without --api-key: "
                   "anyone who can reach this address can use the model\n",
                   o.host.c_str());
    return;
  }
  // Checked on the request's head: a body is read for key holders only.
  server.setGate([key = o.apiKey](const HttpRequest &req, HttpResponse &res) {
    if (req.path == "/health")
      return true;
    static const std::string kBearer = "Bearer ";
    std::string header = req.header("authorization");
    if (header.empty()) {
      sendError(res, ApiError{401,
                              "no API key given: send the header "
                              "'Authorization: Bearer KEY'",
                              "", "invalid_api_key"});
      return false;
    }
    bool bearer = header.rfind(kBearer, 0) == 0;
    if (!bearer || !sameKey(header.substr(kBearer.size()), key)) {
      sendError(res, ApiError{401, "incorrect API key provided", "",
                              "invalid_api_key"});
      return false;
    }
    return true;
  });
}

/// The whole of a file given on the command line (`option` names it), or
/// a failure.
std::string readOptionFile(const char *option, const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(std::string("cannot read ") + option + " '" + path + "'");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// An embedder's /v1/embeddings: the inputs through `entry` (@embed or
/// @embed_text), packed with other requests' (EncoderCalls).
class EmbeddingEndpoint {
public:
  EmbeddingEndpoint(const ServedModel &served, tfm_model *model,
                    EncoderEntry entry)
      : served(served), entry(entry), calls(model, entry) {}

  int64_t dimensions() const { return entry.width(); }
  const EncoderCalls &encoderCalls() const { return calls; }

  void handle(const HttpRequest &req, HttpResponse &res) {
    EmbeddingRequest request;
    if (std::optional<ApiError> error = parseEmbeddingRequest(
            req.body, served, dimensions(), served.desc->max_context, request))
      return sendError(res, *error);
    std::vector<EncoderInput> inputs;
    for (std::vector<int32_t> &ids : request.inputs)
      inputs.push_back({std::move(ids), {}});
    std::vector<std::vector<float>> embeddings;
    if (std::optional<std::string> error = calls.run(inputs, embeddings))
      return sendError(res, ApiError{500, *error, "", ""});
    res.setContent(
        jsonText(embeddingResponse(embeddings, request.base64, served.name,
                                   request.promptTokens)),
        "application/json");
  }

private:
  const ServedModel &served;
  EncoderEntry entry;
  EncoderCalls calls;
};

/// A sequence classifier's /classify, and a cross-encoder's (one logit)
/// /rerank and /v1/rerank, through @classify packed with other requests'.
class ClassifierEndpoints {
public:
  ClassifierEndpoints(const ServedModel &served, tfm_model *model,
                      EncoderEntry entry)
      : served(served), entry(entry), calls(model, entry) {}

  int64_t labels() const { return entry.width(); }
  const EncoderCalls &encoderCalls() const { return calls; }
  bool reranks() const { return labels() == 1; }

  void classify(const HttpRequest &req, HttpResponse &res) {
    ClassificationRequest request;
    if (std::optional<ApiError> error = parseClassificationRequest(
            req.body, served, served.desc->max_context, request))
      return sendError(res, *error);
    std::vector<std::vector<float>> logits;
    if (std::optional<std::string> error = calls.run(request.inputs, logits))
      return sendError(res, ApiError{500, *error, "", ""});
    int64_t created = int64_t(std::time(nullptr));
    res.setContent(jsonText(classificationResponse(
                        logits, served, request.promptTokens,
                        "classify-" + std::to_string(++requests), created)),
                    "application/json");
  }

  void rerank(const HttpRequest &req, HttpResponse &res) {
    RerankRequest request;
    if (std::optional<ApiError> error = parseRerankRequest(
            req.body, served, served.desc->max_context, request))
      return sendError(res, *error);
    std::vector<std::vector<float>> logits;
    if (std::optional<std::string> error = calls.run(request.pairs, logits))
      return sendError(res, ApiError{500, *error, "", ""});
    res.setContent(jsonText(rerankResponse(logits, request, served.name)),
                    "application/json");
  }

private:
  const ServedModel &served;
  EncoderEntry entry;
  EncoderCalls calls;
  std::atomic<int64_t> requests{0};
};

/// The spelling of token `id` (a special token's, as <|en|>).
std::string spelling(const tfm_tokenizer *tokenizer, int32_t id) {
  size_t size = 0;
  const char *piece = tfm_tokenizer_decode(tokenizer, -1, id, -1, &size);
  return piece ? std::string(piece, size) : std::string();
}

/// Whether `token` spells a Whisper language, <|xx|> or <|xxx|>.
bool isLanguageToken(const std::string &token) {
  if (token.size() < 6 || token.size() > 7 || token.rfind("<|", 0) != 0 ||
      token.compare(token.size() - 2, 2, "|>") != 0)
    return false;
  for (size_t i = 2; i + 2 < token.size(); ++i)
    if (token[i] < 'a' || token[i] > 'z')
      return false;
  return true;
}

/// A speech model's /v1/audio/transcriptions (and Whisper's with timestamp
/// tokens /v1/audio/translations): the upload written to a temporary file
/// for libsndfile, then a CTC recognizer's chunks (tfm_ctc_transcribe),
/// Whisper's windows (tfm_whisper_transcribe), or for Whisper without
/// timestamp tokens its first 30 s (tfm_log_mel, tfm_seq2seq_text) with
/// its prompt's language as asked; one call at a time.
class TranscriptionEndpoint {
public:
  TranscriptionEndpoint(const ServedModel &served, tfm_model *model,
                        SpeechModel speech)
      : served(served), model(model), speech(speech) {}

  bool translates() const { return speech == SpeechModel::WhisperTimestamps; }

  /// /v1/audio/transcriptions, or with `translate` /v1/audio/translations.
  void handle(const HttpRequest &req, HttpResponse &res, bool translate) {
    std::string contentType = req.header("content-type");
    if (!isMultipartForm(contentType))
      return sendError(res, ApiError{400,
                                     "the body must be a multipart form "
                                     "(multipart/form-data) with the audio "
                                     "as 'file'",
                                     "", ""});
    std::map<std::string, std::string> fields;
    if (std::optional<std::string> malformed =
            parseMultipartForm(contentType, req.body, fields))
      return sendError(res, ApiError{400, *malformed, "", ""});
    TranscriptionRequest request;
    if (std::optional<ApiError> error = parseTranscriptionRequest(
            fields, served, speech, translate, request))
      return sendError(res, *error);
    if (speech == SpeechModel::WhisperTimestamps)
      return answerWindows(request, res);
    if (speech == SpeechModel::Ctc)
      return answerChunks(request, res);
    std::string text, language;
    double duration = 0;
    if (std::optional<ApiError> error =
            transcribe(request, text, language, duration))
      return sendError(res, *error);
    if (request.format == TranscriptionFormat::Text)
      res.setContent(text + "\n", "text/plain; charset=utf-8");
    else
      res.setContent(
          jsonText(transcriptionResponse(text, request, language, duration)),
          "application/json");
  }

private:
  /// The upload in a temporary file for libsndfile, and `read` called on
  /// its path; the file is removed after. An error names the upload, not
  /// the temporary file.
  template <typename Read>
  std::optional<ApiError> readUpload(const std::string &audio, Read read) {
    const char *directory = std::getenv("TMPDIR");
    std::string path =
        std::string(directory && *directory ? directory : "/tmp") +
        "/tfm-serve-audio-XXXXXX";
    int fd = mkstemp(path.data());
    if (fd < 0)
      return ApiError{500, "cannot store the upload", "", ""};
    bool written =
        write(fd, audio.data(), audio.size()) == ssize_t(audio.size());
    close(fd);
    tfm_status status;
    std::optional<ApiError> error;
    if (!written) {
      error = ApiError{500, "cannot store the upload", "", ""};
    } else if (read(path.c_str(), status) != TFM_OK) {
      std::string message = status.message;
      for (size_t at; (at = message.find(path)) != std::string::npos;)
        message.replace(at, path.size(), "the uploaded file");
      error = ApiError{400, message, "file", ""};
    }
    unlink(path.c_str());
    return error;
  }

  /// All of the upload's samples (up to kLongestUpload seconds).
  std::optional<ApiError> readWholeUpload(const TranscriptionRequest &request,
                                          float *&samples, int64_t &n) {
    return readUpload(request.audio, [&](const char *path, tfm_status &status) {
      return tfm_audio_read_all(model, path, kLongestUpload, &samples, &n,
                                &status);
    });
  }

  /// Why a transcript failed: the upload's fault, or the server's memory.
  static ApiError transcriptError(const tfm_status &status) {
    return ApiError{status.code == TFM_ERROR_OUT_OF_MEMORY ? 500 : 400,
                    status.message, "file", ""};
  }

  /// Whisper with timestamps: the whole upload (up to three hours) window
  /// by window, answered in the format asked.
  void answerWindows(const TranscriptionRequest &request, HttpResponse &res) {
    float *samples = nullptr, *features = nullptr;
    int64_t n = 0, frames = 0;
    tfm_transcript *transcript = nullptr;
    std::optional<ApiError> error;
    {
      std::lock_guard<std::mutex> lock(calls);
      error = readWholeUpload(request, samples, n);
      // OpenAI's temperature 0: fall back by 0.2 up to 1 where a window
      // repeats itself or is unlikely.
      std::vector<float> temperatures;
      for (int k = 0; request.temperature + 0.2 * k <= 1.0 + 1e-6; ++k)
        temperatures.push_back(float(request.temperature + 0.2 * k));
      tfm_whisper_options options;
      tfm_whisper_options_default(&options);
      options.language =
          request.language.empty() ? nullptr : request.language.c_str();
      options.task = request.translate ? "translate" : nullptr;
      options.prompt =
          request.prompt.empty() ? nullptr : request.prompt.c_str();
      options.temperatures = temperatures.data();
      options.temperature_count = int32_t(temperatures.size());
      options.word_timestamps = request.words;
      tfm_status status;
      if (!error && (tfm_log_mel_all(model, samples, n, &features, &frames,
                                     &status) != TFM_OK ||
                     tfm_whisper_transcribe(model, features, frames, &options,
                                            &transcript, &status) != TFM_OK))
        error = transcriptError(status);
    }
    std::free(samples);
    std::free(features);
    answerTranscript(request, transcript, error, res);
  }

  /// A CTC recognizer: the whole upload (up to three hours), in 30 s
  /// chunks past the longest clip it takes, its words' times where asked.
  void answerChunks(const TranscriptionRequest &request, HttpResponse &res) {
    float *samples = nullptr;
    int64_t n = 0;
    tfm_transcript *transcript = nullptr;
    std::optional<ApiError> error;
    {
      std::lock_guard<std::mutex> lock(calls);
      error = readWholeUpload(request, samples, n);
      int64_t longest = served.desc->max_context;
      double rate = double(served.desc->waveform->sampling_rate);
      tfm_ctc_chunking chunking = {longest > 0 && n > longest
                                       ? std::min(30.0, double(longest) / rate)
                                       : 0.0,
                                   -1.0};
      tfm_status status;
      if (!error && tfm_ctc_transcribe(model, samples, n, &chunking,
                                       &transcript, &status) != TFM_OK)
        error = transcriptError(status);
    }
    std::free(samples);
    answerTranscript(request, transcript, error, res);
  }

  /// `transcript` (freed here) answered in the format asked, or `error`.
  void answerTranscript(const TranscriptionRequest &request,
                        tfm_transcript *transcript,
                        const std::optional<ApiError> &error,
                        HttpResponse &res) {
    std::unique_ptr<tfm_transcript, decltype(&tfm_transcript_free)> owned(
        transcript, &tfm_transcript_free);
    if (error)
      return sendError(res, *error);
    tfm_transcript_format format =
        request.format == TranscriptionFormat::Srt   ? TFM_TRANSCRIPT_SRT
        : request.format == TranscriptionFormat::Vtt ? TFM_TRANSCRIPT_VTT
                                                     : TFM_TRANSCRIPT_JSON;
    char *written = nullptr;
    tfm_status status;
    if (tfm_transcript_write(transcript, format, &written, &status) != TFM_OK)
      return sendError(res, ApiError{500, status.message, "", ""});
    std::string body(written);
    std::free(written);
    if (format != TFM_TRANSCRIPT_JSON)
      return res.setContent(body, "text/plain; charset=utf-8");
    json verbose = json::parse(body);
    // The API's text has no leading space (the first token's).
    std::string text = verbose["text"].get<std::string>();
    text.erase(0, text.find_first_not_of(' '));
    if (request.format == TranscriptionFormat::Text)
      return res.setContent(text + "\n", "text/plain; charset=utf-8");
    verbose["text"] = text;
    if (request.format == TranscriptionFormat::Json)
      verbose = json{{"text", text}};
    else if (!request.words)
      verbose.erase("words"); // OpenAI's: only where asked for
    res.setContent(jsonText(verbose), "application/json");
  }

  /// Whisper's generation rules for `request`: the model's, its prompt's
  /// language token replaced by the one asked for; `language` gets the
  /// language spoken of (the prompt's, or English without one).
  std::optional<ApiError> whisperRules(const TranscriptionRequest &request,
                                       tfm_generation_rules &rules,
                                       std::vector<int32_t> &prompt,
                                       std::string &language) {
    tfm_generation_rules_defaults(model, &rules);
    prompt.assign(rules.prompt, rules.prompt + rules.prompt_count);
    int32_t at = -1;
    for (size_t i = 0; i < prompt.size(); ++i)
      if (isLanguageToken(spelling(served.tokenizer, prompt[i])))
        at = int32_t(i);
    language = at >= 0
                   ? spelling(served.tokenizer, prompt[size_t(at)]).substr(2)
                   : "en";
    language = language.substr(0, language.find('|'));
    if (request.language.empty() || request.language == language)
      return std::nullopt;
    if (at < 0)
      return ApiError{400,
                      "'language' \"" + request.language + "\": model '" +
                          served.name +
                          "' hears English only (its prompt names no language)",
                      "language", ""};
    std::string token = "<|" + request.language + "|>";
    int32_t id = -1;
    int64_t count = 0;
    tfm_status status;
    if (tfm_tokenizer_encode(served.tokenizer, token.c_str(), -1, &id, 1,
                             &count, &status) != TFM_OK ||
        count != 1 || spelling(served.tokenizer, id) != token)
      return ApiError{400,
                      "'language' \"" + request.language + "\": model '" +
                          served.name + "' has no " + token + " token",
                      "language", ""};
    prompt[size_t(at)] = id;
    rules.prompt = prompt.data();
    language = request.language;
    return std::nullopt;
  }

  /// Whisper's transcript of `n` samples: log-mel features, then
  /// generation as the rules say.
  std::optional<ApiError> whisperText(const TranscriptionRequest &request,
                                      const float *samples, int64_t n,
                                      std::string &text,
                                      std::string &language) {
    tfm_generation_rules rules;
    std::vector<int32_t> prompt;
    if (std::optional<ApiError> error =
            whisperRules(request, rules, prompt, language))
      return error;
    tfm_status status;
    int32_t *previous = nullptr;
    if (!request.prompt.empty() &&
        tfm_seq2seq_previous_text(model, request.prompt.c_str(), &previous,
                                  &rules.previous_count, &status) != TFM_OK)
      return ApiError{400, "'prompt': " + std::string(status.message), "prompt",
                      ""};
    std::unique_ptr<int32_t, decltype(&std::free)> previousIds(previous,
                                                               &std::free);
    rules.previous = previous;
    const tfm_tensor_desc &input =
        tfm_model_entry_point(model, "encode")->inputs[0];
    tfm_tensor features = {nullptr, TFM_DTYPE_F32, input.rank, {0}, nullptr};
    int64_t count = 1;
    for (int32_t d = 0; d < input.rank; ++d)
      count *= features.shape[d] = input.shape[d];
    std::vector<float> values(static_cast<size_t>(count));
    features.data = values.data();
    char *transcript = nullptr;
    if (tfm_log_mel(model, samples, n, values.data(), count, &status) !=
            TFM_OK ||
        tfm_seq2seq_text(model, &features, 0, 0, &rules, &transcript,
                         &status) != TFM_OK)
      return ApiError{400, status.message, "file", ""};
    text = transcript;
    std::free(transcript);
    // Whisper's text starts with the space its first token carries.
    if (!text.empty() && text[0] == ' ')
      text.erase(0, 1);
    return std::nullopt;
  }

  /// Whisper's first 30 s, as its generation config says.
  std::optional<ApiError> transcribe(const TranscriptionRequest &request,
                                     std::string &text, std::string &language,
                                     double &duration) {
    float *samples = nullptr;
    int64_t n = 0;
    // Decoding too is one clip at a time: each decoded clip takes memory
    // up to the longest the model hears, and uploads arrive together.
    std::lock_guard<std::mutex> lock(calls);
    std::optional<ApiError> error =
        readUpload(request.audio, [&](const char *path, tfm_status &status) {
          return tfm_audio_read(model, path, &samples, &n, &status);
        });
    if (!error) {
      duration =
          double(n) / double(served.desc->audio_preprocessing->sampling_rate);
      error = whisperText(request, samples, n, text, language);
    }
    std::free(samples);
    return error;
  }

  /// The longest upload transcribed window by window or in chunks, in
  /// seconds.
  static constexpr double kLongestUpload = 3 * 3600;

  const ServedModel &served;
  tfm_model *model;
  SpeechModel speech;
  std::mutex calls;
};

/// A Stable Diffusion pipeline's /v1/images/generations: each image a
/// whole sampling loop (tfm_image_generate, its seed the request's plus
/// its index), encoded as PNG in memory (tfm_image_encode_png). One image
/// is generated at a time: a sampling loop keeps the model's threads busy
/// for seconds, so other requests wait their turn on the lock (no queue
/// limit) rather than slow it down. Their connections stay open however
/// long that takes: --timeout counts a client's silence, not a handler's
/// time (tfm-serve-images.test waits 6 s at --timeout 1).
class ImageEndpoint {
public:
  ImageEndpoint(const ServedModel &served, tfm_model *model)
      : served(served), model(model),
        size(compiledImageSize(*served.desc->diffusion)) {}

  ImageSize imageSize() const { return size; }

  void handle(const HttpRequest &req, HttpResponse &res) {
    ImageRequest request;
    if (std::optional<ApiError> error =
            parseImageRequest(req.body, served, request))
      return sendError(res, *error);
    int64_t created = int64_t(std::time(nullptr));
    std::vector<float> image(size_t(size.width * size.height * 3));
    std::vector<std::string> pngs;
    for (int32_t i = 0; i < request.n; ++i) {
      tfm_image_request call = {};
      call.prompt = request.prompt.c_str();
      call.negative_prompt =
          request.negativePrompt ? request.negativePrompt->c_str() : nullptr;
      call.steps = request.steps;
      call.guidance = request.guidance;
      call.seed = request.seed + uint64_t(i);
      call.scheduler =
          request.scheduler.empty() ? nullptr : request.scheduler.c_str();
      tfm_status status;
      tfm_status_code code;
      {
        std::lock_guard<std::mutex> lock(generating);
        code = tfm_image_generate(model, &call, image.data(),
                                  int64_t(image.size()), nullptr, &status);
      }
      // The request was checked: what the loop refuses is the prompt's
      // tokenizing, or the server's fault.
      if (code != TFM_OK)
        return sendError(res, code == TFM_ERROR_TOKENIZER
                                  ? ApiError{400, status.message, "prompt", ""}
                                  : ApiError{500, status.message, "",
                                             "server_error"});
      uint8_t *png = nullptr;
      size_t bytes = 0;
      if (tfm_image_encode_png(image.data(), size.height, size.width, &png,
                               &bytes, &status) != TFM_OK)
        return sendError(res,
                         ApiError{500, status.message, "", "server_error"});
      pngs.emplace_back(reinterpret_cast<const char *>(png), bytes);
      std::free(png);
    }
    res.setContent(jsonText(imageResponse(pngs, created)), "application/json");
  }

private:
  const ServedModel &served;
  tfm_model *model;
  ImageSize size;
  std::mutex generating;
};

/// The entry point an embedder is served through: @embed (sentence
/// embedders) or @embed_text (CLIP), token ids (and token types) in, one
/// vector out.
std::optional<EncoderEntry> embeddingEntry(const tfm_model *model) {
  for (const char *name : {"embed", "embed_text"})
    if (std::optional<EncoderEntry> entry = findEncoderEntry(model, name))
      return entry;
  return std::nullopt;
}

/// What a loaded model serves: a language model through the batch engine,
/// an embedder, a classifier, a speech recognizer, or a diffusion pipeline
/// (which draws only: its text encoder serves its images).
struct ServedKinds {
  std::optional<EncoderEntry> embed, classifier;
  const tfm_diffusion_desc *diffusion = nullptr;
  bool generates = false, recognizes = false;
  /// An encoder-decoder on log-mel features.
  bool whisper = false;
};

/// `model`'s kinds; exits with a message when it serves none of them.
ServedKinds servedKinds(tfm_model *model, const ServedModel &served) {
  ServedKinds kinds;
  kinds.diffusion = served.desc->diffusion;
  if (!kinds.diffusion) {
    kinds.embed = embeddingEntry(model);
    kinds.classifier = findEncoderEntry(model, "classify");
  }
  kinds.generates = tfm_model_entry_point(model, "prefill_batch") != nullptr;
  const tfm_entry_point *encode = tfm_model_entry_point(model, "encode");
  kinds.whisper = served.desc->audio_preprocessing &&
                  !served.desc->audio_preprocessing->kaldi && encode &&
                  tfm_model_entry_point(model, "decode") &&
                  encode->inputs[0].dtype == TFM_DTYPE_F32 && served.tokenizer;
  kinds.recognizes =
      (served.desc->waveform && served.desc->waveform->blank >= 0) ||
      kinds.whisper;
  if (!kinds.generates && !kinds.embed && !kinds.classifier &&
      !kinds.recognizes && !kinds.diffusion)
    fail("model '" + served.name +
         "' has neither @prefill_batch (a decoder language model), @embed "
         "or @embed_text (an embedder), @classify on token ids (a "
         "classifier), a CTC head or Whisper (speech) nor a diffusion "
         "pipeline (images): tfm-serve serves those");
  const tfm_diffusion_desc *diffusion = kinds.diffusion;
  if (diffusion && diffusion->unet_in_channels != diffusion->latent_channels)
    fail("model '" + served.name +
         "' is an inpainting pipeline (its UNet takes " +
         std::to_string(diffusion->unet_in_channels) +
         " channels): tfm-serve draws images from text only");
  return kinds;
}

/// The endpoints' state, alive while the server runs.
struct Endpoints {
  std::unique_ptr<CompletionEndpoints> completions;
  std::unique_ptr<EmbeddingEndpoint> embeddings;
  std::unique_ptr<ClassifierEndpoints> classifiers;
  std::unique_ptr<TranscriptionEndpoint> transcriptions;
  std::unique_ptr<ImageEndpoint> images;
};

/// The routes of what `kinds` says the model serves (the completions with
/// a scheduler: a language model's).
void addModelRoutes(HttpServer &server, const ServedModel &served,
                    tfm_model *model, const ServedKinds &kinds,
                    Scheduler *scheduler, std::chrono::seconds timeout,
                    Endpoints &e) {
  if (scheduler) {
    CompletionEndpoints *completions =
        (e.completions =
             std::make_unique<CompletionEndpoints>(served, *scheduler, timeout))
            .get();
    server.route("POST", "/v1/completions",
                 [completions](const HttpRequest &req, HttpResponse &res) {
                   completions->handle(Endpoint::Completions, req, res);
                 });
    server.route("POST", "/v1/chat/completions",
                 [completions](const HttpRequest &req, HttpResponse &res) {
                   completions->handle(Endpoint::ChatCompletions, req, res);
                 });
    // What a chat request's messages and tools render to (llama.cpp's
    // route): to see what the model is given.
    server.route("POST", "/apply-template",
                 [&served](const HttpRequest &req, HttpResponse &res) {
                   std::string prompt;
                   if (auto error = renderChatRequest(req.body, served, prompt))
                     return sendError(res, *error);
                   res.setContent(jsonText(json{{"prompt", prompt}}),
                                  "application/json");
                 });
  }
  if (kinds.embed) {
    EmbeddingEndpoint *embeddings =
        (e.embeddings =
             std::make_unique<EmbeddingEndpoint>(served, model, *kinds.embed))
            .get();
    addEncoderMetrics(server, embeddings->encoderCalls());
    server.route("POST", "/v1/embeddings",
                 [embeddings](const HttpRequest &req, HttpResponse &res) {
                   embeddings->handle(req, res);
                 });
  }
  if (kinds.classifier) {
    ClassifierEndpoints *classifiers =
        (e.classifiers = std::make_unique<ClassifierEndpoints>(
             served, model, *kinds.classifier))
            .get();
    addEncoderMetrics(server, classifiers->encoderCalls());
    server.route("POST", "/classify",
                 [classifiers](const HttpRequest &req, HttpResponse &res) {
                   classifiers->classify(req, res);
                 });
    if (classifiers->reranks())
      for (const char *path : {"/rerank", "/v1/rerank"})
        server.route("POST", path,
                     [classifiers](const HttpRequest &req, HttpResponse &res) {
                       classifiers->rerank(req, res);
                     });
  }
  if (kinds.recognizes) {
    const tfm_generation_defaults *g = served.desc->generation;
    SpeechModel speech = !kinds.whisper ? SpeechModel::Ctc
                         : g && g->no_timestamps >= 1
                             ? SpeechModel::WhisperTimestamps
                             : SpeechModel::Whisper;
    TranscriptionEndpoint *transcriptions =
        (e.transcriptions =
             std::make_unique<TranscriptionEndpoint>(served, model, speech))
            .get();
    server.route("POST", "/v1/audio/transcriptions",
                 [transcriptions](const HttpRequest &req, HttpResponse &res) {
                   transcriptions->handle(req, res, false);
                 });
    if (transcriptions->translates())
      server.route("POST", "/v1/audio/translations",
                   [transcriptions](const HttpRequest &req, HttpResponse &res) {
                     transcriptions->handle(req, res, true);
                   });
  }
  if (kinds.diffusion) {
    ImageEndpoint *images =
        (e.images = std::make_unique<ImageEndpoint>(served, model)).get();
    server.route("POST", "/v1/images/generations",
                 [images](const HttpRequest &req, HttpResponse &res) {
                   images->handle(req, res);
                 });
  }
}

/// The lines that say what is served where.
void printServing(const ServerOptions &o, const ServedModel &served,
                  const ServedKinds &kinds, const Endpoints &e,
                  const tfm_engine_stats &engineStats, int32_t maxSequences,
                  const std::string &chatTemplateOrigin, bool https, int port) {
  // A model split over MPI ranks (tfmc --ranks) serves from rank 0; the
  // others follow inside tfm_model_load.
  std::string split =
      served.desc->ranks > 1
          ? ", split over " + std::to_string(served.desc->ranks) + " ranks"
          : "";
  const char *scheme = https ? "https" : "http";
  // Speculative decoding: what requests draft unless they say otherwise.
  std::string upTo = ", up to " + std::to_string(served.maxDrafts);
  std::string drafts =
      !served.maxDrafts ? ""
      : served.lookupNgram
          ? upTo + " drafts a step by " + std::to_string(served.lookupNgram) +
                "-gram lookup"
      : !served.draftName.empty()
          ? upTo + " drafts a step by draft model '" + served.draftName + "'"
          : upTo + " drafts a step where requests ask";
  std::string adapters;
  for (const auto &[name, id] : served.adapters)
    adapters += (adapters.empty() ? ", LoRA adapters " : ", ") + name;
  if (kinds.generates)
    std::printf("tfm-serve: serving '%s' (%lld positions, %d sequences, %lld "
                "KV blocks of %lld positions%s%s%s%s) on %s://%s:%d\n",
                served.name.c_str(), (long long)served.contextPositions,
                maxSequences, (long long)engineStats.kv_blocks,
                (long long)engineStats.kv_block_positions,
                engineStats.kv_paged ? "" : ", unpaged", drafts.c_str(),
                adapters.c_str(), split.c_str(), scheme, o.host.c_str(), port);
  else if (kinds.embed)
    std::printf("tfm-serve: serving '%s' (embeddings of %lld dimensions, "
                "inputs of up to %lld tokens%s) on %s://%s:%d\n",
                served.name.c_str(), (long long)e.embeddings->dimensions(),
                (long long)served.contextPositions, split.c_str(), scheme,
                o.host.c_str(), port);
  else if (kinds.classifier)
    std::printf("tfm-serve: serving '%s' (%s of %lld labels, inputs of up to "
                "%lld tokens%s) on %s://%s:%d\n",
                served.name.c_str(),
                e.classifiers->reranks() ? "a cross-encoder: /rerank, /classify"
                                         : "a classifier: /classify",
                (long long)e.classifiers->labels(),
                (long long)served.contextPositions, split.c_str(), scheme,
                o.host.c_str(), port);
  else if (kinds.diffusion)
    std::printf("tfm-serve: serving '%s' (Stable Diffusion: %lldx%lld "
                "images%s) on %s://%s:%d\n",
                served.name.c_str(), (long long)e.images->imageSize().width,
                (long long)e.images->imageSize().height, split.c_str(), scheme,
                o.host.c_str(), port);
  else if (e.transcriptions && e.transcriptions->translates())
    std::printf("tfm-serve: serving '%s' (Whisper: transcriptions and "
                "translations of audio up to 3 h, 30 s windows with "
                "timestamps%s) on %s://%s:%d\n",
                served.name.c_str(), split.c_str(), scheme, o.host.c_str(),
                port);
  else if (kinds.whisper)
    std::printf("tfm-serve: serving '%s' (Whisper: transcriptions of the "
                "first %.0f s of a clip%s) on %s://%s:%d\n",
                served.name.c_str(),
                double(served.desc->audio_preprocessing->samples) /
                    double(served.desc->audio_preprocessing->sampling_rate),
                split.c_str(), scheme, o.host.c_str(), port);
  else
    std::printf("tfm-serve: serving '%s' (transcriptions of audio up to "
                "3 h, in chunks past %.0f s%s) on %s://%s:%d\n",
                served.name.c_str(),
                double(served.desc->max_context) /
                    double(served.desc->waveform->sampling_rate),
                split.c_str(), scheme, o.host.c_str(), port);
  std::printf("tfm-serve: chat template: %s\n",
              kinds.generates    ? chatTemplateOrigin.c_str()
              : kinds.embed      ? "none (an embedder)"
              : kinds.classifier ? "none (a classifier)"
              : kinds.diffusion  ? "none (a diffusion pipeline)"
                                 : "none (a speech recognizer)");
  if (kinds.generates && served.toolFormat != ToolFormat::None)
    std::printf("tfm-serve: tool calls: %s format\n",
                toolFormatName(served.toolFormat));
  if (kinds.generates && served.reasoning.any())
    std::printf("tfm-serve: reasoning: %s markers (apart as "
                "reasoning_content unless a request's reasoning_format is "
                "\"none\")\n",
                served.reasoning.name());
  std::fflush(stdout);
}

} // namespace

int tfm::serve::runServer(const ServerOptions &o) {
  std::signal(SIGPIPE, SIG_IGN); // a client gone: a failed write, not death
  ServedModel served;
  const tfm_model_desc *desc = loadLibrary(o.library, o.symbol, served.name);
  if (!o.name.empty())
    served.name = o.name;
  tfm_status status;
  tfm_model *model;
  if (tfm_model_load(desc, nullptr, &model, &status) != TFM_OK)
    fail(status.message);
  served.desc = tfm_model_get_desc(model);
  served.tokenizer = tfm_model_tokenizer(model, &status); // null: ids only
  ServedKinds kinds = servedKinds(model, served);
  int32_t maxSequences = o.engine.max_sequences ? o.engine.max_sequences : 16;
  std::unique_ptr<Scheduler> scheduler;
  tfm_engine_stats engineStats{};
  std::string chatTemplateOrigin;
  if (kinds.generates) {
    tfm_engine_options engineOptions = o.engine;
    if (!o.draftLibrary.empty()) {
      // The draft model (--draft), loaded for the server's life.
      std::string draftName;
      tfm_model *draft;
      if (tfm_model_load(loadLibrary(o.draftLibrary, "", draftName), nullptr,
                         &draft, &status) != TFM_OK)
        fail("--draft " + o.draftLibrary + ": " + status.message);
      engineOptions.draft_model = draft;
      served.draftName = draftName;
    }
    tfm_engine *engine;
    if (tfm_engine_new(model, &engineOptions, &engine, &status) != TFM_OK)
      fail((o.draftLibrary.empty() ? "" : "--draft " + o.draftLibrary + ": ") +
           status.message);
    tfm_engine_get_stats(engine, &engineStats);
    recordSpecialTokens(served);
    acceptImages(model, served);
    chatTemplateOrigin = loadChatTemplate(o, served);
    // A sequence's positions are its full cache's (a window's rings,
    // Gemma's local layers', hold fewer).
    for (int32_t i = 0; i < served.desc->num_caches; ++i)
      if (served.desc->caches[i].rank == 5 &&
          served.desc->caches[i].kind == TFM_CACHE_SELF_ATTENTION)
        served.contextPositions = served.desc->caches[i].shape[2];
    served.maxTokensPerRequest =
        o.maxTokens ? o.maxTokens : served.contextPositions;
    served.maxDrafts = o.engine.max_drafts;
    served.lookupNgram = o.lookupNgram;
    for (const ServerOptions::Adapter &adapter : o.adapters) {
      int32_t id = 0;
      if (tfm_lora_load(model, adapter.directory.c_str(), adapter.scale, &id,
                        &status) != TFM_OK)
        fail("--lora " + adapter.name + ": " + status.message);
      served.adapters[adapter.name] = id;
    }
    scheduler = std::make_unique<Scheduler>(
        engine, maxSequences, int32_t(o.maxWaiting), o.engine.max_drafts);
  } else {
    served.contextPositions = served.desc->max_context;
  }

  HttpLimits limits;
  limits.maxBodyBytes = size_t(o.maxRequestBytes);
  limits.timeoutSeconds = unsigned(o.timeoutSeconds);
  limits.maxConnections = unsigned(o.maxConnections);
  limits.maxConnectionsPerAddress = unsigned(o.maxConnectionsPerAddress);
  HttpServer server(limits);
  // TLS with --ssl-cert and --ssl-key (libmicrohttpd's GnuTLS).
  bool https = !o.sslCert.empty();
  if (https)
    server.useTls(readOptionFile("--ssl-cert", o.sslCert),
                  readOptionFile("--ssl-key", o.sslKey));
  addInformationRoutes(server, served, scheduler.get());
  Endpoints endpoints;
  addModelRoutes(server, served, model, kinds, scheduler.get(),
                 std::chrono::seconds(o.timeoutSeconds), endpoints);
  addErrorWriter(server);
  requireApiKey(server, o);

  std::string listenError;
  int port = server.start(o.host, o.port, listenError);
  if (port < 0)
    fail(https && listenError.find("PEM") != std::string::npos
             ? "cannot use the certificate '" + o.sslCert + "' with the key '" +
                   o.sslKey + "' (PEM files, the key the certificate's)"
             : listenError);
  printServing(o, served, kinds, endpoints, engineStats, maxSequences,
               chatTemplateOrigin, https, port);
  server.serveForever();
}
