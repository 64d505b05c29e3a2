//===- Supervisor.h - tfm-serve in front of a model's MPI ranks -*- C++ -*-===//
//
// `tfm-serve --relaunch "mpirun -np 2" LIBRARY ...`: a model split over
// ranks ends with its job when one rank dies (mpirun stops them all and
// names the lost rank). The supervisor is a process outside the job that
// owns the public port: it starts the job (tfm-serve under the launcher,
// on a loopback port of its own), forwards every connection to it byte for
// byte (streams and cancellation included), answers 503 while the job is
// gone, and starts it again.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_SUPERVISOR_H
#define TFM_SERVE_SUPERVISOR_H

#include <string>
#include <vector>

namespace tfm::serve {

struct SupervisorOptions {
  /// The launcher's words ("mpirun", "-np", "2") and tfm-serve's own
  /// arguments for the job (the library and its options, without --host
  /// and --port, which the supervisor gives).
  std::vector<std::string> launcher, serveArguments;
  /// This tfm-serve's path, which the launcher runs.
  std::string serveExecutable;
  /// Where clients connect.
  std::string host = "127.0.0.1";
  int port = 8080;
  /// Seconds between the job's end and its next start.
  int relaunchDelaySeconds = 1;
};

/// Serves until SIGINT or SIGTERM; returns the exit status.
int runSupervisor(const SupervisorOptions &options);

} // namespace tfm::serve

#endif // TFM_SERVE_SUPERVISOR_H
