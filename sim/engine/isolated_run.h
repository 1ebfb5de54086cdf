// SimGrid allows one engine per process, and a scenario often needs several simulations (the variants of
// a comparison, the points of a sweep). Each simulation therefore runs in a forked child process that
// hands its result back as JSON; the parent never starts an engine. Children can run side by side.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>

namespace kvtier {

// Runs `simulation` in a child process and returns what it returned. A ConfigError thrown in the child
// is rethrown here with the same message; any other failure becomes a std::runtime_error.
nlohmann::json run_isolated(const std::function<nlohmann::json()>& simulation);

}  // namespace kvtier
