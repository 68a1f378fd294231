// opforge pick: a node's supported variant properties, the index read back, and the wheel each
// node gets, ordered as variantlib's resolver orders variants; the four-node comparison with
// variantlib 0.2.2 itself.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "probe/fake_machine.h"
#include "rollout/pick.h"
#include "test_util.h"
#include "util/pep440.h"
#include "util/strings.h"
#include "wheel/index.h"
#include "wheel/variant.h"
#include "wheel/wheel.h"
#include "wheel_test_util.h"

using namespace opforge;
namespace fs = std::filesystem;

namespace {

/// `opforge doctor --json` as a node writes it (the parts pick reads).
std::string node_report(const std::string& host, const std::string& machine, const std::string& capability,
                        const std::string& driver = R"({"version": "580.65.06", "cuda": "13.0"})",
                        const std::string& torch = R"({"status": "torch not installed"})") {
  const std::string cpu = machine == "x86_64" ? "\"x86-64-v3\"" : "null";
  const std::string gpus =
      capability.empty() ? "" : R"({"index": 0, "name": "GPU", "capability": ")" + capability + "\"}";
  return R"({"gpus": {"reader": "driver API", "devices": [)" + gpus + R"(]}, "torch": )" + torch +
         R"(, "node": {"format": 1, "host": ")" + host + R"(", "machine": ")" + machine +
         R"(", "glibc": "2.36", "glibcxx": "3.4.30", "cxxabi": "1.3.13", "cpu_level": )" + cpu +
         R"(, "python": "3.11", "driver": )" + driver + "}}";
}

rollout::NodeFacts node(const std::string& host, const std::string& machine, const std::string& capability,
                        const std::string& driver = R"({"version": "580.65.06", "cuda": "13.0"})",
                        const std::string& torch = R"({"status": "torch not installed"})") {
  return rollout::parse_node_facts(host + ".json", node_report(host, machine, capability, driver, torch));
}

wheel::FatbinImage fatbin(wheel::FatbinImage::Kind kind, int arch, std::pair<int, int> isa = {0, 0}) {
  wheel::FatbinImage i;
  i.kind = kind;
  i.arch = arch;
  i.ptx_isa = isa;
  return i;
}
constexpr auto kSass = wheel::FatbinImage::Kind::elf;
constexpr auto kPtx = wheel::FatbinImage::Kind::ptx;

/// A wheel of project x holding `images`, built with CUDA 13.0, for `machine`, as variant `props`
/// (none: the plain wheel).
rollout::IndexWheel index_wheel(const std::string& version, std::vector<wheel::FatbinImage> images,
                                std::vector<wheel::VariantProperty> props, const std::string& machine = "x86_64") {
  rollout::IndexWheel w;
  w.project = "x";
  w.version = version;
  if (!props.empty()) w.variant = wheel::make_variant(std::move(props));
  w.filename =
      "x-" + version + "-py3-none-manylinux_2_34_" + machine + (w.variant ? "-" + w.variant->label : "") + ".whl";
  w.needs.filename = w.filename;
  w.needs.python_tags = {"py3"};
  w.needs.abi_tags = {"none"};
  w.needs.platforms = {"manylinux_2_34_" + machine};
  w.needs.system.glibc_minor = 34;
  w.needs.cpu_level = machine == "x86_64" ? 1 : 0;
  w.needs.cuda = "13.0";
  w.needs.gpu_libraries = {{"x/_C.so", std::move(images)}};
  return w;
}

const wheel::VariantProperty cuda13{"nvidia", "cuda_version_lower_bound", "13.0"};
wheel::VariantProperty sm(const std::string& v) { return {"nvidia", "sm_arch", v}; }

/// The four wheels of one version: sm_80, sm_90, sm_90 PTX only, and the plain fallback holding all three.
std::vector<rollout::IndexWheel> four_wheels() {
  return {index_wheel("1.0", {fatbin(kSass, 80)}, {cuda13, sm("80_real")}),
          index_wheel("1.0", {fatbin(kSass, 90)}, {cuda13, sm("90_real")}),
          index_wheel("1.0", {fatbin(kPtx, 90, {9, 0})}, {cuda13, sm("90_virtual")}),
          index_wheel("1.0", {fatbin(kSass, 80), fatbin(kSass, 90), fatbin(kPtx, 90, {9, 0})}, {})};
}

std::string reasons(const rollout::Rejected& r) {
  std::vector<std::string> out;
  for (const auto& c : r.reasons) out.push_back(c.name + ": " + c.detail);
  return strings::join(out, " | ");
}

}  // namespace

