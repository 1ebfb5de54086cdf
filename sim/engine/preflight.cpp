#include "sim/engine/preflight.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "sim/core/config_files.h"
#include "sim/core/cost_model.h"
#include "sim/core/quantiles.h"
#include "sim/engine/workload.h"
#include "sim/workload/trace_input.h"

namespace kvtier {
namespace {

// Bytes per item of what a run keeps to its end: a request's latencies (TTFT, TPOT, end-to-end), kept
// exactly for the first LatencyQuantiles::kExactLimit requests and sketched after them; a block the
// cache tracks. Samples, records and transfers are written to the output folder as the run goes.
constexpr double kBytesPerRequest = 3 * sizeof(double);
constexpr double kBytesPerCachedBlock = 96;
// Generated sessions drawn to learn their size.
constexpr int kSampledSessions = 16;

// The workload keys that size a run, with the defaults of workload.cpp.
struct WorkloadKeys {
  bool closed = true;
  bool from_trace = false;
  int64_t sessions = 1;
  double window_s = 0;
  std::string trace;
};

WorkloadKeys read_keys(const ConfigNode& w) {
  WorkloadKeys k;
  k.closed = w.string("loop", "closed") != "open";
  k.from_trace = w.string("source", w.has("trace") ? "trace" : "agent") == "trace";
  k.sessions = w.integer("sessions", 1);
  if (k.sessions < 1) w.child("sessions").fail("expected at least 1 session");
  double fallback = k.closed ? 1200 : std::numeric_limits<double>::infinity();
  k.window_s = w.quantity("duration", UnitKind::kDuration, fallback);
  if (k.from_trace) k.trace = w.string("trace");
  return k;
}

// Where a bound failed: the key's place in the file (or the --set argument that gave it) when the scenario
// sets it, else the file.
[[noreturn]] void fail_at(const Scenario& s, const std::string& key, const std::string& what) {
  const ConfigNode& w = *s.workload;
  std::string sub = key.starts_with("workload.") ? key.substr(9) : "";
  if (!sub.empty() && w.has(sub)) w.child(sub).fail(what);
  if (sub.empty() && s.config && s.config->has(key)) s.config->child(key).fail(what);
  throw ConfigError(w.file() + ": " + key + ": " + what);
}

std::string count(double value) {
  char text[32];
  std::snprintf(text, sizeof text, value < 1e6 ? "%.0f" : "%.2g", value);
  return text;
}

// What the workload's requests look like, from all of them (a trace, an open loop) or from a sample.
struct Shape {
  double requests = 0;
  double work_steps = 0;  // per request: prefill chunks + output tokens, the fewest steps it takes
  double blocks = 0;      // per request
  double cycle_s = 0;     // per turn of a session: its pause plus its output at the shortest step
  double held_bytes = 0;  // what the workload holds in memory: its sessions
  double simulated_s = 0;

