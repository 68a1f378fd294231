#include <algorithm>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string_view>

#include "cli/command.h"
#include "opforge/version.h"
#include "probe/overlay_environment.h"
#include "settings/settings.h"
#include "util/strings.h"

namespace opforge::cli {
std::vector<Registration>& registry() {
  static std::vector<Registration> table;
  return table;
}
}  // namespace opforge::cli

namespace {

/// The last resort: errors are values, so an exception reaching here is a bug in opforge. It gets
/// one line and exit 1 instead of abort()'s core dump and exit 134; its cause is to be fixed.
[[noreturn]] void internal_error(const char* what) {
  std::cerr << "opforge: internal error: " << opforge::strings::cut(what) << "\n"
            << "  hint: this is a bug in opforge; please report it with the command line\n";
  std::_Exit(1);
}

/// Exceptions thrown where nothing can catch them (a destructor, a noexcept function, a thread).
[[noreturn]] void on_terminate() {
  if (auto e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      internal_error(x.what());
    } catch (...) {}
  }
  internal_error("std::terminate was called");
}

int run_main(int argc, char** argv) {
  using namespace opforge;
  // opforge's secrets (the scheduler's token) reach no child that takes the environment implicitly.
  probe::keep_from_children(settings::secret_variables());
  // A hidden row (cli/hidden.cpp) gets its arguments as given, before any parsing: they are a
  // compiler's, not opforge's flags.
  if (argc >= 2)
    for (const auto& row : cli::registry())
      if (row.hidden && row.name == argv[1]) return row.hidden(std::vector<std::string>(argv + 2, argv + argc));
  CLI::App app{"opforge: prebuild CUDA/C++ ops into reproducible binary wheels"};
  app.set_version_flag("--version", std::string("opforge ") + kVersion + " (commit " + kCommit + ")");
  app.require_subcommand(1);

  auto& table = cli::registry();
  std::sort(table.begin(), table.end(), [](auto& a, auto& b) { return a.name < b.name; });
  std::vector<std::pair<CLI::App*, cli::Runner>> runners;
  std::vector<std::string> names;
  for (auto& row : table) {
    if (row.hidden) continue;
    auto* sub = app.add_subcommand(row.name, row.description);
    runners.emplace_back(sub, row.setup(*sub));
    names.push_back(row.name);
  }

  // `opforge help [COMMAND]`, as git and cargo take it.
  if (argc >= 2 && std::string_view(argv[1]) == "help") {
    if (argc >= 3)
      for (auto& [sub, run] : runners)
        if (sub->get_name() == argv[2]) {
          std::cout << sub->help();
          return 0;
        }
    if (argc >= 3) {
      std::cerr << "opforge: error: unknown command '" << argv[2] << "'\n  hint: `opforge help` lists them\n";
      return 2;
    }
    std::cout << app.help();
    return 0;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (argc > 1 && argv[1][0] != '-' && std::find(names.begin(), names.end(), argv[1]) == names.end()) {
      std::string msg = std::string("opforge: error: unknown command '") + argv[1] + "'";
      if (auto guess = strings::did_you_mean(argv[1], names)) msg += "; did you mean '" + *guess + "'?";
      std::cerr << msg << "\n";
      return 2;
    }
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // Every error in one form: "opforge: error: ...", then how to find the usage.
    const bool known = argc > 1 && std::find(names.begin(), names.end(), argv[1]) != names.end();
    std::cerr << "opforge: error: " << e.what() << "\n  hint: `opforge " << (known ? std::string(argv[1]) + " " : "")
              << "--help` shows the usage\n";
    return 2;
  }

  for (auto& [sub, run] : runners) {
    if (!sub->parsed()) continue;
    auto status = run();
    if (!status) {
      std::cerr << "opforge: error: " << status.error().render() << "\n";
      return exit_code(status.error().kind);
    }
    return 0;
  }
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::set_terminate(on_terminate);
  try {
    return run_main(argc, argv);
  } catch (const std::bad_alloc&) {
    internal_error("out of memory");
  } catch (const std::exception& e) {
    internal_error(e.what());
  } catch (...) {
    internal_error("an unknown exception");
  }
}
