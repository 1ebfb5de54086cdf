#include "workload.h"

#include <limits>
#include <sstream>

#include "embedded_files.h"

namespace kvtier {
namespace {

AgentWorkload agent_workload(const ConfigNode& workload, uint64_t seed) {
  ConfigNode agent = workload.child("agent");
  ConfigNode node = agent.is_scalar() ? load_config(agent.as_string(), "configs/workloads") : agent;
  AgentWorkload parsed = parse_agent_workload(node);
  if (!node.has("seed"))
    parsed.seed = seed;  // the scenario's seed drives the generator unless it has its own
  return parsed;
}

TraceReadOptions trace_options(const ConfigNode& workload, const Scenario& s, const std::string& path) {
  TraceReadOptions options;
  options.format =
      workload.has("format") ? parse_trace_format(workload.string("format")) : detect_trace_format(path);
  options.block_tokens = s.block_tokens;
  options.skip_bad_lines = workload.boolean("skip_bad_lines", false);
  return options;
}

double positive_duration(const ConfigNode& workload, const char* key, double fallback) {
  double value = workload.quantity(key, UnitKind::kDuration, fallback);
  if (value <= 0) workload.child(key).fail("expected a positive duration");
  return value;
}

WorkloadPlan closed_loop(const ConfigNode& w, const Scenario& s, const std::string& source) {
  ClosedLoopOptions options;
  options.concurrency = w.integer("sessions", 1);
  options.duration_s = positive_duration(w, "duration", options.duration_s);
  std::unique_ptr<SessionSource> sessions;
  if (source == "agent") {
    sessions = make_generated_sessions(agent_workload(w, s.seed), s.block_tokens);
  } else {
    std::string path = w.string("trace");
    std::vector<Session> loaded = load_sessions(path, trace_options(w, s, path));
    if (loaded.empty()) w.child("trace").fail("the trace holds no sessions");
    sessions = make_trace_sessions(std::move(loaded));
  }
  std::string what = std::to_string(options.concurrency) + " concurrent " + source +
                     " sessions, closed loop, " + format_duration(options.duration_s);
  return {make_closed_loop(std::move(sessions), options), options.duration_s, what};
}

WorkloadPlan open_loop(const ConfigNode& w, const Scenario& s, const std::string& source) {
  OpenLoopOptions options;
  options.rate_multiplier = w.number("rate", 1.0);
  options.duration_s = positive_duration(w, "duration", std::numeric_limits<double>::infinity());
  std::unique_ptr<RequestStream> stream;
  if (source == "agent") {
    int64_t requests = w.integer("requests");
    if (requests <= 0) w.child("requests").fail("expected a positive number of requests");
    auto text = std::make_unique<std::stringstream>();
    write_agent_trace(agent_workload(w, s.seed), requests, *text);
    TraceReadOptions options_native{TraceFormat::kNative, s.block_tokens, false};
    stream = open_trace_stream(std::move(text), "generated agent trace", options_native);
  } else {
    std::string path = w.string("trace");
    stream = open_trace(path, trace_options(w, s, path));
  }
  std::ostringstream what;
  what << source << " requests, open loop at " << options.rate_multiplier << "x the trace's rate";
  return {make_open_loop(std::move(stream), options), options.duration_s / options.rate_multiplier,
          what.str()};
}

}  // namespace

WorkloadPlan build_workload(const Scenario& s) {
  const ConfigNode& w = *s.workload;
  w.allow_keys({"loop", "source", "agent", "trace", "format", "skip_bad_lines", "sessions", "duration",
                "rate", "requests"});
  std::string loop = w.string("loop", "closed");
  std::string source = w.string("source", w.has("trace") ? "trace" : "agent");
  if (source != "agent" && source != "trace")
    w.child("source").fail("expected agent or trace, got '" + source + "'");
  if (loop == "closed") return closed_loop(w, s, source);
  if (loop == "open") return open_loop(w, s, source);
  w.child("loop").fail("expected closed or open, got '" + loop + "'");
}

}  // namespace kvtier
