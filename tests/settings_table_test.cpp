// settings/: the one table of what opforge reads, and its readers' rules.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "probe/fake_machine.h"
#include "record/record.h"
#include "settings/settings.h"
#include "test_util.h"

namespace opforge::settings {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SettingsTable, DocsHoldTheGeneratedTableOfVariables) {
  // docs/recipe.md carries markdown_variables() between these markers; on a change, paste the
  // expected text below into it.
  const std::string doc = read_text(std::string(OPFORGE_SOURCE_DIR) + "/docs/recipe.md");
  const std::string begin = "<!-- settings table: generated from src/settings/settings.cpp -->\n";
  const std::string end = "<!-- end of settings table -->";
  auto a = doc.find(begin);
  ASSERT_NE(a, std::string::npos) << "docs/recipe.md lacks the marker " << begin;
  auto b = doc.find(end, a);
  ASSERT_NE(b, std::string::npos);
  const std::string expected = markdown_variables();
  if (doc.substr(a + begin.size(), b - a - begin.size()) != expected) {
    // The table to paste, whole, beside the build.
    const std::string out = std::string(OPFORGE_BUILD_DIR) + "/settings-table.md";
    std::ofstream(out) << expected;
    ADD_FAILURE() << "docs/recipe.md's table of variables is not markdown_variables(): paste " << out
                  << " between its markers";
  }
}

TEST(SettingsTable, DocsListEveryRecipeKeyInItsSection) {
  const std::string doc = read_text(std::string(OPFORGE_SOURCE_DIR) + "/docs/recipe.md");
  for (const auto& s : table()) {
    if (s.source != Source::recipe || s.name.starts_with("ops.")) continue;
    const std::string name(s.name);
    const std::string section = "## [" + name.substr(0, name.find('.')) + "]";
    auto at = doc.find(section);
    ASSERT_NE(at, std::string::npos) << section;
    auto next = doc.find("\n## ", at + 1);
    const std::string body = doc.substr(at, next == std::string::npos ? std::string::npos : next - at);
    EXPECT_NE(body.find("| `" + name.substr(name.find('.') + 1) + "` |"), std::string::npos) << name;
  }
}

TEST(SettingsTable, TheRecipeParserAcceptsExactlyTheTablesKeys) {
  EXPECT_EQ(recipe_keys("arch"), (std::vector<std::string>{"list", "fallback", "enforce", "env", "cmake_define"}));
  EXPECT_EQ(recipe_keys("build"),
            (std::vector<std::string>{"backend", "command", "wheel_glob", "jobs", "cache", "remote", "scheduler",
                                      "scheduler_token_file", "build_dir", "dist_dir", "release", "pch",
                                      "gcc_gc_heap_mib", "platform", "cpu_target", "cpu_dispatch", "env"}));
  EXPECT_EQ(recipe_keys("nothing"), std::vector<std::string>{});
}

TEST(SettingsTable, TheVariablesThatChangeTheWheelAreRecordedAndNoOthers) {
  EXPECT_EQ(wheel_variables_line(),
            "DS_*, TORCH_CUDA_ARCH_LIST, CUDA_HOME, CUDA_PATH, SOURCE_DATE_EPOCH, MAX_JOBS, CFLAGS, CXXFLAGS, LDFLAGS, "
            "NVCC_APPEND_FLAGS, NVCC_PREPEND_FLAGS, CMAKE_ARGS, SKBUILD_*");
  // The caller's CMake arguments and scikit-build-core settings are the project's input; the
  // build folder opforge picks for scikit-build-core is not.
  EXPECT_TRUE(record::recorded_variable("SKBUILD_CMAKE_DEFINE"));
  EXPECT_FALSE(record::recorded_variable("SKBUILD_BUILD_DIR"));
  for (const auto& s : table()) {
    if (s.source != Source::environment || s.name.ends_with("*")) continue;
    EXPECT_EQ(record::recorded_variable(s.name), s.changes_wheel) << s.name;
  }
  EXPECT_TRUE(changes_wheel("DS_BUILD_FUTURE_OP"));
  EXPECT_FALSE(changes_wheel("LD_PRELOAD"));
  EXPECT_EQ(find_variable("DS_BUILD_OPS")->name, "DS_BUILD_OPS");
  EXPECT_EQ(find_variable("DS_BUILD_AIO")->name, "DS_BUILD_*");
  EXPECT_EQ(find_variable("DS_ACCELERATOR")->name, "DS_*");
  EXPECT_EQ(find_variable("LD_PRELOAD")->name, "LD_*");  // the host's loader: a row, not passed into a root
  EXPECT_EQ(find_variable("MY_OWN_SWITCH"), nullptr);
}

