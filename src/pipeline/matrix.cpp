#include "pipeline/matrix.h"

#include <algorithm>
#include <chrono>

#include "pipeline/stages.h"
#include "probe/overlay_environment.h"
#include "settings/settings.h"
#include "target/platform.h"
#include "util/pep440.h"
#include "util/strings.h"
#include "wheel/wheel.h"

namespace opforge::pipeline {

namespace {

fs::path cache_of(const probe::Environment& env, const Options&) { return settings::cache_dir(env); }

/// A built cell's wheel that uses torch's stable C ABI alone, and what it needs.
struct StableWheel {
  std::string cell, python_version, requirement;  ///< requirement: "torch>=2.10"
  std::string arch;                               ///< [matrix] arch: it serves cells of its own list only
  bool fallback = false;
  fs::path wheel;
  std::vector<std::string> modules;  ///< its CPython extensions, as import names ("stableshim._C")
};

std::optional<StableWheel> stable_wheel(probe::Machine m, const plan::Cell& cell, const Outcome& o) {
  const auto& link = o.record.inputs.contains("torch_linkage") ? o.record.inputs["torch_linkage"] : nlohmann::json();
  if (!link.is_object() || link.value("abi", "") != wheel::torch_abi_name(wheel::TorchAbi::stable)) return std::nullopt;
  const std::string req = link.value("requires", "");
  if (!req.starts_with("torch>=")) return std::nullopt;
  StableWheel w{cell.id, cell.python_version, req, cell.arch, cell.fallback, o.wheel, {}};
  auto in = wheel::inspect(m.fs, o.wheel);
  if (!in) return std::nullopt;
  for (const auto& f : in->files) {
    if (!f.elf || f.elf->python_init.empty()) continue;
    std::string name = f.path;
    const auto slash = name.rfind('/');
    if (const auto dot = name.find('.', slash == std::string::npos ? 0 : slash); dot != std::string::npos)
      name.resize(dot);
    std::replace(name.begin(), name.end(), '/', '.');
    w.modules.push_back(name);
  }
  return w;
}

/// Installs the wheel into a fresh folder with the cell's pip (--no-deps, offline) and imports
/// torch and each of its extensions with the cell's Python: the proof that one wheel serves it.
void load_check(probe::Machine m, const StableWheel& w, const plan::Cell& cell, const fs::path& dir, CellOutcome& co) {
  (void)m.fs.remove_all(dir);
  auto run = [&](std::vector<std::string> argv) {
    return m.proc.run(probe::Command{.argv = std::move(argv), .timeout = std::chrono::minutes(5)});
  };
  auto installed = run({cell.env_python.string(), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                        "--no-compile", "--target", dir.string(), w.wheel.string()});
  if (!installed || !installed->ok()) {
    co.load_check =
        "pip could not install it: " +
        (installed ? strings::cut(strings::trim(installed->err + installed->out), 300) : installed.error().message);
    return;
  }
  std::vector<std::string> argv = {cell.env_python.string(), "-c",
                                   "import importlib, sys\n"
                                   "sys.path.insert(0, sys.argv[1])\n"
                                   "import torch\n"
                                   "for name in sys.argv[2:]: importlib.import_module(name)\n"
                                   "print(torch.__version__)",
                                   dir.string()};
  argv.insert(argv.end(), w.modules.begin(), w.modules.end());
  auto loaded = run(argv);
  (void)m.fs.remove_all(dir);
  const std::string what = w.modules.empty() ? std::string("it") : strings::join(w.modules, ", ");
  if (!loaded || !loaded->ok()) {
    const std::string err = loaded ? std::string(strings::trim(loaded->err)) : loaded.error().message;
    co.load_check = "importing " + what + " failed: " +
                    strings::cut(err.substr(err.rfind('\n') == std::string::npos ? 0 : err.rfind('\n') + 1), 300);
    return;
  }
  co.loaded = true;
  co.load_check = "torch " + std::string(strings::trim(loaded->out)) + " loads " + what;
}

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
  if (options.plan.platform && !r.matrix.platform.empty())
    return bad_input(
        "--platform and the recipe's [matrix] platform cannot be combined: the matrix builds each cell "
        "for its own platform",
        "select cells with --cell (e.g. --cell torch2.15.0-py3.11-aarch64), or leave --platform out");
  auto all = OPFORGE_TRY(plan::cells(m, r, cache_of(m.env, options)));
  return plan::select(r, std::move(all), cell_id, cell_index);
}

namespace {
/// A cell built for this machine (no [matrix] platform, or this one's).
bool native_cell(const plan::Cell& cell) {
  return cell.platform.empty() || cell.platform == target::host_platform().name;
}
}  // namespace

std::vector<CellOutcome> build_cells(probe::Machine m, const fs::path& recipe_file, const Options& options,
                                     std::vector<plan::Cell> cells) {
  std::vector<CellOutcome> out;
  auto r = recipe::load(m, recipe_file);
  std::vector<StableWheel> shared;  // stable-ABI wheels built so far, one per Python
  auto say = [&](const std::string& line) {
    if (options.on_line) options.on_line(line);
  };
  for (auto& cell : cells) {
    const auto start = std::chrono::steady_clock::now();
    CellOutcome co;
    co.cell = cell;
    const fs::path base =
        r ? (options.build_dir ? m.fs.absolute(*options.build_dir) : (r->dir / r->build.build_dir)).lexically_normal()
          : fs::path();
    const fs::path real_dist =
        r ? (options.dist_dir ? m.fs.absolute(*options.dist_dir) : (r->dir / r->build.dist_dir)).lexically_normal()
          : fs::path();
    auto run = [&]() -> Result<Outcome> {
      if (!r) return opforge::unexpected(r.error());
      say("cell " + cell.id + " (" + cell.torch_requirement + ", Python " + cell.python_version + ")");
      OPFORGE_CHECK(plan::ensure_env(m, *r, co.cell, options.on_line));
      // A stable-ABI wheel of this Python that admits this torch serves the cell when it loads here.
      const StableWheel* serving = nullptr;
      // Served wheels are loaded here first: only cells for this machine share.
      if (r->matrix.share_stable_abi && native_cell(cell))
        for (const auto& w : shared)
          if (w.python_version == cell.python_version && w.arch == cell.arch && w.fallback == cell.fallback &&
              pep440::satisfies(cell.torch, w.requirement.substr(5)).value_or(false))
            serving = &w;
      if (serving) {
        load_check(m, *serving, co.cell, base / cell.id / "load-check", co);
        if (co.loaded) {
          co.served_by = serving->cell;
          co.served_wheel = serving->wheel;
          co.served_requirement = serving->requirement;
          say("cell " + cell.id + ": served by cell " + serving->cell + "'s wheel (stable C ABI, " +
              serving->requirement + "): " + co.load_check);
          return opforge::unexpected(Error{});  // no build: not an error, see served_by
        }
        say("cell " + cell.id + ": cell " + serving->cell + "'s stable-ABI wheel does not serve it (" + co.load_check +
            "); building its own");
        co.load_check.clear();
      }
      // The cell's environment comes first on PATH: a build command's `python` is its Python.
      std::string path = (co.cell.env_python.parent_path()).string();
      if (auto p = settings::path(m.env); !p.empty()) path += ":" + p;
      probe::OverlayMachine cell_machine(m, {{"PATH", path}, {"VIRTUAL_ENV", co.cell.env.string()}});
      Options o = options;
      o.plan.python = co.cell.env_python.string();
      if (!co.cell.platform.empty()) o.plan.platform = co.cell.platform;
      o.plan.pin_torch = true;
      o.cell = co.cell.id;
      o.build_dir = base / co.cell.id;
      if (co.cell.arch.empty()) return build_wheel(cell_machine.machine(), recipe_file, o);
      o.plan.cell_arch_list = co.cell.arch;
      if (co.cell.fallback) {
        o.plain_only = true;
        say("cell " + cell.id + ": the plain wheel, for every GPU the cell's variants run on: " + co.cell.arch);
        return build_wheel(cell_machine.machine(), recipe_file, o);
      }
      // A variant cell's plain wheel has the fallback's file name: it stays in a folder of its own,
      // and only its variant wheel lands in dist/.
      o.dist_dir = base / co.cell.id / "variant-dist";
      auto done = OPFORGE_TRY(build_wheel(cell_machine.machine(), recipe_file, o));
      OPFORGE_CHECK(
          publish_variant(m, done, real_dist, co.cell.id, std::chrono::steady_clock::now() - start, options.on_line));
      return done;
    };
    auto built = run();
    if (built) {
      co.outcome = std::move(*built);
      if (r && r->matrix.share_stable_abi && native_cell(cell))
        if (auto w = stable_wheel(m, co.cell, *co.outcome)) {
          load_check(m, *w, co.cell, base / cell.id / "load-check", co);
          say("cell " + cell.id + ": its wheel uses torch's stable C ABI alone (" + w->requirement +
              "): " + co.load_check +
              (co.loaded ? "; later cells of Python " + cell.python_version + " that it admits load it" : ""));
          if (co.loaded) shared.push_back(std::move(*w));
        }
    } else if (co.served_by.empty()) {
      co.error = built.error();
    }
    co.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    out.push_back(std::move(co));
  }
  return out;
}

}  // namespace opforge::pipeline
