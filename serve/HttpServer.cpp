//===- HttpServer.cpp - HTTP/1.1 for tfm-serve over libmicrohttpd ---------===//
//
// libmicrohttpd calls the access handler several times a request: once its
// head is in (the gate, the route and an announced length are checked
// then, so a refused request costs no body), once for each piece of its
// body, and once more when the body is whole (the handler runs). Every
// call runs on the connection's own thread, so a handler may block (a
// completion waits for its tokens) and a streamed body's reader waits for
// its next piece.
//
//===----------------------------------------------------------------------===//

#include "serve/HttpServer.h"

#include <microhttpd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <netdb.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

using namespace tfm::serve;

std::string HttpRequest::header(const std::string &name) const {
  auto found = headers.find(name);
  return found == headers.end() ? std::string() : found->second;
}

namespace tfm::serve {

/// One request on its way through the access handler.
struct Exchange {
  HttpRequest request;
  const HttpHandler *handler = nullptr;
  /// Past the body limit: what was read is dropped, and what still
  /// comes is counted in `discarded` until the connection is closed.
  bool tooLarge = false;
  size_t discarded = 0;
};

/// A streamed body between the handler's stream and libmicrohttpd.
struct StreamedBody {
  std::function<bool(std::string &)> next;
  std::function<void()> closed;
  std::string pending;
  size_t sent = 0;
  bool ended = false;
};

struct HttpCallbacks {
  static MHD_Result collectHeader(void *cls, MHD_ValueKind, const char *key,
                                  const char *value) {
    auto *request = static_cast<HttpRequest *>(cls);
    std::string name = key ? key : "";
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    request->headers[name] = value ? value : "";
    return MHD_YES;
  }

  static ssize_t readStream(void *cls, uint64_t, char *buf, size_t max) {
    auto *body = static_cast<StreamedBody *>(cls);
    while (body->sent == body->pending.size()) {
      body->pending.clear();
      body->sent = 0;
      if (body->ended)
        return MHD_CONTENT_READER_END_OF_STREAM;
      try {
        body->ended = !body->next(body->pending);
      } catch (const std::exception &) {
        return MHD_CONTENT_READER_END_WITH_ERROR;
      }
    }
    size_t n = std::min(max, body->pending.size() - body->sent);
    std::memcpy(buf, body->pending.data() + body->sent, n);
    body->sent += n;
    return ssize_t(n);
  }

  static void freeStream(void *cls) {
    auto *body = static_cast<StreamedBody *>(cls);
    if (body->closed)
      body->closed();
    delete body;
  }

  static MHD_Result send(MHD_Connection *connection, HttpResponse &response) {
    MHD_Response *out;
    if (response.stream) {
      auto *body = new StreamedBody{std::move(response.stream),
                                    std::move(response.streamClosed)};
      out = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024,
                                              readStream, body, freeStream);
      if (!out) {
        freeStream(body);
        return MHD_NO;
      }
    } else {
      out = MHD_create_response_from_buffer(
          response.body.size(), response.body.data(), MHD_RESPMEM_MUST_COPY);
      if (!out)
        return MHD_NO;
    }
    MHD_add_response_header(out, MHD_HTTP_HEADER_CONTENT_TYPE,
                            response.contentType.c_str());
    for (const auto &[name, value] : response.headers)
      MHD_add_response_header(out, name.c_str(), value.c_str());
    MHD_Result queued =
        MHD_queue_response(connection, unsigned(response.status), out);
    MHD_destroy_response(out);
    return queued;
  }

  static MHD_Result sendError(HttpServer &server, MHD_Connection *connection,
                              int status, const std::string &message) {
    HttpResponse response;
    response.status = status;
    if (server.errorWriter)
      server.errorWriter(response, status, message);
    else
      response.setContent(message + "\n", "text/plain");
    return send(connection, response);
  }

  /// The head is in: gate, route, announced length.
  static MHD_Result begin(HttpServer &server, MHD_Connection *connection,
                          Exchange &exchange) {
    HttpRequest &request = exchange.request;
    MHD_get_connection_values(connection, MHD_HEADER_KIND, collectHeader,
                              &request);
    if (server.gate) {
      HttpResponse refusal;
      if (!server.gate(request, refusal))
        return send(connection, refusal);
    }
    auto path = server.routes.find(request.path);
    if (path != server.routes.end()) {
      auto handler = path->second.find(request.method);
      if (handler != path->second.end())
        exchange.handler = &handler->second;
    }
    if (!exchange.handler)
      return sendError(server, connection, 404,
                       "no endpoint " + request.method + " " + request.path);
    std::string length = request.header("content-length");
    if (!length.empty()) {
      char *end = nullptr;
      unsigned long long announced = std::strtoull(length.c_str(), &end, 10);
      if (*end == 0 && announced > server.limits.maxBodyBytes)
        return sendError(server, connection, 413,
                         "the request body is too large");
    }
    return MHD_YES;
  }

  /// A piece of the body: kept while within the limit.
  static MHD_Result receive(HttpServer &server, Exchange &exchange,
                            const char *data, size_t size) {
    size_t limit = server.limits.maxBodyBytes;
    if (!exchange.tooLarge && exchange.request.body.size() + size <= limit) {
      exchange.request.body.append(data, size);
      return MHD_YES;
    }
    if (!exchange.tooLarge) {
      exchange.tooLarge = true;
      exchange.discarded = exchange.request.body.size();
      std::string().swap(exchange.request.body);
    }
    exchange.discarded += size;
    // The rest is read (and dropped) so that the client gets its 413, but
    // not for ever: past 16 MiB (or 4 times the limit) the connection
    // closes without an answer.
    return exchange.discarded > std::max<size_t>(4 * limit, 16 << 20)
               ? MHD_NO
               : MHD_YES;
  }

