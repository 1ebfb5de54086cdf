// The main of every test binary. CTest runs each test case as its own process, many at once, and the
// tests write their scratch files under std::filesystem::temp_directory_path(): two cases of one binary
// writing the same name would read each other's files. So each process gets a temporary folder of its own
// (TMPDIR, which temp_directory_path() and the kvtier binaries a test starts both read), removed with
// everything in it when the tests end.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <exception>

#include "sim/core/temporary_folder.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  try {
    kvtier::TemporaryFolder scratch("kvtier-test");
    setenv("TMPDIR", scratch.path().c_str(), 1);
    return RUN_ALL_TESTS();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "kvtier tests: %s\n", error.what());
    return 1;
  }
}
