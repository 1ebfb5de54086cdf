// steps.csv's rows, written out by hand.
#include "hw/serve/step_log.h"

#include <gtest/gtest.h>

#include <sstream>

namespace kvtier::hw {
namespace {

TEST(StepLog, OneRowPerStepWithItsWorkSummedAndListed) {
  StepRecord mixed{.start_s = 0.5, .forward_s = 0.0625, .end_s = 0.5703125, .plan = {}};
  mixed.plan.decodes = {{1, 1000}, {2, 24}};
  mixed.plan.prefills = {{3, 4096, 512, std::nullopt}, {4, 0, 100, std::nullopt}};
  mixed.plan.compute_s = 0.06;
  StepRecord decode_only{.start_s = 0.6, .forward_s = 0.01, .end_s = 0.61, .plan = {}};
  decode_only.plan.decodes = {{1, 1001}};
  decode_only.plan.compute_s = 0.0125;
  std::ostringstream out;
  write_steps_csv(out, {mixed, decode_only});
  EXPECT_EQ(out.str(),
            "start_s,forward_s,end_s,predicted_s,decodes,decode_context_tokens,prefills,prefill_tokens,"
            "prefill_context_tokens,decode_contexts,prefill_chunks\n"
            "0.5,0.0625,0.5703125,0.06,2,1024,2,612,4096,1000 24,4096:512 0:100\n"
            "0.6,0.01,0.61,0.0125,1,1001,0,0,0,1001,\n");
}

}  // namespace
}  // namespace kvtier::hw
