#pragma once
/// Wheel variants (PEP 825, a draft), as variantlib 0.2.2 implements it: a variant wheel is a
/// plain wheel with `<name>-<version>.dist-info/variant.json` and its variant label after the
/// platform tag in the file name ("x-1.0-py3-none-linux_x86_64-3f2a9c1d.whl"); an index serves
/// `{name}-{version}-variants.json`, every variant of that version, beside the wheels. The
/// properties opforge writes come from the wheel's own binaries (variant_properties), never from
/// the user; docs/variants.md says what they can and cannot say.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"
#include "wheel/wheel.h"

namespace opforge::wheel {

/// The schema the JSON files name and follow, the one variantlib 0.2.2 writes (its
/// VARIANT_INFO_SCHEMA_URL). Everything opforge writes about variants follows this version.
inline constexpr std::string_view kVariantSchema = "https://variants-schema.wheelnext.dev/v0.2.0.json";
/// The file in the .dist-info folder.
inline constexpr std::string_view kVariantDistInfoFile = "variant.json";
/// The index file of one version: "{name}-{version}" + this.
inline constexpr std::string_view kVariantsIndexSuffix = "-variants.json";

/// The namespaces and features opforge's variants name (variant_properties below).
inline constexpr std::string_view kNvidia = "nvidia";
inline constexpr std::string_view kSmArch = "sm_arch";
inline constexpr std::string_view kCudaLowerBound = "cuda_version_lower_bound";
inline constexpr std::string_view kAbiDependency = "abi_dependency";
inline constexpr std::string_view kTorch = "torch";

/// `namespace :: feature :: value`; each part [a-z0-9_]+, the value [a-z0-9_.]+.
struct VariantProperty {
  std::string ns, feature, value;
  std::string str() const { return ns + " :: " + feature + " :: " + value; }
  auto operator<=>(const VariantProperty&) const = default;
};

/// A variant: its properties, sorted and unique (as variantlib sorts them), and its label.
struct Variant {
  std::string label;
  std::vector<VariantProperty> properties;
  bool operator==(const Variant&) const = default;
};

/// The variant of `properties` (sorted, duplicates dropped), labelled by its hash: the first 8 hex
/// digits of sha256 over each property's `str()` and a newline (variantlib's default label).
Variant make_variant(std::vector<VariantProperty> properties);

/// A label as the file name and the JSON may carry it: [0-9a-z._]+, not "null" (the null
/// variant's, which opforge never writes: the plain wheel is the fallback).
bool valid_variant_label(std::string_view label);

/// What a build knows beyond the binaries.
struct VariantFacts {
  std::string cuda_version;   ///< the toolkit the build used ("13.0"); empty: none
  std::string torch_version;  ///< the torch it was built against ("2.15.0+cu130"); empty: none
};

/// The properties a wheel's ELF files (path → info) say, and why each one is there or missing:
///   nvidia :: sm_arch :: <NN>_real     every CUDA library holds a cubin for sm_NN (sm_NNa, sm_NNf too)
///   nvidia :: sm_arch :: <NN>_virtual  every CUDA library holds PTX for compute_NN (plain PTX only)
///   nvidia :: cuda_version_lower_bound :: X.Y   the toolkit, when the wheel holds GPU code
///   abi_dependency :: torch :: X.Y     a library uses torch's C++ ABI (the stable C ABI alone: none)
struct VariantDecision {
  std::vector<VariantProperty> properties;  ///< sorted; empty: nothing to say, no variant
  std::vector<std::string> notes;           ///< what the schema could not say, one line each
};
VariantDecision variant_properties(const std::map<std::string, ElfInfo>& elfs, const VariantFacts& facts);

/// The providers every variant.json opforge writes declares, in priority order: the same for every
/// wheel, so that the files of one version merge (variantlib refuses differing providers).
std::vector<std::string> variant_namespaces();

/// variant.json's text for one variant, byte for byte what variantlib 0.2.2's
/// `VariantDistInfo.to_str()` writes (sorted keys, four-space indent, no final newline).
std::string variant_dist_info_json(const Variant& variant);
/// `{name}-{version}-variants.json`'s text for these variants, as variantlib's
/// generate-index-json merges the wheels' variant.json files (same form).
std::string variants_index_json(std::vector<Variant> variants);

/// The variants a variant.json or variants.json text lists (label → properties); bad_input naming
/// what is wrong (not JSON, a label or property the schema refuses, a namespace no provider has).
Result<std::vector<Variant>> parse_variants(std::string_view text);

/// A variant wheel made from a plain one (`filename`, `bytes`): the same files, variant.json added
/// to the .dist-info and RECORD, the label after the platform tag. Same inputs, same bytes
/// (`source_date_epoch` as the plain wheel's). bad_input when the wheel is already a variant or
/// cannot be read.
Result<Packed> make_variant_wheel(std::string_view filename, std::string_view bytes, const Variant& variant,
                                  std::int64_t source_date_epoch);

/// The variant.json a wheel's bytes hold; nullopt when it has none (or is no readable wheel).
std::optional<std::string> wheel_variant_json(std::string_view bytes);

}  // namespace opforge::wheel
