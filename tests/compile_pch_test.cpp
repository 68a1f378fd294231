// Precompiled torch headers (compile/pch/pch.h): which compiles may use one, what the header is keyed
// and made with, which sources reach torch/extension.h and what they define first, the dependency
// file, the log's summary, and a compile that fails with it and is compiled again without.
#include <gtest/gtest.h>

#include "cache/layout.h"
#include "compile/pch/pch.h"
#include "probe/fake_machine.h"

using namespace opforge;
namespace pch = opforge::compile::pch;
namespace fs = std::filesystem;

namespace {

// A compile as torch's BuildExtension writes it into build.ninja (torch 2.15, a project include
// folder inside the scratch tree).
const std::string kTree = "/cache/trees/abc";
const std::string kTorch = "/venv/lib/python3.11/site-packages/torch/include";
std::vector<std::string> torch_compile(std::string source = "/cache/trees/abc/csrc/a.cpp") {
  return {"-MMD",
          "-MF",
          "/cache/trees/abc/build/a.o.d",
          "-DTORCH_API_INCLUDE_EXTENSION_H",
          "-I" + kTree + "/csrc/include",
          "-I" + kTorch,
          "-I" + kTorch + "/torch/csrc/api/include",
          "-I/usr/include/python3.11",
          "-c",
          source,
          "-o",
          "/cache/trees/abc/build/a.o",
          "-O3",
          "-Wall",
          "-g",
          "-fPIC",
          "-std=c++20",
          "-DTORCH_EXTENSION_NAME=_C",
          "-D_GLIBCXX_USE_CXX11_ABI=1",
          "-ffile-prefix-map=/cache/trees/abc=."};
}

}  // namespace

TEST(CompilePch, ParsesTheCompileLine) {
  const auto c = pch::parse(torch_compile());
  EXPECT_TRUE(c.compile);
  EXPECT_EQ(c.sources, std::vector<std::string>{"/cache/trees/abc/csrc/a.cpp"});
  EXPECT_EQ(c.output, "/cache/trees/abc/build/a.o");
  EXPECT_EQ(c.depfile, "/cache/trees/abc/build/a.o.d");
  EXPECT_EQ(c.deps, pch::CompileLine::Deps::user);
  EXPECT_EQ(c.include_dirs.size(), 4u);
  EXPECT_EQ(pch::not_eligible(c), "");
}

TEST(CompilePch, OnlyOneCxxSourceCompiledToAnObject) {
  auto with = [](std::vector<std::string> extra) {
    auto a = torch_compile();
    a.insert(a.end(), extra.begin(), extra.end());
    return pch::not_eligible(pch::parse(a));
  };
  EXPECT_EQ(pch::not_eligible(pch::parse({"a.o", "b.o", "-shared", "-o", "x.so"})), "not a compile (-c)");
  EXPECT_EQ(with({"-E"}), "a preprocess, assembly or forced-include command line");
  EXPECT_EQ(with({"-include", "mine.h"}), "a preprocess, assembly or forced-include command line");
  EXPECT_EQ(with({"/cache/trees/abc/csrc/b.cpp"}), "not one source file");
  EXPECT_EQ(pch::not_eligible(pch::parse({"-c", "x.c", "-o", "x.o"})), "not a C++ source");
  EXPECT_EQ(pch::not_eligible(pch::parse({"-x", "cu", "-c", "x.cpp"})), "not C++ (-x cu)");
  // nvcc's host pass: a generated .cudafe1.cpp (-x c++), never including the header itself.
  EXPECT_EQ(pch::not_eligible(pch::parse({"-x", "c++", "-c", "/tmp/tmpxft_1.cudafe1.cpp", "-o", "a.o"})), "");
  EXPECT_EQ(pch::not_eligible(pch::parse({"-MD", "-c", "x.cpp", "-o", "x.o"})), "-MD without -MF");
}

TEST(CompilePch, TheHeaderIsMadeWithTheCompilesFlagsLessThePerFileOnes) {
  const auto args = pch::header_args(pch::parse(torch_compile()), kTree);
  const std::vector<std::string> want = {"-DTORCH_API_INCLUDE_EXTENSION_H",
                                         "-I" + kTorch,
                                         "-I" + kTorch + "/torch/csrc/api/include",
                                         "-I/usr/include/python3.11",
                                         "-O3",
                                         "-fPIC",
                                         "-std=c++20",
                                         "-D_GLIBCXX_USE_CXX11_ABI=1",
                                         "-ffile-prefix-map=/cache/trees/abc=."};
  EXPECT_EQ(args, want);
  // Two extensions of one build (another name, other project folders, another file) share it.
  auto other = torch_compile("/cache/trees/abc/csrc/b.cpp");
  other[4] = "-I/cache/trees/abc/other/include";
  other[17] = "-DTORCH_EXTENSION_NAME=_other";
  EXPECT_EQ(pch::header_args(pch::parse(other), kTree), want);
  // A define, an optimisation level or a CPU option is another header.
  auto native = torch_compile();
  native.push_back("-march=native");
  EXPECT_NE(pch::header_args(pch::parse(native), kTree), want);
}

