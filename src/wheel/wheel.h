#pragma once
/// Deterministic binary wheels: write, verify, normalise and inspect them, and compute their
/// platform tag from the ELF files they hold. Everything works on bytes in memory; the only side
/// effects go through probe::FileSystem (read the wheel, write it atomically) and, for
/// normalize's `strip`, probe::ProcessRunner.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "probe/machine.h"
#include "wheel/isa.h"
#include "util/error.h"

namespace opforge::wheel {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Names and versions
// ---------------------------------------------------------------------------------------------

/// PEP 503/427 file-name form: runs of `-_.` become one `_`, lowercase ("opforge-ops" → "opforge_ops").
std::string normalize_name(std::string_view name);

/// Checks a version for a wheel: a PEP 440 public version (`N(.N)*` with optional
/// a/b/rc/.post/.dev parts) and an optional local label `+[a-z0-9]+(\.[a-z0-9]+)*`.
/// bad_input naming the offending part otherwise (uppercase, `-`, `_`, empty segment...).
Status validate_version(std::string_view version);

// ---------------------------------------------------------------------------------------------
// ELF reading (libelf, from bytes)
// ---------------------------------------------------------------------------------------------

/// One image inside a CUDA fatbinary (`.nv_fatbin`); see fatbin.cpp for the decoded layout.
struct FatbinImage {
  enum class Kind { ptx, elf, unknown };
  Kind kind = Kind::unknown;
  int arch = 0;              ///< 80 for sm_80 / compute_80
  bool compressed = false;
  std::uint64_t size = 0;    ///< payload bytes as stored
  /// "sm_80" for an ELF (cubin), "compute_90" for PTX.
  std::string name() const;
};

struct ElfInfo {
  std::string soname;                   ///< DT_SONAME, may be empty
  std::vector<std::string> needed;      ///< DT_NEEDED, in file order
  /// .gnu.version_r: library file → version names it needs ("libc.so.6" → {"GLIBC_2.2.5", ...}).
  std::map<std::string, std::vector<std::string>> version_needs;
  bool has_symtab = false;              ///< a .symtab section is present (not stripped)
  std::vector<FatbinImage> fatbin;      ///< empty when there is no .nv_fatbin section
};

/// Looks like an ELF file (magic bytes).
bool is_elf(std::string_view bytes);

/// Reads DT_NEEDED, DT_SONAME, .gnu.version_r and the fatbinary images. bad_input when not ELF.
Result<ElfInfo> read_elf(std::string_view bytes);

/// Decodes a `.nv_fatbin` section's bytes (one or more concatenated fatbinaries).
Result<std::vector<FatbinImage>> parse_fatbin(std::string_view section);

// ---------------------------------------------------------------------------------------------
// Platform tag
// ---------------------------------------------------------------------------------------------

struct PlatformDecision {
  std::string platform;              ///< "manylinux_2_34_x86_64" or "linux_x86_64"
  std::optional<int> glibc_minor;    ///< highest GLIBC_2.X needed by any ELF
  std::vector<std::string> reasons;  ///< why not manylinux (empty when manylinux), one per cause
};

/// The platform tag for a set of ELF files (path in the wheel → info). No ELF at all →
/// "linux_x86_64" with the reason "no ELF file" (opforge's wheels always hold one; a pure-Python
/// wheel would be `py3-none-any`, which is not what this writer is for).
PlatformDecision platform_tag(const std::map<std::string, ElfInfo>& elfs);

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

struct File {
  std::string path;      ///< inside the wheel, '/'-separated, relative ("opforge_ops/_lib/x.so")
  std::string content;
  unsigned mode = 0644;  ///< only 0644 or 0755 are written (any x bit → 0755)
};

/// Every regular file under `dir` (recursively, through fs), as wheel Files named
/// `prefix + "/" + relative path`, sorted; executable files get 0755, others 0644. Skips
/// `__pycache__/` folders and `*.pyc`. A symlink contributes its target's content.
Result<std::vector<File>> collect_files(const probe::FileSystem& fs, const fs::path& dir,
                                        std::string_view prefix);

struct Spec {
  std::string name;                  ///< distribution name as the user wrote it ("opforge-ops")
  std::string version;               ///< "0.1.0+cu13.g8cd046f"; checked with validate_version
  std::string summary;
  std::string description;           ///< markdown long description (twine check --strict wants it)
  std::string requires_python = ">=3.8";
  std::vector<File> files;           ///< the package files; the .dist-info is generated
  /// Full tags ("py3-none-linux_x86_64"). Empty: "py3-none-" + platform_tag() of the ELF files.
  std::vector<std::string> tags;
  std::int64_t source_date_epoch = 315532800;  ///< clamped to ≥ 1980-01-01 (DOS time, UTC fields)
};

struct Packed {
  std::string filename;              ///< "opforge_ops-0.1.0+cu13.g8cd046f-py3-none-manylinux_2_34_x86_64.whl"
  std::string bytes;                 ///< the whole archive
  std::vector<std::string> tags;
  PlatformDecision platform;         ///< what platform_tag() decided (even when tags were given)
  std::string sha256;                ///< hex of `bytes`
};

/// Builds the archive in memory: entries sorted, .dist-info last, RECORD the very last, fixed
/// mtime/permissions/deflate level, no extra fields. Same Spec → same bytes, whatever TZ says.
Result<Packed> pack(const Spec& spec);

struct Written {
  fs::path path;                     ///< dist_dir / filename
  Packed packed;
};

/// pack() then write_file_atomic into `dist_dir` (created when missing).
Result<Written> write(probe::FileSystem& fs, const Spec& spec, const fs::path& dist_dir);

// ---------------------------------------------------------------------------------------------
// Reading, verifying, normalising, inspecting
// ---------------------------------------------------------------------------------------------

struct Entry {
  std::string path;
  std::string content;
  unsigned mode = 0;                 ///< st_mode bits from the external attributes (type + perms)
  bool is_symlink = false;
  bool is_directory = false;
};

/// Every entry of a zip archive, in archive order.
Result<std::vector<Entry>> read_archive(std::string_view bytes);

struct Report {
  std::string filename;
  std::vector<std::string> problems;  ///< each names the file and what is wrong; empty = valid
  std::size_t files_checked = 0;
  bool ok() const { return problems.empty(); }
};

/// Checks a wheel's bytes: RECORD hashes and sizes, no unlisted or missing file, name/version
/// identical in file name, .dist-info and METADATA, WHEEL tags vs the file name, path safety.
Report verify_bytes(std::string_view filename, std::string_view bytes);
/// Reads `path` and verify_bytes() it; an error only when the file cannot be read.
Result<Report> verify(const probe::FileSystem& fs, const fs::path& path);

struct NormalizeOptions {
  std::int64_t source_date_epoch = 315532800;
  std::optional<std::string> version;  ///< replace the version everywhere (e.g. add a local label)
  enum class Strip { yes, no } strip = Strip::yes;  ///< `strip --strip-unneeded` every ELF file
};

/// Re-packs an existing wheel (e.g. from setup.py bdist_wheel) deterministically: sorted entries,
/// fixed times and permissions, ELF files stripped (through m.proc on a temp copy), RECORD
/// rewritten, the .dist-info renamed and METADATA's Version set when `version` is given. Keeps the
/// tags of its WHEEL file. Writes the result into `dist_dir`; does not remove the input.
Result<Written> normalize(probe::Machine m, const fs::path& wheel, const fs::path& dist_dir,
                          const NormalizeOptions& options);

struct InspectedFile {
  std::string path;
  std::uint64_t size = 0;
  unsigned mode = 0;
  std::optional<ElfInfo> elf;
  std::optional<IsaUse> isa;          ///< with elf: the instruction sets its code uses
};

struct Inspection {
  std::string filename;
  std::string name;
  std::string version;
  std::vector<std::string> tags;       ///< from WHEEL
  std::vector<InspectedFile> files;
  PlatformDecision computed;           ///< what opforge would tag it
  Report report;                       ///< verify_bytes()
};

Result<Inspection> inspect(const probe::FileSystem& fs, const fs::path& wheel);

// ---------------------------------------------------------------------------------------------
// build_info.py
// ---------------------------------------------------------------------------------------------

struct BuildInfo {
  std::string opforge_version;
  std::string package_version;               ///< the wheel version
  std::string toolkit_version;               ///< "13.0", empty when no CUDA op was built
  std::string host_compiler;                 ///< "gcc 12.2.0"
  std::vector<std::string> arch_list;        ///< {"8.0", "9.0+PTX"}
  std::vector<std::string> ops;              ///< ops built, sorted
  std::map<std::string, std::string> op_kinds;   ///< op → "cpu" | "cuda"
  std::string source_commit;                 ///< full hex, or empty
  std::map<std::string, std::vector<std::string>> notes;  ///< op → notes (SIMD level chosen ...)
};

/// The text of `opforge_ops/build_info.py`: a BUILD_INFO dict literal, keys sorted. Versions
/// only: callers must not pass absolute paths (bad_input when a value starts with '/').
Result<std::string> build_info_py(const BuildInfo& info);

}  // namespace opforge::wheel
