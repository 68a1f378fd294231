#pragma once
/// [source] sdist: a project's source archive, a local file or an http(s) URL, checked against
/// its sha256 and unpacked once into the cache. Sources from the internet are untrusted: a URL is
/// fetched by python3's urllib (probe::ProcessRunner: C++ has no HTTP client here), written to a
/// temporary file and renamed only once its sha256 is the pinned one; the archive is unpacked under
/// archive.h's rules; no code of the project runs until a build does.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "probe/machine.h"
#include "source/archive.h"
#include "util/error.h"

namespace opforge::source {

namespace fs = std::filesystem;

/// An unpacked sdist in the cache.
struct Sdist {
  fs::path root;            ///< the archive's one top folder: <entry>/tree/<name>-<version>
  fs::path entry;           ///< <sdists folder>/<archive stem>-<first 16 hex of its sha256>
  std::string sha256;       ///< the archive's, lower-case hex
  bool downloaded = false;  ///< this call downloaded the archive
  bool reused = false;      ///< the cache held the unpacked tree already
};

/// "https://..." or "http://..." (a URL), as opposed to a local path.
bool is_url(std::string_view spec);
/// 64 hex digits (either case).
bool is_sha256(std::string_view text);

/// The cache entry's folder name for the archive `spec` (a path or URL) whose sha256 is `sha256`:
/// its file name without the archive suffix, then the digest's first 16 digits.
std::string sdist_key(const std::string& spec, const std::string& sha256);

/// The entry `fetch_sdist` would use, when it is known without reading anything (a URL's: its
/// sha256 is pinned); nullopt for a local file, whose entry depends on its content.
std::optional<fs::path> sdist_entry(const std::string& spec, const std::optional<std::string>& sha256,
                                    const fs::path& sdists_dir);

/// Whether `entry` (sdist_entry's) holds the URL `spec`'s download or its unpacked tree: then
/// fetch_sdist needs no network.
bool in_cache(const probe::FileSystem& files, const std::string& spec, const fs::path& entry);

/// Makes the archive `spec` (an absolute path, or a URL) available unpacked under `sdists_dir`.
/// A URL needs `sha256`; a local file's is checked when given. The download (a URL's, once: kept
/// in the entry beside the tree) and the unpacking each go to a temporary name renamed when
/// complete; an entry whose tree exists is reused without reading the archive again.
/// Errors: bad_input "SPEC: sha256 is A, but [source] sha256 is B" (the download is removed), an
/// unreadable file, an archive archive.h refuses (the entry this call made is removed);
/// unsatisfied when the URL cannot be downloaded (python3's last line); failed for I/O.
Result<Sdist> fetch_sdist(probe::Machine m, const std::string& spec, const std::optional<std::string>& sha256,
                          const fs::path& sdists_dir, const ArchiveLimits& limits = {});

/// The program python3 runs to download: `python3 -I -c SCRIPT URL FILE MAX_BYTES` (exposed for tests).
extern const char* const kFetchScript;

}  // namespace opforge::source
