//===- Server.h - an OpenAI-compatible server for a compiled model -*- C++
//-*-===//
//
// tfm-serve's server: a language model compiled with `tfmc --emit=lib`
// loaded, its batch engine started (or an embedder's /v1/embeddings), and
// HTTP served until the process is stopped (Server.cpp says what is
// served).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_SERVER_H
#define TFM_SERVE_SERVER_H

#include "tfm/tfm_engine.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tfm::serve {

/// What the command line sets (tools/tfm-serve lists each option).
struct ServerOptions {
  std::string library, host = "127.0.0.1", symbol, name, chatTemplate;
  /// Required as "Authorization: Bearer KEY" on every endpoint but
  /// /health; empty: none (then a host other than loopback is warned of).
  std::string apiKey;
  /// TLS: the server's certificate and private key (PEM); empty: HTTP.
  std::string sslCert, sslKey;
  int port = 8080;
  int64_t maxWaiting = 64, kvPoolMb = 0, maxTokens = 0;
  int64_t maxRequestBytes = 1 << 20, timeoutSeconds = 60;
  /// Connections served at once, in all and from one address (0: no
  /// limit of its own); HttpServer.h.
  int64_t maxConnections = 1024, maxConnectionsPerAddress = 0;
  tfm_engine_options engine = tfm_engine_default_options();
  /// Every request's prompt lookup n-gram unless it gives its own (0:
  /// none; engine.max_drafts > 0 lets requests draft).
  int32_t lookupNgram = 0;
  /// A draft model's library (--draft; empty: none): requests not using
  /// prompt lookup draft with it.
  std::string draftLibrary;
  /// Run-time LoRA adapters (--lora NAME=DIR[:SCALE]), in order.
  struct Adapter {
    std::string name, directory;
    float scale = 1.0f;
  };
  std::vector<Adapter> adapters;
};

/// Loads the model, serves it, and returns only on a failure to listen
/// (other failures at start exit with a message).
int runServer(const ServerOptions &options);

} // namespace tfm::serve

#endif // TFM_SERVE_SERVER_H
