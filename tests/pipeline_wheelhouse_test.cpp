#include <gtest/gtest.h>

#include "pipeline/wheelhouse.h"
#include "probe/fake_machine.h"
#include "test_util.h"

namespace opforge::pipeline {
namespace {

using test_util::data;

std::vector<SummaryRow> two_rows() {
  return {{"torch2.15.0-py3.11",
           "t-0.1.0+cu132torch215-py3-none-any.whl",
           std::string(64, '2'),
           {"scale", "extra"},
           "CUDA 13.2 (PyPI: cuda-toolkit[nvcc,cudart,cccl]==13.2.2)",
           "2.15.0+cu132",
           40.0},
          {"torch2.14.0-py3.11",
           "t-0.1.0+cu130torch214-py3-none-any.whl",
           std::string(64, '1'),
           {"scale"},
           "CUDA 13.0 (/usr/local/cuda-13.0)",
           "2.14.0+cu130",
           12.34}};
}

TEST(PipelineWheelhouse, SummaryMarkdownIsExactly) {
  EXPECT_EQ(summary_markdown(two_rows()), data("index/SUMMARY.md"));
}

TEST(PipelineWheelhouse, SummaryJsonRoundTrips) {
  probe::FakeMachine w;
  w.fs.add_file("/dist/summary.json", summary_json(two_rows()));
  auto rows = read_summary(w.fs, "/dist");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].cell, "torch2.14.0-py3.11");
  EXPECT_EQ(rows[1].ops, (std::vector<std::string>{"scale", "extra"}));
  EXPECT_DOUBLE_EQ(rows[0].seconds, 12.3);
}

TEST(PipelineWheelhouse, LandingReplacesTheCellsRowAndDropsVanishedWheels) {
  probe::FakeMachine w;
  auto rows = two_rows();
  w.fs.add_file("/dist/" + rows[0].wheel, "w215");
  w.fs.add_file("/dist/summary.json", summary_json(rows));  // the 2.14 wheel is gone from the folder
  SummaryRow again = rows[0];
  again.seconds = 3;
  ASSERT_TRUE(land(w.fs, "/dist", again));
  auto now = read_summary(w.fs, "/dist");
  ASSERT_EQ(now.size(), 1u);
  EXPECT_DOUBLE_EQ(now[0].seconds, 3);
  EXPECT_EQ(*w.fs.read_file("/dist/SUMMARY.md"), summary_markdown(now));
  EXPECT_EQ(w.fs.type_of("/dist/simple/t/index.html"), probe::FileType::regular);
}

TEST(PipelineWheelhouse, OneRowPerWheelNotPerCell) {
  // Two projects built without [matrix] land in one dist/: both are cell "default".
  probe::FakeMachine w;
  SummaryRow a{"default", "a_ops-0.1.0+cpu-py3-none-any.whl", std::string(64, 'a'), {"x"}, "", "", 1};
  SummaryRow b{"default", "b_ops-0.1.0+cpu-py3-none-any.whl", std::string(64, 'b'), {"y"}, "", "", 2};
  w.fs.add_file("/dist/" + a.wheel, "a");
  w.fs.add_file("/dist/" + b.wheel, "b");
  ASSERT_TRUE(land(w.fs, "/dist", a));
  ASSERT_TRUE(land(w.fs, "/dist", b));
  auto rows = read_summary(w.fs, "/dist");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].wheel, a.wheel);
  EXPECT_EQ(rows[1].wheel, b.wheel);
}

TEST(PipelineWheelhouse, MergeRefusesAFolderThatIsNotThere) {
  probe::FakeMachine w;
  auto r = merge_wheelhouse(w.machine(), "/out", {"/nowhere"});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
}

}  // namespace
}  // namespace opforge::pipeline

// `verify WHEELHOUSE --nodes`: the wheel each installer takes on each node, by pick's checks.
namespace installs_test {

using opforge::rollout::IndexWheel;

opforge::rollout::NodeFacts gpu_node(const std::string& host, const std::string& capability) {
  return opforge::rollout::parse_node_facts(
      host + ".json",
      R"({"gpus": {"reader": "driver API", "devices": [{"index": 0, "name": "GPU", "capability": ")" + capability +
          R"("}]}, "torch": {"status": "torch not installed"}, "node": {"format": 1, "host": ")" + host +
          R"(", "machine": "x86_64", "glibc": "2.36", "glibcxx": "3.4.30", "cxxabi": "1.3.13", "cpu_level": "x86-64-v3",
          "python": "3.11", "driver": {"version": "580.65.06", "cuda": "13.0"}}})");
}

