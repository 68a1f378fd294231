#pragma once
/// dist/ as one wheelhouse: the PEP 503 index (wheel/index.h), SUMMARY.md and summary.json, both
/// rewritten whenever a wheel lands, and `opforge index`'s merge of wheels built elsewhere.
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <optional>

#include <nlohmann/json.hpp>

#include "probe/machine.h"
#include "rollout/pick.h"
#include "rollout/rollout.h"
#include "util/error.h"

namespace opforge::pipeline {

namespace fs = std::filesystem;

/// One built wheel, as the summary lists it.
struct SummaryRow {
  std::string cell;              ///< the matrix cell id ("default" for a recipe without [matrix])
  std::string wheel;             ///< file name in dist/
  std::string sha256;            ///< of the wheel
  std::vector<std::string> ops;  ///< ops built into it
  std::string toolkit;           ///< "CUDA 13.2 (PyPI: cuda-toolkit[...]==13.2.2)", "CUDA 13.0 (/usr/local/cuda-13.0)"
  std::string torch;             ///< torch version the wheel was built against; empty: none
  double seconds = 0;            ///< the build's wall time
};

/// summary.json's text (rows sorted by cell, then wheel) and SUMMARY.md's (a Markdown table).
std::string summary_json(std::vector<SummaryRow> rows);
std::string summary_markdown(std::vector<SummaryRow> rows);
/// The rows of <dir>/summary.json; none when it is missing or unreadable.
std::vector<SummaryRow> read_summary(const probe::FileSystem& fs, const fs::path& dir);

/// A wheel has landed in `dist` (the caller holds dist/'s lock): `row` replaces the row of the same
/// wheel file (one row per wheel: project, version and tags), rows whose wheel is gone are dropped, and the index and
/// both summaries are rewritten (each file atomically).
Status land(probe::FileSystem& fs, const fs::path& dist, const SummaryRow& row);

/// What `opforge index` did.
struct MergeReport {
  std::vector<std::string> added;      ///< wheels copied into the wheelhouse
  std::vector<std::string> unchanged;  ///< already there with the same bytes
};

/// Copies every wheel of `inputs` (and its build record, and its summary rows) into `out`, after
/// checking each (wheel::verify; its record's sha256 when it has one), then rewrites the index and
/// the summaries. bad_input when a wheel fails its checks or another wheel of the same name (other
/// bytes) is in `out` already, checked under `out`'s lock; nothing is copied then. `on_wait` (may be
/// null) hears once that another process holds the lock.
Result<MergeReport> merge_wheelhouse(probe::Machine m, const fs::path& out, const std::vector<fs::path>& inputs,
                                     const std::function<void(std::string_view)>& on_wait = {});

/// One installer's wheel of a project on a node.
struct InstallerTake {
  std::string installer;                            ///< "pip", "resolver", "pick"
  std::optional<std::string> wheel;                 ///< nullopt: it installs none (a refusal)
  rollout::Verdict verdict = rollout::Verdict::ok;  ///< of that wheel there (ok when none: nothing breaks)
  std::vector<rollout::Check> reasons;              ///< its checks that are not ok
  bool operator==(const InstallerTake&) const = default;
};

/// What each installer takes of one project on a node (or on several with the same outcome).
struct NodeInstalls {
  std::vector<std::string> nodes;
  std::string project;
  std::vector<InstallerTake> takes;  ///< pip from simple/, a variant-aware installer, opforge pick
  bool ok() const;                   ///< no installer takes a wheel that fails there
};

/// For each node and project of a wheelhouse, the wheel each installer takes and whether it runs
/// there, by `opforge pick`'s checks (rollout/): plain pip from `simple/` (it refuses a variant
/// wheel's file name: the newest plain wheel its tags and requirements allow), a variant-aware
/// installer with NVIDIA's plugin (rollout::InstallerChoice), and `opforge pick` (the first wheel
/// that fits, or none). Nodes with the same outcome are one entry, in the order first met. Pure.
std::vector<NodeInstalls> installs(const std::vector<rollout::IndexWheel>& wheels,
                                   const std::vector<rollout::NodeFacts>& nodes);
/// The text `opforge verify WHEELHOUSE --nodes` prints, and its --json.
std::string installs_text(const std::string& index, const std::vector<NodeInstalls>& all);
nlohmann::json installs_json(const std::string& index, const std::vector<NodeInstalls>& all);

}  // namespace opforge::pipeline
