#include "pipeline/matrix.h"

#include <chrono>

#include "probe/overlay_environment.h"
#include "settings/settings.h"

namespace opforge::pipeline {

namespace {

fs::path cache_of(const probe::Environment& env, const Options&) { return settings::cache_dir(env); }

}  // namespace

Result<std::vector<plan::Cell>> matrix_cells(probe::Machine m, const fs::path& recipe_file, const Options& options,
                                             const std::string& cell_id, std::optional<std::size_t> cell_index) {
  auto r = OPFORGE_TRY(recipe::load(m, recipe_file));
  if (!r.matrix.present) {
    if (!cell_id.empty() || cell_index)
      return bad_input("--cell/--cell-index: the recipe " + recipe_file.string() + " has no [matrix]",
                       "add [matrix] torch = [...], or build without --cell");
    return std::vector<plan::Cell>{};
  }
  auto all = OPFORGE_TRY(plan::cells(m, r, cache_of(m.env, options)));
  return plan::select(r, std::move(all), cell_id, cell_index);
}

std::vector<CellOutcome> build_cells(probe::Machine m, const fs::path& recipe_file, const Options& options,
                                     std::vector<plan::Cell> cells) {
  std::vector<CellOutcome> out;
  auto r = recipe::load(m, recipe_file);
  for (auto& cell : cells) {
    const auto start = std::chrono::steady_clock::now();
    CellOutcome co{cell, std::nullopt, std::nullopt, 0};
    auto run = [&]() -> Result<Outcome> {
      if (!r) return opforge::unexpected(r.error());
      if (options.on_line)
        options.on_line("cell " + cell.id + " (" + cell.torch_requirement + ", Python " + cell.python_version + ")");
      OPFORGE_CHECK(plan::ensure_env(m, *r, co.cell, options.on_line));
      // The cell's environment comes first on PATH: a build command's `python` is its Python.
      std::string path = (co.cell.env_python.parent_path()).string();
      if (auto p = settings::path(m.env); !p.empty()) path += ":" + p;
      probe::OverlayMachine cell_machine(m, {{"PATH", path}, {"VIRTUAL_ENV", co.cell.env.string()}});
      Options o = options;
      o.plan.python = co.cell.env_python.string();
      o.plan.pin_torch = true;
      o.cell = co.cell.id;
      fs::path base = options.build_dir ? m.fs.absolute(*options.build_dir) : (r->dir / r->build.build_dir);
      o.build_dir = base.lexically_normal() / co.cell.id;
      return build_wheel(cell_machine.machine(), recipe_file, o);
    };
    auto built = run();
    if (built) co.outcome = std::move(*built);
    else co.error = built.error();
    co.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out.push_back(std::move(co));
  }
  return out;
}

}  // namespace opforge::pipeline
