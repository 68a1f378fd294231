#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>

#include "probe/machine.h"
#include "recipe/recipe.h"
#include "recipe/toml_reader.h"
#include "target/arch.h"
#include "util/numbers.h"
#include "util/pep440.h"
#include "util/scan.h"
#include "util/strings.h"
#include "util/version.h"

#include "target/platform.h"
#include "target/x86.h"
#include "wheel/wheel.h"

namespace opforge::recipe {
namespace {

const std::vector<std::string> kSections = {"package", "source", "cuda",   "compiler", "arch",
                                            "ops",     "build",  "matrix", "wheel"};

/// Why `url` (http:// or https://) cannot be an sccache-dist scheduler's address; empty when it
/// can. sccache reads it only once a build starts, so "http://[::1" failed there as a scheduler
/// that "does not answer": the URL is checked where the recipe is read.
std::string scheduler_url_problem(std::string_view url) {
  for (char c : url)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7F) return "it holds a space or a control character";
  std::string_view rest = url.substr(url.find("://") + 3);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.find('@') != std::string_view::npos)
    return "it names a user (USER@HOST); the token goes in scheduler_token_file or OPFORGE_SCHEDULER_TOKEN";
  std::string_view host = authority, port;
  bool has_port = false;
  if (authority.starts_with('[')) {
    const auto close = authority.find(']');
    if (close == std::string_view::npos) return "its IPv6 address has no closing ']'";
    host = authority.substr(1, close - 1);
    if (host.find(':') == std::string_view::npos ||
        host.find_first_not_of("0123456789abcdefABCDEF:.") != std::string_view::npos)
      return "'[" + strings::cut(host, 60) + "]' is not an IPv6 address";
    const auto after = authority.substr(close + 1);
    if (!after.empty() && after.front() != ':') return "only ':PORT' may follow the IPv6 address's ']'";
    has_port = !after.empty();
    if (has_port) port = after.substr(1);
  } else {
    const auto colon = authority.find(':');
    host = authority.substr(0, colon);
    has_port = colon != std::string_view::npos;
    if (has_port) port = authority.substr(colon + 1);
    if (host.empty()) return "it names no host";
    if (host.find_first_of("[]") != std::string_view::npos)
      return "an IPv6 address goes in brackets with nothing around them ([::1])";
    auto host_char = [](char c) { return scan::is_alnum(c) || c == '.' || c == '-' || c == '_'; };
    if (!std::ranges::all_of(host, host_char))
      return "host '" + strings::cut(host, 60) + "' holds a character a host name cannot";
  }
  if (has_port) {
    auto p = numbers::parse_int<int>(port);
    if (!p || *p < 1 || *p > 65535) return "port '" + strings::cut(port, 20) + "' is not a number from 1 to 65535";
  }
  return {};
}

/// `[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?`: a distribution name.
/// Names and versions go into the wheel's file name: past 256 characters none is a real one.
bool is_distribution_name(std::string_view s) {
  if (s.size() > 256) return false;
  auto inner = [](char c) { return scan::is_alnum(c) || c == '.' || c == '_' || c == '-'; };
  return !s.empty() && scan::is_alnum(s.front()) && scan::is_alnum(s.back()) && std::ranges::all_of(s, inner);
}

/// `[A-Za-z_][A-Za-z0-9_]*`, at most 256 characters: a name a shell and `env` take.
bool is_variable_name(std::string_view s) {
  if (s.empty() || s.size() > 256 || (s.front() >= '0' && s.front() <= '9')) return false;
  return std::ranges::all_of(s, [](char c) { return scan::is_alnum(c) || c == '_'; });
}

/// For a variable [build.env] may not set: the key or flag that decides it instead.
std::optional<std::string> owned_variable(std::string_view name) {
  static const std::vector<std::pair<std::string_view, std::string_view>> owned = {
      {"TORCH_CUDA_ARCH_LIST", "set [arch] list (or the variable in the environment)"},
      {"CUDA_HOME", "set [cuda] version (or the variable in the environment)"},
      {"CUDA_PATH", "set [cuda] version (or the variable in the environment)"},
      {"MAX_JOBS", "set [build] jobs or pass -j"},
      {"CC", "set [compiler] host"},
      {"CXX", "set [compiler] host"},
      {"PYTORCH_NVCC", "opforge runs the chosen toolkit's nvcc through its own wrapper"},
      {"NVCC_PREPEND_FLAGS", "opforge passes -ccbin through it; set [compiler] host"},
      {"NVCC_APPEND_FLAGS", "opforge passes its reproducibility flags through it"},
      {"CFLAGS", "opforge passes its reproducibility flags through it"},
      {"CXXFLAGS", "opforge passes its reproducibility flags through it"},
      {"LDFLAGS", "opforge passes its reproducibility flags through it"},
      {"SOURCE_DATE_EPOCH", "opforge takes it from the source commit or the environment"},
      {"PYTHONHASHSEED", "opforge fixes it to 0 for reproducible builds"},
      {"PATH", "opforge puts its compiler wrappers first on PATH"},
      {"LD_PRELOAD", "a build switch must not load code into every process"},
      {"LD_LIBRARY_PATH", "a build switch must not change which libraries every process loads"},
      {"CUDAARCHS", "opforge sets it from [arch] list (CMake's spelling)"},
      {"CUDACXX", "opforge points CMake at the chosen toolkit's nvcc; set [cuda] version"},
      {"CUDAHOSTCXX", "opforge sets it to the host compiler; set [compiler] host"},
      {"CUDAToolkit_ROOT", "opforge sets it to the chosen toolkit; set [cuda] version"},
      {"CMAKE_BUILD_PARALLEL_LEVEL", "set [build] jobs or pass -j"},
  };
  for (const auto& [n, why] : owned)
    if (n == name) return std::string(why);
  if (name.starts_with("DS_BUILD_")) return std::string("select ops with [ops] (or the variable in the environment)");
  return std::nullopt;
}

