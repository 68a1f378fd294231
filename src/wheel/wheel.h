#pragma once
/// Deterministic binary wheels: write, verify, normalise and inspect them, and compute their
/// platform tag from the ELF files they hold. Everything works on bytes in memory; the only side
/// effects go through probe::FileSystem (read the wheel, write it atomically) and, for
/// normalize's `strip`, probe::ProcessRunner.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "probe/machine.h"
#include "util/error.h"
#include "wheel/isa.h"

namespace opforge::wheel {

namespace fs = std::filesystem;

/// 1980-01-01 00:00:00 UTC, the oldest time a zip entry (DOS date) holds: every SOURCE_DATE_EPOCH
/// is clamped to it.
inline constexpr std::int64_t kMinEpoch = 315532800;

// ---------------------------------------------------------------------------------------------
// Names and versions
// ---------------------------------------------------------------------------------------------

/// PEP 503/427 file-name form: runs of `-_.` become one `_`, lowercase ("opforge-ops" → "opforge_ops").
std::string normalize_name(std::string_view name);

/// PEP 503's project name: lower case, each run of '-', '_' and '.' one '-' ("Opforge_Ops" →
/// "opforge-ops"): the index's and pip's form.
std::string project_name(std::string_view name);

/// The parts of a wheel's file name, PEP 427: NAME-VERSION(-BUILD)-PY-ABI-PLATFORM.whl, and a
/// variant wheel's label after them (PEP 825's draft, wheel/variant.h): ...-PLATFORM-LABEL.whl.
struct WheelFileName {
  std::string name, version, build, python, abi, platform;
  std::string variant{};  ///< the variant label; empty for a plain wheel
  /// "cp311-cp311-linux_x86_64"
  std::string tags() const { return python + "-" + abi + "-" + platform; }
};
/// nullopt when `filename` (no folder) is not a wheel's: no `.whl`, not 5 to 7 parts, an empty
/// part, a python tag that starts with a digit. A build tag starts with a digit and a python tag
/// never does, so six parts are a build tag when the third starts with one and a variant label
/// ([0-9a-z._]+) otherwise (as variantlib reads them).
std::optional<WheelFileName> parse_wheel_filename(std::string_view filename);

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
  int arch = 0;  ///< 80 for sm_80 / compute_80
  /// 'a' for arch-specific code (sm_90a: runs on that GPU only), 'f' for family code (sm_100f);
  /// 0 for plain code.
  char suffix = 0;
  bool compressed = false;
  std::uint64_t size = 0;  ///< payload bytes as stored
  /// PTX entries: the PTX ISA version (9.0 from CUDA 13.0), which a driver must know to JIT it;
  /// {0, 0} for cubins.
  std::pair<int, int> ptx_isa{0, 0};
  /// "sm_80" for an ELF (cubin), "compute_90" for PTX, "sm_90a" for arch-specific code.
  std::string name() const;
};

struct ElfInfo {
  /// e_machine: which platform's code it holds (target::platform_of_elf; 62 x86-64, 183 AArch64).
  /// read_elf sets it; a value made by hand is x86-64's.
  std::uint16_t machine = 62;
  std::string soname;               ///< DT_SONAME, may be empty
  std::vector<std::string> needed;  ///< DT_NEEDED, in file order
  /// .gnu.version_d: the version names the library defines ("GLIBC_2.36", "GLIBCXX_3.4.30"), what
  /// a node's libc.so.6 and libstdc++.so.6 provide.
  std::vector<std::string> defined_versions;
  /// .gnu.version_r: library file → version names it needs ("libc.so.6" → {"GLIBC_2.2.5", ...}).
  std::map<std::string, std::vector<std::string>> version_needs;
  /// Version name → the undefined dynamic symbols bound to it ("GLIBC_2.34" → {"dlopen", ...}),
  /// sorted: what a floor violation names.
  std::map<std::string, std::vector<std::string>> version_symbols;
  /// The undefined dynamic symbols bound to no version, sorted: torch's libraries (libtorch*.so,
  /// libc10.so) version none of theirs, so this is where a library's use of torch shows.
  std::vector<std::string> unversioned_undefined;
  bool has_symtab = false;  ///< a .symtab section is present (not stripped)
  /// The PyInit_<name> functions it exports (.dynsym): what makes a library a CPython extension.
  std::vector<std::string> python_init;
  std::vector<FatbinImage> fatbin;  ///< empty when there is no .nv_fatbin section
};

