#include "project/build_files.h"

#include <algorithm>
#include <regex>
#include <set>

#include "util/strings.h"

namespace opforge::project {

namespace fs = std::filesystem;

namespace {

/// Variables a CUDA build reads for reasons other than switching CUDA on: where the toolkit is,
/// which GPUs, which architectures, which flags.
bool names_a_location_or_list(const std::string& upper) {
  for (const char* part : {"HOME", "PATH", "ROOT", "DIR", "ARCH", "VERSION", "FLAGS", "VISIBLE", "CXX", "CC_",
                           "COMPILER", "LIB", "INCLUDE", "_CAPABILIT"})
    if (upper.find(part) != std::string::npos) return true;
  return upper == "CUDACXX" || upper == "CUDAHOSTCXX" || upper == "CUDAARCHS";
}

bool is_switch_name(const std::string& name) {
  const std::string upper = strings::to_upper(name);
  if (upper.find("CUDA") == std::string::npos && upper.find("GPU") == std::string::npos) return false;
  return !names_a_location_or_list(upper);
}

bool turns_cuda_off(const std::string& name) {
  const std::string upper = strings::to_upper(name);
  return upper.find("SKIP") != std::string::npos || upper.find("DISABLE") != std::string::npos ||
         upper.starts_with("NO_") || upper.find("_NO_") != std::string::npos ||
         upper.find("CPU_ONLY") != std::string::npos;
}

bool is_cmake_file(std::string_view file) {
  const std::string name = fs::path(file).filename().string();
  return name == "CMakeLists.txt" || name.ends_with(".cmake");
}

}  // namespace

std::vector<Switch> find_switches(std::string_view file, std::string_view text) {
  static const std::regex python(
      R"re((?:environ\.get|getenv|environ\.setdefault)\(\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]|environ\[\s*['"]([A-Za-z_][A-Za-z0-9_]*)['"]\s*\]|['"]([A-Za-z_][A-Za-z0-9_]*)['"]\s+(?:not\s+)?in\s+os\.environ)re");
  static const std::regex cmake_env(R"re(\$ENV\{([A-Za-z_][A-Za-z0-9_]*)\})re");
  static const std::regex cmake_option(R"re(^\s*option\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\b)re", std::regex::icase);
  const bool cmake = is_cmake_file(file);
  std::vector<Switch> out;
  std::set<std::string> seen;
  int number = 0;
  for (const auto& raw : strings::split(text, '\n')) {
    ++number;
    const std::string line(raw);
    auto add = [&](const std::string& name, bool option) {
      if (name.empty() || !is_switch_name(name) || !seen.insert(name).second) return;
      out.push_back(
          {name, std::string(file), number, strings::cut(strings::trim(line), 120), turns_cuda_off(name), option});
    };
    const std::regex& env = cmake ? cmake_env : python;
    for (std::sregex_iterator it(line.begin(), line.end(), env), end; it != end; ++it)
      for (std::size_t g = 1; g < it->size(); ++g)
        if ((*it)[g].matched) add((*it)[g].str(), false);
    if (cmake)
      if (std::smatch m; std::regex_search(line, m, cmake_option)) add(m[1].str(), true);
  }
  return out;
}

namespace {

bool skipped_folder(const std::string& name) {
  return name.starts_with(".") || name == "build" || name == "dist" || name == "__pycache__" || name == "node_modules";
}

void count_cuda_sources(const probe::FileSystem& fs, const fs::path& root, const fs::path& rel, BuildFiles& out,
                        std::size_t& walked) {
  auto names = fs.list_directory(root / rel);
  if (!names) return;
  std::sort(names->begin(), names->end());
  for (const auto& name : *names) {
    if (++walked > kWalkEntries) {
      out.walk_cut = true;
      return;
    }
    const fs::path child = rel / name;
    const auto type = fs.type_of(root / child);
    if (type == probe::FileType::directory) {
      if (!skipped_folder(name)) count_cuda_sources(fs, root, child, out, walked);
    } else if (type == probe::FileType::regular && (name.ends_with(".cu") || name.ends_with(".cuh"))) {
      ++out.cuda_sources;
      if (out.cuda_source_sample.size() < 3) out.cuda_source_sample.push_back(child.generic_string());
    }
    if (out.walk_cut) return;
  }
}

}  // namespace

BuildFiles read_build_files(const probe::FileSystem& fs, const fs::path& root) {
  BuildFiles out;
  // A build file larger than this is not one a person wrote; the switches are near the top anyway.
  constexpr std::uint64_t kMaxBuildFile = 4 << 20;
  for (const char* file : {"setup.py", "CMakeLists.txt", "pyproject.toml"})
    if (auto text = fs.read_file(root / file, kMaxBuildFile)) {
      // pyproject.toml: scikit-build-core's [tool.scikit-build.cmake.define] names CMake options
      // as keys, which the CMakeLists.txt declares; only its environment reads count here.
      for (auto& s : find_switches(file, *text))
        if (std::none_of(out.switches.begin(), out.switches.end(), [&](const Switch& o) { return o.name == s.name; }))
          out.switches.push_back(std::move(s));
    }
  std::size_t walked = 0;
  count_cuda_sources(fs, root, {}, out, walked);
  return out;
}

std::string switch_hint(const std::vector<Switch>& switches, const std::map<std::string, std::string>& env) {
  std::vector<std::string> lines;
  const auto cmake_args = env.contains("CMAKE_ARGS") ? env.at("CMAKE_ARGS") : std::string();
  for (const auto& s : switches) {
    const std::string where = s.file + ":" + std::to_string(s.line) + " (" + s.text + ")";
    const auto set = env.find(s.name);
    if (s.cmake_option) {
      const bool given = cmake_args.find("-D" + s.name + "=") != std::string::npos ||
                         cmake_args.find("-D" + s.name + ":") != std::string::npos;
      lines.push_back("CMake option " + s.name + ", " + where + ": " +
                      (given ? std::string("given in CMAKE_ARGS (") + cmake_args + ")"
                             : "[build.env] CMAKE_ARGS = \"-D" + s.name + "=ON\""));
    } else if (s.turns_off) {
      lines.push_back(s.name + ", " + where + ": " +
                      (set != env.end() ? "set to \"" + set->second + "\" for this build: remove it"
                                        : std::string("not set (it turns CUDA off when set)")));
    } else {
      lines.push_back(
          s.name + ", " + where + ": " +
          (set != env.end() ? "set to \"" + set->second + "\" for this build" : "[build.env] " + s.name + " = \"1\""));
    }
  }
  if (lines.empty()) return "";
  return "the project's build files read " + std::string(lines.size() == 1 ? "this switch" : "these switches") +
         " (projects like this compile CUDA only when told to, or when they see a GPU):\n    " +
         strings::join(lines, "\n    ");
}

}  // namespace opforge::project