TEST(Pep440Compare, AsPipOrdersVersions) {
  auto lt = [](const char* a, const char* b) { return pep440::compare(a, b) < 0 && pep440::compare(b, a) > 0; };
  EXPECT_TRUE(lt("1.0.dev1", "1.0a1"));
  EXPECT_TRUE(lt("1.0a1", "1.0b1"));
  EXPECT_TRUE(lt("1.0b1", "1.0rc1"));
  EXPECT_TRUE(lt("1.0rc1", "1.0"));
  EXPECT_TRUE(lt("1.0", "1.0.post1"));
  EXPECT_TRUE(lt("1.0a1.dev1", "1.0a1"));
  EXPECT_TRUE(lt("0.9", "0.10"));
  EXPECT_TRUE(lt("1.0", "1.0+cu130"));
  EXPECT_TRUE(lt("0.19.8+cu130torch214", "0.19.8+cu132torch215"));
  EXPECT_TRUE(lt("1.0+abc", "1.0+7"));  // a number above a word
  EXPECT_TRUE(lt("1.0+cu9", "1.0+cu9.1"));
  EXPECT_EQ(pep440::compare("1.0", "1.0.0"), 0);
  EXPECT_EQ(pep440::compare("1.0", "x"), std::nullopt);
}

TEST(RolloutPick, SupportedPropertiesOfAnH100Node) {
  auto p =
      rollout::supported_properties(node("h100", "x86_64", "9.0", R"({"version": "580.65.06", "cuda": "13.0"})",
                                         R"({"python": "python3", "status": "CUDA 13.0", "version": "2.15.0+cu130"})"));
  ASSERT_EQ(p.features.size(), 3u);
  EXPECT_EQ(p.features[0].feature, "cuda_version_lower_bound");
  const std::vector<std::string> head(p.features[0].values.begin(), p.features[0].values.begin() + 4);
  EXPECT_EQ(head, (std::vector<std::string>{"13.0", "13", "12.20", "12.19"}));
  EXPECT_EQ(p.features[0].values.back(), "11");
  EXPECT_EQ(p.features[1].feature, "sm_arch");
  const std::vector<std::string> sm_head(p.features[1].values.begin(), p.features[1].values.begin() + 5);
  EXPECT_EQ(sm_head, (std::vector<std::string>{"90_real", "90_virtual", "89_virtual", "88_virtual", "87_virtual"}));
  EXPECT_EQ(p.features[2].values, (std::vector<std::string>{"2", "2.15", "2.15.0"}));
  EXPECT_TRUE(p.notes.empty()) << strings::join(p.notes, "\n");
  // The form variantlib reads for a static provider.
  auto j = rollout::static_providers_json(p);
  EXPECT_EQ(j["default-priorities"]["namespace"], nlohmann::json({"nvidia", "abi_dependency"}));
  EXPECT_EQ(j["providers"]["nvidia"]["feature-order"], nlohmann::json({"cuda_version_lower_bound", "sm_arch"}));
  EXPECT_EQ(j["providers"]["abi_dependency"]["static-properties"]["torch"], nlohmann::json({"2", "2.15", "2.15.0"}));
  EXPECT_FALSE(j["providers"]["abi_dependency"].contains("feature-order"));
}

TEST(RolloutPick, SmArchOfOtherGpusAndWhatIsNotKnown) {
  // 8.6: its major's lower minors run its SASS; PTX of its own and older GPUs JITs.
  auto a = rollout::supported_properties(node("a", "x86_64", "8.6"));
  ASSERT_EQ(a.features.size(), 2u);
  const auto& v = a.features[1].values;
  EXPECT_EQ(std::vector<std::string>(v.begin(), v.begin() + 9),
            (std::vector<std::string>{"86_real", "85_real", "84_real", "83_real", "82_real", "81_real", "80_real",
                                      "86_virtual", "80_virtual"}));
  EXPECT_EQ(v[9], "75_virtual");
  EXPECT_EQ(std::find(v.begin(), v.end(), "90_virtual"), v.end());
  // Two GPU kinds: the newest's values, then the other's; a wheel with code for both is picked, one
  // with code for the newer alone is refused by the gpu check (it does not run on the A100).
  auto mixed = node("m", "x86_64", "9.0");
  mixed.gpus->push_back({1, "A100", 8, 0, ""});
  const auto mixed_props = rollout::supported_properties(mixed);
  const auto& mv = mixed_props.features[1].values;
  EXPECT_EQ(std::vector<std::string>(mv.begin(), mv.begin() + 3),
            (std::vector<std::string>{"90_real", "90_virtual", "89_virtual"}));
  EXPECT_NE(std::find(mv.begin(), mv.end(), "80_real"), mv.end());
  auto both = index_wheel("1.0", {fatbin(kSass, 80), fatbin(kSass, 90)}, {cuda13, sm("80_real"), sm("90_real")});
  auto only90 = index_wheel("1.0", {fatbin(kSass, 90)}, {cuda13, sm("90_real")});
  auto mp = rollout::pick_for_node({only90, both}, mixed);
  EXPECT_EQ(mp.projects[0].order, std::vector<std::string>{both.filename});
  ASSERT_EQ(mp.projects[0].rejected.size(), 1u);
  EXPECT_EQ(reasons(mp.projects[0].rejected[0]), "gpu: GPU 1 (A100, 8.0): x/_C.so holds no code it can run (sm_90)");
  // The driver branch stands for the CUDA it supports when the report lacks the driver API's answer.
  auto old = rollout::supported_properties(node("o", "x86_64", "9.0", R"({"version": "535.104.05"})"));
  EXPECT_EQ(old.features[0].values.front(), "12.2");
  // No driver: nothing of nvidia, said why; no torch: nothing of abi_dependency.
  auto none = rollout::supported_properties(node("c", "x86_64", "", "null"));
  EXPECT_TRUE(none.features.empty());
  EXPECT_EQ(none.notes, (std::vector<std::string>{"nvidia :: cuda_version_lower_bound: no NVIDIA driver on the node",
                                                  "abi_dependency :: torch: no torch on the node"}));
  EXPECT_EQ(rollout::static_providers_json(none)["providers"], nlohmann::json::object());
}