TEST(CompilePch, TheKeyFollowsTheCompilerItsFlagsAndTorch) {
  probe::FakeMachine fm;
  fm.fs.add_file("/usr/bin/g++", "gcc 12", 0755);
  fm.fs.add_file(kTorch + "/torch/extension.h", "#pragma once\n");
  fm.fs.add_file("/venv/lib/python3.11/site-packages/torch/version.py", "__version__ = '2.15.0+cu132'\n");
  const auto args = pch::header_args(pch::parse(torch_compile()), kTree);
  const auto key = pch::entry_key(fm.fs, "/usr/bin/g++", args, kTorch);
  EXPECT_EQ(key.size(), 16u);
  EXPECT_EQ(pch::entry_key(fm.fs, "/usr/bin/g++", args, kTorch), key);
  auto more = args;
  more.push_back("-DVARIANT=2");
  EXPECT_NE(pch::entry_key(fm.fs, "/usr/bin/g++", more, kTorch), key);
  EXPECT_NE(pch::entry_key(fm.fs, "/usr/bin/g++-12", args, kTorch), key);
  // What the source reads before torch's header is part of it.
  EXPECT_NE(pch::entry_key(fm.fs, "/usr/bin/g++", args, kTorch, {"#include <stdio.h>"}), key);
  EXPECT_NE(pch::entry_key(fm.fs, "/usr/bin/g++", args, kTorch, {"#include <stdio.h>"}),
            pch::entry_key(fm.fs, "/usr/bin/g++", args, kTorch, {"#define NOMINMAX", "#include <stdio.h>"}));
  fm.fs.add_file("/venv/lib/python3.11/site-packages/torch/version.py", "__version__ = '2.14.0+cu130'\n");
  EXPECT_NE(pch::entry_key(fm.fs, "/usr/bin/g++", args, kTorch), key);
}

TEST(CompilePch, ASourceReachesTheHeaderThroughTheProjectsHeaders) {
  probe::FakeMachine fm;
  fm.fs.add_file("/t/csrc/include/ops.h",
                 "#ifndef OPS_H\n#define OPS_H\n#define NOMINMAX  // Windows\n#include <stdio.h>\n"
                 "#include <torch/extension.h>\n#include <cstdio>\n#endif\n");
  fm.fs.add_file("/t/csrc/a.cpp", "// a\n#include \"ops.h\"\nint f();\n");
  fm.fs.add_file("/t/csrc/b.cpp", "/* #include <torch/extension.h> */\nint g();\n");
  fm.fs.add_file("/t/csrc/e.cpp",
                 "#pragma once\n#include <c10/cuda/CUDAStream.h>\n#pragma GCC diagnostic ignored \"-Wunused\"\n"
                 "#include <torch/extension.h>\n");
  fm.fs.add_file("/t/csrc/c.cpp", "#ifdef WITH_TORCH\n#include <torch/extension.h>\n#endif\n");
  fm.fs.add_file("/t/csrc/d.cpp",
                 "#define PYBIND11_DETAILED_ERROR_MESSAGES \\\n  1\n#undef NDEBUG\n#include \"torch/extension.h\"\n");
  const std::vector<fs::path> dirs = {"/t/csrc/include"};
  auto a = pch::scan(fm.fs, "/t/csrc/a.cpp", dirs);
  EXPECT_TRUE(a.reaches_header);
  // The guard is left out; the project header's own lines are followed, in order.
  EXPECT_EQ(a.prefix, (std::vector<std::string>{"#define NOMINMAX", "#include <stdio.h>"}));
  EXPECT_EQ(a.macros, (std::set<std::string>{"NOMINMAX"}));
  auto b = pch::scan(fm.fs, "/t/csrc/b.cpp", dirs);
  EXPECT_FALSE(b.reaches_header);
  EXPECT_EQ(b.why_not, "does not include torch/extension.h (in its own text or the project's headers)");
  auto e = pch::scan(fm.fs, "/t/csrc/e.cpp", dirs);
  EXPECT_TRUE(e.reaches_header);
  EXPECT_EQ(e.prefix, (std::vector<std::string>{"#include <c10/cuda/CUDAStream.h>",
                                                "#pragma GCC diagnostic ignored \"-Wunused\""}));
  fm.fs.add_file("/t/csrc/f.cpp", "#include <vector>\nint h();\n");  // other headers, never torch's: plain
  EXPECT_EQ(pch::scan(fm.fs, "/t/csrc/f.cpp", dirs).why_not,
            "does not include torch/extension.h (in its own text or the project's headers)");
  auto c = pch::scan(fm.fs, "/t/csrc/c.cpp", dirs);
  EXPECT_FALSE(c.reaches_header);
  EXPECT_EQ(c.why_not, "includes torch/extension.h inside an #if");
  auto d = pch::scan(fm.fs, "/t/csrc/d.cpp", dirs);
  EXPECT_TRUE(d.reaches_header);
  EXPECT_EQ(d.prefix, (std::vector<std::string>{"#define PYBIND11_DETAILED_ERROR_MESSAGES   1", "#undef NDEBUG"}));
  EXPECT_EQ(d.macros, (std::set<std::string>{"NDEBUG", "PYBIND11_DETAILED_ERROR_MESSAGES"}));
  EXPECT_EQ(pch::header_text(d.prefix),
            "// Written by opforge: the header precompiled beside it, with what the sources read before it.\n"
            "#define PYBIND11_DETAILED_ERROR_MESSAGES   1\n#undef NDEBUG\n#include <torch/extension.h>\n");
  EXPECT_EQ(pch::header_text({}),
            "// Written by opforge: the header precompiled beside it.\n#include <torch/extension.h>\n");
}

