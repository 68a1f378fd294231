// Building inside a root: the sandbox's exact command lines, what a root holds (parsed from the
// describe script's real output in a Debian 11 debootstrap root), and the run of opforge inside.
#include <gtest/gtest.h>

#include "probe/fake_machine.h"
#include "root/root.h"
#include "test_util.h"
#include "util/strings.h"

namespace opforge::root {
namespace {

/// A root with merged /usr, as debootstrap makes Debian 11's.
void add_root(probe::FakeFileSystem& fs, const fs::path& r) {
  fs.add_symlink(r / "bin", "usr/bin");
  fs.add_symlink(r / "lib64", "usr/lib64");
  fs.add_file(r / "usr/bin/sh", "", 0755);
  fs.add_directory(r / "usr/lib");
  fs.add_directory(r / "usr/local/bin");
  fs.add_directory(r / "etc");
  fs.add_directory(r / "proc");
  fs.add_directory(r / "tmp");
}

std::string joined(const std::vector<std::string>& v) { return strings::join(v, " "); }

}  // namespace

TEST(RootSandbox, BubblewrapBindsTheRootReadOnlyAndMakesMountPointsInItsTmpfs) {
  probe::FakeFileSystem fs;
  add_root(fs, "/r");
  Jail j;
  j.root = "/r";
  j.binds = {{"/work/src", "/work/src", Bind::Mode::rw}, {"/opt/cuda-13.0", "/usr/local/cuda-13.0", Bind::Mode::ro}};
  j.env = {{"PATH", "/usr/bin:/bin"}};
  j.argv = {"/bin/sh", "-c", "true"};
  j.cwd = "/work/src";
  auto a = host_argv(fs, Sandbox::bwrap, j, "/usr/bin/bwrap");
  ASSERT_TRUE(a) << a.error().message;
  // /usr is made anew because the toolkit goes into /usr/local; proc and tmp are the sandbox's own.
  EXPECT_EQ(joined(*a),
            "/usr/bin/bwrap --die-with-parent --unshare-pid --symlink usr/bin /bin --ro-bind /r/etc /etc "
            "--symlink usr/lib64 /lib64 --dir /usr --ro-bind /r/usr/bin /usr/bin --ro-bind /r/usr/lib /usr/lib "
            "--dir /usr/local --ro-bind /r/usr/local/bin /usr/local/bin --dev /dev --proc /proc --tmpfs /tmp "
            "--bind /work/src /work/src --ro-bind /opt/cuda-13.0 /usr/local/cuda-13.0 --clearenv --setenv PATH "
            "/usr/bin:/bin --chdir /work/src -- /bin/sh -c true");
}

TEST(RootSandbox, ChrootMountsAnOverlayInItsOwnNamespace) {
  probe::FakeFileSystem fs;
  Jail j;
  j.root = "/r";
  j.scratch = "/c/root-scratch";
  j.binds = {{"/work/b", "/work/b", Bind::Mode::rw}, {"/cuda", "/cuda", Bind::Mode::ro}};
  j.env = {{"PATH", "/usr/bin:/bin"}};
  j.argv = {"/.opforge/bin/opforge", "build", "/work/r.toml"};
  j.cwd = "/work";
  auto a = host_argv(fs, Sandbox::chroot, j, "/usr/bin/unshare");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->size(), 8u);
  EXPECT_EQ(joined({a->begin(), a->begin() + 7}), "/usr/bin/unshare --mount --propagation private -- /bin/sh -c");
  const std::string& script = a->back();
  for (const char* line :
       {"mount -t tmpfs opforge-root \"$s\"\n",
        "mount -t overlay overlay -o lowerdir=/r,upperdir=\"$s/upper\",workdir=\"$s/work\" \"$s/merged\"\n",
        "mount --bind /cuda \"$m\"/cuda\nmount -o remount,bind,ro \"$m\"/cuda\n",
        "mount --bind /work/b \"$m\"/work/b\n",
        "exec chroot \"$m\" /usr/bin/env -i PATH=/usr/bin:/bin /bin/sh -c 'cd \"$0\" && exec \"$@\"' /work "
        "/.opforge/bin/opforge build /work/r.toml\n"})
    EXPECT_NE(script.find(line), std::string::npos) << line << "\nnot in:\n" << script;
  EXPECT_EQ(script.find("mount -o remount,bind,ro \"$m\"/work/b"), std::string::npos);
}

