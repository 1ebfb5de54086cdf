// Traces read from a pipe: format detection peeks without consuming, the one reader gets every byte,
// a second reader is refused unless the pipe was held whole first. A FIFO stands in for a shell pipe.
#include "sim/workload/trace_input.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <thread>

#include "sim/workload/test_util.h"

namespace kvtier {
namespace {

using testing::read_all;

const std::string kTwoRequests =
    "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [1]}\n"
    "{\"timestamp\": 5, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1, 2]}\n";

// A FIFO with a writer thread that writes `text` once a reader opens it.
class Fifo {
 public:
  Fifo(const std::string& name, std::string text)
      : path_(std::filesystem::temp_directory_path() /
              ("kvtier-fifo-" + std::to_string(::getpid()) + "-" + name)) {
    std::filesystem::remove(path_);
    if (::mkfifo(path_.c_str(), 0600) != 0) throw std::runtime_error("mkfifo failed");
    writer_ = std::thread([this, text = std::move(text)] { std::ofstream(path_, std::ios::binary) << text; });
  }
  ~Fifo() {
    writer_.join();
    std::filesystem::remove(path_);
  }
  std::string path() const { return path_.string(); }

 private:
  std::filesystem::path path_;
  std::thread writer_;
};

TEST(TraceInput, DetectionPeeksAndTheReaderStillGetsEveryLine) {
  Fifo fifo("peek", kTwoRequests);
  ASSERT_TRUE(is_pipe_input(fifo.path()));
  EXPECT_EQ(detect_trace_format(fifo.path()), TraceFormat::kMooncake);
  auto stream = open_trace(fifo.path(), TraceReadOptions{});
  std::vector<Request> requests = read_all(*stream);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1].input_tokens, 600);
  try {
    open_trace(fifo.path(), TraceReadOptions{});
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              fifo.path() +
                  ": a pipe can be read only once, and this one was read already; save "
                  "the trace to a file");
  }
}

TEST(TraceInput, APipeHeldWholeCanBeReadAgainAndAgain) {
  Fifo fifo("held", kTwoRequests);
  EXPECT_TRUE(trace_input_smaller_than(fifo.path(), 1000));  // a look ahead, kept for the hold
  hold_trace_input(fifo.path());
  for (int round = 0; round < 3; ++round) {
    auto stream = open_trace(fifo.path(), TraceReadOptions{});
    EXPECT_EQ(read_all(*stream).size(), 2u) << round;
  }
  EXPECT_FALSE(trace_input_smaller_than(fifo.path(), kTwoRequests.size()));
}

TEST(TraceInput, SizeOfAPipeIsFoundByLookingAheadNoFurtherThanAsked) {
  Fifo fifo("size", kTwoRequests);
  EXPECT_FALSE(trace_input_smaller_than(fifo.path(), 10));
  EXPECT_TRUE(trace_input_smaller_than(fifo.path(), kTwoRequests.size() + 1));
  auto stream = open_trace(fifo.path(), TraceReadOptions{});
  EXPECT_EQ(read_all(*stream).size(), 2u);
}

TEST(TraceInput, RegularFilesAreNotPipesAndNameThemselves) {
  std::string path = testing::temp_file("regular.jsonl", kTwoRequests);
  EXPECT_FALSE(is_pipe_input(path));
  EXPECT_TRUE(is_pipe_input("-"));
  EXPECT_EQ(trace_input_name("-"), "stdin");
  EXPECT_EQ(trace_input_name(path), path);
  EXPECT_TRUE(trace_input_smaller_than(path, kTwoRequests.size() + 1));
  EXPECT_FALSE(trace_input_smaller_than(path, kTwoRequests.size()));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kvtier
