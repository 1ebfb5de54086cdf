// `kvtier schema`: the JSON Schema of each kind of YAML file kvtier reads, recorded from the file's reader
// (sim/engine/file_schemas.h), for editors to complete and check the files (docs/config-reference.md).
#include <filesystem>
#include <iostream>

#include "sim/cli/commands.h"
#include "sim/core/checked_file.h"
#include "sim/core/cli_help.h"
#include "sim/core/config.h"
#include "sim/engine/file_schemas.h"

namespace kvtier {
namespace {

struct SchemaOptions {
  std::string kind;  // empty: every kind (with --out)
  std::string out;
};

void run_schema(const SchemaOptions& options) {
  if (options.kind.empty() && options.out.empty()) {
    throw ConfigError("schema: give a kind of file (" + [] {
      std::string kinds;
      for (const std::string& kind : file_schema_kinds()) kinds += (kinds.empty() ? "" : ", ") + kind;
      return kinds;
    }() + ") or --out DIR for all of them");
  }
  for (const FileSchema& schema : file_schemas()) {
    if (!options.kind.empty() && schema.kind != options.kind) continue;
    for (const std::string& key : schema.unread_keys) {
      std::cerr << "kvtier schema: " << schema.kind << ": " << key
                << ": no document reads it, so the schema does not say its type; add one that does to "
                   "configs/schema/coverage/"
                << schema.kind << "\n";
    }
    std::string text = schema.schema.dump(2) + "\n";
    if (options.out.empty()) {
      std::cout << text;
      continue;
    }
    create_checked_folder(options.out);
    // A failed write leaves the earlier schema whole.
    replace_checked_file(std::filesystem::path(options.out) / (schema.kind + ".schema.json"), text);
  }
}

void add_schema_command(CLI::App& app) {
  auto options = std::make_shared<SchemaOptions>();
  CLI::App* command = app.add_subcommand(
      "schema", "Print the JSON Schema of a kind of YAML file, for editors (recorded from kvtier's readers)");
  command->add_option("kind", options->kind, "The kind of file (with --out alone: every kind)")
      ->check(CLI::IsMember(file_schema_kinds()))
      ->type_name(choices_label(file_schema_kinds()));
  command->add_option("--out", options->out, "Write <kind>.schema.json into this folder instead of printing")
      ->type_name("DIR");
  command->callback([options] { run_schema(*options); });
}

const CommandRegistration registration(90, add_schema_command);

}  // namespace
}  // namespace kvtier