// The order of the resolver: the exact real architecture, then PTX, the plain wheel last; each
// rejected wheel says why in verify's words.
TEST(RolloutPick, H100AndA100GetTheirOwnArchitecture) {
  const auto wheels = four_wheels();
  auto h = rollout::pick_for_node(wheels, node("h100", "x86_64", "9.0"));
  ASSERT_EQ(h.projects.size(), 1u);
  EXPECT_TRUE(h.ok());
  EXPECT_EQ(h.projects[0].order,
            (std::vector<std::string>{wheels[1].filename, wheels[2].filename, wheels[3].filename}));
  ASSERT_EQ(h.projects[0].rejected.size(), 1u);
  EXPECT_EQ(h.projects[0].rejected[0].wheel, wheels[0].filename);
  EXPECT_EQ(reasons(h.projects[0].rejected[0]),
            "gpu: GPU 0 (GPU, 9.0): x/_C.so holds no code it can run (sm_80) | variant: its nvidia :: sm_arch "
            "(80_real) is none of the node's (90_real, 90_virtual, 89_virtual, 88_virtual, …)");

  auto a = rollout::pick_for_node(wheels, node("a100", "x86_64", "8.0"));
  EXPECT_EQ(a.projects[0].order, (std::vector<std::string>{wheels[0].filename, wheels[3].filename}));
  EXPECT_EQ(a.projects[0].rejected.size(), 2u);
}

TEST(RolloutPick, NoWheelForAnOldDriverOrAnotherMachine) {
  const auto wheels = four_wheels();
  auto old =
      rollout::pick_for_node(wheels, node("old07", "x86_64", "9.0", R"({"version": "535.104.05", "cuda": "12.2"})"));
  EXPECT_FALSE(old.ok());
  ASSERT_EQ(old.projects[0].rejected.size(), 4u);
  for (const auto& r : old.projects[0].rejected)
    EXPECT_NE(reasons(r).find("driver: driver 535.104.05 is older than 580, the least CUDA 13.0 needs"),
              std::string::npos)
        << reasons(r);
  EXPECT_EQ(reasons(old.projects[0].rejected[3]).find("variant:"), std::string::npos);  // the plain wheel: no variant
  auto grace = rollout::pick_for_node(wheels, node("grace01", "aarch64", "9.0"));
  EXPECT_FALSE(grace.ok());
  for (const auto& r : grace.projects[0].rejected) {
    EXPECT_EQ(r.verdict, rollout::Verdict::fails);
    EXPECT_NE(reasons(r).find("machine: wheel is for x86_64, node is aarch64"), std::string::npos) << reasons(r);
  }
  // An aarch64 wheel is Grace's.
  auto both = wheels;
  both.push_back(index_wheel("1.0", {fatbin(kSass, 90)}, {cuda13, sm("90_real")}, "aarch64"));
  both.back().filename = "x-1.0-py3-none-manylinux_2_34_aarch64-" + both.back().variant->label + ".whl";
  grace = rollout::pick_for_node(both, node("grace01", "aarch64", "9.0"));
  ASSERT_TRUE(grace.ok());
  EXPECT_EQ(grace.projects[0].order, std::vector<std::string>{both.back().filename});
}

TEST(RolloutPick, NewestVersionFirstAndTheTorchPinDecides) {
  // Two cells of a matrix: torch 2.14 and 2.15, one version each.
  auto w14 =
      index_wheel("1.0+torch214", {fatbin(kSass, 90)}, {cuda13, sm("90_real"), {"abi_dependency", "torch", "2.14"}});
  w14.needs.torch = "==2.14.*";
  auto w15 =
      index_wheel("1.0+torch215", {fatbin(kSass, 90)}, {cuda13, sm("90_real"), {"abi_dependency", "torch", "2.15"}});
  w15.needs.torch = "==2.15.*";
  auto old = index_wheel("0.9", {fatbin(kSass, 90)}, {});
  const std::vector<rollout::IndexWheel> wheels{old, w14, w15};
  auto on14 = rollout::pick_for_node(
      wheels, node("n", "x86_64", "9.0", R"({"version": "580.65.06", "cuda": "13.0"})", R"({"version": "2.14.1"})"));
  EXPECT_EQ(on14.projects[0].order, (std::vector<std::string>{w14.filename, old.filename}));
  ASSERT_EQ(on14.projects[0].rejected.size(), 1u);
  EXPECT_EQ(
      reasons(on14.projects[0].rejected[0]),
      "torch: the wheel requires torch==2.15.*, the node has 2.14.1 (pip refuses it; forced in, `undefined symbol` "
      "at import) | variant: its abi_dependency :: torch (2.15) is none of the node's (2, 2.14, 2.14.1)");
  // Without torch on the node the newest version comes first (pip would install its torch), and
  // the resolver supports no abi_dependency: only the plain wheel is left.
  auto bare = rollout::pick_for_node(wheels, node("n", "x86_64", "9.0"));
  EXPECT_EQ(bare.projects[0].order, std::vector<std::string>{old.filename});
}

