#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "compiler/links.h"
#include "compiler/resolve.h"
#include "cuda/resolve.h"
#include "probe/fake_machine.h"
#include "test_util.h"

namespace opforge::compiler {
namespace {

namespace sfs = std::filesystem;

using test_util::data;
using test_util::slurp;

TEST(CompilerHostConfig, LimitsFromRealAndVariantHeaders) {
  auto l13 = parse_host_config(data("host_config/13.0.h"));
  EXPECT_EQ(l13.max_gcc, 15);
  EXPECT_EQ(l13.max_clang, 20);
  auto l124 = parse_host_config(data("host_config/12.4.h"));
  EXPECT_EQ(l124.max_gcc, 13);
  EXPECT_EQ(l124.max_clang, 17);
  auto l118 = parse_host_config(data("host_config/11.8.h"));
  EXPECT_EQ(l118.max_gcc, 11);
  EXPECT_EQ(l118.max_clang, 14);
  EXPECT_EQ(parse_host_config("int x;").max_gcc, 0);
}

TEST(CompilerHostConfig, GrammarEdges) {
  auto gcc = [](std::string_view text) { return parse_host_config(text).max_gcc; };
  auto clang = [](std::string_view text) { return parse_host_config(text).max_clang; };
  EXPECT_EQ(gcc("#if __GNUC__ > 13"), 13);
  EXPECT_EQ(gcc("#if\t__GNUC__>9 || defined(X)"), 9);
  EXPECT_EQ(gcc("#elif 0\n#if __GNUC__ >= 13\n#if __GNUC__ > 12"), 12);  // '>=' is not the limit line
  EXPECT_EQ(gcc("#ifdef __GNUC__ > 13"), 0);
  EXPECT_EQ(gcc("#if__GNUC__ > 13"), 0);
  EXPECT_EQ(gcc("#if __GNUC__ > x"), 0);
  EXPECT_EQ(gcc("#if __GNUC__ > 99999999999"), 0);
  EXPECT_EQ(clang("#if __clang_major__ >= 18"), 17);
  EXPECT_EQ(clang("#if __clang_major__ > 17"), 17);
  EXPECT_EQ(clang("#if defined(__clang__) && (__clang_major__ < 3 || __clang_major__ >= 21)"), 20);
  EXPECT_EQ(clang("#if (__clang_major__ >= 0)"), 0);
  EXPECT_EQ(clang("  #if __clang_major__ >= 18"), 0);  // a directive starts the line
  EXPECT_EQ(clang("#if __GRCO_CLANG_COMPILER__ && __clang_major__ >= 30"), 0);
}

TEST(CompilerHostConfig, TableFallback) {
  EXPECT_EQ(table_limits({10, 2}).max_gcc, 8);
  EXPECT_EQ(table_limits({11, 8}).max_gcc, 11);
  EXPECT_EQ(table_limits({12, 6}).max_clang, 18);
  EXPECT_EQ(table_limits({13, 0}).max_gcc, 15);
  probe::FakeMachine fm;
  cuda::Toolkit tk;
  tk.root = "/opt/cuda-10.2";
  tk.include_dir = "/opt/cuda-10.2/include";
  tk.version = {10, 2};
  auto l = limits_for(fm.machine(), tk);
  EXPECT_EQ(l.max_gcc, 8);
  EXPECT_EQ(l.source, "toolchains/cuda-host-compilers.toml");
}

struct Debian {
  probe::FakeMachine fm;
  cuda::Toolkit tk;
  explicit Debian(const std::string& header, bool with_gcc11 = true) {
    fm.env.set("PATH", "/usr/bin");
    for (auto n : {"gcc-12", "g++-12", "clang-14", "clang++-14"})
      fm.fs.add_file(std::string("/usr/bin/") + n, "", 0755);
    fm.fs.add_symlink("/usr/bin/gcc", "gcc-12");
    fm.fs.add_symlink("/usr/bin/g++", "g++-12");
    fm.fs.add_symlink("/usr/bin/clang", "clang-14");
    fm.fs.add_symlink("/usr/bin/clang++", "clang++-14");
    fm.proc.on({"/usr/bin/gcc"}, {0, 0, false, "12.2.0\n", ""});
    fm.proc.on({"/usr/bin/gcc-12"}, {0, 0, false, "12.2.0\n", ""});
    fm.proc.on({"/usr/bin/clang"}, {0, 0, false, "14.0.6\n", ""});
    if (with_gcc11) {
      fm.fs.add_file("/usr/bin/gcc-11", "", 0755);
      fm.fs.add_file("/usr/bin/g++-11", "", 0755);
      fm.proc.on({"/usr/bin/gcc-11"}, {0, 0, false, "11.3.0\n", ""});
    }
    tk.root = "/usr/local/cuda-x";
    tk.include_dir = "/usr/local/cuda-x/include";
    tk.version = {11, 8};
    fm.fs.add_file("/usr/local/cuda-x/include/crt/host_config.h", data(header));
  }
};

TEST(CompilerFind, VersionedNamesDeduplicatedDefaultFirst) {
  Debian d("host_config/11.8.h");
  auto cs = find_installed(d.fm.machine());
  ASSERT_EQ(cs.size(), 3u);
  EXPECT_EQ(cs[0].cxx, "/usr/bin/g++");
  EXPECT_TRUE(cs[0].is_default);
  EXPECT_EQ(cs[0].version, (Version{12, 2, 0}));
  EXPECT_EQ(cs[1].cxx, "/usr/bin/g++-11");
  EXPECT_EQ(cs[2].family, Family::clang);
}

TEST(CompilerResolve, DefaultAcceptedNeedsNoShim) {
  Debian d("host_config/13.0.h");
  auto c = resolve(d.fm.machine(), d.tk, "auto", false, "/tmp/shim");
  ASSERT_TRUE(c) << c.error().render();
  EXPECT_TRUE(c->compiler.is_default);
  EXPECT_FALSE(c->shim_dir);
  EXPECT_EQ(c->limits.source, "/usr/local/cuda-x/include/crt/host_config.h");
}

TEST(CompilerResolve, OldToolkitGetsGcc11ThroughAShim) {
  Debian d("host_config/11.8.h");
  auto c = resolve(d.fm.machine(), d.tk, "auto", false, "/tmp/shim");
  ASSERT_TRUE(c) << c.error().render();
  EXPECT_EQ(c->compiler.cxx, "/usr/bin/g++-11");
  EXPECT_EQ(c->shim_dir, sfs::path("/tmp/shim"));
  ASSERT_TRUE(ensure_shim(d.fm.fs, *c));
  EXPECT_EQ(*d.fm.fs.read_symlink("/tmp/shim/g++"), "/usr/bin/g++-11");
  EXPECT_EQ(*d.fm.fs.read_symlink("/tmp/shim/cc"), "/usr/bin/gcc-11");
  auto before = d.fm.fs.log().size();
  ASSERT_TRUE(ensure_shim(d.fm.fs, *c));  // idempotent: nothing rewritten
  EXPECT_EQ(d.fm.fs.log().size(), before);
}

TEST(CompilerResolve, NoneAcceptedNamesThePackage) {
  Debian d("host_config/11.8.h", /*with_gcc11=*/false);
  d.fm.fs.add_file("/usr/local/cuda-x/include/crt/host_config.h",
                   "#if __GNUC__ > 11\n#error\n#endif\n#if (__clang_major__ >= 14)\n#error\n#endif\n");
  auto c = resolve(d.fm.machine(), d.tk, "auto", false, "/tmp/shim");
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().kind, ErrorKind::unsatisfied);
  EXPECT_NE(c.error().hint.find("apt-get install g++-11"), std::string::npos) << c.error().hint;
  auto escape = resolve(d.fm.machine(), d.tk, "auto", true, "/tmp/shim");
  ASSERT_TRUE(escape);
  EXPECT_TRUE(escape->allow_unsupported);
}

TEST(CompilerResolve, NamedCompilerCheckedAgainstLimits) {
  Debian d("host_config/11.8.h");
  auto ok = resolve(d.fm.machine(), d.tk, "g++-11", false, "/tmp/shim");
  ASSERT_TRUE(ok) << ok.error().render();
  EXPECT_EQ(ok->compiler.cc, "/usr/bin/gcc-11");
  auto too_new = resolve(d.fm.machine(), d.tk, "g++", false, "/tmp/shim");
  ASSERT_FALSE(too_new);
  EXPECT_EQ(too_new.error().kind, ErrorKind::unsatisfied);
  // Not installed: a valid recipe this machine cannot satisfy (exit 3), naming its package.
  auto missing = resolve(d.fm.machine(), d.tk, "g++-7", false, "/tmp/shim");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().kind, ErrorKind::unsatisfied);
  EXPECT_EQ(missing.error().message, "[compiler] host 'g++-7' is not an executable on PATH");
  EXPECT_EQ(missing.error().hint,
            "install it (its package: g++-7), or write \"auto\" or the full path of an installed compiler");
}

