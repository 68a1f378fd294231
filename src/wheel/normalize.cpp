#include <algorithm>
#include <cctype>

#include "target/platform.h"
#include "util/strings.h"
#include "wheel/internal.h"
#include "wheel/wheel.h"

namespace opforge::wheel {

// The distribution name a requirement starts with, normalised ("torch>=2" → "torch").
std::string requirement_name(std::string_view req) {
  std::size_t end = 0;
  while (end < req.size() &&
         (std::isalnum(static_cast<unsigned char>(req[end])) || req[end] == '-' || req[end] == '_' || req[end] == '.'))
    ++end;
  return normalize_name(std::string(req.substr(0, end)));
}

namespace {

// Replaces the Version header of a METADATA text, keeping every other byte.
std::string set_metadata_version(std::string_view text, std::string_view version) {
  std::string out;
  std::size_t start = 0;
  bool in_headers = true, done = false;
  while (start < text.size()) {
    auto nl = text.find('\n', start);
    std::size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    std::string_view line = text.substr(start, end - start);
    if (in_headers && (line == "\n" || line == "\r\n")) in_headers = false;
    if (in_headers && !done && strings::to_lower(line.substr(0, 8)) == "version:") {
      out += "Version: " + std::string(version) + "\n";
      done = true;
    } else {
      out += line;
    }
    start = end;
  }
  return out;
}

// Sets Requires-Dist headers: replaces those naming the same distributions, appends the rest after
// the last header.
std::string set_requires(std::string_view text, const std::vector<std::string>& reqs) {
  if (reqs.empty()) return std::string(text);
  std::vector<std::string> names;
  for (auto& r : reqs) names.push_back(requirement_name(r));
  std::string head, body;
  std::size_t start = 0;
  bool in_headers = true;
  while (start < text.size()) {
    auto nl = text.find('\n', start);
    std::size_t end = nl == std::string_view::npos ? text.size() : nl + 1;
    std::string_view line = text.substr(start, end - start);
    start = end;
    if (in_headers && (line == "\n" || line == "\r\n")) in_headers = false;
    if (!in_headers) {
      body += line;
      continue;
    }
    if (strings::to_lower(line.substr(0, 14)) == "requires-dist:") {
      auto value = strings::trim(line.substr(14));
      if (std::find(names.begin(), names.end(), requirement_name(value)) != names.end()) continue;
    }
    head += line;
  }
  if (!head.empty() && head.back() != '\n') head += "\n";
  for (auto& r : reqs) head += "Requires-Dist: " + r + "\n";
  return head + body;
}

/// The strip that reads `content`'s machine: binutils' own for this machine's ELF files, the
/// target's (Debian's <triple>-strip, beside its cross compiler) for a cross-built wheel's.
std::string strip_for(const std::string& content) {
  if (content.size() >= 20 &&
      content.compare(0, 4,
                      "\x7f"
                      "ELF") == 0 &&
      content[5] == 1) {  // little-endian
    const auto machine = static_cast<std::uint16_t>(static_cast<unsigned char>(content[18]) |
                                                    (static_cast<unsigned char>(content[19]) << 8));
    if (const auto* p = target::platform_of_elf(machine); p && p != &target::host_platform())
      return std::string(p->triple) + "-strip";
  }
  return "strip";
}

Result<std::string> strip_elf(probe::Machine m, const std::string& path_in_wheel, const std::string& content) {
  auto dir = OPFORGE_TRY(m.fs.make_temp_directory("opforge-strip-"));
  fs::path tmp = dir / "lib.so";
  auto cleanup = [&] { (void)m.fs.remove_all(dir); };
  if (auto st = m.fs.write_file_atomic(tmp, content, 0755); !st) {
    cleanup();
    return opforge::unexpected(st.error());
  }
  probe::Command cmd;
  const std::string strip = strip_for(content);
  cmd.argv = {strip, "--strip-unneeded", tmp.string()};
  auto res = m.proc.run(cmd);
  if (!res) {
    cleanup();
    return opforge::unexpected(res.error());
  }
  if (!res->ok()) {
    cleanup();
    return failure(strip + " --strip-unneeded failed on " + path_in_wheel + ": " + res->err,
                   strip == "strip"
                       ? "is binutils installed?"
                       : "is " + strip + " installed? (Debian: binutils-" + strip.substr(0, strip.size() - 6) + ")");
  }
  auto out = m.fs.read_file(tmp, Limits{}.entry_bytes);
  cleanup();
  return out;
}

/// The one .dist-info folder of the wheel ("name-1.0.dist-info").
Result<std::string> dist_info_folder(const std::vector<Entry>& entries, const fs::path& wheel) {
  std::string dist_info;
  for (const auto& e : entries) {
    const std::string_view folder = dist_info_of(e.path);
    if (folder.empty()) continue;
    if (!dist_info.empty() && dist_info != folder)
      return bad_input(wheel.string() + " holds more than one .dist-info folder");
    dist_info = folder;
  }
  if (dist_info.empty()) return bad_input(wheel.string() + " has no .dist-info folder");
  return dist_info;
}

const Entry* find_entry(const std::vector<Entry>& entries, const std::string& path) {
  for (const auto& e : entries)
    if (e.path == path) return &e;
  return nullptr;
}

/// The files of the wheel in its new name: `extra` for the .dist-info files kept as they are,
/// spec.files for the rest (rewritten and stripped as `options` asks).
struct Renamer {
  probe::Machine m;
  const fs::path& wheel;
  const NormalizeOptions& options;
  std::string dist_info, old_dist, new_dist;

