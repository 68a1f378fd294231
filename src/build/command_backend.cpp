#include "build/command_backend.h"

#include <fnmatch.h>

#include <algorithm>

#include "compiler/resolve.h"
#include "wheel/wheel.h"

namespace opforge::build {

namespace {

void append_flags(std::map<std::string, std::string>& env, const std::string& name,
                  const std::string& flags) {
  auto& v = env[name];
  v = v.empty() ? flags : v + " " + flags;
}

std::string tail_lines(const std::string& text, std::size_t n) {
  std::size_t pos = text.size();
  if (pos && text[pos - 1] == '\n') --pos;
  for (std::size_t i = 0; i < n && pos != std::string::npos && pos > 0; ++i)
    pos = text.rfind('\n', pos - 1);
  return pos == std::string::npos || pos == 0 ? text : text.substr(pos + 1);
}

}  // namespace

std::map<std::string, std::string> command_environment(const std::map<std::string, std::string>& base,
                                                       const plan::Plan& plan) {
  std::map<std::string, std::string> env = base;
  for (const auto& [k, v] : plan.exports) env[k] = v;

  if (plan.host) {
    const auto& c = plan.host->compiler;
    fs::path cc = plan.host->shim_dir ? *plan.host->shim_dir / c.cc.filename() : c.cc;
    fs::path cxx = plan.host->shim_dir ? *plan.host->shim_dir / c.cxx.filename() : c.cxx;
    if (!plan.exports.contains("CC") && !cc.empty()) env["CC"] = cc.string();
    if (!plan.exports.contains("CXX") && !cxx.empty()) env["CXX"] = cxx.string();
    std::string ccbin = plan.host->shim_dir ? plan.host->shim_dir->string() : cxx.string();
    if (!ccbin.empty() && !plan.exports.contains("NVCC_PREPEND_FLAGS")) {
      std::string flags = "-ccbin " + ccbin;
      if (plan.host->allow_unsupported) flags += " -allow-unsupported-compiler";
      append_flags(env, "NVCC_PREPEND_FLAGS", flags);
    }
  }

  // One fixed seed for every file is enough: it only replaces the per-run random names gcc gives
  // to anonymous-namespace symbols.
  const std::string src = plan.source.root.string();
  const std::string map = "-ffile-prefix-map=" + src + "=.";
  const std::string seed = "-frandom-seed=opforge";
  append_flags(env, "CFLAGS", map + " " + seed);
  append_flags(env, "CXXFLAGS", map + " " + seed);
  append_flags(env, "LDFLAGS", "-Wl,--build-id=none");
  append_flags(env, "NVCC_APPEND_FLAGS", "-Xcompiler=" + map + " -Xcompiler=" + seed);
  env["SOURCE_DATE_EPOCH"] = std::to_string(plan.source_date_epoch);
  if (!env.contains("MAX_JOBS")) env["MAX_JOBS"] = std::to_string(std::max(1u, plan.jobs));
  env["PYTHONHASHSEED"] = "0";
  return env;
}

Result<std::vector<fs::path>> match_glob(const probe::FileSystem& fs, const fs::path& root,
                                         const std::string& glob) {
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
    if (it == in_b.end() || it->second->content != e.content || it->second->mode != e.mode)
      out.push_back(e.path);
    if (it != in_b.end()) in_b.erase(it);
  }
  for (const auto& [path, _] : in_b) out.push_back(path);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Result<CommandOutput> run_command_backend(probe::Machine m, const plan::Plan& plan,
                                          const std::function<void(std::string_view)>& on_line) {
  const auto& b = plan.recipe.build;
  if (b.command.empty())
    return bad_input("[build] backend = \"command\" needs a command",
                     "e.g. command = [\"python3\", \"setup.py\", \"bdist_wheel\"]");
  CommandOutput out;
  out.log = plan.build_dir / "command.log";
  OPFORGE_CHECK(m.fs.create_directories(plan.build_dir));

  // Remember what matched before, so a stale wheel from an earlier run is never taken.
  std::map<fs::path, std::optional<probe::FileStamp>> before;
  for (const auto& p : OPFORGE_TRY(match_glob(m.fs, plan.source.root, b.wheel_glob)))
    before[p] = m.fs.stamp(p);

  if (plan.host && plan.host->shim_dir) OPFORGE_CHECK(compiler::create_shim(m.fs, *plan.host));
  out.env = command_environment(m.env.all(), plan);
  probe::Command cmd;
  cmd.argv = b.command;
  cmd.cwd = plan.source.root;
  cmd.env = out.env;
  cmd.output = probe::Output::lines;
  cmd.on_line = [&](std::string_view line) { if (on_line) on_line(line); };
  auto result = m.proc.run(cmd);
  if (!result)
    return failure("cannot start the build command " + b.command.front() + ": " + result.error().message,
                   "check [build] command and that its program is on PATH");
  OPFORGE_CHECK(m.fs.write_file_atomic(out.log, result->out));
  if (!result->ok()) {
    std::string how = result->exit_code >= 0 ? "exit " + std::to_string(result->exit_code)
                                             : "signal " + std::to_string(result->signal);
    return failure("the build command failed (" + how + "); its last lines:\n" + tail_lines(result->out, 25),
                   "full log: " + out.log.string());
  }

  std::vector<fs::path> fresh;
  auto after = OPFORGE_TRY(match_glob(m.fs, plan.source.root, b.wheel_glob));
  for (const auto& p : after) {
    auto it = before.find(p);
    if (it == before.end() || it->second != m.fs.stamp(p)) fresh.push_back(p);
  }
  if (fresh.empty())
    return failure("the build command succeeded but made no new file matching \"" + b.wheel_glob +
                       "\" in " + plan.source.root.string(),
                   "set [build] wheel_glob to where the command writes its wheel; log: " + out.log.string());
  if (fresh.size() > 1) {
    std::string names;
    for (const auto& p : fresh) names += "\n  " + p.string();
    return failure("the build command made several wheels matching \"" + b.wheel_glob + "\":" + names,
                   "narrow [build] wheel_glob to one of them");
  }
  out.raw_wheel = fresh.front();

  wheel::NormalizeOptions opts;
  opts.source_date_epoch = plan.source_date_epoch;
  if (!plan.wheel_version.empty()) opts.version = plan.wheel_version;
  auto written = OPFORGE_TRY(wheel::normalize(m, out.raw_wheel, plan.dist_dir, opts));
  out.wheel = written.path;
  return out;
}

}  // namespace opforge::build