TEST(CompilePch, IncludesThatIncludeEachOtherOrNestDeepEndTheScan) {
  // The scan follows a project's headers by recursion: its depth comes from the input, so it is
  // bounded (16 levels, 400 files) and a header already seen is not read again.
  probe::FakeMachine fm;
  fm.fs.add_file("/t/csrc/include/a.h", "#pragma once\n#include \"b.h\"\n");
  fm.fs.add_file("/t/csrc/include/b.h", "#pragma once\n#include \"a.h\"\n#include <torch/extension.h>\n");
  fm.fs.add_file("/t/csrc/cycle.cpp", "#include \"a.h\"\nint f();\n");
  const std::vector<fs::path> dirs = {"/t/csrc/include"};
  auto cycle = pch::scan(fm.fs, "/t/csrc/cycle.cpp", dirs);
  EXPECT_TRUE(cycle.reaches_header);
  fm.fs.add_file("/t/csrc/self.cpp", "#include \"self.cpp\"\nint g();\n");
  EXPECT_FALSE(pch::scan(fm.fs, "/t/csrc/self.cpp", dirs).reaches_header);
  // 5,000 headers, each including the next.
  for (int i = 0; i < 5000; ++i)
    fm.fs.add_file("/t/csrc/include/h" + std::to_string(i) + ".h", "#include \"h" + std::to_string(i + 1) + ".h\"\n");
  fm.fs.add_file("/t/csrc/deep.cpp", "#include \"h0.h\"\n");
  auto deep = pch::scan(fm.fs, "/t/csrc/deep.cpp", dirs);
  EXPECT_FALSE(deep.reaches_header);
  EXPECT_EQ(deep.why_not, "its includes nest too deep to follow");
}

TEST(CompilePch, WhatAHeaderCannotHoldBeforeTheIncludeRefusesTheFile) {
  probe::FakeMachine fm;
  fm.fs.add_file("/t/csrc/include/types.h", "#pragma once\n#include <cstdint>\ntypedef int my_int;\n");
  fm.fs.add_file("/t/csrc/code.cpp", "#include <vector>\nstatic int counter;\n#include <torch/extension.h>\n");
  fm.fs.add_file("/t/csrc/typed.cpp", "#include \"types.h\"\n#include <torch/extension.h>\n");
  fm.fs.add_file("/t/csrc/ifdef.cpp", "#ifdef __AVX__\n#include <immintrin.h>\n#endif\n#include <torch/extension.h>\n");
  fm.fs.add_file("/t/csrc/macro.cpp", "#define H <vector>\n#include H\n#include <torch/extension.h>\n");
  const std::vector<fs::path> dirs = {"/t/csrc/include"};
  EXPECT_EQ(pch::scan(fm.fs, "/t/csrc/code.cpp", dirs).why_not, "has code before torch/extension.h");
  EXPECT_EQ(pch::scan(fm.fs, "/t/csrc/typed.cpp", dirs).why_not, "has code before torch/extension.h (in types.h)");
  EXPECT_EQ(pch::scan(fm.fs, "/t/csrc/ifdef.cpp", dirs).why_not, "has an #ifdef before torch/extension.h");
  EXPECT_EQ(pch::scan(fm.fs, "/t/csrc/macro.cpp", dirs).why_not,
            "includes a header named by a macro before torch/extension.h");
  // Hostile shapes: headers that include each other, a stray #endif, a header that is a folder.
  fm.fs.add_file("/t/csrc/include/a.h", "#pragma once\n#include \"b.h\"\n#endif\n#include <torch/extension.h>\n");
  fm.fs.add_file("/t/csrc/include/b.h", "#pragma once\n#include \"a.h\"\n#include <cstdint>\n");
  fm.fs.add_file("/t/csrc/cycle.cpp", "#include \"a.h\"\n");
  auto cycle = pch::scan(fm.fs, "/t/csrc/cycle.cpp", dirs);
  EXPECT_TRUE(cycle.reaches_header);
  EXPECT_EQ(cycle.prefix, (std::vector<std::string>{"#include <cstdint>"}));
  // Code after the include is the file's business.
  fm.fs.add_file("/t/csrc/after.cpp", "#include <torch/extension.h>\nstatic int counter;\n#ifdef X\n#endif\n");
  EXPECT_TRUE(pch::scan(fm.fs, "/t/csrc/after.cpp", dirs).reaches_header);
}