/// Validates an arch list written inside a string value; `column` inside the string on error.
Status check_arch_list(const TomlReader& r, const toml::node& node, const std::string& text, std::string_view key,
                       int offset = 0) {
  auto ok = recipe::check_arch_list(text);
  if (ok) return {};
  Error e = ok.error();
  e.kind = ErrorKind::bad_input;
  e.message = std::string(key) + ": " + e.message;
  e.where = r.inside_string(node, offset + (e.where.column > 0 ? e.where.column : 1));
  return opforge::unexpected(e);
}

/// An sdist given as a URL (source/sdist.h downloads it) rather than a path.
bool is_archive_url(std::string_view spec) { return spec.starts_with("https://") || spec.starts_with("http://"); }

bool is_sha256_hex(std::string_view text) {
  return text.size() == 64 &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isxdigit(c) != 0; });
}

struct Parser {
  const TomlReader& r;
  Recipe& out;

  void remember(const std::string& key, const toml::node& node) { out.locations[key] = r.at(node); }

  Status package(const toml::table& t) {
    OPFORGE_CHECK(r.check_keys(t, settings::recipe_keys("package"), "[package]"));
    if (auto* n = t.get("name")) {
      out.package.name = OPFORGE_TRY(r.string(*n, "package.name"));
      if (!is_distribution_name(out.package.name))
        return opforge::unexpected(
            r.error_at(*n, "package.name '" + strings::cut(out.package.name) + "' is not a valid distribution name",
                       "use letters, digits, '.', '_' and '-'"));
    }
    if (auto* n = t.get("version")) {
      out.package.version = OPFORGE_TRY(r.string(*n, "package.version"));
      if (out.package.version.size() > 256 || !pep440::is_public_version(out.package.version))
        return opforge::unexpected(
            r.error_at(*n, "package.version '" + strings::cut(out.package.version) + "' is not a PEP 440 version",
                       "write it like 0.1.0, 1.2rc1 or 2.0.post1"));
    }
    if (auto* n = t.get("local_version")) {
      out.package.local_version = OPFORGE_TRY(r.string(*n, "package.local_version"));
      remember("package.local_version", *n);
      const std::string& lv = out.package.local_version;
      // Placeholders are checked here so that a typo points at the recipe, not at the plan.
      for (std::size_t open = lv.find('{'); open != std::string::npos; open = lv.find('{', open + 1)) {
        auto close = lv.find('}', open);
        std::string name = close == std::string::npos ? lv.substr(open) : lv.substr(open + 1, close - open - 1);
        static const std::vector<std::string> known = {"cuda_major", "cuda_minor", "torch_major", "torch_minor",
                                                       "commit"};
        if (close == std::string::npos || std::find(known.begin(), known.end(), name) == known.end()) {
          std::string msg = "package.local_version: unknown placeholder '{" + strings::cut(name) + "}'";
          if (auto g = strings::did_you_mean(name, known)) msg += "; did you mean '{" + *g + "}'?";
          return opforge::unexpected(
              Error{ErrorKind::bad_input, msg,
                    "placeholders: {cuda_major}, {cuda_minor}, {torch_major}, {torch_minor}, {commit}",
                    r.inside_string(*n, static_cast<int>(open) + 1)});
        }
      }
    }
    if (auto* n = t.get("summary")) out.package.summary = OPFORGE_TRY(r.string(*n, "package.summary"));
    if (auto* n = t.get("description")) out.package.description = OPFORGE_TRY(r.string(*n, "package.description"));
    if (auto* n = t.get("requires_python"))
      out.package.requires_python = OPFORGE_TRY(r.string(*n, "package.requires_python"));
    return {};
  }