// NVIDIA's plugin offers a GPU its own major's SASS and the major's N0 PTX only: a variant-aware
// installer never takes older PTX, and falls back to the plain wheel.
TEST(RolloutPick, WhatNvidiasPluginOffers) {
  auto values = [](const rollout::NodeFacts& n) {
    for (const auto& f : rollout::plugin_properties(n).features)
      if (f.feature == "sm_arch") return f.values;
    return std::vector<std::string>{};
  };
  EXPECT_EQ(values(node("b", "x86_64", "12.0")), (std::vector<std::string>{"120_real", "120_virtual"}));
  EXPECT_EQ(values(node("a", "x86_64", "8.6")),
            (std::vector<std::string>{"86_real", "85_real", "84_real", "83_real", "82_real", "81_real", "80_real",
                                      "80_virtual"}));
  // Several GPUs: the newest's alone (the plugin asks only it).
  auto mixed = node("m", "x86_64", "9.0");
  mixed.gpus->push_back({1, "A100", 8, 0, ""});
  EXPECT_EQ(values(mixed), (std::vector<std::string>{"90_real", "90_virtual"}));
  // The rest as ours.
  const auto ours = rollout::supported_properties(mixed), theirs = rollout::plugin_properties(mixed);
  EXPECT_EQ(theirs.features[0], ours.features[0]);
  EXPECT_EQ(theirs.notes, ours.notes);
}

// The issue's Blackwell node: pick takes the compute_100 PTX variant (JIT on 12.0); an installer with
// NVIDIA's plugin is not offered 100_virtual, takes the plain wheel, and its sm_80 code does not run.
TEST(RolloutPick, OnABlackwellNodeTheInstallerTakesThePlainWheel) {
  const auto sm80 = index_wheel("1.0", {fatbin(kSass, 80)}, {cuda13, sm("80_real")});
  const auto ptx100 = index_wheel("1.0", {fatbin(kPtx, 100, {9, 0})}, {cuda13, sm("100_virtual")});
  const auto plain = index_wheel("1.0", {fatbin(kSass, 80)}, {});
  const auto p = rollout::pick_for_node({sm80, ptx100, plain}, node("rtx01", "x86_64", "12.0"));
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p.projects[0].order, std::vector<std::string>{ptx100.filename});
  const auto& installer = p.projects[0].installer;
  EXPECT_EQ(installer.wheel, plain.filename);
  EXPECT_EQ(installer.verdict, rollout::Verdict::fails);
  const std::string line =
      "    resolver a variant-aware installer with nvidia-variant-provider 0.0.2 takes " + plain.filename +
      ", the plain wheel, instead: the plugin does not offer the pick's nvidia :: sm_arch 100_virtual here, only "
      "120_real, 120_virtual; that wheel does not run here: gpu: GPU 0 (GPU, 12.0): x/_C.so holds no code it can "
      "run (sm_80)\n";
  EXPECT_EQ(rollout::pick_text("dist", {p}),
            "dist for 1 node: 1 get a wheel\n\nrtx01\n  x: install " + ptx100.filename + "\n" + line + "    not      " +
                sm80.filename +
                "\n               gpu: GPU 0 (GPU, 12.0): x/_C.so holds no code it can run (sm_80)\n"
                "               variant: its nvidia :: sm_arch (80_real) is none of the node's (120_real, "
                "120_virtual, 110_virtual, 103_virtual, …)\n"
                "    not      " +
                plain.filename +
                "\n               gpu: GPU 0 (GPU, 12.0): x/_C.so holds no code it can run (sm_80)\n"
                "  note: abi_dependency :: torch: no torch on the node\n");
  const auto j = rollout::pick_json("dist", {p})["nodes"][0]["projects"][0]["installer"];
  EXPECT_EQ(j, nlohmann::json::parse(R"({"wheel": ")" + plain.filename + R"J(", "plain": true, "same": false,
    "why": "the plugin does not offer the pick's nvidia :: sm_arch 100_virtual here, only 120_real, 120_virtual",
    "verdict": "fails", "reasons": [{"check": "gpu", "verdict": "fails",
    "detail": "GPU 0 (GPU, 12.0): x/_C.so holds no code it can run (sm_80)"}]})J"));
  // A plain wheel with PTX the GPU can JIT runs there too, and the line says so.
  const auto fat = index_wheel("1.0", {fatbin(kSass, 80), fatbin(kPtx, 90, {9, 0})}, {});
  const auto q = rollout::pick_for_node({sm80, ptx100, fat}, node("rtx01", "x86_64", "12.0"));
  EXPECT_EQ(q.projects[0].order, (std::vector<std::string>{ptx100.filename, fat.filename}));
  EXPECT_NE(rollout::pick_text("dist", {q})
                .find(", the plain wheel, instead: the plugin does not offer the pick's nvidia :: sm_arch 100_virtual "
                      "here, only 120_real, 120_virtual; that wheel runs here too\n"),
            std::string::npos);
  // Where the installer takes the pick there is no such line, and the JSON says it is the same.
  const auto h = rollout::pick_for_node(four_wheels(), node("h100", "x86_64", "9.0"));
  EXPECT_EQ(rollout::pick_text("dist", {h}).find("resolver"), std::string::npos);
  EXPECT_EQ(rollout::pick_json("dist", {h})["nodes"][0]["projects"][0]["installer"]["same"], true);
}