TEST(CompilePch, AMacroTorchsHeadersChangeRefusesTheHeader) {
  const std::string prefix_dM = "#define __STDC__ 1\n#define NOMINMAX \n#define LIMIT 4\n";
  EXPECT_EQ(pch::macro_definitions(prefix_dM).at("LIMIT"), "#define LIMIT 4");
  // Left alone by torch's headers: the same.
  EXPECT_EQ(pch::macro_clash(prefix_dM, prefix_dM + "#define AT_CUDA_ENABLED 0\n", {"NOMINMAX", "LIMIT"}), "");
  // Redefined, or undefined, by them: the file's own line, read again after, would set it back.
  EXPECT_EQ(pch::macro_clash(prefix_dM, "#define NOMINMAX \n#define LIMIT 8\n", {"NOMINMAX", "LIMIT"}),
            "torch's headers change LIMIT, which the sources set before including them (#define LIMIT 4, then "
            "#define LIMIT 8): their own line, read again after the header, would undo that");
  EXPECT_NE(pch::macro_clash(prefix_dM, "#define LIMIT 4\n", {"NOMINMAX"}), "");
  // An #undef the headers then define.
  EXPECT_NE(pch::macro_clash("", "#define NDEBUG 1\n", {"NDEBUG"}), "");
}

TEST(CompilePch, TheDependencyFileGetsTheHeadersDependencies) {
  const std::string mine = "a.o: /t/a.cpp\n";
  const std::string header =
      "/c/pch/k/extension.h.gch: /c/pch/k/extension.h \\\n /torch/extension.h \\\n /torch/all.h\n";
  EXPECT_EQ(pch::merge_depfile(mine, header),
            "a.o: /t/a.cpp \\\n /c/pch/k/extension.h \\\n /torch/extension.h \\\n /torch/all.h\n");
  // The one-line header in the cache entry is left out (ccache would find it "too new" once).
  EXPECT_EQ(pch::merge_depfile(mine, header, "/c/pch/k/extension.h"),
            "a.o: /t/a.cpp \\\n /torch/extension.h \\\n /torch/all.h\n");
  // -MP's phony rules stay after the first rule.
  EXPECT_EQ(pch::merge_depfile("a.o: /t/a.cpp \\\n /t/a.h\n/t/a.h:\n", "x.gch: /x.h\n"),
            "a.o: /t/a.cpp \\\n /t/a.h \\\n /x.h\n/t/a.h:\n");
}

TEST(CompilePch, TheSummarySaysWhatEachCompileDid) {
  const auto s = pch::summarize(
      "made\t/t/csrc/module.cpp\t35.6\t794200868\nused\t/t/csrc/module.cpp\t\nused\t/t/csrc/add.cpp\t\n"
      "busy\t/t/csrc/b.cpp\t\n"
      "skipped\t/t/csrc/detailed.cpp\thas code before torch/extension.h\n"
      "plain\t/t/csrc/plain.cpp\t\nfallback\t/t/csrc/f.cpp\terror: boom\nfirst\t/t/csrc/g.cpp\t\n");
  EXPECT_EQ(s.made, 1u);
  EXPECT_EQ(s.used, 2u);
  EXPECT_EQ(pch::summary_line(s),
            "precompiled torch header: 1 made (36 s, 757 MiB), used by 2 of 6 C++ compiles that include "
            "torch/extension.h; 1 compiled without it before 3 compiles needed the same one; 1 compiled without "
            "it while it was being made; 2 without it (below)");
  EXPECT_EQ(s.notes, (std::vector<std::string>{"detailed.cpp: has code before torch/extension.h",
                                               "f.cpp: failed with it, compiled again without it (error: boom)"}));
  EXPECT_FALSE(pch::summarize("").any());
  // One file (causal-conv1d's): nothing made, nothing reused.
  EXPECT_EQ(pch::summary_line(pch::summarize("first\t/t/csrc/conv.cpp\t\n")),
            "precompiled torch header: none made, used by 0 of 1 C++ compiles that include torch/extension.h; 1 "
            "compiled without it before 3 compiles needed the same one");
  EXPECT_EQ(pch::summary_line(pch::summarize("used\t/t/csrc/a.cpp\t\n")),
            "precompiled torch header: reused from the cache, used by 1 of 1 C++ compiles that include "
            "torch/extension.h");
}