  Status source(const toml::table& t) {
    OPFORGE_CHECK(r.check_keys(t, settings::recipe_keys("source"), "[source]"));
    if (auto* n = t.get("path")) {
      fs::path p = OPFORGE_TRY(r.string(*n, "source.path"));
      p = (p.is_absolute() ? p : out.dir / p).lexically_normal();
      if (!p.has_filename() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
      out.source.path = p;
      remember("source.path", *n);
    }
    if (auto* n = t.get("git")) {
      out.source.git = OPFORGE_TRY(r.string(*n, "source.git"));
      remember("source.git", *n);
      if (t.get("path"))
        return opforge::unexpected(
            r.error_at(*n, "[source] has both path and git", "keep one: path = \"..\" or git = \"URL\" with rev"));
    }
    if (auto* n = t.get("sdist")) {
      std::string spec = OPFORGE_TRY(r.string(*n, "source.sdist"));
      remember("source.sdist", *n);
      if (t.get("path") || t.get("git"))
        return opforge::unexpected(
            r.error_at(*n, std::string("[source] has both ") + (t.get("path") ? "path" : "git") + " and sdist",
                       "keep one: path = \"..\", git = \"URL\" with rev, or sdist = \"<.tar.gz "
                       "path or URL>\" with sha256"));
      if (spec.empty()) return opforge::unexpected(r.error_at(*n, "source.sdist is empty", "give a path or a URL"));
      if (spec.find("://") != std::string::npos && !is_archive_url(spec))
        return opforge::unexpected(r.error_at(*n, "source.sdist: \"" + strings::cut(spec) + "\" is not an http(s) URL",
                                              "use https://..., or a local path"));
      if (!is_archive_url(spec)) {
        fs::path p = spec;
        spec = (p.is_absolute() ? p : out.dir / p).lexically_normal().string();
      }
      out.source.sdist = spec;
    }
    if (auto* n = t.get("sha256")) {
      std::string sha = OPFORGE_TRY(r.string(*n, "source.sha256"));
      remember("source.sha256", *n);
      if (!out.source.sdist)
        return opforge::unexpected(
            r.error_at(*n, "source.sha256 needs source.sdist", "add sdist = \"...\" or remove sha256"));
      if (!is_sha256_hex(sha))
        return opforge::unexpected(
            r.error_at(*n, "source.sha256 \"" + strings::cut(sha) + "\" is not 64 hex digits",
                       "write the archive's sha256 as `sha256sum` prints it (PyPI shows it beside each file)"));
      out.source.sha256 = strings::to_lower(sha);
    }
    if (out.source.sdist && is_archive_url(*out.source.sdist) && !out.source.sha256)
      return opforge::unexpected(r.error_at(*t.get("sdist"), "source.sdist is a URL without sha256",
                                            "pin the archive: sha256 = \"<64 hex digits>\" (PyPI shows it beside each "
                                            "file); sources from the internet are untrusted"));
    if (auto* n = t.get("rev")) {
      out.source.rev = OPFORGE_TRY(r.string(*n, "source.rev"));
      if (!out.source.git)
        return opforge::unexpected(r.error_at(*n, "source.rev needs source.git", "add git = \"URL\" or remove rev"));
    }
    if (auto* n = t.get("ops_dir")) {
      out.source.ops_dir = OPFORGE_TRY(r.string(*n, "source.ops_dir"));
      remember("source.ops_dir", *n);
      if (out.source.ops_dir.is_absolute())
        return opforge::unexpected(r.error_at(*n, "source.ops_dir must be relative to the source tree"));
      if (auto norm = out.source.ops_dir.lexically_normal(); !norm.empty() && *norm.begin() == "..")
        return opforge::unexpected(r.error_at(*n, "source.ops_dir leads outside the source tree",
                                              "name a folder inside the source tree, such as \"src/kernels\""));
    }
    return {};
  }

  Status cuda(const toml::table& t) {
    OPFORGE_CHECK(r.check_keys(t, settings::recipe_keys("cuda"), "[cuda]"));
    if (auto* n = t.get("version")) {
      out.cuda.version = OPFORGE_TRY(r.string(*n, "cuda.version"));
      remember("cuda.version", *n);
      // One grammar with the resolver (util/version.h): "!=" is accepted by both.
      auto spec = parse_version_spec(out.cuda.version);
      if (!spec) {
        Error e = spec.error();
        e.message = "cuda.version: " + e.message;
        e.where = r.inside_string(*n, e.where.column);
        return opforge::unexpected(e);
      }
    }
    if (auto* n = t.get("python")) out.cuda.python = OPFORGE_TRY(r.string(*n, "cuda.python"));
    if (auto* n = t.get("provision")) {
      out.cuda.provision = OPFORGE_TRY(r.string(*n, "cuda.provision"));
      remember("cuda.provision", *n);
      if (out.cuda.provision != "none" && out.cuda.provision != "pypi")
        return opforge::unexpected(
            r.error_at(*n, "cuda.provision '" + strings::cut(out.cuda.provision) + "' is not \"none\" or \"pypi\"",
                       "use provision = \"pypi\" to install torch's exact toolkit from PyPI"));
      if (out.cuda.provision == "pypi" && strings::trim(out.cuda.version) != "torch")
        return opforge::unexpected(
            r.error_at(*n, "cuda.provision = \"pypi\" installs torch's exact toolkit, so it needs version = \"torch\"",
                       "set [cuda] version = \"torch\", or remove provision"));
    }
    return {};
  }

  Status compiler(const toml::table& t) {
    OPFORGE_CHECK(r.check_keys(t, settings::recipe_keys("compiler"), "[compiler]"));
    if (auto* n = t.get("host")) {
      out.compiler.host = OPFORGE_TRY(r.string(*n, "compiler.host"));
      remember("compiler.host", *n);
      if (out.compiler.host.empty())
        return opforge::unexpected(
            r.error_at(*n, "compiler.host is empty", "use \"auto\" or a command such as \"g++-11\""));
    }
    if (auto* n = t.get("allow_unsupported"))
      out.compiler.allow_unsupported = OPFORGE_TRY(r.boolean(*n, "compiler.allow_unsupported"));
    return {};
  }

  Status arch(const toml::table& t) {
    OPFORGE_CHECK(r.check_keys(t, settings::recipe_keys("arch"), "[arch]"));
    if (auto* n = t.get("enforce")) out.arch.enforce = OPFORGE_TRY(r.boolean(*n, "arch.enforce"));
    if (auto* n = t.get("list")) {
      remember("arch.list", *n);
      if (auto* arr = n->as_array()) {
        std::vector<std::string> items;
        for (auto& item : *arr) {
          auto s = OPFORGE_TRY(r.string(item, "arch.list item"));
          OPFORGE_CHECK(check_arch_list(r, item, s, "arch.list"));
          items.push_back(s);
        }
        if (items.empty())
          return opforge::unexpected(r.error_at(*n, "arch.list is empty", "use \"auto\" or list architectures"));
        out.arch.list = strings::join(items, ";");
      } else if (n->as_string()) {
        out.arch.list = n->as_string()->get();
        if (out.arch.list != "auto" && out.arch.list != kNoArchList)
          OPFORGE_CHECK(check_arch_list(r, *n, out.arch.list, "arch.list"));
      } else {
        return opforge::unexpected(
            r.error_at(*n, "arch.list must be \"auto\", a string or an array of strings, not " + type_name(*n)));
      }
    }
    if (auto* n = t.get("fallback")) {
      out.arch.fallback = OPFORGE_TRY(r.string(*n, "arch.fallback"));
      remember("arch.fallback", *n);
      OPFORGE_CHECK(check_arch_list(r, *n, out.arch.fallback, "arch.fallback"));
    }
    if (auto* n = t.get("env")) OPFORGE_CHECK(arch_variables(*n, "arch.env", out.arch.env));
    if (auto* n = t.get("cmake_define")) OPFORGE_CHECK(arch_variables(*n, "arch.cmake_define", out.arch.cmake_define));
    return {};
  }

  /// [arch] env / cmake_define: a project's own variable → the form of the arch list it reads.
  Status arch_variables(const toml::node& n, const std::string& key, std::map<std::string, std::string>& into) {
    const toml::table* vars = OPFORGE_TRY(r.table(n, key));
    const bool define = key == "arch.cmake_define";
    for (auto&& [k, value] : *vars) {
      std::string name(k.str());
      if (!is_variable_name(name))
        return opforge::unexpected(Error{ErrorKind::bad_input,
                                         key + ": '" + strings::cut(name) + "' is not a variable name",
                                         "use letters, digits and '_', not starting with a digit, e.g. "
                                         "NVTE_CUDA_ARCHS = \"numbers\"",
                                         r.at(k.source())});
      if (define && name == "CMAKE_CUDA_ARCHITECTURES")
        return opforge::unexpected(Error{ErrorKind::bad_input, key + ": CMAKE_CUDA_ARCHITECTURES is decided by opforge",
                                         "opforge passes it from [arch] list already (with [arch] enforce)",
                                         r.at(k.source())});
      if (auto owner = define ? std::nullopt : owned_variable(name))
        return opforge::unexpected(
            Error{ErrorKind::bad_input, key + ": " + name + " is decided by opforge", *owner, r.at(k.source())});
      if (!value.as_string())
        return opforge::unexpected(r.error_at(value, key + "." + name + " must be a string, not " + type_name(value),
                                              "name a form: " + target::arch_form_names()));
      const std::string form = value.as_string()->get();
      if (!target::find_arch_form(form)) {
        std::string forms;
        for (const auto& f : target::arch_forms())
          forms += std::string(forms.empty() ? "" : ", ") + std::string(f.name) + " (" + std::string(f.example) + ")";
        return opforge::unexpected(
            r.error_at(value, key + "." + name + ": '" + strings::cut(form) + "' is not a form of an arch list",
                       "use one of " + forms + "; docs/external-projects.md lists known projects' forms"));
      }
      into[name] = form;
      out.locations[key + "." + name] = r.at(k.source());
    }
    return {};
  }

  Status ops(const toml::table& t) {
    for (auto&& [key, node] : t) {
      std::string name(key.str());
      out.locations["ops." + name] = r.at(key.source());
      if (auto* b = node.as_boolean()) {
        out.ops[name] = b->get() ? OpRequest::on : OpRequest::off;
      } else if (auto* s = node.as_string(); s && s->get() == "auto") {
        out.ops[name] = OpRequest::automatic;
      } else {
        std::string got = node.as_string() ? "\"" + strings::cut(node.as_string()->get()) + "\"" : type_name(node);
        return opforge::unexpected(
            r.error_at(node, "ops." + strings::cut(name) + " must be true, false or \"auto\", not " + got));
      }
    }
    return {};
  }

  /// "2.15.0" or "2.15": digits and dots, two or three parts.
  static bool is_torch_version(std::string_view v) {
    auto parts = strings::split(v, '.');
    if (parts.size() < 2 || parts.size() > 3) return false;
    for (auto& p : parts)
      if (p.empty() || p.size() > 4 || !std::all_of(p.begin(), p.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return false;
    return true;
  }

  Status matrix(const toml::table& t) {
    OPFORGE_CHECK(r.check_keys(t, settings::recipe_keys("matrix"), "[matrix]"));
    out.matrix.present = true;
    out.locations["matrix"] = r.at(t);
    const toml::node* torch = t.get("torch");
    if (!torch)
      return opforge::unexpected(r.error_at(t, "[matrix] needs torch = [...], the torch versions to build for",
                                            "e.g. torch = [\"2.14.0\", \"2.15.0\"]"));
    const auto* arr = torch->as_array();
    if (!arr)
      return opforge::unexpected(
          r.error_at(*torch, "matrix.torch must be an array of versions, not " + type_name(*torch)));
    if (arr->empty())
      return opforge::unexpected(
          r.error_at(*torch, "matrix.torch is empty: the matrix has no cell",
                     "list torch versions, e.g. torch = [\"2.14.0\", \"2.15.0\"], or remove [matrix]"));
    for (std::size_t i = 0; i < arr->size(); ++i) {
      const toml::node& item = *arr->get(i);
      auto v = OPFORGE_TRY(r.string(item, "matrix.torch item"));
      if (!is_torch_version(v))
        return opforge::unexpected(r.error_at(item, "matrix.torch: '" + strings::cut(v) + "' is not a torch version",
                                              "write a release as X.Y.Z (\"2.15.0\") or X.Y (\"2.15\", any 2.15.x)"));
      if (std::find(out.matrix.torch.begin(), out.matrix.torch.end(), v) != out.matrix.torch.end())
        return opforge::unexpected(r.error_at(item, "matrix.torch lists '" + v + "' twice"));
      out.matrix.torch.push_back(v);
    }
    if (auto* n = t.get("python")) {
      out.matrix.python = OPFORGE_TRY(r.string_array(*n, "matrix.python"));
      if (out.matrix.python.empty())
        return opforge::unexpected(r.error_at(*n, "matrix.python is empty", "list interpreters, or leave the key out"));
      const auto* pa = n->as_array();
      for (std::size_t i = 0; i < pa->size(); ++i)
        out.locations["matrix.python." + std::to_string(i)] = r.at(*pa->get(i));
    }
    if (auto* n = t.get("requirements"))
      out.matrix.requirements = OPFORGE_TRY(r.string_array(*n, "matrix.requirements"));
    if (auto* n = t.get("environments")) {
      const toml::table* envs = OPFORGE_TRY(r.table(*n, "matrix.environments"));
      for (auto&& [key, value] : *envs) {
        std::string id(key.str());
        out.matrix.environments[id] = OPFORGE_TRY(r.string(value, "matrix.environments." + id));
        out.locations["matrix.environments." + id] = r.at(key.source());
      }
    }
    if (auto* n = t.get("platform")) {
      const auto* pa = n->as_array();
      if (!pa || pa->empty())
        return opforge::unexpected(r.error_at(*n, "matrix.platform must be a non-empty array of platform names",
                                              "e.g. platform = [\"x86_64\", \"aarch64\"], or leave the key out"));
      for (std::size_t i = 0; i < pa->size(); ++i) {
        const toml::node& item = *pa->get(i);
        auto v = OPFORGE_TRY(r.string(item, "matrix.platform item"));
        const auto* p = target::find_platform(v);
        if (!p)
          return opforge::unexpected(r.error_at(item, "matrix.platform: unknown platform \"" + strings::cut(v) + "\"",
                                                "accepted values: " + target::platform_names()));
        const std::string name(p->name);
        if (std::find(out.matrix.platform.begin(), out.matrix.platform.end(), name) != out.matrix.platform.end())
          return opforge::unexpected(r.error_at(item, "matrix.platform lists " + name + " twice"));
        out.matrix.platform.push_back(name);
      }
      out.locations["matrix.platform"] = r.at(*n);
    }
    if (auto* n = t.get("arch")) {
      const auto* aa = n->as_array();
      if (!aa || aa->empty())
        return opforge::unexpected(r.error_at(*n, "matrix.arch must be a non-empty array of arch lists",
                                              "e.g. arch = [\"8.0\", \"9.0\", \"10.0+PTX\"], or leave the key out"));
      for (std::size_t i = 0; i < aa->size(); ++i) {
        const toml::node& item = *aa->get(i);
        auto v = OPFORGE_TRY(r.string(item, "matrix.arch item"));
        if (v == "auto" || v == kNoArchList)
          return opforge::unexpected(
              r.error_at(item, "matrix.arch: \"" + v + "\" is not an arch list a variant can be built for",
                         "list the architectures of each variant, e.g. \"8.0\" or \"9.0;10.0+PTX\""));
        OPFORGE_CHECK(check_arch_list(r, item, v, "matrix.arch"));
        if (std::find(out.matrix.arch.begin(), out.matrix.arch.end(), v) != out.matrix.arch.end())
          return opforge::unexpected(r.error_at(item, "matrix.arch lists \"" + v + "\" twice"));
        out.matrix.arch.push_back(v);
      }
      out.locations["matrix.arch"] = r.at(*n);
    }
    if (auto* n = t.get("share_stable_abi"))
      out.matrix.share_stable_abi = OPFORGE_TRY(r.boolean(*n, "matrix.share_stable_abi"));
    return {};
  }

  /// [build.env]: the project's own build switches (CAUSAL_CONV1D_FORCE_BUILD = "TRUE"), set for
  /// the build command. Variables that opforge itself decides have their own keys and are refused.
  Status build_env(const toml::node& n) {
    const toml::table* env = OPFORGE_TRY(r.table(n, "build.env"));
    for (auto&& [key, value] : *env) {
      std::string name(key.str());
      if (!is_variable_name(name))
        return opforge::unexpected(Error{ErrorKind::bad_input,
                                         "build.env: '" + strings::cut(name) + "' is not an environment variable name",
                                         "use letters, digits and '_', not starting with a digit", r.at(key.source())});
      if (auto owner = owned_variable(name))
        return opforge::unexpected(
            Error{ErrorKind::bad_input, "build.env: " + name + " is decided by opforge", *owner, r.at(key.source())});
      if (!value.as_string())
        return opforge::unexpected(r.error_at(value, "build.env." + name + " must be a string, not " + type_name(value),
                                              "quote the value, e.g. " + name + " = \"TRUE\""));
      out.build.env[name] = value.as_string()->get();
      out.locations["build.env." + name] = r.at(key.source());
    }
    return {};
  }

  /// [wheel] glibc and root (the floor the files keep, the root they are built in).
  Status wheel_keys(const toml::table& t) {
    OPFORGE_CHECK(r.check_keys(t, settings::recipe_keys("wheel"), "[wheel]"));
    if (auto* n = t.get("glibc")) {
      auto v = OPFORGE_TRY(r.string(*n, "wheel.glibc"));
      auto floor = wheel::parse_glibc_floor(v);
      if (!floor) return opforge::unexpected(r.error_at(*n, "wheel." + floor.error().message, floor.error().hint));
      out.wheel.glibc_floor = *floor;
      remember("wheel.glibc", *n);
    }
    if (auto* n = t.get("root")) {
      fs::path p = OPFORGE_TRY(r.string(*n, "wheel.root"));
      if (p.empty())
        return opforge::unexpected(r.error_at(*n, "wheel.root is empty", "name a root filesystem's folder"));
      out.wheel.root = (p.is_absolute() ? p : out.dir / p).lexically_normal();
      remember("wheel.root", *n);
    }
    if (auto* n = t.get("torch_pin")) out.wheel.torch_pin = OPFORGE_TRY(r.boolean(*n, "wheel.torch_pin"));
    if (auto* n = t.get("variants")) out.wheel.variants = OPFORGE_TRY(r.boolean(*n, "wheel.variants"));
    return {};
  }

  Status build(const toml::table& t) {
    OPFORGE_CHECK(r.check_keys(t, settings::recipe_keys("build"), "[build]"));
    if (auto* n = t.get("backend")) {
      auto v = OPFORGE_TRY(r.string(*n, "build.backend"));
      auto kind = backend_from_name(v);
      if (!kind)
        return opforge::unexpected(
            r.error_at(*n, "build.backend must be " + backend_names() + ", not \"" + strings::cut(v) + "\""));
      out.build.backend = *kind;
    }
    if (auto* n = t.get("command")) out.build.command = OPFORGE_TRY(r.string_array(*n, "build.command"));
    if (const auto& kind = build_kind(out.build.backend); kind.needs_command && out.build.command.empty()) {
      const toml::node& at = t.get("command") ? *t.get("command") : *t.get("backend");
      return opforge::unexpected(
          r.error_at(at, "build.backend = \"" + std::string(kind.name) + "\" needs a non-empty build.command",
                     "e.g. command = [\"python3\", \"setup.py\", \"bdist_wheel\"]"));
    }
    if (auto* n = t.get("env")) {
      OPFORGE_CHECK(build_env(*n));
      if (!build_kind(out.build.backend).project_build)
        return opforge::unexpected(r.error_at(*n, "[build.env] sets a project's variables for its build command",
                                              "use it with backend = \"command\"; native ops take their flags "
                                              "from their op.toml"));
    }
    if (auto* n = t.get("wheel_glob")) out.build.wheel_glob = OPFORGE_TRY(r.string(*n, "build.wheel_glob"));
    if (auto* n = t.get("jobs")) {
      remember("build.jobs", *n);
      if (auto* i = n->as_integer(); i && i->get() >= 1) {
        // Like MAX_JOBS: more jobs than ninja usefully runs are capped, not refused.
        out.build.jobs = static_cast<unsigned>(std::min<std::int64_t>(i->get(), kMaxJobs));
      } else if (auto* s = n->as_string(); s && s->get() == "auto") {
        out.build.jobs = 0;
      } else {
        return opforge::unexpected(r.error_at(*n, "build.jobs must be \"auto\" or a positive integer"));
      }
    }
    if (auto* n = t.get("cache")) {
      auto v = OPFORGE_TRY(r.string(*n, "build.cache"));
      auto c = cache_from_name(v);
      if (!c)
        return opforge::unexpected(
            r.error_at(*n, "build.cache must be " + cache_names() + ", not \"" + strings::cut(v) + "\""));
      out.build.cache = *c;
    }
    if (auto* n = t.get("remote")) out.build.remote = OPFORGE_TRY(r.string(*n, "build.remote"));
    if (auto* n = t.get("scheduler")) {
      out.build.scheduler = OPFORGE_TRY(r.string(*n, "build.scheduler"));
      if (!out.build.scheduler.starts_with("http://") && !out.build.scheduler.starts_with("https://"))
        return opforge::unexpected(
            r.error_at(*n, "build.scheduler must be an sccache-dist scheduler's URL (http://host:10600), not \"" +
                               strings::cut(out.build.scheduler) + "\""));
      if (auto why = scheduler_url_problem(out.build.scheduler); !why.empty())
        return opforge::unexpected(r.error_at(
            *n, "build.scheduler \"" + strings::cut(out.build.scheduler) + "\" is not a URL sccache can use: " + why,
            "write http://HOST:PORT or http://[IPv6]:PORT, e.g. http://sched:10600 or http://[::1]:10600"));
    }
    if (auto* n = t.get("scheduler_token_file")) {
      fs::path f = OPFORGE_TRY(r.string(*n, "build.scheduler_token_file"));
      out.build.scheduler_token_file = (f.is_absolute() ? f : out.dir / f).lexically_normal();
    }
    if (!out.build.scheduler.empty() && out.build.cache != Cache::sccache)
      return opforge::unexpected(r.error_at(*t.get("scheduler"),
                                            "build.scheduler is sccache-dist's, for cache = \"sccache\"",
                                            "add cache = \"sccache\" to [build], or remove scheduler"));
    if (auto* n = t.get("build_dir")) out.build.build_dir = OPFORGE_TRY(r.string(*n, "build.build_dir"));
    if (auto* n = t.get("dist_dir")) out.build.dist_dir = OPFORGE_TRY(r.string(*n, "build.dist_dir"));
    if (auto* n = t.get("release")) out.build.release = OPFORGE_TRY(r.boolean(*n, "build.release"));
    if (auto* n = t.get("pch")) out.build.pch = OPFORGE_TRY(r.boolean(*n, "build.pch"));
    if (auto* n = t.get("gcc_gc_heap_mib")) {
      auto* i = n->as_integer();
      if (!i || i->get() < 0 || i->get() > Recipe::kMaxGccGcHeapMib)
        return opforge::unexpected(r.error_at(
            *n,
            "build.gcc_gc_heap_mib must be an integer from 0 to " + std::to_string(Recipe::kMaxGccGcHeapMib) + " (MiB)",
            "1024 (the default) lets gcc's heap grow to 1 GiB before it collects; 0 keeps gcc's own "
            "default"));
      out.build.gcc_gc_heap_mib = static_cast<unsigned>(i->get());
    }
    if (auto* n = t.get("cpu_target")) {
      auto v = OPFORGE_TRY(r.string(*n, "build.cpu_target"));
      if (!target::find_cpu_target(v)) {
        auto names = target::cpu_target_names();
        std::string msg = "build.cpu_target: unknown CPU target \"" + v + "\"";
        // Levels highest first, so that one past the last ("x86-64-v5") suggests v4.
        auto guess = strings::did_you_mean(
            v, {target::level_name(4), target::level_name(3), target::level_name(2), target::level_name(1)});
        if (!guess) guess = strings::did_you_mean(v, names);
        if (v == "native")
          msg = "build.cpu_target = \"native\" names the build machine's CPU, not the CPUs the wheel runs on";
        else if (guess) msg += "; did you mean \"" + *guess + "\"?";
        return opforge::unexpected(r.error_at(
            *n, msg,
            "accepted values: " + strings::join(names, ", ") + " (leave the key out to keep the project's own flags)"));
      }
      out.build.cpu_target = v;
      remember("build.cpu_target", *n);
    }
    if (auto* n = t.get("platform")) {
      auto v = OPFORGE_TRY(r.string(*n, "build.platform"));
      const auto* p = target::find_platform(v);
      if (!p)
        return opforge::unexpected(r.error_at(
            *n, "build.platform: unknown platform \"" + strings::cut(v) + "\"",
            "accepted values: " + target::platform_names() + " (leave the key out to build for this machine)"));
      out.build.platform = std::string(p->name);
      remember("build.platform", *n);
    }
    if (auto* n = t.get("cpu_dispatch")) out.build.cpu_dispatch = OPFORGE_TRY(r.string_array(*n, "build.cpu_dispatch"));
    return {};
  }
};

}  // namespace

const CacheKind& cache_kind(Cache c) {
  for (const auto& k : kCaches)
    if (k.cache == c) return k;
  return kCaches[0];
}

std::optional<Cache> cache_from_name(std::string_view n) {
  for (const auto& k : kCaches)
    if (k.name == n) return k.cache;
  return std::nullopt;
}

const BuildKind& build_kind(Backend b) {
  for (const auto& k : kKinds)
    if (k.backend == b) return k;
  return kKinds[0];
}

std::optional<Backend> backend_from_name(std::string_view n) {
  for (const auto& k : kKinds)
    if (k.name == n) return k.backend;
  return std::nullopt;
}

std::string backend_names() {
  std::string out;
  for (std::size_t i = 0; i < std::size(kKinds); ++i)
    out += (i == 0 ? "" : i + 1 == std::size(kKinds) ? " or " : ", ") + ("\"" + std::string(kKinds[i].name) + "\"");
  return out;
}

std::string cache_names() {
  std::string out;
  for (std::size_t i = 0; i < std::size(kCaches); ++i)
    out += (i == 0 ? "" : i + 1 == std::size(kCaches) ? " or " : ", ") + ("\"" + std::string(kCaches[i].name) + "\"");
  return out;
}

Status check_arch_list(std::string_view text) {
  auto parsed = target::check_arch_list(text);
  if (!parsed) return opforge::unexpected(parsed.error());
  return {};
}

namespace {

Result<Recipe> parse_in(const fs::path& path, const fs::path& dir, std::string_view text) {
  TomlReader r(path, text);
  toml::table doc = OPFORGE_TRY(r.parse());
  Recipe out;
  out.file = path;
  out.dir = dir;
  Parser p{r, out};
  OPFORGE_CHECK(r.check_keys(doc, kSections, "the recipe"));
  for (auto&& [key, node] : doc) {
    std::string name(key.str());
    const toml::table* t = OPFORGE_TRY(r.table(node, name));
    if (name == "package") OPFORGE_CHECK(p.package(*t));
    else if (name == "source") OPFORGE_CHECK(p.source(*t));
    else if (name == "cuda") OPFORGE_CHECK(p.cuda(*t));
    else if (name == "compiler") OPFORGE_CHECK(p.compiler(*t));
    else if (name == "arch") OPFORGE_CHECK(p.arch(*t));
    else if (name == "ops") OPFORGE_CHECK(p.ops(*t));
    else if (name == "build") OPFORGE_CHECK(p.build(*t));
    else if (name == "matrix") OPFORGE_CHECK(p.matrix(*t));
    else if (name == "wheel") OPFORGE_CHECK(p.wheel_keys(*t));
  }
  if (!out.source.path && !out.source.git && !out.source.sdist) out.source.path = out.dir.lexically_normal();
  for (const auto* vars : {&out.arch.env, &out.arch.cmake_define})
    if (!vars->empty() && !project_build(out)) {
      const std::string key = vars == &out.arch.env ? "arch.env" : "arch.cmake_define";
      return opforge::unexpected(Error{ErrorKind::bad_input,
                                       key + " sets a project's own arch variables for its build command",
                                       "use it with [build] backend = \"command\"; native ops get the arch list "
                                       "from opforge",
                                       out.locations[key + "." + vars->begin()->first]});
    }
  // The arch axis's wheels are published as variant wheels: their plain wheels would share a name.
  if (!out.matrix.arch.empty() && !out.wheel.variants)
    return opforge::unexpected(Error{ErrorKind::bad_input,
                                     "matrix.arch builds each cell once per arch list, as variant wheels, and "
                                     "[wheel] variants is not on",
                                     "add [wheel] variants = true (the plain wheel of each cell is then built for "
                                     "the union of the lists: docs/variants.md)",
                                     out.locations["matrix.arch"]});
  // One owner a variable: the project's switch or the plan's arch list, not both.
  for (const auto& [name, form] : out.arch.env)
    if (out.build.env.contains(name))
      return opforge::unexpected(Error{ErrorKind::bad_input,
                                       "build.env." + name + ": " + name +
                                           " is also in [arch] env, which sets it to "
                                           "the arch list in its form",
                                       "keep one of the two", out.locations["build.env." + name]});
  return out;
}

}  // namespace

Result<Recipe> parse_file(const fs::path& path, std::string_view text) {
  return parse_in(path, path.has_parent_path() ? path.parent_path() : fs::path("."), text);
}

Result<Recipe> load(probe::Machine m, const fs::path& file) {
  // The operating system would read the path only up to the NUL: another file than the one named.
  if (auto pos = file.native().find('\0'); pos != std::string::npos)
    return bad_input("recipe path '" + strings::cut(file.native().substr(0, pos)) + "\\0...' contains a NUL byte",
                     "pass the path of a recipe file, or 'default' for the recipe that comes with opforge");
  if (auto type = m.fs.resolved_type(file); type != probe::FileType::regular) {
    // Only regular files: a FIFO would block the read, /dev/zero would never end.
    std::string what = type == probe::FileType::none ? "does not exist" : "is not a regular file";
    if (type == probe::FileType::none && m.fs.type_of(file) == probe::FileType::symlink) {
      // A link that leads nowhere: say whether it is a loop or which file is missing.
      fs::path at = file;
      std::vector<fs::path> seen;
      what = "is a symbolic link loop";
      for (int hops = 0; hops < 40; ++hops) {
        auto to = m.fs.read_symlink(at);
        if (!to) break;
        at = to->is_absolute() ? *to : (at.parent_path() / *to);
        at = at.lexically_normal();
        if (std::find(seen.begin(), seen.end(), at) != seen.end()) break;
        seen.push_back(at);
        if (m.fs.type_of(at) != probe::FileType::symlink) {
          what = "is a symbolic link to '" + strings::cut(at.string()) + "', which does not exist";
          break;
        }
      }
    }
    return bad_input("recipe file '" + strings::cut(file.string()) + "' " + what,
                     "pass the path of a recipe file, or 'default' for the recipe that comes with opforge");
  }
  auto text = OPFORGE_TRY(m.fs.read_file(file));
  fs::path abs = OPFORGE_TRY(m.fs.canonical(file));
  // Errors show the path as typed; relative paths in the recipe resolve against its real folder.
  return parse_in(file, abs.parent_path(), text);
}

}  // namespace opforge::recipe
