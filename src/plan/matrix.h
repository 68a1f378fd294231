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
  /// [matrix] arch: the arch list this cell builds ("9.0"), or for the cell's fallback the union of
  /// them (fallback_arch_list); empty without that axis ([arch] list decides).
  std::string arch;
  /// The cell's plain wheel, built for `arch`'s union: what installers without variant support get,
  /// and those whose providers accept none of the variants. The other arch cells publish their
  /// variant wheel only.
  bool fallback = false;
  /// The id without the arch part ("torch2.15.0-py3.11"): [matrix] environments' key; the same as
  /// `id` without an arch axis.
  std::string base_id;
  fs::path env;                ///< the environment's folder
  fs::path env_python;         ///< env/bin/python: the project's Python for this cell
  bool user_env = false;       ///< named by [matrix] environments (never made or removed)
  bool ready = false;          ///< the environment exists (made and complete, or named)
  std::shared_ptr<void> hold;  ///< ensure_env(): the environment's lock, shared, while the cell builds
};

/// The cell id of a torch version and a Python "X.Y": "torch2.15.0-py3.11".
std::string cell_id(std::string_view torch, std::string_view python_version);
/// The arch part of a cell id: "sm", then each architecture's number ("ptx" after it for +PTX),
/// '_' between them: "8.0" → "sm80", "9.0;10.0+PTX" → "sm90_100ptx". `list` is valid (the recipe
/// checked it).
std::string arch_tag(std::string_view list);
/// The arch list of a cell's plain wheel, from its variants' lists: the union of their SASS, every
/// PTX one of them holds, and PTX for the newest architecture without a suffix (so that a GPU newer
/// than every list JITs it). Sorted oldest first: ["8.0", "9.0"] → "8.0;9.0+PTX";
/// ["8.0", "9.0", "10.0+PTX"] → "8.0;9.0;10.0+PTX". bad_input for a list that does not parse.
Result<std::string> fallback_arch_list(const std::vector<std::string>& lists);
/// "2.15.0" → "torch==2.15.0"; "2.15" → "torch==2.15.*".
std::string torch_requirement(std::string_view torch);
/// The folder name of a made environment: what decides its contents, hashed (16 hex digits).
std::string env_hash(const std::string& python_real_path, const std::string& python_version,
                     const std::string& torch_requirement, std::vector<std::string> requirements);

/// The recipe's cells, in order (torch outer, Python, platform, then arch inner: a cell for another
/// machine than this one has "-<platform>" after its id and shares the environment of its torch and
/// Python; with [matrix] arch, each of those is one cell per list, "-sm90" after the id, then its
/// fallback, "-fallback"). Runs each interpreter once for its
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
/// "platform", "cuda", "toolkit_from"}, ...]}, and with [matrix] arch "arch" (the list) and
/// "fallback" (the cell's plain wheel) too.
std::string matrix_json(const std::vector<CellView>& views);

/// The lock file of a made environment.
fs::path env_lock(const fs::path& env);

/// The marker a finished environment holds.
inline constexpr std::string_view kEnvMarker = ".opforge-env.json";

}  // namespace opforge::plan