  static MHD_Result onRequest(void *cls, MHD_Connection *connection,
                              const char *url, const char *method,
                              const char *, const char *uploadData,
                              size_t *uploadSize, void **state) {
    auto &server = *static_cast<HttpServer *>(cls);
    auto *exchange = static_cast<Exchange *>(*state);
    if (!exchange) {
      exchange = new Exchange;
      *state = exchange;
      exchange->request.method = method ? method : "";
      exchange->request.path = url ? url : "";
      return begin(server, connection, *exchange);
    }
    if (*uploadSize) {
      size_t size = *uploadSize;
      *uploadSize = 0;
      return receive(server, *exchange, uploadData, size);
    }
    if (exchange->tooLarge)
      return sendError(server, connection, 413,
                       "the request body is too large");
    HttpResponse response;
    try {
      (*exchange->handler)(exchange->request, response);
    } catch (const std::exception &e) {
      response = HttpResponse();
      return sendError(server, connection, 500,
                       std::string("the request could not be served: ") +
                           e.what());
    }
    return send(connection, response);
  }

  static void onCompleted(void *, MHD_Connection *, void **state,
                          MHD_RequestTerminationCode) {
    delete static_cast<Exchange *>(*state);
    *state = nullptr;
  }
};

} // namespace tfm::serve

/// Whether a socket binds to `address` (then closed again).
static bool canBind(const addrinfo &address) {
  int fd = socket(address.ai_family, address.ai_socktype, address.ai_protocol);
  if (fd < 0)
    return false;
  int on = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  bool bound = bind(fd, address.ai_addr, address.ai_addrlen) == 0;
  close(fd);
  return bound;
}

HttpServer::HttpServer(HttpLimits limits) : limits(limits) {}

HttpServer::~HttpServer() {
  if (daemon)
    MHD_stop_daemon(daemon);
}

void HttpServer::route(const std::string &method, const std::string &path,
                       HttpHandler handler) {
  routes[path][method] = std::move(handler);
}

void HttpServer::setGate(
    std::function<bool(const HttpRequest &, HttpResponse &)> g) {
  gate = std::move(g);
}

void HttpServer::setErrorWriter(
    std::function<void(HttpResponse &, int, const std::string &)> writer) {
  errorWriter = std::move(writer);
}

void HttpServer::useTls(std::string certificate, std::string key) {
  certificatePem = std::move(certificate);
  keyPem = std::move(key);
}

int HttpServer::start(const std::string &host, int port, std::string &error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo *found = nullptr;
  std::string service = std::to_string(port);
  if (int failed = getaddrinfo(host.c_str(), service.c_str(), &hints, &found)) {
    error = "cannot resolve '" + host + "': " + gai_strerror(failed);
    return -1;
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found,
                                                               &freeaddrinfo);
  bool tls = !certificatePem.empty();
  if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
    error = "this libmicrohttpd has no TLS";
    return -1;
  }
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
                   MHD_USE_POLL_INTERNAL_THREAD |
                   (found->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0) |
                   (tls ? MHD_USE_TLS : 0);
  // Options a TLS server adds; MHD_OPTION_END closes the list either way.
  MHD_OptionItem tlsOptions[] = {
      {tls ? MHD_OPTION_HTTPS_MEM_KEY : MHD_OPTION_END, 0,
       const_cast<char *>(keyPem.c_str())},
      {MHD_OPTION_HTTPS_MEM_CERT, 0,
       const_cast<char *>(certificatePem.c_str())},
      {MHD_OPTION_END, 0, nullptr}};
  daemon = MHD_start_daemon(
      flags, uint16_t(port), nullptr, nullptr, &HttpCallbacks::onRequest,
      this, MHD_OPTION_SOCK_ADDR, found->ai_addr,
      MHD_OPTION_LISTENING_ADDRESS_REUSE, 1u, MHD_OPTION_LISTEN_BACKLOG_SIZE,
      512u, MHD_OPTION_CONNECTION_LIMIT, limits.maxConnections,
      MHD_OPTION_PER_IP_CONNECTION_LIMIT, limits.maxConnectionsPerAddress,
      MHD_OPTION_CONNECTION_TIMEOUT, limits.timeoutSeconds,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, limits.headBytes,
      MHD_OPTION_NOTIFY_COMPLETED, &HttpCallbacks::onCompleted, nullptr,
      MHD_OPTION_ARRAY, tlsOptions, MHD_OPTION_END);
  if (!daemon) {
    // libmicrohttpd says no more than that it failed: where a plain socket
    // binds, it was the certificate.
    error = tls && canBind(*found)
                ? "the certificate and the key are not a PEM pair"
                : "cannot listen on " + host + ":" + std::to_string(port);
    return -1;
  }
  const MHD_DaemonInfo *bound =
      MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
  return bound ? int(bound->port) : port;
}

void HttpServer::serveForever() {
  for (;;)
    std::this_thread::sleep_for(std::chrono::hours(24));
}
