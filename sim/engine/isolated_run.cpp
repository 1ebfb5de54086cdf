#include "isolated_run.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
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

std::string read_all(int fd) {
  std::string text;
  char buffer[65536];
  while (true) {
    ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  return text;
}

// The child's whole life: run, serialise, leave without running the parent's exit handlers.
[[noreturn]] void run_child(int fd, const std::function<nlohmann::json()>& simulation) {
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

}  // namespace

nlohmann::json run_isolated(const std::function<nlohmann::json()>& simulation) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("cannot create a pipe for the simulation");
  std::fflush(nullptr);  // nothing buffered may be written twice
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot fork the simulation process");
  if (pid == 0) {
    close(fds[0]);
    run_child(fds[1], simulation);
  }
  close(fds[1]);
  std::string text = read_all(fds[0]);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || text.empty()) {
    throw std::runtime_error("the simulation process died (status " + std::to_string(status) + ")");
  }
  nlohmann::json reply = nlohmann::json::parse(text);
  if (reply.contains("config_error")) throw ConfigError(reply["config_error"].get<std::string>());
  if (reply.contains("error")) throw std::runtime_error(reply["error"].get<std::string>());
  return reply["result"];
}

}  // namespace kvtier