TEST(RootSandbox, DescribeReadsWhatADebian11RootHolds) {
  auto info = parse_describe(test_util::data("root/describe-debian11.txt"));
  EXPECT_EQ(info.os, "Debian GNU/Linux 11 (bullseye)");
  EXPECT_EQ(info.glibc, "2.31");
  EXPECT_EQ(info.glibc_minor, 31);
  EXPECT_EQ(info.gcc_version, "10.2.1");
  EXPECT_EQ(info.python_version, "3.9.2");
  EXPECT_EQ(info.python_include, "/usr/include/python3.9");
  EXPECT_EQ(info.tools.at("ninja"), "/usr/bin/ninja");
  info.root = "/roots/bullseye";
  EXPECT_EQ(describe_line(info),
            "root: /roots/bullseye (Debian GNU/Linux 11 (bullseye)), glibc 2.31, gcc 10.2.1, Python 3.9.2 (headers: "
            "/usr/include/python3.9), ninja; through bubblewrap");
  EXPECT_TRUE(check_tools(info, true));
}

TEST(RootSandbox, AMissingToolNamesThePackageOfTheRootsDistribution) {
  auto info = parse_describe(
      "os=Debian GNU/Linux 11 (bullseye)\nos_id=debian \nglibc=glibc 2.31\ntool.gcc=/usr/bin/gcc\n"
      "tool.python3=/usr/bin/python3\n");
  info.root = "/r";
  auto st = check_tools(info, true);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().kind, ErrorKind::unsatisfied);
  EXPECT_EQ(st.error().message, "the root /r (Debian GNU/Linux 11 (bullseye)) has no g++, ninja on its PATH");
  EXPECT_EQ(st.error().hint,
            "install them inside the root, e.g. chroot /r apt-get install g++; apt-get install ninja-build (or "
            "debootstrap --include=... when making it)");
  EXPECT_TRUE(check_tools(info, false) ? false : true);
  info.os_id = "rocky rhel centos fedora";
  EXPECT_EQ(install_hint(info, "g++"), "dnf install gcc-c++");
  EXPECT_EQ(install_hint(info, "python3-dev"), "dnf install python3-devel");
}

TEST(RootSandbox, ARootsPrettyNameIsShownNotSentToTheTerminal) {
  // A root's os-release is a file anyone who made the root wrote: its terminal sequences (a title
  // change, colours, a bell) are shown as \xNN in the line opforge prints and in its errors.
  auto info = parse_describe(
      "os=Debian \x1b]0;pwned\x07\x1b[2J GNU/Linux\r\nglibc=glibc 2.31\x1b[31m\ngcc_version=10\x1b[0m\n"
      "tool.gcc=/usr/bin/gcc\n");
  info.root = "/r";
  EXPECT_EQ(info.os, "Debian \\x1b]0;pwned\\x07\\x1b[2J GNU/Linux");
  EXPECT_EQ(info.glibc, "2.31\\x1b[31m");
  EXPECT_EQ(info.gcc_version, "10\\x1b[0m");
  EXPECT_EQ(describe_line(info).find('\x1b'), std::string::npos) << describe_line(info);
  auto st = check_tools(info, true);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().render().find('\x1b'), std::string::npos);
  // Any error's message is shown the same way, wherever its text came from.
  const Error e{ErrorKind::failed, "a\x1b[31mb\nc\td", {}, {}};
  EXPECT_EQ(e.render(), "a\\x1b[31mb\nc\td");
}

