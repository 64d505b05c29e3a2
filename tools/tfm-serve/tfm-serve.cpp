//===- tfm-serve.cpp - an OpenAI-compatible server for a compiled model ---===//
//
//   tfm-serve LIBRARY [--port N] [--host H] [options]
//
// The command line of serve/Server.h: options parsed and checked here, the
// server itself in serve/.
//
//===----------------------------------------------------------------------===//

#include "serve/Server.h"
#include "serve/Supervisor.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>

using tfm::serve::ServerOptions;

namespace {

const char *const kUsage =
    "usage: tfm-serve LIBRARY [options]\n"
    "  LIBRARY                 a language model or an embedder (@embed,\n"
    "                          @embed_text) compiled with tfmc --emit=lib\n"
    "  --port N                TCP port (8080; 0: any free one, printed)\n"
    "  --host H                address to listen on (127.0.0.1)\n"
    "  --model-symbol S        the model's symbol (NAME_model, NAME from\n"
    "                          libNAME.so)\n"
    "  --name NAME             the model's name in the API (the library's)\n"
    "  --max-sequences N       requests decoded together (16)\n"
    "  --max-waiting N         requests queued beyond those; more get 503 "
    "(64)\n"
    "  --kv-pool-mb N          KV cache memory (max-sequences full contexts)\n"
    "  --block-positions N     positions per KV block (8, rounded up to "
    "pages)\n"
    "  --prefill-chunk N       prompt tokens prefilled per step (512)\n"
    "  --micro-batch-rows N    a model in pipeline stages: a step's rows go\n"
    "                          through the stages in micro-batches of at\n"
    "                          least N rows (64)\n"
    "  --no-prefix-sharing     do not share KV blocks of common prefixes\n"
    "  --lookup-ngram N        speculative decoding by prompt lookup for\n"
    "                          every request (a request's lookup_ngram\n"
    "                          overrides; a model compiled with tfmc\n"
    "                          --speculative)\n"
    "  --draft LIB             speculative decoding with a draft model\n"
    "                          (tfmc --emit=lib -o libNAME.so) of the same\n"
    "                          vocabulary, for every request not using\n"
    "                          prompt lookup\n"
    "  --draft-p-min P         a draft stops where its top token is less\n"
    "                          likely than P (0.75; 0: never)\n"
    "  --draft-max K           drafts a request checks a step (8; with\n"
    "                          --lookup-ngram or --draft, or for requests'\n"
    "                          own)\n"
    "  --lora NAME=DIR[:SCALE] a PEFT LoRA adapter folder requests may run\n"
    "                          with (their 'lora', or NAME as their\n"
    "                          'model'); a model compiled with tfmc\n"
    "                          --lora-slots; may be given more than once\n"
    "  --max-tokens N          the largest max_tokens a request may ask for\n"
    "                          (the context)\n"
    "  --max-request-bytes N   the largest request body (1048576)\n"
    "  --relaunch LAUNCHER     serve a model split over ranks from a\n"
    "                          process outside its job: LAUNCHER (such as\n"
    "                          \"mpirun -np 2\") starts tfm-serve with the\n"
    "                          other options; requests are forwarded to it,\n"
    "                          answered 503 while it is down, and it is\n"
    "                          started again when a rank dies\n"
    "  --chat-template FILE    the chat template (Jinja) for\n"
    "                          /v1/chat/completions, instead of the model's\n"
    "  --timeout S             a connection idle this long is closed,\n"
    "                          seconds (60)\n"
    "  --max-connections N     connections served at once, each its own\n"
    "                          thread; more are closed (1024)\n"
    "  --max-connections-per-address N  the same from one client address\n"
    "                          (no limit of its own)\n"
    "  --api-key KEY           require 'Authorization: Bearer KEY' on every\n"
    "                          endpoint but /health\n"
    "  --api-key-file FILE     the same, the key read from FILE's first line\n"
    "                          (out of the process list)\n"
    "  --ssl-cert FILE --ssl-key FILE  serve HTTPS with this certificate and\n"
    "                          private key (PEM)\n";

[[noreturn]] void fail(const std::string &message) {
  std::fprintf(stderr, "tfm-serve: error: %s\n", message.c_str());
  std::exit(1);
}

int64_t parseCount(const char *flag, const char *text, int64_t low,
                   int64_t high) {
  char *end = nullptr;
  errno = 0;
  long long value = std::strtoll(text, &end, 10);
  if (errno || end == text || *end || value < low || value > high)
    fail(std::string(flag) + " expects an integer in [" + std::to_string(low) +
         ", " + std::to_string(high) + "], got '" + text + "'");
  return value;
}

/// A number in [0, 1] (a probability).
float parseFraction(const char *flag, const char *text) {
  char *end = nullptr;
  errno = 0;
  double value = std::strtod(text, &end);
  if (errno || end == text || *end || !(value >= 0.0 && value <= 1.0))
    fail(std::string(flag) + " expects a number in [0, 1], got '" + text + "'");
  return float(value);
}

/// The first line of `path`, without its line end and trailing spaces.
std::string readKeyFile(const char *path) {
  std::ifstream in(path);
  if (!in)
    fail(std::string("--api-key-file: cannot read '") + path + "'");
  std::string key;
  std::getline(in, key);
  while (!key.empty() && std::isspace((unsigned char)key.back()))
    key.pop_back();
  return key;
}

/// --lora NAME=DIR[:SCALE]: a name the API has no other use for, and a
/// finite scale where what follows the folder's last colon is a number.
ServerOptions::Adapter
parseAdapter(const std::string &text,
             const std::vector<ServerOptions::Adapter> &earlier) {
  size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size())
    fail("--lora expects NAME=DIR[:SCALE], got '" + text + "'");
  ServerOptions::Adapter adapter;
  adapter.name = text.substr(0, equals);
  adapter.directory = text.substr(equals + 1);
  for (const ServerOptions::Adapter &other : earlier)
    if (other.name == adapter.name)
      fail("--lora: two adapters are named '" + adapter.name + "'");
  size_t colon = adapter.directory.rfind(':');
  if (colon != std::string::npos && colon + 1 < adapter.directory.size()) {
    const char *scale = adapter.directory.c_str() + colon + 1;
    char *end = nullptr;
    errno = 0;
    double value = std::strtod(scale, &end);
    if (!errno && *end == '\0') {
      if (!std::isfinite(value))
        fail("--lora " + text + ": the scale must be finite");
      adapter.scale = float(value);
      adapter.directory.resize(colon);
    }
  }
  return adapter;
}