TEST(CompilerLink, RefusesNonSymlinksIdempotentUnlinkExact) {
  Debian d("host_config/11.8.h");
  d.fm.fs.add_file("/usr/local/cuda-x/bin/nvcc", "", 0755);
  d.fm.fs.add_file("/usr/local/cuda-x/bin/gcc", "a real file", 0755);
  auto c = *resolve(d.fm.machine(), d.tk, "auto", false, "/tmp/shim");
  auto refused = link_system(d.fm.fs, d.tk, c);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("not a symlink"), std::string::npos);
  EXPECT_EQ(d.fm.fs.type_of("/usr/local/cuda-x/bin/g++"), probe::FileType::none);  // nothing half-done
  ASSERT_TRUE(d.fm.fs.remove("/usr/local/cuda-x/bin/gcc"));
  ASSERT_TRUE(link_system(d.fm.fs, d.tk, c));
  ASSERT_TRUE(link_system(d.fm.fs, d.tk, c));
  EXPECT_EQ(*d.fm.fs.read_symlink("/usr/local/cuda-x/bin/g++"), "/usr/bin/g++-11");
  ASSERT_TRUE(unlink_system(d.fm.fs, d.tk));
  EXPECT_EQ(*d.fm.fs.list_directory("/usr/local/cuda-x/bin"), (std::vector<std::string>{"nvcc"}));
}