TEST(RootSandbox, TheSandboxIsBubblewrapElseChrootElseUnsatisfied) {
  probe::FakeMachine fm;
  fm.env.set("PATH", "/usr/bin");
  auto none = choose_sandbox(fm.machine());
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().kind, ErrorKind::unsatisfied);
  EXPECT_NE(none.error().hint.find("apt-get install bubblewrap"), std::string::npos);
  fm.fs.add_file("/usr/bin/unshare", "", 0755);
  fm.fs.add_file("/usr/bin/chroot", "", 0755);
  EXPECT_EQ(choose_sandbox(fm.machine())->sandbox, Sandbox::chroot);
  fm.fs.add_file("/usr/bin/bwrap", "", 0755);
  fm.proc.on({"/usr/bin/bwrap", "--version"}, {.exit_code = 0, .out = "bubblewrap 0.8.0\n"});
  auto b = choose_sandbox(fm.machine());
  ASSERT_TRUE(b);
  EXPECT_EQ(b->sandbox, Sandbox::bwrap);
  EXPECT_EQ(b->tool, "/usr/bin/bwrap");
}

TEST(RootSandbox, ADevelopmentOpforgeRunsInsideWithTheHostsLoader) {
  Self dynamic{"/src/build/opforge", "/src", false, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
               "/usr/lib/x86_64-linux-gnu"};
  EXPECT_EQ(joined(self_argv(dynamic, {"build", "/p/r.toml"})),
            "/.opforge/host-lib/ld-linux-x86-64.so.2 --library-path /.opforge/host-lib /.opforge/bin/opforge build "
            "/p/r.toml");
  auto binds = self_binds(dynamic);
  ASSERT_EQ(binds.size(), 3u);
  EXPECT_EQ(binds[2].host, "/usr/lib/x86_64-linux-gnu");
  EXPECT_EQ(binds[2].inside, "/.opforge/host-lib");
  Self static_exe{"/venv/bin/opforge", "/venv/share/opforge", true, {}, {}};
  EXPECT_EQ(joined(self_argv(static_exe, {"plan", "x"})), "/.opforge/bin/opforge plan x");
  EXPECT_EQ(self_binds(static_exe).size(), 2u);
  EXPECT_EQ(self_binds(static_exe)[1].inside, "/.opforge/share/opforge");
}

