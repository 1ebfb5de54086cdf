// SimGrid allows one engine per process, and a scenario often needs several simulations (the variants of
// a comparison, the points of a sweep). Each simulation therefore runs in a forked child process that
// hands its result back as JSON; the parent never starts an engine. Children run side by side, all forked
// from the calling thread: forking from a process with other threads running is not safe (a child can
// inherit a lock another thread held, as AddressSanitizer's allocator showed).
//
// Children never outlive the parent: each asks the kernel for SIGKILL when its parent dies (even by
// SIGKILL), and while a TerminationSignals is alive, SIGINT, SIGTERM and SIGHUP make run_isolated kill
// and reap its children and throw Interrupted, so the caller can remove what it was writing and then end
// the way the signal would have.
#pragma once

#include <csignal>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

namespace kvtier {

using Simulation = std::function<nlohmann::json()>;

using SimulationResult = std::function<void(size_t index, const nlohmann::json& result)>;

// Runs each simulation in a child process, at most `parallel` at a time, and returns what each returned,
// in order. A ConfigError thrown in a child is rethrown here with the same message (the first in order);
// any other failure becomes a std::runtime_error. `on_result(index, result)`, if given, is called in this
// process as each simulation succeeds, in the order they finish (a sweep writes each point as soon as it
// is done); what it throws ends the run as a failure would: the children are killed and reaped, and the
// exception propagates.
std::vector<nlohmann::json> run_isolated(const std::vector<Simulation>& simulations, int parallel,
                                         const SimulationResult& on_result = nullptr);

// One simulation in a child process.
nlohmann::json run_isolated(const Simulation& simulation);

// Simulations at once for a command's --jobs: `jobs` when positive, else one per core.
int jobs_or_cores(int jobs);

// Thrown by run_isolated (after its children are gone) and by throw_if_interrupted() once a termination
// signal was caught.
struct Interrupted : std::runtime_error {
  explicit Interrupted(int signal);
  int signal;
};

// While alive, SIGINT, SIGTERM and SIGHUP only record themselves (a signal the process ignored stays
// ignored). One at a time; the previous handlers come back on destruction.
class TerminationSignals {
 public:
  TerminationSignals();
  ~TerminationSignals();
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;

  // The first signal caught, or 0.
  static int caught();
  // Ends the process by `signal`'s default action (a shell reports exit status 128 + signal).
  [[noreturn]] static void reraise(int signal);
};

void throw_if_interrupted();

}  // namespace kvtier