TEST(CompilerLink, UnlinkRemovesOnlyWhatLinkMadeAndRestoresWhatItReplaced) {
  Debian d("host_config/11.8.h");
  auto& fs = d.fm.fs;
  fs.add_file("/usr/local/cuda-x/bin/nvcc", "", 0755);
  ASSERT_TRUE(fs.create_symlink("/usr/bin/gcc-10", "/usr/local/cuda-x/bin/gcc"));  // the user's own
  auto c = *resolve(d.fm.machine(), d.tk, "auto", false, "/tmp/shim");
  ASSERT_TRUE(link_system(fs, d.tk, c));
  EXPECT_EQ(*fs.read_symlink("/usr/local/cuda-x/bin/gcc"), "/usr/bin/gcc-11");
  EXPECT_EQ(*fs.read_file("/usr/local/cuda-x/bin/.opforge-links"),
            "g++\t/usr/bin/g++-11\t\ngcc\t/usr/bin/gcc-11\t/usr/bin/gcc-10\n");
  ASSERT_TRUE(link_system(fs, d.tk, c));  // again: the first previous target is kept
  EXPECT_EQ(*fs.read_file("/usr/local/cuda-x/bin/.opforge-links"),
            "g++\t/usr/bin/g++-11\t\ngcc\t/usr/bin/gcc-11\t/usr/bin/gcc-10\n");
  auto n = unlink_system(fs, d.tk);
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 2);
  EXPECT_EQ(*fs.read_symlink("/usr/local/cuda-x/bin/gcc"), "/usr/bin/gcc-10");  // put back
  EXPECT_EQ(fs.type_of("/usr/local/cuda-x/bin/g++"), probe::FileType::none);
  EXPECT_EQ(fs.type_of("/usr/local/cuda-x/bin/.opforge-links"), probe::FileType::none);
  // A second unlink, or one after the user re-pointed a link, leaves everything alone.
  EXPECT_EQ(*unlink_system(fs, d.tk), 0);
  ASSERT_TRUE(link_system(fs, d.tk, c));
  ASSERT_TRUE(fs.create_symlink("/usr/bin/g++-12", "/usr/local/cuda-x/bin/g++"));
  EXPECT_EQ(*unlink_system(fs, d.tk), 1);
  EXPECT_EQ(*fs.read_symlink("/usr/local/cuda-x/bin/g++"), "/usr/bin/g++-12");
  EXPECT_EQ(*fs.read_symlink("/usr/local/cuda-x/bin/gcc"), "/usr/bin/gcc-10");
}