/// The host of the prepare() tests: NVIDIA's 13.0 at /opt/cuda-13.0 (/usr/local/cuda), bubblewrap
/// 0.8 whose run inside prints `describe` (a captured describe_script() output), opforge itself
/// (this test's own dynamically linked executable stands in for it) and the host's loader.
static void add_host(probe::FakeMachine& fm, const std::string& describe) {
  fm.fs.add_file("/opt/cuda-13.0/bin/nvcc", "", 0755);
  fm.fs.add_symlink("/usr/local/cuda", "/opt/cuda-13.0");
  fm.fs.add_file("/usr/bin/bwrap", "", 0755);
  fm.fs.add_file("/opt/o/bin/opforge", test_util::slurp("/proc/self/exe"), 0755);
  fm.fs.add_symlink("/proc/self/exe", "/opt/o/bin/opforge");
  fm.fs.add_file("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "", 0755);
  fm.fs.add_symlink("/lib64/ld-linux-x86-64.so.2", "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2");
  fm.env.set("PATH", "/usr/bin");
  fm.env.set("HOME", "/home/u");
  fm.proc.on({"/usr/bin/bwrap", "--version"}, {.exit_code = 0, .out = "bubblewrap 0.8.0\n"});
  fm.proc.on({"/usr/bin/bwrap", "--die-with-parent"}, {.exit_code = 0, .out = test_util::data(describe)});
}

TEST(RootSandbox, TheBuildInsideGetsItsFoldersTheToolkitAndTheBuildVariables) {
  probe::FakeMachine fm;
  add_root(fm.fs, "/roots/b");
  fm.fs.add_file("/work/p/recipe.toml", "[source]\npath = \"src\"\n[build]\nbuild_dir = \"out/b\"\n");
  fm.fs.add_directory("/work/p/src");
  add_host(fm, "root/describe-debian11.txt");
  fm.env.set("TORCH_CUDA_ARCH_LIST", "9.0");
  fm.env.set("DS_BUILD_AIO", "1");
  fm.env.set("LD_PRELOAD", "/host/only.so");
  fm.env.set("PYTHONHOME", "/host/python");
  fm.env.set("CFLAGS", "-DMARK=\"red\" -O2");
  fm.env.set("NVCC_APPEND_FLAGS", "-lineinfo");
  fm.env.set("FLASH_ATTENTION_FORCE_BUILD", "TRUE");
  Invocation inv;
  inv.root = "/roots/b";
  inv.recipe = "/work/p/recipe.toml";
  inv.args = {"--glibc", "2.31"};
  auto p = prepare(fm.machine(), inv);
  ASSERT_TRUE(p) << p.error().render();
  EXPECT_EQ(p->info.glibc, "2.31");
  std::vector<std::string> binds;
  for (const auto& b : p->jail.binds)
    binds.push_back((b.mode == Bind::Mode::ro ? "ro " : "rw ") + b.host.string() +
                    (b.inside == b.host ? "" : " -> " + b.inside.string()));
  EXPECT_EQ(binds, (std::vector<std::string>{"ro /work/p", "rw /work/p/src", "rw /work/p/out/b", "rw /work/p/dist",
                                             "rw /home/u/.cache/opforge", "ro /opt/cuda-13.0",
                                             "ro /opt/o/bin/opforge -> /.opforge/bin/opforge",
                                             "ro " + std::string(OPFORGE_DATA_DIR) + " -> /.opforge/share/opforge",
                                             "ro /usr/lib/x86_64-linux-gnu -> /.opforge/host-lib"}));
  const auto& env = p->jail.env;
  // The host's toolkit is bound at its own path, where the search inside finds it: no CUDA_HOME
  // is made up (the record inside then holds the variables the user set, as on the host).
  EXPECT_FALSE(env.contains("CUDA_HOME"));
  EXPECT_EQ(env.at("TORCH_CUDA_ARCH_LIST"), "9.0");
  // Every variable that changes the wheel, and a project's own switches, as they are.
  EXPECT_EQ(env.at("CFLAGS"), "-DMARK=\"red\" -O2");
  EXPECT_EQ(env.at("NVCC_APPEND_FLAGS"), "-lineinfo");
  EXPECT_EQ(env.at("FLASH_ATTENTION_FORCE_BUILD"), "TRUE");
  EXPECT_FALSE(env.contains("PYTHONHOME"));
  EXPECT_EQ(env.at("DS_BUILD_AIO"), "1");
  EXPECT_EQ(env.at("OPFORGE_CACHE_DIR"), "/home/u/.cache/opforge");
  EXPECT_EQ(env.at("OPFORGE_IN_ROOT"), "/roots/b");
  EXPECT_FALSE(env.contains("LD_PRELOAD"));
  EXPECT_EQ(env.at("PATH"), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
  EXPECT_EQ(joined(p->jail.argv),
            "/.opforge/host-lib/ld-linux-x86-64.so.2 --library-path /.opforge/host-lib /.opforge/bin/opforge build "
            "/work/p/recipe.toml --build-dir /work/p/out/b --dist-dir /work/p/dist --glibc 2.31");
  EXPECT_EQ(p->jail.cwd, "/work/p/src");
  // The root is described, not changed: nothing was written inside it.
  for (const auto& line : fm.fs.log()) EXPECT_EQ(line.find("/roots/b"), std::string::npos) << line;
}

// A root with a toolkit of its own (Debian 13's nvidia-cuda-toolkit 12.4, described by the real
// root): the host's is still bound in, and the user's CUDA_HOME is honoured inside as on the host
// (bound at the path it names); the root line names both.
TEST(RootSandbox, ARootWithItsOwnToolkitChoosesInside) {
  probe::FakeMachine fm;
  add_root(fm.fs, "/roots/t");
  fm.fs.add_file("/work/p/recipe.toml", "[build]\nbackend = \"command\"\ncommand = [\"python3\", \"setup.py\"]\n");
  add_host(fm, "root/describe-debian13-cuda.txt");
  fm.env.set("CUDA_HOME", "/usr/local/cuda");
  Invocation inv;
  inv.root = "/roots/t";
  inv.recipe = "/work/p/recipe.toml";
  auto p = prepare(fm.machine(), inv);
  ASSERT_TRUE(p) << p.error().render();
  EXPECT_EQ(p->info.tools.at("nvcc"), "/usr/bin/nvcc");
  EXPECT_EQ(p->jail.env.at("CUDA_HOME"), "/usr/local/cuda");
  bool bound = false, named = false;
  for (const auto& b : p->jail.binds) {
    bound = bound || (b.host == "/opt/cuda-13.0" && b.mode == Bind::Mode::ro);
    named = named || (b.host == "/usr/local/cuda" && b.inside == "/usr/local/cuda" && b.mode == Bind::Mode::ro);
  }
  EXPECT_TRUE(bound);
  EXPECT_TRUE(named);
  EXPECT_EQ(describe_line(p->info),
            "root: /roots/t (Debian GNU/Linux 13 (trixie)), glibc 2.41, gcc 14.2.0, Python 3.13.5 (headers: "
            "/usr/include/python3.13), ninja, its own nvcc /usr/bin/nvcc (and this machine's /opt/cuda-13.0, "
            "read-only); through bubblewrap");
}

// A variable that changes the wheel but names a folder the build inside cannot see is refused by
// name, never dropped; one the root has, or one bound in, passes.
TEST(RootSandbox, AFlagNamingAFolderTheRootLacksIsRefusedByName) {
  probe::FakeMachine fm;
  add_root(fm.fs, "/roots/b");
  fm.fs.add_file("/work/p/recipe.toml", "[source]\npath = \"src\"\n");
  fm.fs.add_directory("/work/p/src");
  add_host(fm, "root/describe-debian11.txt");
  fm.fs.add_directory("/opt/aio/include");
  fm.env.set("CFLAGS", "-O2 -I/opt/aio/include");
  Invocation inv;
  inv.root = "/roots/b";
  inv.recipe = "/work/p/recipe.toml";
  auto p = prepare(fm.machine(), inv);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().kind, ErrorKind::bad_input);
  EXPECT_EQ(p.error().message,
            "CFLAGS names /opt/aio/include, which the build inside the root /roots/b cannot see (it is not in the "
            "root, and opforge binds in only the recipe's, source's, build, dist, cache and toolkit folders)");
  EXPECT_EQ(p.error().hint,
            "install what /opt/aio/include holds inside the root (its own path there), or unset CFLAGS "
            "for this build");
  // In the root, or in a folder bound in (the source tree): fine.
  fm.fs.add_directory("/roots/b/opt/aio/include");
  fm.env.set("LDFLAGS", "-L/work/p/src/lib -Wl,-rpath,/work/p/src/lib");
  auto q = prepare(fm.machine(), inv);
  ASSERT_TRUE(q) << q.error().render();
  EXPECT_EQ(q->jail.env.at("CFLAGS"), "-O2 -I/opt/aio/include");
  // A relative CUDA_HOME would name another folder inside.
  fm.env.set("CUDA_HOME", "cuda");
  auto r = prepare(fm.machine(), inv);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message, "CUDA_HOME=cuda is relative: inside the root it would name another folder");
}

