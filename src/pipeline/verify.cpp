#include "pipeline/verify.h"

#include "pipeline/kinds.h"
#include "pipeline/pipeline.h"
#include "probe/overlay_environment.h"
#include "recipe/recipe.h"
#include "root/root.h"
#include "settings/settings.h"
#include "source/source.h"
#include "util/hash.h"
#include "util/json_read.h"
#include "util/strings.h"

namespace opforge::pipeline {
namespace fs = std::filesystem;
namespace {

/// Recipes are small; this keeps a record from pointing verify at something endless.
constexpr std::uint64_t kMaxRecipeBytes = 16 * 1024 * 1024;

/// The root a record was built in, checked: there, and still what the record names.
Result<std::optional<fs::path>> recorded_root(probe::Machine m, const std::string& path, const record::Record& rec,
                                              const std::optional<fs::path>& root_override,
                                              std::vector<std::string>& description) {
  auto it = rec.inputs.find("root");
  if (it == rec.inputs.end() || !it->is_object()) {
    if (root_override)
      return bad_input(
          path + ": --root " + root_override->string() + ", but the record was built on the host, not in a root",
          "leave --root out: the rebuild runs here, as the build did");
    return std::optional<fs::path>();
  }
  const std::string recorded = util::json_read::text(*it, "path").value_or("");
  const std::string what = util::json_read::text(*it, "os").value_or("unknown system") + ", glibc " +
                           util::json_read::text(*it, "glibc").value_or("unknown");
  const fs::path dir = root_override ? m.fs.absolute(*root_override).lexically_normal() : fs::path(recorded);
  if (dir.empty() || m.fs.resolved_type(dir) != probe::FileType::directory)
    return bad_input(path + ": the record was built inside the root " + recorded + " (" + what + "), and " +
                         (dir.empty() ? std::string("it names no folder") : dir.string() + " is not there"),
                     "pass --root DIR naming that root where it is now (the same distribution, glibc and gcc); "
                     "the rebuild runs inside it, as the build did");
  const fs::path cache = settings::cache_dir(m.env);
  auto info = OPFORGE_TRY(root::describe(m, dir, cache.empty() ? dir / ".opforge-scratch" : cache / "root-scratch"));
  if (auto changes = root::identity_changes(*it, info); !changes.empty())
    return bad_input(path + ": the root " + dir.string() +
                         " is not the one the record was built in: " + strings::join(changes, "; "),
                     "pass --root DIR naming a root like the record's (" + what + ")");
  description.push_back("root    " + dir.string() + " (" + what + ", as in the record): the rebuild runs inside it");
  return std::optional<fs::path>(dir);
}

}  // namespace

Result<RebuildCheck> check_record(probe::Machine m, const std::string& path, const record::Record& rec,
                                  const std::optional<fs::path>& root_override) {
  if (rec.recipe_path.empty()) return bad_input(path + ": the record names no recipe (inputs.recipe.path)");
  if (rec.recipe_sha256.empty()) return bad_input(path + ": the record holds no recipe hash (inputs.recipe.sha256)");
  RebuildCheck out;
  out.recipe = rec.recipe_path;
  auto text = m.fs.read_file(rec.recipe_path, kMaxRecipeBytes);
  if (!text)
    return bad_input(path + ": the recipe the record names cannot be read: " + text.error().message,
                     "verify rebuilds from the recipe the record names; restore it there");
  auto sha = sha256_hex(*text);
  if (sha != rec.recipe_sha256)
    return bad_input(path + ": the recipe " + rec.recipe_path + " has changed since the record was written (sha256 " +
                         sha + ", the record holds " + rec.recipe_sha256 + ")",
                     "verify rebuilds from the recipe as recorded; restore that version of it");
  auto r = OPFORGE_TRY(recipe::parse_file(rec.recipe_path, *text));
  out.description.push_back("recipe  " + rec.recipe_path + " (sha256 matches the record)");

  if (r.source.sdist) {
    out.description.push_back("source  sdist " + *r.source.sdist +
                              (r.source.sha256 ? " (sha256 " + *r.source.sha256 + ", checked when it is read)"
                                               : " (no sha256 in the recipe: its content is not checked)"));
  } else if (r.source.git) {
    out.description.push_back("source  git " + *r.source.git + " rev " + r.source.rev.value_or("HEAD") +
                              " (fetched; the rebuild refuses any commit but " +
                              (rec.source.commit.empty() ? std::string("the one it resolves to") : rec.source.commit) +
                              ")");
  } else {
    fs::path root = r.source.path.value_or(fs::path(rec.recipe_path).parent_path());
    auto info = OPFORGE_TRY(source::inspect(m.fs, root));
    if (!rec.source.commit.empty()) {
      if (!info)
        return bad_input(path + ": the record names commit " + rec.source.commit + ", but the source " + root.string() +
                         " is not a git work tree");
      if (info->commit != rec.source.commit)
        return bad_input(path + ": the source " + root.string() + " is at commit " + info->commit +
                             ", the record names " + rec.source.commit,
                         "check out " + rec.source.commit + " there, then verify again");
      if (info->dirty && !rec.source.dirty)
        return bad_input(path + ": the source " + root.string() + " has changes that commit " + rec.source.commit +
                             " does not (the record was made from a clean tree)",
                         "commit or stash them, then verify again");
      out.description.push_back(
          "source  " + root.string() + " (commit " + rec.source.commit +
          (rec.source.dirty ? ", with uncommitted changes as when recorded" : ", matches the record") + ")");
    } else {
      out.description.push_back("source  " + root.string() +
                                " (not from git: the record holds no hash of its files, so they are not checked)");
    }
  }
  out.description.push_back("runs    " + kind(r.build.backend).runs(r));
  if (r.cuda.version == "auto" || r.cuda.version == "torch")
    out.description.push_back("runs    " + r.cuda.python + "  (cuda.python, asked for torch's CUDA version)");
  if (r.compiler.host != "auto") out.description.push_back("runs    " + r.compiler.host + "  (compiler.host)");
  for (auto& [k, v] : rec.environment)
    out.description.push_back("env     " + k + "=" + strings::shell_quote(v) + "  (from the record)");
  out.root = OPFORGE_TRY(recorded_root(m, path, rec, root_override, out.description));
  return out;
}

namespace {

/// The rebuild of a record made inside a root: `opforge build` run in that root (root::prepare,
/// as `build --root` does) into `tmp`, and the record it writes there.
Result<record::Record> rebuild_in_root(probe::Machine m, const fs::path& root_dir, const std::string& recipe,
                                       const fs::path& tmp, const std::function<void(std::string_view)>& on_line) {
  root::Invocation inv;
  inv.root = root_dir;
  inv.recipe = recipe;
  inv.build_dir = tmp / "build";
  inv.dist_dir = tmp / "dist";
  auto prepared = OPFORGE_TRY(root::prepare(m, inv));
  if (on_line) on_line(root::describe_line(prepared.info));
  const int code = OPFORGE_TRY(root::run(m, prepared.sandbox, prepared.jail, [&](std::string_view line) {
    if (on_line) on_line(line);
  }));
  if (code != 0)
    return failure("the rebuild inside the root " + root_dir.string() + " failed (exit " + std::to_string(code) + ")");
  auto names = OPFORGE_TRY(m.fs.list_directory(tmp / "dist"));
  for (auto& n : names)
    if (n.ends_with(".opforge-record.json")) return record::load(m.fs, tmp / "dist" / n);
  return failure("the rebuild inside the root " + root_dir.string() + " wrote no build record");
}

}  // namespace

Result<std::vector<std::string>> rebuild_and_compare(probe::Machine m, const std::string& path,
                                                     const record::Record& expected, const RebuildCheck& checked,
                                                     const std::function<void(std::string_view)>& on_line,
                                                     const compile::StepSink& on_step) {
  // The rebuild sees every recorded variable; one unset at record time stays unset.
  // Every child the rebuild starts sees that environment too (probe::OverlayMachine).
  probe::OverlayMachine seen(m, expected.environment,
                             [](const std::string& name) { return record::recorded_variable(name); });
  const probe::Machine rebuild = seen.machine();
  Options options;
  options.on_line = on_line;
  options.on_step = on_step;
  // A release is rebuilt from its own commit: a branch that has moved since is refused by name.
  if (expected.source.release) options.plan.release_commit = OPFORGE_TRY(record::source_commit(path, expected));
  // A cross-build is rebuilt for the machine it was for, whether --platform or the recipe said so.
  if (auto platform = util::json_read::text(expected.inputs, "platform")) options.plan.platform = *platform;
  auto tmp = OPFORGE_TRY(m.fs.make_temp_directory("opforge-verify-"));
  options.build_dir = tmp / "build";
  options.dist_dir = tmp / "dist";
  auto keep = [&](Error error) {
    // The error may point at a log inside the rebuild's folder: keep it.
    error.hint += std::string(error.hint.empty() ? "" : "\n  ") + "the rebuild's folder is kept: " + tmp.string();
    return opforge::unexpected(std::move(error));
  };
  record::Record actual;
  if (checked.root) {
    auto rebuilt = rebuild_in_root(rebuild, *checked.root, checked.recipe, tmp, on_line);
    if (!rebuilt) return keep(rebuilt.error());
    actual = std::move(*rebuilt);
  } else {
    auto outcome = build_wheel(rebuild, checked.recipe, options);
    if (!outcome) return keep(outcome.error());
    actual = std::move(outcome->record);
  }
  auto diffs = record::differences(expected, actual);
  (void)m.fs.remove_all(tmp);
  return diffs;
}

}  // namespace opforge::pipeline
