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

TEST(UtilStrings, MessagesShowBytesThatAreNotUtf8Escaped) {
  EXPECT_EQ(strings::printable("/tmp/x_\xff\n"), "/tmp/x_\\xff\\x0a");
  EXPECT_EQ(strings::escape_non_utf8("caf\xc3\xa9 \xff\nnext"), "caf\xc3\xa9 \\xff\nnext");
}

}  // namespace
}  // namespace opforge::util