/// The value after option argv[i], which `i` moves to.
const char *optionValue(int argc, char **argv, int &i) {
  if (i + 1 >= argc)
    fail(std::string(argv[i]) + " needs a value");
  return argv[++i];
}

ServerOptions parseOptions(int argc, char **argv) {
  ServerOptions o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&] { return optionValue(argc, argv, i); };
    const int64_t big = int64_t(1) << 40;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--port") {
      o.port = int(parseCount("--port", value(), 0, 65535));
    } else if (arg == "--host") {
      o.host = value();
    } else if (arg == "--model-symbol") {
      o.symbol = value();
    } else if (arg == "--name") {
      o.name = value();
    } else if (arg == "--max-sequences") {
      o.engine.max_sequences =
          int32_t(parseCount("--max-sequences", value(), 1, 4096));
    } else if (arg == "--max-waiting") {
      o.maxWaiting = parseCount("--max-waiting", value(), 0, 1 << 20);
    } else if (arg == "--kv-pool-mb") {
      o.kvPoolMb = parseCount("--kv-pool-mb", value(), 1, 1 << 24);
    } else if (arg == "--block-positions") {
      o.engine.block_positions =
          int32_t(parseCount("--block-positions", value(), 1, 1 << 20));
    } else if (arg == "--prefill-chunk") {
      o.engine.prefill_chunk = parseCount("--prefill-chunk", value(), 1, big);
    } else if (arg == "--micro-batch-rows") {
      o.engine.micro_batch_rows =
          parseCount("--micro-batch-rows", value(), 1, big);
    } else if (arg == "--no-prefix-sharing") {
      o.engine.share_prefixes = 0;
    } else if (arg == "--lookup-ngram") {
      o.lookupNgram = int32_t(parseCount("--lookup-ngram", value(), 1, 64));
    } else if (arg == "--draft") {
      o.draftLibrary = value();
    } else if (arg == "--draft-p-min") {
      o.engine.draft_p_min = parseFraction("--draft-p-min", value());
    } else if (arg == "--draft-max") {
      o.engine.max_drafts = int32_t(parseCount("--draft-max", value(), 1, 64));
    } else if (arg == "--lora") {
      o.adapters.push_back(parseAdapter(value(), o.adapters));
    } else if (arg == "--max-tokens") {
      o.maxTokens = parseCount("--max-tokens", value(), 1, big);
    } else if (arg == "--max-request-bytes") {
      o.maxRequestBytes = parseCount("--max-request-bytes", value(), 64, big);
    } else if (arg == "--chat-template") {
      o.chatTemplate = value();
    } else if (arg == "--timeout") {
      o.timeoutSeconds = parseCount("--timeout", value(), 1, 86400);
    } else if (arg == "--max-connections") {
      o.maxConnections = parseCount("--max-connections", value(), 1, 1 << 16);
    } else if (arg == "--max-connections-per-address") {
      o.maxConnectionsPerAddress =
          parseCount("--max-connections-per-address", value(), 1, 1 << 16);
    } else if (arg == "--ssl-cert") {
      o.sslCert = value();
    } else if (arg == "--ssl-key") {
      o.sslKey = value();
    } else if (arg == "--api-key" || arg == "--api-key-file") {
      if (!o.apiKey.empty())
        fail("give one --api-key or --api-key-file");
      o.apiKey =
          arg == "--api-key" ? std::string(value()) : readKeyFile(value());
      if (o.apiKey.empty())
        fail(arg + ": the key is empty");
    } else if (!arg.empty() && arg[0] == '-') {
      fail("unknown option '" + arg + "'\n" + kUsage);
    } else if (o.library.empty()) {
      o.library = arg;
    } else {
      fail("one LIBRARY only, got '" + o.library + "' and '" + arg + "'");
    }
  }
  if (o.library.empty())
    fail(std::string("no LIBRARY given\n") + kUsage);
  if (o.sslCert.empty() != o.sslKey.empty())
    fail("--ssl-cert and --ssl-key go together: give both, or neither");
  o.engine.kv_pool_bytes = o.kvPoolMb << 20;
  if ((o.lookupNgram || !o.draftLibrary.empty()) && !o.engine.max_drafts)
    o.engine.max_drafts = 8;
  return o;
}

} // namespace

