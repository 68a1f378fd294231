// A command build's resume: its key (compile::resume_key over the command, the versions and the
// environment, one item a line in parts 0-3) and the kept scratch tree it is checked against. A
// source tree of two files (parts 5 and 6; "-> TARGET" makes a symbolic link) is copied into a
// fake cache; then the kept tree's stamp is replaced by part 4 (when not empty) and its file by
// part 7, as a killed build or a user may leave them, and the tree made again: resumed or copied
// afresh, never a crash or a throw.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string_view>

#include "compile/scratch/scratch.h"
#include "parts.h"
#include "probe/fake_machine.h"

namespace {

void add(opforge::probe::FakeFileSystem& fs, const std::filesystem::path& path, std::string_view part) {
  if (part.starts_with("-> ")) fs.add_symlink(path, std::string(part.substr(3, part.find('\n') - 3)));
  else fs.add_file(path, std::string(part));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace opforge;
  const auto p = fuzz::parts(std::string_view(reinterpret_cast<const char*>(data), size), 8);
  std::map<std::string, std::string> env;
  for (const auto& l : fuzz::lines(p[2])) {
    const auto eq = l.find('=');
    env[l.substr(0, eq)] = eq == std::string::npos ? std::string() : l.substr(eq + 1);
  }
  const auto command = fuzz::lines(p[0]), versions = fuzz::lines(p[1]), also = fuzz::lines(p[3]);
  const std::string key = compile::resume_key(command, versions, env, also);
  // The job count never decides the compile commands.
  auto more_jobs = env;
  more_jobs["MAX_JOBS"] += "1";
  if (compile::resume_key(command, versions, more_jobs, also) != key) __builtin_trap();

  probe::FakeMachine m;
  add(m.fs, "/src/setup.py", p[5]);
  add(m.fs, "/src/csrc/op.cpp", p[6]);
  const compile::ScratchResume resume{[&](const std::filesystem::path&) { return key; }};
  std::filesystem::path root;
  {
    auto first = compile::make_scratch_tree(m.machine(), "/src", "/cache", {}, resume);
    if (!first) {
      (void)first.error().render();
      return 0;
    }
    root = first->root;
  }
  const bool stamp_kept = p[4].empty();
  if (!stamp_kept) (void)m.fs.write_file_atomic(root / compile::kResumeStamp, p[4], 0644);
  if (!p[7].empty()) (void)m.fs.write_file_atomic(root / "csrc/op.cpp", p[7], 0644);
  auto again = compile::make_scratch_tree(m.machine(), "/src", "/cache", {}, resume);
  // A tree whose stamp is as the build wrote it is resumed.
  if (again && stamp_kept && !again->resumed) __builtin_trap();
  if (!again) (void)again.error().render();
  return 0;
}
