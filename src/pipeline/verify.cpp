#include "pipeline/verify.h"

#include "pipeline/pipeline.h"
#include "probe/overlay_environment.h"
#include "recipe/recipe.h"
#include "source/source.h"
#include "util/hash.h"
#include "util/strings.h"

namespace opforge::pipeline {
namespace fs = std::filesystem;
namespace {

/// Recipes are small; this keeps a record from pointing verify at something endless.
constexpr std::uint64_t kMaxRecipeBytes = 16 * 1024 * 1024;

}  // namespace

Result<RebuildCheck> check_record(probe::Machine m, const std::string& path, const record::Record& rec) {
  if (rec.recipe_path.empty()) return bad_input(path + ": the record names no recipe (inputs.recipe.path)");
  if (rec.recipe_sha256.empty()) return bad_input(path + ": the record holds no recipe hash (inputs.recipe.sha256)");
  RebuildCheck out;
  out.recipe = rec.recipe_path;
  auto text = m.fs.read_regular_file(rec.recipe_path, kMaxRecipeBytes);
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

  if (r.source.git) {
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
  if (r.build.backend == recipe::Backend::command) {
    out.description.push_back("runs    " + strings::shell_join(r.build.command) + "  (build.command)");
  } else {
    out.description.push_back("runs    ninja and the compilers on the ops' sources in that source tree");
  }
  if (r.cuda.version == "auto" || r.cuda.version == "torch")
    out.description.push_back("runs    " + r.cuda.python + "  (cuda.python, asked for torch's CUDA version)");
  if (r.compiler.host != "auto") out.description.push_back("runs    " + r.compiler.host + "  (compiler.host)");
  for (auto& [k, v] : rec.environment)
    out.description.push_back("env     " + k + "=" + strings::shell_quote(v) + "  (from the record)");
  return out;
}

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
  auto tmp = OPFORGE_TRY(m.fs.make_temp_directory("opforge-verify-"));
  options.build_dir = tmp / "build";
  options.dist_dir = tmp / "dist";
  auto outcome = build_wheel(rebuild, checked.recipe, options);
  if (!outcome) {
    // The error may point at a log inside the rebuild's folder: keep it.
    auto error = outcome.error();
    error.hint += std::string(error.hint.empty() ? "" : "\n  ") + "the rebuild's folder is kept: " + tmp.string();
    return opforge::unexpected(std::move(error));
  }
  auto diffs = record::differences(expected, outcome->record);
  (void)m.fs.remove_all(tmp);
  return diffs;
}

}  // namespace opforge::pipeline
