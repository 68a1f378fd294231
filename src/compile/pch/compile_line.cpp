/// The compile line a host wrapper hands over (compile/pch/pch.h): its parts, whether it may use a
/// precompiled header, the arguments the header is made with and keyed by, and the project's own
/// macros left out of them.
#include <algorithm>

#include "compile/pch/detail.h"
#include "compile/pch/pch.h"
#include "probe/links.h"

namespace opforge::compile::pch {

namespace {

/// Options whose value is the next argument (gcc's and clang's spelling).
bool takes_value(std::string_view a) {
  static const std::set<std::string_view> k = {"-o",
                                               "-MF",
                                               "-MT",
                                               "-MQ",
                                               "-I",
                                               "-isystem",
                                               "-iquote",
                                               "-idirafter",
                                               "-include",
                                               "-imacros",
                                               "-x",
                                               "-D",
                                               "-U",
                                               "-L",
                                               "-l",
                                               "-Xlinker",
                                               "-Xpreprocessor",
                                               "-Xassembler",
                                               "-iprefix",
                                               "-iwithprefix",
                                               "-isysroot",
                                               "-aux-info",
                                               "-arch",
                                               "--param",
                                               "-include-pch",
                                               "-Xclang",
                                               "-target",
                                               "-z"};
  return k.contains(a);
}

}  // namespace

bool is_cxx_source(std::string_view name) {
  for (std::string_view s : {".cpp", ".cc", ".cxx", ".c++", ".cp", ".CPP", ".C"})
    if (name.size() > s.size() && name.ends_with(s)) return true;
  return false;
}

CompileLine parse(const std::vector<std::string>& args) {
  CompileLine c;
  c.args = args;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::string next = i + 1 < args.size() ? args[i + 1] : std::string();
    if (takes_value(a)) {
      if (a == "-o") c.output = next;
      else if (a == "-MF") c.depfile = next;
      else if (a == "-I" || a == "-isystem" || a == "-iquote" || a == "-idirafter") c.include_dirs.push_back(next);
      else if (a == "-x") c.language.push_back(next);
      else if (a == "-include" || a == "-imacros" || a == "-include-pch") c.other_mode = true;
      ++i;
      continue;
    }
    if (a == "-c") c.compile = true;
    else if (a == "-MD") c.deps = CompileLine::Deps::all;
    else if (a == "-MMD") c.deps = CompileLine::Deps::user;
    else if (a == "-E" || a == "-S" || a == "-M" || a == "-MM" || a == "-fsyntax-only" ||
             a.starts_with("-save-temps") || a == "-fpch-preprocess" || a == "-")
      c.other_mode = true;
    else if (a.starts_with("-I")) c.include_dirs.push_back(a.substr(2));
    else if (a.starts_with("-x")) c.language.push_back(a.substr(2));
    else if (a.starts_with("-o") && a.size() > 2) c.output = a.substr(2);
    else if (!a.starts_with("-")) c.sources.push_back(a);
  }
  return c;
}

std::string not_eligible(const CompileLine& c) {
  if (!c.compile) return "not a compile (-c)";
  if (c.other_mode) return "a preprocess, assembly or forced-include command line";
  if (c.sources.size() != 1) return "not one source file";
  for (const auto& l : c.language)
    if (l != "c++") return "not C++ (-x " + l + ")";
  if (c.language.empty() && !is_cxx_source(c.sources[0])) return "not a C++ source";
  if (c.deps != CompileLine::Deps::none && c.depfile.empty()) return "-MD without -MF";
  return {};
}

