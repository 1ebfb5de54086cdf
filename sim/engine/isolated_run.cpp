#include "isolated_run.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>

#include "config.h"

namespace kvtier {
namespace {

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

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
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot fork the simulation process");
  if (pid == 0) {
    close(fds[0]);
    for (const auto& [fd, child] : children) close(fd);
    run_child(fds[1], simulation);
  }
  close(fds[1]);
  children[fds[0]] = Child{index, pid, ""};
  return fds[0];
}

nlohmann::json parse_reply(const Child& child, int status) {
  if (!WIFEXITED(status) || child.reply.empty()) {
    throw std::runtime_error("the simulation process died (status " + std::to_string(status) + ")");
  }
  return nlohmann::json::parse(child.reply);
}

// Reads whatever the children have written; returns the replies of those that finished.
void collect(std::map<int, Child>& children, std::vector<nlohmann::json>& replies) {
  std::vector<pollfd> fds;
  for (const auto& [fd, child] : children) fds.push_back({fd, POLLIN, 0});
  if (poll(fds.data(), fds.size(), -1) < 0) return;
  for (const pollfd& p : fds) {
    if (p.revents == 0) continue;
    Child& child = children.at(p.fd);
    char buffer[65536];
    ssize_t n = read(p.fd, buffer, sizeof buffer);
    if (n > 0) {
      child.reply.append(buffer, static_cast<size_t>(n));
      continue;
    }
    close(p.fd);
    int status = 0;
    waitpid(child.pid, &status, 0);
    replies[child.index] = parse_reply(child, status);
    children.erase(p.fd);
  }
}

}  // namespace

std::vector<nlohmann::json> run_isolated(const std::vector<Simulation>& simulations, int parallel) {
  std::vector<nlohmann::json> replies(simulations.size());
  std::map<int, Child> children;  // by the read end of each child's pipe
  size_t next = 0;
  while (next < simulations.size() || !children.empty()) {
    while (next < simulations.size() && static_cast<int>(children.size()) < std::max(1, parallel)) {
      start_child(simulations[next], children, next);
      ++next;
    }
    collect(children, replies);
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

}  // namespace kvtier