// An H100 whose only problem is its driver (550: CUDA 12.4; the wheels are CUDA 13.0): the error
// names the driver check and the hint is the driver's, not another arch list.
TEST(RolloutPick, AnOldDriverGetsADriverHint) {
  const auto wheels = four_wheels();
  const auto p =
      rollout::pick_for_node(wheels, node("h100old", "x86_64", "9.0", R"({"version": "550.54.15", "cuda": "12.4"})"));
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.projects[0].blocked_by, std::vector<std::string>{"driver"});
  const std::string hint =
      "update its NVIDIA driver to 580 or newer, the least CUDA 13.0 needs, or build the wheel with CUDA 12.4 or "
      "older, which its driver supports ([cuda] version in the recipe)";
  EXPECT_EQ(p.projects[0].hints, std::vector<std::string>{hint});
  const auto none = rollout::no_wheel("dist", {p}, rollout::Shown::text);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->message, "1 node gets no wheel from dist: h100old (driver); each wheel's reasons are above");
  EXPECT_EQ(none->hint, "h100old: " + hint);
  // What an installer with the plugin takes there: the plain wheel, whose CUDA 13 code needs driver 580.
  EXPECT_NE(rollout::pick_text("dist", {p})
                .find("  x: no wheel fits\n    resolver a variant-aware installer with nvidia-variant-provider 0.0.2 "
                      "takes " +
                      wheels[3].filename +
                      ", the plain wheel: it does not check the driver the wheel's CUDA needs; that wheel does not run "
                      "here: driver: driver 550.54.15 is older than 580, the least CUDA 13.0 needs\n"),
            std::string::npos)
      << rollout::pick_text("dist", {p});
  // With --json the reasons are on stdout, in the JSON.
  EXPECT_EQ(rollout::no_wheel("dist", {p}, rollout::Shown::json)->message,
            "1 node gets no wheel from dist: h100old (driver); each wheel's reasons are in the JSON on stdout, "
            "nodes[].projects[].rejected");
  const auto j = rollout::pick_json("dist", {p})["nodes"][0]["projects"][0];
  EXPECT_EQ(j["blocked_by"], nlohmann::json({"driver"}));
  EXPECT_EQ(j["hints"], nlohmann::json({hint}));
  // Two nodes, two checks: each named with its own, the hints per node.
  const auto both =
      rollout::pick(wheels, {node("h100old", "x86_64", "9.0", R"({"version": "550.54.15", "cuda": "12.4"})"),
                             node("grace01", "aarch64", "9.0"), node("h100", "x86_64", "9.0")});
  const auto two = rollout::no_wheel("dist", both, rollout::Shown::text);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->message,
            "2 nodes get no wheel from dist: h100old (driver), grace01 (machine); each wheel's reasons are above");
  EXPECT_EQ(two->hint, "h100old: " + hint +
                           "\n        grace01: build a wheel for aarch64: `opforge build RECIPE --platform aarch64`");
  EXPECT_FALSE(rollout::no_wheel("dist", {both[2]}, rollout::Shown::text));
}

// One wording per check: the CUDA 13.0 requirement reads the same whether the build record, the
// wheel's PTX or its variant's cuda_version_lower_bound told it.
TEST(RolloutPick, TheDriverRequirementIsWordedOnce) {
  wheel::Inspection in;
  in.filename = "x-1.0-py3-none-manylinux_2_34_x86_64.whl";
  wheel::ElfInfo elf;
  elf.fatbin = {fatbin(kPtx, 90, {9, 0})};
  in.files = {{"x/_C.so", 1, 0755, elf}};
  auto record = rollout::wheel_needs(in, "13.0"), ptx = rollout::wheel_needs(in, "");
  ASSERT_EQ(ptx.cuda, "13.0");
  // A variant wheel without GPU code or record: its lower bound, as read_index gives it.
  wheel::Spec s;
  s.name = "x";
  s.version = "1.0";
  s.summary = "x";
  s.description = "x\n";
  s.tags = {"py3-none-manylinux_2_34_x86_64"};
  s.source_date_epoch = 1700000000;
  s.files = {{"x/__init__.py", "X = 1\n", 0644}};
  auto packed = wheel::pack(s);
  ASSERT_TRUE(packed) << packed.error().message;
  auto made = wheel::make_variant_wheel(packed->filename, packed->bytes, wheel::make_variant({cuda13, sm("90_real")}),
                                        1700000000);
  ASSERT_TRUE(made);
  probe::FakeMachine m;
  m.fs.add_file("/dist/" + made->filename, made->bytes);
  ASSERT_TRUE(wheel::write_simple_index(m.fs, "/dist"));
  auto read = rollout::read_index(m.fs, "/dist");
  ASSERT_TRUE(read) << read.error().message;
  const auto old = node("h100old", "x86_64", "9.0", R"({"version": "550.54.15", "cuda": "12.4"})");
  for (const auto& needs : {record, ptx, (*read)[0].needs}) {
    const auto row = rollout::check_node(needs, old);
    const auto driver = std::find_if(row.checks.begin(), row.checks.end(), [](auto& c) { return c.name == "driver"; });
    ASSERT_NE(driver, row.checks.end());
    EXPECT_EQ(driver->detail, "driver 550.54.15 is older than 580, the least CUDA 13.0 needs");
  }
}

