//===- HttpServer.h - HTTP/1.1 for tfm-serve, bounded against its clients -===//
//
// tfm-serve's HTTP layer over GNU libmicrohttpd, which parses the protocol
// (pipelining, chunked bodies, TLS through GnuTLS). What this layer adds is
// the limits a server open to untrusted clients needs, each enforced before
// the resource is spent:
// - a thread per connection, up to a connection limit: a slow or silent
//   client holds its own thread only, never a worker others wait for;
// - a request's head (line and headers) within a fixed memory budget per
//   connection (431 past it), released with the connection;
// - the gate (the API key) checked on the head, before any body is read;
// - a body within the byte limit whether its length is announced (413 at
//   once) or chunked (413 once the limit is passed; the rest is discarded
//   up to as much again, then the connection closed);
// - no Range handling: a response is always the whole body.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_HTTPSERVER_H
#define TFM_SERVE_HTTPSERVER_H

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

struct MHD_Daemon;

namespace tfm::serve {

struct HttpRequest {
  std::string method, path; // the path without its query
  /// Header names in lower case; a repeated header keeps its last value.
  std::map<std::string, std::string> headers;
  std::string body;
  /// The header's value, or "" when absent; `name` in lower case.
  std::string header(const std::string &name) const;
};

struct HttpResponse {
  int status = 200;
  std::string contentType = "application/json", body;
  std::vector<std::pair<std::string, std::string>> headers;
  /// A streamed body (chunked): each call waits until there is more of it,
  /// appends that to `out` and returns true, or returns false at its end.
  /// A call must return within the idle timeout (with something to send):
  /// the connection is closed as idle otherwise.
  std::function<bool(std::string &out)> stream;
  /// Called once a streamed body ends: sent whole, or its client gone.
  std::function<void()> streamClosed;

  void setContent(std::string text, std::string type) {
    body = std::move(text);
    contentType = std::move(type);
  }
};

/// Runs once the body is whole, and may take as long as it needs (an image
/// takes seconds): the idle timeout closes a connection whose client is
/// silent while its request is read, or whose stream sends nothing, but a
/// handler's own time does not count (tfm-serve-images.test).
using HttpHandler = std::function<void(const HttpRequest &, HttpResponse &)>;

struct HttpLimits {
  size_t maxBodyBytes = 1 << 20;
  /// A connection idle this long (no byte read or written) is closed.
  unsigned timeoutSeconds = 60;
  /// Connections served at once (each its own thread); more are closed.
  unsigned maxConnections = 1024;
  /// Connections from one address at once; 0: no limit of its own.
  unsigned maxConnectionsPerAddress = 0;
  /// Memory a connection reads a request's head into: its line and
  /// headers must fit (431 otherwise).
  size_t headBytes = 32 * 1024;
};

class HttpServer {
public:
  explicit HttpServer(HttpLimits limits);
  ~HttpServer();
  HttpServer(const HttpServer &) = delete;
  HttpServer &operator=(const HttpServer &) = delete;

  void route(const std::string &method, const std::string &path,
             HttpHandler handler);
  /// Runs on each request's head, before its body is read; returns false
  /// when it has answered the request itself (a 401).
  void setGate(std::function<bool(const HttpRequest &, HttpResponse &)> gate);
  /// Writes the errors the server answers on its own (404, 413, 400):
  /// the response for `status` and `message`.
  void setErrorWriter(
      std::function<void(HttpResponse &, int status, const std::string &)>
          writer);
  /// Serves HTTPS with the PEM text of a certificate and its key.
  void useTls(std::string certificatePem, std::string keyPem);

  /// Listens on `host` (a name or a numeric address) and `port` (0: any
  /// free one); returns the port, or -1 with `error` saying why not.
  int start(const std::string &host, int port, std::string &error);
  /// Serves until the process ends.
  [[noreturn]] void serveForever();

private:
  /// libmicrohttpd's callbacks (HttpServer.cpp).
  friend struct HttpCallbacks;

  HttpLimits limits;
  std::map<std::string, std::map<std::string, HttpHandler>> routes;
  std::function<bool(const HttpRequest &, HttpResponse &)> gate;
  std::function<void(HttpResponse &, int, const std::string &)> errorWriter;
  std::string certificatePem, keyPem;
  MHD_Daemon *daemon = nullptr;
};

} // namespace tfm::serve

#endif // TFM_SERVE_HTTPSERVER_H
