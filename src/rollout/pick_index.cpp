// `opforge pick`'s edge: the index's wheels and this node's facts read from the machine. The
// choosing (pick.cpp) and the printing (pick_render.cpp) take what these return.
#include <map>

#include "doctor/doctor.h"
#include "doctor/render.h"
#include "rollout/pick.h"
#include "util/strings.h"
#include "wheel/index.h"

namespace opforge::rollout {

Result<std::vector<IndexWheel>> read_index(const probe::FileSystem& fs, const fs::path& index) {
  fs::path dist = index.lexically_normal();
  if (dist.filename().empty()) dist = dist.parent_path();
  if (dist.filename() == "simple") dist = dist.parent_path();
  if (dist.empty()) dist = ".";
  const std::string hint = "give the dist/ folder that `opforge build` or `opforge index` wrote (or its simple/)";
  if (fs.resolved_type(dist) != probe::FileType::directory) return bad_input(index.string() + ": not a folder", hint);
  auto names = OPFORGE_TRY(fs.list_directory(dist));
  std::vector<IndexWheel> out;
  std::map<std::string, std::vector<wheel::Variant>> files;  // variants.json name → its variants
  for (const auto& name : names) {
    if (name.starts_with(".") || !strings::to_lower(name).ends_with(".whl")) continue;
    auto parsed = wheel::parse_wheel_filename(name);
    if (!parsed) return bad_input((dist / name).string() + ": not a wheel's file name", hint);
    auto needs = read_wheel_needs(fs, dist / name);
    if (!needs) {
      Error e = needs.error();
      if (e.message.find(name) == std::string::npos) e.message = (dist / name).string() + ": " + e.message;
      return opforge::unexpected(e);
    }
    IndexWheel w{name, wheel::project_name(parsed->name), parsed->version, std::nullopt, std::move(*needs)};
    const std::string pip_index = parsed->variant.empty() ? "simple" : wheel::variant_index_path(parsed->variant);
    // (A label "." or ".." has no index of its own: wheel/index.cpp writes none for it.)
    if (!parsed->variant.starts_with(".") &&
        fs.type_of(dist / pip_index / w.project / "index.html") == probe::FileType::regular)
      w.pip_index = pip_index;
    if (!parsed->variant.empty()) {
      const std::string file = parsed->name + "-" + parsed->version + std::string(wheel::kVariantsIndexSuffix);
      if (!files.contains(file)) {
        auto text = fs.read_file(dist / file);
        if (!text)
          return bad_input(
              (dist / file).string() + ": " + text.error().message + " (the variant wheel " + name + " needs it)",
              "`opforge index` writes it from the variant wheels");
        auto variants = wheel::parse_variants(*text);
        if (!variants)
          return bad_input((dist / file).string() + ": " + variants.error().message, "`opforge index` rewrites it");
        files[file] = *variants;
      }
      for (const auto& v : files[file])
        if (v.label == parsed->variant) w.variant = v;
      if (!w.variant)
        return bad_input(name + ": " + file + " does not list its variant '" + parsed->variant + "'",
                         "`opforge verify " + dist.string() + "` says where the index and its wheels disagree");
      // A variant wheel has no build record of its own; its lower bound is the toolkit that
      // compiled it (wheel/variant.h), what the driver check needs when the wheel's files do not say.
      for (const auto& p : w.variant->properties)
        if (w.needs.cuda.empty() && p.ns == wheel::kNvidia && p.feature == wheel::kCudaLowerBound)
          w.needs.cuda = p.value;
    }
    out.push_back(std::move(w));
  }
  if (out.empty()) return bad_input(dist.string() + ": holds no wheel", hint);
  return out;
}

NodeFacts this_node(probe::Machine m, const std::string& python) {
  const auto report = doctor::to_json(doctor::examine(m, python, {}));
  auto facts = parse_node_facts("(this node)", report.dump());
  facts.report = "(this node)";
  return facts;
}

}  // namespace opforge::rollout
