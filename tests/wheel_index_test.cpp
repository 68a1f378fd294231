#include <gtest/gtest.h>

#include "probe/fake_machine.h"
#include "test_util.h"
#include "util/hash.h"
#include "wheel/index.h"

namespace opforge::wheel {
namespace {

using test_util::data;

TEST(WheelIndex, ProjectNamesArePep503Normalized) {
  EXPECT_EQ(index_project_name("opforge-ops"), "opforge-ops");
  EXPECT_EQ(index_project_name("Opforge_Ops"), "opforge-ops");
  EXPECT_EQ(index_project_name("a.-_b"), "a-b");
  EXPECT_EQ(index_project_name("DeepSpeed"), "deepspeed");
  EXPECT_EQ(index_project_name("zope.interface"), "zope-interface");
  EXPECT_EQ(wheel_project("opforge_ops-0.1.0+cu132-cp311-cp311-linux_x86_64.whl"), "opforge-ops");
  EXPECT_EQ(wheel_project("notes.txt"), "");
}

TEST(WheelIndex, PagesAreExactly) {
  EXPECT_EQ(simple_root_page({"opforge-ops", "deepspeed", "opforge-ops"}), data("index/root.html"));
  EXPECT_EQ(
      simple_project_page("opforge-ops",
                          {{"opforge_ops-0.1.0+cu132torch215-cp311-cp311-linux_x86_64.whl", std::string(64, '2')},
                           {"opforge_ops-0.1.0+cu130torch214-cp311-cp311-linux_x86_64.whl", std::string(64, '1')}}),
      data("index/opforge-ops.html"));
}

TEST(WheelIndex, LinksEscapeWhatAUrlCannotHold) {
  auto page = simple_project_page("x", {{"x-1.0-py3-none-any.whl#\"", "ab"}});
  EXPECT_NE(page.find("href=\"../../x-1.0-py3-none-any.whl%23%22#sha256=ab\""), std::string::npos) << page;
  EXPECT_NE(page.find(">x-1.0-py3-none-any.whl#&quot;<"), std::string::npos) << page;
}

TEST(WheelIndex, WrittenFromTheFolderAndStaleProjectsRemoved) {
  probe::FakeMachine w;
  w.fs.add_file("/dist/opforge_ops-0.1.0-py3-none-any.whl", "wheel bytes");
  w.fs.add_file("/dist/opforge_ops-0.1.0-py3-none-any.whl.opforge-record.json", "{}");
  w.fs.add_file("/dist/.opforge_ops-0.2.0-py3-none-any.whl.opforge-new", "staged");
  w.fs.add_file("/dist/simple/gone/index.html", "old");
  ASSERT_TRUE(write_simple_index(w.fs, "/dist"));
  auto page = w.fs.read_file("/dist/simple/opforge-ops/index.html");
  ASSERT_TRUE(page);
  EXPECT_EQ(*page,
            simple_project_page("opforge-ops", {{"opforge_ops-0.1.0-py3-none-any.whl", sha256_hex("wheel bytes")}}));
  EXPECT_EQ(*w.fs.read_file("/dist/simple/index.html"), simple_root_page({"opforge-ops"}));
  EXPECT_EQ(w.fs.type_of("/dist/simple/gone"), probe::FileType::none);
}

}  // namespace
}  // namespace opforge::wheel
