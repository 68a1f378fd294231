#include <gtest/gtest.h>

#include "probe/fake_machine.h"
#include "test_util.h"
#include "util/hash.h"
#include "wheel/index.h"
#include "wheel/wheel.h"

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

TEST(WheelIndex, AnchorsNameTheMetadataByHash) {
  auto page = simple_project_page("x", {{"x-1.0-py3-none-any.whl", "ab", "cd", 7}});
  EXPECT_NE(page.find("<a href=\"../../x-1.0-py3-none-any.whl#sha256=ab\" data-dist-info-metadata=\"sha256=cd\" "
                      "data-core-metadata=\"sha256=cd\">x-1.0-py3-none-any.whl</a>"),
            std::string::npos)
      << page;
}

// PEP 691's JSON form with PEP 700's size and versions, exactly.
TEST(WheelIndex, JsonPagesAreExactly) {
  EXPECT_EQ(simple_root_json({"opforge-ops", "deepspeed", "opforge-ops"}),
            "{\n  \"meta\": {\n    \"api-version\": \"1.1\"\n  },\n  \"projects\": [\n    {\n      \"name\": "
            "\"deepspeed\"\n    },\n    {\n      \"name\": \"opforge-ops\"\n    }\n  ]\n}\n");
  EXPECT_EQ(
      simple_project_json("x", {{"x-1.1-py3-none-any.whl", "22", "", 9}, {"x-1.0-py3-none-any.whl", "11", "cd", 7}}),
      R"({
  "files": [
    {
      "core-metadata": {
        "sha256": "cd"
      },
      "dist-info-metadata": {
        "sha256": "cd"
      },
      "filename": "x-1.0-py3-none-any.whl",
      "hashes": {
        "sha256": "11"
      },
      "size": 7,
      "url": "../../x-1.0-py3-none-any.whl"
    },
    {
      "filename": "x-1.1-py3-none-any.whl",
      "hashes": {
        "sha256": "22"
      },
      "size": 9,
      "url": "../../x-1.1-py3-none-any.whl"
    }
  ],
  "meta": {
    "api-version": "1.1"
  },
  "name": "x",
  "versions": [
    "1.0",
    "1.1"
  ]
}
)");
}

Packed small_wheel(const std::string& version) {
  Spec s;
  s.name = "tiny-scale";
  s.version = version;
  s.summary = "tiny";
  s.description = "tiny\n";
  s.files = {{"tiny_scale/__init__.py", "X = 1\n", 0644}};
  auto p = pack(s);
  EXPECT_TRUE(p) << p.error().message;
  return *p;
}

// PEP 658: each wheel's METADATA beside it, named by hash on both pages; a .metadata file whose
// wheel is gone goes with it; two folders of the same wheels give the same bytes.
TEST(WheelIndex, MetadataFilesBesideTheWheels) {
  auto one = small_wheel("0.1.0"), two = small_wheel("0.2.0");
  std::map<std::string, std::string> first;
  for (const char* dist : {"/a", "/b"}) {
    probe::FakeMachine w;
    w.fs.add_file(std::string(dist) + "/" + one.filename, one.bytes);
    w.fs.add_file(std::string(dist) + "/" + two.filename, two.bytes);
    w.fs.add_file(std::string(dist) + "/tiny_scale-0.0.1-py3-none-any.whl.metadata", "stale");
    ASSERT_TRUE(write_simple_index(w.fs, dist));
    auto metadata = w.fs.read_file(std::string(dist) + "/" + one.filename + ".metadata");
    ASSERT_TRUE(metadata);
    EXPECT_EQ(*metadata, *wheel_metadata(one.bytes));
    EXPECT_NE(metadata->find("Name: tiny-scale\nVersion: 0.1.0\n"), std::string::npos) << *metadata;
    EXPECT_EQ(w.fs.type_of(std::string(dist) + "/tiny_scale-0.0.1-py3-none-any.whl.metadata"), probe::FileType::none);
    auto html = *w.fs.read_file(std::string(dist) + "/simple/tiny-scale/index.html");
    EXPECT_NE(html.find("data-core-metadata=\"sha256=" + sha256_hex(*metadata) + "\""), std::string::npos) << html;
    auto json = *w.fs.read_file(std::string(dist) + "/simple/tiny-scale/index.json");
    EXPECT_NE(json.find("\"sha256\": \"" + sha256_hex(*metadata) + "\""), std::string::npos) << json;
    EXPECT_NE(json.find("\"size\": " + std::to_string(one.bytes.size())), std::string::npos) << json;
    EXPECT_EQ(*w.fs.read_file(std::string(dist) + "/simple/index.json"), simple_root_json({"tiny-scale"}));
    std::map<std::string, std::string> files;
    for (auto rel :
         {"simple/index.html", "simple/index.json", "simple/tiny-scale/index.html", "simple/tiny-scale/index.json"})
      files[rel] = *w.fs.read_file(std::string(dist) + "/" + rel);
    if (first.empty()) first = files;
    else EXPECT_EQ(files, first);
  }
  EXPECT_FALSE(wheel_metadata("not a zip"));
}

}  // namespace
}  // namespace opforge::wheel
