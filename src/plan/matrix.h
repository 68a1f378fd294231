#pragma once
/// A recipe's [matrix]: its cells (torch version × Python interpreter), the environment each
/// builds in (made by opforge under <cache>/envs/<hash>, or one the recipe names), and what
/// `opforge matrix` lists about them.
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "probe/machine.h"
#include "recipe/recipe.h"
#include "util/error.h"

namespace opforge::plan {

namespace fs = std::filesystem;

struct Cell {
  std::string id;                 ///< "torch2.15.0-py3.11"
  std::size_t index = 0;          ///< position in the matrix (SLURM's array index)
  std::string torch;              ///< as the recipe writes it: "2.15.0" or "2.15"
  std::string torch_requirement;  ///< "torch==2.15.0" or "torch==2.15.*"
  std::string python;             ///< the interpreter the environment is made from (as written)
  std::string python_version;     ///< "3.11"
  /// [matrix] platform's machine for this cell ("aarch64"); empty without that axis (the recipe's
  /// [build] platform, or --platform, then decides).
  std::string platform;
  fs::path env;                ///< the environment's folder
  fs::path env_python;         ///< env/bin/python: the project's Python for this cell
  bool user_env = false;       ///< named by [matrix] environments (never made or removed)
  bool ready = false;          ///< the environment exists (made and complete, or named)
  std::shared_ptr<void> hold;  ///< ensure_env(): the environment's lock, shared, while the cell builds
};

/// The cell id of a torch version and a Python "X.Y": "torch2.15.0-py3.11".
std::string cell_id(std::string_view torch, std::string_view python_version);
/// "2.15.0" → "torch==2.15.0"; "2.15" → "torch==2.15.*".
std::string torch_requirement(std::string_view torch);
/// The folder name of a made environment: what decides its contents, hashed (16 hex digits).
std::string env_hash(const std::string& python_real_path, const std::string& python_version,
                     const std::string& torch_requirement, std::vector<std::string> requirements);

/// The recipe's cells, in order (torch outer, Python, then platform inner: a cell for another
/// machine than this one has "-<platform>" after its id and shares the environment of its torch and
/// Python). Runs each interpreter once for its
/// version. bad_input (with the recipe's file:line) for an interpreter that is not there and for
/// an environment named for a cell that does not exist.
Result<std::vector<Cell>> cells(probe::Machine m, const recipe::Recipe& r, const fs::path& cache);

/// The cells `--cell ID` / `--cell-index N` select (all when neither is given). bad_input with the
/// recipe's [matrix] line for an id or index that is not a cell.
Result<std::vector<Cell>> select(const recipe::Recipe& r, std::vector<Cell> all, const std::string& id,
                                 std::optional<std::size_t> index);

/// Makes the cell's environment when it is not there: `python -m venv`, then pip installs the
/// pinned torch and the requirements, under the exclusive lock (a second build waits); a
/// completion marker written last tells a finished environment from a killed one, which is made
/// again. unsatisfied when pip fails (the folder is removed). Then holds the lock shared
/// (Cell::hold) and records the use (the cache's last-use time).
Status ensure_env(probe::Machine m, const recipe::Recipe& r, Cell& cell,
                  const std::function<void(std::string_view)>& on_line);

/// What `opforge matrix` says of a cell: torch's CUDA and the toolkit a build would use.
struct CellView {
  Cell cell;
  std::string cuda;          ///< torch's CUDA "13.2"; empty until the environment exists
  std::string toolkit;       ///< the toolkit's folder (or where it would be provisioned)
  std::string toolkit_from;  ///< "installed", "pypi", "pypi (to fetch)", "installed (minor mismatch)", "unknown"
};

/// Reads each ready cell's torch and resolves its toolkit as a build would (writing nothing).
std::vector<CellView> describe_cells(probe::Machine m, const recipe::Recipe& r, const std::vector<Cell>& cells,
                                     const fs::path& cache);

/// The GitHub Actions `strategy.matrix` object: {"include": [{"cell", "index", "torch", "python",
/// "cuda", "toolkit_from"}, ...]}.
std::string matrix_json(const std::vector<CellView>& views);

/// The lock file of a made environment.
fs::path env_lock(const fs::path& env);

/// The marker a finished environment holds.
inline constexpr std::string_view kEnvMarker = ".opforge-env.json";

}  // namespace opforge::plan
