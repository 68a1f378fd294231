/// The wheel's version (the recipe's version and its expanded local-version template) and, for a
/// DeepSpeed tree, the DS_BUILD_STRING that makes DeepSpeed's __version__ the wheel's.
#include "plan/stages.h"
#include "util/pep440.h"
#include "util/strings.h"

namespace opforge::plan {
namespace {

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  for (auto pos = s.find(from); pos != std::string::npos; pos = s.find(from, pos + to.size()))
    s.replace(pos, from.size(), to);
}

}  // namespace

void deepspeed_version(probe::Machine m, Plan& plan, const fs::path& ds_root, Env& ex) {
  auto vt = m.fs.read_file(ds_root / "version.txt");
  if (!vt) return;
  std::string base(strings::trim(*vt));
  if (plan.wheel_version.starts_with(base) && plan.wheel_version.size() > base.size())
    ex["DS_BUILD_STRING"] = plan.wheel_version.substr(base.size());
  else if (plan.wheel_version != base)
    plan.notes.push_back("version: the recipe's " + plan.wheel_version + " differs from version.txt's " + base +
                         "; the wheel's files are rewritten to " + plan.wheel_version);
}

Result<std::string> wheel_version(const recipe::Recipe& recipe, const cuda::Toolkit* toolkit, const SourceInfo& source,
                                  const std::optional<std::string>& torch_version) {
  const std::string& tmpl = recipe.package.local_version;
  if (tmpl == "none" || tmpl.empty()) return recipe.package.version;
  Location loc;
  if (auto it = recipe.locations.find("package.local_version"); it != recipe.locations.end()) loc = it->second;
  // Segments whose value is unknown are rewritten rather than left as placeholders: no toolkit
  // gives "cpu", no commit drops the segment.
  std::vector<std::string> segments;
  for (auto& seg : strings::split(tmpl, '.')) {
    std::string s(seg);
    if (s.find("{cuda_major}") != std::string::npos || s.find("{cuda_minor}") != std::string::npos) {
      if (!toolkit) {
        segments.push_back("cpu");
        continue;
      }
      replace_all(s, "{cuda_major}", std::to_string(toolkit->version.major));
      replace_all(s, "{cuda_minor}", std::to_string(toolkit->version.minor));
    }
    if (s.find("{torch_major}") != std::string::npos || s.find("{torch_minor}") != std::string::npos) {
      auto v = torch_version ? parse_version(torch_version->substr(0, torch_version->find('+'))) : std::nullopt;
      if (!v) continue;
      replace_all(s, "{torch_major}", std::to_string(v->major));
      replace_all(s, "{torch_minor}", std::to_string(v->minor));
    }
    if (s.find("{commit}") != std::string::npos) {
      if (source.commit.size() < 7) continue;
      replace_all(s, "{commit}", source.commit.substr(0, 7));
    }
    segments.push_back(s);
  }
  if (source.dirty && !source.commit.empty()) segments.push_back("dirty");
  std::string label = strings::join(segments, ".");
  if (label.empty()) return recipe.package.version;
  if (label.size() > 256 || !pep440::is_local_label(label)) {
    return bad_input("package.local_version gives the local version label '" + strings::cut(label) +
                         "', which is not [a-z0-9] segments separated by dots",
                     "use lower-case letters, digits and dots, e.g. \"cu{cuda_major}.g{commit}\", or \"none\"", loc);
  }
  return recipe.package.version + "+" + label;
}

}  // namespace opforge::plan
