#pragma once
/// The subcommand table: each src/cli/<name>.cpp adds one row with a static Registrar.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include "settings/settings.h"
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