TEST(CompilePch, ACompileThatFailsWithItIsCompiledAgainWithout) {
  probe::FakeMachine fm;
  const std::string gxx = "/usr/bin/g++";
  fm.fs.add_file(gxx, "gcc 12", 0755);
  fm.fs.add_file(kTorch + "/torch/extension.h", "#pragma once\n");
  fm.fs.add_file("/venv/lib/python3.11/site-packages/torch/version.py", "__version__ = '2.15.0'\n");
  fm.fs.add_file(kTree + "/csrc/a.cpp", "#include <torch/extension.h>\n");
  fm.fs.add_file(kTree + "/build/a.o.d", "a.o: a.cpp\n");
  const auto args = torch_compile();
  const auto key = pch::entry_key(fm.fs, gxx, pch::header_args(pch::parse(args), kTree), kTorch);
  const fs::path entry = fs::path("/cache/pch") / key;
  fm.fs.add_file(entry / "done", "35.0\t100\n");
  fm.fs.add_file(entry / "deps.user", "x.gch: /torch/extension.h\n");
  fm.fs.add_file("/build/command.log", "");
  fm.env.set(std::string(pch::kLogVariable), "/build/pch.log");
  fm.env.set(std::string(pch::kTreeVariable), kTree);
  probe::ProcessResult ok;
  ok.exit_code = 0;
  probe::ProcessResult bad;
  bad.exit_code = 1;
  bad.err = "a.cpp:1: error: something only the header's early parse upsets\n";
  fm.proc.on({gxx}, ok);
  auto with_pch = std::vector<std::string>{gxx};
  with_pch.insert(with_pch.end(), args.begin(), args.end());
  with_pch.push_back("-include");
  fm.proc.on(with_pch, bad);
  std::vector<std::string> argv = {"--compiler", gxx, "--pch-dir", "/cache/pch", "--"};
  argv.insert(argv.end(), args.begin(), args.end());
  EXPECT_EQ(pch::host_compile(fm.machine(), argv), 0);
  ASSERT_EQ(fm.proc.calls().size(), 2u);
  EXPECT_EQ(fm.proc.calls()[0].argv.back(), "-g0");
  EXPECT_EQ(fm.proc.calls()[0].argv[fm.proc.calls()[0].argv.size() - 4], "-include");
  EXPECT_EQ(fm.proc.calls()[1].argv.back(), "-g0");
  EXPECT_EQ(std::count(fm.proc.calls()[1].argv.begin(), fm.proc.calls()[1].argv.end(), "-include"), 0);
  EXPECT_EQ(*fm.fs.read_file("/build/pch.log"),
            "fallback\t" + kTree + "/csrc/a.cpp\ta.cpp:1: error: something only the header's early parse upsets\n");
  // Used: the dependency file gains the header's.
  fm.proc.on(with_pch, ok);
  EXPECT_EQ(pch::host_compile(fm.machine(), argv), 0);
  EXPECT_EQ(*fm.fs.read_file(kTree + "/build/a.o.d"), "a.o: a.cpp \\\n /torch/extension.h\n");
}

TEST(CompilePch, ItsOwnTextGoesToTheConsoleItIsGiven) {
  // As ACompileThatFailsWithItIsCompiledAgainWithout, with a console that records.
  probe::FakeMachine fm;
  const std::string gxx = "/usr/bin/g++";
  fm.fs.add_file(gxx, "gcc 12", 0755);
  fm.fs.add_file(kTorch + "/torch/extension.h", "#pragma once\n");
  fm.fs.add_file("/venv/lib/python3.11/site-packages/torch/version.py", "__version__ = '2.15.0'\n");
  fm.fs.add_file(kTree + "/csrc/a.cpp", "#include <torch/extension.h>\n");
  const auto args = torch_compile();
  const auto key = pch::entry_key(fm.fs, gxx, pch::header_args(pch::parse(args), kTree), kTorch);
  fm.fs.add_file(fs::path("/cache/pch") / key / "done", "35.0\t100\n");
  fm.env.set(std::string(pch::kTreeVariable), kTree);
  auto with_pch = std::vector<std::string>{gxx};
  with_pch.insert(with_pch.end(), args.begin(), args.end());
  with_pch.push_back("-include");
  fm.proc.on({gxx}, probe::ProcessResult{.exit_code = 0});
  fm.proc.on(with_pch, probe::ProcessResult{.exit_code = 1, .err = "a.cpp:1: error: boom\n"});
  std::string out, err;
  const pch::Console console{.out = [&](std::string_view t) { out += t; },
                             .err = [&](std::string_view t) { err += t; }};
  std::vector<std::string> argv = {"--compiler", gxx, "--pch-dir", "/cache/pch", "--"};
  argv.insert(argv.end(), args.begin(), args.end());
  EXPECT_EQ(pch::host_compile(fm.machine(), argv, console), 0);
  EXPECT_EQ(out, "");
  EXPECT_EQ(err, "opforge: " + kTree +
                     "/csrc/a.cpp: the compile with the precompiled torch header failed; compiling it "
                     "without\n");
  // Used: the compiler's captured output, relayed.
  out.clear();
  err.clear();
  fm.proc.on(with_pch, probe::ProcessResult{.exit_code = 0, .out = "said", .err = "warned"});
  EXPECT_EQ(pch::host_compile(fm.machine(), argv, console), 0);
  EXPECT_EQ(out, "said\n");
  EXPECT_EQ(err, "warned\n");
  // Without a compiler: its usage.
  err.clear();
  EXPECT_EQ(pch::host_compile(fm.machine(), {"--", "-c", "a.cpp"}, console), 2);
  EXPECT_EQ(err, "opforge: __host-compile: --compiler PATH -- ARGS... expected (the host wrappers run this)\n");
}