  void add(const Request& r, const Scenario& s, double min_step_s) {
    double output = static_cast<double>(std::max<int64_t>(1, r.output_tokens));
    double chunks = std::ceil(static_cast<double>(r.input_tokens) / static_cast<double>(s.max_batch_tokens));
    requests += 1;
    work_steps += chunks + output;
    blocks += static_cast<double>(r.block_ids.size());
    cycle_s += r.think_time_s + output * min_step_s;
  }
  void finish_means(double sampled) {
    work_steps /= std::max(1.0, sampled);
    blocks /= std::max(1.0, sampled);
    cycle_s /= std::max(1.0, sampled);
  }
};

double session_bytes(const Session& session) {
  double bytes = sizeof(Session);
  for (const Request& r : session.turns) bytes += sizeof(Request) + sizeof(uint64_t) * r.block_ids.capacity();
  return bytes;
}

TraceReadOptions trace_options(const ConfigNode& w, const Scenario& s, const std::string& path) {
  TraceReadOptions options;
  options.format = w.has("format") ? parse_trace_format(w.string("format")) : detect_trace_format(path);
  options.block_tokens = s.block_tokens;
  options.skip_bad_lines = w.boolean("skip_bad_lines", false);
  return options;
}

AgentWorkload agent_of(const ConfigNode& w, uint64_t seed) {
  ConfigNode agent = w.child("agent");
  ConfigNode node = agent.is_scalar() ? load_config(agent.as_string(), "configs/workloads") : agent;
  AgentWorkload parsed = parse_agent_workload(node);
  if (!node.has("seed")) parsed.seed = seed;
  return parsed;
}

// A closed loop: the shape of its sessions' turns; requests are bounded by the window over a turn's
// shortest cycle, per session in flight.
Shape closed_loop_shape(const Scenario& s, const WorkloadKeys& k, double min_step_s) {
  std::vector<Session> sample;
  double loaded_bytes = 0;
  if (k.from_trace) {
    sample = load_sessions(k.trace, trace_options(*s.workload, s, k.trace));
  } else {
    auto generated = make_generated_sessions(agent_of(*s.workload, s.seed), s.block_tokens);
    sample.resize(kSampledSessions);
    for (Session& session : sample) generated->next(session);
  }
  Shape shape;
  double bytes = 0, turns = 0;
  for (const Session& session : sample) {
    bytes += session_bytes(session);
    for (const Request& r : session.turns) shape.add(r, s, min_step_s);
  }
  turns = shape.requests;
  if (k.from_trace) loaded_bytes = bytes;
  shape.finish_means(turns);
  double sessions = static_cast<double>(k.sessions);
  shape.held_bytes = loaded_bytes + sessions * bytes / static_cast<double>(sample.size());
  shape.requests = sessions * (k.window_s / std::max(shape.cycle_s, 1e-9) + 1);
  shape.simulated_s = k.window_s;
  return shape;
}

// An open loop: every request of the window, read through the same driver a simulation uses.
Shape open_loop_shape(const Scenario& s, double min_step_s) {
  Shape shape;
  WorkloadPlan plan = build_workload(s);
  double last = 0;
  while (auto ready = plan.driver->next_ready_time()) {
    Request r = plan.driver->pop_ready();
    shape.add(r, s, min_step_s);
    plan.driver->on_complete(r.id, *ready);
    last = *ready;
  }
  shape.finish_means(shape.requests);
  shape.simulated_s = last;
  return shape;
}

// A step of one decode token with no context: the cheapest the cost model prices.
double shortest_step_s(const Scenario& s) {
  StepWork one_token;
  one_token.add_decode(0);
  return instance_cost_model(s).step_seconds(one_token);
}

struct Budget {
  double available_bytes;
  double limit_bytes;
  int concurrent_runs;
};

std::string over_memory(double bytes, const Budget& b) {
  std::string why = "needs about " + format_bytes(bytes) + " of memory, more than the " +
                    format_bytes(b.limit_bytes) + " allowed (half of the " + format_bytes(b.available_bytes) +
                    " available";
  if (b.concurrent_runs > 1) why += ", shared by " + std::to_string(b.concurrent_runs) + " runs at once";
  return why + "); pass --allow-huge to run anyway";
}

void check_bytes(const Scenario& s, const std::string& key, const std::string& what, double bytes,
                 const std::optional<Budget>& budget) {
  if (budget && bytes > budget->limit_bytes) fail_at(s, key, what + " " + over_memory(bytes, *budget));
}

// The key that most drives the number of requests and steps.
std::string work_key(const WorkloadKeys& k) {
  if (k.closed) return "workload.duration";
  return k.from_trace ? "workload.trace" : "workload.requests";
}

// Whether a sample every second would have kept `rest` (the other costs, in samples' units) within the
// limit: then the sampling interval is what makes the run too big, not the length of the run.
bool interval_is_the_cause(const RunEstimate& e, double rest, double limit) {
  return e.samples > e.simulated_s && e.simulated_s + rest <= limit;
}

void check_estimate(const Scenario& s, const WorkloadKeys& k, const RunEstimate& e, const Shape& shape,
                    const std::optional<Budget>& budget) {
  std::string run = count(e.requests) + " requests over up to " + count(e.steps) + " engine steps";
  if (e.events() > kMaxEvents) {
    std::string what = "about " + count(e.events()) + " events (" + count(e.samples) + " samples, " + run +
                       "), more than the " + count(kMaxEvents) +
                       " an hour and a half of simulation handles; pass --allow-huge to run anyway";
    fail_at(s, interval_is_the_cause(e, e.events() - e.samples, kMaxEvents) ? "sample_interval" : work_key(k),
            what);
  }
  if (!budget || e.bytes <= budget->limit_bytes) return;
  if (shape.held_bytes >= e.bytes - shape.held_bytes) {
    fail_at(s, "workload.sessions",
            count(static_cast<double>(k.sessions)) + " sessions in flight " + over_memory(e.bytes, *budget));
  }
  fail_at(s, work_key(k), "up to " + run + " " + over_memory(e.bytes, *budget));
}

}  // namespace

std::optional<double> available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  double value = 0;
  while (meminfo >> key >> value >> unit) {
    if (key == "MemAvailable:") return value * 1024;
  }
  return std::nullopt;
}

