#include "sim/engine/isolated_run.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>

#include "sim/core/config.h"

namespace kvtier {
namespace {

constexpr int kTerminationSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr size_t kSignalCount = std::size(kTerminationSignals);

// What the handler may touch: async-signal-safe state only.
volatile std::sig_atomic_t g_caught = 0;
int g_wake[2] = {-1, -1};  // the handler writes a byte; run_isolated polls the read end
bool g_handling = false;   // a TerminationSignals is alive
struct sigaction g_previous[kSignalCount];

extern "C" void on_termination_signal(int signal) {
  int saved_errno = errno;
  if (g_caught == 0) g_caught = signal;
  if (g_wake[1] >= 0) {
    [[maybe_unused]] ssize_t written = write(g_wake[1], "!", 1);
  }
  errno = saved_errno;
}

void restore_previous_handlers() {
  for (size_t i = 0; i < kSignalCount; ++i) sigaction(kTerminationSignals[i], &g_previous[i], nullptr);
}

// Right after fork: die with the parent, and let signals act on the child as they did before.
void detach_from_parent_signals(pid_t parent) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);  // the parent died before the request took effect
  if (!g_handling) return;
  restore_previous_handlers();
  close(g_wake[0]);
  close(g_wake[1]);
  g_wake[0] = g_wake[1] = -1;
}

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

#ifdef KVTIER_PROFILE_GENERATE
extern "C" void __gcov_dump();
#endif

// The child's whole life: run, serialise, leave without running the parent's exit handlers.
[[noreturn]] void run_child(int fd, const Simulation& simulation) {
  nlohmann::json reply;
  try {
    reply = {{"result", simulation()}};
  } catch (const ConfigError& e) {
    reply = {{"config_error", e.what()}};
  } catch (const std::exception& e) {
    reply = {{"error", e.what()}};
  }
  write_all(fd, reply.dump());
  close(fd);
  std::fflush(nullptr);
#ifdef KVTIER_PROFILE_GENERATE
  __gcov_dump();  // _exit skips it (cmake/profile_guided.cmake)
#endif
  _exit(0);
}

struct Child {
  size_t index;
  pid_t pid;
  std::string reply;
};

int start_child(const Simulation& simulation, std::map<int, Child>& children, size_t index) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("cannot create a pipe for the simulation");
  std::fflush(nullptr);  // nothing buffered may be written twice
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot fork the simulation process");
  if (pid == 0) {
    detach_from_parent_signals(parent);
    close(fds[0]);
    for (const auto& [fd, child] : children) close(fd);
    run_child(fds[1], simulation);
  }
  close(fds[1]);
  children[fds[0]] = Child{index, pid, ""};
  return fds[0];
}

int wait_for(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Kills and reaps every child still running (an interruption, or another child's failure).
void stop_all(std::map<int, Child>& children) {
  for (const auto& [fd, child] : children) kill(child.pid, SIGKILL);
  for (const auto& [fd, child] : children) {
    wait_for(child.pid);
    close(fd);
  }
  children.clear();
}

nlohmann::json parse_reply(const Child& child, int status) {
  if (!WIFEXITED(status) || child.reply.empty()) {
    throw std::runtime_error("the simulation process died (status " + std::to_string(status) + ")");
  }
  return nlohmann::json::parse(child.reply);
}

// Reads whatever the children have written; returns the replies of those that finished. A termination
// signal wakes it (through the handler's pipe, or poll's EINTR) and it throws Interrupted.
void collect(std::map<int, Child>& children, std::vector<nlohmann::json>& replies,
             const SimulationResult& on_result) {
  std::vector<pollfd> fds;
  for (const auto& [fd, child] : children) fds.push_back({fd, POLLIN, 0});
  if (g_wake[0] >= 0) fds.push_back({g_wake[0], POLLIN, 0});
  int ready = poll(fds.data(), fds.size(), -1);
  throw_if_interrupted();
  if (ready < 0) return;
  for (const pollfd& p : fds) {
    if (p.revents == 0 || p.fd == g_wake[0]) continue;
    Child& child = children.at(p.fd);
    char buffer[65536];
    ssize_t n = read(p.fd, buffer, sizeof buffer);
    if (n > 0) {
      child.reply.append(buffer, static_cast<size_t>(n));
      continue;
    }
    close(p.fd);
    int status = wait_for(child.pid);
    Child finished = child;
    children.erase(p.fd);
    replies[finished.index] = parse_reply(finished, status);
    const nlohmann::json& reply = replies[finished.index];
    if (on_result && reply.contains("result")) on_result(finished.index, reply["result"]);
  }
}

}  // namespace

std::vector<nlohmann::json> run_isolated(const std::vector<Simulation>& simulations, int parallel,
                                         const SimulationResult& on_result) {
  std::vector<nlohmann::json> replies(simulations.size());
  std::map<int, Child> children;  // by the read end of each child's pipe
  size_t next = 0;
  try {
    while (next < simulations.size() || !children.empty()) {
      throw_if_interrupted();
      while (next < simulations.size() && static_cast<int>(children.size()) < std::max(1, parallel)) {
        start_child(simulations[next], children, next);
        ++next;
      }
      collect(children, replies, on_result);
    }
  } catch (...) {
    stop_all(children);
    throw;
  }
  std::vector<nlohmann::json> results;
  for (const nlohmann::json& reply : replies) {
    if (reply.contains("config_error")) throw ConfigError(reply["config_error"].get<std::string>());
    if (reply.contains("error")) throw std::runtime_error(reply["error"].get<std::string>());
    results.push_back(reply["result"]);
  }
  return results;
}

nlohmann::json run_isolated(const Simulation& simulation) { return run_isolated({simulation}, 1)[0]; }

Interrupted::Interrupted(int signal)
    : std::runtime_error("interrupted by " + std::string(strsignal(signal))), signal(signal) {}

TerminationSignals::TerminationSignals() {
  if (g_handling) throw std::logic_error("termination signals are already being handled");
  if (pipe2(g_wake, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error("cannot create a pipe for signals");
  g_caught = 0;
  struct sigaction action {};
  action.sa_handler = on_termination_signal;
  sigemptyset(&action.sa_mask);
  for (int signal : kTerminationSignals) sigaddset(&action.sa_mask, signal);
  action.sa_flags = 0;  // no SA_RESTART: a blocking call returns EINTR
  for (size_t i = 0; i < kSignalCount; ++i) {
    sigaction(kTerminationSignals[i], nullptr, &g_previous[i]);
    if (g_previous[i].sa_handler != SIG_IGN) sigaction(kTerminationSignals[i], &action, nullptr);
  }
  g_handling = true;
}

// A signal caught but never acted on is delivered again, to whatever handled it before.
TerminationSignals::~TerminationSignals() {
  restore_previous_handlers();
  g_handling = false;
  close(g_wake[0]);
  close(g_wake[1]);
  g_wake[0] = g_wake[1] = -1;
  if (int signal = g_caught) {
    g_caught = 0;
    raise(signal);
  }
}

int TerminationSignals::caught() { return g_caught; }

void TerminationSignals::reraise(int signal) {
  std::signal(signal, SIG_DFL);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, signal);
  sigprocmask(SIG_UNBLOCK, &set, nullptr);
  raise(signal);
  _exit(128 + signal);
}

void throw_if_interrupted() {
  if (int signal = g_caught) throw Interrupted(signal);
}

int jobs_or_cores(int jobs) {
  return jobs > 0 ? jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace kvtier
