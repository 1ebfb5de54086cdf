// The store's files say which format and checksum they carry, and a store refuses a file that is not
// fresh, naming it and what it holds. testdata/nvme_store_format1.store is a file written by kvtier's
// format-1 store (zlib CRC-32, no header): key 42, 4096 bytes of (i * 7 + 3) mod 256, in slot 0.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <vector>

#include "hw/store/memory_region.h"
#include "hw/store/nvme_store.h"
#include "hw/store/store_error.h"

namespace kvtier::hw {
namespace {

namespace fs = std::filesystem;

const char* const kFormat1File = "hw/store/testdata/nvme_store_format1.store";

// An existing file opened as it is (DirectFile only creates new ones), with blocking buffered I/O.
class ExistingFile : public BlockFile {
 public:
  explicit ExistingFile(std::string path) : path_(std::move(path)), fd_(::open(path_.c_str(), O_RDWR)) {}
  ~ExistingFile() override { ::close(fd_); }
  uint64_t size() const override { return fs::file_size(path_); }
  std::string name() const override { return path_; }
  void write_at(uint64_t offset, std::span<const iovec> buffers) override {
    ASSERT_GT(::pwritev(fd_, buffers.data(), static_cast<int>(buffers.size()), static_cast<off_t>(offset)), 0);
  }
  void read_at(uint64_t offset, std::span<const iovec> buffers) override {
    ASSERT_GT(::preadv(fd_, buffers.data(), static_cast<int>(buffers.size()), static_cast<off_t>(offset)), 0);
  }

 private:
  std::string path_;
  int fd_;
};

class NvmeStoreFormatTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / ("kvtier-format-" + std::to_string(::getpid()) + "-" + info->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string file(const char* name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

std::string refusal(const std::function<void()>& open) {
  try {
    open();
  } catch (const StoreError& error) {
    return error.what();
  }
  return "(accepted)";
}

const NvmeStoreOptions kOptions{.block_bytes = 4096, .capacity_blocks = 2, .queue_depth = 1};

TEST_F(NvmeStoreFormatTest, AFormat1FileIsRefusedAtCreateNamingTheFileAndTheFormat) {
  fs::copy_file(kFormat1File, file("store"));
  const std::string message = refusal([&] { NvmeStore::create(file("store"), kOptions); });
  EXPECT_NE(message.find(file("store")), std::string::npos) << message;
  EXPECT_NE(message.find("format 1"), std::string::npos) << message;
  EXPECT_NE(message.find("zlib CRC-32"), std::string::npos) << message;
  EXPECT_TRUE(fs::exists(file("store"))) << "a refused file must be left as it was";
}

TEST_F(NvmeStoreFormatTest, AFormat1FileHandedToTheConstructorIsRefusedAndNotOverwritten) {
  fs::copy_file(kFormat1File, file("store"));
  const std::string message =
      refusal([&] { NvmeStore store(std::make_unique<ExistingFile>(file("store")), kOptions); });
  EXPECT_NE(message.find(file("store")), std::string::npos) << message;
  EXPECT_NE(message.find("format 1"), std::string::npos) << message;
  std::ifstream original(kFormat1File, std::ios::binary), now(file("store"), std::ios::binary);
  EXPECT_TRUE(std::equal(std::istreambuf_iterator<char>(original), {}, std::istreambuf_iterator<char>(now)));
}

TEST_F(NvmeStoreFormatTest, ALeftoverFormat2FileIsRefusedSayingWhatItHolds) {
  std::ofstream(file("store")).flush();
  fs::resize_file(file("store"), NvmeStore::file_bytes(kOptions));
  { NvmeStore first(std::make_unique<ExistingFile>(file("store")), kOptions); }
  const std::string message = refusal([&] { NvmeStore::create(file("store"), kOptions); });
  EXPECT_NE(message.find("format 2 (CRC-32C, stripe 1 of 1, 2 slots of 4096 bytes)"), std::string::npos)
      << message;
}

}  // namespace
}  // namespace kvtier::hw