TEST(SettingsRules, SkipCudaCheckIsExactlyOneAsDeepSpeedReadsIt) {
  probe::FakeEnvironment env;
  EXPECT_FALSE(skip_cuda_check(env));
  EXPECT_EQ(ignored_skip_cuda_check(env), std::nullopt);
  env.set("DS_SKIP_CUDA_CHECK", "1");
  EXPECT_TRUE(skip_cuda_check(env));
  EXPECT_EQ(ignored_skip_cuda_check(env), std::nullopt);
  env.set("DS_SKIP_CUDA_CHECK", "true");
  EXPECT_FALSE(skip_cuda_check(env));
  EXPECT_EQ(ignored_skip_cuda_check(env), std::optional<std::string>("true"));
  env.set("DS_SKIP_CUDA_CHECK", "0");
  EXPECT_FALSE(skip_cuda_check(env));
  EXPECT_EQ(ignored_skip_cuda_check(env), std::nullopt);
}

TEST(SettingsRules, ArchListIsReadAndCheckedOnce) {
  probe::FakeEnvironment env;
  EXPECT_EQ(arch_list(env).value(), std::nullopt);
  env.set("TORCH_CUDA_ARCH_LIST", "  ");
  EXPECT_EQ(arch_list(env).value(), std::nullopt);
  env.set("TORCH_CUDA_ARCH_LIST", "8.6;9.0+PTX");
  auto ok = arch_list(env);
  ASSERT_TRUE(ok && *ok);
  EXPECT_EQ((*ok)->text, "8.6;9.0+PTX");
  EXPECT_EQ(target::arch_list_str((*ok)->arches), "8.6;9.0+PTX");
  env.set("TORCH_CUDA_ARCH_LIST", "8.6;;");
  auto bad = arch_list(env);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(bad.error().message,
            "environment variable TORCH_CUDA_ARCH_LIST='8.6;;' is invalid: empty entry in the arch list");
}

TEST(SettingsRules, MaxJobsAndTheJobsFlagShareTheirRange) {
  probe::FakeEnvironment env;
  EXPECT_EQ(max_jobs(env).value(), std::nullopt);
  env.set("MAX_JOBS", "100000");
  auto capped = max_jobs(env);
  ASSERT_TRUE(capped && *capped);
  EXPECT_EQ((*capped)->jobs, kMaxJobs);
  EXPECT_TRUE((*capped)->capped);
  EXPECT_EQ((*capped)->asked, 100000);
  env.set("MAX_JOBS", "0");
  EXPECT_EQ(max_jobs(env).error().message, "environment variable MAX_JOBS='0' is not a positive integer");
  EXPECT_EQ(parse_jobs_flag("8").value(), 8u);
  EXPECT_EQ(parse_jobs_flag("4096").value(), 4096u);
  EXPECT_EQ(parse_jobs_flag("0").error().message, "'0' is not a number of jobs from 1 to 4096");
  EXPECT_EQ(parse_jobs_flag("100000").error().message, "'100000' is not a number of jobs from 1 to 4096");
  EXPECT_EQ(parse_jobs_flag("x").error().message, "'x' is not a number of jobs from 1 to 4096");
}

TEST(SettingsRules, TheCacheFolderIsChosenOneWay) {
  probe::FakeEnvironment env;
  env.set("HOME", "/home/u");
  EXPECT_EQ(cache_dir(env), std::filesystem::path("/home/u/.cache/opforge"));
  env.set("OPFORGE_CACHE_DIR", "/c");
  EXPECT_EQ(cache_dir(env), std::filesystem::path("/c"));
  env.set("CUDA_PATH", "/p");
  env.set("CUDA_HOME", "");
  EXPECT_EQ(toolkit_roots(env), (std::vector<std::pair<std::string, std::string>>{{"CUDA_PATH", "/p"}}));
}