TEST(CompilePch, TheProjectsOwnMacrosLeaveTheKey) {
  EXPECT_TRUE(pch::read_by_headers("NDEBUG"));
  EXPECT_TRUE(pch::read_by_headers("_GLIBCXX_USE_CXX11_ABI"));
  EXPECT_TRUE(pch::read_by_headers("__AVX512__"));
  EXPECT_TRUE(pch::read_by_headers("TORCH_API_INCLUDE_EXTENSION_H"));
  EXPECT_TRUE(pch::read_by_headers("USE_C10D_NCCL"));
  EXPECT_FALSE(pch::read_by_headers("BF16_AVAILABLE"));
  EXPECT_FALSE(pch::read_by_headers("VERSION_GE_1_1"));
  // DeepSpeed's fused_adam adds -DVERSION_GE_1_1 … to the flags its other CUDA ops share.
  const std::vector<std::string> args = {"-O3",
                                         "-DVERSION_GE_1_1",
                                         "-D",
                                         "VERSION_GE_1_3=1",
                                         "-DNDEBUG",
                                         "-UQUIET",
                                         "-D__AVX512__",
                                         "-DBF16_AVAILABLE",
                                         "-DTORCH_API_INCLUDE_EXTENSION_H"};
  EXPECT_EQ(pch::without_project_macros(args, {}),
            (std::vector<std::string>{"-O3", "-DNDEBUG", "-D__AVX512__", "-DTORCH_API_INCLUDE_EXTENSION_H"}));
  // One gcc named as read by the header stays.
  EXPECT_EQ(pch::without_project_macros(args, {"BF16_AVAILABLE", "VERSION_GE_1_3"}),
            (std::vector<std::string>{"-O3", "-D", "VERSION_GE_1_3=1", "-DNDEBUG", "-D__AVX512__", "-DBF16_AVAILABLE",
                                      "-DTORCH_API_INCLUDE_EXTENSION_H"}));
  // gcc 12's reasons (captured): the macro, or none.
  EXPECT_EQ(pch::macro_in_reason("cc1plus: warning: /c/pch/k/extension.h.gch: not used because `NDEBUG' is defined "
                                 "[-Winvalid-pch]"),
            "NDEBUG");
  EXPECT_EQ(pch::macro_in_reason("/c/pch/k/extension.h.gch: not used because `FOO' not defined"), "FOO");
  EXPECT_EQ(pch::macro_in_reason("/c/pch/k/extension.h.gch: not a valid precompiled header file"), "");
  EXPECT_EQ(pch::macro_in_reason("/c/pch/k/extension.h.gch: not used because `-mavx2' not used"), "");
}

TEST(CompilePch, AnExtensionsBuildNinjaNamesItsOtherFiles) {
  // As torch 2.15's BuildExtension writes it (cpp_extension._write_ninja_file), a space escaped.
  const std::string ninja =
      "ninja_required_version = 1.3\ncxx = c++\nnvcc = /usr/local/cuda/bin/nvcc\n\n"
      "cflags = -DTORCH_EXTENSION_NAME=_C -I/t/csrc/include -O3\npost_cflags = -std=c++17\n\n"
      "rule compile\n  command = $cxx -MMD -MF $out.d $cflags -c $in -o $out $post_cflags\n  depfile = $out.d\n"
      "  deps = gcc\n\nrule cuda_compile\n  depfile = $out.d\n  deps = gcc\n  command = $nvcc $cuda_cflags -c $in "
      "-o $out $cuda_post_cflags\n\n\n\n"
      "build /t/build/temp/csrc/a.o: compile /t/csrc/a.cpp\n"
      "build /t/build/temp/csrc/my$ b.o: compile /t/csrc/my$ b.cpp\n"
      "build /t/build/temp/csrc/k.o: cuda_compile /t/csrc/k.cu\n"
      "build /t/build/temp/csrc/c.o: compile $\n    /t/csrc/c.cpp\n\n";
  EXPECT_EQ(pch::sibling_sources(ninja, "/t/csrc/a.cpp"),
            (std::vector<std::string>{"/t/csrc/a.cpp", "/t/csrc/my b.cpp", "/t/csrc/c.cpp"}));
  EXPECT_EQ(pch::sibling_sources(ninja, "/t/csrc/./c.cpp").size(), 3u);
  EXPECT_TRUE(pch::sibling_sources(ninja, "/other/a.cpp").empty());  // another extension's file
  EXPECT_TRUE(pch::sibling_sources("", "/t/csrc/a.cpp").empty());
  // CMake's: one rule, flags per file; only those with the same flags count.
  const std::string cmake =
      "rule CXX_COMPILER__ops_Release\n  command = $LAUNCHER g++ $DEFINES $INCLUDES $FLAGS -o $out -c $in\n\n"
      "build a.o: CXX_COMPILER__ops_Release /s/a.cpp\n  DEFINES = -DX\n  DEP_FILE = a.o.d\n  FLAGS = -O3\n"
      "build b.o: CXX_COMPILER__ops_Release /s/b.cpp\n  DEFINES = -DX\n  DEP_FILE = b.o.d\n  FLAGS = -O3\n"
      "build c.o: CXX_COMPILER__ops_Release /s/c.cpp\n  DEFINES = -DX\n  DEP_FILE = c.o.d\n  FLAGS = -O0\n";
  EXPECT_EQ(pch::sibling_sources(cmake, "/s/a.cpp"), (std::vector<std::string>{"/s/a.cpp", "/s/b.cpp"}));
}

