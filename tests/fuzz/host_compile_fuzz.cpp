// What `opforge __host-compile` parses: its own argv and the gcc command line after "--" (one
// argument a line in the first part), then the texts it reads back: `-E -dM` output of the prefix
// and of the made header, the compile's and the header's -MD files, a build.ninja, the plan file
// of a build's extensions and the pch log. The whole command also runs on a fake machine whose
// compiler always succeeds. Nothing may crash, hang or throw.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string_view>

#include "compile/pch/pch.h"
#include "parts.h"
#include "probe/fake_machine.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace opforge;
  namespace pch = compile::pch;
  const auto p = fuzz::parts(std::string_view(reinterpret_cast<const char*>(data), size), 8);
  const auto argv = fuzz::lines(p[0]);

  // The gcc command line alone (after "--", or all of it).
  std::vector<std::string> args = argv;
  for (std::size_t i = 0; i < argv.size(); ++i)
    if (argv[i] == "--") args.assign(argv.begin() + static_cast<long>(i) + 1, argv.end());
  const auto line = pch::parse(args);
  (void)pch::not_eligible(line);
  const auto key_args = pch::header_args(line, "/t");
  (void)pch::header_args(line, {});
  std::set<std::string> consulted{std::string(pch::macro_in_reason(p[7]))};
  (void)pch::without_project_macros(key_args, consulted);
  for (const auto& a : args) (void)pch::read_by_headers(a);

  // The texts it reads back.
  const auto defined = pch::macro_definitions(p[1]);
  std::set<std::string> macros;
  for (const auto& [name, value] : defined) macros.insert(name);
  (void)pch::macro_clash(p[1], p[2], macros);
  (void)pch::merge_depfile(p[3], p[4], "/cache/pch/0123456789abcdef/extension.h");
  const std::string source = line.sources.empty() ? std::string("a.cpp") : line.sources[0];
  (void)pch::sibling_sources(p[5], source);
  (void)pch::planned_alike(p[6], "_C", "/t", consulted);
  (void)pch::summary_line(pch::summarize(p[7]));

  // The whole command, when it names a compiler (without one it only prints its usage).
  bool names_compiler = false;
  for (std::size_t i = 0; i + 1 < argv.size() && argv[i] != "--"; ++i) names_compiler |= argv[i] == "--compiler";
  if (names_compiler) {
    probe::FakeMachine m;
    m.fs.add_file("/torch/include/torch/extension.h", "#pragma once\n");
    m.fs.add_file("/torch/include/ATen/ATen.h", "#pragma once\n");
    m.fs.add_file("/torch/version.py", "__version__ = '2.15.0'\n");
    m.fs.add_file("/t/a.cpp", "#include \"h.h\"\n#include <torch/extension.h>\nint f() { return 1; }\n");
    m.fs.add_file("/t/include/h.h", "#pragma once\n#define OPS 1\n");
    m.fs.add_file("/t/build.ninja", std::string(p[5]));
    m.fs.add_file("/t/.opforge-pch-plan.json", std::string(p[6]));
    m.env.set("OPFORGE_PCH_TREE", "/t");
    m.env.set("OPFORGE_PCH_LOG", "/t/pch.log");
    m.proc.on({}, probe::ProcessResult{.exit_code = 0, .out = std::string(p[2])});
    (void)pch::host_compile(m.machine(), argv);
  }
  return 0;
}
