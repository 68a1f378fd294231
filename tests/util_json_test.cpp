#include <gtest/gtest.h>

#include "util/json.h"
#include "util/strings.h"

namespace opforge::util {
namespace {

using Json = nlohmann::json;

TEST(UtilJson, ValidTextIsTheLibrarysOwnOutput) {
  Json j = {{"path", "/tmp/caf\xc3\xa9"}, {"n", 3}};
  EXPECT_EQ(json_dump(j, 2), j.dump(2));
}

TEST(UtilJson, BytesThatAreNotUtf8AreSurrogateEscapedAndReadBack) {
  // A folder named with a byte that is not UTF-8 (mkdir $'/tmp/x_\xff'), as key and as value.
  const std::string path = "/tmp/x_\xff/y";
  Json j = {{"cwd", path}, {"list", {path, "ok"}}, {"by_path", {{path, 1}}}};
  const std::string text = json_dump(j);
  EXPECT_EQ(text, R"({"by_path":{"/tmp/x_\udcff/y":1},"cwd":"/tmp/x_\udcff/y","list":["/tmp/x_\udcff/y","ok"]})");
  EXPECT_EQ(json_parse(text), j);
}

TEST(UtilJson, EveryByteStringRoundTrips) {
  // Truncated and overlong sequences, surrogates, and the stand-ins' own range (U+10FF80..).
  for (std::string s :
       {std::string("\xc3"), std::string("\xe0\x80\x80"), std::string("\xed\xa0\x80"), std::string("\xf4\x8f\xbe\x80"),
        std::string("\xf4\x8f\xbf\xbf x \xfe\xff"), std::string("a\\udcff"), std::string("\x80\x81")}) {
    auto back = json_parse(json_dump(Json{{"v", s}}));
    ASSERT_TRUE(back.is_object()) << strings::printable(s);
    EXPECT_EQ(back["v"].get<std::string>(), s) << strings::printable(s);
  }
}

TEST(UtilJson, ParseErrorsAreDiscardedNotThrown) {
  EXPECT_TRUE(json_parse("{").is_discarded());
  EXPECT_TRUE(json_parse("\"\\udc").is_discarded());
}

/// `levels` nested arrays (or objects {"a": ...}) around a string with a \udce9 escape.
std::string nested(int levels, bool objects = false) {
  std::string s;
  for (int i = 0; i < levels; ++i) s += objects ? "{\"a\":" : "[";
  s += "\"\\udce9\"";
  for (int i = 0; i < levels; ++i) s += objects ? "}" : "]";
  return s;
}

TEST(UtilJson, NestingPastTheBoundIsRefusedBeforeAnyTreeIsBuilt) {
  // 50,000 levels in 100 KB with an escape opforge writes: the walk over the tree crashed (SIGSEGV).
  for (bool objects : {false, true}) {
    const auto deep = nested(50000, objects);
    EXPECT_TRUE(json_parse(deep).is_discarded());
    auto checked = json_parse_checked(deep);
    ASSERT_FALSE(checked);
    EXPECT_EQ(checked.error().kind, ErrorKind::bad_input);
    EXPECT_EQ(checked.error().message, "not JSON opforge reads: arrays and objects nested more than 256 levels deep");
    EXPECT_TRUE(json_parse(nested(kJsonMaxDepth + 1, objects)).is_discarded());
    // At the bound: read, the escape back to its byte.
    auto ok = json_parse(nested(kJsonMaxDepth, objects));
    ASSERT_FALSE(ok.is_discarded());
    const Json* v = &ok;
    while (!v->is_string()) v = objects ? &(*v)["a"] : &(*v)[0];
    EXPECT_EQ(v->get<std::string>(), "\xe9");
  }
  // Brackets inside strings are text, not nesting.
  EXPECT_EQ(json_parse("{\"a\": \"" + std::string(1000, '[') + "\\\"\"}")["a"], std::string(1000, '[') + "\"");
  auto syntax = json_parse_checked("{\"a\": ");
  ASSERT_FALSE(syntax);
  EXPECT_TRUE(syntax.error().message.starts_with("not JSON: parse error at line 1, column 7"))
      << syntax.error().message;
}

TEST(UtilStrings, MessagesShowBytesThatAreNotUtf8Escaped) {
  EXPECT_EQ(strings::printable("/tmp/x_\xff\n"), "/tmp/x_\\xff\\x0a");
  EXPECT_EQ(strings::printable_lines("caf\xc3\xa9 \xff\nnext"), "caf\xc3\xa9 \\xff\nnext");
  // A terminal sequence a file held is shown, not sent: ESC and CR escaped, line breaks and tabs kept.
  EXPECT_EQ(strings::printable_lines("a\x1b]0;pwned\x07\r\tb\nc"), "a\\x1b]0;pwned\\x07\\x0d\tb\nc");
}

}  // namespace
}  // namespace opforge::util
