// The NVMe store's two I/O paths (io_uring and worker threads) and its striping over several files:
// the bytes land where the format says, read back exactly, and flipped bits, torn writes, a wrong file
// and failed writes are found and named on either path.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "hw/store/fault_injecting_file.h"
#include "hw/store/memory_region.h"
#include "hw/store/nvme_store.h"
#include "hw/store/store_error.h"

namespace kvtier::hw {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kBlock = 16384;

class StoreFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info->name();
    std::replace(name.begin(), name.end(), '/', '-');
    dir_ = fs::temp_directory_path() / ("kvtier-nvme-io-" + std::to_string(::getpid()) + "-" + name);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::vector<std::string> files(int count) const {
    std::vector<std::string> paths;
    for (int i = 0; i < count; ++i) paths.push_back((dir_ / ("drive" + std::to_string(i))).string());
    return paths;
  }
  fs::path dir_;
};

const char* expected_path_name(IoPath path) {
  return path == IoPath::kAuto ? "io_uring" : "threads";
}

// `count` blocks of kBlock random bytes, keys 0..count-1, in one aligned region.
struct Blocks {
  Blocks(int count, uint64_t seed) : region(allocate_host_region(count * kBlock)) {
    std::mt19937_64 rng(seed);
    for (uint64_t i = 0; i < region.bytes(); ++i) region.data()[i] = static_cast<std::byte>(rng());
    for (int i = 0; i < count; ++i) writes.push_back({static_cast<BlockKey>(i), bytes(i)});
  }
  std::span<std::byte> bytes(int i) const { return {region.data() + i * kBlock, kBlock}; }
  MemoryRegion region;
  std::vector<BlockWrite> writes;
};

std::vector<std::byte> read_file(const std::string& path, uint64_t offset, uint64_t bytes) {
  std::vector<std::byte> out(bytes);
  const int fd = ::open(path.c_str(), O_RDONLY);
  EXPECT_EQ(::pread(fd, out.data(), bytes, static_cast<off_t>(offset)), static_cast<ssize_t>(bytes));
  ::close(fd);
  return out;
}

void write_file(const std::string& path, uint64_t offset, std::span<const std::byte> bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  EXPECT_EQ(::pwrite(fd, bytes.data(), bytes.size(), static_cast<off_t>(offset)),
            static_cast<ssize_t>(bytes.size()));
  ::fsync(fd);
  ::close(fd);
}

// get() of one key into a fresh buffer; the StoreError's message, or "" when it verified.
std::string get_error(NvmeStore& store, BlockKey key) {
  MemoryRegion buffer = allocate_host_region(kBlock);
  const BlockRead read{key, {buffer.data(), kBlock}};
  try {
    store.get({&read, 1});
  } catch (const StoreError& error) {
    EXPECT_EQ(error.code(), StoreErrc::kCorrupt);
    return error.what();
  }
  return "";
}

// Each test on both paths; the io_uring one is skipped, with the kernel's reason, where it cannot run.
class NvmeStorePaths : public StoreFiles, public ::testing::WithParamInterface<IoPath> {
 protected:
  void SetUp() override {
    StoreFiles::SetUp();
    if (GetParam() != IoPath::kAuto) return;
    if (const auto why = io_uring_unavailable_reason()) GTEST_SKIP() << "io_uring unavailable: " << *why;
  }
  NvmeStoreOptions options(uint64_t capacity) const {
    return {.block_bytes = kBlock, .capacity_blocks = capacity, .queue_depth = 4, .io_path = GetParam()};
  }
};