/// What a library needs of torch, read from its ELF. Its C++ ABI (undefined at::, c10:: or torch::
/// symbols, which change with every torch release): it loads only with the torch it was built
/// against. Only the stable C ABI (aoti_torch_* and torch_* functions of torch's stable shim, kept
/// across releases): it loads with that torch or a newer one. Or nothing of torch.
enum class TorchAbi { none, stable, cxx };
struct TorchLinkage {
  TorchAbi abi = TorchAbi::none;
  std::vector<std::string> evidence;          ///< up to three of the symbols that decided it
  std::vector<std::string> stable_symbols{};  ///< every stable C ABI function it uses, sorted
};
TorchLinkage torch_linkage(const ElfInfo& elf);
/// "none", "stable C ABI", "C++ ABI"
std::string_view torch_abi_name(TorchAbi abi);

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
  std::string platform;  ///< "manylinux_2_34_x86_64", "linux_x86_64", or "any" (no ELF)
  /// The machine of the ELF files ("x86_64", "aarch64"); empty with no ELF, or when `mixed`.
  std::string machine;
  /// Files of more than one machine (or of one opforge builds for no platform), one line per
  /// machine: such a wheel runs nowhere whole, and pack refuses it.
  std::vector<std::string> mixed;
  std::optional<int> glibc_minor;    ///< highest GLIBC_2.X needed by any ELF
  std::vector<std::string> reasons;  ///< why not manylinux (empty when manylinux), one per cause
  /// Libraries left out of the decision because a requirement of the wheel brings them, one line
  /// each ("x.so links libtorch.so, which torch (a requirement of the wheel) provides").
  std::vector<std::string> provided;
};

/// The platform tag for a set of ELF files (path in the wheel → info). No ELF at all → "any",
/// with the reason "the wheel holds no ELF file": nothing in it is tied to a platform.
/// `requirements`: the distributions the wheel requires (METADATA Requires-Dist names, normalised);
/// libraries one of them provides ([[provided]] in toolchains/manylinux-policy.toml: torch's for
/// "torch") are left out, as torchvision's wheels are tagged.
PlatformDecision platform_tag(const std::map<std::string, ElfInfo>& elfs,
                              const std::vector<std::string>& requirements = {});

/// "AArch64 (aarch64)" / "e_machine 40": how messages name an ELF file's machine.
std::string machine_text(std::uint16_t e_machine);

/// The newest versions of the system's C and C++ runtimes some ELF files need.
struct SystemNeeds {
  int glibc_minor = 0;  ///< GLIBC_2.X; 0 when none
  std::string glibcxx;  ///< newest GLIBCXX_ ("3.4.30"); empty when none
  std::string cxxabi;   ///< newest CXXABI_
  /// "glibc 2.34, libstdc++ GLIBCXX_3.4.30" (only the parts needed).
  std::string str() const;
};
/// What `files` need of the system, counting only the libraries no requirement provides.
SystemNeeds system_needs(const std::map<std::string, ElfInfo>& files,
                         const std::vector<std::string>& requirements = {});

/// A distribution clusters run, with its glibc and libstdc++ (toolchains/manylinux-policy.toml).
struct Distribution {
  std::string name;  ///< "RHEL/Rocky 8"
  int glibc_minor = 0;
  std::string glibcxx, cxxabi;
};
/// The known distributions, in the table's order (oldest glibc first).
const std::vector<Distribution>& distributions();
/// The names of the distributions whose glibc and libstdc++ provide `needs` (or, with
/// Meets::no, those that do not).
enum class Meets { yes, no };
std::vector<std::string> distributions_for(const SystemNeeds& needs, Meets meets = Meets::yes);

/// A glibc floor as a recipe or flag writes it: "2.28" or "manylinux_2_28" → 28. bad_input unless
/// it names a manylinux policy (the hint lists them).
Result<int> parse_glibc_floor(std::string_view text);

/// Every reason the files break the floor's manylinux policy, one line per file and library:
/// "opforge_ops/_lib/libopforge_aio.so: GLIBC_2.34 (dlopen, dlsym) of libc.so.6", or a library no
/// policy allows. Empty: the wheel keeps the floor.
std::vector<std::string> floor_violations(const std::map<std::string, ElfInfo>& elfs, int floor_minor,
                                          const std::vector<std::string>& requirements = {});

/// floor_violations() as a build's verdict: failure (exit 1) naming each file, symbol and version,
/// with what to do (build inside an older root).
Status check_floor(const std::map<std::string, ElfInfo>& elfs, int floor_minor,
                   const std::vector<std::string>& requirements = {});

/// The Requires-Dist names of a METADATA text, normalised ("torch", "numpy").
std::vector<std::string> required_names(std::string_view metadata);

