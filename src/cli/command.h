#pragma once
/// The subcommand table: each src/cli/<name>.cpp adds one row with a static Registrar.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "util/error.h"

namespace opforge::cli {

/// Runs a parsed subcommand; printing is the subcommand's job, errors are main's.
using Runner = std::function<Status()>;

struct Registration {
  std::string name;
  std::string description;
  /// Declares the subcommand's flags on `app` and returns what runs it.
  std::function<Runner(CLI::App& app)> setup;
};

std::vector<Registration>& registry();

struct Registrar {
  explicit Registrar(Registration r) { registry().push_back(std::move(r)); }
};

}  // namespace opforge::cli