// A tampered .opforge-links: rows naming paths outside bin/, other names, or a previous target
// that is not a compiler are ignored; nothing outside bin/ is touched or re-pointed.
TEST(CompilerLink, UnlinkIgnoresTamperedRows) {
  Debian d("host_config/11.8.h");
  auto& fs = d.fm.fs;
  fs.add_file("/usr/local/cuda-x/bin/nvcc", "", 0755);
  fs.add_symlink("/etc/alternatives/python", "/usr/bin/python3.11");
  fs.add_symlink("/usr/local/cuda-x/bin/ld", "/usr/bin/ld.bfd");
  fs.add_symlink("/usr/local/cuda-x/bin/gcc", "/usr/bin/gcc-11");
  fs.add_file("/usr/local/cuda-x/bin/.opforge-links",
              "../../../../etc/alternatives/python\t/usr/bin/python3.11\t\n"
              "/etc/alternatives/python\t/usr/bin/python3.11\t/tmp/evil\n"
              "ld\t/usr/bin/ld.bfd\t\n"
              "gcc\t/usr/bin/gcc-11\t/tmp/evil\n");
  auto n = unlink_system(fs, d.tk);
  ASSERT_TRUE(n) << n.error().render();
  EXPECT_EQ(*n, 0);
  EXPECT_EQ(*fs.read_symlink("/etc/alternatives/python"), "/usr/bin/python3.11");
  EXPECT_EQ(*fs.read_symlink("/usr/local/cuda-x/bin/ld"), "/usr/bin/ld.bfd");
  EXPECT_EQ(*fs.read_symlink("/usr/local/cuda-x/bin/gcc"), "/usr/bin/gcc-11") << "not re-pointed to /tmp/evil";
}

// A user's own compiler link that is already what opforge would make is not claimed.
TEST(CompilerLink, AnIdenticalLinkOfTheUsersStaysTheirs) {
  Debian d("host_config/11.8.h");
  auto& fs = d.fm.fs;
  fs.add_file("/usr/local/cuda-x/bin/nvcc", "", 0755);
  ASSERT_TRUE(fs.create_symlink("/usr/bin/gcc-11", "/usr/local/cuda-x/bin/gcc"));
  auto c = *resolve(d.fm.machine(), d.tk, "auto", false, "/tmp/shim");
  ASSERT_TRUE(link_system(fs, d.tk, c));
  EXPECT_EQ(*unlink_system(fs, d.tk), 1);  // only g++
  EXPECT_EQ(*fs.read_symlink("/usr/local/cuda-x/bin/gcc"), "/usr/bin/gcc-11");
}

