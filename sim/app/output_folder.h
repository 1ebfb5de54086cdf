// Where `kvtier simulate` puts its results, and what it promises about everything else on the disk:
//
// - it never writes into, nor deletes, a folder it did not create: an existing non-empty --out is refused,
//   and --force replaces only a folder holding the marker file (.kvtier-output) that kvtier writes into
//   every output folder; an existing file is always refused, and so are the current folder and the
//   folders that contain it;
// - results are written into a hidden temporary folder beside --out (.NAME.kvtier-tmp-PID-XXXXXX) and
//   renamed into place only when every file was written; replacing an earlier folder renames it aside
//   first, so a crash never leaves neither the old folder nor the new one;
// - a failed or interrupted run removes the temporary folder and whatever parent folders it created.
#pragma once

#include <filesystem>
#include <string>

namespace kvtier {

inline constexpr const char* kOutputMarker = ".kvtier-output";

// The resolved destination (absolute, symlinks resolved, no trailing slash) and what is there now.
struct OutputTarget {
  std::string requested;        // as the user gave it, for messages
  std::filesystem::path path;
  bool replaces_earlier = false;  // an earlier kvtier folder is there and --force was given
};

// Applies the contract above; throws ConfigError naming `requested` when it is refused.
OutputTarget check_output_target(const std::string& requested, bool force);

// The temporary folder a run writes into, removed on destruction unless committed.
class StagingFolder {
 public:
  // Creates missing parents and the temporary folder, with the marker in it.
  explicit StagingFolder(OutputTarget target);
  ~StagingFolder();
  StagingFolder(const StagingFolder&) = delete;
  StagingFolder& operator=(const StagingFolder&) = delete;

  const std::filesystem::path& path() const { return staging_; }
  // `message` with the temporary folder's path replaced by the destination's, so that errors name the
  // files as the user will look for them.
  std::string describe(const std::string& message) const;
  // Moves the temporary folder into place (replacing an earlier kvtier folder when the target says so).
  void commit();

 private:
  void remove_created_parents() const;

  OutputTarget target_;
  std::filesystem::path first_created_parent_;  // empty when every parent existed
  std::filesystem::path staging_;
  bool committed_ = false;
};

}  // namespace kvtier
