#include "sim/cli/staged_output.h"

#include <stdexcept>

#include "sim/core/config.h"
#include "sim/engine/isolated_run.h"

namespace kvtier {

void write_staged(const OutputTarget& target, const std::function<void(const std::filesystem::path&)>& write) {
  StagingFolder staging(target);
  try {
    write(staging.path());
  } catch (const Interrupted&) {
    throw;
  } catch (const ConfigError& e) {
    throw ConfigError(staging.describe(e.what()));
  } catch (const std::exception& e) {
    throw std::runtime_error(staging.describe(e.what()));
  }
  throw_if_interrupted();
  staging.commit();
}

}  // namespace kvtier
