// Recipe parsing: defaults, every section, and errors with file:line:col and a caret.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "recipe/recipe.h"

namespace opforge::recipe {
namespace {

TEST(RecipeParse, EmptyRecipeGetsDefaults) {
  auto r = parse_file("/x/r.toml", "");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->package.name, "opforge-ops");
  EXPECT_EQ(r->package.local_version, "cu{cuda_major}.g{commit}");
  EXPECT_EQ(*r->source.path, "/x");
  EXPECT_EQ(r->source.ops_dir, "src/kernels");
  EXPECT_EQ(r->arch.list, "auto");
  EXPECT_EQ(r->build.jobs, 0u);
  EXPECT_TRUE(r->ops.empty());
}

TEST(RecipeParse, EverySection) {
  auto r = parse_file("/x/recipes/r.toml", R"(
[package]
name = "my-ops"
version = "1.2.0"
local_version = "cu{cuda_major}{cuda_minor}"
[source]
git = "https://example.org/ops.git"
rev = "v1.2.0"
ops_dir = "csrc/ops"
[cuda]
version = ">=12.1,<13"
python = "/usr/bin/python3"
[compiler]
host = "g++-11"
allow_unsupported = true
[arch]
list = ["8.0", "9.0+PTX"]
fallback = "8.6"
[ops]
aio = "auto"
cpu_adam = true
utils = false
[build]
backend = "command"
command = ["python3", "setup.py", "bdist_wheel"]
jobs = 8
cache = "ccache"
remote = "redis://127.0.0.1:6379"
release = true
)");
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->package.name, "my-ops");
  EXPECT_FALSE(r->source.path);
  EXPECT_EQ(*r->source.git, "https://example.org/ops.git");
  EXPECT_EQ(*r->source.rev, "v1.2.0");
  EXPECT_EQ(r->cuda.version, ">=12.1,<13");
  EXPECT_EQ(r->compiler.host, "g++-11");
  EXPECT_TRUE(r->compiler.allow_unsupported);
  EXPECT_EQ(r->arch.list, "8.0;9.0+PTX");
  EXPECT_EQ(r->ops.at("aio"), OpRequest::automatic);
  EXPECT_EQ(r->ops.at("cpu_adam"), OpRequest::on);
  EXPECT_EQ(r->ops.at("utils"), OpRequest::off);
  EXPECT_EQ(r->build.backend, Backend::command);
  EXPECT_EQ(r->build.command.size(), 3u);
  EXPECT_EQ(r->build.jobs, 8u);
  EXPECT_EQ(r->build.cache, Cache::ccache);
  EXPECT_TRUE(r->build.release);
  EXPECT_EQ(r->locations.at("ops.aio").line, 20);
}

TEST(RecipeParse, RelativeSourcePathResolvesAgainstTheRecipeFolder) {
  auto r = parse_file("/x/recipes/r.toml", "[source]\npath = \"..\"\n");
  ASSERT_TRUE(r);
  EXPECT_EQ(*r->source.path, "/x");
}

TEST(RecipeParse, WheelFloorAndRoot) {
  auto r = parse_file("/x/recipes/r.toml", "[wheel]\nglibc = \"manylinux_2_28\"\nroot = \"../roots/bullseye\"\n");
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->wheel.glibc_floor, 28);
  EXPECT_EQ(*r->wheel.root, "/x/roots/bullseye");
  EXPECT_EQ(parse_file("/x/r.toml", "[wheel]\nglibc = \"2.31\"\n")->wheel.glibc_floor, 31);
  EXPECT_EQ(parse_file("/x/r.toml", "")->wheel.glibc_floor, 0);
  auto bad = parse_file("/x/r.toml", "[wheel]\nglibc = \"2.30\"\n");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(bad.error().message, "wheel.glibc floor '2.30' names no manylinux policy");
  EXPECT_EQ(bad.error().where.line, 2);
  EXPECT_NE(bad.error().hint.find("2.28, 2.31"), std::string::npos);
  EXPECT_FALSE(parse_file("/x/r.toml", "[wheel]\nflor = \"2.28\"\n"));
}

TEST(RecipeParse, ErrorRendersLineAndCaret) {
  auto r = parse_file("r.toml", "[build]\njobs = \"many\"\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(r.error().render(),
            "r.toml:2:8: build.jobs must be \"auto\" or a positive integer\n"
            "  jobs = \"many\"\n"
            "         ^");
}

TEST(RecipeParse, GccGcHeapIsMibFromZeroUp) {
  EXPECT_EQ(parse_file("/x/r.toml", "")->build.gcc_gc_heap_mib, 1024u);
  EXPECT_EQ(parse_file("/x/r.toml", "[build]\ngcc_gc_heap_mib = 0\n")->build.gcc_gc_heap_mib, 0u);
  EXPECT_EQ(parse_file("/x/r.toml", "[build]\ngcc_gc_heap_mib = 2048\n")->build.gcc_gc_heap_mib, 2048u);
  for (const char* bad : {"-1", "65537", "\"1GiB\"", "1.5"}) {
    auto r = parse_file("r.toml", std::string("[build]\ngcc_gc_heap_mib = ") + bad + "\n");
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().kind, ErrorKind::bad_input);
    EXPECT_EQ(r.error().where.line, 2);
    EXPECT_NE(r.error().render().find("build.gcc_gc_heap_mib must be an integer from 0 to 65536 (MiB)"),
              std::string::npos)
        << r.error().render();
  }
}

