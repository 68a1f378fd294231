// The run of opforge itself inside a root: which folders it gets, which variables, which argv.
#include "recipe/recipe.h"
#include "root/root.h"
#include "settings/settings.h"
#include "util/strings.h"

namespace opforge::root {
namespace {

/// The toolkit the host would use, bound read-only at its own path: CUDA_HOME, CUDA_PATH, or
/// /usr/local/cuda (its real folder) when it holds nvcc. A toolkit provisioned from PyPI lives in
/// the cache folder, which is bound anyway.
std::optional<fs::path> host_toolkit(probe::Machine m) {
  for (auto& [var, value] : settings::toolkit_roots(m.env))
    if (fs::path(value).is_absolute()) {
      if (auto c = m.fs.canonical(value)) return *c;
    }
  if (m.fs.is_executable("/usr/local/cuda/bin/nvcc"))
    if (auto c = m.fs.canonical("/usr/local/cuda")) return *c;
  return std::nullopt;
}

/// A git worktree's `.git` is a file naming its folder inside the main repository's `.git`
/// (`gitdir: /repo/.git/worktrees/name`): that repository is bound too (read-only), so that the
/// commit of the source reads the same inside.
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

bool passed_on(const std::string& name) {
  return name.starts_with("DS_") || name == "TORCH_CUDA_ARCH_LIST" || name == "MAX_JOBS" ||
         name == "SOURCE_DATE_EPOCH" || name.starts_with("CCACHE_") ||
         (name.starts_with("OPFORGE_") && name != kInRootVariable) || name == "TERM" || name == "NO_COLOR";
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
  OPFORGE_CHECK(check_tools(info, recipe.build.backend == recipe::Backend::native));
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
    if (auto repo = worktree_repository(m, *recipe.source.path)) OPFORGE_CHECK(add(*repo, Bind::Mode::ro));
  }
  for (const auto& dir : {build, dist})
    if (building || m.fs.resolved_type(dir) == probe::FileType::directory) OPFORGE_CHECK(add(dir, Bind::Mode::rw));
  OPFORGE_CHECK(add(cache, Bind::Mode::rw));
  const auto toolkit = host_toolkit(m);
  if (toolkit) OPFORGE_CHECK(add(*toolkit, Bind::Mode::ro));
  p.info.host_toolkit = toolkit;
  auto self = OPFORGE_TRY(find_self(m));
  for (auto& b : self_binds(self)) j.binds.push_back(b);

  j.env = {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
           {"HOME", "/tmp"},
           {"LANG", "C.UTF-8"},
           {"OPFORGE_CACHE_DIR", cache.string()},
           {std::string(kInRootVariable), inv.root.string()}};
  for (const auto& [k, v] : m.env.all())
    if (passed_on(k)) j.env[k] = v;
  // A root with its own toolkit chooses among both as the recipe says (an inherited CUDA_HOME
  // would pin the host's); else the host's is the one there is.
  if (toolkit && !p.info.tools.contains("nvcc")) j.env["CUDA_HOME"] = toolkit->string();

  std::vector<std::string> args = {inv.command, inv.recipe.string()};
  if (building) args.insert(args.end(), {"--build-dir", build.string(), "--dist-dir", dist.string()});
  args.insert(args.end(), inv.args.begin(), inv.args.end());
  j.argv = self_argv(self, args);
  j.cwd = recipe.source.path ? *recipe.source.path : recipe.dir;
  return p;
}

}  // namespace opforge::root
