#include "compile/command_backend.h"

#include <fnmatch.h>

#include <algorithm>
#include <regex>

#include <chrono>
#include <thread>

#include "compiler/host.h"
#include "ops/ops.h"
#include "util/hash.h"
#include "util/strings.h"
#include "wheel/wheel.h"

namespace opforge::compile {

namespace {

void append_flags(std::map<std::string, std::string>& env, const std::string& name, const std::string& flags) {
  auto& v = env[name];
  v = v.empty() ? flags : v + " " + flags;
}

std::string tail_lines(const std::string& text, std::size_t n) {
  std::size_t pos = text.size();
  if (pos && text[pos - 1] == '\n') --pos;
  for (std::size_t i = 0; i < n && pos != std::string::npos && pos > 0; ++i) pos = text.rfind('\n', pos - 1);
  return pos == std::string::npos || pos == 0 ? text : text.substr(pos + 1);
}

}  // namespace

NvccWrapper nvcc_wrapper(const fs::path& cache_dir, const fs::path& nvcc, const std::string& stamp) {
  NvccWrapper w;
  w.text =
      "#!/bin/sh\n"
      "# Written by opforge: the toolkit's nvcc without -lineinfo, whose line table records\n"
      "# each source file's modification time (the wheel's bytes would change with it).\n"
      "for a do\n"
      "  shift\n"
      "  case $a in -lineinfo|--generate-line-info) ;; *) set -- \"$@\" \"$a\" ;; esac\n"
      "done\n"
      "exec " +
      strings::shell_quote(nvcc.string()) + " \"$@\"\n";
  w.path = cache_dir / "nvcc" / sha256_hex(w.text + stamp).substr(0, 16) / "nvcc";
  return w;
}

std::optional<HostWrappers> host_wrappers(const probe::FileSystem& fs, const fs::path& cache_dir,
                                          const plan::Plan& plan) {
  if (!plan.host || cache_dir.empty()) return std::nullopt;
  const auto via = compiler::invocation(*plan.host);
  // The scripts run the compilers by absolute path: their own folder is first on PATH.
  if (!via.cc.is_absolute() || !via.cxx.is_absolute()) return std::nullopt;
  const bool clang = plan.host->compiler.family == compiler::Family::clang;
  auto script = [](const fs::path& real) {
    const std::string exe = strings::shell_quote(real.string());
    return "#!/bin/sh\n"
           "# Written by opforge: " +
           real.string() +
           " without debug information when it compiles.\n"
           "# opforge strips the wheel's libraries, so what -g adds is thrown away; -g0 comes last\n"
           "# to override any -g, and the generated code is the same either way.\n"
           "for a do\n"
           "  case $a in -c) exec " +
           exe +
           " \"$@\" -g0 ;; esac\n"
           "done\n"
           "exec " +
           exe + " \"$@\"\n";
  };
  HostWrappers w;
  std::string key;
  for (const auto& [name, real] : std::vector<std::pair<std::string, fs::path>>{
           {clang ? "clang" : "gcc", via.cc}, {clang ? "clang++" : "g++", via.cxx}, {"cc", via.cc}, {"c++", via.cxx}}) {
    w.files.emplace_back(name, script(real));
    key += name + "\n" + w.files.back().second + compiler::stamp(fs, real) + "\n";
  }
  w.dir = cache_dir / "host" / sha256_hex(key).substr(0, 16);
  w.cc = w.dir / (clang ? "cc" : "gcc");
  w.cxx = w.dir / (clang ? "c++" : "g++");
  return w;
}

Status write_host_wrappers(probe::FileSystem& fs, const HostWrappers& w) {
  for (const auto& [name, text] : w.files) OPFORGE_CHECK(compiler::write_script(fs, w.dir / name, text));
  return {};
}

Status write_nvcc_wrapper(probe::FileSystem& fs, const NvccWrapper& w) {
  return compiler::write_script(fs, w.path, w.text);
}

std::optional<NvccWrapper> default_nvcc_wrapper(probe::Machine m, const plan::Plan& plan) {
  const fs::path cache_dir = ops::default_cache_dir(m.env);
  if (!plan.cuda.chosen || cache_dir.empty()) return std::nullopt;
  return nvcc_wrapper(cache_dir, plan.cuda.chosen->nvcc, compiler::stamp(m.fs, plan.cuda.chosen->nvcc));
}

std::optional<HostWrappers> default_host_wrappers(probe::Machine m, const plan::Plan& plan) {
  return host_wrappers(m.fs, ops::default_cache_dir(m.env), plan);
}

namespace {

/// CC, CXX and nvcc's -ccbin: the plan's compilers (compiler::invocation), behind the -g0 scripts
/// when `host` is given (their folder then also goes first on PATH).
void set_compilers(std::map<std::string, std::string>& env, const plan::Plan& plan, const HostWrappers* host) {
  if (!plan.host) return;
  auto via = compiler::invocation(*plan.host);
  if (host) {
    via.cc = host->cc;
    via.cxx = host->cxx;
    via.ccbin = host->dir;
    const std::string path = env.contains("PATH") ? env["PATH"] : std::string();
    env["PATH"] = host->dir.string() + (path.empty() ? "" : ":" + path);
  }
  if ((host || !plan.exports.contains("CC")) && !via.cc.empty()) env["CC"] = via.cc.string();
  if ((host || !plan.exports.contains("CXX")) && !via.cxx.empty()) env["CXX"] = via.cxx.string();
  if (!via.ccbin.empty() && !plan.exports.contains("NVCC_PREPEND_FLAGS")) {
    std::string flags = "-ccbin " + via.ccbin.string();
    if (plan.host->allow_unsupported) flags += " -allow-unsupported-compiler";
    append_flags(env, "NVCC_PREPEND_FLAGS", flags);
  }
}

/// The flags that keep the build folder and run out of the output.
void add_reproducibility_flags(std::map<std::string, std::string>& env, const plan::Plan& plan, const fs::path& tree) {
  // One fixed seed for every file is enough: it only replaces the per-run random names gcc gives
  // to anonymous-namespace symbols.
  const std::string map = "-ffile-prefix-map=" + tree.string() + "=.";
  const std::string seed = "-frandom-seed=opforge";
  // setuptools uses CFLAGS/CXXFLAGS from the environment *instead of* Python's own: keep those first.
  const std::string python_cflags =
      plan.cuda.torch ? std::string(strings::trim(plan.cuda.torch->python_cflags)) : std::string();
  for (const char* var : {"CFLAGS", "CXXFLAGS"}) {
    std::string user = env.contains(var) ? env[var] : std::string();
    env[var] = python_cflags;
    if (!user.empty()) append_flags(env, var, user);
    append_flags(env, var, map + " " + seed);
  }
  append_flags(env, "LDFLAGS", "-Wl,--build-id=none");
  append_flags(env, "NVCC_APPEND_FLAGS", "-Xcompiler=" + map + " -Xcompiler=" + seed);
  env["SOURCE_DATE_EPOCH"] = std::to_string(plan.source_date_epoch);
  env["PYTHONHASHSEED"] = "0";
}

/// [build] cache: torch's BuildExtension puts ccache in front of the host compiler and nvcc when
/// ccache is on PATH and TORCH_NO_COMPILER_WRAPPER is unset.
void set_compiler_cache(std::map<std::string, std::string>& env, const plan::Plan& plan, const fs::path& tree) {
  if (plan.recipe.build.cache != recipe::Cache::ccache) {
    env["TORCH_NO_COMPILER_WRAPPER"] = "1";  // every compile runs for real
    return;
  }
  // The scratch tree's path is the same for the same content, so hits need no base_dir trick; the
  // prefix map only rewrites paths it makes identical anyway, so ccache leaves it out of the hash.
  env.erase("TORCH_NO_COMPILER_WRAPPER");
  env["CCACHE_BASEDIR"] = tree.string();
  env["CCACHE_NOHASHDIR"] = "1";
  env["CCACHE_IGNOREOPTIONS"] = "-ffile-prefix-map=* -Xcompiler=-ffile-prefix-map=*";
  // A miss then costs the compile alone: ccache reads the headers from the compiler's -MMD file
  // instead of running the preprocessor first (about 4% of a torch extension's compile here;
  // nvcc, which ccache cannot use it for, keeps the preprocessor mode).
  env["CCACHE_DEPEND"] = "1";
  if (!plan.recipe.build.remote.empty()) env["CCACHE_REMOTE_STORAGE"] = plan.recipe.build.remote;
}

}  // namespace

std::map<std::string, std::string> command_environment(const std::map<std::string, std::string>& base,
                                                       const plan::Plan& plan, const fs::path& tree_in,
                                                       const fs::path& nvcc_wrapper, const HostWrappers* host) {
  const fs::path tree = tree_in.empty() ? plan.source.root : tree_in;
  std::map<std::string, std::string> env = base;
  for (const auto& [k, v] : plan.exports) env[k] = v;
  set_compilers(env, plan, host);
  add_reproducibility_flags(env, plan, tree);
  const bool ccache = plan.recipe.build.cache == recipe::Cache::ccache;
  if (plan.cuda.chosen && !nvcc_wrapper.empty() && !env.contains("PYTORCH_NVCC"))
    env["PYTORCH_NVCC"] = (ccache ? "ccache " : "") + nvcc_wrapper.string();
  if (!env.contains("MAX_JOBS")) env["MAX_JOBS"] = std::to_string(std::max(1u, plan.jobs));
  set_compiler_cache(env, plan, tree);
  return env;
}

std::map<std::string, std::string> command_exports(const std::map<std::string, std::string>& base,
                                                   const plan::Plan& plan, const fs::path& tree,
                                                   const fs::path& nvcc_wrapper, const HostWrappers* host) {
  std::map<std::string, std::string> out;
  for (auto& [k, v] : command_environment(base, plan, tree, nvcc_wrapper, host)) {
    auto it = base.find(k);
    if (it == base.end() || it->second != v || plan.exports.contains(k)) out[k] = v;
  }
  return out;
}

std::map<std::string, std::string> planned_exports(probe::Machine m, const plan::Plan& plan, const fs::path& tree) {
  auto nvcc = default_nvcc_wrapper(m, plan);
  auto host = default_host_wrappers(m, plan);
  return command_exports(m.env.all(), plan, tree, nvcc ? nvcc->path : fs::path(), host ? &*host : nullptr);
}

Status write_planned_wrappers(probe::Machine m, const plan::Plan& plan) {
  if (auto nvcc = default_nvcc_wrapper(m, plan)) OPFORGE_CHECK(write_nvcc_wrapper(m.fs, *nvcc));
  if (auto host = default_host_wrappers(m, plan)) OPFORGE_CHECK(write_host_wrappers(m.fs, *host));
  return {};
}

namespace {

struct TreeEntry {
  fs::path rel;
  probe::FileType type;
  std::string content;  ///< file bytes, or the symlink's target
  unsigned mode = 0644;
};

bool skipped(const fs::path& rel) {
  const std::string name = rel.filename().string();
  if (name == ".git" || name == "__pycache__") return true;
  const bool top = !rel.has_parent_path() || rel.parent_path().empty();
  return top && (name == "build" || name == "dist");
}

Status collect_tree(probe::Machine m, const fs::path& root, const fs::path& rel, std::vector<TreeEntry>& out) {
  auto names = m.fs.list_directory(root / rel);
  if (!names) return opforge::unexpected(names.error());
  for (auto& n : *names) {
    fs::path r = rel.empty() ? fs::path(n) : rel / n;
    if (skipped(r)) continue;
    fs::path p = root / r;
    auto type = m.fs.type_of(p);
    if (type == probe::FileType::symlink) {
      auto target = OPFORGE_TRY(m.fs.read_symlink(p));
      // A link that stays inside the tree is kept as a link (DeepSpeed's deepspeed/ops/op_builder
      // -> ../../op_builder); any other is copied as what it points to.
      auto inside = (r.parent_path() / target).lexically_normal();
      if (!target.is_absolute() && !inside.empty() && *inside.begin() != "..") {
        out.push_back({r, type, target.string(), 0777});
        continue;
      }
      type = m.fs.resolved_type(p);
    }
    if (type == probe::FileType::directory) {
      out.push_back({r, type, "", 0755});
      OPFORGE_CHECK(collect_tree(m, root, r, out));
    } else if (type == probe::FileType::regular) {
      out.push_back({r, type, OPFORGE_TRY(m.fs.read_file(p)), m.fs.is_executable(p) ? 0755u : 0644u});
    }
  }
  return {};
}

}  // namespace

Result<ScratchTree> make_scratch_tree(probe::Machine m, const fs::path& source, const fs::path& cache_dir,
                                      const std::function<void(std::string_view)>& on_wait) {
  if (cache_dir.empty()) return bad_input("no cache folder for the build tree", "set OPFORGE_CACHE_DIR (or HOME)");
  std::vector<TreeEntry> entries;
  if (auto st = collect_tree(m, source, {}, entries); !st)
    return failure("cannot read the source tree " + source.string() + ": " + st.error().message);
  std::string digest;
  for (auto& e : entries)
    digest += e.rel.string() + "\n" + std::to_string(static_cast<int>(e.type)) + " " + std::to_string(e.mode) + " " +
              sha256_hex(e.content) + "\n";
  ScratchTree out;
  out.content_hash = sha256_hex(digest);
  const fs::path trees = cache_dir / "trees";
  out.root = trees / out.content_hash.substr(0, 16);
  OPFORGE_CHECK(m.fs.create_directories(trees));
  const fs::path lock_file = trees / (out.content_hash.substr(0, 16) + ".lock");
  for (int waited = 0;; ++waited) {
    auto lock = m.fs.try_lock(lock_file);
    if (lock) {
      out.lock = *lock;
      break;
    }
    if (waited == 0 && on_wait) on_wait("waiting for another build of the same tree (" + lock_file.string() + ")");
    if (waited > 4 * 3600)
      return failure("another build has held " + lock_file.string() + " for over 4 hours",
                     "remove the lock file if no build is running");
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  OPFORGE_CHECK(m.fs.remove_all(out.root));
  OPFORGE_CHECK(m.fs.create_directories(out.root));
  for (auto& e : entries) {
    fs::path dst = out.root / e.rel;
    if (e.type == probe::FileType::directory) OPFORGE_CHECK(m.fs.create_directories(dst));
    else if (e.type == probe::FileType::symlink) OPFORGE_CHECK(m.fs.create_symlink(e.content, dst));
    else OPFORGE_CHECK(m.fs.write_file_atomic(dst, e.content, e.mode));
  }
  return out;
}

std::string torch_requirement(const std::string& v) {
  auto parts = strings::split(v, '.');
  if (parts.size() < 2 || parts[0].empty() || parts[1].empty()) return "";
  auto digits = [](std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (!digits(parts[0]) || !digits(parts[1])) return "";
  return "torch==" + std::string(parts[0]) + "." + std::string(parts[1]) + ".*";
}

Result<std::vector<fs::path>> match_glob(const probe::FileSystem& fs, const fs::path& root, const std::string& glob) {
  fs::path pattern(glob);
  fs::path folder = pattern.parent_path();
  std::string name = pattern.filename().string();
  if (name.empty() || folder.string().find_first_of("*?[") != std::string::npos)
    return bad_input("[build] wheel_glob = \"" + glob + "\": only the file name may hold wildcards",
                     "e.g. wheel_glob = \"dist/*.whl\"");
  fs::path dir = folder.is_absolute() ? folder : root / folder;
  std::vector<fs::path> out;
  if (fs.resolved_type(dir) != probe::FileType::directory) return out;
  auto names = OPFORGE_TRY(fs.list_directory(dir));
  for (const auto& n : names)
    if (::fnmatch(name.c_str(), n.c_str(), 0) == 0) out.push_back(dir / n);
  return out;
}

Result<std::vector<std::string>> differing_entries(std::string_view wheel_a, std::string_view wheel_b) {
  auto a = OPFORGE_TRY(wheel::read_archive(wheel_a));
  auto b = OPFORGE_TRY(wheel::read_archive(wheel_b));
  std::map<std::string, const wheel::Entry*> in_b;
  for (const auto& e : b) in_b[e.path] = &e;
  std::vector<std::string> out;
  for (const auto& e : a) {
    auto it = in_b.find(e.path);
    if (it == in_b.end() || it->second->content != e.content || it->second->mode != e.mode) out.push_back(e.path);
    if (it != in_b.end()) in_b.erase(it);
  }
  for (const auto& [path, _] : in_b) out.push_back(path);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

// deepspeed/git_version_info_installed.py is Python written by DeepSpeed's setup.py:
// version='0.19.8+...' and installed_ops={'cpu_adam': 1, 'utils': False, ...}.
std::string set_ds_version(const std::string& text, const std::string& version) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto nl = text.find('\n', start);
    std::size_t end = nl == std::string::npos ? text.size() : nl + 1;
    std::string line = text.substr(start, end - start);
    if (line.starts_with("version=")) line = "version='" + version + "'" + (nl == std::string::npos ? "" : "\n");
    out += line;
    start = end;
  }
  return out;
}

std::vector<std::string> ds_installed_ops(const std::string& text) {
  std::vector<std::string> out;
  for (auto& line : strings::split(text, '\n')) {
    if (!line.starts_with("installed_ops=")) continue;
    static const std::regex entry(R"(['"]([A-Za-z0-9_]+)['"]\s*:\s*(True|1))");
    std::string rest(line);
    for (std::sregex_iterator it(rest.begin(), rest.end(), entry), end; it != end; ++it) out.push_back((*it)[1].str());
  }
  std::sort(out.begin(), out.end());
  return out;
}

constexpr const char* kDsVersionFile = "deepspeed/git_version_info_installed.py";

}  // namespace

namespace {

/// Removes the scratch tree when the build is done with it, unless `keep` (a failed command's tree
/// stays for inspection until the next build of the same content).
struct ScratchCleanup {
  probe::FileSystem& fs;
  fs::path root;
  bool keep = false;
  ~ScratchCleanup() {
    if (!keep) (void)fs.remove_all(root);
  }
};

/// The nvcc wrapper a plan with a toolkit compiles through (written); empty without a toolkit.
Result<fs::path> prepare_nvcc_wrapper(probe::FileSystem& fs, const plan::Plan& plan, const fs::path& cache_dir) {
  if (!plan.cuda.chosen) return fs::path();
  auto w = nvcc_wrapper(cache_dir, plan.cuda.chosen->nvcc, compiler::stamp(fs, plan.cuda.chosen->nvcc));
  OPFORGE_CHECK(write_nvcc_wrapper(fs, w));
  return w.path;
}

/// Runs [build] command in `out.tree` with `out.env`, its output into out.log; a command that ran
/// and failed sets `keep_tree`.
Status run_command(probe::Machine m, const plan::Plan& plan, CommandOutput& out, bool& keep_tree,
                   const std::function<void(std::string_view)>& on_line) {
  const auto& command = plan.recipe.build.command;
  probe::Command cmd;
  cmd.argv = command;
  cmd.cwd = out.tree;
  cmd.env = out.env;
  cmd.output = probe::Output::lines;
  cmd.on_line = [&](std::string_view line) {
    if (on_line) on_line(line);
  };
  auto result = m.proc.run(cmd);
  if (!result)
    return failure("cannot start the build command " + command.front() + ": " + result.error().message,
                   "check [build] command and that its program is on PATH");
  OPFORGE_CHECK(m.fs.write_file_atomic(out.log, result->out));
  if (result->ok()) return {};
  keep_tree = true;
  std::string how =
      result->exit_code >= 0 ? "exit " + std::to_string(result->exit_code) : "signal " + std::to_string(result->signal);
  return failure("the build command failed (" + how + ") in " + out.tree.string() + "; its last lines:\n" +
                     tail_lines(result->out, 25),
                 "full log: " + out.log.string());
}

/// The one file matching [build] wheel_glob in the tree the command ran in.
Result<fs::path> made_wheel(const probe::FileSystem& fs, const fs::path& tree, const std::string& glob,
                            const fs::path& log) {
  auto fresh = OPFORGE_TRY(match_glob(fs, tree, glob));
  if (fresh.empty())
    return failure("the build command succeeded but made no file matching \"" + glob + "\"",
                   "set [build] wheel_glob to where the command writes its wheel; log: " + log.string());
  if (fresh.size() > 1) {
    std::string names;
    for (const auto& p : fresh) names += "\n  " + p.filename().string();
    return failure("the build command made several wheels matching \"" + glob + "\":" + names,
                   "narrow [build] wheel_glob to one of them");
  }
  return fresh.front();
}

/// How the command's wheel is re-packed: the plan's epoch and version, torch pinned for a DeepSpeed
/// tree, and DeepSpeed's installed-ops file read (into `installed`) and given the wheel's version.
wheel::NormalizeOptions normalize_options(const plan::Plan& plan, std::vector<std::string>& installed) {
  wheel::NormalizeOptions opts;
  opts.source_date_epoch = plan.source_date_epoch;
  if (!plan.wheel_version.empty()) opts.version = plan.wheel_version;
  if (plan.cuda.torch && plan.cuda.torch->torch_version)
    if (auto req = torch_requirement(*plan.cuda.torch->torch_version);
        !req.empty() && plan.source.catalogue == "op_builder")
      opts.requires_dist.push_back(req);
  for (auto& req : plan.requires_dist)
    if (std::find(opts.requires_dist.begin(), opts.requires_dist.end(), req) == opts.requires_dist.end())
      opts.requires_dist.push_back(req);
  const std::string version = plan.wheel_version;
  opts.rewrite = [&installed, version](const std::string& path,
                                       const std::string& content) -> std::optional<std::string> {
    if (path != kDsVersionFile) return std::nullopt;
    installed = ds_installed_ops(content);
    return version.empty() ? std::nullopt : std::optional<std::string>(set_ds_version(content, version));
  };
  return opts;
}

}  // namespace

Result<CommandOutput> run_command_backend(probe::Machine m, const plan::Plan& plan,
                                          const std::function<void(std::string_view)>& on_line,
                                          const fs::path& cache_dir_in) {
  if (plan.recipe.build.command.empty())
    return bad_input("[build] backend = \"command\" needs a command",
                     "e.g. command = [\"python3\", \"setup.py\", \"bdist_wheel\"]");
  CommandOutput out;
  out.log = plan.build_dir / "command.log";
  OPFORGE_CHECK(m.fs.create_directories(plan.build_dir));
  // A fresh copy at a content-addressed path: never the source cache, never a stale build/.
  const fs::path cache_dir = cache_dir_in.empty() ? ops::default_cache_dir(m.env) : cache_dir_in;
  auto tree = OPFORGE_TRY(make_scratch_tree(m, plan.source.root, cache_dir, on_line));
  out.tree = tree.root;
  out.tree_hash = tree.content_hash;
  ScratchCleanup scratch{m.fs, tree.root};
  if (plan.host) OPFORGE_CHECK(compiler::check_shim(m.fs, *plan.host));
  const fs::path wrapper = OPFORGE_TRY(prepare_nvcc_wrapper(m.fs, plan, cache_dir));
  auto host = host_wrappers(m.fs, cache_dir, plan);
  if (host) OPFORGE_CHECK(write_host_wrappers(m.fs, *host));
  out.env = command_environment(m.env.all(), plan, tree.root, wrapper, host ? &*host : nullptr);
  OPFORGE_CHECK(run_command(m, plan, out, scratch.keep, on_line));
  out.raw_wheel = OPFORGE_TRY(made_wheel(m.fs, tree.root, plan.recipe.build.wheel_glob, out.log));
  std::vector<std::string> installed;
  auto written = OPFORGE_TRY(wheel::normalize(m, out.raw_wheel, plan.dist_dir, normalize_options(plan, installed)));
  out.wheel = written.path;
  out.installed_ops = installed;
  return out;
}

}  // namespace opforge::compile
