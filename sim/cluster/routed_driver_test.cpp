#include "sim/cluster/routed_driver.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvtier {
namespace {

TEST(RoutedDriver, IssuesWhatIsDeliveredInOrderAndReportsCompletions) {
  std::vector<std::pair<uint64_t, double>> completed;
  RoutedDriver d([&](uint64_t id, double now, bool) { completed.emplace_back(id, now); });
  EXPECT_FALSE(d.next_ready_time());
  Request a;
  a.id = 4;
  a.arrival_s = 0.5;  // the trace's time; the instance sees it when it was routed
  a.input_tokens = 100;
  a.output_tokens = 10;
  Request b;
  b.id = 9;
  b.input_tokens = 50;
  b.output_tokens = 1;
  d.deliver(a, 1.0);
  d.deliver(b, 1.5);
  EXPECT_EQ(d.load().requests, 2);
  EXPECT_EQ(d.load().active_tokens, 161);
  ASSERT_TRUE(d.next_ready_time());
  EXPECT_EQ(*d.next_ready_time(), 1.0);
  EXPECT_EQ(d.pop_ready().id, 4u);
  EXPECT_EQ(d.pop_ready().id, 9u);
  d.close();
  EXPECT_FALSE(d.done());  // two in flight
  d.on_complete(9, 2.0);
  EXPECT_EQ(d.load().requests, 1);
  EXPECT_EQ(d.load().active_tokens, 110);
  d.on_complete(4, 3.0);
  EXPECT_EQ(d.load().active_tokens, 0);
  EXPECT_TRUE(d.done());
  EXPECT_EQ(completed, (std::vector<std::pair<uint64_t, double>>{{9, 2.0}, {4, 3.0}}));
  EXPECT_EQ(d.counts().issued, 2);
  EXPECT_EQ(d.counts().completed, 2);
}

TEST(RoutedDriver, IsNotDoneUntilClosed) {
  RoutedDriver d([](uint64_t, double, bool) {});
  EXPECT_FALSE(d.done());
  d.close();
  EXPECT_TRUE(d.done());
}

TEST(RoutedDriver, CountsAnExpectedRequestOnceAndTellsARejection) {
  std::vector<bool> rejected;
  RoutedDriver d([&](uint64_t, double, bool r) { rejected.push_back(r); });
  Request a;
  a.id = 1;
  a.input_tokens = 100;
  a.output_tokens = 10;
  Request b = a;
  b.id = 2;
  d.expect(a);
  d.expect(b);
  EXPECT_EQ(d.load().requests, 2);
  EXPECT_EQ(d.load().active_tokens, 220);
  EXPECT_FALSE(d.next_ready_time());  // expected, not delivered
  d.withdraw(2);
  d.deliver(a, 4.0);
  EXPECT_EQ(d.load().requests, 1);
  EXPECT_EQ(d.load().active_tokens, 110);
  EXPECT_EQ(*d.next_ready_time(), 4.0);
  d.pop_ready();
  d.on_reject(1, 5.0);
  d.close();
  EXPECT_TRUE(d.done());
  EXPECT_EQ(rejected, (std::vector<bool>{true}));
}

}  // namespace
}  // namespace kvtier
