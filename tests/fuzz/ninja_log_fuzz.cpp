// The `.ninja_log` reader of a command build's resume: part 0 is a log before the build's command,
// part 1 the same log after it, at <tree>/build/.ninja_log; part 2 a second log at the top of the
// tree, after. parse_ninja_log on each, read_ninja_logs on a fake tree, then compare_ninja_logs.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "compile/watch/ninja_log.h"
#include "parts.h"
#include "probe/fake_machine.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace opforge;
  const auto p = fuzz::parts(std::string_view(reinterpret_cast<const char*>(data), size), 3);
  for (auto text : p) (void)compile::parse_ninja_log(text);
  probe::FakeFileSystem before_fs, after_fs;
  before_fs.add_file("/tree/build/.ninja_log", std::string(p[0]));
  after_fs.add_file("/tree/build/.ninja_log", std::string(p[1]));
  after_fs.add_file("/tree/.ninja_log", std::string(p[2]));
  const auto before = compile::read_ninja_logs(before_fs, "/tree");
  const auto after = compile::read_ninja_logs(after_fs, "/tree");
  const auto reuse = compile::compare_ninja_logs(before, after);
  // Every step of `after` is counted once, reused or compiled.
  std::size_t steps = 0;
  for (const auto& [log, s] : after) steps += s.size();
  if (static_cast<std::size_t>(reuse.reused + reuse.compiled) != steps) __builtin_trap();
  return 0;
}
