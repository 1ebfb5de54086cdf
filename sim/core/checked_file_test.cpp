// CheckedFile against real failures: /dev/full refuses every write with ENOSPC, a missing folder refuses
// the open, and what succeeds must arrive byte for byte.
#include "sim/core/checked_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>

namespace kvtier {
namespace {

std::string message_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

std::filesystem::path scratch(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("kvtier_checked_" + std::to_string(getpid()) + "_" + name);
}

TEST(CheckedFile, FullDiskIsAnErrorThatNamesTheFileWhenClosed) {
  EXPECT_EQ(message_of([] {
              CheckedFile file("/dev/full");
              file << "a,b,c\n";
              file.close();
            }),
            "cannot write /dev/full: No space left on device");
}

TEST(CheckedFile, FullDiskFailsTheStreamOnceTheBufferSpills) {
  CheckedFile file("/dev/full");
  file << std::string(1 << 20, 'x');
  EXPECT_TRUE(file.bad());
  EXPECT_THROW(file.close(), std::runtime_error);
}

TEST(CheckedFile, WriteHelperReportsAFullDisk) {
  EXPECT_EQ(message_of([] { write_checked_file("/dev/full", "{}\n"); }),
            "cannot write /dev/full: No space left on device");
}

TEST(CheckedFile, MissingFolderIsAnErrorAtOpen) {
  std::filesystem::path path = scratch("absent") / "summary.json";
  EXPECT_EQ(message_of([&] { CheckedFile file(path); }),
            "cannot write " + path.string() + ": No such file or directory");
}

TEST(CheckedFile, WritesEveryByteAcrossManyBuffers) {
  std::filesystem::path path = scratch("big.csv");
  std::string text;
  for (int i = 0; i < 100000; ++i) text += std::to_string(i) + ",x\n";  // ~790 KB, many 64 KiB buffers
  write_checked_file(path, text);
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), text);
  std::filesystem::remove(path);
}

TEST(CheckedFile, ReplacesAnExistingFile) {
  std::filesystem::path path = scratch("old.txt");
  write_checked_file(path, "a much longer earlier content\n");
  write_checked_file(path, "new\n");
  std::ifstream in(path, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "new\n");
  std::filesystem::remove(path);
}

TEST(CheckedFile, ReplaceLeavesTheNewFileAndNoTemporary) {
  std::filesystem::path dir = scratch("replace");
  std::filesystem::create_directories(dir);
  write_checked_file(dir / "point.json", "old\n");
  replace_checked_file(dir / "point.json", "new\n");
  std::ifstream in(dir / "point.json", std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "new\n");
  EXPECT_FALSE(std::filesystem::exists(dir / ".point.json.tmp"));
  std::filesystem::remove_all(dir);
}

TEST(CheckedFile, AReplaceThatFailsKeepsTheEarlierFileWhole) {
  std::filesystem::path dir = scratch("replace-fails");
  std::filesystem::create_directories(dir / ".point.json.tmp" / "in-the-way");  // the temporary cannot be opened
  write_checked_file(dir / "point.json", "old\n");
  std::string error = message_of([&] { replace_checked_file(dir / "point.json", "new\n"); });
  EXPECT_EQ(error.rfind("cannot write " + (dir / ".point.json.tmp").string(), 0), 0u) << error;
  std::ifstream in(dir / "point.json", std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "old\n");
  std::filesystem::remove_all(dir);
}

TEST(CheckedFile, FolderUnderAFileIsAnErrorThatNamesIt) {
  std::filesystem::path file = scratch("plain");
  write_checked_file(file, "x");
  std::string message = message_of([&] { create_checked_folder(file / "run"); });
  EXPECT_EQ(message.rfind("cannot create " + (file / "run").string() + ": ", 0), 0u) << message;
  std::filesystem::remove(file);
}

}  // namespace
}  // namespace kvtier
