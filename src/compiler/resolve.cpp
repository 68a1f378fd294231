#include "compiler/resolve.h"

#include "compiler/cpu_target.h"

#include <algorithm>
#include <map>
#include <set>

#include <toml++/toml.h>

#include "probe/json_cache.h"
#include "settings/settings.h"
#include "util/numbers.h"
#include "util/scan.h"
#include "util/strings.h"

namespace opforge::compiler {

namespace {

/// `\s*<op>\s*([0-9]+)` at the cursor: the number, or empty.
std::string_view compared_to(scan::Cursor c, std::string_view op) {
  c.spaces();
  if (!c.literal(op)) return {};
  c.spaces();
  return c.digits();
}

/// The number of the first `<name>\s*<op>\s*([0-9]+)` in `line`, or empty.
std::string_view first_comparison(std::string_view line, std::string_view name, std::string_view op) {
  for (auto at = line.find(name); at != std::string_view::npos; at = line.find(name, at + 1))
    if (auto d = compared_to(scan::Cursor{line.substr(at + name.size())}, op); !d.empty()) return d;
  return {};
}

}  // namespace

Limits parse_host_config(std::string_view text) {
  Limits l;
  // A number no compiler can have (a damaged or hand-edited header) reads as "no limit found".
  auto major = [](std::string_view digits) { return numbers::parse_int<int>(digits).value_or(0); };
  for (auto& line : strings::split(text, '\n')) {
    if (l.max_gcc == 0 && line.find("__GNUC__") != std::string::npos) {
      // `#if\s+__GNUC__\s*>\s*([0-9]+)`: the newest gcc the toolkit takes.
      std::string_view rest(line);
      for (auto at = rest.find("#if"); at != std::string_view::npos; at = rest.find("#if", at + 1)) {
        scan::Cursor c{rest.substr(at + 3)};
        if (!c.spaces() || !c.literal("__GNUC__")) continue;
        if (auto d = compared_to(c, ">"); !d.empty()) {
          l.max_gcc = major(d);
          break;
        }
      }
    }
    // The Grace (aarch64) clang check has its own range; the host check is the plain one.
    if (l.max_clang == 0 && line.starts_with("#if") && line.find("__clang_major__") != std::string::npos &&
        line.find("__GRCO_CLANG_COMPILER__") == std::string::npos) {
      if (auto ge = first_comparison(line, "__clang_major__", ">="); !ge.empty())
        l.max_clang = std::max(0, major(ge) - 1);
      else if (auto gt = first_comparison(line, "__clang_major__", ">"); !gt.empty()) l.max_clang = major(gt);
    }
  }
  return l;
}

Limits table_limits(const Version& v) {
  struct Row {
    Version from;
    int gcc;
    int clang;
  };
  static const std::vector<Row> rows = [] {
    // Compiled in from toolchains/cuda-host-compilers.toml (CMakeLists.txt); tests check it parses.
    static constexpr std::string_view text =
#include "opforge/cuda-host-compilers.toml.inc"
        ;
    std::vector<Row> out;
    auto table = toml::parse(text, std::string_view("toolchains/cuda-host-compilers.toml"));
    for (auto& node : *table["limit"].as_array()) {
      auto& r = *node.as_table();
      out.push_back({*parse_version(r["from"].value_or(std::string())), int(r["max_gcc"].value_or(0)),
                     int(r["max_clang"].value_or(0))});
    }
    std::sort(out.begin(), out.end(), [](const Row& a, const Row& b) { return b.from < a.from; });
    return out;
  }();
  Limits l;
  l.source = "toolchains/cuda-host-compilers.toml";
  for (auto& r : rows)
    if (v >= r.from) {
      l.max_gcc = r.gcc;
      l.max_clang = r.clang;
      return l;
    }
  return l;
}

bool accepted(const Compiler& c, const Limits& l) {
  int max = c.family == Family::gcc ? l.max_gcc : l.max_clang;
  return max > 0 && c.version.major <= max;
}

namespace {

std::optional<Version> ask_version(probe::Machine m, const fs::path& exe, Family fam) {
  std::vector<std::string> argv{exe.string()};
  if (fam == Family::gcc) argv.push_back("-dumpfullversion");
  argv.push_back("-dumpversion");
  auto r = probe::run_remembered(m, probe::Command{.argv = argv, .timeout = std::chrono::milliseconds(10000)});
  if (!r || !r->ok()) return std::nullopt;
  return parse_version(strings::trim(r->out));
}

/// gcc[-N] → g++[-N], clang[-N] → clang++[-N]; with a cross prefix, aarch64-linux-gnu-gcc[-N] →
/// aarch64-linux-gnu-g++[-N].
std::string cxx_name(const std::string& cc, Family fam, std::string_view prefix = {}) {
  const std::string rest = cc.substr(prefix.size());
  if (fam == Family::gcc) return std::string(prefix) + "g++" + rest.substr(3);
  return std::string(prefix) + "clang++" + rest.substr(5);
}

/// `name` as `<base>` or `<base>-<suffix>` with `base` one of `bases` and the suffix digits
/// (`dotted`: digits and dots, as in gcc-12.2): the base and the suffix with its '-'.
std::optional<std::pair<std::string_view, std::string_view>> versioned_name(
    std::string_view name, std::initializer_list<std::string_view> bases, bool dotted = false) {
  for (auto base : bases) {
    if (!name.starts_with(base)) continue;
    auto suffix = name.substr(base.size());
    if (suffix.empty()) return std::pair{base, suffix};
    if (suffix.front() != '-') continue;
    auto number = suffix.substr(1);
    if (dotted ? scan::is_dotted_number(number) : !number.empty() && std::ranges::all_of(number, scan::is_digit))
      return std::pair{base, suffix};
  }
  return std::nullopt;
}

/// N of the first `/llvm-N/bin/` in a path (Debian's clang-N lives in /usr/lib/llvm-N/bin/).
std::optional<int> llvm_major(std::string_view path) {
  for (auto at = path.find("/llvm-"); at != std::string_view::npos; at = path.find("/llvm-", at + 1)) {
    scan::Cursor c{path.substr(at + 6)};
    auto d = c.digits();
    if (d.empty() || !c.literal("/bin/")) continue;
    auto n = numbers::parse_int<int>(d);
    return n ? std::optional<int>(*n) : std::nullopt;
  }
  return std::nullopt;
}

std::string describe(const Compiler& c) {
  return c.cxx.filename().string() + " (" + std::string(family_name(c.family)) + " " + c.version.str(3) + ")";
}

}  // namespace

std::vector<Compiler> find_installed(probe::Machine m, const target::Platform* cross) {
  std::vector<Compiler> out;
  auto path = settings::path(m.env);
  // A cross-build's compilers are Debian's <triple>-gcc[-N] (gcc only: a clang cross-compiles
  // with --target, which nvcc's -ccbin cannot pass).
  const std::string prefix = cross ? std::string(cross->triple) + "-" : std::string();
  const std::string gcc = prefix + "gcc";
  std::set<std::string> seen_names, seen_real;
  std::vector<std::pair<fs::path, Family>> found;
  for (auto& dir : strings::split(path, ':')) {
    if (dir.empty()) continue;
    auto names = m.fs.list_directory(fs::path(dir));
    if (!names) continue;
    for (auto& n : *names) {
      auto parts = cross ? versioned_name(n, {gcc}) : versioned_name(n, {"gcc", "clang"});
      if (!parts || seen_names.count(n)) continue;
      seen_names.insert(n);
      fs::path cc = fs::path(dir) / n;
      if (!m.fs.is_executable(cc)) continue;
      found.push_back({cc, parts->first == gcc ? Family::gcc : Family::clang});
    }
  }
  // Plain names first so that the default keeps its plain name after deduplication.
  auto plain = [&](const fs::path& p) { return p.filename().string().find('-', prefix.size()) == std::string::npos; };
  std::stable_sort(found.begin(), found.end(), [&](auto& a, auto& b) { return plain(a.first) && !plain(b.first); });
  for (auto& [cc, fam] : found) {
    auto canon = m.fs.canonical(cc);
    std::string real = canon ? canon->string() : cc.string();
    if (!seen_real.insert(real).second) continue;
    auto cxx = probe::find_on_path(m.fs, cxx_name(cc.filename().string(), fam, prefix), path);
    if (!cxx) continue;
    // Every compiler is asked (remembered per binary, so clang's ~70 ms start is paid once): a
    // report says clang 19.1.7, not 19.0.0. Debian's /usr/lib/llvm-N/ names the major, all the
    // limits compare, when a clang does not answer.
    std::optional<Version> v = ask_version(m, cc, fam);
    if (auto n = llvm_major(real); !v && fam == Family::clang && n) v = Version{*n, 0, 0};
    if (!v) continue;
    Compiler c{fam, cc, *cxx, *v, fam == Family::gcc && cc.filename() == gcc};
    out.push_back(c);
  }
  std::stable_sort(out.begin(), out.end(), [](auto& a, auto& b) {
    if (a.is_default != b.is_default) return a.is_default;
    if (a.family != b.family) return a.family == Family::gcc;
    return a.version > b.version;
  });
  return out;
}

Limits limits_for(probe::Machine m, const cuda::Toolkit& tk) {
  std::vector<fs::path> headers{tk.include_dir / "crt" / "host_config.h",
                                tk.root / "include" / "crt" / "host_config.h"};
  if (auto names = m.fs.list_directory(tk.root / "targets"))
    for (auto& n : *names) headers.push_back(tk.root / "targets" / n / "include" / "crt" / "host_config.h");
  for (auto& h : headers) {
    auto text = m.fs.read_file(h);
    if (!text) continue;
    auto l = parse_host_config(*text);
    if (l.max_gcc == 0 && l.max_clang == 0) continue;
    auto t = table_limits(tk.version);
    if (l.max_gcc == 0) l.max_gcc = t.max_gcc;
    if (l.max_clang == 0) l.max_clang = t.max_clang;
    l.source = h.string();
    return l;
  }
  return table_limits(tk.version);
}

namespace {

/// What a refusal names: the toolkit's limits, and what to install.
struct LimitText {
  std::string limits;  ///< "CUDA 13.0 accepts gcc <= 15 and clang <= 20 (from ...)"
  std::string hint;    ///< install an accepted compiler, or allow_unsupported
};

LimitText limit_text(const cuda::Toolkit& tk, const Limits& l) {
  return {"CUDA " + tk.version.str() + " accepts gcc <= " + std::to_string(l.max_gcc) +
              " and clang <= " + std::to_string(l.max_clang) + " (from " + l.source + ")",
          "install an accepted compiler (e.g. `apt-get install g++-" + std::to_string(l.max_gcc) +
              "`), or set [compiler] allow_unsupported = true to pass -allow-unsupported-compiler"};
}

/// "auto": the default compiler if accepted, else the newest accepted one through a shim (gcc
/// before clang), else with allow_unsupported the default (or the first found).
Result<HostChoice> choose_auto(HostChoice hc, const cuda::Toolkit& tk, bool allow_unsupported,
                               const fs::path& shim_dir) {
  const auto text = limit_text(tk, hc.limits);
  const Compiler* def = nullptr;
  for (auto& c : hc.installed)
    if (c.is_default) {
      def = &c;
      break;
    }
  if (def && accepted(*def, hc.limits)) {
    hc.compiler = *def;
    hc.reason = "the default compiler " + describe(*def) + " is accepted: " + text.limits;
    return hc;
  }
  const Compiler* best = nullptr;
  for (auto& c : hc.installed)
    if (accepted(c, hc.limits) && (!best || (c.family == Family::gcc && best->family != Family::gcc) ||
                                   (c.family == best->family && c.version > best->version)))
      best = &c;
  if (best) {
    hc.compiler = *best;
    hc.shim_dir = shim_dir;
    hc.reason = (def ? "the default " + describe(*def) + " is too new; " : std::string("no default gcc; ")) +
                "using the newest accepted " + describe(*best) + " through a shim: " + text.limits;
    return hc;
  }
  if (allow_unsupported && (def || !hc.installed.empty())) {
    hc.compiler = def ? *def : hc.installed.front();
    hc.allow_unsupported = true;
    hc.reason = describe(hc.compiler) + " is not accepted (" + text.limits +
                "); allow_unsupported = true passes -allow-unsupported-compiler";
    return hc;
  }
  std::string have;
  for (auto& c : hc.installed) have += (have.empty() ? "" : ", ") + describe(c);
  return unsatisfied("no installed host compiler is accepted by CUDA " + tk.version.str() + ": " + text.limits +
                         "; installed: " + (have.empty() ? "none" : have),
                     text.hint);
}

/// A named compiler: a command on PATH or a path, C++ or C driver name; its partner driver beside it.
/// The distribution package of a compiler command: g++-11 → g++-11, clang++-17 → clang-17.
std::string compiler_package(const std::string& name) {
  if (name.starts_with("clang")) {
    auto dash = name.find('-');
    return "clang" + (dash == std::string::npos ? std::string() : name.substr(dash));
  }
  if (name.starts_with("gcc") || name.starts_with("cc")) return "g++" + name.substr(name.starts_with("gcc") ? 3 : 2);
  if (name.starts_with("c++")) return "g++" + name.substr(3);
  return name;
}

Result<Compiler> named_compiler(probe::Machine m, const std::string& host, const std::vector<Compiler>& installed) {
  fs::path given(host);
  std::optional<fs::path> exe;
  if (host.find('/') != std::string::npos) {
    if (m.fs.is_executable(given)) exe = given;
  } else {
    exe = probe::find_on_path(m.fs, host, settings::path(m.env));
  }
  // A valid recipe this machine cannot satisfy: the compiler is to be installed (exit 3).
  if (!exe)
    return unsatisfied("[compiler] host '" + host + "' is not an executable on PATH",
                       "install it (its package: " + compiler_package(fs::path(host).filename().string()) +
                           "), or write \"auto\" or the full path of an installed compiler");
  std::string name = exe->filename().string();
  Compiler c;
  c.family = name.find("clang") != std::string::npos ? Family::clang : Family::gcc;
  if (auto parts = versioned_name(name, {"g++", "c++", "clang++"})) {
    c.cxx = *exe;
    auto [base, suffix] = *parts;
    std::string cc = std::string(base == "g++" ? "gcc" : base == "c++" ? "cc" : "clang") + std::string(suffix);
    c.cc = exe->parent_path() / cc;
    if (!m.fs.is_executable(c.cc)) c.cc = *exe;
  } else {
    c.cc = *exe;
    auto cxx =
        exe->parent_path() / cxx_name(name.starts_with("gcc") || name.starts_with("clang") ? name : "gcc", c.family);
    c.cxx = m.fs.is_executable(cxx) ? cxx : *exe;
  }
  auto v = ask_version(m, c.cc, c.family);
  if (!v) return failure("cannot read the version of " + c.cc.string());
  c.version = *v;
  for (auto& i : installed)
    if (i.is_default) {
      auto a = m.fs.canonical(i.cc), b = m.fs.canonical(c.cc);
      c.is_default = a && b && *a == *b;
    }
  return c;
}

}  // namespace

namespace {

/// The toolkit's own wrapper (Debian's bin/g++) named in the reason: the choice agrees with it, or
/// the build's -ccbin overrides it.
HostChoice note_wrapper(probe::Machine m, const cuda::Toolkit& tk, HostChoice hc) {
  auto w = toolkit_wrapper(m, tk);
  if (!w) return hc;
  bool same = false;
  if (w->runs)
    if (auto p = probe::find_on_path(m.fs, *w->runs, settings::path(m.env)))
      if (auto real = m.fs.canonical(*p))
        for (const auto& mine : {hc.compiler.cc, hc.compiler.cxx})
          if (auto r = m.fs.canonical(mine); r && *r == *real) same = true;
  hc.reason += "; " + wrapper_text(*w) + (same ? ": the same compiler" : "; opforge's -ccbin decides instead");
  return hc;
}

}  // namespace

Result<HostChoice> resolve(probe::Machine m, const cuda::Toolkit& tk, const std::string& host_in,
                           bool allow_unsupported, const fs::path& shim_dir) {
  HostChoice hc;
  hc.limits = limits_for(m, tk);
  hc.installed = find_installed(m);
  std::string host(strings::trim(host_in));
  if (host.empty() || host == "auto")
    return note_wrapper(m, tk, OPFORGE_TRY(choose_auto(std::move(hc), tk, allow_unsupported, shim_dir)));
  const Compiler c = OPFORGE_TRY(named_compiler(m, host, hc.installed));
  const auto text = limit_text(tk, hc.limits);
  hc.compiler = c;
  if (!c.is_default) hc.shim_dir = shim_dir;
  if (!accepted(c, hc.limits)) {
    if (!allow_unsupported)
      return unsatisfied("[compiler] host " + describe(c) + " is not accepted: " + text.limits, text.hint);
    hc.allow_unsupported = true;
    hc.reason = describe(c) + " as asked, beyond the toolkit's limit (allow_unsupported = true)";
    return hc;
  }
  hc.reason = describe(c) + " as asked; " + text.limits;
  return note_wrapper(m, tk, std::move(hc));
}

Result<HostChoice> resolve_cross(probe::Machine m, const cuda::Toolkit* tk, const target::Platform& platform,
                                 const std::string& host_in, bool allow_unsupported, const fs::path& shim_dir) {
  const std::string prefix = std::string(platform.triple) + "-";
  const std::string install = "install Debian's " + std::string(platform.cross_gxx_package) + " (apt-get install " +
                              std::string(platform.cross_gxx_package) + ")";
  HostChoice hc;
  hc.installed = find_installed(m, &platform);
  std::string host(strings::trim(host_in));
  if (!host.empty() && host != "auto") {
    auto it = std::find_if(hc.installed.begin(), hc.installed.end(), [&](const Compiler& c) {
      return c.cxx.filename() == host || c.cc.filename() == host || c.cxx == fs::path(host) || c.cc == fs::path(host);
    });
    if (it == hc.installed.end())
      return unsatisfied("[compiler] host '" + host + "' is no " + std::string(platform.name) +
                             " cross compiler on PATH (they are named " + prefix + "g++[-N])",
                         install + ", or write \"auto\"");
    hc.installed = {*it};
    hc.installed.front().is_default = true;
  }
  if (hc.installed.empty())
    return unsatisfied("a build for " + std::string(platform.name) + " needs a cross compiler (" + prefix +
                           "g++), and none is on PATH",
                       install);
  if (!tk) {
    hc.compiler = hc.installed.front();
    hc.reason = describe(hc.compiler) + ", the " + std::string(platform.name) + " cross compiler (no CUDA toolkit)";
    return hc;
  }
  hc.limits = limits_for(m, *tk);
  hc = OPFORGE_TRY(choose_auto(std::move(hc), *tk, allow_unsupported, shim_dir));
  hc.reason = "cross-compiling for " + std::string(platform.name) + ": " + hc.reason;
  return hc;
}

std::vector<std::string> parse_compiler_wrapper(std::string_view script) {
  std::vector<std::string> out;
  if (!script.starts_with("#!") || script.find("exec $prog") == std::string_view::npos) return out;
  for (const auto& line : strings::split(script, '\n')) {
    auto t = strings::trim(line);
    if (!t.starts_with("prog=")) continue;
    std::string name(strings::trim(t.substr(5)));
    if (!is_compiler_file_name(name) || std::find(out.begin(), out.end(), name) != out.end()) continue;
    out.push_back(name);
  }
  return out;
}

std::optional<ToolkitWrapper> toolkit_wrapper(probe::Machine m, const cuda::Toolkit& tk) {
  const fs::path dir = tk.real_nvcc.parent_path();
  for (const char* name : {"g++", "gcc"}) {
    const fs::path p = dir / name;
    if (!m.fs.is_executable(p)) continue;
    auto text = m.fs.read_file(p);
    if (!text) continue;
    auto candidates = parse_compiler_wrapper(*text);
    if (candidates.empty()) continue;
    ToolkitWrapper w{p, candidates, std::nullopt};
    const std::string path = settings::path(m.env);
    for (auto& c : candidates)
      if (probe::find_on_path(m.fs, c, path)) {
        w.runs = c;
        break;
      }
    return w;
  }
  return std::nullopt;
}

std::string wrapper_text(const ToolkitWrapper& w) {
  std::string list;
  for (std::size_t i = 0; i < w.candidates.size() && i < 3; ++i) list += (i ? ", " : "") + w.candidates[i];
  if (w.candidates.size() > 3) list += ", ...";
  return "its own wrapper " + w.path.string() + " runs " +
         (w.runs ? *w.runs + " (the first installed of " + list + ")"
                 : std::string("none of ") + list + " (none is installed: nvcc without -ccbin fails)");
}

bool is_compiler_file_name(std::string_view name) {
  return versioned_name(name, {"gcc", "g++", "cc", "c++", "clang", "clang++"}, /*dotted=*/true).has_value();
}

}  // namespace opforge::compiler
