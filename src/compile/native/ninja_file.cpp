/// build.ninja (compile/native/ninja_file.h): the checks that every string of the graph can be written into
/// it (and through nvcc's shell), its escaping and its text.
#include "compile/native/ninja_file.h"

#include "util/strings.h"

namespace opforge::compile {
namespace {

namespace fs = std::filesystem;

/// A path on a build line of build.ninja: '$', ' ' and ':' are escaped with '$'.
std::string ninja_escape_path(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '$' || c == ' ' || c == ':') out += '$';
    out += c;
  }
  return out;
}

std::string ninja_escape_value(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

/// A string build.ninja cannot hold: ninja has no escape for a line break (and '\0' ends the
/// text), nor for '|' in a path. The manifest refuses these with file:line:col; this check covers
/// every other source of a string (recipe paths, toolkit and compiler paths, flags).
Status check_ninja_string(std::string_view s, bool path) {
  for (char c : s)
    if (c == '\n' || c == '\r' || c == '\0' || (path && c == '|'))
      return bad_input("cannot write build.ninja: '" + strings::cut(s) + "' contains " +
                           (c == '|' ? std::string("'|'") : std::string("a line break or NUL")),
                       "rename the path or remove the character from the flag");
  return {};
}

/// nvcc runs its own steps through /bin/sh inside double quotes, where '$' and '`' still
/// expand: a path with "$x" loses it, and a flag "-DX=`cmd`" runs cmd (CUDA 13.0's nvcc, tried).
/// No argument of an nvcc step may hold either.
Status check_nvcc_argument(std::string_view a) {
  auto at = a.find_first_of("$`");
  if (at == std::string_view::npos) return {};
  return bad_input(
      "cannot compile with nvcc: the argument '" + strings::cut(a) + "' contains '" + std::string(1, a[at]) +
          "', which nvcc's own shell would expand (or run)",
      "move the source tree or the build folder to a path without '$' and '`', or remove it from the flag");
}

Status check_graph(const Graph& graph, const fs::path& build) {
  for (auto& step : graph.steps) {
    for (auto& a : step.argv) OPFORGE_CHECK(check_ninja_string(a, false));
    if (step.rule == "nvcc")
      for (auto& a : step.argv) OPFORGE_CHECK(check_nvcc_argument(a));
    OPFORGE_CHECK(check_ninja_string(step.description, false));
    OPFORGE_CHECK(check_ninja_string(step.output.string(), true));
    OPFORGE_CHECK(check_ninja_string(step.depfile, true));
    for (auto& in : step.inputs) OPFORGE_CHECK(check_ninja_string(in.string(), true));
    auto rel = step.output.lexically_normal().lexically_relative(build.lexically_normal());
    if (rel.empty() || *rel.begin() == "..")
      return failure("internal: output '" + step.output.string() + "' is outside the build folder");
  }
  return {};
}

}  // namespace

Status check_for_ninja(const Graph& graph, const fs::path& build) {
  OPFORGE_CHECK(check_ninja_string(build.string(), true));
  return check_graph(graph, build);
}

std::string render_ninja(const Graph& graph, const fs::path& build_dir) {
  std::string out = "# Written by opforge: do not edit.\nninja_required_version = 1.10\nbuilddir = " +
                    ninja_escape_path(build_dir.string()) + "\n\n";
  if (graph.nvcc_pool_depth > 0) out += "pool nvcc\n  depth = " + std::to_string(graph.nvcc_pool_depth) + "\n\n";
  for (std::string rule : {"cc", "cxx", "nvcc"})
    out += "rule " + rule + "\n  command = $cmd\n  depfile = $dep\n  deps = gcc\n  description = $desc\n" +
           (rule == "nvcc" && graph.nvcc_pool_depth > 0 ? "  pool = nvcc\n" : "") + "\n";
  for (auto rule : {"link", "strip"})
    out += std::string("rule ") + rule + "\n  command = $cmd\n  description = $desc\n\n";
  for (auto& step : graph.steps) {
    out += "build " + ninja_escape_path(step.output.string()) + ": " + step.rule;
    for (auto& in : step.inputs) out += " " + ninja_escape_path(in.string());
    out += "\n  cmd = " + ninja_escape_value(strings::shell_join(step.argv)) + "\n";
    out += "  desc = " + ninja_escape_value(step.description) + "\n";
    if (!step.depfile.empty()) out += "  dep = " + ninja_escape_path(step.depfile) + "\n";
  }
  out += "\ndefault";
  for (auto& o : graph.outputs) {
    out += " " + ninja_escape_path(o.library.string());
    if (!o.extension.empty()) out += " " + ninja_escape_path(o.extension.string());
  }
  out += "\n";
  return out;
}

}  // namespace opforge::compile
