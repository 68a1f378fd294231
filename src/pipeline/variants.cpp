// [wheel] variants: the finished wheel written again as a variant wheel beside it in dist/.
#include "pipeline/dist.h"
#include "pipeline/stages.h"
#include "util/hash.h"
#include "wheel/variant.h"

namespace opforge::pipeline {

Status write_variant(probe::Machine m, Outcome& done) {
  const plan::Plan& plan = done.plan;
  const fs::path dist = done.wheel.parent_path();
  const std::string filename = done.wheel.filename().string();
  auto bytes = OPFORGE_TRY(m.fs.read_file(done.wheel, wheel::Limits{}.archive_bytes));
  auto entries = wheel::read_archive(bytes, wheel::Keep::dist_info_and_elf);
  if (!entries) return failure(done.wheel.string() + ": " + entries.error().message);
  std::map<std::string, wheel::ElfInfo> elfs;
  for (const auto& e : *entries)
    if (wheel::is_elf(e.content))
      if (auto info = wheel::read_elf(e.content)) elfs.emplace(e.path, std::move(*info));
  // What the build knows beyond the binaries: the toolkit it compiled with and the torch it built
  // against (the same torch the Requires-Dist pin names).
  wheel::VariantFacts facts;
  if (plan.cuda.chosen) facts.cuda_version = plan.cuda.chosen->version.str();
  if (plan.cuda.torch && plan.cuda.torch->torch_version) facts.torch_version = *plan.cuda.torch->torch_version;
  auto decision = wheel::variant_properties(elfs, facts);
  done.variant_notes = decision.notes;

  // Variants of this wheel name made before describe bytes that are gone.
  const std::string stem = filename.substr(0, filename.size() - 4) + "-";
  auto variant = wheel::make_variant(decision.properties);
  const std::string keep = decision.properties.empty() ? std::string() : stem + variant.label + ".whl";
  for (auto& n : OPFORGE_TRY(m.fs.list_directory(dist))) {
    if (n == keep || !n.starts_with(stem) || !n.ends_with(".whl")) continue;
    auto parsed = wheel::parse_wheel_filename(n);
    if (parsed && !parsed->variant.empty() && n == stem + parsed->variant + ".whl")
      OPFORGE_CHECK(m.fs.remove_all(dist / n));
  }
  if (decision.properties.empty()) return {};
  auto packed = OPFORGE_TRY(wheel::make_variant_wheel(filename, bytes, variant, plan.source_date_epoch));
  OPFORGE_CHECK(m.fs.write_file_atomic(dist / packed.filename, packed.bytes, 0644));
  done.variant_wheel = dist / packed.filename;
  for (const auto& p : variant.properties) done.variant_properties.push_back(p.str());
  return {};
}

Status publish_variant(probe::Machine m, Outcome& done, const fs::path& dist, const std::string& cell,
                       std::chrono::steady_clock::duration took, const std::function<void(std::string_view)>& on_line) {
  if (done.variant_wheel.empty())
    return failure("matrix cell " + cell +
                       ": its wheel holds nothing a variant carries (no GPU code), so [matrix] arch "
                       "has no variant of it to publish",
                   "leave [matrix] arch out for a project without GPU code");
  auto bytes = OPFORGE_TRY(m.fs.read_file(done.variant_wheel, wheel::Limits{}.archive_bytes));
  OPFORGE_CHECK(m.fs.create_directories(dist));
  auto lock = OPFORGE_TRY(lock_dist(m, dist, on_line));
  OPFORGE_CHECK(recover_dist(m, dist));
  const fs::path to = dist / done.variant_wheel.filename();
  OPFORGE_CHECK(m.fs.write_file_atomic(to, bytes, 0644));
  SummaryRow row = summary_row(done, cell, took);
  row.wheel = to.filename().string();
  row.sha256 = sha256_hex(bytes);
  OPFORGE_CHECK(land(m.fs, dist, row));
  done.variant_wheel = to;
  return {};
}

}  // namespace opforge::pipeline
