#pragma once
/// `opforge build` of a recipe with [matrix]: every selected cell built in its own environment,
/// one after another, into the one dist/; a cell's failure does not stop the others.
#include <optional>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"
#include "plan/matrix.h"

namespace opforge::pipeline {

struct CellOutcome {
  plan::Cell cell;
  std::optional<Outcome> outcome;  ///< set when the cell built
  std::optional<Error> error;      ///< set when it did not
  double seconds = 0;
  /// [matrix] share_stable_abi: the cell whose stable-ABI wheel serves this one instead of a build
  /// of its own (empty: it built, or failed, itself), and that wheel.
  std::string served_by;
  fs::path served_wheel;
  std::string served_requirement;  ///< that wheel's "torch>=2.12"
  /// The wheel of a stable-ABI cell loaded with this cell's torch: "torch 2.15.0+cu132 loads
  /// stableshim._C", or why it did not (empty: not tried).
  std::string load_check;
  bool loaded = false;
};

/// The cells a build selects (`cell_id` / `cell_index`, else all). bad_input for a selection or
/// [matrix] value that is wrong; per-cell failures are in the outcomes, not the result.
Result<std::vector<plan::Cell>> matrix_cells(probe::Machine m, const fs::path& recipe_file, const Options& options,
                                             const std::string& cell_id, std::optional<std::size_t> cell_index);

/// Builds `cells` in order: makes a cell's environment when needed, then builds with that
/// environment's Python first on PATH, torch pinned in Requires-Dist, and the build folder
/// <build_dir>/<cell id>. A cell whose wheel uses torch's stable C ABI alone (pinned torch>= the
/// oldest release that has it) serves each later cell of the same Python whose torch that admits
/// ([matrix] share_stable_abi): the wheel is loaded with that cell's torch instead of a build, and
/// a cell where it does not load builds its own.
std::vector<CellOutcome> build_cells(probe::Machine m, const fs::path& recipe_file, const Options& options,
                                     std::vector<plan::Cell> cells);

}  // namespace opforge::pipeline