TEST(RecipeParse, ArrayArchEntryErrorPointsInsideThatString) {
  auto r = parse_file("r.toml", "[arch]\nlist = [\"8.0\", \"sm_90\"]\n");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().where.line, 2);
  EXPECT_EQ(r.error().where.column, 17);
}

TEST(RecipeParse, NameAndVersionGrammars) {
  auto ok = [](std::string_view key, std::string_view value) {
    return parse_file("/x/r.toml", "[package]\n" + std::string(key) + " = \"" + std::string(value) + "\"\n")
        .has_value();
  };
  for (auto name : {"a", "A9", "my-ops", "my_ops.x", "a-b_c.d9"}) EXPECT_TRUE(ok("name", name)) << name;
  for (auto name : {"-a", "a-", ".a", "a.", "a b", "a/b", "é"}) EXPECT_FALSE(ok("name", name)) << name;
  EXPECT_TRUE(ok("name", std::string(256, 'a')));
  EXPECT_FALSE(ok("name", std::string(257, 'a')));
  for (auto v : {"1", "1.2.3", "1.0a1", "1.0b2", "2.0rc3", "1.0.post1", "1.0.dev4", "1.0rc1.post2.dev3"})
    EXPECT_TRUE(ok("version", v)) << v;
  for (auto v : {"", "1.", ".1", "1..2", "1.0a", "1.0rc", "1.0.post", "1.0.dev", "1.0c1", "1.0-1", "v1",
                 "1.0.dev1.post1", "1.0.post1a1"})
    EXPECT_FALSE(ok("version", v)) << v;
}

TEST(RecipeParse, ArchEnforceAndBuildEnv) {
  auto r = parse_file("/x/r.toml", R"([arch]
list = "9.0"
enforce = false
[build]
backend = "command"
command = ["python3", "setup.py", "bdist_wheel"]
[build.env]
CAUSAL_CONV1D_FORCE_BUILD = "TRUE"
_Under_score9 = ""
)");
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_FALSE(r->arch.enforce);
  EXPECT_EQ(r->build.env,
            (std::map<std::string, std::string>{{"CAUSAL_CONV1D_FORCE_BUILD", "TRUE"}, {"_Under_score9", ""}}));
  EXPECT_EQ(r->locations.at("build.env.CAUSAL_CONV1D_FORCE_BUILD").line, 8);
  auto d = parse_file("/x/r.toml", "");
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->arch.enforce);  // the arch list means what it says unless turned off
  EXPECT_TRUE(d->build.env.empty());
}

TEST(RecipeParse, BuildEnvErrors) {
  const std::string head = "[build]\nbackend = \"command\"\ncommand = [\"make\"]\n[build.env]\n";
  auto error = [&](const std::string& body) {
    auto r = parse_file("r.toml", head + body);
    return r ? std::string("parsed") : r.error().render();
  };
  EXPECT_EQ(error("FORCE = 1\n"),
            "r.toml:5:9: build.env.FORCE must be a string, not an integer\n"
            "  FORCE = 1\n"
            "          ^\n"
            "  hint: quote the value, e.g. FORCE = \"TRUE\"");
  EXPECT_EQ(error("\"9LIVES\" = \"x\"\n"),
            "r.toml:5:1: build.env: '9LIVES' is not an environment variable name\n"
            "  \"9LIVES\" = \"x\"\n"
            "  ^\n"
            "  hint: use letters, digits and '_', not starting with a digit");
  EXPECT_EQ(error("TORCH_CUDA_ARCH_LIST = \"8.0\"\n"),
            "r.toml:5:1: build.env: TORCH_CUDA_ARCH_LIST is decided by opforge\n"
            "  TORCH_CUDA_ARCH_LIST = \"8.0\"\n"
            "  ^\n"
            "  hint: set [arch] list (or the variable in the environment)");
  EXPECT_EQ(error("DS_BUILD_AIO = \"1\"\n").substr(0, 44), "r.toml:5:1: build.env: DS_BUILD_AIO is decid");
  auto native = parse_file("r.toml", "[build.env]\nX = \"1\"\n");
  ASSERT_FALSE(native);
  EXPECT_EQ(native.error().message, "[build.env] sets a project's variables for its build command");
  auto enforce = parse_file("r.toml", "[arch]\nenforce = \"yes\"\n");
  ASSERT_FALSE(enforce);
  EXPECT_EQ(enforce.error().where.line, 2);
}