  Status add(const Entry& e, Spec& spec, std::vector<File>& extra) const {
    if (e.is_directory) return {};
    if (e.is_symlink) return bad_input(wheel.string() + ": " + e.path + " is a symlink");
    if (auto why = unsafe_path_reason(e.path)) return bad_input(wheel.string() + ": " + e.path + " is " + *why);
    const unsigned mode = (e.mode & 0111) ? 0755 : 0644;
    if (e.path.starts_with(dist_info + "/")) {
      std::string leaf = e.path.substr(dist_info.size() + 1);
      // pack() writes these anew.
      if (leaf == "METADATA" || leaf == "WHEEL" || leaf == "RECORD" || leaf == "RECORD.jws" || leaf == "RECORD.p7s")
        return {};
      extra.push_back({dist_info_dir(new_dist) + "/" + leaf, e.content, mode});
      return {};
    }
    std::string path = e.path;
    // The .data folder carries the version too.
    if (path.starts_with(old_dist + ".data/")) path = new_dist + ".data/" + path.substr(old_dist.size() + 6);
    std::string content = e.content;
    if (options.rewrite)
      if (auto changed = options.rewrite(e.path, content)) content = std::move(*changed);
    if (options.strip == NormalizeOptions::Strip::yes && is_elf(content))
      content = OPFORGE_TRY(strip_elf(m, e.path, content));
    spec.files.push_back({path, std::move(content), mode});
    return {};
  }
};

}  // namespace

Result<Written> normalize(probe::Machine m, const fs::path& wheel, const fs::path& dist_dir,
                          const NormalizeOptions& options) {
  auto bytes = OPFORGE_TRY(m.fs.read_file(wheel, Limits{}.archive_bytes));
  auto entries = read_archive(bytes);
  if (!entries) return bad_input(wheel.string() + ": " + entries.error().message);
  const std::string dist_info = OPFORGE_TRY(dist_info_folder(*entries, wheel));
  const Entry* metadata = find_entry(*entries, dist_info + "/METADATA");
  const Entry* wheel_file = find_entry(*entries, dist_info + "/WHEEL");
  if (!metadata || !wheel_file) return bad_input(wheel.string() + ": " + dist_info + " lacks METADATA or WHEEL");

  Spec spec;
  spec.name = header_value(metadata->content, "Name").value_or("");
  spec.version = options.version.value_or(header_value(metadata->content, "Version").value_or(""));
  OPFORGE_CHECK(validate_version(spec.version));
  spec.tags = header_values(wheel_file->content, "Tag");
  spec.source_date_epoch = options.source_date_epoch;
  spec.retag = options.retag;
  spec.glibc_floor = options.glibc_floor;

  const Renamer renamer{m,
                        wheel,
                        options,
                        dist_info,
                        dist_info.substr(0, dist_info.size() - (dist_info_dir("").size())),
                        normalize_name(spec.name) + "-" + spec.version};
  std::vector<File> extra;
  for (const auto& e : *entries) OPFORGE_CHECK(renamer.add(e, spec, extra));
  std::string new_metadata = set_requires(set_metadata_version(metadata->content, spec.version), options.requires_dist);
  auto packed = OPFORGE_TRY(pack_with_dist_info(spec, std::move(extra), std::move(new_metadata)));
  return write_packed(m.fs, std::move(packed), dist_dir);
}

}  // namespace opforge::wheel
