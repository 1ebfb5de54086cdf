// Test helpers: copies of the committed fixture folders (validate/fixtures/) with one line edited, so
// that each malformed or mismatched case is the passing fixture plus the one fault it tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace kvtier::validation::testing {

inline const std::filesystem::path kFixtures = "validate/fixtures";

// A fresh copy of validate/fixtures/<name> under the temporary folder, named `copy`.
inline std::filesystem::path copy_fixture(const std::string& name, const std::string& copy) {
  std::filesystem::path to = std::filesystem::temp_directory_path() / ("kvtier-validate-" + copy);
  std::filesystem::remove_all(to);
  std::filesystem::copy(kFixtures / name, to, std::filesystem::copy_options::recursive);
  return to;
}

// Replaces the first occurrence of `from` in `file` by `to`; returns false when `from` is not there.
inline bool edit_file(const std::filesystem::path& file, const std::string& from, const std::string& to) {
  std::stringstream text;
  text << std::ifstream(file).rdbuf();
  std::string s = text.str();
  size_t at = s.find(from);
  if (at == std::string::npos) return false;
  s.replace(at, from.size(), to);
  std::ofstream(file) << s;
  return true;
}

}  // namespace kvtier::validation::testing