opforge::wheel::FatbinImage image(opforge::wheel::FatbinImage::Kind kind, int arch) {
  opforge::wheel::FatbinImage i;
  i.kind = kind;
  i.arch = arch;
  if (kind == opforge::wheel::FatbinImage::Kind::ptx) i.ptx_isa = {9, 0};
  return i;
}
constexpr auto kSass = opforge::wheel::FatbinImage::Kind::elf;
constexpr auto kPtx = opforge::wheel::FatbinImage::Kind::ptx;

/// A wheel of project x, CUDA 13.0, holding `images`; a variant of `sm` values unless `sm` is empty.
IndexWheel x_wheel(std::vector<opforge::wheel::FatbinImage> images, std::vector<std::string> sm) {
  IndexWheel w;
  w.project = "x";
  w.version = "0.1.0";
  if (!sm.empty()) {
    std::vector<opforge::wheel::VariantProperty> props{{"nvidia", "cuda_version_lower_bound", "13.0"}};
    for (auto& v : sm) props.push_back({"nvidia", "sm_arch", v});
    w.variant = opforge::wheel::make_variant(std::move(props));
  }
  w.filename = "x-0.1.0-py3-none-manylinux_2_34_x86_64" + (w.variant ? "-" + w.variant->label : "") + ".whl";
  w.needs.filename = w.filename;
  w.needs.python_tags = {"py3"};
  w.needs.abi_tags = {"none"};
  w.needs.platforms = {"manylinux_2_34_x86_64"};
  w.needs.system.glibc_minor = 34;
  w.needs.cpu_level = 1;
  w.needs.cuda = "13.0";
  w.needs.gpu_libraries = {{"x/_C.so", std::move(images)}};
  return w;
}

std::vector<IndexWheel> house(std::vector<opforge::wheel::FatbinImage> plain) {
  return {x_wheel({image(kSass, 80)}, {"80_real"}), x_wheel({image(kSass, 90)}, {"90_real"}),
          x_wheel(std::move(plain), {})};
}

std::string takes(const opforge::pipeline::NodeInstalls& n) {
  std::string out;
  for (const auto& t : n.takes)
    out += t.installer + "=" + (t.wheel ? t.wheel->substr(32) : "none") + ":" +
           std::string(opforge::rollout::verdict_name(t.verdict)) + " ";
  return out;
}

// The fallback [matrix] arch builds (sm_80, sm_90, compute_90): a 12.0 GPU JITs its PTX, whoever
// installs; a 7.0 GPU runs nothing, pick refuses and pip and the resolver get a wheel that fails.
TEST(WheelhouseInstalls, TheUnionFallbackRunsOnNewerGpus) {
  auto w = house({image(kSass, 80), image(kSass, 90), image(kPtx, 90)});
  const std::string v90 = w[1].filename.substr(32);
  auto all =
      opforge::pipeline::installs(w, {gpu_node("h100", "9.0"), gpu_node("rtx", "12.0"), gpu_node("v100", "7.0")});
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(takes(all[0]), "pip=x86_64.whl:ok resolver=" + v90 + ":ok pick=" + v90 + ":ok ");
  EXPECT_TRUE(all[0].ok());
  EXPECT_EQ(takes(all[1]), "pip=x86_64.whl:ok resolver=x86_64.whl:ok pick=x86_64.whl:ok ");
  EXPECT_EQ(takes(all[2]), "pip=x86_64.whl:fails resolver=x86_64.whl:fails pick=none:ok ");
  EXPECT_FALSE(all[2].ok());
  ASSERT_EQ(all[2].takes[0].reasons.size(), 1u);
  EXPECT_EQ(all[2].takes[0].reasons[0].detail,
            "GPU 0 (GPU, 7.0): x/_C.so holds no code it can run (compute_90, sm_80, sm_90)");
  const std::string text = opforge::pipeline::installs_text("dist", all);
  EXPECT_NE(text.find("\nv100\n  x: FAILS\n    pip       x-0.1.0-py3-none-manylinux_2_34_x86_64.whl: does not run; "
                      "gpu: GPU 0 (GPU, 7.0): x/_C.so holds no code it can run (compute_90, sm_80, sm_90)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("    pick      refuses: no wheel fits\n"), std::string::npos) << text;
  EXPECT_EQ(opforge::pipeline::installs_json("dist", all)["ok"], false);
}

// One job's plain wheel published as the fallback (sm_80 only): pip gets it on an H100, and every
// installer but pick on a 12.0 GPU.
TEST(WheelhouseInstalls, OneJobsPlainWheelFailsNewerGpus) {
  auto all = opforge::pipeline::installs(house({image(kSass, 80)}), {gpu_node("h100", "9.0"), gpu_node("rtx", "12.0")});
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].takes[0].verdict, opforge::rollout::Verdict::fails);
  EXPECT_EQ(all[0].takes[2].verdict, opforge::rollout::Verdict::ok);
  EXPECT_EQ(takes(all[1]), "pip=x86_64.whl:fails resolver=x86_64.whl:fails pick=none:ok ");
}

}  // namespace installs_test
