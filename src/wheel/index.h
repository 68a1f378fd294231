#pragma once
/// A PEP 503 "simple" index over the wheels of one folder: <dist>/simple/index.html lists the
/// projects, <dist>/simple/<normalized-name>/index.html their wheels, each link carrying the
/// file's `#sha256=` fragment. pip installs from it with `--index-url file://<dist>/simple`, and
/// any static HTTP server serves it as it is.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "probe/machine.h"
#include "util/error.h"

namespace opforge::wheel {

namespace fs = std::filesystem;

/// PEP 503's project name: lower case, each run of '-', '_' and '.' one '-' ("Opforge_Ops" → "opforge-ops").
std::string index_project_name(std::string_view name);

/// One wheel file a project page links to.
struct IndexFile {
  std::string filename;  ///< in the folder above simple/
  std::string sha256;    ///< lower-case hex
};

/// The root page: one link per project (normalized names, sorted).
std::string simple_root_page(std::vector<std::string> projects);
/// A project's page: one link per file (sorted by name), `../../<file>#sha256=<hex>`.
std::string simple_project_page(std::string_view project, std::vector<IndexFile> files);

/// The project a wheel file name belongs to ("tiny_scale-0.2.0-cp311-...whl" → "tiny-scale"); empty
/// when the name is not a wheel's.
std::string wheel_project(std::string_view filename);

/// Rewrites <dist>/simple from the *.whl files in `dist` (hashing each); every page is replaced
/// atomically, and pages of projects that have no wheel left are removed. The caller holds the
/// dist/ lock.
Status write_simple_index(probe::FileSystem& fs, const fs::path& dist);

}  // namespace opforge::wheel
