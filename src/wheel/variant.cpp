// Wheel variants (variant.h): properties from the binaries, variant.json and the index's
// variants.json in variantlib 0.2.2's exact form, and the variant wheel made from a plain one.
#include "wheel/variant.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <nlohmann/json.hpp>

#include "util/hash.h"
#include "util/json.h"
#include "util/strings.h"
#include "wheel/internal.h"

namespace opforge::wheel {

namespace {

using Json = nlohmann::json;

/// The providers, in priority order. nvidia's plugin answers, on the installing machine, which
/// sm_arch and CUDA versions it supports. abi_dependency is answered by the resolver itself from
/// the packages installed (variantlib's inject_abi_dependency); the schema still wants a provider
/// for it, and the one form variantlib 0.2.2 resolves with is an optional plugin, which it does
/// not load by default (a `builtin` provider it validates but refuses to resolve, and static
/// properties would claim every torch supported everywhere). `abi-dependency` is the name reserved
/// on PyPI for it.
Json providers() {
  return {{std::string(kNvidia),
           {{"plugin-api", "nvidia_variant_provider.plugin:NvidiaVariantPlugin"},
            {"requires", {"nvidia-variant-provider>=0.0.1,<1.0.0"}}}},
          {std::string(kAbiDependency), {{"optional", true}, {"requires", {"abi-dependency"}}}}};
}

bool all_of(std::string_view s, bool dot) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || (dot && c == '.');
  });
}

bool valid_property(const VariantProperty& p) {
  return all_of(p.ns, false) && all_of(p.feature, false) && all_of(p.value, true);
}

/// "13.0.88" → "13.0", "2.15.0+cu130" → "2.15"; empty when there is no major.minor.
std::string major_minor(std::string_view version) {
  auto parts = strings::split(version.substr(0, version.find('+')), '.');
  if (parts.size() < 2) return {};
  for (int i = 0; i < 2; ++i)
    if (parts[i].empty() || !std::all_of(parts[i].begin(), parts[i].end(), [](char c) { return std::isdigit(c); }))
      return {};
  return std::string(parts[0]) + "." + std::string(parts[1]);
}

Json variants_member(const std::vector<Variant>& variants) {
  Json out = Json::object();
  for (const auto& v : variants) {
    Json desc = Json::object();
    for (const auto& p : v.properties) desc[p.ns][p.feature].push_back(p.value);
    out[v.label] = std::move(desc);
  }
  return out;
}

std::string variants_document(const std::vector<Variant>& variants) {
  Json doc = {{"$schema", std::string(kVariantSchema)},
              {"default-priorities", {{"namespace", variant_namespaces()}}},
              {"providers", providers()},
              {"variants", variants_member(variants)}};
  // Python's json.dumps(indent=4, sort_keys=True), as variantlib writes it: no final newline.
  return util::json_dump(doc, 4);
}

}  // namespace

Variant make_variant(std::vector<VariantProperty> properties) {
  std::sort(properties.begin(), properties.end());
  properties.erase(std::unique(properties.begin(), properties.end()), properties.end());
  std::string hashed;
  for (const auto& p : properties) hashed += p.str() + "\n";
  return {sha256_hex(hashed).substr(0, 8), std::move(properties)};
}

bool valid_variant_label(std::string_view label) { return all_of(label, true) && label != "null"; }

std::vector<std::string> variant_namespaces() { return {std::string(kNvidia), std::string(kAbiDependency)}; }

VariantDecision variant_properties(const std::map<std::string, ElfInfo>& elfs, const VariantFacts& facts) {
  VariantDecision out;
  // The sm_arch values every CUDA library of the wheel carries: a node needs all of them to load.
  std::optional<std::set<std::string>> common;
  std::set<std::string> any;
  std::set<std::string> noted;
  bool cxx_torch = false, stable_torch = false;
  for (const auto& [path, elf] : elfs) {
    const auto linkage = torch_linkage(elf);
    cxx_torch |= linkage.abi == TorchAbi::cxx;
    stable_torch |= linkage.abi == TorchAbi::stable;
    if (elf.fatbin.empty()) continue;
    std::set<std::string> mine;
    for (const auto& img : elf.fatbin) {
      const std::string arch = std::to_string(img.arch);
      if (img.kind == FatbinImage::Kind::elf) {
        mine.insert(arch + "_real");
        if (img.suffix == 'a')
          noted.insert(img.name() + ": written as " + arch +
                       "_real; the schema has no value for code that runs on that one GPU only");
        else if (img.suffix == 'f')
          noted.insert(img.name() + ": written as " + arch +
                       "_real; the schema has no value for a family's code, so its later members are not named");
      } else if (img.kind == FatbinImage::Kind::ptx) {
        if (img.suffix)
          noted.insert(img.name() + ": not written: " + arch +
                       "_virtual would promise every newer GPU, and this PTX compiles for its own GPU or family only");
        else mine.insert(arch + "_virtual");
      }
    }
    any.insert(mine.begin(), mine.end());
    if (!common) common = mine;
    else {
      std::set<std::string> both;
      std::set_intersection(common->begin(), common->end(), mine.begin(), mine.end(), std::inserter(both, both.end()));
      common = std::move(both);
    }
  }
  if (common) {
    for (const auto& v : *common) out.properties.push_back({std::string(kNvidia), std::string(kSmArch), v});
    for (const auto& v : any)
      if (!common->contains(v))
        noted.insert("nvidia :: sm_arch :: " + v + ": not written: not every CUDA library of the wheel holds it");
    if (auto cuda = major_minor(facts.cuda_version); !cuda.empty())
      out.properties.push_back({std::string(kNvidia), std::string(kCudaLowerBound), cuda});
    else noted.insert("nvidia :: cuda_version_lower_bound: not written: the toolkit's version is unknown");
  }
  if (cxx_torch) {
    if (auto torch = major_minor(facts.torch_version); !torch.empty())
      out.properties.push_back({std::string(kAbiDependency), std::string(kTorch), torch});
    else noted.insert("abi_dependency :: torch: not written: the torch built against is unknown");
  } else if (stable_torch) {
    noted.insert(
        "abi_dependency :: torch: not written: the wheel uses torch's stable C ABI only, and the property names one "
        "torch version, not that one and newer");
  }
  std::sort(out.properties.begin(), out.properties.end());
  out.notes.assign(noted.begin(), noted.end());
  return out;
}