// ---- The old-gcc scenario with the real nvcc, on a view of the real CUDA 13.0 whose
// host_config.h says "gcc > 11" as CUDA 11.8's does.

const sfs::path kReal = "/usr/local/cuda-13.0";

sfs::path make_view() {
  auto view = sfs::temp_directory_path() / ("opforge-view-" + std::to_string(::getpid()));
  sfs::remove_all(view);
  sfs::create_directories(view / "bin");
  for (auto& e : sfs::directory_iterator(kReal / "bin")) {
    auto name = e.path().filename();
    // nvcc finds nvcc.profile (and so $(TOP)) beside its own file: a copy, not a symlink.
    if (name == "nvcc" || name == "nvcc.profile") sfs::copy_file(e.path(), view / "bin" / name);
    else sfs::create_symlink(e.path(), view / "bin" / name);
  }
  for (auto n : {"nvvm", "lib", "dist-info"})
    if (sfs::exists(kReal / n)) sfs::create_symlink(kReal / n, view / n);
  sfs::create_symlink("lib", view / "lib64");
  sfs::create_directories(view / "include" / "crt");
  for (auto& e : sfs::directory_iterator(kReal / "include"))
    if (e.path().filename() != "crt") sfs::create_symlink(e.path(), view / "include" / e.path().filename());
  for (auto& e : sfs::directory_iterator(kReal / "include" / "crt"))
    if (e.path().filename() != "host_config.h")
      sfs::create_symlink(e.path(), view / "include" / "crt" / e.path().filename());
  std::ofstream(view / "include" / "crt" / "host_config.h") << data("host_config/11.8.h");
  sfs::create_directories(view / "targets" / "x86_64-linux");
  sfs::create_symlink("../../include", view / "targets" / "x86_64-linux" / "include");
  sfs::create_symlink("../../lib", view / "targets" / "x86_64-linux" / "lib");
  return view;
}

