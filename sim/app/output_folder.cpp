#include "sim/app/output_folder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "sim/core/checked_file.h"
#include "sim/core/config.h"

namespace fs = std::filesystem;

namespace kvtier {
namespace {

constexpr const char* kMarkerText =
    "This folder was written by kvtier simulate. kvtier simulate --force may replace it.\n";

fs::path normalised(const std::string& requested) {
  fs::path path = fs::weakly_canonical(fs::absolute(requested));
  while (!path.has_filename() && path.has_relative_path()) path = path.parent_path();  // "d/" is "d"
  return path;
}

// True when `inner` is `outer` or lies inside it.
bool contains(const fs::path& outer, const fs::path& inner) {
  auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return o == outer.end();
}

[[noreturn]] void refuse(const std::string& requested, const std::string& why) {
  throw ConfigError("--out " + requested + ": " + why);
}

// mkdtemp() beside the destination: ".NAME.kvtier-<role>-PID-XXXXXX".
fs::path make_sibling_folder(const fs::path& target, const std::string& role) {
  std::string name = target.filename().string().substr(0, 200);
  std::string pattern =
      (target.parent_path() / ("." + name + ".kvtier-" + role + "-" + std::to_string(getpid()) + "-XXXXXX"))
          .string();
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    throw std::runtime_error("cannot create a folder in " + target.parent_path().string() + ": " +
                             std::strerror(errno));
  }
  mode_t mask = umask(0);  // mkdtemp makes it private; results get the usual permissions
  umask(mask);
  chmod(buffer.data(), 0777 & ~mask);
  return fs::path(buffer.data());
}

void rename_or_throw(const fs::path& from, const fs::path& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    throw std::runtime_error("cannot move " + from.string() + " to " + to.string() + ": " +
                             std::strerror(errno));
  }
}

bool is_kvtier_folder(const fs::path& path) {
  return fs::is_regular_file(fs::symlink_status(path / kOutputMarker));
}

}  // namespace

OutputTarget check_output_target(const std::string& requested, bool force) {
  OutputTarget target{requested, normalised(requested), false};
  if (contains(target.path, fs::canonical(fs::current_path()))) {
    refuse(requested, "this is the current folder or contains it; name a new folder for the results");
  }
  fs::file_status status = fs::symlink_status(target.path);
  if (!fs::exists(status)) return target;
  if (!fs::is_directory(status)) refuse(requested, "exists and is not a folder; kvtier never replaces it");
  if (fs::is_empty(target.path)) return target;
  if (!force) {
    refuse(requested, "the folder exists and is not empty; pass --force to replace an earlier kvtier "
                      "output folder");
  }
  if (!is_kvtier_folder(target.path)) {
    refuse(requested, std::string("the folder was not written by kvtier (it has no ") + kOutputMarker +
                          " file); --force replaces only kvtier's own output folders");
  }
  target.replaces_earlier = true;
  return target;
}

StagingFolder::StagingFolder(OutputTarget target) : target_(std::move(target)) {
  fs::path parent = target_.path.parent_path();
  for (fs::path p = parent; !fs::exists(fs::symlink_status(p)) && p.has_relative_path(); p = p.parent_path())
    first_created_parent_ = p;
  try {
    create_checked_folder(parent);
    staging_ = make_sibling_folder(target_.path, "tmp");
    write_checked_file(staging_ / kOutputMarker, kMarkerText);
  } catch (...) {
    std::error_code ignored;
    if (!staging_.empty()) fs::remove_all(staging_, ignored);
    remove_created_parents();
    throw;
  }
}

StagingFolder::~StagingFolder() {
  if (committed_) return;
  std::error_code ignored;
  fs::remove_all(staging_, ignored);
  remove_created_parents();
}

// Only folders this run created, and only while they are empty.
void StagingFolder::remove_created_parents() const {
  if (first_created_parent_.empty()) return;
  std::error_code ignored;
  for (fs::path p = target_.path.parent_path(); contains(first_created_parent_, p); p = p.parent_path()) {
    if (!fs::remove(p, ignored)) return;
  }
}

std::string StagingFolder::describe(const std::string& message) const {
  std::string text = message, from = staging_.string(), to = target_.path.string();
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

void StagingFolder::commit() {
  if (!target_.replaces_earlier) {
    rename_or_throw(staging_, target_.path);  // fails if the folder was filled meanwhile
    committed_ = true;
    return;
  }
  fs::path aside = make_sibling_folder(target_.path, "old");
  if (!is_kvtier_folder(target_.path)) {
    fs::remove(aside);
    refuse(target_.requested, "the folder changed during the run and is no longer kvtier's; left as it is");
  }
  try {
    rename_or_throw(target_.path, aside);  // replaces the empty folder mkdtemp made
  } catch (...) {
    fs::remove(aside);
    throw;
  }
  try {
    rename_or_throw(staging_, target_.path);
  } catch (...) {
    rename_or_throw(aside, target_.path);
    throw;
  }
  committed_ = true;
  std::error_code ignored;
  fs::remove_all(aside, ignored);
}

}  // namespace kvtier
