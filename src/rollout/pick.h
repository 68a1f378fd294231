#pragma once
/// `opforge pick INDEX [--nodes REPORT…]`: which wheel of a wheelhouse each node should install.
/// Every wheel is held to what `verify WHEEL --nodes` checks (rollout.h) and to what a variant
/// resolver checks (the node's supported properties against the wheel's variant.json); the wheels
/// that pass are ordered as an installer orders them: newest version first, then as variantlib
/// 0.2.2's resolver ranks the variants of one version, the plain wheel (the null variant) last.
/// The node's supported properties are written in the form variantlib reads for a static
/// provider, so that a plain resolver, given them, picks the same (docs/variants.md). Beside the
/// pick it says what an installer with NVIDIA's own plugin takes, which offers less (no older PTX)
/// and checks less (not the wheel's code). The choosing is pure (pick.cpp); reading the index and
/// this node (pick_index.cpp) and printing (pick_render.cpp) are at its edges.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probe/machine.h"
#include "rollout/rollout.h"
#include "util/error.h"
#include "wheel/variant.h"

namespace opforge::rollout {

/// One feature a node supports, as a variant provider answers on it: its values, best first.
struct SupportedFeature {
  std::string ns, feature;
  std::vector<std::string> values;
  bool operator==(const SupportedFeature&) const = default;
};

/// What the providers opforge's variant wheels name would report on a node, in the resolver's
/// priority order (the providers' order, `wheel::variant_namespaces()`, then each provider's
/// features), each feature's values best first:
///   nvidia :: cuda_version_lower_bound  the driver's CUDA X.Y, then X, then every older X.Y and
///                                       X down to 11 (as nvidia-variant-provider orders them)
///   nvidia :: sm_arch                   SASS that runs on the GPU: its own NN_real, then its
///                                       major's lower minors; then PTX it can JIT: its own
///                                       NN_virtual, then older ones, newest first (the plugin lists
///                                       only the major's N0_virtual of these). Several GPU kinds:
///                                       the newest's values, then what the others add
///   abi_dependency :: torch             the node's torch as X, X.Y, X.Y.Z (as variantlib's
///                                       resolver makes them from an installed torch)
/// A feature the report does not tell is left out, so no variant naming it is supported; `notes`
/// says why, one line each.
struct SupportedProperties {
  std::vector<SupportedFeature> features;
  std::vector<std::string> notes;
  bool operator==(const SupportedProperties&) const = default;
};
SupportedProperties supported_properties(const NodeFacts& node);

/// The properties as the "default-priorities" and "providers" of a variants.json, each provider a
/// static one ("static-properties", and "feature-order" when it has two features): what
/// variantlib 0.2.2 resolves with instead of running the providers' plugins. A namespace the node
/// supports nothing of is left out.
nlohmann::json static_providers_json(const SupportedProperties& properties);

/// One wheel of the index.
struct IndexWheel {
  std::string filename;
  std::string project;                    ///< PEP 503's name ("tiny-scale")
  std::string version;                    ///< as the file name spells it
  std::optional<wheel::Variant> variant;  ///< nullopt: a plain wheel, the resolver's null variant
  WheelNeeds needs;
  /// The index, relative to the folder, from which plain pip installs this wheel's files by the
  /// project's name: "simple" for a plain wheel, "variants/<label>/simple" for a variant wheel
  /// (wheel/index.h); empty when the folder has no such index (written by an older opforge).
  std::string pip_index{};
};

/// Every wheel of `index` (a dist/ folder, or the simple/ folder in it), read as `verify WHEEL
/// --nodes` reads one; a variant wheel's properties from its version's
/// `{name}-{version}-variants.json` beside it, which is what a variant-aware installer reads.
/// bad_input: not a folder, no wheel in it, a wheel that cannot be read, a variant wheel that its
/// version's file does not list (`opforge verify DIST` says where they disagree).
Result<std::vector<IndexWheel>> read_index(const probe::FileSystem& fs, const fs::path& index);

/// A wheel that does not fit a node: its checks that are not ok, in verify's words, and the
/// resolver's ("variant").
struct Rejected {
  std::string wheel;
  Verdict verdict = Verdict::fails;  ///< fails, or unknown when nothing fails but something cannot be told
  std::vector<Check> reasons;
  bool operator==(const Rejected&) const = default;
};

/// What a variant-aware installer (uv's variant preview, variantlib) installs on the node with
/// nvidia-variant-provider 0.0.2 answering there: the wheels its tags and requirements allow
/// (machine, glibc tag, Python, torch), filtered and ranked by the plugin's properties
/// (plugin_properties), the plain wheel last. It does not look at the wheel's code: not its GPU
/// code, the driver that code needs, its CPU level, the glibc its libraries use.
struct InstallerChoice {
  std::optional<std::string> wheel;  ///< nullopt: it installs none
  bool plain = false;                ///< `wheel` is the plain wheel (its fallback)
  Verdict verdict = Verdict::ok;     ///< that wheel on the node by pick's checks (ok: it runs)
  std::vector<Check> reasons;        ///< its checks that are not ok
  std::string why;                   ///< why it is not the pick; empty when it is
  bool operator==(const InstallerChoice&) const = default;
};

struct ProjectPick {
  std::string project;
  std::vector<std::string> order;  ///< the wheels that fit, best first: order[0] is the pick
  std::string pip_index;           ///< the pick's IndexWheel::pip_index
  std::vector<Rejected> rejected;  ///< in file-name order
  InstallerChoice installer;
  /// When no wheel fits: the checks that fail on the wheels nearest to fitting (fewest failing
  /// checks; the resolver's filter only when nothing else fails), in check order, and for each
  /// what would make a wheel fit, in the same order.
  std::vector<std::string> blocked_by, hints;
  bool operator==(const ProjectPick&) const = default;
};

/// The outcome for one node, or for several whose outcome is the same.
struct NodePick {
  std::vector<std::string> nodes;
  std::vector<fs::path> reports;
  SupportedProperties properties;
  std::vector<ProjectPick> projects;  ///< by project name
  bool ok() const;                    ///< every project has a wheel that fits
};

/// What nvidia-variant-provider 0.0.2 answers on the node (its plugin.py): the same
/// cuda_version_lower_bound as supported_properties (for a driver's CUDA 11 to 15), and for
/// sm_arch the newest GPU's NN_real down to its major's N0_real, then N0_virtual alone: no older
/// PTX (a 12.0 GPU: 120_real, 120_virtual). abi_dependency as supported_properties.
SupportedProperties plugin_properties(const NodeFacts& node);

/// Picks for one node. Pure: the wheels and the node's facts in, the outcome out.
NodePick pick_for_node(const std::vector<IndexWheel>& wheels, const NodeFacts& node);
/// Picks for every node, nodes with the same outcome in one entry, in the order first met.
std::vector<NodePick> pick(const std::vector<IndexWheel>& wheels, const std::vector<NodeFacts>& nodes);

/// The node `m` runs on, read as `verify --nodes` reads the `opforge doctor --json` report made
/// here (`python`'s torch): the same reader, so pick without reports is pick with this one.
NodeFacts this_node(probe::Machine m, const std::string& python);

/// `pick --json`: {"index", "ok", "nodes": [{"nodes", "reports", "ok", "properties" (as
/// static_providers_json), "notes", "projects": [{"project", "wheel" (null: none fits),
/// "pip_index_url" (null: none, or no such index), "order", "rejected": [{"wheel", "verdict",
/// "reasons": [{"check", "verdict", "detail"}]}], "installer": {"wheel" (null: none), "plain",
/// "same" (it is the pick), "why", "verdict" (null: no wheel), "reasons"}, "blocked_by", "hints"}]}]}.
/// `base_url` is where the folder is served ("https://host/wheels", "file:///abs/dist"); the pip
/// index URL is it + "/" + pip_index (empty: pip_index alone).
nlohmann::json pick_json(const std::string& index, const std::vector<NodePick>& picks,
                         const std::string& base_url = {});
/// The text `opforge pick` prints, from the same picks.
std::string pick_text(const std::string& index, const std::vector<NodePick>& picks, const std::string& base_url = {});

/// Where the reasons were shown: above on stdout as text, or in the JSON on stdout.
enum class Shown { text, json };
/// When some node gets no wheel: the error's message (those nodes and the checks that fail there)
/// and its hint (what fixes each of those checks, per node); nullopt when every node gets one.
struct NoWheel {
  std::string message, hint;
};
std::optional<NoWheel> no_wheel(const std::string& index, const std::vector<NodePick>& picks, Shown shown);

}  // namespace opforge::rollout
