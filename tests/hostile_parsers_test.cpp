// The pieces that keep hostile input out: the one integer parser, message cutting, the CUDA
// version grammar, the TOML guard in front of TOML++, op.toml containment and control
// characters, and build.ninja escaping proven by a real ninja run on hostile names and flags.
#include <gtest/gtest.h>

#include <filesystem>

#include "compile/native/native.h"
#include "ops/ops.h"
#include "probe/machine.h"
#include "recipe/toml_guard.h"
#include "test_util.h"
#include "util/numbers.h"
#include "util/strings.h"
#include "util/version.h"

namespace opforge {
namespace {

namespace sfs = std::filesystem;
using test_util::slurp;
using test_util::spit;

TEST(Numbers, WholeTextIntegersOrAReason) {
  EXPECT_EQ(numbers::parse_int<int>("42"), 42);
  EXPECT_EQ(numbers::parse_int<int>("-7"), -7);
  EXPECT_EQ(numbers::parse_int<int>("99999999999").error(), numbers::IntError::out_of_range);
  EXPECT_EQ(numbers::parse_int<long long>("99999999999999999999x").error(), numbers::IntError::not_integer);
  for (const char* bad : {"", "-", "+1", " 1", "1 ", "1.5", "0x10", "eight"})
    EXPECT_EQ(numbers::parse_int<int>(bad).error(), numbers::IntError::not_integer) << bad;
}

TEST(Strings, CutKeepsShortValuesAndCountsLongOnes) {
  EXPECT_EQ(strings::cut("short"), "short");
  EXPECT_EQ(strings::cut("a\nb\x1b[31m\t"), "a\\x0ab\\x1b[31m\\x09");
  std::string long_value(1000, 'a');
  EXPECT_EQ(strings::cut(long_value), std::string(200, 'a') + "\u2026 (1000 bytes)");
  // Never half a UTF-8 character: "é" is two bytes, the cut backs up to its start.
  std::string accents = std::string(199, 'a') + "\xc3\xa9" + "tail";
  EXPECT_EQ(strings::cut(accents), std::string(199, 'a') + "\u2026 (205 bytes)");
}

TEST(Strings, DidYouMeanWithinAThirdOfTheLength) {
  const std::vector<std::string> names = {"Ampere", "Hopper", "Blackwell"};
  EXPECT_EQ(strings::did_you_mean("amper", names), "Ampere");
  EXPECT_EQ(strings::did_you_mean("Hoppr", names), "Hopper");
  EXPECT_EQ(strings::did_you_mean("Blackwellxxx", names), "Blackwell");  // 3 edits, 12 / 3 = 4
  EXPECT_EQ(strings::did_you_mean("Volta", names), std::nullopt);
  // Far longer than every name: no comparison can be within the limit (and none is made).
  EXPECT_EQ(strings::did_you_mean(std::string(1 << 20, 'a'), names), std::nullopt);
}

TEST(ErrorRender, LongLinesAreCutAroundTheCaret) {
  Error e{ErrorKind::bad_input, "name is bad: " + std::string(100000, 'n'), "",
          Location{"r.toml", 1, 50001, std::string(100000, 'x')}};
  std::string text = e.render();
  EXPECT_LT(text.size(), 5000u);
  EXPECT_NE(text.find("(100013 bytes)"), std::string::npos);
  auto caret_line = text.substr(text.rfind('\n') + 1);
  EXPECT_EQ(caret_line, "  " + std::string(83, ' ') + "^") << "80 characters before the caret, after '...'";
}

TEST(VersionSpec, OneGrammarWithColumns) {
  auto ok = parse_version_spec(" >=12.1 , <13,!=12.2");
  ASSERT_TRUE(ok) << ok.error().render();
  ASSERT_EQ(ok->size(), 3u);
  EXPECT_EQ((*ok)[0].op, ">=");
  EXPECT_EQ((*ok)[1].parts, 1);
  EXPECT_EQ((*ok)[2].op, "!=");
  EXPECT_TRUE(parse_version_spec("auto")->empty());
  EXPECT_TRUE(parse_version_spec("torch")->empty());
  struct Bad {
    const char* spec;
    int column;
    const char* what;
  };
  for (auto b : {Bad{"99999999999", 1, "version number 99999999999 is too large"},
                 Bad{"12.4.1", 5, "a CUDA version has two parts (major.minor)"}, Bad{">=12,<", 7, "expected a number"},
                 Bad{"12 13", 4, "expected ',' or the end of the spec"}, Bad{"~=12.1", 1, "expected a number"},
                 Bad{"", 1, "expected a number"}}) {
    auto r = parse_version_spec(b.spec);
    ASSERT_FALSE(r) << b.spec;
    EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
    EXPECT_EQ(r.error().where.column, b.column) << b.spec;
    EXPECT_EQ(r.error().message, "invalid CUDA version spec '" + std::string(b.spec) + "': " + b.what);
  }
}

TEST(VersionSpec, ClausesCompareMajorMinor) {
  auto accepts = [](const char* spec, Version v) {
    auto c = parse_version_spec(spec);
    for (auto& k : *c)
      if (!k.accepts(v)) return false;
    return true;
  };
  EXPECT_TRUE(accepts(">=12.1,<13", {12, 4, 0}));
  EXPECT_FALSE(accepts(">=12.1,<13", {13, 0, 0}));
  EXPECT_TRUE(accepts("<=12", {12, 9, 0}));
  EXPECT_FALSE(accepts("!=12", {12, 4, 0}));
  EXPECT_TRUE(accepts("!=12.2", {12, 4, 0}));
  EXPECT_TRUE(accepts("12", {12, 6, 0}));
  EXPECT_FALSE(accepts("12.4", {12, 6, 0}));
}

TEST(TomlGuard, EveryTomlFileOfTheRepositoryPasses) {
  sfs::path root = OPFORGE_SOURCE_DIR;
  int seen = 0;
  for (auto dir : {"recipes", "toolchains", "src/kernels", "tests/fixtures", "tests/fuzz/corpus/manifest"})
    for (auto& e : sfs::recursive_directory_iterator(root / dir))
      if (e.path().extension() == ".toml") {
        ++seen;
        if (e.path().filename() == "newline-flag.toml" || e.path().filename() == "escaping-sources.toml") continue;
        auto bad = recipe::check_toml_text(slurp(e.path()));
        EXPECT_FALSE(bad) << e.path() << ":" << bad->line << ":" << bad->column << ": " << bad->message;
      }
  EXPECT_GT(seen, 8);
}

TEST(TomlGuard, ValidTomlWithEveryConstructPasses) {
  const char* text =
      "# comment with ` and \xce\x9a and [[[\n"
      "\"quoted \xce\x9a key\" = 'literal with ` and \" and [`'\n"
      "a.b.c = \"esc \\\" \\\\ \\u00e9 [x]\"\n"
      "ml = \"\"\"\n[`not a header]\n\\\n  end \"\" \"\"\"\n"
      "lit = '''\n[also `not`]\n'''\n"
      "arr = [\n  [1, 2], # nested\n  { x = 1, y.z = [3] },\n]\n"
      "[[ tables ]]\n"
      "[ 'quoted header' . \"x\" ]\r\n"
      "k = 1.5e3\n"
      "t = 1979-05-27 07:32:00\n"
      "u = [1979-05-27 , 1979-05-27T07:32:00Z, 1979-05-27 07:32:00.5]\n"
      "w = 1979-05-27 # 0\n"
      "v = [1979-05-27t07:32:00, 1979-05-27T23:59:59.999-07:00]\n"
      "q = [\"a\",'b',\"\"\"c\"\"\"\"\", { x.\"y\" = 'z' }]\n";
  auto bad = recipe::check_toml_text(text);
  EXPECT_FALSE(bad) << bad->line << ":" << bad->column << ": " << bad->message;
}

TEST(TomlGuard, RefusesWhatTomlPlusPlusMustNotSee) {
  struct Bad {
    std::string text;
    int line, column;
    const char* message;
  };
  for (auto& b :
       {Bad{"[`a]\n", 1, 2, "a table header needs a key after '['"}, Bad{"a = `x`\n", 1, 5, "'`' outside a string"},
        Bad{"\xce\x9a = 1\n", 1, 1, "non-ASCII character outside a string"},
        Bad{"x = 1\n[[[a]]]\n", 2, 3, "a table header needs a key after '['"},
        Bad{"[[=\n", 1, 3, "a table header needs a key after '['"},
        Bad{"[ ]\n", 1, 3, "a table header needs a key after '['"},
        Bad{"a = \"\xc3\x28\"\n", 1, 6, "invalid UTF-8 (byte 0xC3)"},
        Bad{"a = \"\xed\xa0\x80\"\n", 1, 6, "invalid UTF-8 (byte 0xED)"},  // a surrogate
        Bad{"a = \"\xc0\xaf\"\n", 1, 6, "invalid UTF-8 (byte 0xC0)"},      // overlong '/'
        Bad{"a = 1\x7f\n", 1, 6, "control character 0x7F in the file"},
        Bad{std::string("a = \"x\0y\"\n", 10), 1, 7, "control character 0x00 in the file"},
        Bad{"a = 1\rb = 2\n", 1, 6, "control character 0x0D in the file"},
        // Found by the fuzzers (tests/fuzz/corpus/*/regression-*):
        Bad{"name =[ }n \"", 1, 9, "'}' closes a '['"},
        Bad{"a = \"\"\"x\\\n  \xce\x9a\"\"\"\n", 2, 3, "non-ASCII character right after a line-ending backslash"},
        Bad{"a=8?32-06-u5 0\n", 1, 14, "'8?32-06-u5' followed by a space and a lone digit"},
        Bad{"d = [1_979-05-27 1]\n", 1, 18, "'1979-05-27' followed by a space and a lone digit"},
        Bad{"d = {x=1979-05-27 7,y=1}\n", 1, 19, "'1979-05-27' followed by a space and a lone digit"},
        Bad{"d = 1979-05-27 7", 1, 16, "'1979-05-27' followed by a space and a lone digit"},
        Bad{"a=8[79-05-27 0\n", 1, 14, "'8[79-05-27' followed by a space and a lone digit"},
        Bad{"a=8'32-06-u5 0\n", 1, 4, "quote in the middle of a value"},
        Bad{"f={3s={a=8{'3-06-u5 0\n", 1, 12, "quote in the middle of a value"},
        Bad{"a = [1, x\"\"\"y\n\"\"\"]\n", 1, 10, "quote in the middle of a value"},
        Bad{"a=8232-06-23t@|:3", 1, 14, "'8232-06-23t' not followed by a time"},
        Bad{"d = [1979-05-27T:00]\n", 1, 17, "'1979-05-27T' not followed by a time"},
        Bad{"d = {x = 1979-05-27T}\n", 1, 21, "'1979-05-27T' not followed by a time"}}) {
    auto r = recipe::check_toml_text(b.text);
    ASSERT_TRUE(r) << b.text;
    EXPECT_EQ(r->message, b.message) << b.text;
    EXPECT_EQ(r->line, b.line) << b.text;
    EXPECT_EQ(r->column, b.column) << b.text;
  }
  std::string dotted;
  for (int i = 0; i < 65; ++i) dotted += "a.";
  EXPECT_EQ(recipe::check_toml_text(dotted + "b = 1\n")->message, "key with more than 64 dotted parts");
  EXPECT_FALSE(recipe::check_toml_text("v = [" + dotted + "]\n")) << "dots in values are not key parts";
  EXPECT_EQ(recipe::check_toml_text(std::string(recipe::kMaxTomlBytes + 1, '#'))->line, 1);
}

TEST(TomlGuard, DateThenLoneDigitIsBadInputWithFileLineAndHint) {
  // Found by manifest_fuzz: TOML++ 3.3.0's own assertion (parser.inl:2636) in parse_value.
  auto m = ops::parse_manifest("/src/kernels/op/op.toml", "name = \"op\"\nkind = \"cpu\"\nd = 1979-05-27 0\n", "/src");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(m.error().render(),
            "/src/kernels/op/op.toml:3:16: invalid TOML: '1979-05-27' followed by a space and a lone digit\n"
            "  d = 1979-05-27 0\n"
            "                 ^\n"
            "  hint: a date-time is written 1979-05-27 07:32:00 (or 1979-05-27T07:32:00); a date ends before the "
            "space");
}

TEST(ManifestContainment, SiblingFoldersInsideTheTreeOnly) {
  auto parse = [](const std::string& lines) {
    return ops::parse_manifest("/src/kernels/op/op.toml", "name = \"op\"\nkind = \"cpu\"\n" + lines, "/src");
  };
  auto ok = parse(
      "sources = [\"a.cpp\", \"../utils/u.cpp\", \"./b.cpp\"]\ninclude_dirs = [\".\", \"../utils\", "
      "\"../../include\"]\n");
  ASSERT_TRUE(ok) << ok.error().render();
  EXPECT_EQ(ok->sources[1], "../utils/u.cpp");
  EXPECT_EQ(ok->sources[2], "b.cpp");
  struct Bad {
    const char* lines;
    const char* message;
    int line = 3;
  };
  for (auto b : {Bad{"sources = [\"../../../x.cpp\"]\n", "source '../../../x.cpp' leads outside the source tree"},
                 Bad{"sources = [\"/tmp/x.cpp\"]\n", "source '/tmp/x.cpp' is an absolute path"},
                 Bad{"sources = [\"a.cpp\"]\ninclude_dirs = [\"../../..\"]\n",
                     "include folder '../../..' leads outside the source tree", 4},
                 Bad{"sources = [\"a.cpp\"]\ninclude_dirs = [\"\"]\n", "include folder '' is empty", 4},
                 Bad{"sources = [\"a.cpp\"]\ncxx_flags = [\"-DX\\n  cmd = touch /tmp/y #\"]\n",
                     "cxx_flags: '-DX\\x0a  cmd = touch /tmp/y #' contains a control character (code 10)", 4}}) {
    auto r = parse(b.lines);
    ASSERT_FALSE(r) << b.lines;
    EXPECT_EQ(r.error().message, b.message);
    EXPECT_EQ(r.error().where.line, b.line);
  }
  // Without a root, the folder holding the op folders is the limit.
  EXPECT_TRUE(
      ops::parse_manifest("/ops/op/op.toml", "name = \"op\"\nkind = \"cpu\"\nsources = [\"../utils/u.cpp\"]\n"));
  EXPECT_FALSE(ops::parse_manifest("/ops/op/op.toml", "name = \"op\"\nkind = \"cpu\"\nsources = [\"../../u.cpp\"]\n"));
}

plan::Plan one_op_plan(const sfs::path& src, const sfs::path& build) {
  plan::Plan p;
  p.source.root = src;
  p.build_dir = build;
  p.jobs = 1;
  ops::Decision d;
  d.status = ops::OpStatus::build;
  d.manifest.name = "hostile";
  d.manifest.dir = src / "ops" / "hostile";
  p.ops = {d};
  return p;
}

TEST(NinjaEscaping, UnwritableStringsAreRefusedWhateverTheirSource) {
  auto p = one_op_plan("/src", "/b");
  p.ops[0].manifest.sources = {"a.cpp"};
  p.ops[0].manifest.cxx_flags = {"-DX\n  cmd = touch /tmp/y #"};
  auto g = compile::describe(p);
  ASSERT_FALSE(g);
  EXPECT_EQ(g.error().message,
            "cannot write build.ninja: '-DX\\x0a  cmd = touch /tmp/y #' contains a line break or NUL");
  p.ops[0].manifest.cxx_flags = {};
  p.ops[0].manifest.sources = {"a|b.cpp"};
  EXPECT_EQ(compile::describe(p).error().message, "cannot write build.ninja: '/b/obj/hostile/a|b.cpp.o' contains '|'");
  p.ops[0].manifest.sources = {"../../../../tmp/x.cpp"};
  auto escaped = compile::describe(p);
  ASSERT_TRUE(escaped) << escaped.error().render();
  EXPECT_EQ(escaped->steps[0].output, "/b/obj/hostile/_up_/_up_/_up_/_up_/tmp/x.cpp.o")
      << "an object path never leaves the build folder";
}

/// Names and flags full of what ninja and the shell treat specially, compiled by the real ninja
/// and gcc: the static_asserts prove each flag arrived byte for byte.
TEST(NinjaEscaping, HostileNamesAndFlagsCompileAsWritten) {
  sfs::path root = test_util::temp_dir("ninja-escaping");
  // (": " stays out of the names: ninja's depfile reader takes it for the end of a target.)
  sfs::path src = root / "so$urce:tree x", build = root / "bu ild$:x";
  sfs::remove_all(root);
  sfs::create_directories(src / "ops" / "hostile" / "sub dir");
  spit(src / "ops" / "hostile" / "sub dir" / "we$ird:name #1.cpp",
       "static_assert(sizeof(SPACE) == 4 && SPACE[1] == ' ', \"space\");\n"
       "static_assert(DOLLAR[0] == '$' && DOLLAR[1] == 'H', \"dollar\");\n"
       "static_assert(COLON[1] == ':' && QUOTE[0] == '\\'' && TICK[0] == '`', \"colon, quotes\");\n"
       "extern \"C\" int hostile() { return HASH; }\n");
  auto p = one_op_plan(src, build);
  p.ops[0].manifest.sources = {"sub dir/we$ird:name #1.cpp"};
  p.ops[0].manifest.cxx_flags = {"-DSPACE=\"a b\"", "-DDOLLAR=\"$HOME\"", "-DCOLON=\"a:b\"",
                                 "-DQUOTE=\"'\"",   "-DTICK=\"`id`\"",    "-DHASH=sizeof(\"#\")"};
  auto ran = compile::run(probe::real_machine(), p, {});
  ASSERT_TRUE(ran) << ran.error().render();
  EXPECT_TRUE(sfs::exists(build / "lib" / "libopforge_hostile.so"));
  EXPECT_TRUE(sfs::exists(build / "obj" / "hostile" / "sub dir" / "we$ird:name #1.cpp.o"));
  sfs::remove_all(root);
}

}  // namespace
}  // namespace opforge