TEST(RolloutPick, IdenticalNodesAreOneEntry) {
  const auto wheels = four_wheels();
  auto picks = rollout::pick(
      wheels, {node("gpu01", "x86_64", "9.0"), node("a100", "x86_64", "8.0"), node("gpu02", "x86_64", "9.0")});
  ASSERT_EQ(picks.size(), 2u);
  EXPECT_EQ(picks[0].nodes, (std::vector<std::string>{"gpu01", "gpu02"}));
  EXPECT_EQ(picks[1].nodes, std::vector<std::string>{"a100"});
  auto j = rollout::pick_json("dist", picks);
  EXPECT_EQ(j["ok"], true);
  EXPECT_EQ(j["nodes"][0]["projects"][0]["wheel"], wheels[1].filename);
  EXPECT_EQ(j["nodes"][0]["reports"], nlohmann::json({"gpu01.json", "gpu02.json"}));
  const auto text = rollout::pick_text("dist", picks);
  EXPECT_NE(text.find("dist for 3 nodes: 3 get a wheel\n\ngpu01, gpu02\n  x: install " + wheels[1].filename + "\n"),
            std::string::npos)
      << text;
}

TEST(RolloutPick, TheIndexIsReadBackWithItsVariants) {
  wheel::Spec s;
  s.name = "tiny-scale";
  s.version = "0.1.0";
  s.summary = "tiny";
  s.description = "tiny\n";
  s.source_date_epoch = 1700000000;
  s.files = {{"tiny_scale/__init__.py", "X = 1\n", 0644}};
  auto plain = wheel::pack(s);
  ASSERT_TRUE(plain) << plain.error().message;
  const auto v = wheel::make_variant({sm("90_real")});
  auto made = wheel::make_variant_wheel(plain->filename, plain->bytes, v, 1700000000);
  ASSERT_TRUE(made);
  probe::FakeMachine m;
  EXPECT_EQ(rollout::read_index(m.fs, "/dist").error().message, "/dist: not a folder");
  ASSERT_TRUE(m.fs.create_directories("/dist"));
  EXPECT_EQ(rollout::read_index(m.fs, "/dist").error().message, "/dist: holds no wheel");
  m.fs.add_file("/dist/" + plain->filename, plain->bytes);
  m.fs.add_file("/dist/" + made->filename, made->bytes);
  auto missing = rollout::read_index(m.fs, "/dist");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::bad_input);
  EXPECT_NE(missing.error().message.find("tiny_scale-0.1.0-variants.json: "), std::string::npos)
      << missing.error().message;
  ASSERT_TRUE(wheel::write_simple_index(m.fs, "/dist"));
  for (const char* at : {"/dist", "/dist/", "/dist/simple", "/dist/simple/"}) {
    auto wheels = rollout::read_index(m.fs, at);
    ASSERT_TRUE(wheels) << at << ": " << wheels.error().message;
    ASSERT_EQ(wheels->size(), 2u);
    // In file-name order: "…-any-<label>.whl" before "…-any.whl".
    EXPECT_EQ((*wheels)[0].project, "tiny-scale");
    EXPECT_EQ((*wheels)[1].filename, plain->filename);
    EXPECT_FALSE((*wheels)[1].variant);
    ASSERT_TRUE((*wheels)[0].variant);
    EXPECT_EQ(*(*wheels)[0].variant, v);
    EXPECT_EQ((*wheels)[0].pip_index, "variants/" + v.label + "/simple");
    EXPECT_EQ((*wheels)[1].pip_index, "simple");
  }
  // Without a record beside it, a variant wheel's CUDA is its variant's lower bound.
  const auto bounded = wheel::make_variant({sm("90_real"), {"nvidia", "cuda_version_lower_bound", "13.0"}});
  auto with_bound = wheel::make_variant_wheel(plain->filename, plain->bytes, bounded, 1700000000);
  ASSERT_TRUE(with_bound);
  m.fs.add_file("/dist/" + with_bound->filename, with_bound->bytes);
  ASSERT_TRUE(wheel::write_simple_index(m.fs, "/dist"));
  auto read = rollout::read_index(m.fs, "/dist");
  ASSERT_TRUE(read) << read.error().message;
  for (const auto& w : *read)
    if (w.filename == with_bound->filename) {
      EXPECT_EQ(w.needs.cuda, "13.0");
    }
  ASSERT_TRUE(m.fs.remove_all("/dist/" + with_bound->filename));
  ASSERT_TRUE(wheel::write_simple_index(m.fs, "/dist"));
  m.fs.add_file("/dist/tiny_scale-0.1.0-variants.json",
                wheel::variants_index_json({wheel::make_variant({sm("80_real")})}));
  auto unlisted = rollout::read_index(m.fs, "/dist");
  ASSERT_FALSE(unlisted);
  EXPECT_NE(unlisted.error().message.find("does not list its variant '" + v.label + "'"), std::string::npos);
  m.fs.add_file("/dist/broken-1.0-py3-none-any.whl", "not a zip");
  EXPECT_EQ(rollout::read_index(m.fs, "/dist").error().kind, ErrorKind::bad_input);
}

