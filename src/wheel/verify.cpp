#include <algorithm>
#include <charconv>
#include <set>

#include "util/strings.h"
#include "wheel/internal.h"
#include "wheel/variant.h"
#include "wheel/wheel.h"

namespace opforge::wheel {

namespace {

/// Untrusted text quoted in a problem: at most 200 bytes of it.
std::string clip(std::string_view text) {
  constexpr std::size_t kMax = 200;
  if (text.size() <= kMax) return std::string(text);
  return std::string(text.substr(0, kMax)) + "… (" + std::to_string(text.size()) + " bytes)";
}

// One RECORD row; the csv quoting that pip/setuptools use for paths with commas.
std::vector<std::string> csv_row(std::string_view line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

}  // namespace

Report verify_bytes(std::string_view filename, std::string_view bytes) {
  auto entries = read_archive(bytes, Keep::dist_info);
  if (!entries) {
    Report r = verify_entries(filename, {});
    r.problems = {entries.error().message};
    if (!parse_wheel_filename(filename))
      r.problems.insert(r.problems.begin(),
                        "file name '" + clip(filename) + "' is not NAME-VERSION(-BUILD)-PY-ABI-PLATFORM.whl");
    return r;
  }
  return verify_entries(filename, *entries);
}

namespace {

using Problems = std::vector<std::string>;

/// The archive's files by path, and the names of its .dist-info folders; unsafe, symlinked and
/// duplicate paths are problems.
struct Index {
  std::map<std::string, const Entry*> by_path;
  std::set<std::string> dist_infos;
};

Index index_entries(const std::vector<Entry>& entries, Problems& problems) {
  Index ix;
  for (const auto& e : entries) {
    if (auto why = unsafe_path_reason(e.path)) problems.push_back(e.path + ": unsafe path (" + *why + ")");
    if (e.is_symlink) problems.push_back(e.path + ": is a symlink (external attributes), not a file");
    if (e.is_directory) continue;
    if (!ix.by_path.emplace(e.path, &e).second) problems.push_back(e.path + ": appears twice in the archive");
    if (auto folder = dist_info_of(e.path); !folder.empty()) ix.dist_infos.emplace(folder);
  }
  return ix;
}

/// METADATA's Name and Version against the file name.
void check_metadata(const std::string& dist_info, const Entry& metadata, const WheelFileName& fname,
                    Problems& problems) {
  auto name = header_value(metadata.content, "Name");
  auto version = header_value(metadata.content, "Version");
  if (!name || normalize_name(*name) != normalize_name(fname.name))
    problems.push_back(dist_info + "/METADATA: Name '" + name.value_or("") + "' does not match the file name's '" +
                       fname.name + "'");
  if (!version || *version != fname.version)
    problems.push_back(dist_info + "/METADATA: Version '" + version.value_or("") + "' differs from the file name's '" +
                       fname.version + "'");
}

/// WHEEL's tags against the file name's, and its Wheel-Version.
/// A variant wheel's variant.json describes one variant, the label its file name carries.
void check_variant(const std::string& dist_info, const Index& ix, const std::string& label, Problems& problems) {
  const std::string path = dist_info + "/" + std::string(kVariantDistInfoFile);
  auto it = ix.by_path.find(path);
  if (it == ix.by_path.end()) {
    problems.push_back(path + ": missing (the file name carries variant label '" + label + "')");
    return;
  }
  auto variants = parse_variants(it->second->content);
  if (!variants) problems.push_back(path + ": " + variants.error().message);
  else if (variants->size() != 1)
    problems.push_back(path + ": lists " + std::to_string(variants->size()) + " variants, expected exactly one");
  else if (variants->front().label != label)
    problems.push_back(path + ": labels its variant '" + variants->front().label + "', the file name '" + label + "'");
}

void check_wheel_file(const std::string& dist_info, const Entry& wheel, const WheelFileName& fname,
                      Problems& problems) {
  auto tags = header_values(wheel.content, "Tag");
  auto expected = expand_tag(fname.tags());
  std::sort(tags.begin(), tags.end());
  std::sort(expected.begin(), expected.end());
  if (tags != expected)
    problems.push_back(dist_info + "/WHEEL: tags {" + strings::join(tags, ", ") + "} differ from the file name's {" +
                       strings::join(expected, ", ") + "}");
  if (header_value(wheel.content, "Wheel-Version").value_or("").substr(0, 2) != "1.")
    problems.push_back(dist_info + "/WHEEL: Wheel-Version is not 1.x");
}

/// Every RECORD row against the archive (hash and size), and every file against RECORD; returns
/// the number of files checked.
std::size_t check_record(const std::string& dist_info, const Entry& record, const Index& ix, Problems& problems) {
  std::size_t checked = 0;
  std::set<std::string> listed;
  for (const auto& line : strings::split(record.content, '\n')) {
    if (strings::trim(line).empty()) continue;
    auto cells = csv_row(line);
    if (cells.size() != 3) {
      problems.push_back(dist_info + "/RECORD: malformed row '" + clip(line) + "'");
      continue;
    }
    const std::string& path = cells[0];
    listed.insert(path);
    if (path == record.path) continue;
    auto it = ix.by_path.find(path);
    if (it == ix.by_path.end()) {
      problems.push_back(path + ": listed in RECORD but missing from the archive");
      continue;
    }
    ++checked;
    const Entry& entry = *it->second;
    const std::string hash = "sha256=" + urlsafe_b64_nopad(entry.sha256);
    if (cells[1] != hash)
      problems.push_back(path + ": sha256 differs from RECORD (archive " + hash + ", RECORD " + clip(cells[1]) + ")");
    if (cells[2] != std::to_string(entry.size))
      problems.push_back(path + ": size " + std::to_string(entry.size) + " differs from RECORD's " + clip(cells[2]));
  }
  for (const auto& [path, entry] : ix.by_path) {
    bool signature = path == dist_info + "/RECORD.jws" || path == dist_info + "/RECORD.p7s";
    if (!listed.contains(path) && !signature) problems.push_back(path + ": not listed in RECORD");
  }
  return checked;
}

}  // namespace

Report verify_entries(std::string_view filename, const std::vector<Entry>& entries) {
  Report r;
  r.filename = std::string(filename);
  Problems& problems = r.problems;

  auto fname = parse_wheel_filename(filename);
  if (!fname) problems.push_back("file name '" + clip(filename) + "' is not NAME-VERSION(-BUILD)-PY-ABI-PLATFORM.whl");
  Index ix = index_entries(entries, problems);
  if (ix.dist_infos.size() != 1) {
    problems.push_back("expected exactly one .dist-info folder, found " + std::to_string(ix.dist_infos.size()));
    return r;
  }
  const std::string dist_info = *ix.dist_infos.begin();
  if (fname) {
    std::string expected = dist_info_dir(fname->name + "-" + fname->version);
    if (dist_info != expected)
      problems.push_back(dist_info + ": does not match the file name (expected " + expected + ")");
  }

  auto get = [&](const std::string& leaf) -> const Entry* {
    auto it = ix.by_path.find(dist_info + "/" + leaf);
    if (it == ix.by_path.end()) problems.push_back(dist_info + "/" + leaf + ": missing");
    return it == ix.by_path.end() ? nullptr : it->second;
  };
  const Entry* metadata = get("METADATA");
  const Entry* wheel = get("WHEEL");
  const Entry* record = get("RECORD");
  if (metadata && fname) check_metadata(dist_info, *metadata, *fname, problems);
  if (wheel && fname) check_wheel_file(dist_info, *wheel, *fname, problems);
  if (record) r.files_checked = check_record(dist_info, *record, ix, problems);
  if (fname && !fname->variant.empty()) check_variant(dist_info, ix, fname->variant, problems);
  return r;
}

namespace {

/// The wheel file's bytes, or bad_input naming it: missing, not a regular file, too large.
Result<std::string> read_wheel(const probe::FileSystem& fs, const fs::path& path) {
  auto bytes = fs.read_file(path, Limits{}.archive_bytes);
  if (!bytes) {
    auto e = bytes.error();
    if (e.kind == ErrorKind::bad_input && e.hint.empty()) e.hint = "pass a .whl file";
    return opforge::unexpected(std::move(e));
  }
  return bytes;
}

}  // namespace

Result<Report> verify(const probe::FileSystem& fs, const fs::path& path) {
  auto bytes = OPFORGE_TRY(read_wheel(fs, path));
  auto entries = read_archive(bytes, Keep::dist_info);
  if (!entries) return bad_input(path.string() + ": " + entries.error().message, "is this a wheel?");
  return verify_entries(path.filename().string(), *entries);
}

Result<Inspection> inspect(const probe::FileSystem& fs, const fs::path& wheel) {
  auto bytes = OPFORGE_TRY(read_wheel(fs, wheel));
  auto in = inspect_bytes(wheel.filename().string(), bytes);
  if (!in) return bad_input(wheel.string() + ": " + in.error().message, in.error().hint);
  return in;
}

Result<Inspection> inspect_bytes(std::string_view filename, std::string_view bytes) {
  auto entries = read_archive(bytes, Keep::dist_info_and_elf);
  if (!entries) return bad_input(entries.error().message, "is this a wheel?");
  if (entries->empty()) return bad_input("an empty zip archive, not a wheel", "is this a wheel?");
  Inspection out;
  out.filename = std::string(filename);
  out.report = verify_entries(out.filename, *entries);
  std::map<std::string, ElfInfo> elfs;
  for (const auto& e : *entries) {
    if (e.is_directory) continue;
    InspectedFile f{e.path, e.size, e.mode & 07777, std::nullopt};
    if (is_elf(e.content)) {
      auto info = read_elf(e.content);
      if (info) {
        f.elf = *info;
        if (auto isa = read_isa(e.content)) f.isa = std::move(*isa);
        elfs.emplace(e.path, std::move(*info));
      } else {
        out.report.problems.push_back(e.path + ": " + info.error().message);
      }
    }
    if (auto folder = dist_info_of(e.path); !folder.empty()) {
      std::string leaf = e.path.substr(folder.size() + 1);
      if (leaf == "WHEEL") out.tags = header_values(e.content, "Tag");
      if (leaf == "METADATA") {
        out.requirements = required_names(e.content);
        out.requires_dist = header_values(e.content, "Requires-Dist");
        out.name = header_value(e.content, "Name").value_or("");
        out.version = header_value(e.content, "Version").value_or("");
      }
    }
    out.files.push_back(std::move(f));
  }
  out.computed = platform_tag(elfs, out.requirements);
  // The python-abi the wheel claims: its file name's (WHEEL's when the name is not a wheel's), and
  // the floor it gives its stable-ABI extensions ("cp38-abi3-..."); abi_tag() then says what
  // opforge reads in its files, and where they disagree.
  std::vector<std::string> claimed = python_abi_of(out.tags);
  if (auto name = parse_wheel_filename(out.filename))
    claimed = python_abi_of(expand_tag(name->python + "-" + name->abi + "-" + name->platform));
  int floor = 0;
  for (const auto& t : claimed)
    if (t.starts_with("cp3") && t.ends_with("-abi3")) {
      int minor = 0;
      auto digits = std::string_view(t).substr(3, t.find('-') - 3);
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), minor);
      if (ec == std::errc() && end == digits.data() + digits.size()) floor = std::max(floor, minor);
    }
  std::vector<std::string> paths;
  for (const auto& f : out.files) paths.push_back(f.path);
  out.abi = abi_tag(paths, floor, elfs, claimed);
  if (!out.abi.abi3_files.empty() && floor == 0)
    out.report.problems.push_back("WHEEL: tags {" + strings::join(out.tags, ", ") + "} do not say abi3, but " +
                                  strings::join(out.abi.abi3_files, ", ") +
                                  " need CPython (tag it cp3<floor>-abi3-<platform>)");
  return out;
}

Result<WheelNeeds> wheel_needs(std::string_view bytes) {
  auto entries = OPFORGE_TRY(read_archive(bytes, Keep::dist_info_and_elf));
  std::map<std::string, ElfInfo> elfs;
  std::vector<std::string> requirements;
  for (const auto& e : entries) {
    if (is_elf(e.content)) elfs.emplace(e.path, OPFORGE_TRY(read_elf(e.content)));
    if (auto folder = dist_info_of(e.path); !folder.empty() && e.path.substr(folder.size() + 1) == "METADATA")
      requirements = required_names(e.content);
  }
  WheelNeeds out;
  out.has_elf = !elfs.empty();
  out.needs = system_needs(elfs, requirements);
  out.excluded = distributions_for(out.needs, Meets::no);
  return out;
}

}  // namespace opforge::wheel