/// What one ELF file needs of CPython, read from the file itself: the CPython symbols it leaves for
/// the interpreter to provide (undefined, unversioned: libpython versions none of its symbols), the
/// PyInit_* it exports, a DT_NEEDED on libpython3.X, and its name's extension suffix.
struct PythonUse {
  /// none: no CPython symbol, no PyInit_*, no extension suffix (a ctypes library). stable: only
  /// stable-ABI (abi3) symbols. version: a symbol outside the stable ABI (CPython's internals,
  /// _PyType_Lookup; its non-limited API, PyTuple_GetItem's macros' helpers), or a name or a
  /// libpython that says one version; it loads only in the CPython it was built for.
  enum class Kind { none, stable, version };
  Kind kind = Kind::none;
  std::vector<std::string> init;           ///< exported PyInit_* functions
  std::vector<std::string> symbols;        ///< undefined CPython symbols, sorted
  std::vector<std::string> beyond_stable;  ///< those not in the stable ABI, sorted
  std::string name_version;                ///< "311" from *.cpython-311-*.so; empty otherwise
  bool name_abi3 = false;                  ///< named *.abi3.so
  std::string libpython;                   ///< "311" from a DT_NEEDED libpython3.11.so.1.0
  /// The CPython 3 minors (of those scripts/cpython-symbols measured) whose libpython exports
  /// every symbol in `symbols`; empty when no measured one does.
  std::vector<int> minors;
};
/// Reads `elf` (found at `path` in the wheel) for its use of CPython.
PythonUse python_use(std::string_view path, const ElfInfo& elf);
/// The CPython 3 minors toolchains/cpython-symbols.toml was measured on ({6, 13}).
std::pair<int, int> cpython_measured();

/// The python and ABI parts of a wheel's tags ("py3-none", "cp38-abi3", "cp311-cp311") and why.
struct AbiDecision {
  std::string python_abi;  ///< "py3-none", "cp3<floor>-abi3" or "cp3XY-cp3XY"; empty: none can be decided
  /// One line for `opforge inspect`: which files decided, and the evidence (their names' suffix,
  /// a few of their CPython symbols, the tag the wheel or its build gave).
  std::string reason;
  /// Where the files and the tag the wheel was given disagree, one line each ("the wheel's tag
  /// says py3-none, but pkg/libfoo.so calls CPython ..."). Empty when they agree or no tag was given.
  std::vector<std::string> conflicts;
  /// The wheel's stable-ABI extensions (files named *.abi3.so, or using only stable-ABI symbols
  /// under a tag that says abi3), sorted.
  std::vector<std::string> abi3_files;
  /// Its files tied to one CPython version (PythonUse::Kind::version, or only stable-ABI symbols
  /// under no abi3 name and no abi3 tag), sorted.
  std::vector<std::string> extension_files;
  /// Its libraries linked against torch's (libtorch*, libc10*), sorted.
  std::vector<std::string> torch_linked;
};

/// The one reader that decides the python-abi tag of a wheel's files, from what their ELF says
/// (python_use): no file uses CPython → "py3-none" (its libraries are loaded with ctypes); every
/// CPython file named *.abi3.so (PEP 384) → "cp3<floor>-abi3", `floor_minor` the highest of its
/// extensions' Py_LIMITED_API (0: unknown, then no tag); a file tied to one version → "cp3XY-cp3XY",
/// the version from its extension suffix (*.cpython-311-*.so) or its DT_NEEDED libpython, and when
/// no file says, from `claimed`. `claimed`: the python-abi tags the wheel already has (its file name,
/// or the tag its own build gave: {"cp311-cp311"}); a tag the files contradict is named in
/// `conflicts`. Paths without an ElfInfo count by their name alone.
AbiDecision abi_tag(const std::vector<std::string>& paths, int floor_minor, const std::map<std::string, ElfInfo>& elfs,
                    const std::vector<std::string>& claimed = {});

/// The python-abi parts of full tags, each once ("cp311-cp311-linux_x86_64" → "cp311-cp311").
std::vector<std::string> python_abi_of(const std::vector<std::string>& tags);

// ---------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------

struct File {
  std::string path;  ///< inside the wheel, '/'-separated, relative ("opforge_ops/_lib/x.so")
  std::string content;
  unsigned mode = 0644;  ///< only 0644 or 0755 are written (any x bit → 0755)
};

/// Every regular file under `dir` (recursively, through fs), as wheel Files named
/// `prefix + "/" + relative path`, sorted; executable files get 0755, others 0644. Skips
/// `__pycache__/` folders and `*.pyc`. A symlink contributes its target's content.
Result<std::vector<File>> collect_files(const probe::FileSystem& fs, const fs::path& dir, std::string_view prefix);

