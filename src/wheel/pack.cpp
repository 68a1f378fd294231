// Packing a wheel: check the files, name it, add the .dist-info and zip it.
#include <algorithm>
#include <set>

#include "util/hash.h"
#include "util/strings.h"
#include "wheel/internal.h"
#include "wheel/wheel.h"

namespace opforge::wheel {

namespace {

bool by_path(const File& a, const File& b) { return a.path < b.path; }

/// What a wheel is called: its name, version and tags, the platform read from its ELF files.
struct Naming {
  std::string dist;  ///< "opforge_ops-0.1.0"
  PlatformDecision platform;
  AbiDecision abi;
  std::vector<std::string> tags;
  std::string filename;
};

/// `tags` with their platform part replaced by `platform` (duplicates dropped).
std::vector<std::string> retagged(const std::vector<std::string>& tags, const std::string& platform) {
  std::vector<std::string> out;
  for (const auto& t : tags) {
    auto a = t.find('-'), b = a == std::string::npos ? a : t.find('-', a + 1);
    std::string tag = b == std::string::npos ? t : t.substr(0, b + 1) + platform;
    if (std::find(out.begin(), out.end(), tag) == out.end()) out.push_back(std::move(tag));
  }
  return out;
}

/// The floor a cp3X-abi3 tag gives (the highest of them); 0 without one.
int abi3_floor_of(const std::vector<std::string>& python_abis) {
  int floor = 0;
  for (const auto& t : python_abis)
    if (t.starts_with("cp3") && t.ends_with("-abi3")) floor = std::max(floor, std::atoi(t.c_str() + 3));
  return floor;
}

/// A build's tags, their python-abi made what the files need where the build said py3-none of
/// files that use CPython (pip would install it on every Python; it loads in one).
std::vector<std::string> python_retagged(const std::vector<std::string>& tags, const AbiDecision& abi) {
  if (!abi.python_abi.starts_with("cp")) return tags;
  std::vector<std::string> out;
  for (const auto& t : tags) {
    std::string tag = t.starts_with("py3-none-") ? abi.python_abi + t.substr(8) : t;
    if (std::find(out.begin(), out.end(), tag) == out.end()) out.push_back(std::move(tag));
  }
  return out;
}

Result<Naming> name_wheel(const Spec& spec, const std::vector<std::string>& requirements) {
  if (spec.name.empty()) return bad_input("the wheel needs a name");
  OPFORGE_CHECK(validate_version(spec.version));
  std::map<std::string, ElfInfo> elfs;
  for (const auto& f : spec.files)
    if (is_elf(f.content)) {
      auto info = read_elf(f.content);
      if (!info) return bad_input(f.path + ": " + info.error().message);
      elfs.emplace(f.path, std::move(*info));
    }
  Naming n;
  n.dist = normalize_name(spec.name) + "-" + spec.version;
  n.platform = platform_tag(elfs, requirements);
  if (!n.platform.mixed.empty())
    return bad_input("the wheel would mix machines: " + strings::join(n.platform.mixed, "; "),
                     "build each platform into a wheel of its own (`--platform`, or a [matrix] platform axis)");
  if (spec.glibc_floor) OPFORGE_CHECK(check_floor(elfs, spec.glibc_floor, requirements));
  std::vector<std::string> paths;
  for (const auto& f : spec.files) paths.push_back(f.path);
  if (spec.tags.empty()) {
    n.abi = abi_tag(paths, spec.abi3_floor_minor, elfs);
    if (n.abi.python_abi.empty())
      return bad_input("the wheel holds " + n.abi.reason,
                       "give the floor of its stable-ABI extensions (Spec::abi3_floor_minor) or the tags");
    n.tags = {n.abi.python_abi + "-" + n.platform.platform};
  } else {
    // The build's own tags are evidence the files may lack (which CPython a library without an
    // extension suffix was built for); the files decide where they say more.
    const auto claimed = python_abi_of(spec.tags);
    n.abi = abi_tag(paths, std::max(spec.abi3_floor_minor, abi3_floor_of(claimed)), elfs, claimed);
    n.tags = spec.retag == Spec::Retag::yes ? python_retagged(spec.tags, n.abi) : spec.tags;
    if (spec.retag == Spec::Retag::yes && !elfs.empty()) n.tags = retagged(n.tags, n.platform.platform);
  }
  n.filename = n.dist + "-" + compressed_tag(n.tags) + ".whl";
  return n;
}

Status check_paths(const std::vector<File>& files, const std::string& dist_info) {
  std::set<std::string> seen;
  for (const auto& f : files) {
    if (auto why = unsafe_path_reason(f.path))
      return bad_input("wheel file '" + f.path + "' is " + *why,
                       "paths inside a wheel are relative and stay inside it");
    if (!seen.insert(f.path).second) return bad_input("wheel file '" + f.path + "' is given twice");
    if (f.path.starts_with(dist_info))
      return bad_input("wheel file '" + f.path + "' is inside the generated " + dist_info);
  }
  return {};
}

/// The entries in archive order: the files sorted, then the .dist-info sorted, RECORD the very last.
std::vector<File> ordered_entries(const Spec& spec, std::vector<File> dist_info_files, const std::string& dist_info) {
  std::vector<File> ordered = spec.files;
  std::sort(ordered.begin(), ordered.end(), by_path);
  std::sort(dist_info_files.begin(), dist_info_files.end(), by_path);
  for (auto& m : dist_info_files) ordered.push_back(std::move(m));
  std::string record = record_text(ordered, dist_info);
  ordered.push_back({dist_info + "RECORD", std::move(record), 0644});
  return ordered;
}

}  // namespace

Result<Packed> pack_with_dist_info(const Spec& spec, std::vector<File> dist_info_extra,
                                   std::optional<std::string> metadata) {
  auto naming = OPFORGE_TRY(name_wheel(spec, metadata ? required_names(*metadata) : std::vector<std::string>{}));
  const std::string dist_info = dist_info_dir(naming.dist) + "/";
  OPFORGE_CHECK(check_paths(spec.files, dist_info));
  dist_info_extra.push_back({dist_info + "METADATA", metadata ? *metadata : metadata_text(spec), 0644});
  dist_info_extra.push_back({dist_info + "WHEEL", wheel_text(naming.tags), 0644});
  auto ordered = ordered_entries(spec, std::move(dist_info_extra), dist_info);

  Packed out;
  out.bytes = OPFORGE_TRY(zip_entries(ordered, spec.source_date_epoch));
  out.sha256 = sha256_hex(out.bytes);
  out.filename = std::move(naming.filename);
  out.tags = std::move(naming.tags);
  out.platform = std::move(naming.platform);
  out.abi = std::move(naming.abi);
  return out;
}

Result<std::string> file_name(const Spec& spec) {
  auto naming = OPFORGE_TRY(name_wheel(spec, {}));
  return naming.filename;
}

Result<Packed> pack(const Spec& spec) { return pack_with_dist_info(spec, {}, std::nullopt); }

Result<Written> write_packed(probe::FileSystem& fs, Packed packed, const fs::path& dist_dir) {
  OPFORGE_CHECK(fs.create_directories(dist_dir));
  fs::path path = dist_dir / packed.filename;
  OPFORGE_CHECK(fs.write_file_atomic(path, packed.bytes, 0644));
  return Written{path, std::move(packed)};
}

Result<Written> write(probe::FileSystem& fs, const Spec& spec, const fs::path& dist_dir) {
  return write_packed(fs, OPFORGE_TRY(pack(spec)), dist_dir);
}

}  // namespace opforge::wheel
