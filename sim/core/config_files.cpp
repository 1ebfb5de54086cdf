#include "sim/core/config_files.h"

#include <filesystem>

#include "sim/core/config_schema.h"
#include "sim/core/hf_config.h"
#include "sim/core/model_card.h"

namespace kvtier {

std::vector<std::string> embedded_names(const std::string& folder) {
  std::vector<std::string> names;
  std::string prefix = folder + "/";
  for (const EmbeddedFile& f : embedded_files()) {
    std::string_view rest = f.path;
    if (!rest.starts_with(prefix) || !rest.ends_with(".yaml")) continue;
    rest.remove_prefix(prefix.size());
    if (rest.find('/') != std::string_view::npos) continue;
    names.emplace_back(rest.substr(0, rest.size() - 5));
  }
  return names;
}

namespace {

// `name` in `folder` among the embedded files.
std::optional<ConfigNode> embedded_config(const std::string& name, const std::string& folder) {
  std::string wanted = folder + "/" + name + ".yaml";
  for (const EmbeddedFile& f : embedded_files()) {
    if (f.path == wanted) return ConfigNode::load_string(std::string(f.text), wanted + " (built in)");
  }
  return std::nullopt;
}

ConfigNode find_config(const std::string& name_or_path, const std::string& folder,
                       const SchemaFolder* recording) {
  std::error_code ignored;  // a name too long for a path, say: then it is no file on disk
  const bool on_disk = std::filesystem::is_regular_file(name_or_path, ignored);
  if (on_disk && folder == "models" && name_or_path.ends_with(".json")) {
    return ConfigNode::load_string(model_card_yaml(load_hf_config(name_or_path)),
                                   name_or_path + " (read as a model card)");
  }
  if (on_disk) return ConfigNode::load_file(name_or_path);
  if (auto found = embedded_config(name_or_path, folder)) return *found;
  if (recording) {
    if (auto found = embedded_config(name_or_path, recording->coverage_folder)) return *found;
  }
  if (std::filesystem::is_directory(name_or_path, ignored)) {
    throw ConfigError(name_or_path + ": is a directory, expected a YAML file");
  }
  std::vector<std::string> names = embedded_names(folder);
  std::string message = name_or_path + ": no such file, and no built-in " + folder + " entry of that name";
  std::string hint = closest_match(name_or_path, names);
  if (!hint.empty()) message += " (did you mean '" + hint + "'?)";
  message += "; built in:";
  for (const std::string& n : names) message += " " + n;
  throw ConfigError(message);
}

}  // namespace

ConfigNode load_config(const std::string& name_or_path, const std::string& folder) {
  auto [recorder, recording] = SchemaRecordingScope::recording(folder);
  ConfigNode root = find_config(name_or_path, folder, recording);
  if (recorder) {
    if (recording->prepare) recording->prepare(root);
    recorder->record(root, recording->kind);
  }
  return root;
}

}  // namespace kvtier
