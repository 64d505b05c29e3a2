//===- Supervisor.cpp - tfm-serve in front of a model's MPI ranks --------===//

#include "serve/Supervisor.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

namespace tfm::serve {
namespace {

std::atomic<bool> stopping{false};
/// The supervisor's exit status: 1 where the first start never served.
std::atomic<int> exitStatus{0};

void onSignal(int) { stopping = true; }

/// The job: its process (the launcher's, leading a process group of its
/// own), the loopback port its tfm-serve listens on, whether it answers,
/// and why it is not answering when it is not.
struct Job {
  std::atomic<pid_t> pid{0};
  std::atomic<int> port{0};
  std::atomic<bool> ready{false};
  std::mutex mutex;
  std::string down = "the model's ranks are starting";

  std::string whyDown() {
    std::lock_guard<std::mutex> lock(mutex);
    return down;
  }
  void setDown(std::string why) {
    std::lock_guard<std::mutex> lock(mutex);
    down = std::move(why);
  }
};

/// A loopback port no one listens on now, for the next job.
int freeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  int port = 0;
  if (fd >= 0 && bind(fd, (sockaddr *)&address, sizeof address) == 0 &&
      getsockname(fd, (sockaddr *)&address, &size) == 0)
    port = ntohs(address.sin_port);
  if (fd >= 0)
    close(fd);
  return port;
}

int connectLoopback(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0)
    return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(uint16_t(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (sockaddr *)&address, sizeof address) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool writeAll(int fd, const char *data, size_t size) {
  while (size > 0) {
    ssize_t wrote = send(fd, data, size, MSG_NOSIGNAL);
    if (wrote < 0 && errno == EINTR)
      continue;
    if (wrote <= 0)
      return false;
    data += wrote;
    size -= size_t(wrote);
  }
  return true;
}

/// An OpenAI-style error with status 503 and Retry-After, then the end of
/// the connection.
void answerUnavailable(int client, const std::string &why) {
  std::string message;
  for (char c : why)
    message +=
        c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  std::string body = "{\"error\": {\"message\": \"" + message +
                     "\", \"type\": \"unavailable\", \"code\": 503}}";
  std::string response =
      "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
      "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  writeAll(client, response.data(), response.size());
}

/// Copies bytes both ways until both sides are done; returns how many the
/// job sent.
int64_t forward(int client, int backend) {
  pollfd fds[2] = {{client, POLLIN, 0}, {backend, POLLIN, 0}};
  bool open[2] = {true, true};
  int64_t answered = 0;
  char buffer[16384];
  while (open[0] || open[1]) {
    for (int i = 0; i < 2; ++i)
      fds[i].fd = open[i] ? (i ? backend : client) : -1;
    if (poll(fds, 2, 1000) < 0) {
      if (errno == EINTR)
        continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (!open[i] || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      int from = i ? backend : client, to = i ? client : backend;
      ssize_t got = recv(from, buffer, sizeof buffer, 0);
      if (got > 0 && writeAll(to, buffer, size_t(got))) {
        if (i)
          answered += got;
        continue;
      }
      // One side is done: the other hears of it. A client gone ends the
      // request (the job cancels it); the job gone ends the response, or,
      // where it sent nothing yet, leaves the client to the caller's 503.
      open[i] = false;
      if (i && answered == 0)
        return 0;
      shutdown(to, SHUT_WR);
      if (i || got < 0)
        return answered;
    }
  }
  return answered;
}

void serveConnection(Job &job, int client) {
  bool ready = job.ready;
  int backend = ready ? connectLoopback(job.port) : -1;
  if (!ready) {
    answerUnavailable(client, job.whyDown());
  } else if (backend < 0) {
    // Between a rank's end and mpirun's end of the job.
    answerUnavailable(client, "the model's ranks do not answer: one has "
                              "ended, and they will be started again");
  } else {
    if (forward(client, backend) == 0)
      answerUnavailable(client, "the model's ranks stopped during the "
                                "request; it was not answered (they are "
                                "starting again)");
    close(backend);
  }
  close(client);
}

pid_t startJob(const SupervisorOptions &options, int port) {
  std::vector<std::string> words = options.launcher;
  words.push_back(options.serveExecutable);
  words.insert(words.end(), options.serveArguments.begin(),
               options.serveArguments.end());
  words.insert(words.end(),
               {"--host", "127.0.0.1", "--port", std::to_string(port)});
  pid_t pid = fork();
  if (pid != 0)
    return pid;
  setpgid(0, 0);
  std::vector<char *> argv;
  for (std::string &word : words)
    argv.push_back(word.data());
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::fprintf(stderr, "tfm-serve: cannot run '%s': %s\n", argv[0],
               std::strerror(errno));
  _exit(127);
}

std::string describeExit(int status) {
  if (WIFEXITED(status))
    return "exit status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return "signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

/// Starts the job, waits until it answers or ends, and starts it again
/// after it ends, until the supervisor stops.
void superviseJobs(const SupervisorOptions &options, Job &job) {
  for (int launch = 1; !stopping; ++launch) {
    int port = freeLoopbackPort();
    pid_t pid = startJob(options, port);
    if (pid < 0) {
      job.setDown(std::string("cannot start the model's ranks: ") +
                  std::strerror(errno));
      return;
    }
    job.pid = pid;
    job.port = port;
    int status = 0;
    bool ended = false;
    while (!stopping && !job.ready) {
      if (waitpid(pid, &status, WNOHANG) == pid) {
        ended = true;
        break;
      }
      int probe = connectLoopback(port);
      if (probe >= 0) {
        close(probe);
        job.ready = true;
        std::printf("tfm-serve: the model's ranks serve (start %d)\n", launch);
        std::fflush(stdout);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    bool served = job.ready;
    while (!ended && waitpid(pid, &status, 0) < 0 && errno == EINTR)
      ;
    std::string why = "the model's ranks ended (" + describeExit(status) +
                      "); they are starting again";
    job.setDown(why);
    job.ready = false;
    job.pid = 0;
    if (stopping)
      return;
    // A first start that never served is a bad command line or library,
    // which starting again would not mend.
    if (launch == 1 && !served) {
      std::fprintf(stderr,
                   "tfm-serve: the model's ranks ended before they "
                   "served (%s)\n",
                   describeExit(status).c_str());
      exitStatus = 1;
      stopping = true;
      return;
    }
    std::fprintf(stderr, "tfm-serve: %s in %d s\n", why.c_str(),
                 options.relaunchDelaySeconds);
    for (int tenth = 0; tenth < 10 * options.relaunchDelaySeconds && !stopping;
         ++tenth)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

int listenOn(const std::string &host, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int yes = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(uint16_t(port));
  if (fd < 0 || inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1 ||
      bind(fd, (sockaddr *)&address, sizeof address) != 0 ||
      listen(fd, 128) != 0) {
    std::fprintf(stderr, "tfm-serve: cannot listen on %s:%d: %s\n",
                 host.c_str(), port, std::strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  return fd;
}

} // namespace

int runSupervisor(const SupervisorOptions &options) {
  signal(SIGPIPE, SIG_IGN);
  struct sigaction action{};
  action.sa_handler = onSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  int listener = listenOn(options.host, options.port);
  if (listener < 0)
    return 1;
  sockaddr_in bound{};
  socklen_t size = sizeof bound;
  getsockname(listener, (sockaddr *)&bound, &size);
  std::printf("tfm-serve: listening on %s:%d, in front of the model's "
              "ranks (started again when they end)\n",
              options.host.c_str(), ntohs(bound.sin_port));
  std::fflush(stdout);

  Job job;
  std::thread supervisor([&] { superviseJobs(options, job); });
  while (!stopping) {
    pollfd ready = {listener, POLLIN, 0};
    if (poll(&ready, 1, 200) <= 0)
      continue;
    int client = accept(listener, nullptr, nullptr);
    if (client >= 0)
      std::thread([&job, client] { serveConnection(job, client); }).detach();
  }
  close(listener);
  if (pid_t pid = job.pid)
    kill(-pid, SIGTERM);
  supervisor.join();
  return exitStatus;
}

} // namespace tfm::serve
