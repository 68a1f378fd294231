// probe::FileSystem::absolute and probe::data_dir: the two facts about paths that the pipeline
// and the doctor read from the machine.
#include <gtest/gtest.h>

#include <filesystem>

#include "probe/fake_machine.h"

namespace opforge::probe {
namespace {

TEST(ProbePaths, RealAbsoluteIsAgainstTheWorkingDirectory) {
  auto m = real_machine();
  EXPECT_EQ(m.fs.absolute("dist/x.whl"), std::filesystem::current_path() / "dist/x.whl");
  EXPECT_EQ(m.fs.absolute("/abs/../path"), fs::path("/abs/../path")) << "no normalisation, no symlinks resolved";
}

TEST(ProbePaths, FakeWorkingDirectoryIsRoot) {
  FakeFileSystem fs;
  EXPECT_EQ(fs.absolute("build"), fs::path("/build"));
  EXPECT_EQ(fs.absolute("/w/build"), fs::path("/w/build"));
}

TEST(ProbePaths, DataDirIsTheCheckoutWhileItHoldsThePackage) {
  // This binary was built from a checkout, which holds src/python/opforge_ops.
  EXPECT_EQ(data_dir(real_machine().fs), fs::path(OPFORGE_SOURCE_DIR));
  // Without it (an installed binary whose source tree is gone), the installed data folder.
  FakeFileSystem empty;
  EXPECT_EQ(data_dir(empty), fs::path(OPFORGE_DATA_DIR));
  FakeFileSystem checkout;
  checkout.add_directory(fs::path(OPFORGE_SOURCE_DIR) / "src/python/opforge_ops");
  EXPECT_EQ(data_dir(checkout), fs::path(OPFORGE_SOURCE_DIR));
}

TEST(ProbePaths, InstalledDataDirIsBesideTheExecutable) {
  // pip puts the binary in <prefix>/bin and the data in <prefix>/share/opforge, for any prefix.
  FakeFileSystem venv;
  venv.add_file("/opt/venv/bin/opforge", "ELF", 0755);
  venv.add_symlink("/proc/self/exe", "/opt/venv/bin/opforge");
  venv.add_directory("/opt/venv/share/opforge/src/python/opforge_ops");
  EXPECT_EQ(data_dir(venv), fs::path("/opt/venv/share/opforge"));
  // A binary with no data beside it falls back to the install prefix it was configured with.
  FakeFileSystem bare;
  bare.add_file("/opt/venv/bin/opforge", "ELF", 0755);
  bare.add_symlink("/proc/self/exe", "/opt/venv/bin/opforge");
  EXPECT_EQ(data_dir(bare), fs::path(OPFORGE_DATA_DIR));
}

}  // namespace
}  // namespace opforge::probe

TEST(ProbePaths, TheCommandThatRunsThisOpforgeAgain) {
  opforge::probe::FakeMachine fm;
  fm.fs.add_file("/usr/local/bin/opforge", "", 0755);
  fm.fs.add_symlink("/proc/self/exe", "/usr/local/bin/opforge");
  EXPECT_EQ(opforge::probe::self_command(fm.fs), (std::vector<std::string>{"/usr/local/bin/opforge"}));
  // Inside a root the host's loader runs it (root.cpp's self_argv): the loader, its options, the program.
  opforge::probe::FakeMachine root;
  root.fs.add_file("/.opforge/host-lib/ld-linux-x86-64.so.2", "", 0755);
  root.fs.add_symlink("/proc/self/exe", "/.opforge/host-lib/ld-linux-x86-64.so.2");
  root.fs.add_file("/proc/self/cmdline", std::string("/.opforge/host-lib/ld-linux-x86-64.so.2\0--library-path\0"
                                                     "/.opforge/host-lib\0/.opforge/bin/opforge\0build\0r.toml\0",
                                                     100));
  EXPECT_EQ(opforge::probe::self_command(root.fs),
            (std::vector<std::string>{"/.opforge/host-lib/ld-linux-x86-64.so.2", "--library-path", "/.opforge/host-lib",
                                      "/.opforge/bin/opforge"}));
  // A command line that never names the program: nothing to run.
  root.fs.add_file("/proc/self/cmdline", std::string("/.opforge/host-lib/ld-linux-x86-64.so.2\0--library-path\0", 55));
  EXPECT_TRUE(opforge::probe::self_command(root.fs).empty());
}