TEST(SettingsRules, TheNewReadersKeepTheirRules) {
  probe::FakeEnvironment env;
  EXPECT_EQ(compile_timeout(env, std::chrono::seconds(5)).value(), std::chrono::seconds(5));
  env.set("OPFORGE_COMPILE_TIMEOUT", "59");
  EXPECT_EQ(compile_timeout(env, std::chrono::seconds(5)).error().message,
            "environment variable OPFORGE_COMPILE_TIMEOUT='59' is not a number of seconds from 60 to 604800 (a week)");
  env.set("OPFORGE_COMPILE_TIMEOUT", " 600 ");
  EXPECT_EQ(compile_timeout(env, std::chrono::seconds(5)).value(), std::chrono::seconds(600));
  EXPECT_EQ(root_sandbox(env).value(), std::nullopt);
  env.set("OPFORGE_ROOT_SANDBOX", "docker");
  EXPECT_EQ(root_sandbox(env).error().message, "OPFORGE_ROOT_SANDBOX=docker: expected bwrap or chroot");
  EXPECT_EQ(root_sandbox(env).error().hint,
            "set it to bwrap or chroot, or unset it (bubblewrap when installed, else unshare and chroot)");
  env.set("OPFORGE_ROOT_SANDBOX", "chroot");
  EXPECT_EQ(root_sandbox(env).value(), std::optional<std::string>("chroot"));
  EXPECT_FALSE(capable_terminal(env));
  env.set("TERM", "dumb");
  EXPECT_FALSE(capable_terminal(env));
  env.set("TERM", "xterm-256color");
  EXPECT_TRUE(capable_terminal(env));
  env.set("HOME", "/home/u");
  EXPECT_EQ(pyenv_version_file(env), std::filesystem::path("/home/u/.pyenv/version"));
  env.set("PYENV_ROOT", "/opt/pyenv");
  EXPECT_EQ(pyenv_version_file(env), std::filesystem::path("/opt/pyenv/version"));
  env.set("CONDA_PREFIX", "");
  EXPECT_EQ(conda_prefix(env), std::nullopt);
  EXPECT_FALSE(in_root(env));
  env.set(std::string(kInRootVariable), "/r");
  EXPECT_TRUE(in_root(env));
}

TEST(SettingsTable, NoCodeOutsideSettingsReadsAVariable) {
  // One reader per setting: stages ask settings/ (or hand a whole environment to a child). Only
  // probe/, below settings/, reads for itself: the real machine's TMPDIR and test hooks, and the
  // cache folder's rule that settings::cache_dir gives everyone else.
  // An Environment's all() is a reader too (a scan for DS_BUILD_* is one): only settings::ChildEnv
  // hands the whole environment to a child.
  const std::regex read(R"((env\.get|getenv|env\.all|env\)\.all)\s*\()");
  std::vector<std::string> readers;
  for (auto& [path, text] : test_util::core_sources()) {
    if (path.starts_with("settings/") || path.starts_with("probe/")) continue;
    for (std::sregex_iterator it(text.begin(), text.end(), read), end; it != end; ++it)
      readers.push_back(path + " at offset " + std::to_string(it->position()));
  }
  EXPECT_EQ(readers, std::vector<std::string>{});
}

TEST(SettingsTable, EveryVariableReadHasARow) {
  // The names settings/ and probe/ read by name, each in the table (a family row covers DS_BUILD_X).
  const std::regex named(R"((?:env\.get|getenv)\(\s*"([A-Z_][A-Z0-9_]*)\")");
  std::vector<std::string> missing;
  int seen = 0;
  for (auto& [path, text] : test_util::core_sources()) {
    if (!path.starts_with("settings/") && !path.starts_with("probe/")) continue;
    for (std::sregex_iterator it(text.begin(), text.end(), named), end; it != end; ++it, ++seen)
      if (!find_variable((*it)[1].str())) missing.push_back(path + ": " + (*it)[1].str());
  }
  EXPECT_GT(seen, 10);
  // The Python variables share PYTHONPATH's row, which names them.
  const std::string_view python_row = find_variable("PYTHONPATH")->rule;
  for (auto& [name, value] : python_variables(probe::FakeEnvironment{}))
    if (!find_variable(name) && python_row.find(name) == std::string_view::npos)
      missing.push_back("python_variables: " + name);
  EXPECT_EQ(missing, std::vector<std::string>{});
}

