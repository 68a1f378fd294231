#include <gtest/gtest.h>

#include "devices/nodes.h"
#include "probe/fake_machine.h"
#include "probe/machine.h"

using namespace opforge;
namespace fs = std::filesystem;

namespace {
fs::path data(const char* name) { return fs::path(OPFORGE_TEST_DATA) / "nodes" / name; }
}  // namespace

TEST(DevicesNodes, UnionOfTwoGenerationsWarns) {
  auto m = probe::real_machine();
  auto s = devices::merge_nodes(m.fs, {data("found_h100.json"), data("a100.json")});
  ASSERT_TRUE(s) << s.error().render();
  EXPECT_EQ(s->arch_list, "8.0;9.0+PTX");
  ASSERT_EQ(s->nodes.size(), 2u);
  EXPECT_EQ(s->nodes[0].gpus.size(), 2u);
  EXPECT_EQ(s->nodes[0].gpus[1].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s->nodes[1].gpus[0].major, 8);
  ASSERT_EQ(s->warnings.size(), 1u);
  EXPECT_NE(s->warnings[0].find("mixed GPU generations (Ampere 8.0 on " + data("a100.json").string() +
                                "; Hopper 9.0 on " + data("found_h100.json").string() + ")"),
            std::string::npos)
      << s->warnings[0];
}

TEST(DevicesNodes, SameKindEverywhereHasNoWarningAndNodesWithoutGpusAreNamed) {
  auto m = probe::real_machine();
  auto same = devices::merge_nodes(m.fs, {data("found_h100.json"), data("found_h100.json")});
  ASSERT_TRUE(same);
  EXPECT_EQ(same->arch_list, "9.0+PTX");
  EXPECT_TRUE(same->warnings.empty());
  auto none = devices::merge_nodes(m.fs, {data("none.json")});
  ASSERT_TRUE(none);
  EXPECT_EQ(none->arch_list, "");
  ASSERT_EQ(none->warnings.size(), 1u);
  EXPECT_NE(none->warnings[0].find("no GPU found on this node"), std::string::npos);
}

TEST(DevicesNodes, BadReportsAreBadInputNamingTheFile) {
  auto m = probe::real_machine();
  auto bad = devices::merge_nodes(m.fs, {data("a100.json"), data("bad_cap.json")});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(bad.error().message, data("bad_cap.json").string() +
                                     ": GPU 3 (NVIDIA L4) has capability \"sm89\", expected "
                                     "MAJOR.MINOR such as \"9.0\"");
  auto missing = devices::merge_nodes(m.fs, {data("nope.json")});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::bad_input);
  auto not_json = devices::parse_node_report("x.json", "{\"gpus\": [");
  ASSERT_FALSE(not_json);
  EXPECT_EQ(not_json.error().message, "x.json: not a JSON object");
  EXPECT_FALSE(devices::merge_nodes(m.fs, {}));
}
