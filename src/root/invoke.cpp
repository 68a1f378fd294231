// The run of opforge itself inside a root: which folders it gets, which variables, which argv.
#include <cctype>

#include "recipe/recipe.h"
#include "root/root.h"
#include "settings/child_env.h"
#include "settings/settings.h"
#include "util/strings.h"

namespace opforge::root {
namespace {

/// The toolkits the host would use, bound read-only at their own paths: CUDA_HOME and CUDA_PATH
/// (passed in as they are, so they name the same folder inside), else /usr/local/cuda (its real
/// folder, where the search inside finds it) when it holds nvcc. A toolkit provisioned from PyPI
/// lives in the cache folder, which is bound anyway. A relative CUDA_HOME would name another
/// folder inside: refused by name.
Result<std::vector<fs::path>> host_toolkits(probe::Machine m) {
  std::vector<fs::path> out;
  for (auto& [var, value] : settings::toolkit_roots(m.env)) {
    if (!fs::path(value).is_absolute())
      return bad_input(
          var + "=" + strings::cut(value, 200) + " is relative: inside the root it would name another folder",
          "give " + var + " as an absolute path, or unset it");
    // The folder itself, at the path the variable names (a symlink's target is bound too).
    out.push_back(fs::path(value).lexically_normal());
    if (auto c = m.fs.canonical(value); c && *c != out.back()) out.push_back(*c);
  }
  if (out.empty() && m.fs.is_executable("/usr/local/cuda/bin/nvcc"))
    if (auto c = m.fs.canonical("/usr/local/cuda")) out.push_back(*c);
  return out;
}

/// The absolute paths a flag variable's words name: `/x`, `-I/x`, `-isystem/x`, `--opt=/x`,
/// `-Wl,-rpath,/x`.
std::vector<fs::path> named_paths(std::string_view value) {
  std::vector<fs::path> out;
  for (auto& word : strings::split(std::string(value), ' ')) {
    std::string w(strings::trim(word));
    if (w.empty()) continue;
    std::size_t at = std::string::npos;
    if (w.front() == '/') at = 0;
    else if (auto eq = w.find("=/"); eq != std::string::npos) at = eq + 1;
    else if (auto comma = w.rfind(",/"); comma != std::string::npos) at = comma + 1;
    else if (w.front() == '-') {
      // -I/x, -L/x, -isystem/x: letters, then the path.
      std::size_t i = 1;
      while (i < w.size() && std::isalpha(static_cast<unsigned char>(w[i]))) ++i;
      if (i < w.size() && w[i] == '/') at = i;
    }
    if (at != std::string::npos) out.emplace_back(w.substr(at));
  }
  return out;
}

/// A variable that changes the wheel and names a folder the build inside cannot see (neither in
/// the root nor bound into it) cannot be honoured there: refused by name, never dropped.
Status check_honoured(probe::Machine m, const Jail& j) {
  for (const auto& [name, value] : j.env) {
    if (!settings::changes_wheel(name)) continue;
    for (const auto& p : named_paths(value)) {
      const fs::path path = p.lexically_normal();
      bool bound = false;
      for (const auto& b : j.binds) {
        auto rel = path.lexically_relative(b.inside);
        if (!rel.empty() && *rel.begin() != "..") bound = true;
      }
      if (bound || m.fs.type_of(j.root / path.relative_path()) != probe::FileType::none) continue;
      return bad_input(name + " names " + path.string() + ", which the build inside the root " + j.root.string() +
                           " cannot see (it is not in the root, and opforge binds in only the recipe's, source's, "
                           "build, dist, cache and toolkit folders)",
                       "install what " + path.string() + " holds inside the root (its own path there), or unset " +
                           name + " for this build");
    }
  }
  return {};
}

/// A git worktree's `.git` is a file naming its folder inside the main repository's `.git`
/// (`gitdir: /repo/.git/worktrees/name`): that repository is bound too (read-only), so that the
/// commit of the source reads the same inside.
/// The top of the git work tree `source` is in (the nearest folder holding `.git`); `source` itself
/// when none holds one.
fs::path work_tree_top(probe::Machine m, const fs::path& source) {
  for (fs::path d = source; !d.empty(); d = d.parent_path()) {
    if (m.fs.type_of(d / ".git") != probe::FileType::none) return d;
    if (d == d.root_path()) break;
  }
  return source;
}

std::optional<fs::path> worktree_repository(probe::Machine m, const fs::path& source) {
  if (m.fs.type_of(source / ".git") != probe::FileType::regular) return std::nullopt;
  auto text = m.fs.read_file(source / ".git");
  if (!text || !text->starts_with("gitdir: ")) return std::nullopt;
  fs::path gitdir(std::string(strings::trim(text->substr(8))));
  if (gitdir.is_relative()) gitdir = source / gitdir;
  gitdir = gitdir.lexically_normal();
  if (gitdir.parent_path().filename() == "worktrees") return gitdir.parent_path().parent_path();
  return gitdir;
}

}  // namespace

std::string describe_line(const Info& info) {
  std::string s = "root: " + info.root.string() + " (" + (info.os.empty() ? "unknown system" : info.os) + ")";
  s += ", glibc " + (info.glibc.empty() ? std::string("unknown") : info.glibc);
  if (info.tools.contains("gcc")) s += ", gcc " + info.gcc_version;
  if (info.tools.contains("python3"))
    s += ", Python " + info.python_version +
         " (headers: " + (info.python_include.empty() ? std::string("none, no python3-dev") : info.python_include) +
         ")";
  if (info.tools.contains("ninja")) s += ", ninja";
  if (auto it = info.tools.find("nvcc"); it != info.tools.end())
    s += ", its own nvcc " + it->second +
         (info.host_toolkit ? " (and this machine's " + info.host_toolkit->string() + ", read-only)" : "");
  else if (info.host_toolkit) s += ", CUDA: this machine's " + info.host_toolkit->string() + " (read-only)";
  s += "; through " + std::string(sandbox_name(info.sandbox));
  return s;
}

Result<Prepared> prepare(probe::Machine m, const Invocation& inv) {
  const fs::path cache = settings::cache_dir(m.env);
  if (cache.empty())
    return bad_input("no cache folder for the build inside the root (HOME and XDG_CACHE_HOME are unset)",
                     "set OPFORGE_CACHE_DIR");
  auto info = OPFORGE_TRY(describe(m, inv.root, cache / "root-scratch"));
  auto recipe = OPFORGE_TRY(recipe::load(m, inv.recipe));
  OPFORGE_CHECK(check_tools(info, !recipe::project_build(recipe)));
  auto sandbox = OPFORGE_TRY(choose_sandbox(m));
  const fs::path build = inv.build_dir.value_or((recipe.dir / recipe.build.build_dir).lexically_normal());
  const fs::path dist = inv.dist_dir.value_or((recipe.dir / recipe.build.dist_dir).lexically_normal());
  // `plan` writes nothing but the probe cache: it sees the build and dist folders only when they are there.
  const bool building = inv.command == "build";
  if (building)
    for (const auto& dir : {build, dist}) OPFORGE_CHECK(m.fs.create_directories(dir));
  OPFORGE_CHECK(m.fs.create_directories(cache));

  Prepared p{info, sandbox, {}};
  Jail& j = p.jail;
  j.root = inv.root;
  j.scratch = cache / "root-scratch";
  auto add = [&](const fs::path& host, Bind::Mode mode) -> Status {
    const fs::path abs = m.fs.absolute(host).lexically_normal();
    // A folder above the root is fine (roots often live in the cache folder); `/` itself is not.
    if (abs == abs.root_path())
      return bad_input("the build inside the root " + inv.root.string() + " would need the whole of / bound in",
                       "keep the recipe, its source and its build, dist and cache folders below /");
    for (auto& b : j.binds)
      if (b.inside == abs) {
        if (mode == Bind::Mode::rw) b.mode = mode;
        return {};
      }
    j.binds.push_back({abs, abs, mode});
    return {};
  };
  OPFORGE_CHECK(add(recipe.dir, Bind::Mode::ro));
  if (recipe.source.path) {
    OPFORGE_CHECK(add(*recipe.source.path, Bind::Mode::rw));
    // A source below the top of a git work tree: the whole work tree, read-only, so that its
    // commit, its time (the wheel's SOURCE_DATE_EPOCH) and whether it is dirty read the same inside.
    const fs::path top = work_tree_top(m, m.fs.absolute(*recipe.source.path).lexically_normal());
    if (top != m.fs.absolute(*recipe.source.path).lexically_normal() && top != top.root_path())
      OPFORGE_CHECK(add(top, Bind::Mode::ro));
    if (auto repo = worktree_repository(m, top)) OPFORGE_CHECK(add(*repo, Bind::Mode::ro));
  }
  for (const auto& dir : {build, dist})
    if (building || m.fs.resolved_type(dir) == probe::FileType::directory) OPFORGE_CHECK(add(dir, Bind::Mode::rw));
  OPFORGE_CHECK(add(cache, Bind::Mode::rw));
  const auto toolkits = OPFORGE_TRY(host_toolkits(m));
  for (auto& t : toolkits)
    if (m.fs.resolved_type(t) == probe::FileType::directory) OPFORGE_CHECK(add(t, Bind::Mode::ro));
  if (!toolkits.empty()) p.info.host_toolkit = toolkits.back();
  auto self = OPFORGE_TRY(find_self(m));
  for (auto& b : self_binds(self)) j.binds.push_back(b);

  j.env = {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
           {"HOME", "/tmp"},
           {"LANG", "C.UTF-8"},
           {"OPFORGE_CACHE_DIR", cache.string()},
           {std::string(kInRootVariable), inv.root.string()}};
  // What the settings table says passes (every variable that changes the wheel, a project's own
  // switches, the scheduler's token: the opforge inside reads it); the rest names the host's own
  // state, or opforge sets it above.
  for (const auto& [k, v] : settings::ChildEnv(m.env, settings::Child::opforge).vars())
    if (settings::inside_root(k) == settings::Inside::passed) j.env[k] = v;
  OPFORGE_CHECK(check_honoured(m, j));

  std::vector<std::string> args = {inv.command, inv.recipe.string()};
  if (building) args.insert(args.end(), {"--build-dir", build.string(), "--dist-dir", dist.string()});
  args.insert(args.end(), inv.args.begin(), inv.args.end());
  j.argv = self_argv(self, args);
  j.cwd = recipe.source.path ? *recipe.source.path : recipe.dir;
  return p;
}

}  // namespace opforge::root
