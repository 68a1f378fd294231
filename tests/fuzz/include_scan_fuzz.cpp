// The include scanner of `__host-compile` (pch::scan): a source and the project's headers, each a
// part of the input, read up to `#include <torch/extension.h>` on a fake file system. A part that
// starts with "-> " is a symbolic link to the path after it. Part 0 is the source /t/src/a.cpp,
// the next /t/src/a.h, /t/include/b.h, /t/include/sub/c.h, /t/include/torch_like.h and
// /elsewhere/d.h (outside the tree). Any answer is fine; a crash, a hang or a throw is not.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "compile/pch/pch.h"
#include "parts.h"
#include "probe/fake_machine.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace opforge;
  static const char* const kFiles[] = {
      "/t/src/a.cpp",  "/t/src/a.h", "/t/include/b.h", "/t/include/sub/c.h", "/t/include/torch_like.h",
      "/elsewhere/d.h"};
  const auto p = fuzz::parts(std::string_view(reinterpret_cast<const char*>(data), size), std::size(kFiles));
  probe::FakeFileSystem fs;
  fs.add_directory("/t/include");
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i].starts_with("-> ")) {
      auto target = p[i].substr(3);
      fs.add_symlink(kFiles[i], std::string(target.substr(0, target.find('\n'))));
    } else if (!p[i].empty() || i == 0) {
      fs.add_file(kFiles[i], std::string(p[i]));
    }
  }
  const std::vector<std::filesystem::path> dirs{"/t/include", "/t/include/sub", "/elsewhere"};
  const auto found = compile::pch::scan(fs, "/t/src/a.cpp", dirs, "/t");
  (void)compile::pch::header_text(found.prefix);
  (void)compile::pch::scan(fs, "/t/src/a.cpp", dirs);
  return 0;
}
