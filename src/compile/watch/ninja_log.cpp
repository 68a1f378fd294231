#include "compile/watch/ninja_log.h"

#include "util/numbers.h"
#include "util/strings.h"

namespace opforge::compile {

namespace fs = std::filesystem;

std::map<std::string, NinjaStep> parse_ninja_log(std::string_view text) {
  std::map<std::string, NinjaStep> out;
  for (auto& line : strings::split(text, '\n')) {
    if (line.empty() || line.front() == '#') continue;
    auto f = strings::split(line, '\t');
    if (f.size() < 5) continue;  // a line cut short by a kill: ninja ignores it too
    auto start = numbers::parse_int<long long>(f[0]);
    auto end = numbers::parse_int<long long>(f[1]);
    if (!start || !end) continue;
    out[f[3]] = {static_cast<int>(*start), static_cast<int>(*end), line};
  }
  return out;
}

namespace {

void walk(const probe::FileSystem& fs, const fs::path& tree, const fs::path& rel, int depth, NinjaLogs& out) {
  if (depth > 16) return;
  auto names = fs.list_directory(rel.empty() ? tree : tree / rel);
  if (!names) return;
  for (auto& n : *names) {
    const fs::path r = rel.empty() ? fs::path(n) : rel / n;
    const auto type = fs.type_of(tree / r);
    if (type == probe::FileType::directory) walk(fs, tree, r, depth + 1, out);
    else if (n == ".ninja_log" && type == probe::FileType::regular)
      if (auto text = fs.read_file(tree / r)) {
        // Outputs as paths in the tree: torch's build.ninja names them absolute.
        auto& steps = out[r.string()];
        for (auto& [output, step] : parse_ninja_log(*text)) {
          const fs::path o(output);
          const fs::path in_tree = o.is_absolute() ? o.lexically_relative(tree) : (rel / o).lexically_normal();
          steps[in_tree.empty() || *in_tree.begin() == ".." ? output : in_tree.string()] = step;
        }
      }
  }
}

}  // namespace

NinjaLogs read_ninja_logs(const probe::FileSystem& fs, const fs::path& tree) {
  NinjaLogs out;
  walk(fs, tree, {}, 0, out);
  return out;
}

StepReuse compare_ninja_logs(const NinjaLogs& before, const NinjaLogs& after) {
  StepReuse out;
  for (auto& [log, steps] : after) {
    const auto was = before.find(log);
    for (auto& [output, step] : steps) {
      if (was != before.end()) {
        auto it = was->second.find(output);
        if (it != was->second.end() && it->second.line == step.line) {
          ++out.reused;
          continue;
        }
      }
      ++out.compiled;
      out.times.emplace_back(output, (step.end_ms - step.start_ms) / 1000.0);
    }
  }
  return out;
}

}  // namespace opforge::compile