std::string variant_dist_info_json(const Variant& variant) { return variants_document({variant}); }

std::string variants_index_json(std::vector<Variant> variants) {
  std::sort(variants.begin(), variants.end(), [](auto& a, auto& b) { return a.label < b.label; });
  variants.erase(std::unique(variants.begin(), variants.end()), variants.end());
  return variants_document(variants);
}

Result<std::vector<Variant>> parse_variants(std::string_view text) {
  auto doc = util::json_parse_checked(text);
  if (!doc) return bad_input("not JSON: " + doc.error().message);
  if (!doc->is_object()) return bad_input("not a JSON object");
  std::set<std::string> declared;
  if (auto it = doc->find("providers"); it != doc->end() && it->is_object())
    for (auto& [ns, _] : it->items()) declared.insert(ns);
  auto it = doc->find("variants");
  if (it == doc->end() || !it->is_object()) return bad_input("no \"variants\" object");
  std::vector<Variant> out;
  for (auto& [label, desc] : it->items()) {
    if (!valid_variant_label(label)) return bad_input("variant label '" + strings::cut(label) + "' is not [0-9a-z._]+");
    if (!desc.is_object()) return bad_input("variants." + label + " is not an object");
    Variant v{label, {}};
    for (auto& [ns, features] : desc.items()) {
      if (!features.is_object()) return bad_input("variants." + label + "." + strings::cut(ns) + " is not an object");
      if (!declared.contains(ns))
        return bad_input("variants." + label + " uses namespace '" + strings::cut(ns) +
                         "', which no provider declares");
      for (auto& [feature, values] : features.items()) {
        if (!values.is_array()) return bad_input("variants." + label + "." + ns + "." + feature + " is not a list");
        for (auto& value : values) {
          if (!value.is_string())
            return bad_input("variants." + label + "." + ns + "." + feature + " holds a non-string");
          VariantProperty p{ns, feature, value.get<std::string>()};
          if (!valid_property(p))
            return bad_input("variants." + label + ": property '" + strings::cut(p.str()) + "' is not valid");
          v.properties.push_back(std::move(p));
        }
      }
    }
    std::sort(v.properties.begin(), v.properties.end());
    out.push_back(std::move(v));
  }
  return out;
}

std::optional<std::string> wheel_variant_json(std::string_view bytes) {
  auto entries = read_archive(bytes, Keep::dist_info);
  if (!entries) return std::nullopt;
  for (const auto& e : *entries) {
    const std::string_view folder = dist_info_of(e.path);
    if (!folder.empty() && std::string_view(e.path).substr(folder.size()) == "/" + std::string(kVariantDistInfoFile))
      return e.content;
  }
  return std::nullopt;
}

Result<Packed> make_variant_wheel(std::string_view filename, std::string_view bytes, const Variant& variant,
                                  std::int64_t source_date_epoch) {
  auto name = parse_wheel_filename(filename);
  if (!name) return bad_input("'" + strings::cut(std::string(filename)) + "' is not a wheel's file name");
  if (!name->variant.empty()) return bad_input(std::string(filename) + " is a variant wheel already");
  if (!valid_variant_label(variant.label)) return bad_input("variant label '" + variant.label + "' is not valid");
  for (const auto& p : variant.properties)
    if (!valid_property(p)) return bad_input("variant property '" + p.str() + "' is not valid");
  auto entries = read_archive(bytes);
  if (!entries) return bad_input(std::string(filename) + ": " + entries.error().message);
  const std::string dist_info = dist_info_dir(name->name + "-" + name->version);
  Spec spec;
  std::vector<File> extra;
  std::optional<std::string> metadata;
  for (const auto& e : *entries) {
    if (e.is_directory) continue;
    if (e.is_symlink) return bad_input(std::string(filename) + ": " + e.path + " is a symlink");
    const unsigned mode = (e.mode & 0111) ? 0755 : 0644;
    if (e.path.starts_with(dist_info + "/")) {
      const std::string leaf = e.path.substr(dist_info.size() + 1);
      if (leaf == "METADATA") metadata = e.content;
      else if (leaf == "WHEEL") spec.tags = header_values(e.content, "Tag");
      else if (leaf != "RECORD" && leaf != kVariantDistInfoFile) extra.push_back({e.path, e.content, mode});
      continue;
    }
    spec.files.push_back({e.path, e.content, mode});
  }
  if (!metadata || spec.tags.empty())
    return bad_input(std::string(filename) + ": " + dist_info + " lacks METADATA or WHEEL");
  spec.name = name->name;
  spec.version = name->version;
  spec.source_date_epoch = source_date_epoch;
  extra.push_back({dist_info + "/" + std::string(kVariantDistInfoFile), variant_dist_info_json(variant), 0644});
  auto packed = OPFORGE_TRY(pack_with_dist_info(spec, std::move(extra), std::move(metadata)));
  // The plain wheel's name (its build tag and tag set as written) with the label after it.
  packed.filename = std::string(filename.substr(0, filename.size() - 4)) + "-" + variant.label + ".whl";
  return packed;
}

}  // namespace opforge::wheel