std::vector<std::string> header_args(const CompileLine& c, const fs::path& tree) {
  std::vector<std::string> out;
  const auto& a = c.args;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const std::string& x = a[i];
    const std::string next = i + 1 < a.size() ? a[i + 1] : std::string();
    if (x == "-o" || x == "-MF" || x == "-MT" || x == "-MQ" || x == "-L" || x == "-l" || x == "-Xlinker") {
      ++i;
      continue;
    }
    if (x == "-I" || x == "-isystem" || x == "-iquote" || x == "-idirafter") {
      if (!(probe::is_within(next, tree) || (!tree.empty() && fs::path(next).is_relative()))) {
        out.push_back(x);
        out.push_back(next);
      }
      ++i;
      continue;
    }
    if (x.starts_with("-I") &&
        (probe::is_within(x.substr(2), tree) || (!tree.empty() && fs::path(x.substr(2)).is_relative())))
      continue;
    if (x == "-D" && next.starts_with("TORCH_EXTENSION_NAME=")) {
      ++i;
      continue;
    }
    if (takes_value(x)) {
      out.push_back(x);
      out.push_back(next);
      ++i;
      continue;
    }
    if (x == "-c" || x == "-MD" || x == "-MMD" || x == "-MP" || x == "-shared" ||
        x.starts_with("-DTORCH_EXTENSION_NAME=") || x.starts_with("-l") || x.starts_with("-L") ||
        x.starts_with("-Wl,") || x.starts_with("-g") || (x.starts_with("-W") && !x.starts_with("-Wp,")) ||
        (x.starts_with("-o") && x.size() > 2))
      continue;
    if (!x.starts_with("-") && std::find(c.sources.begin(), c.sources.end(), x) != c.sources.end()) continue;
    out.push_back(x);
  }
  return out;
}

bool read_by_headers(std::string_view macro) {
  if (macro.empty() || macro[0] == '_' || macro == "NDEBUG") return true;
  // Prefixes of the macros torch/extension.h and what it includes read (torch, c10, ATen, caffe2,
  // pybind11, Python, CUDA and its libraries, the C++ libraries torch bundles), by their headers.
  for (std::string_view p :
       {"TORCH_", "C10_",     "AT_",    "CAFFE2_", "PYBIND11_", "Py",    "USE_",    "CUDA",   "CU",
        "NV",     "THRUST_",  "HIP",    "ROCM",    "FMT_",      "GLOG_", "GFLAGS_", "EIGEN_", "OMP_",
        "ONNX_",  "CPUINFO_", "SLEEF_", "STRICT_", "BUILD_",    "NO_",   "WITH_",   "HAS_",   "ENABLE_"})
    if (macro.starts_with(p)) return true;
  return false;
}

std::vector<std::string> without_project_macros(const std::vector<std::string>& args,
                                                const std::set<std::string>& consulted) {
  auto keep = [&](std::string_view def) {
    const std::string name = macro_name(def);
    return read_by_headers(name) || consulted.contains(name);
  };
  std::vector<std::string> out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if ((a == "-D" || a == "-U") && i + 1 < args.size()) {
      if (keep(args[i + 1])) {
        out.push_back(a);
        out.push_back(args[i + 1]);
      }
      ++i;
      continue;
    }
    if ((a.starts_with("-D") || a.starts_with("-U")) && a.size() > 2 && !keep(std::string_view(a).substr(2))) continue;
    out.push_back(a);
  }
  return out;
}

std::string macro_in_reason(std::string_view reason) {
  const auto open = reason.find("because `");
  if (open == std::string_view::npos) return {};
  const auto start = open + 9, end = reason.find('\'', start);
  if (end == std::string_view::npos) return {};
  const std::string name(reason.substr(start, end - start));
  return !name.empty() && macro_name(name) == name ? name : std::string();
}

/// The value of the compile's -DTORCH_EXTENSION_NAME ("" without one).
std::string extension_name(const CompileLine& c) {
  constexpr std::string_view define = "TORCH_EXTENSION_NAME=";
  for (std::size_t i = 0; i < c.args.size(); ++i) {
    std::string_view a = c.args[i];
    if (a == "-D" && i + 1 < c.args.size()) a = c.args[++i];
    else if (a.starts_with("-D")) a.remove_prefix(2);
    else continue;
    if (a.starts_with(define)) return std::string(a.substr(define.size()));
  }
  return {};
}

}  // namespace opforge::compile::pch
