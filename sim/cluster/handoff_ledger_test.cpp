#include "sim/cluster/handoff_ledger.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvtier {
namespace {

RequestRecord record(uint64_t id, double arrival, double first_token, double completion, int64_t output) {
  RequestRecord r;
  r.id = id;
  r.arrival_s = arrival;
  r.admitted_s = arrival;
  r.first_token_s = first_token;
  r.completion_s = completion;
  r.input_tokens = 1000;
  r.output_tokens = output;
  r.hit_tokens = {0, 0};
  r.load_wait_by_tier = {0, 0};
  return r;
}

struct Written {
  RequestRecord r;
  int decode, prefill;
};

TEST(HandoffLedger, PairsTheTwoRecordsInEitherOrder) {
  std::vector<Written> written;
  HandoffLedger ledger([&](const RequestRecord& r, int d, int p) { written.push_back({r, d, p}); });
  ledger.route(1, 0, 3);
  ledger.route(2, 1, 2);
  // Request 1: prefilled 1.0 -> 1.5 (its first token there), 4 of its tokens recomputed; the decode
  // instance got its KV at 1.7 and completed at 2.7 after 10 output tokens, preempted once.
  RequestRecord p1 = record(1, 1.0, 1.5, 1.5, 1);
  p1.hit_tokens = {512, 0};
  p1.recomputed_tokens = 488;
  RequestRecord d1 = record(1, 1.5, 1.7, 2.7, 10);
  d1.preemptions = 1;
  ledger.prefill_settled(p1);
  EXPECT_TRUE(written.empty());
  ledger.decode_settled(d1);
  // Request 2's decode record settles first: handed off 2.0 -> 2.5, so TTFT 1.5 of which 0.5 the handoff.
  ledger.decode_settled(record(2, 2.0, 2.5, 3.0, 5));
  ledger.prefill_settled(record(2, 1.0, 2.0, 2.0, 1));
  ASSERT_EQ(written.size(), 2u);
  const RequestRecord& one = written[0].r;
  EXPECT_EQ(written[0].decode, 3);
  EXPECT_EQ(written[0].prefill, 0);
  EXPECT_DOUBLE_EQ(one.arrival_s, 1.0);
  EXPECT_DOUBLE_EQ(one.prefill_end_s, 1.5);
  EXPECT_DOUBLE_EQ(one.first_token_s, 1.7);
  EXPECT_DOUBLE_EQ(one.completion_s, 2.7);
  EXPECT_EQ(one.output_tokens, 10);
  EXPECT_EQ(one.hit_tokens, (std::vector<int64_t>{512, 0}));
  EXPECT_EQ(one.recomputed_tokens, 488);
  EXPECT_EQ(one.preemptions, 1);
  EXPECT_NEAR(one.tpot(), 1.0 / 9, 1e-12);
  EXPECT_EQ(written[1].decode, 2);
  EXPECT_DOUBLE_EQ(written[1].r.ttft(), 1.5);
  // Handoffs 0.2 and 0.5 s, of TTFTs 0.7 and 1.5 s.
  EXPECT_EQ(ledger.handoff_s().count(), 2);
  EXPECT_NEAR(ledger.ttft_share(), 0.7 / 2.2, 1e-12);
}

TEST(HandoffLedger, ARequestRejectedByItsPrefillIsFinalAtOnce) {
  std::vector<Written> written;
  HandoffLedger ledger([&](const RequestRecord& r, int d, int p) { written.push_back({r, d, p}); });
  ledger.route(7, 1, 4);
  RequestRecord r = record(7, 1.0, -1, -1, 1);
  r.rejected = true;
  ledger.prefill_settled(r);
  ASSERT_EQ(written.size(), 1u);
  EXPECT_TRUE(written[0].r.rejected);
  EXPECT_EQ(written[0].decode, 4);
  EXPECT_EQ(written[0].prefill, 1);
  EXPECT_EQ(ledger.handoff_s().count(), 0);
}

}  // namespace
}  // namespace kvtier
