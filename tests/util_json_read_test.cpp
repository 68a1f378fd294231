// util/json_read.h: typed reads of cached and probed JSON, where another type is absent, never an
// exception; and the readers built on it given every field of the wrong type.
#include <gtest/gtest.h>

#include "cuda/torch.h"
#include "ops/deepspeed.h"
#include "pipeline/wheelhouse.h"
#include "plan/jobs.h"
#include "probe/fake_machine.h"
#include "util/json_read.h"

namespace opforge {
namespace {

namespace jr = util::json_read;
using Json = nlohmann::json;

TEST(JsonRead, AValueOfAnotherTypeIsAbsent) {
  const Json j = Json::parse(R"({"s": "a", "n": -3, "u": 7, "f": 1.5, "b": true, "a": ["x", 1, "y"], "o": {},
                                 "big": 18446744073709551615})");
  EXPECT_EQ(jr::text(j, "s"), "a");
  EXPECT_EQ(jr::text(j, "n"), std::nullopt);
  EXPECT_EQ(jr::text(j, "missing"), std::nullopt);
  EXPECT_EQ(jr::text_or(j, "b", "fallback"), "fallback");
  EXPECT_EQ(jr::flag(j, "b"), true);
  EXPECT_EQ(jr::flag(j, "s"), std::nullopt);
  EXPECT_EQ(jr::integer(j, "n"), -3);
  EXPECT_EQ(jr::integer(j, "u"), 7);
  EXPECT_EQ(jr::integer(j, "f"), std::nullopt);
  EXPECT_EQ(jr::integer(j, "big"), std::nullopt);  // does not fit: absent, not wrapped
  EXPECT_EQ(jr::count(j, "u"), 7u);
  EXPECT_EQ(jr::count(j, "n"), std::nullopt);
  EXPECT_EQ(jr::count(j["u"]), 7u);
  EXPECT_EQ(jr::count(j["s"]), std::nullopt);
  EXPECT_EQ(jr::number(j, "f"), 1.5);
  EXPECT_EQ(jr::number(j, "s"), std::nullopt);
  EXPECT_EQ(jr::texts(j, "a"), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(jr::texts(j, "o"), std::vector<std::string>{});
  EXPECT_NE(jr::object(j, "o"), nullptr);
  EXPECT_EQ(jr::object(j, "a"), nullptr);
  EXPECT_EQ(jr::array(j, "o"), nullptr);
  // Not an object at all: every member is absent.
  EXPECT_EQ(jr::member(Json::array({1}), "s"), nullptr);
  EXPECT_EQ(jr::text(Json("s"), "s"), std::nullopt);
}

TEST(JsonRead, AFormatIsAPlainIntegerOrRefusedByWhatWasFound) {
  auto why = [](const char* text) {
    auto f = jr::format_number(Json::parse(text), "format", 1);
    return f ? "ok " + std::to_string(*f) : f.error().message;
  };
  EXPECT_EQ(why(R"({"format": 1})"), "ok 1");
  EXPECT_EQ(why(R"({"format": "2"})"), "format \"2\" is a string, expected the integer 1");
  EXPECT_EQ(why(R"({"format": "1"})"), "format \"1\" is a string, expected the integer 1");
  EXPECT_EQ(why(R"({"format": 2.0})"), "format 2.0 is not an integer, expected the integer 1");
  EXPECT_EQ(why(R"({"format": 1.0})"), "format 1.0 is not an integer, expected the integer 1");
  EXPECT_EQ(why(R"({"format": 9223372036854775808})"),
            "format 9223372036854775808 is newer than this opforge reads (1)");
  EXPECT_EQ(why(R"({"format": 18446744073709551615})"),
            "format 18446744073709551615 is newer than this opforge reads (1)");
  EXPECT_EQ(why(R"({"format": 2})"), "format 2 is newer than this opforge reads (1)");
  EXPECT_EQ(why(R"({"format": 0})"), "format 0 is not a format opforge writes, expected the integer 1");
  EXPECT_EQ(why(R"({"format": -9223372036854775808})"),
            "format -9223372036854775808 is not a format opforge writes, expected the integer 1");
  EXPECT_EQ(why(R"({"format": true})"), "format true is a boolean, expected the integer 1");
  EXPECT_EQ(why(R"({"format": null})"), "format null is null, expected the integer 1");
  EXPECT_EQ(why(R"({"format": [1]})"), "format [1] is an array, expected the integer 1");
  EXPECT_EQ(why(R"({})"), "format is missing, expected the integer 1");
}

TEST(JsonRead, TheProbesAnswersWithWrongTypesReadAsEmpty) {
  auto cat = ops::parse_deepspeed_catalogue(
      "/ds", R"({"ops": [{"name": "a", "build_var": null, "class": 5, "kind": [], "sources": "x.cpp"}, {"name": 3}]})");
  ASSERT_TRUE(cat) << cat.error().render();
  ASSERT_EQ(cat->size(), 1u);
  EXPECT_EQ((*cat)[0].name, "a");
  EXPECT_EQ((*cat)[0].build_var, "");
  EXPECT_EQ((*cat)[0].kind, ops::Kind::cpu);
  EXPECT_TRUE((*cat)[0].sources.empty());

  auto comp = ops::parse_deepspeed_compatibility(
      R"({"op_builder.a:A": {"ok": "yes", "reason": 1, "stage": false, "sources": [1, "s.cu"]}})");
  ASSERT_TRUE(comp);
  const auto& c = comp->at("op_builder.a:A");
  EXPECT_FALSE(c.ok);
  EXPECT_EQ(c.reason, "");
  EXPECT_FALSE(c.constructed);
  EXPECT_EQ(c.sources, std::vector<std::string>{"s.cu"});

  auto py = cuda::parse_python_probe(
      R"({"torch": 1, "locations": "x", "path": [null, "/p"], "version": [3, -11], "include": {}})");
  EXPECT_TRUE(py.ok);
  EXPECT_EQ(py.torch_origin, "");
  EXPECT_TRUE(py.torch_locations.empty());
  EXPECT_EQ(py.sys_path, std::vector<std::string>{"/p"});
  EXPECT_EQ(py.version, std::nullopt);
  EXPECT_EQ(py.include, "");
}

TEST(JsonRead, DamagedCacheFilesReadAsEmpty) {
  probe::FakeFileSystem fs;
  fs.add_file("/c/compile-peaks.json", R"({"a": -1, "b": "x", "c": 2048})");
  EXPECT_EQ(plan::load_compile_peaks(fs, "/c"), (std::map<std::string, std::uint64_t>{{"c", 2048}}));
  fs.add_file("/d/summary.json", R"({"wheels": [{"cell": 1, "wheel": "w.whl", "ops": "x", "seconds": "1"}, 7]})");
  auto rows = pipeline::read_summary(fs, "/d");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].cell, "");
  EXPECT_EQ(rows[0].wheel, "w.whl");
  EXPECT_TRUE(rows[0].ops.empty());
  EXPECT_EQ(rows[0].seconds, 0);
}

}  // namespace
}  // namespace opforge
