#pragma once
/// Helpers shared by the wheel/ sources (not part of the public API).
#include "util/hash.h"
#include "wheel/wheel.h"

namespace opforge::wheel {

/// The .dist-info rule, once: the folder of a wheel whose `dist` is "name-version" (the normalised
/// name and the version, as in the file name) is "name-version.dist-info".
std::string dist_info_dir(std::string_view dist);
/// The .dist-info folder `path` is in ("a-1.dist-info" for "a-1.dist-info/RECORD"), or empty when
/// its first component is no .dist-info folder.
std::string_view dist_info_of(std::string_view path);

/// "sha256=<urlsafe base64 without padding>" as RECORD wants it.
std::string record_hash(std::string_view content);
std::string urlsafe_b64_nopad(std::string_view raw);
/// Why a path inside a wheel is unsafe (absolute, `..`, backslash), or nullopt when it is fine.
std::optional<std::string> unsafe_path_reason(std::string_view path);
/// "py3-none-a", "py3-none-b" → "py3-none-a.b" (the file-name form of a tag set).
std::string compressed_tag(const std::vector<std::string>& tags);
/// UTC DOS {time, date} fields for an epoch, clamped to 1980..2107.
std::pair<std::uint16_t, std::uint16_t> dos_time_date(std::int64_t epoch);
/// Zips files in the given order with fixed times, modes and compression.
Result<std::string> zip_entries(const std::vector<File>& ordered, std::int64_t epoch);
std::string metadata_text(const Spec& spec);
/// RECORD: a `path,hash,size` row for each file, then RECORD's own row with no hash.
std::string record_text(const std::vector<File>& files, const std::string& dist_info);
std::string wheel_text(const std::vector<std::string>& tags);
/// pack() with extra .dist-info files (kept by normalize: entry_points.txt, top_level.txt ...)
/// and, when given, a METADATA text used as is instead of the generated one.
Result<Packed> pack_with_dist_info(const Spec& spec, std::vector<File> dist_info_extra,
                                   std::optional<std::string> metadata);
/// Writes a packed wheel into `dist_dir` (created when missing) under its file name, atomically.
Result<Written> write_packed(probe::FileSystem& fs, Packed packed, const fs::path& dist_dir);
/// The value of the first `Key: value` header line of an email-style text (METADATA, WHEEL).
std::optional<std::string> header_value(std::string_view text, std::string_view key);
/// Every value of `Key:` header lines (WHEEL's Tag lines).
std::vector<std::string> header_values(std::string_view text, std::string_view key);
/// The tags a file-name tag triple stands for ("py3-none-a.b" → two tags).
std::vector<std::string> expand_tag(std::string_view compressed);

}  // namespace opforge::wheel
