// The bad-input table: the real opforge binary, a controlled environment, each bad recipe,
// flag or environment value with its exact message and exit code.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "test_util.h"

namespace {

namespace fs = std::filesystem;

struct ErrorCase {
  const char* name;
  const char* recipe;  ///< written to r.toml after the fixture [source] lines (nullptr: none)
  const char* env;     ///< extra VAR=value words for env(1)
  const char* args;    ///< after `opforge`
  int exit_code;
  const char* expected;      ///< stderr, exactly (with kPrefixOnly: its beginning)
  bool prefix_only = false;  ///< for messages whose tail comes from another stage (cuda/, devices/)
};

// Each recipe starts with test_util::fixture_source()'s three lines (the line numbers below count
// from 4).
const ErrorCase kCases[] = {
    {"malformed_toml", "[package\nname = \"x\"\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:4:9: invalid TOML: Error while parsing table header: expected ']', saw '\\n'\n"
     "  [package\n"
     "          ^\n"
     "  hint: see https://toml.io for the syntax\n"},
    {"unknown_section", "[pakage]\nname = \"x\"\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:4:2: unknown key 'pakage' in the recipe; did you mean 'package'?\n"
     "  [pakage]\n"
     "   ^\n"
     "  hint: valid keys: package, source, cuda, compiler, arch, ops, build, matrix, wheel\n"},
    {"unknown_key", "[package]\nverison = \"1.0\"\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:1: unknown key 'verison' in [package]; did you mean 'version'?\n"
     "  verison = \"1.0\"\n"
     "  ^\n"
     "  hint: valid keys: name, version, local_version, summary, description, requires_python\n"},
    {"name_not_string", "[package]\nname = 3\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:8: package.name must be a string, not an integer\n"
     "  name = 3\n"
     "         ^\n"},
    {"bool_as_string", "[compiler]\nallow_unsupported = \"yes\"\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:21: compiler.allow_unsupported must be true or false, not a string\n"
     "  allow_unsupported = \"yes\"\n"
     "                      ^\n"},
    {"arch_empty_entry", "[arch]\nlist = \"8.6;;\"\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:13: arch.list: empty entry in the arch list\n"
     "  list = \"8.6;;\"\n"
     "              ^\n"
     "  hint: remove the extra ';' (entries look like 8.6 or 9.0+PTX)\n"},
    {"arch_sm_form", "[arch]\nlist = \"sm_80\"\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:9: arch.list: ", true},
    {"arch_float", "[arch]\nlist = 8.6\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:8: arch.list must be \"auto\", a string or an array of strings, not a float\n"
     "  list = 8.6\n"
     "         ^\n"},
    {"arch_fallback_bad", "[arch]\nfallback = \"8.0;ampere9\"\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:17: arch.fallback: ", true},
    {"op_request_yes", "[ops]\ncpuop = \"yes\"\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:9: ops.cpuop must be true, false or \"auto\", not \"yes\"\n"
     "  cpuop = \"yes\"\n"
     "          ^\n"},
    {"op_unknown", "[ops]\ncpuopp = true\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:1: [ops] names 'cpuopp', which is not an op; did you mean 'cpuop'?\n"
     "  cpuopp = true\n"
     "  ^\n"
     "  hint: ops: aiolike, cpuop, nolib, vecadd\n"},
    {"cuda_version_bad", "[cuda]\nversion = \"twelve\"\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:12: cuda.version: invalid CUDA version spec 'twelve': expected a number\n"
     "  version = \"twelve\"\n"
     "             ^\n"
     "  hint: write \"auto\", \"torch\", a version such as \"12.4\", or a range such as \">=12.1,<13\"\n"},
    {"backend_bad", "[build]\nbackend = \"make\"\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:11: build.backend must be \"native\" or \"command\", not \"make\"\n"
     "  backend = \"make\"\n"
     "            ^\n"},
    {"command_backend_without_command", "[build]\nbackend = \"command\"\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:11: build.backend = \"command\" needs a non-empty build.command\n"
     "  backend = \"command\"\n"
     "            ^\n"
     "  hint: e.g. command = [\"python3\", \"setup.py\", \"bdist_wheel\"]\n"},
    {"jobs_zero", "[build]\njobs = 0\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:8: build.jobs must be \"auto\" or a positive integer\n"
     "  jobs = 0\n"
     "         ^\n"},
    {"cache_bad", "[build]\ncache = \"distcc\"\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:9: build.cache must be \"none\", \"ccache\" or \"sccache\", not \"distcc\"\n"
     "  cache = \"distcc\"\n"
     "          ^\n"},
    {"local_version_placeholder", "[package]\nlocal_version = \"cu{cuda_mayor}\"\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:20: package.local_version: unknown placeholder '{cuda_mayor}'; did you mean "
     "'{cuda_major}'?\n"
     "  local_version = \"cu{cuda_mayor}\"\n"
     "                     ^\n"
     "  hint: placeholders: {cuda_major}, {cuda_minor}, {torch_major}, {torch_minor}, {commit}\n"},
    {"local_version_label", "[package]\nlocal_version = \"Build_1\"\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:17: package.local_version gives the local version label 'Build_1', which is not "
     "[a-z0-9] segments separated by dots\n"
     "  local_version = \"Build_1\"\n"
     "                  ^\n"
     "  hint: use lower-case letters, digits and dots, e.g. \"cu{cuda_major}.g{commit}\", or \"none\"\n"},
    {"version_bad", "[package]\nversion = \"one\"\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:5:11: package.version 'one' is not a PEP 440 version\n"
     "  version = \"one\"\n"
     "            ^\n"
     "  hint: write it like 0.1.0, 1.2rc1 or 2.0.post1\n"},
    {"ops_dir_missing", "[build]\njobs = 2\n", "", "plan r2.toml", 2,
     "opforge: error: recipe file 'r2.toml' does not exist\n"
     "  hint: pass the path of a recipe file, or 'default' for the recipe that comes with opforge\n"},
    {"ds_build_yes", "", "DS_BUILD_CPUOP=yes", "plan r.toml", 2,
     "opforge: error: environment variable DS_BUILD_CPUOP='yes' is not an integer\n"
     "  hint: use DS_BUILD_CPUOP=1 to build, DS_BUILD_CPUOP=0 to skip\n"},
    {"ds_build_unknown", "", "DS_BUILD_CPUOPS=1", "env r.toml", 2,
     "opforge: error: environment variable DS_BUILD_CPUOPS names no op; did you mean DS_BUILD_CPUOP?\n"
     "  hint: ops' variables: DS_BUILD_AIO, DS_BUILD_CPUOP, DS_BUILD_NOLIB, DS_BUILD_VECADD\n"},
    {"max_jobs_text", "", "MAX_JOBS=many", "plan r.toml", 2,
     "opforge: error: environment variable MAX_JOBS='many' is not a positive integer\n"
     "  hint: use e.g. MAX_JOBS=8, or unset it\n"},
    {"max_jobs_zero", "", "MAX_JOBS=0", "env r.toml", 2,
     "opforge: error: environment variable MAX_JOBS='0' is not a positive integer\n"
     "  hint: use e.g. MAX_JOBS=8, or unset it\n"},
    {"epoch_text", "", "SOURCE_DATE_EPOCH=yesterday", "plan r.toml", 2,
     "opforge: error: environment variable SOURCE_DATE_EPOCH='yesterday' is not a non-negative integer (seconds since "
     "1970)\n"
     "  hint: use e.g. SOURCE_DATE_EPOCH=$(git log -1 --format=%ct), or unset it\n"},
    {"epoch_negative", "", "SOURCE_DATE_EPOCH=-5", "plan r.toml", 2,
     "opforge: error: environment variable SOURCE_DATE_EPOCH='-5' is not a non-negative integer (seconds since 1970)\n"
     "  hint: use e.g. SOURCE_DATE_EPOCH=$(git log -1 --format=%ct), or unset it\n"},
    {"torch_arch_list_bad", "", "TORCH_CUDA_ARCH_LIST=8.6;;", "plan r.toml", 2,
     "opforge: error: environment variable TORCH_CUDA_ARCH_LIST='8.6;;' is invalid: empty entry in the arch list\n"
     "  hint: use entries like 8.6 or 9.0+PTX separated by ';' (or unset it)\n"},
    {"requested_op_missing_library", "", "DS_BUILD_NOLIB=1", "plan r.toml", 3,
     "opforge: error: op 'nolib' was requested (DS_BUILD_NOLIB=1) but cannot be built: libopforge-missing not found "
     "(compiling and linking `return 0;` with -lopforge_does_not_exist failed: /usr/bin/ld: cannot find "
     "-lopforge_does_not_exist: No such file or directory)\n"
     "  hint: install it (apt-get install libopforge-missing-dev, yum install opforge-missing-devel, pacman -S "
     "opforge-missing), or set CFLAGS/LDFLAGS to its include and lib folders (-I... / -L...)\n"},
    {"recipe_true_missing_library", "[ops]\nnolib = true\ncpuop = true\n", "", "plan r.toml", 3,
     "opforge: error: op 'nolib' was requested (recipe: true) but cannot be built: libopforge-missing not found "
     "(compiling and linking `return 0;` with -lopforge_does_not_exist failed: /usr/bin/ld: cannot find "
     "-lopforge_does_not_exist: No such file or directory)\n"
     "  hint: install it (apt-get install libopforge-missing-dev, yum install opforge-missing-devel, pacman -S "
     "opforge-missing), or set CFLAGS/LDFLAGS to its include and lib folders (-I... / -L...)\n"},
    {"requested_cuda_op_without_toolkit", "[cuda]\nversion = \"99.0\"\n", "DS_BUILD_VECADD=1", "plan r.toml", 3,
     "opforge: error: op 'vecadd' was requested (DS_BUILD_VECADD=1) but cannot be built: it needs CUDA: ", true},
    {"duplicate_table", "[package]\nname = \"x\"\n[cuda]\n[source]\n", "", "plan r.toml", 2,
     "opforge: error: r.toml:7:1: invalid TOML: Error while parsing table header: cannot redefine existing table "
     "'source'\n"
     "  [source]\n"
     "  ^\n"
     "  hint: see https://toml.io for the syntax\n"},
    {"jobs_flag_zero", "", "", "plan r.toml -j 0", 2,
     "opforge: error: --jobs: '0' is not a number of jobs from 1 to 4096\n  hint: `opforge plan --help` shows the "
     "usage\n"},
    // build and plan refuse -j by the same rule (settings::parse_jobs_flag), before anything is built.
    {"build_jobs_flag_zero", "", "", "build r.toml -j 0", 2,
     "opforge: error: --jobs: '0' is not a number of jobs from 1 to 4096\n  hint: `opforge build --help` shows the "
     "usage\n"},
    {"build_jobs_flag_huge", "", "", "build r.toml -j 100000", 2,
     "opforge: error: --jobs: '100000' is not a number of jobs from 1 to 4096\n  hint: `opforge build --help` shows "
     "the usage\n"},
    {"env_format_bad", "", "", "env r.toml --format fish", 2, "--format: fish not in {sh,json}", true},
    {"release_of_missing_record", "", "", "build r.toml --release-of nope.json", 2,
     "opforge: error: nope.json: no such build record\n"
     "  hint: pass the .opforge-record.json written beside a wheel in the dist folder\n"},
    {"verify_missing_record", "", "", "verify nope.json", 2,
     "opforge: error: nope.json: no such build record\n"
     "  hint: pass the .opforge-record.json written beside a wheel in the dist folder\n"},
};

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

CliRun run_cli(const fs::path& cwd, const std::string& env, const std::string& args) {
  fs::path out = cwd / "stdout.txt", err = cwd / "stderr.txt";
  // env -i: nothing of the test runner's environment leaks in (no DS_BUILD_*, no CUDA_HOME).
  std::string cmd = "cd '" + cwd.string() + "' && env -i PATH=/usr/bin:/bin HOME='" + cwd.string() +
                    "' OPFORGE_CACHE_DIR='" + (cwd / "cache").string() + "' " + env + " '" + OPFORGE_BINARY + "' " +
                    args + " >stdout.txt 2>stderr.txt";
  CliRun r;
  int status = std::system(cmd.c_str());
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

class CliErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(CliErrors, ExactMessageAndExitCode) {
  const ErrorCase& c = GetParam();
  fs::path dir = fs::path(OPFORGE_BUILD_DIR) / "cli_errors" / c.name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  if (c.recipe) std::ofstream(dir / "r.toml") << opforge::test_util::fixture_source() << c.recipe;
  std::string env = c.env;
  if (auto pos = env.find("TORCH_CUDA_ARCH_LIST="); pos != std::string::npos) env = "'" + env + "'";
  CliRun r = run_cli(dir, env, c.args);
  EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
  if (c.prefix_only) {
    EXPECT_TRUE(r.err.find(c.expected) != std::string::npos) << "stderr:\n" << r.err;
  } else {
    EXPECT_EQ(r.err, c.expected);
  }
  EXPECT_EQ(r.out, "") << "nothing goes to stdout on an error";
}

INSTANTIATE_TEST_SUITE_P(Table, CliErrors, ::testing::ValuesIn(kCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(CliErrors, TableHasAtLeast25Cases) { EXPECT_GE(std::size(kCases), 25u); }

}  // namespace