struct Spec {
  std::string name;     ///< distribution name as the user wrote it ("opforge-ops")
  std::string version;  ///< "0.1.0+cu13.g8cd046f"; checked with validate_version
  std::string summary;
  std::string description;  ///< markdown long description (twine check --strict wants it)
  std::string requires_python = ">=3.8";
  std::vector<File> files;  ///< the package files; the .dist-info is generated
  /// Full tags ("py3-none-linux_x86_64"). Empty: abi_tag() of the files + "-" + platform_tag() of
  /// the ELF files ("py3-none-manylinux_2_34_x86_64", "cp38-abi3-manylinux_2_34_x86_64").
  std::vector<std::string> tags;
  /// The oldest Python 3 minor the wheel's stable-ABI extensions (*.abi3.so) serve (their
  /// Py_LIMITED_API); needed when it holds one and `tags` is empty.
  int abi3_floor_minor = 0;
  /// The glibc floor (2.X → X) the ELF files must keep (check_floor); 0: none. pack() refuses a
  /// wheel that breaks it.
  int glibc_floor = 0;
  /// With `tags` given: yes replaces their platform part by what platform_tag() decides (a
  /// project's own bdist_wheel says linux_x86_64 whatever its files need), and a py3-none python-abi
  /// by what abi_tag() decides when the files use CPython and say which (a library that calls
  /// _PyType_Lookup loads in one CPython, whatever the build said).
  enum class Retag { no, yes } retag = Retag::no;
  std::int64_t source_date_epoch = kMinEpoch;  ///< clamped to ≥ kMinEpoch (DOS time, UTC fields)
};

struct Packed {
  std::string filename;  ///< "opforge_ops-0.1.0+cu13.g8cd046f-py3-none-manylinux_2_34_x86_64.whl"
  std::string bytes;     ///< the whole archive
  std::vector<std::string> tags;
  PlatformDecision platform;  ///< what platform_tag() decided (even when tags were given)
  /// What abi_tag() read in the files (even when tags were given: then `conflicts` says where the
  /// given tags and the files disagree).
  AbiDecision abi{};
  std::string sha256;  ///< hex of `bytes`
};

/// The file name pack() gives `spec`, without compressing anything (ELF files are read for the
/// platform tag as pack() reads them).
Result<std::string> file_name(const Spec& spec);

/// Builds the archive in memory: entries sorted, .dist-info last, RECORD the very last, fixed
/// mtime/permissions/deflate level, no extra fields. Same Spec → same bytes, whatever TZ says.
Result<Packed> pack(const Spec& spec);

struct Written {
  fs::path path;  ///< dist_dir / filename
  Packed packed;
};

/// pack() then write_file_atomic into `dist_dir` (created when missing).
Result<Written> write(probe::FileSystem& fs, const Spec& spec, const fs::path& dist_dir);

// ---------------------------------------------------------------------------------------------
// Reading, verifying, normalising, inspecting
// ---------------------------------------------------------------------------------------------

struct Entry {
  std::string path;
  std::string content;  ///< empty unless kept (see Keep)
  unsigned mode = 0;    ///< st_mode bits from the external attributes (type + perms)
  bool is_symlink = false;
  bool is_directory = false;
  std::uint64_t size = 0;  ///< uncompressed bytes, as read
  std::string sha256;      ///< raw digest of the uncompressed bytes
};

/// Wheels are untrusted input: a zip may declare a 1 TiB entry in 800 bytes or inflate a few
/// megabytes into gigabytes. read_archive refuses (bad_input, naming the entry and the limit) any
/// archive beyond these; real wheels of CUDA ops stay far below them.
struct Limits {
  std::uint64_t archive_bytes = 2ull << 30;  ///< the .whl file itself
  std::uint64_t entries = 100000;
  std::uint64_t entry_bytes = 1ull << 30;  ///< one entry, uncompressed
  std::uint64_t total_bytes = 4ull << 30;  ///< all entries, uncompressed
  /// Uncompressed/compressed for entries above 1 MiB (deflate tops out near 1032; shared
  /// libraries compress 2-10x).
  std::uint64_t ratio = 200;
};

/// Which entries read_archive keeps the content of; the others are streamed through sha256 only,
/// so that memory holds what the caller looks at, not the whole inflated archive.
enum class Keep {
  all,
  dist_info,          ///< files directly inside a *.dist-info/ folder (verify)
  dist_info_and_elf,  ///< those and ELF files (inspect)
};

/// Every entry of a zip archive, in archive order, within `limits`.
Result<std::vector<Entry>> read_archive(std::string_view bytes, Keep keep = Keep::all, const Limits& limits = {});