// A source below the top of a git work tree: the whole work tree is bound (read-only), so that its
// commit, its time (the wheel's SOURCE_DATE_EPOCH) and whether it is dirty read the same inside.
TEST(RootSandbox, ASourceInsideAGitWorkTreeBringsTheWorkTree) {
  probe::FakeMachine fm;
  add_root(fm.fs, "/roots/b");
  fm.fs.add_directory("/repo/.git");
  fm.fs.add_file("/repo/sub/p/recipe.toml", "[source]\npath = \".\"\n");
  add_host(fm, "root/describe-debian11.txt");
  Invocation inv;
  inv.root = "/roots/b";
  inv.recipe = "/repo/sub/p/recipe.toml";
  auto p = prepare(fm.machine(), inv);
  ASSERT_TRUE(p) << p.error().render();
  std::vector<std::string> binds;
  for (const auto& b : p->jail.binds)
    if (b.host.string().starts_with("/repo"))
      binds.push_back((b.mode == Bind::Mode::ro ? "ro " : "rw ") + b.host.string());
  EXPECT_EQ(binds, (std::vector<std::string>{"rw /repo/sub/p", "ro /repo", "rw /repo/sub/p/build/opforge",
                                             "rw /repo/sub/p/dist"}));
}

}  // namespace opforge::root