/// --relaunch LAUNCHER: the supervisor in front of the job LAUNCHER runs
/// (serve/Supervisor.h); it takes --host and --port, and passes the rest.
bool parseSupervisor(int argc, char **argv, tfm::serve::SupervisorOptions &o) {
  bool supervise = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&] { return optionValue(argc, argv, i); };
    if (arg == "--relaunch") {
      supervise = true;
      std::string words = value();
      size_t at = 0;
      while ((at = words.find_first_not_of(" \t", at)) != std::string::npos) {
        size_t end = words.find_first_of(" \t", at);
        o.launcher.push_back(words.substr(at, end - at));
        at = end;
      }
      if (o.launcher.empty())
        fail("--relaunch needs the command that starts the ranks, such as "
             "\"mpirun -np 2\"");
    } else if (arg == "--port") {
      o.port = int(parseCount("--port", value(), 0, 65535));
    } else if (arg == "--host") {
      o.host = value();
    } else {
      o.serveArguments.push_back(arg);
    }
  }
  o.serveExecutable = "/proc/self/exe";
  char path[4096];
  ssize_t length = readlink("/proc/self/exe", path, sizeof path - 1);
  if (length > 0)
    o.serveExecutable.assign(path, size_t(length));
  return supervise;
}

int main(int argc, char **argv) {
  tfm::serve::SupervisorOptions supervisor;
  if (parseSupervisor(argc, argv, supervisor))
    return tfm::serve::runSupervisor(supervisor);
  return tfm::serve::runServer(parseOptions(argc, argv));
}