TEST_P(NvmeStorePaths, StripesBlocksRoundRobinAfterEachFilesHeaderAndReadsThemBack) {
  const auto paths = files(3);
  auto store = NvmeStore::create_striped(paths, options(30));
  EXPECT_STREQ(store->io_path(), expected_path_name(GetParam()));
  const Blocks blocks(20, 1);
  store->put(blocks.writes);
  // A fresh store hands out slots lowest first: key i in slot i, in file i mod 3 at 4 KiB + (i / 3) blocks.
  for (int i = 0; i < 20; ++i) {
    const auto on_disk = read_file(paths[i % 3], 4096 + (i / 3) * kBlock, kBlock);
    EXPECT_EQ(std::memcmp(on_disk.data(), blocks.bytes(i).data(), kBlock), 0) << "key " << i;
  }
  for (const std::string& path : paths) {
    EXPECT_EQ(std::memcmp(read_file(path, 0, 8).data(), "KVTIERNV", 8), 0) << path;
  }
  MemoryRegion back = allocate_host_region(20 * kBlock);
  std::vector<BlockRead> reads;
  for (int i = 19; i >= 0; --i) reads.push_back({static_cast<BlockKey>(i), {back.data() + i * kBlock, kBlock}});
  store->get(reads);
  EXPECT_EQ(std::memcmp(back.data(), blocks.region.data(), 20 * kBlock), 0);
}

TEST_P(NvmeStorePaths, AFlippedBitInOneDriveIsNamedWithItsFileAndTheOtherKeysStillRead) {
  const auto paths = files(2);
  auto store = NvmeStore::create_striped(paths, options(8));
  const Blocks blocks(4, 2);
  store->put(blocks.writes);
  // Key 3 sits in slot 3: file 1, its second slot. Flip one bit in the middle of it.
  const uint64_t offset = 4096 + kBlock + 5000;
  std::vector<std::byte> byte = read_file(paths[1], offset, 1);
  byte[0] ^= std::byte{0x04};
  write_file(paths[1], offset, byte);

  const std::string message = get_error(*store, 3);
  EXPECT_NE(message.find("key(s) 3 (" + paths[1] + " at offset " + std::to_string(4096 + kBlock) + ")"),
            std::string::npos)
      << message;
  EXPECT_FALSE(store->contains(3));
  for (BlockKey key : {0, 1, 2}) EXPECT_EQ(get_error(*store, key), "") << "key " << key;
}

TEST_P(NvmeStorePaths, ATornWriteIsFound) {
  const auto paths = files(1);
  auto store = NvmeStore::create_striped(paths, options(4));
  const Blocks blocks(2, 3);
  store->put(blocks.writes);
  // Key 1's slot got only its first 4 KiB of another version of the block before the power went.
  const Blocks other(2, 4);
  write_file(paths[0], 4096 + kBlock, other.bytes(1).first(4096));
  EXPECT_NE(get_error(*store, 1).find("key(s) 1 ("), std::string::npos);
  EXPECT_EQ(get_error(*store, 0), "");
}

TEST_P(NvmeStorePaths, AWrongFileIsFoundForEveryKeyItHolds) {
  const auto paths = files(2);
  auto store = NvmeStore::create_striped(paths, options(8));
  const Blocks blocks(6, 5);
  store->put(blocks.writes);
  // Drive 0 now holds drive 1's slots (drives enumerated in another order, a restored image).
  write_file(paths[0], 4096, read_file(paths[1], 4096, 3 * kBlock));
  for (BlockKey key : {0, 2, 4}) {
    EXPECT_NE(get_error(*store, key).find(paths[0]), std::string::npos) << "key " << key;
  }
  for (BlockKey key : {1, 3, 5}) EXPECT_EQ(get_error(*store, key), "") << "key " << key;
}

TEST_P(NvmeStorePaths, WithoutChecksumsBytesRoundTripAndNothingIsVerified) {
  const auto paths = files(1);
  NvmeStoreOptions unchecked = options(4);
  unchecked.checksum = ChecksumKind::kNone;
  auto store = NvmeStore::create_striped(paths, unchecked);
  const Blocks blocks(2, 6);
  store->put(blocks.writes);
  EXPECT_EQ(get_error(*store, 0), "");
  // The header says so, and a flipped bit goes unnoticed: that is what turning checksums off means.
  EXPECT_EQ(read_file(paths[0], 12, 4)[0], std::byte{0});  // checksum kind 0: none
  write_file(paths[0], 4096 + 10, std::vector<std::byte>(1, std::byte{0xFF}));
  EXPECT_EQ(get_error(*store, 0), "");
}

