#include "sim/engine/workload.h"

#include <limits>
#include <sstream>

#include "sim/core/config_files.h"

namespace kvtier {
namespace {

// The workload's keys, read and checked; nothing is opened or generated yet.
struct WorkloadSettings {
  bool closed_loop = true;
  std::string source;  // agent | trace
  AgentWorkload agent;
  std::string trace;
  std::optional<TraceFormat> format;
  bool skip_bad_lines = false;
  int64_t sessions = 1;  // closed loop
  double duration_s = 0;
  double rate = 1;        // open loop
  int64_t requests = 0;   // open loop, agent source
};

AgentWorkload agent_workload(const ConfigNode& workload, uint64_t seed) {
  ConfigNode agent = workload.child("agent");
  ConfigNode node = agent.is_scalar() ? load_config(agent.as_string(), "configs/workloads") : agent;
  // One seed drives the whole run, so that `--set seed=N` and a sweep's seeds reseed the generator too.
  AgentWorkload parsed = parse_agent_workload(node, false);
  parsed.seed = seed;
  return parsed;
}

void read_trace_keys(const ConfigNode& w, WorkloadSettings& settings) {
  settings.trace = w.string("trace");
  if (w.has("format")) {
    const std::vector<std::string> formats = {trace_format_name(TraceFormat::kMooncake),
                                              trace_format_name(TraceFormat::kBailian),
                                              trace_format_name(TraceFormat::kNative)};
    settings.format = parse_trace_format(w.choice("format", formats));
  }
  settings.skip_bad_lines = w.boolean("skip_bad_lines", false);
}

double positive_duration(const ConfigNode& workload, const char* key, double fallback) {
  double value = workload.quantity(key, UnitKind::kDuration, fallback);
  if (value <= 0) workload.child(key).fail("expected a positive duration");
  return value;
}

int64_t positive_count(const ConfigNode& workload, const char* key, int64_t fallback, const char* what) {
  int64_t value = workload.integer(key, fallback);
  if (value <= 0) workload.child(key).fail(std::string("expected a positive number of ") + what);
  return value;
}

void read_closed_loop(const ConfigNode& w, const Scenario& s, WorkloadSettings& settings) {
  settings.sessions = positive_count(w, "sessions", 1, "sessions in flight");
  settings.duration_s = positive_duration(w, "duration", ClosedLoopOptions{}.duration_s);
  if (settings.source == "agent") {
    settings.agent = agent_workload(w, s.seed);
  } else {
    read_trace_keys(w, settings);
  }
}

void read_open_loop(const ConfigNode& w, const Scenario& s, WorkloadSettings& settings) {
  settings.rate = w.number("rate", 1.0);
  if (settings.rate <= 0) w.child("rate").fail("expected a positive multiple of the trace's rate");
  settings.duration_s = positive_duration(w, "duration", std::numeric_limits<double>::infinity());
  if (settings.source == "agent") {
    settings.requests = positive_count(w, "requests", 0, "requests");
    settings.agent = agent_workload(w, s.seed);
  } else {
    read_trace_keys(w, settings);
  }
}

WorkloadSettings read_settings(const Scenario& s) {
  const ConfigNode& w = *s.workload;
  w.allow_keys({"loop", "source", "agent", "trace", "format", "skip_bad_lines", "sessions", "duration",
                "rate", "requests"});
  WorkloadSettings settings;
  std::string loop = w.choice("loop", {"closed", "open"}, "closed");
  settings.source = w.has("source")  ? w.choice("source", {"agent", "trace"})
                    : w.has("trace") ? "trace"
                                     : "agent";
  settings.closed_loop = loop == "closed";
  if (settings.closed_loop) {
    read_closed_loop(w, s, settings);
  } else {
    read_open_loop(w, s, settings);
  }
  return settings;
}

TraceReadOptions trace_options(const WorkloadSettings& settings, const Scenario& s) {
  TraceReadOptions options;
  options.format = settings.format ? *settings.format : detect_trace_format(settings.trace);
  options.block_tokens = s.block_tokens;
  options.skip_bad_lines = settings.skip_bad_lines;
  return options;
}

std::unique_ptr<SessionSource> session_source(const WorkloadSettings& settings, const Scenario& s) {
  if (settings.source == "agent") return make_generated_sessions(settings.agent, s.block_tokens);
  std::vector<Session> loaded = load_sessions(settings.trace, trace_options(settings, s));
  if (loaded.empty()) s.workload->child("trace").fail("the trace holds no sessions");
  return make_trace_sessions(std::move(loaded));
}

WorkloadPlan closed_loop(const WorkloadSettings& settings, const Scenario& s) {
  ClosedLoopOptions options{settings.sessions, settings.duration_s};
  std::string what = std::to_string(options.concurrency) + " concurrent " + settings.source +
                     " sessions, closed loop, " + format_duration(options.duration_s);
  return {make_closed_loop(session_source(settings, s), options), options.duration_s, what, std::nullopt};
}

WorkloadPlan open_loop(const WorkloadSettings& settings, const Scenario& s) {
  OpenLoopOptions options;
  options.rate_multiplier = settings.rate;
  options.duration_s = settings.duration_s;
  std::unique_ptr<RequestStream> stream;
  if (settings.source == "agent") {
    TraceReadOptions options_native{TraceFormat::kNative, s.block_tokens, false};
    stream = open_trace_stream(agent_trace_stream(settings.agent, settings.requests), "generated agent trace",
                               options_native);
  } else {
    stream = open_trace(settings.trace, trace_options(settings, s));
  }
  std::ostringstream what;
  what << settings.source << " requests, open loop at " << options.rate_multiplier << "x the trace's rate";
  std::optional<int64_t> requests;
  if (settings.source == "agent") requests = settings.requests;
  return {make_open_loop(std::move(stream), options), options.duration_s / options.rate_multiplier,
          what.str(), requests};
}

}  // namespace

std::string validate_workload(const Scenario& s) {
  WorkloadSettings settings = read_settings(s);
  return std::string("loop: ") + (settings.closed_loop ? "closed" : "open") + ", source: " + settings.source;
}

WorkloadPlan build_workload(const Scenario& s) {
  WorkloadSettings settings = read_settings(s);
  return settings.closed_loop ? closed_loop(settings, s) : open_loop(settings, s);
}

bool is_closed_loop(const Scenario& s) {
  return read_settings(s).closed_loop;
}

WorkloadPlan build_recorded_workload(const Scenario& s, std::vector<RecordedTurn> arrivals) {
  WorkloadSettings settings = read_settings(s);
  if (!settings.closed_loop)
    throw ConfigError("recorded arrivals replay a closed loop; the workload is open");
  std::string what = std::to_string(arrivals.size()) + " turns of " + settings.source +
                     " sessions at recorded arrivals, " + format_duration(settings.duration_s);
  return {make_recorded_closed_loop(session_source(settings, s), std::move(arrivals), settings.duration_s),
          settings.duration_s, what, std::nullopt};
}

}  // namespace kvtier
