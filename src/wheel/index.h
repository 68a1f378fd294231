#pragma once
/// A PEP 503 "simple" index over the wheels of one folder: <dist>/simple/index.html lists the
/// projects, <dist>/simple/<normalized-name>/index.html their wheels, each link carrying the
/// file's `#sha256=` fragment. pip installs from it with `--index-url file://<dist>/simple`, and
/// any static HTTP server serves it as it is. Beside each HTML page the same page in PEP 691's
/// JSON form (index.json, `application/vnd.pypi.simple.v1+json`, with PEP 700's sizes and
/// versions), for a server that negotiates it; and beside each wheel its METADATA
/// (<wheel>.metadata, PEP 658), which the pages name by hash so a resolver reads it without the
/// wheel.
///
/// Beside simple/, one index per variant label for installers without variant support, as
/// PyTorch's per-CUDA index URLs are: <dist>/variants/<label>/simple/<project>/ lists, for each
/// version, that variant's wheel under the plain wheel's file name (pip refuses a file name with
/// a label). Its bytes are the plain wheel beside it when that wheel holds the same files (the
/// variant wheel is the plain wheel plus variant.json), else a copy of the variant wheel under the
/// plain name in <dist>/variants/<label>/ (a variant wheel merged without its own plain wheel, as
/// when the published plain wheel holds another cell). `pip install --index-url
/// file://<dist>/variants/<label>/simple NAME` then installs that variant by name alone.
#include <cstdint>
#include <filesystem>
#include <optional>
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
  /// sha256 (hex) of <filename>.metadata, the wheel's METADATA (PEP 658); empty: none served.
  std::string metadata_sha256{};
  std::uint64_t size = 0;  ///< bytes (PEP 700: the JSON page's `size`)
  /// The link from the project's page, URL-escaped; empty: "../../<filename>" (the folder above
  /// simple/). The last path segment is always `filename`, which is what pip reads.
  std::string href{};
};

/// The folder beside simple/ that holds the variants' own indexes: <dist>/variants/<label>/simple.
inline constexpr std::string_view kVariantIndexesDir = "variants";
/// A variant's index, relative to <dist>: "variants/<label>/simple".
std::string variant_index_path(std::string_view label);

/// PEP 658: a wheel's METADATA is served at the wheel's URL with this appended.
inline constexpr std::string_view kMetadataSuffix = ".metadata";

/// The API version the JSON pages declare: PEP 691's form with PEP 700's `size` and `versions`.
inline constexpr std::string_view kSimpleJsonApiVersion = "1.1";

/// The root page: one link per project (normalized names, sorted).
std::string simple_root_page(std::vector<std::string> projects);
/// A project's page: one link per file (sorted by name), `../../<file>#sha256=<hex>`.
std::string simple_project_page(std::string_view project, std::vector<IndexFile> files);

/// The JSON pages (PEP 691): the root's `projects`, a project's `files` (hashes, `core-metadata`
/// and `dist-info-metadata` when the wheel's METADATA is served, `size`) and `versions`.
std::string simple_root_json(std::vector<std::string> projects);
std::string simple_project_json(std::string_view project, std::vector<IndexFile> files);

/// The METADATA a wheel's bytes hold (its one .dist-info's); nullopt when they are no readable wheel.
std::optional<std::string> wheel_metadata(std::string_view bytes);

/// The project a wheel file name belongs to ("tiny_scale-0.2.0-cp311-...whl" → "tiny-scale"); empty
/// when the name is not a wheel's.
std::string wheel_project(std::string_view filename);

/// Rewrites <dist>/simple from the *.whl files in `dist` (hashing each), <wheel>.metadata beside
/// each wheel, and each variant label's <dist>/variants/<label>/ (above); every file is replaced
/// atomically, and pages of projects that have no wheel left, .metadata files whose wheel is gone,
/// and variant indexes (and their copies) of labels no wheel has left, are removed. Same wheels,
/// same bytes. The caller holds the dist/ lock.
Status write_simple_index(probe::FileSystem& fs, const fs::path& dist);

/// Where the index's `{name}-{version}-variants.json` files disagree with the variant wheels in
/// `dist` (what each wheel's variant.json says): one line per wheel and property, empty when they
/// agree. A variant wheel its version's file does not list, or lists with other properties, and
/// a file that is missing or unreadable are problems; so is a variant wheel whose index for plain
/// pip (variants/<label>/simple) does not list it, or serves a file that is not it.
Result<std::vector<std::string>> check_variants_index(const probe::FileSystem& fs, const fs::path& dist);

}  // namespace opforge::wheel