// A project's own arch variables: the name it reads, and the spelling (target::arch_forms).
TEST(RecipeParse, ArchEnvAndCmakeDefine) {
  auto r = parse_file("/x/r.toml", R"([arch]
list = "9.0"
env = { NVTE_CUDA_ARCHS = "numbers", FLASHINFER_CUDA_ARCH_LIST = "dotted" }
[arch.cmake_define]
COMPUTE_CAPABILITY = "numbers"
[build]
backend = "command"
command = ["make"]
)");
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->arch.env, (std::map<std::string, std::string>{{"FLASHINFER_CUDA_ARCH_LIST", "dotted"},
                                                             {"NVTE_CUDA_ARCHS", "numbers"}}));
  EXPECT_EQ(r->arch.cmake_define, (std::map<std::string, std::string>{{"COMPUTE_CAPABILITY", "numbers"}}));
  EXPECT_EQ(r->locations.at("arch.cmake_define.COMPUTE_CAPABILITY").line, 5);
}

TEST(RecipeParse, ArchVariableErrors) {
  const std::string tail = "[build]\nbackend = \"command\"\ncommand = [\"make\"]\n";
  auto error = [&](const std::string& arch) {
    auto r = parse_file("r.toml", "[arch]\n" + arch + tail);
    return r ? std::string("parsed") : r.error().render();
  };
  EXPECT_EQ(error("env = { NVTE_CUDA_ARCHS = \"cmake-nodot\" }\n"),
            "r.toml:2:27: arch.env.NVTE_CUDA_ARCHS: 'cmake-nodot' is not a form of an arch list\n"
            "  env = { NVTE_CUDA_ARCHS = \"cmake-nodot\" }\n"
            "                            ^\n"
            "  hint: use one of torch (8.0;9.0a+PTX), cmake (80-real;90a-real;90a-virtual), numbers (80;90a), dotted "
            "(8.0 9.0a); docs/external-projects.md lists known projects' forms");
  EXPECT_EQ(error("env = { X = 90 }\n"),
            "r.toml:2:13: arch.env.X must be a string, not an integer\n"
            "  env = { X = 90 }\n"
            "              ^\n"
            "  hint: name a form: torch, cmake, numbers, dotted");
  EXPECT_EQ(error("env = { CUDAARCHS = \"cmake\" }\n"),
            "r.toml:2:9: arch.env: CUDAARCHS is decided by opforge\n"
            "  env = { CUDAARCHS = \"cmake\" }\n"
            "          ^\n"
            "  hint: opforge sets it from [arch] list (CMake's spelling)");
  EXPECT_EQ(error("cmake_define = { CMAKE_CUDA_ARCHITECTURES = \"cmake\" }\n"),
            "r.toml:2:18: arch.cmake_define: CMAKE_CUDA_ARCHITECTURES is decided by opforge\n"
            "  cmake_define = { CMAKE_CUDA_ARCHITECTURES = \"cmake\" }\n"
            "                   ^\n"
            "  hint: opforge passes it from [arch] list already (with [arch] enforce)");
  EXPECT_EQ(error("cmake_define = { \"-DX\" = \"cmake\" }\n").substr(0, 63),
            "r.toml:2:18: arch.cmake_define: '-DX' is not a variable name\n  ");
  // Both [arch] env and [build.env] naming one variable: two owners.
  auto both = parse_file(
      "r.toml", "[arch]\nenv = { NVTE_CUDA_ARCHS = \"numbers\" }\n" + tail + "[build.env]\nNVTE_CUDA_ARCHS = \"90\"\n");
  ASSERT_FALSE(both);
  EXPECT_EQ(both.error().message,
            "build.env.NVTE_CUDA_ARCHS: NVTE_CUDA_ARCHS is also in [arch] env, which sets it to the arch list in its "
            "form");
  EXPECT_EQ(both.error().where.line, 7);
  auto native = parse_file("r.toml", "[arch]\nenv = { NVTE_CUDA_ARCHS = \"numbers\" }\n");
  ASSERT_FALSE(native);
  EXPECT_EQ(native.error().render(),
            "r.toml:2:9: arch.env sets a project's own arch variables for its build command\n"
            "  env = { NVTE_CUDA_ARCHS = \"numbers\" }\n"
            "          ^\n"
            "  hint: use it with [build] backend = \"command\"; native ops get the arch list from opforge");
  EXPECT_EQ(exit_code(native.error().kind), 2);
}

TEST(RecipeParse, TheDefaultRecipeParses) {
  std::ifstream in(std::string(OPFORGE_SOURCE_DIR) + "/recipes/default.toml");
  std::stringstream text;
  text << in.rdbuf();
  auto r = parse_file("/repo/recipes/default.toml", text.str());
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(*r->source.path, "/repo");
  EXPECT_EQ(r->arch.fallback, "8.0;8.6;9.0+PTX");
  EXPECT_EQ(r->ops.size(), 4u);
  for (auto& [name, req] : r->ops) EXPECT_EQ(req, OpRequest::automatic) << name;
}

}  // namespace
}  // namespace opforge::recipe
