#include "hw/serve/step_log.h"

#include <string>

#include "sim/core/csv_text.h"

namespace kvtier::hw {
namespace {

std::string row_of(const StepRecord& s) {
  const StepPlan& p = s.plan;
  int64_t decode_context = 0;
  std::string decodes;
  for (const DecodeWork& d : p.decodes) {
    decode_context += d.context_tokens;
    if (!decodes.empty()) decodes += ' ';
    append_integer(decodes, d.context_tokens);
  }
  int64_t prefill_tokens = 0;
  int64_t prefill_context = 0;
  std::string chunks;
  for (const PrefillChunk& c : p.prefills) {
    prefill_tokens += c.tokens;
    prefill_context += c.start_token;
    if (!chunks.empty()) chunks += ' ';
    append_integer(chunks, c.start_token);
    chunks += ':';
    append_integer(chunks, c.tokens);
  }
  std::string row;
  for (double v : {s.start_s, s.forward_s, s.end_s, p.compute_s}) {
    append_shortest(row, v);
    row += ',';
  }
  for (int64_t v : {static_cast<int64_t>(p.decodes.size()), decode_context,
                    static_cast<int64_t>(p.prefills.size()), prefill_tokens, prefill_context}) {
    append_integer(row, v);
    row += ',';
  }
  row += decodes + ',' + chunks + '\n';
  return row;
}

}  // namespace

void write_steps_csv(std::ostream& out, const std::vector<StepRecord>& steps) {
  out << "start_s,forward_s,end_s,predicted_s,decodes,decode_context_tokens,prefills,prefill_tokens,"
         "prefill_context_tokens,decode_contexts,prefill_chunks\n";
  for (const StepRecord& s : steps) out << row_of(s);
}

}  // namespace kvtier::hw
