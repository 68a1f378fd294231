// `opforge cache` lists what the cache folder holds (kind, size, last use, user);
// `opforge cache prune [--older-than D] [--max-size S]` removes the least recently used entries.
#include <chrono>
#include <ctime>
#include <iostream>

#include <nlohmann/json.hpp>

#include "cache/cache.h"
#include "cli/command.h"
#include "settings/settings.h"
#include "util/json.h"
#include "util/strings.h"

namespace opforge::cli {
namespace {

std::string when(std::int64_t ns) {
  if (ns <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(ns / 1000000000);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", std::gmtime(&t));
  return buf;
}

nlohmann::json entry_json(const cache::Entry& e) {
  return {{"kind", e.kind}, {"path", e.path.string()}, {"bytes", e.bytes}, {"last_use", when(e.last_use_ns)},
          {"user", e.user}, {"in_use", e.in_use}};
}

void print_entries(const std::vector<cache::Entry>& entries) {
  for (auto& e : entries) {
    std::string kind = e.kind;
    kind.resize(8, ' ');
    std::string size = strings::human_size(e.bytes);
    size.resize(10, ' ');
    std::cout << kind << size << when(e.last_use_ns) << "  " << e.path.string() << (e.in_use ? "  [in use]" : "")
              << "\n        " << e.user << "\n";
  }
}

Registrar cache_command{{
    "cache",
    "list what opforge's cache holds (toolkits, matrix environments, scratch trees); `cache prune` trims it",
    [](CLI::App& app) -> Runner {
      struct Args {
        bool json = false;
        std::string older_than, max_size;
      };
      auto args = std::make_shared<Args>();
      app.add_flag("--json", args->json, "print JSON");
      CLI::App* prune = app.add_subcommand("prune", "remove entries, least recently used first (never one in use)");
      prune->add_option("--older-than", args->older_than, "remove entries last used longer ago (30d, 12h, 90m)");
      prune->add_option("--max-size", args->max_size, "then remove the oldest until the entries fit (20G, 500M)");
      prune->add_flag("--json", args->json, "print JSON");
      return [args, prune]() -> Status {
        auto m = probe::real_machine();
        OPFORGE_CHECK(probe::check_cache_dir(m.fs, m.env));
        const auto dir = settings::cache_dir(m.env);
        if (dir.empty()) return unsatisfied("no cache folder", "set OPFORGE_CACHE_DIR (or HOME)");
        if (!prune->parsed()) {
          auto entries = cache::list(m.fs, dir, cache::Sizes::measure_missing);
          const std::uint64_t total = cache::totals(entries).bytes;
          if (args->json) {
            nlohmann::json j = {{"cache", dir.string()}, {"bytes", total}, {"entries", nlohmann::json::array()}};
            for (auto& e : entries) j["entries"].push_back(entry_json(e));
            std::cout << util::json_dump(j, 2) << "\n";
            return {};
          }
          std::cout << "cache: " << dir.string() << " (entries: " << strings::human_size(total) << ")\n";
          print_entries(entries);
          return {};
        }
        cache::PruneOptions opts;
        if (!args->older_than.empty()) opts.older_than = OPFORGE_TRY(cache::parse_age(args->older_than));
        if (!args->max_size.empty()) opts.max_bytes = OPFORGE_TRY(cache::parse_size(args->max_size));
        opts.now_ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        auto report = OPFORGE_TRY(cache::prune(m.fs, dir, opts));
        if (args->json) {
          nlohmann::json j = {{"bytes_before", report.bytes_before},
                              {"bytes_after", report.bytes_after},
                              {"removed", nlohmann::json::array()},
                              {"kept_in_use", nlohmann::json::array()}};
          for (auto& e : report.removed) j["removed"].push_back(entry_json(e));
          for (auto& e : report.kept_in_use) j["kept_in_use"].push_back(entry_json(e));
          std::cout << util::json_dump(j, 2) << "\n";
          return {};
        }
        for (auto& e : report.removed)
          std::cout << "removed  " << e.kind << " " << e.path.string() << " (" << strings::human_size(e.bytes) << ")\n";
        for (auto& e : report.kept_in_use)
          std::cout << "kept     " << e.kind << " " << e.path.string() << " (in use by a running build)\n";
        std::cout << "cache: " << strings::human_size(report.bytes_before) << " -> "
                  << strings::human_size(report.bytes_after) << "\n";
        return {};
      };
    },
}};

}  // namespace
}  // namespace opforge::cli