INSTANTIATE_TEST_SUITE_P(IoPaths, NvmeStorePaths, ::testing::Values(IoPath::kThreads, IoPath::kAuto),
                         [](const auto& info) { return std::string(expected_path_name(info.param)); });

// A file whose descriptor (what io_uring uses) is read-only, so every asynchronous write fails the way
// a drive that went read-only does; the header, written through write_at, still goes through.
class ReadOnlyDescriptorFile : public BlockFile {
 public:
  ReadOnlyDescriptorFile(const std::string& path, uint64_t bytes)
      : inner_(path, bytes, IoMode::kBuffered), fd_(::open(path.c_str(), O_RDONLY)) {}
  ~ReadOnlyDescriptorFile() override { ::close(fd_); }
  uint64_t size() const override { return inner_.size(); }
  std::string name() const override { return inner_.name(); }
  int native_handle() const override { return fd_; }
  void write_at(uint64_t offset, std::span<const iovec> buffers) override { inner_.write_at(offset, buffers); }
  void read_at(uint64_t offset, std::span<const iovec> buffers) override { inner_.read_at(offset, buffers); }

 private:
  DirectFile inner_;
  int fd_;
};

TEST_F(StoreFiles, AWriteFailingInIoUringIsNamedAndLeavesEveryKeyAsItWas) {
  if (const auto why = io_uring_unavailable_reason()) GTEST_SKIP() << "io_uring unavailable: " << *why;
  const NvmeStoreOptions options{.block_bytes = kBlock, .capacity_blocks = 8, .queue_depth = 4};
  const auto path = files(1)[0];
  NvmeStore store(std::make_unique<ReadOnlyDescriptorFile>(path, NvmeStore::file_bytes(options)), options);
  ASSERT_STREQ(store.io_path(), "io_uring");
  const Blocks blocks(3, 7);
  try {
    store.put(blocks.writes);
    FAIL() << "a write through a read-only descriptor succeeded";
  } catch (const StoreError& error) {
    EXPECT_EQ(error.code(), StoreErrc::kIo);
    EXPECT_NE(std::string(error.what()).find("write to " + path + " at offset 4096"), std::string::npos)
        << error.what();
    EXPECT_NE(std::string(error.what()).find("Bad file descriptor"), std::string::npos) << error.what();
  }
  EXPECT_EQ(store.stored_blocks(), 0u);
  EXPECT_EQ(store.free_blocks(), 8u);
}

TEST_F(StoreFiles, StripedFullBlocksMergeIntoOneIoPerFile) {
  const NvmeStoreOptions options{.block_bytes = kBlock, .capacity_blocks = 12, .queue_depth = 3};
  std::vector<std::shared_ptr<IoLog>> logs;
  std::vector<std::unique_ptr<BlockFile>> drives;
  for (const std::string& path : files(3)) {
    logs.push_back(std::make_shared<IoLog>());
    drives.push_back(std::make_unique<FaultInjectingFile>(
        std::make_unique<DirectFile>(path, NvmeStore::file_bytes(options, 3), IoMode::kDirect), logs.back()));
  }
  NvmeStore store(std::move(drives), options);
  for (const auto& log : logs) log->writes = 0;  // the headers
  const Blocks blocks(12, 8);
  store.put(blocks.writes);
  for (const auto& log : logs) EXPECT_EQ(log->writes, 1);  // slots 0,3,6,9 / 1,4,7,10 / 2,5,8,11
  logs[2]->writes_allowed = 0;  // drive 2 breaks: the batch fails and nothing changes
  const Blocks again(12, 9);
  EXPECT_THROW(store.put(again.writes), StoreError);
  EXPECT_EQ(get_error(store, 2), "");
  EXPECT_EQ(store.stored_blocks(), 12u);
}

}  // namespace
}  // namespace kvtier::hw