TEST(SettingsTable, TheReadByColumnMatchesTheCode) {
  // A row read through a settings function names it (`settings::fn (a/b.cpp, ...)`): the function
  // is declared, the files listed call it, and every file that calls it is listed in a row of it.
  const auto files = test_util::core_sources();
  auto text_of = [&](const std::string& rel) -> const std::string* {
    for (auto& [path, text] : files)
      if (path == rel) return &text;
    return nullptr;
  };
  const std::string header = read_text(std::string(OPFORGE_SOURCE_DIR) + "/src/settings/settings.h");
  const std::regex fn(R"(settings::([a-z_]+)(?: \(([^)]*)\))?)");
  // A file is its path under src/, folders and all (compile/pch/host_compile.cpp).
  const std::regex file(R"(([a-z_]+(?:/[a-z_]+)+\.(?:cpp|h)))");
  std::map<std::string, std::set<std::string>> listed;  // function → files rows name
  std::vector<std::string> wrong;
  for (const auto& s : table()) {
    const std::string readers(s.readers);
    for (std::sregex_iterator it(readers.begin(), readers.end(), fn), end; it != end; ++it) {
      const std::string name = (*it)[1];
      if (header.find(" " + name + "(") == std::string::npos)
        wrong.push_back(std::string(s.name) + ": no settings::" + name);
      auto& set = listed[name];
      const std::string in = (*it)[2];
      for (std::sregex_iterator f(in.begin(), in.end(), file), fend; f != fend; ++f) {
        set.insert((*f)[1]);
        const std::string* body = text_of((*f)[1]);
        if (!body) wrong.push_back(std::string(s.name) + ": no file src/" + (*f)[1].str());
        else if (body->find("settings::" + name + "(") == std::string::npos)
          wrong.push_back(std::string(s.name) + ": " + (*f)[1].str() + " does not call settings::" + name);
      }
    }
  }
  // The inverse: a caller no row names.
  for (auto& [name, set] : listed) {
    if (set.empty()) continue;  // "settings::cache_dir (every cache reader)": many, not listed
    for (auto& [path, text] : files)
      if (!path.starts_with("settings/") && text.find("settings::" + name + "(") != std::string::npos &&
          !set.contains(path))
        wrong.push_back("settings::" + name + " is called by " + path + ", which no row names");
  }
  EXPECT_EQ(wrong, std::vector<std::string>{});
}

TEST(SettingsInside, EveryVariableThatChangesTheWheelReachesARoot) {
  for (const auto& s : table()) {
    if (s.source == Source::environment && s.changes_wheel) {
      EXPECT_EQ(s.inside, Inside::passed) << s.name << " changes the wheel, so a build inside a root must get it";
    }
  }
  EXPECT_EQ(inside_root("CFLAGS"), Inside::passed);
  EXPECT_EQ(inside_root("NVCC_APPEND_FLAGS"), Inside::passed);
  EXPECT_EQ(inside_root("DS_BUILD_AIO"), Inside::passed);
  EXPECT_EQ(inside_root("FLASH_ATTENTION_FORCE_BUILD"), Inside::passed);  // a project's own switch
  EXPECT_EQ(inside_root("LD_PRELOAD"), Inside::host);
  EXPECT_EQ(inside_root("LD_LIBRARY_PATH"), Inside::host);
  EXPECT_EQ(inside_root("PYTHONHOME"), Inside::host);
  EXPECT_EQ(inside_root("PATH"), Inside::set);
  EXPECT_EQ(inside_root("OPFORGE_CACHE_DIR"), Inside::set);
}

