#include "sim/serving/request_log.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvtier {
namespace {

RequestRecord arriving(uint64_t id) {
  RequestRecord r;
  r.id = id;
  return r;
}

std::vector<uint64_t> ids(const std::vector<RequestRecord>& records) {
  std::vector<uint64_t> out;
  for (const RequestRecord& r : records) out.push_back(r.id);
  return out;
}

// Records go to the reader in arrival order, each once final; the log holds only those from the oldest
// one in flight onwards.
TEST(RequestLog, HandsOverFinalRecordsInArrivalOrder) {
  std::vector<RequestRecord> read;
  RequestLog log([&](const RequestRecord& r) { read.push_back(r); });
  for (uint64_t id = 10; id < 14; ++id) EXPECT_EQ(log.add(arriving(id)), id - 10);
  log[1].completion_s = 2.0;  // 11 completes while 10 is in flight: it waits
  log.settle();
  EXPECT_TRUE(read.empty());
  EXPECT_EQ(log.held(), 4u);
  log[0].rejected = true;  // 10 is rejected: 10 and 11 go, 12 is in flight
  log.settle();
  EXPECT_EQ(ids(read), (std::vector<uint64_t>{10, 11}));
  EXPECT_EQ(log.held(), 2u);
  EXPECT_EQ(log.add(arriving(14)), 4u);
  log[4].completion_s = 3.0;
  log[2].completion_s = 4.0;
  EXPECT_EQ(log[4].id, 14u);
  log.settle();
  EXPECT_EQ(ids(read), (std::vector<uint64_t>{10, 11, 12}));
  log.close();  // 13 never completed: it goes too, and so does 14 after it
  EXPECT_EQ(ids(read), (std::vector<uint64_t>{10, 11, 12, 13, 14}));
  EXPECT_EQ(read[3].completion_s, -1);
  EXPECT_EQ(log.held(), 0u);
  EXPECT_EQ(log.size(), 5u);
}

TEST(RequestLog, WithoutAReaderKeepsEveryRecord) {
  RequestLog log;
  log.add(arriving(1));
  log[0].completion_s = 1.0;
  log.settle();
  log.close();
  ASSERT_EQ(log.held(), 1u);
  EXPECT_EQ(log[0].id, 1u);
}

}  // namespace
}  // namespace kvtier