struct Report {
  std::string filename;
  std::vector<std::string> problems;  ///< each names the file and what is wrong; empty = valid
  std::size_t files_checked = 0;
  bool ok() const { return problems.empty(); }
};

/// Checks a wheel's bytes: RECORD hashes and sizes, no unlisted or missing file, name/version
/// identical in file name, .dist-info and METADATA, WHEEL tags vs the file name, path safety.
/// An archive beyond Limits is one problem (the limit it passes).
Report verify_bytes(std::string_view filename, std::string_view bytes);
/// The same checks on entries read_archive() already read (with at least Keep::dist_info).
Report verify_entries(std::string_view filename, const std::vector<Entry>& entries);
/// Reads `path` (a regular file within Limits::archive_bytes) and verify_bytes() it. bad_input
/// when the file is missing, not a regular file, too large, or not a zip archive within Limits.
Result<Report> verify(const probe::FileSystem& fs, const fs::path& path);

/// The distribution name a requirement starts with, normalised ("Torch>=2" → "torch").
std::string requirement_name(std::string_view req);

struct NormalizeOptions {
  std::int64_t source_date_epoch = kMinEpoch;
  std::optional<std::string> version;               ///< replace the version everywhere (e.g. add a local label)
  enum class Strip { yes, no } strip = Strip::yes;  ///< `strip --strip-unneeded` every ELF file
  /// `Requires-Dist:` values to set in METADATA (e.g. "torch==2.15.*"); one already there for the
  /// same distribution name is replaced.
  std::vector<std::string> requires_dist;
  /// Rewrites a package file (path in the wheel, content) → new content, or nullopt to keep it.
  std::function<std::optional<std::string>(const std::string&, const std::string&)> rewrite;
  /// The platform part of the tags from what the ELF files need (Spec::retag), and the glibc
  /// floor they must keep (Spec::glibc_floor; 0: none).
  Spec::Retag retag = Spec::Retag::no;
  int glibc_floor = 0;
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
  std::optional<IsaUse> isa{};  ///< with elf: the instruction sets its code uses
};

struct Inspection {
  std::string filename;
  std::string name;
  std::string version;
  std::vector<std::string> tags;  ///< from WHEEL
  std::vector<InspectedFile> files;
  PlatformDecision computed;               ///< what opforge would tag it
  std::vector<std::string> requirements;   ///< METADATA's Requires-Dist names (their libraries are theirs)
  std::vector<std::string> requires_dist;  ///< METADATA's Requires-Dist lines as written
  AbiDecision abi;                         ///< the python-abi tag opforge gives its files (the floor read from `tags`)
  Report report;                           ///< verify_bytes()
};

/// What a wheel's ELF files need of the system (its METADATA's requirements provide their
/// libraries), and the distributions that excludes; read from the wheel's bytes.
struct WheelNeeds {
  SystemNeeds needs;
  bool has_elf = false;
  std::vector<std::string> excluded;  ///< distributions_for(needs, Meets::no)
};
Result<WheelNeeds> wheel_needs(std::string_view bytes);

/// Reads `wheel` once (as verify() does, same errors) and describes it.
Result<Inspection> inspect(const probe::FileSystem& fs, const fs::path& wheel);
/// inspect() on bytes already read (the fuzzers' entry point).
Result<Inspection> inspect_bytes(std::string_view filename, std::string_view bytes);

// ---------------------------------------------------------------------------------------------
// build_info.py
// ---------------------------------------------------------------------------------------------

struct BuildInfo {
  std::string opforge_version;
  std::string package_version;                            ///< the wheel version
  std::string toolkit_version;                            ///< "13.0", empty when no CUDA op was built
  std::string host_compiler;                              ///< "gcc 12.2.0"
  std::vector<std::string> arch_list;                     ///< {"8.0", "9.0+PTX"}
  std::vector<std::string> ops;                           ///< ops built, sorted
  std::map<std::string, std::string> op_kinds;            ///< op → ops::kind_name(): "cpu" | "cuda"
  std::string source_commit;                              ///< full hex, or empty
  std::map<std::string, std::vector<std::string>> notes;  ///< built op → notes ("requested by: …")
  std::map<std::string, std::string> build_vars;          ///< every op of the catalogue → its DS_BUILD_* variable
};

/// The text of `opforge_ops/build_info.py`: a BUILD_INFO dict literal, keys sorted. Versions
/// only: callers must not pass absolute paths (bad_input when a value starts with '/').
Result<std::string> build_info_py(const BuildInfo& info);

}  // namespace opforge::wheel