// Four nodes against four real wheels (nvcc: sm_80, sm_90, compute_90 PTX, and the plain wheel
// with all three), as the CLI reads them; then variantlib 0.2.2's resolver, given each node's
// supported properties as static providers, must pick the same (tests/wheel_tools/pick_variants.py).
TEST(RolloutPick, FourNodesAgreeWithVariantlib) {
  const fs::path source = OPFORGE_SOURCE_DIR;
  const char* nvcc = "/usr/local/cuda/bin/nvcc";
  if (!fs::exists(nvcc)) OPFORGE_SKIP_UNLESS_CI(std::string(nvcc) + " is missing");
  const auto dir = fs::path(OPFORGE_BUILD_DIR) / "rollout_pick";
  fs::remove_all(dir);
  fs::create_directories(dir / "dist");
  auto m = probe::real_machine();
  struct Cell {
    std::string tag, gencode;
  };
  // cudart shared: the wheels name libcudart.so.13, so verify knows their CUDA without a record.
  const Cell cells[] = {
      {"sm80", "-gencode arch=compute_80,code=sm_80"},
      {"sm90", "-gencode arch=compute_90,code=sm_90"},
      {"ptx90", "-gencode arch=compute_90,code=compute_90"},
      {"all", "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]"}};
  std::string plain_name;
  std::vector<std::string> variant_names;
  for (const auto& c : cells) {
    const auto build = dir / c.tag;
    fs::create_directories(build);
    ASSERT_TRUE(wheel::testing::build_nvcc_library(nvcc, build, "-cudart shared " + c.gencode)) << c.tag;
    const std::string so = test_util::slurp(build / "k.so");
    wheel::Spec s;
    s.name = "tiny-gpu";
    s.version = "0.1.0";
    s.summary = "tiny";
    s.description = "tiny\n";
    s.tags = {"py3-none-manylinux_2_34_x86_64"};
    s.source_date_epoch = 1700000000;
    s.files = {{"tiny_gpu/__init__.py", "X = 1\n", 0644}, {"tiny_gpu/_lib/k.so", so, 0755}};
    auto plain = wheel::pack(s);
    ASSERT_TRUE(plain) << plain.error().message;
    if (c.tag == "all") {
      plain_name = plain->filename;
      ASSERT_TRUE(m.fs.write_file_atomic(dir / "dist" / plain->filename, plain->bytes));
      continue;
    }
    auto elf = wheel::read_elf(so);
    ASSERT_TRUE(elf);
    auto decided = wheel::variant_properties({{"tiny_gpu/_lib/k.so", *elf}}, {"13.0", ""});
    auto made =
        wheel::make_variant_wheel(plain->filename, plain->bytes, wheel::make_variant(decided.properties), 1700000000);
    ASSERT_TRUE(made) << made.error().message;
    variant_names.push_back(made->filename);
    ASSERT_TRUE(m.fs.write_file_atomic(dir / "dist" / made->filename, made->bytes));
  }
  ASSERT_TRUE(wheel::write_simple_index(m.fs, dir / "dist"));
  const std::pair<const char*, std::string> reports[] = {
      {"h100", node_report("h100", "x86_64", "9.0")},
      {"a100", node_report("a100", "x86_64", "8.0")},
      {"old07", node_report("old07", "x86_64", "9.0", R"({"version": "535.104.05", "cuda": "12.2"})")},
      {"grace01", node_report("grace01", "aarch64", "9.0")}};
  std::string args;
  for (const auto& [name, text] : reports) {
    test_util::spit(dir / (std::string(name) + ".json"), text);
    args += " " + (dir / (std::string(name) + ".json")).string();
  }
  // The CLI: exit 1 naming the two nodes without a wheel; --json is the same result.
  const std::string pick = std::string(OPFORGE_BINARY) + " pick " + (dir / "dist").string();
  int rc = std::system((pick + " --nodes" + args + " > " + (dir / "pick.txt").string() + " 2>&1").c_str());
  const auto text = test_util::slurp(dir / "pick.txt");
  EXPECT_EQ(WEXITSTATUS(rc), 1) << text;
  EXPECT_NE(text.find("opforge: error: 2 nodes get no wheel from " + (dir / "dist").string() +
                      ": old07 (driver), grace01 (machine); each wheel's reasons are above\n  hint: old07: update its "
                      "NVIDIA driver to 580 or newer, the least CUDA 13 needs, or build the wheel with CUDA 12.2 or "
                      "older, which its driver supports ([cuda] version in the recipe)\n        grace01: build a wheel "
                      "for aarch64: `opforge build RECIPE --platform aarch64`\n"),
            std::string::npos)
      << text;
  rc = std::system((pick + " --json --nodes" + args + " > " + (dir / "pick.json").string() + " 2> " +
                    (dir / "pick.json.err").string())
                       .c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 1);
  EXPECT_NE(test_util::slurp(dir / "pick.json.err")
                .find("old07 (driver), grace01 (machine); each wheel's reasons are in the JSON on stdout, "
                      "nodes[].projects[].rejected\n"),
            std::string::npos)
      << test_util::slurp(dir / "pick.json.err");
  const auto j = nlohmann::json::parse(test_util::slurp(dir / "pick.json"));
  ASSERT_EQ(j["nodes"].size(), 4u) << j.dump(2);
  std::map<std::string, nlohmann::json> by_node;
  for (const auto& n : j["nodes"]) by_node[n["nodes"][0].get<std::string>()] = n["projects"][0];
  // The variant wheels sort by label; find each by its properties' order in the pick.
  EXPECT_EQ(by_node["h100"]["order"].size(), 3u);
  EXPECT_EQ(by_node["h100"]["order"][2], plain_name);
  EXPECT_EQ(by_node["a100"]["order"].size(), 2u);
  EXPECT_EQ(by_node["a100"]["order"][1], plain_name);
  EXPECT_TRUE(by_node["old07"]["wheel"].is_null());
  EXPECT_TRUE(by_node["grace01"]["wheel"].is_null());
  // The index plain pip is pointed at for each pick: the pick's variant's own, as a file:// URL.
  const std::string h100_label = wheel::parse_wheel_filename(by_node["h100"]["wheel"].get<std::string>())->variant;
  const std::string h100_url = "file://" + (dir / "dist").string() + "/variants/" + h100_label + "/simple";
  EXPECT_EQ(by_node["h100"]["pip_index_url"], h100_url);
  EXPECT_TRUE(by_node["old07"]["pip_index_url"].is_null());
  EXPECT_NE(text.find("  tiny-gpu: install " + by_node["h100"]["wheel"].get<std::string>() +
                      "\n    pip      pip install --index-url " + h100_url + " tiny-gpu\n"),
            std::string::npos)
      << text;
  EXPECT_NE(by_node["grace01"]["rejected"][0].dump().find("wheel is for x86_64, node is aarch64"), std::string::npos);
  // Two of the nodes alone: every node gets a wheel, exit 0.
  rc = std::system(
      (pick + " --nodes " + (dir / "h100.json").string() + " " + (dir / "a100.json").string() + " > /dev/null 2>&1")
          .c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 0);
  // Bad input, exit 2: a damaged report (the reader's line and column), a folder with no wheel.
  test_util::spit(dir / "damaged.json", "{\"node\": ");
  rc = std::system(
      (pick + " --nodes " + (dir / "damaged.json").string() + " > " + (dir / "bad.txt").string() + " 2>&1").c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  EXPECT_NE(test_util::slurp(dir / "bad.txt").find("damaged.json: not JSON: parse error at line 1"), std::string::npos)
      << test_util::slurp(dir / "bad.txt");
  rc = std::system((std::string(OPFORGE_BINARY) + " pick " + (dir / "h100").string() + " --nodes " +
                    (dir / "h100.json").string() + " > /dev/null 2>&1")
                       .c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);

  // variantlib 0.2.2 given each node's properties (the pick's own "properties").
  const auto python = source / ".venv-tools" / "bin" / "python";
  if (std::system((python.string() + " -c 'import variantlib' >/dev/null 2>&1").c_str()) != 0)
    OPFORGE_SKIP_UNLESS_CI(python.string() + " has no variantlib: run scripts/deps");
  const std::string cmd = python.string() + " " + (source / "tests/wheel_tools/pick_variants.py").string() + " " +
                          (dir / "dist").string() + " " + (dir / "pick.json").string() +
                          " h100=x86_64 a100=x86_64 old07=x86_64 grace01=aarch64 > " +
                          (dir / "variantlib.json").string() + " 2> " + (dir / "variantlib.log").string();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << test_util::slurp(dir / "variantlib.log");
  const auto theirs = nlohmann::json::parse(test_util::slurp(dir / "variantlib.json"));
  for (const char* n : {"h100", "a100", "grace01"})
    EXPECT_EQ(theirs[n]["variantlib"], theirs[n]["pick"]) << n << ": " << theirs[n].dump();
  // Where they legitimately differ: the resolver holds the null variant (the plain wheel) always
  // supported, and it cannot see that the plain wheel's code needs driver 580 (CUDA 13), which a
  // 535 driver is not: pip would install it and the import would fail.
  EXPECT_EQ(theirs["old07"]["pick"], nlohmann::json::array());
  EXPECT_EQ(theirs["old07"]["variantlib"], nlohmann::json({plain_name}));
  // That is what pick says such an installer takes there, and that it does not run.
  EXPECT_EQ(by_node["old07"]["installer"]["wheel"], plain_name);
  EXPECT_EQ(by_node["old07"]["installer"]["verdict"], "fails");
  test_util::spit(dir / "summary.txt", theirs.dump(2));
}
