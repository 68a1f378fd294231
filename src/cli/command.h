#pragma once
/// The subcommand table: each src/cli/<name>.cpp adds one row with a static Registrar; the hidden
/// rows, what opforge's own wrapper scripts run, are in cli/hidden.cpp. main() dispatches every row.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "settings/settings.h"
#include "util/error.h"

namespace opforge::cli {

/// Runs a parsed subcommand; printing is the subcommand's job, errors are main's.
using Runner = std::function<Status()>;

/// Runs a hidden row with the arguments after its name, unparsed; returns the exit status.
using HiddenRunner = std::function<int(const std::vector<std::string>& args)>;

struct Registration {
  std::string name;
  std::string description;
  /// Declares the subcommand's flags on `app` and returns what runs it.
  std::function<Runner(CLI::App& app)> setup{};
  /// Set on a hidden row instead of `setup`: a command opforge's own wrapper scripts run, not one for
  /// people. Left out of help and of "did you mean"; its arguments (a compiler's) pass unparsed.
  HiddenRunner hidden{};
};

std::vector<Registration>& registry();

struct Registrar {
  explicit Registrar(Registration r) { registry().push_back(std::move(r)); }
};

/// `-j N` for every subcommand that takes it: 1..settings::kMaxJobs, refused otherwise (exit 2)
/// by the same rule (settings::parse_jobs_flag).
inline CLI::Option* add_jobs_option(CLI::App& app, unsigned& jobs, const std::string& description) {
  return app.add_option("-j,--jobs", jobs, description)
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            auto n = settings::parse_jobs_flag(text);
            return n ? std::string() : n.error().message;
          },
          "1.." + std::to_string(settings::kMaxJobs), "jobs"));
}

}  // namespace opforge::cli