namespace {

/// A machine with g++, torch's header and three files that read nothing before it, one that reads
/// <vector> first; every compile succeeds.
struct MakeCase {
  probe::FakeMachine fm;
  const std::string gxx = "/usr/bin/g++";
  MakeCase() {
    fm.fs.add_file(gxx, "gcc 12", 0755);
    fm.fs.add_file(kTorch + "/torch/extension.h", "#pragma once\n");
    fm.fs.add_file("/venv/lib/python3.11/site-packages/torch/version.py", "__version__ = '2.15.0'\n");
    for (std::string f : {"a", "b", "c"})
      fm.fs.add_file(kTree + "/csrc/" + f + ".cpp", "#include <torch/extension.h>\n");
    fm.fs.add_file(kTree + "/csrc/v.cpp", "#include <vector>\n#include <torch/extension.h>\n");
    fm.fs.add_file("/build/pch.log", "");
    fm.fs.add_directory(kTree + "/build");
    fm.fs.add_symlink(".", kTree + "/build");  // the compile's folder, where ninja runs
    fm.env.set(std::string(pch::kLogVariable), "/build/pch.log");
    fm.env.set(std::string(pch::kTreeVariable), kTree);
    probe::ProcessResult ok;
    ok.exit_code = 0;
    fm.proc.on({gxx}, ok);
  }
  void ninja(const std::vector<std::string>& files) {
    std::string text = "rule compile\n  command = $cxx -c $in -o $out\n";
    for (const auto& f : files) text += "build " + kTree + "/build/" + f + ".o: compile " + kTree + "/csrc/" + f + "\n";
    fm.fs.add_file(kTree + "/build/build.ninja", text);
  }
  int compile(const std::string& file) {
    std::vector<std::string> argv = {"--compiler", gxx, "--pch-dir", "/cache/pch", "--"};
    const auto args = torch_compile(kTree + "/csrc/" + file);
    argv.insert(argv.end(), args.begin(), args.end());
    return pch::host_compile(fm.machine(), argv);
  }
  std::string log() { return *fm.fs.read_file("/build/pch.log"); }
};

}  // namespace

TEST(CompilePch, AHeaderIsMadeOnceThreeCompilesAreKnownToNeedIt) {
  // The extension's build.ninja lists three files that read the same first: the first makes it.
  MakeCase three;
  three.ninja({"a.cpp", "b.cpp", "v.cpp", "c.cpp"});
  EXPECT_EQ(three.compile("a.cpp"), 0);
  EXPECT_TRUE(three.log().starts_with("made\t" + kTree + "/csrc/a.cpp\t")) << three.log();
  EXPECT_TRUE(three.log().ends_with("used\t" + kTree + "/csrc/a.cpp\t\n")) << three.log();
  // v.cpp, alone with <vector> first, and any file when the extension has two: without it, and
  // remembered (by its path in the tree) for the next extension with the same flags.
  EXPECT_EQ(three.compile("v.cpp"), 0);
  EXPECT_TRUE(three.log().ends_with("first\t" + kTree + "/csrc/v.cpp\t\n")) << three.log();
  MakeCase two;
  two.ninja({"a.cpp", "b.cpp"});
  EXPECT_EQ(two.compile("a.cpp"), 0);
  EXPECT_EQ(two.compile("a.cpp"), 0);  // again (a rebuild): still one
  EXPECT_EQ(two.log(), "first\t" + kTree + "/csrc/a.cpp\t\nfirst\t" + kTree + "/csrc/a.cpp\t\n");
  std::string wanted;
  const auto names = two.fm.fs.list_directory("/cache/pch");
  ASSERT_TRUE(names);
  for (const auto& n : *names)
    if (n.ends_with(".wanted")) wanted = *two.fm.fs.read_file("/cache/pch/" + n);
  EXPECT_EQ(wanted, "csrc/a.cpp\n");
  // A third file of another extension with the same flags: made.
  two.ninja({"c.cpp"});
  EXPECT_EQ(two.compile("b.cpp"), 0);  // b.cpp is not in this build.ninja: a and b known, b counts once
  EXPECT_TRUE(two.log().ends_with("first\t" + kTree + "/csrc/b.cpp\t\n")) << two.log();
  EXPECT_EQ(two.compile("c.cpp"), 0);
  EXPECT_NE(two.log().find("made\t" + kTree + "/csrc/c.cpp\t"), std::string::npos) << two.log();
}

