/// The native wheel's contents (op libraries, build_info.py, metadata) and the facts read back from
/// a finished wheel of either backend (its needs, tags, GPU targets).
#include <algorithm>
#include <set>
#include <tuple>

#include "opforge/version.h"
#include "pipeline/stages.h"
#include "util/hash.h"
#include "util/strings.h"
#include "wheel/wheel.h"

namespace opforge::pipeline {

namespace {

std::string long_description(const plan::Plan& plan, const std::vector<std::string>& built) {
  if (!plan.recipe.package.description.empty()) return plan.recipe.package.description;
  std::string d =
      "# " + plan.recipe.package.name + "\n\nPrebuilt ops, built by opforge " + std::string(kVersion) + ".\n\n";
  d += "- ops: " + (built.empty() ? std::string("none") : strings::join(built, ", ")) + "\n";
  if (plan.cuda.chosen) d += "- CUDA toolkit: " + plan.cuda.chosen->version.str() + "\n";
  if (!plan.arch.arches.empty()) d += "- GPU architectures: " + plan.arch.str() + "\n";
  d += "\nImport `opforge_ops`; `opforge_ops.build_info` says how this wheel was built.\n";
  return d;
}

}  // namespace

std::optional<wheel::WheelNeeds> needs_of(std::string_view bytes) {
  auto needs = wheel::wheel_needs(bytes);
  if (!needs || !needs->has_elf) return std::nullopt;
  return *needs;
}

std::vector<std::string> tags_of(const fs::path& wheel) {
  auto parts = wheel::parse_wheel_filename(wheel.filename().string());
  if (!parts) return {};
  return {parts->tags()};
}

namespace {

/// sm before compute, shorter (older) first: "sm_80 sm_90 sm_90a compute_90".
std::vector<std::string> sorted_targets(const std::set<std::string>& targets) {
  std::vector<std::string> v(targets.begin(), targets.end());
  std::sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) {
    auto key = [](const std::string& t) { return std::make_tuple(t.starts_with("compute_"), t.size(), t); };
    return key(a) < key(b);
  });
  return v;
}

}  // namespace

std::map<std::string, std::vector<std::string>> wheel_gpu_targets_by_file(std::string_view bytes) {
  std::map<std::string, std::vector<std::string>> out;
  auto entries = wheel::read_archive(bytes);
  if (!entries) return out;
  for (const auto& e : *entries)
    if (wheel::is_elf(e.content))
      if (auto info = wheel::read_elf(e.content)) {
        std::set<std::string> names;
        for (const auto& img : info->fatbin)
          if (img.kind != wheel::FatbinImage::Kind::unknown) names.insert(img.name());
        if (!names.empty()) out[e.path] = sorted_targets(names);
      }
  return out;
}

std::size_t wheel_library_count(std::string_view bytes) {
  auto entries = wheel::read_archive(bytes);
  if (!entries) return 0;
  return static_cast<std::size_t>(
      std::count_if(entries->begin(), entries->end(), [](const auto& e) { return wheel::is_elf(e.content); }));
}

std::vector<std::string> wheel_gpu_targets(std::string_view bytes) {
  std::set<std::string> all;
  for (const auto& [file, targets] : wheel_gpu_targets_by_file(bytes)) all.insert(targets.begin(), targets.end());
  return sorted_targets(all);
}

Result<std::vector<wheel::File>> wheel_files(probe::Machine m, const plan::Plan& plan, const compile::RunResult& ran,
                                             const fs::path& package, wheel::BuildInfo& info,
                                             std::map<std::string, std::string>& hashes) {
  auto files = OPFORGE_TRY(wheel::collect_files(m.fs, package, "opforge_ops"));
  std::erase_if(files, [](const wheel::File& f) { return f.path == "opforge_ops/build_info.py"; });
  info.opforge_version = kVersion;
  info.package_version = plan.wheel_version;
  info.toolkit_version = plan.cuda.chosen ? plan.cuda.chosen->version.str() : "";
  info.host_compiler = compiler_text(plan);
  info.source_commit = plan.source.commit;
  bool any_cuda = false;
  for (auto& o : ran.outputs) {
    auto bytes = OPFORGE_TRY(m.fs.read_file(o.library, wheel::Limits{}.entry_bytes));
    files.push_back({"opforge_ops/_lib/" + o.library.filename().string(), bytes, 0755});
    hashes[o.library.filename().string()] = sha256_hex(bytes);
    if (!o.extension.empty()) {
      auto ext = OPFORGE_TRY(m.fs.read_file(o.extension, wheel::Limits{}.entry_bytes));
      files.push_back({"opforge_ops/_lib/" + o.extension.filename().string(), ext, 0755});
      hashes[o.extension.filename().string()] = sha256_hex(ext);
    }
    info.ops.push_back(o.op);
    for (auto& d : plan.ops)
      if (d.manifest.name == o.op) {
        bool cuda_op = d.manifest.kind == ops::Kind::cuda;
        any_cuda |= cuda_op;
        info.op_kinds[o.op] = ops::kind_name(d.manifest.kind);
      }
  }
  if (any_cuda)
    for (auto& a : plan.arch.arches) info.arch_list.push_back(a.str());
  // Which variable asks for each op (what opforge_ops names when an op is missing), and why each
  // built op is in the wheel: recipe and environment facts, the same on every machine.
  for (auto& d : plan.ops) {
    info.build_vars[d.manifest.name] = d.manifest.build_var;
    if (d.builds() && !d.requested_by.empty()) info.notes[d.manifest.name].push_back("requested by: " + d.requested_by);
  }
  std::vector<std::pair<std::string, std::string_view>> elfs;
  std::map<std::string, std::string> op_of_path;
  for (auto& o : ran.outputs) {
    op_of_path["opforge_ops/_lib/" + o.library.filename().string()] = o.op;
    if (!o.extension.empty()) op_of_path["opforge_ops/_lib/" + o.extension.filename().string()] = o.op;
  }
  for (auto& f : files) elfs.emplace_back(f.path, f.content);
  OPFORGE_CHECK(check_cpu_target(plan, elfs, op_of_path));
  files.push_back({"opforge_ops/build_info.py", OPFORGE_TRY(wheel::build_info_py(info)), 0644});
  std::sort(files.begin(), files.end(), [](auto& a, auto& b) { return a.path < b.path; });
  return files;
}

wheel::Spec wheel_spec(const plan::Plan& plan, const wheel::BuildInfo& info, std::vector<wheel::File> files) {
  const plan::WheelOptions w = plan::wheel_options(plan);
  wheel::Spec spec;
  spec.name = plan.recipe.package.name;
  spec.version = w.version;
  spec.summary = plan.recipe.package.summary;
  spec.description = long_description(plan, info.ops);
  spec.requires_python = plan.recipe.package.requires_python;
  spec.files = std::move(files);
  spec.source_date_epoch = w.source_date_epoch;
  spec.glibc_floor = w.glibc_floor;
  // the floor of the stable-ABI extensions the wheel holds (wheel::abi_tag names its tag)
  for (auto& d : plan.ops)
    if (d.manifest.python_extension) {
      const std::string path = "opforge_ops/_lib/" + d.manifest.python_extension->file_name();
      if (std::any_of(spec.files.begin(), spec.files.end(), [&](auto& f) { return f.path == path; }))
        spec.abi3_floor_minor = std::max(spec.abi3_floor_minor, d.manifest.python_extension->floor_minor);
    }
  return spec;
}

}  // namespace opforge::pipeline
