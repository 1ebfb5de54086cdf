// Model cards, hardware files and scenarios compiled into the binary (see cmake/embed_files.cmake),
// so that `kvtier simulate` runs its default scenario and `--model llama-3.1-70b` resolves without the
// source tree. A path that exists on disk always wins over an embedded name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/core/config.h"

namespace kvtier {

struct EmbeddedFile {
  std::string_view path;  // relative to the source root: "models/llama-3.1-70b.yaml"
  std::string_view text;
};

// Defined by the application-support part (sim/app, the generated kvtier_embedded objects), which every
// executable that resolves built-in names links; a library that calls load_config() needs nothing more.
const std::vector<EmbeddedFile>& embedded_files();

// Loads `name_or_path`: a file on disk, else the embedded `<folder>/<name>.yaml`. Throws ConfigError for
// a directory that is not an embedded name, and listing the embedded names of that folder when neither
// exists. In the "models" folder, a file ending in .json is a Hugging Face config.json
// (sim/core/hf_config.h), returned as the model card it maps to, so that every reader of model cards accepts
// one. While a SchemaRecordingScope records `folder`, the document is recorded for its schema, and the
// folder's coverage documents are found by name too (config_schema.h).
ConfigNode load_config(const std::string& name_or_path, const std::string& folder);

// Names (file stems) of the embedded files under `folder`.
std::vector<std::string> embedded_names(const std::string& folder);

}  // namespace kvtier