TEST(CompilePch, ABuildsPlanNamesTheOtherExtensionsFilesAlike) {
  // DeepSpeed-like: two ops whose C++ files compile alike (a project macro of its own aside), a
  // CPU op with flags of its own, an op without C++ files.
  const std::vector<pch::PlannedExtension> planned = {
      {"_C", {"-I" + kTree + "/csrc/include", "-O3"}, {"csrc/a.cpp"}},
      {"other_op", {"-Icsrc/include", "-O3", "-DPROJ_X=1"}, {"csrc/b.cpp", "csrc/k.cu", "csrc/v.cpp"}},
      {"cpu_op", {"-Icsrc/include", "-O3", "-march=native"}, {"csrc/c.cpp"}},
      {"kernels_op", {"-O3"}, {"csrc/k2.cu"}},
  };
  const std::string text = pch::plan_text(planned);
  const auto alike = pch::planned_alike(text, "_C", kTree, {});
  ASSERT_EQ(alike.size(), 3u) << text;
  EXPECT_EQ(alike[0].source, "csrc/a.cpp");
  EXPECT_EQ(alike[1].source, "csrc/b.cpp");
  EXPECT_EQ(alike[2].source, "csrc/v.cpp");
  EXPECT_TRUE(alike[0].include_dirs.empty());  // absolute: the tree's, but not to be read here
  EXPECT_EQ(alike[1].include_dirs, std::vector<std::string>{"csrc/include"});
  EXPECT_EQ(pch::planned_alike(text, "cpu_op", kTree, {}).size(), 1u);
  // A macro gcc named as read by the header splits them, as it splits their keys.
  EXPECT_EQ(pch::planned_alike(text, "_C", kTree, {"PROJ_X"}).size(), 1u);
  EXPECT_TRUE(pch::planned_alike(text, "missing_op", kTree, {}).empty());
  EXPECT_TRUE(pch::planned_alike("{not json", "_C", kTree, {}).empty());
  EXPECT_TRUE(pch::planned_alike("", "", kTree, {}).empty());

  // In a compile: a.cpp alone in its build.ninja knows b.cpp (v.cpp reads <vector> first, c.cpp
  // compiles otherwise): two, so not yet; one more op alike makes three.
  MakeCase c;
  c.ninja({"a.cpp"});
  c.fm.fs.add_file(kTree + "/" + std::string(pch::kPlanFile), text);
  EXPECT_EQ(c.compile("a.cpp"), 0);
  EXPECT_EQ(c.log(), "first\t" + kTree + "/csrc/a.cpp\t\n");
  // Files outside the tree are never read, whatever the plan says.
  auto more = planned;
  more.push_back({"outside_op", {"-O3"}, {"/etc/e.cpp", "../../other/f.cpp"}});
  c.fm.fs.add_file("/etc/e.cpp", "#include <torch/extension.h>\n");
  c.fm.fs.add_file("/cache/other/f.cpp", "#include <torch/extension.h>\n");
  c.fm.fs.add_file(kTree + "/" + std::string(pch::kPlanFile), pch::plan_text(more));
  EXPECT_EQ(c.compile("a.cpp"), 0);
  EXPECT_EQ(c.log(), "first\t" + kTree + "/csrc/a.cpp\t\nfirst\t" + kTree + "/csrc/a.cpp\t\n");
  more.push_back({"more_op", {"-O3"}, {"csrc/d.cpp"}});
  c.fm.fs.add_file(kTree + "/csrc/d.cpp", "// an op\n#include <torch/extension.h>\n");
  c.fm.fs.add_file(kTree + "/" + std::string(pch::kPlanFile), pch::plan_text(more));
  EXPECT_EQ(c.compile("a.cpp"), 0);
  EXPECT_NE(c.log().find("made\t" + kTree + "/csrc/a.cpp\t"), std::string::npos) << c.log();
}

TEST(CompilePch, AMacroGccSaysTheHeaderReadGoesIntoTheKey) {
  MakeCase c;
  c.ninja({"a.cpp", "b.cpp", "c.cpp"});
  auto args = torch_compile(kTree + "/csrc/b.cpp");
  args.push_back("-DPROJECT_LEVEL=2");  // the project's, as far as the names go
  std::vector<std::string> with_pch = {c.gxx};
  with_pch.insert(with_pch.end(), args.begin(), args.end());
  with_pch.push_back("-include");
  probe::ProcessResult refused;
  refused.exit_code = 0;
  refused.err =
      "cc1plus: warning: /cache/pch/k/extension.h.gch: not used because `PROJECT_LEVEL' is defined "
      "[-Winvalid-pch]\n";
  c.fm.proc.on(with_pch, refused);
  std::vector<std::string> argv = {"--compiler", c.gxx, "--pch-dir", "/cache/pch", "--"};
  argv.insert(argv.end(), args.begin(), args.end());
  EXPECT_EQ(pch::host_compile(c.fm.machine(), argv), 0);
  EXPECT_NE(c.log().find("not-used\t" + kTree + "/csrc/b.cpp\tcc1plus: warning:"), std::string::npos) << c.log();
  EXPECT_EQ(*c.fm.fs.read_file("/cache/pch/.consulted"), "PROJECT_LEVEL\n");
  // The next compile with it keys another header (made with the macro).
  const auto before = c.fm.fs.list_directory("/cache/pch")->size();
  EXPECT_EQ(pch::host_compile(c.fm.machine(), argv), 0);
  EXPECT_GT(c.fm.fs.list_directory("/cache/pch")->size(), before);
}
