// SimGrid allows one engine per process, and a scenario often needs several simulations (the variants of
// a comparison, the points of a sweep). Each simulation therefore runs in a forked child process that
// hands its result back as JSON; the parent never starts an engine. Children run side by side, all forked
// from the calling thread: forking from a process with other threads running is not safe (a child can
// inherit a lock another thread held, as AddressSanitizer's allocator showed).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <vector>

namespace kvtier {

using Simulation = std::function<nlohmann::json()>;

// Runs each simulation in a child process, at most `parallel` at a time, and returns what each returned,
// in order. A ConfigError thrown in a child is rethrown here with the same message (the first in order);
// any other failure becomes a std::runtime_error.
std::vector<nlohmann::json> run_isolated(const std::vector<Simulation>& simulations, int parallel);

// One simulation in a child process.
nlohmann::json run_isolated(const Simulation& simulation);

}  // namespace kvtier