TEST(SettingsInside, DeepSpeedsBuildersReadWhatTheTableMarks) {
  for (const char* name :
       {"DS_BUILD_OPS", "DS_ACCELERATOR", "CUDA_HOME", "CUDA_VISIBLE_DEVICES", "CUTLASS_PATH", "TORCH_CUDA_ARCH_LIST",
        "TORCH_EXTENSIONS_DIR", "PATH", "CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "NVCC_APPEND_FLAGS",
        "NVCC_PREPEND_FLAGS", "PYTHONPATH", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH"})
    EXPECT_TRUE(read_by_deepspeed_builders(name)) << name;
  for (const char* name :
       {"HOME", "TERM", "MAX_JOBS", "LD_PRELOAD", "FLASH_ATTENTION_FORCE_BUILD", "OPFORGE_CACHE_DIR"})
    EXPECT_FALSE(read_by_deepspeed_builders(name)) << name;
}

TEST(SettingsRules, BuildSwitchesAreTheDsBuildVariablesButTheVersionString) {
  probe::FakeEnvironment env({{"DS_BUILD_OPS", "1"},
                              {"DS_BUILD_AIO", ""},
                              {"DS_BUILD_STRING", ".dev"},
                              {"DS_ACCELERATOR", "cuda"},
                              {"PATH", "/usr/bin"}});
  EXPECT_EQ(build_switches(env), (std::map<std::string, std::string>{{"DS_BUILD_AIO", ""}, {"DS_BUILD_OPS", "1"}}));
}

TEST(SettingsChildren, TheTokenReachesNoChildButOpforgeAndACompileGetsOnlyItsRows) {
  probe::FakeEnvironment env({{"OPFORGE_SCHEDULER_TOKEN", "t0ken"},
                              {"OPFORGE_TEST_CANARY", "canary"},
                              {"HOME", "/root"},
                              {"AWS_SECRET_ACCESS_KEY", "aws"},
                              {"CI", "true"},
                              {"PATH", "/usr/bin"},
                              {"LANG", "C.UTF-8"},
                              {"LC_ALL", "C"},
                              {"LC_NUMERIC", "de_DE"},
                              {"TMPDIR", "/tmp"},
                              {"SOURCE_DATE_EPOCH", "1700000000"},
                              {"CPATH", "/opt/inc"},
                              {"NVCC_APPEND_FLAGS", "-O3"},
                              {"SCCACHE_SERVER_UDS", "/tmp/s/serve.sock"},
                              {"SCCACHE_CONF", "/home/u/sccache.toml"},
                              {"SCCACHE_REDIS", "redis://:password@host"},
                              {"CUDA_HOME", "/usr/local/cuda"}});
  // A project's command, ninja, a probe: everything but opforge's secret.
  auto command = child_environment(env, Child::command);
  EXPECT_FALSE(command.contains("OPFORGE_SCHEDULER_TOKEN"));
  EXPECT_EQ(command.size(), env.all().size() - 1);
  EXPECT_EQ(everything(env), command);
  // Another opforge (inside a root) reads the token itself.
  EXPECT_EQ(child_environment(env, Child::opforge).at("OPFORGE_SCHEDULER_TOKEN"), "t0ken");
  // A compile that may run on a build server: the table's compile rows, nothing else of the machine.
  EXPECT_EQ(child_environment(env, Child::compile),
            (std::map<std::string, std::string>{{"CPATH", "/opt/inc"},
                                                {"LANG", "C.UTF-8"},
                                                {"LC_ALL", "C"},
                                                {"NVCC_APPEND_FLAGS", "-O3"},
                                                {"PATH", "/usr/bin"},
                                                {"SCCACHE_SERVER_UDS", "/tmp/s/serve.sock"},
                                                {"SOURCE_DATE_EPOCH", "1700000000"},
                                                {"TMPDIR", "/tmp"}}));
  EXPECT_EQ(secret_variables(), std::vector<std::string>{"OPFORGE_SCHEDULER_TOKEN"});
  // Each compile row is one name (the launcher script names them one by one), never a family.
  for (const auto& name : compile_variables()) EXPECT_EQ(name.find('*'), std::string::npos) << name;
}

}  // namespace
}  // namespace opforge::settings
