#include <gtest/gtest.h>

#include "devices/nodes.h"
#include "probe/fake_machine.h"
#include "probe/machine.h"

using namespace opforge;
namespace fs = std::filesystem;

namespace {
fs::path nodes_data(const char* name) { return fs::path(OPFORGE_TEST_DATA) / "nodes" / name; }
}  // namespace

TEST(DevicesNodes, UnionOfTwoGenerationsWarns) {
  auto m = probe::real_machine();
  auto s = devices::merge_nodes(m.fs, {nodes_data("found_h100.json"), nodes_data("a100.json")});
  ASSERT_TRUE(s) << s.error().render();
  EXPECT_EQ(s->arch_list, "8.0;9.0+PTX");
  ASSERT_EQ(s->nodes.size(), 2u);
  EXPECT_EQ(s->nodes[0].gpus.size(), 2u);
  EXPECT_EQ(s->nodes[0].gpus[1].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s->nodes[1].gpus[0].major, 8);
  ASSERT_EQ(s->warnings.size(), 1u);
  EXPECT_EQ(s->warnings[0], "mixed GPU generations (Ampere 8.0 on " + nodes_data("a100.json").string() +
                                "; Hopper 9.0 on " + nodes_data("found_h100.json").string() +
                                "): the wheel carries code for each, and synchronous training across them runs at "
                                "the pace of the slowest");
}

TEST(DevicesNodes, SameKindEverywhereHasNoWarningAndNodesWithoutGpusAreNamed) {
  auto m = probe::real_machine();
  auto same = devices::merge_nodes(m.fs, {nodes_data("found_h100.json"), nodes_data("found_h100.json")});
  ASSERT_TRUE(same);
  EXPECT_EQ(same->arch_list, "9.0+PTX");
  EXPECT_TRUE(same->warnings.empty());
  auto none = devices::merge_nodes(m.fs, {nodes_data("none.json")});
  ASSERT_TRUE(none);
  EXPECT_EQ(none->arch_list, "");
  ASSERT_EQ(none->warnings.size(), 1u);
  EXPECT_EQ(none->warnings[0],
            nodes_data("none.json").string() + ": no GPU found on this node; it adds nothing to the arch list");
}

TEST(DevicesNodes, BadReportsAreBadInputNamingTheFile) {
  auto m = probe::real_machine();
  auto bad = devices::merge_nodes(m.fs, {nodes_data("a100.json"), nodes_data("bad_cap.json")});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(bad.error().message, nodes_data("bad_cap.json").string() +
                                     ": GPU 3 (NVIDIA L4) has capability \"sm89\", expected "
                                     "MAJOR.MINOR such as \"9.0\"");
  auto missing = devices::merge_nodes(m.fs, {nodes_data("nope.json")});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::bad_input);
  auto not_json = devices::parse_node_report("x.json", "{\"gpus\": [");
  ASSERT_FALSE(not_json);
  EXPECT_TRUE(not_json.error().message.starts_with("x.json: not JSON: parse error at line 1, column 11"))
      << not_json.error().message;
  EXPECT_EQ(devices::parse_node_report("x.json", "[1, 2]").error().message, "x.json: not a JSON object");
  // 50,000 levels with a \udce9 escape: refused before any tree is built (the walk crashed).
  std::string deep = "{\"gpus\": ";
  for (int i = 0; i < 50000; ++i) deep += "[";
  deep += "\"\\udce9\"";
  for (int i = 0; i < 50000; ++i) deep += "]";
  auto too_deep = devices::parse_node_report("x.json", deep + "}");
  ASSERT_FALSE(too_deep);
  EXPECT_EQ(too_deep.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(too_deep.error().message,
            "x.json: not JSON opforge reads: arrays and objects nested more than 256 levels deep");
  EXPECT_FALSE(devices::merge_nodes(m.fs, {}));
}

// A report is untrusted: a field of the wrong type is bad input, never an escaped JSON exception
// (the machine_text fuzzer found `"index": "NVIDIA L4"`).
TEST(DevicesNodes, WrongTypedFieldsAreBadInput) {
  auto message = [](std::string_view text) {
    auto r = devices::parse_node_report("n.json", text);
    EXPECT_FALSE(r) << text;
    if (r) return std::string();
    EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
    return r.error().message;
  };
  EXPECT_EQ(message(R"({"gpus": [{"index": "NVIDIA L4", "compute_capability": "8.9"}]})"),
            "n.json: GPU entry 0: \"index\" must be a GPU number (an integer from 0)");
  EXPECT_EQ(message(R"({"gpus": [{"index": -1, "compute_capability": "8.9"}]})"),
            "n.json: GPU entry 0: \"index\" must be a GPU number (an integer from 0)");
  EXPECT_EQ(message(R"({"gpus": [{"index": 1.5, "compute_capability": "8.9"}]})"),
            "n.json: GPU entry 0: \"index\" must be a GPU number (an integer from 0)");
  EXPECT_EQ(message(R"({"gpus": [{"name": 5, "compute_capability": "8.9"}]})"),
            "n.json: GPU entry 0: \"name\" must be a string");
  EXPECT_EQ(message(R"({"gpus": [{"compute_capability": 8.9}]})"),
            "n.json: GPU entry 0: \"compute_capability\" must be a string");
  EXPECT_EQ(message(R"({"gpus": [{"capability": "9.0", "uuid": []}]})"),
            "n.json: GPU entry 0: \"uuid\" must be a string");
  EXPECT_EQ(message(R"({"gpus": [7]})"), "n.json: GPU entry 0: is not a JSON object");
  EXPECT_EQ(message(R"({"gpus": [{"capability": "99999999999.0"}]})"),
            "n.json: GPU 0 (GPU 0) has capability \"99999999999.0\", expected MAJOR.MINOR such as \"9.0\"");
  for (auto cap : {"9", "9.", ".0", "9.0x", "+9.0", "9.-1", "0.5", "sm_90"})
    EXPECT_FALSE(devices::parse_node_report("n.json", std::string(R"({"gpus": [{"capability": ")") + cap + "\"}]}"))
        << cap;
  auto ok = devices::parse_node_report(
      "n.json", R"({"gpus": [{"index": 2, "name": "H100", "capability": "9.0", "uuid": "GPU-1"}]})");
  ASSERT_TRUE(ok) << ok.error().render();
  EXPECT_EQ(ok->gpus[0].index, 2);
  EXPECT_EQ(ok->gpus[0].major, 9);
  EXPECT_EQ(ok->gpus[0].minor, 0);
}