class OldGccView : public testing::Test {
 protected:
  void SetUp() override {
    auto m = probe::real_machine();
    if (!m.fs.is_executable(kReal / "bin" / "nvcc")) GTEST_SKIP() << "nvcc 13.0 is not available";
    if (!m.fs.is_executable("/usr/bin/g++-11")) OPFORGE_SKIP_UNLESS_CI("g++-11 is not installed");
    view_ = make_view();
    std::ofstream(view_ / "k.cu") << "__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n";
    env_ = probe::FakeEnvironment(m.env.all());
    env_.set("CUDA_HOME", view_.string());
  }
  void TearDown() override {
    if (!view_.empty()) sfs::remove_all(view_);
  }
  probe::Machine machine() {
    auto r = probe::real_machine();
    return probe::Machine{r.fs, r.proc, env_, r.dl};
  }
  probe::ProcessResult nvcc(std::vector<std::string> extra) {
    std::vector<std::string> argv{(view_ / "bin" / "nvcc").string(), "-c",         (view_ / "k.cu").string(), "-o",
                                  (view_ / "k.o").string(),          "-arch=sm_80"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = probe::real_machine().proc.run(probe::Command{.argv = argv, .env = env_.all()});
    EXPECT_TRUE(r);
    return *r;
  }
  sfs::path view_;
  probe::FakeEnvironment env_;
};

TEST_F(OldGccView, DefaultGccFailsShimWithGcc11Succeeds) {
  auto m = machine();
  auto res = cuda::resolve(m, "auto", "/usr/bin/python3");
  ASSERT_TRUE(res) << res.error().render();
  ASSERT_EQ(res->chosen->root, view_);
  EXPECT_EQ(res->chosen->version, (Version{13, 0}));

  auto plain = nvcc({});
  EXPECT_NE(plain.exit_code, 0);
  EXPECT_NE((plain.out + plain.err).find("unsupported GNU version! gcc versions later than 11 are not supported!"),
            std::string::npos)
      << plain.out << plain.err;

  auto choice = resolve(m, *res->chosen, "auto", false, view_ / "shim");
  ASSERT_TRUE(choice) << choice.error().render();
  EXPECT_EQ(choice->limits.max_gcc, 11);
  EXPECT_EQ(choice->compiler.cxx, "/usr/bin/g++-11");
  ASSERT_TRUE(ensure_shim(m.fs, *choice));
  auto shimmed = nvcc({"-ccbin", (view_ / "shim").string()});
  EXPECT_EQ(shimmed.exit_code, 0) << shimmed.out << shimmed.err;
}

TEST_F(OldGccView, SystemLinkOnTheView) {
  auto m = machine();
  auto tk = *cuda::resolve(m, "auto", "/usr/bin/python3")->chosen;
  auto choice = *resolve(m, tk, "auto", false, view_ / "shim");
  auto before = *m.fs.list_directory(view_ / "bin");
  std::ofstream(view_ / "bin" / "gcc") << "not a link";
  EXPECT_FALSE(link_system(m.fs, tk, choice));
  sfs::remove(view_ / "bin" / "gcc");
  ASSERT_TRUE(link_system(m.fs, tk, choice));
  ASSERT_TRUE(link_system(m.fs, tk, choice));
  EXPECT_EQ(sfs::read_symlink(view_ / "bin" / "g++"), "/usr/bin/g++-11");
  // nvcc puts its own bin/ first on PATH: the links alone make the compile work.
  auto linked = nvcc({});
  EXPECT_EQ(linked.exit_code, 0) << linked.out << linked.err;
  ASSERT_TRUE(unlink_system(m.fs, tk));
  EXPECT_EQ(*m.fs.list_directory(view_ / "bin"), before);
}

TEST_F(OldGccView, ToolchainCommandLinksAndUnlinks) {
  auto run = [&](std::vector<std::string> args) {
    std::vector<std::string> argv{OPFORGE_BINARY, "toolchain"};
    argv.insert(argv.end(), args.begin(), args.end());
    return *probe::real_machine().proc.run(probe::Command{.argv = argv, .env = env_.all()});
  };
  auto before = *probe::real_machine().fs.list_directory(view_ / "bin");
  auto link = run({"link", "--system", "--python", "/usr/bin/python3"});
  ASSERT_EQ(link.exit_code, 0) << link.out << link.err;
  EXPECT_NE(link.out.find("g++-11 (gcc 11.3.0)"), std::string::npos) << link.out;
  EXPECT_EQ(sfs::read_symlink(view_ / "bin" / "gcc"), "/usr/bin/gcc-11");
  EXPECT_EQ(run({"link", "--system", "--python", "/usr/bin/python3"}).exit_code, 0);
  auto unlink = run({"unlink", "--system", "--python", "/usr/bin/python3"});
  ASSERT_EQ(unlink.exit_code, 0) << unlink.err;
  EXPECT_EQ(*probe::real_machine().fs.list_directory(view_ / "bin"), before);
  auto none = run({"link", "--python", "/usr/bin/python3"});
  EXPECT_EQ(none.exit_code, 2);
}

TEST(CompilerRealMachine, Gcc12AcceptedByCuda13) {
  auto m = probe::real_machine();
  if (!m.fs.is_executable(kReal / "bin" / "nvcc")) GTEST_SKIP() << "nvcc 13.0 is not available";
  auto r = cuda::discover(m, std::nullopt);
  std::optional<cuda::Toolkit> tk;
  for (auto& c : r.candidates)
    if (c.path == kReal && c.toolkit) tk = c.toolkit;
  ASSERT_TRUE(tk);
  auto choice = resolve(m, *tk, "auto", false, "/nonexistent");
  ASSERT_TRUE(choice) << choice.error().render();
  EXPECT_TRUE(choice->compiler.is_default);
  EXPECT_EQ(choice->compiler.version.major, 12);
  EXPECT_FALSE(choice->shim_dir);
}

}  // namespace
}  // namespace opforge::compiler