RunEstimate preflight(const Scenario& s, const PreflightOptions& options) {
  WorkloadKeys keys = read_keys(*s.workload);
  if (keys.from_trace) hold_trace_input(keys.trace);  // a pipe: read once, here, before any fork
  std::optional<Budget> budget;
  std::optional<double> available =
      options.available_bytes ? options.available_bytes : available_memory_bytes();
  if (!options.allow_huge && available) {
    int runs = std::max(1, options.concurrent_runs);
    budget = Budget{*available, kMemoryShare * *available / runs, runs};
  }
  double min_step_s = shortest_step_s(s);
  Shape shape;
  if (keys.closed) {
    shape = closed_loop_shape(s, keys, min_step_s);
    check_bytes(s, "workload.sessions", count(static_cast<double>(keys.sessions)) + " sessions in flight",
                shape.held_bytes, budget);
    build_workload(s);  // every other workload key, checked here rather than in the child
  } else {
    // A generated trace is drawn as the run reads it and holds nothing, but drawing it here to learn its
    // shape takes time: its events are bounded by its count first.
    const double requests = static_cast<double>(s.workload->integer("requests", 1));
    if (!keys.from_trace && !options.allow_huge && 2 * requests > kMaxEvents) {
      fail_at(s, "workload.requests",
              count(requests) + " generated requests are at least " + count(2 * requests) +
                  " events (an arrival and a completion each), more than the " + count(kMaxEvents) +
                  " an hour and a half of simulation handles; pass --allow-huge to run anyway");
    }
    shape = open_loop_shape(s, min_step_s);
  }
  RunEstimate e;
  e.simulated_s = shape.simulated_s;
  e.requests = shape.requests;
  e.samples = shape.simulated_s / s.sample_interval_s;
  // A cluster's replicas step side by side, each with tiers of its own.
  const double replicas = s.cluster ? s.cluster->instances : 1;
  e.steps = std::min(replicas * shape.simulated_s / min_step_s, shape.requests * shape.work_steps);
  double tier_blocks = 0;
  for (const TierSpec& t : s.tiers) tier_blocks += replicas * static_cast<double>(t.capacity_blocks());
  double cache_bytes = std::min(tier_blocks, shape.requests * shape.blocks) * kBytesPerCachedBlock;
  const double latencies_kept = std::min(e.requests, static_cast<double>(LatencyQuantiles::kExactLimit));
  e.bytes = latencies_kept * kBytesPerRequest + shape.held_bytes + cache_bytes;
  if (!options.allow_huge) check_estimate(s, keys, e, shape, budget);
  return e;
}

}  // namespace kvtier
