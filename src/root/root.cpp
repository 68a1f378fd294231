#include "root/root.h"

#include <algorithm>

#include "settings/settings.h"
#include "util/json_read.h"
#include "util/strings.h"
#include "util/version.h"
#include "wheel/wheel.h"

namespace opforge::root {

std::string_view sandbox_name(Sandbox s) { return s == Sandbox::bwrap ? "bubblewrap" : "chroot"; }

namespace {

std::vector<Bind> sorted(std::vector<Bind> binds) {
  // Parents before children, so that a folder bound inside another stays visible.
  std::stable_sort(binds.begin(), binds.end(),
                   [](const Bind& a, const Bind& b) { return a.inside.string().size() < b.inside.string().size(); });
  return binds;
}

/// The root read-only in bubblewrap's tmpfs `/`: each entry of a folder bound as it is, except
/// the folders a bind goes into, which are made anew and filled the same way one level down, so
/// that the binds' mount points are made in the tmpfs, never in the root. (bubblewrap 0.8, Debian
/// 12's, has no overlay.)
Status splice(const probe::FileSystem& fs, const fs::path& root, const fs::path& dir, const std::vector<Bind>& binds,
              std::vector<std::string>& a) {
  auto names = fs.list_directory(root / dir.relative_path());
  if (!names) return opforge::unexpected(names.error());
  for (const auto& name : *names) {
    const fs::path inside = dir / name;
    if (dir == "/" && (name == "proc" || name == "dev" || name == "sys" || name == "tmp")) continue;
    const fs::path host = root / inside.relative_path();
    bool bound = false, below = false;
    for (const auto& b : binds) {
      bound |= b.inside == inside;
      below |= b.inside.string().starts_with(inside.string() + "/");
    }
    if (bound) continue;  // the bind takes its place
    const auto type = fs.type_of(host);
    if (type == probe::FileType::symlink) {
      auto target = fs.read_symlink(host);
      if (!target) return opforge::unexpected(target.error());
      a.insert(a.end(), {"--symlink", target->string(), inside.string()});
    } else if (below && type == probe::FileType::directory) {
      a.insert(a.end(), {"--dir", inside.string()});
      OPFORGE_CHECK(splice(fs, root, inside, binds, a));
    } else if (type == probe::FileType::directory || type == probe::FileType::regular) {
      a.insert(a.end(), {"--ro-bind", host.string(), inside.string()});
    }
  }
  return {};
}

Result<std::vector<std::string>> bwrap_argv(const probe::FileSystem& fs, const Jail& jail, const fs::path& tool) {
  std::vector<std::string> a = {tool.string(), "--die-with-parent", "--unshare-pid"};
  OPFORGE_CHECK(splice(fs, jail.root, "/", jail.binds, a));
  a.insert(a.end(), {"--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"});
  for (const auto& b : sorted(jail.binds)) {
    a.push_back(b.mode == Bind::Mode::ro ? "--ro-bind" : "--bind");
    a.push_back(b.host.string());
    a.push_back(b.inside.string());
  }
  a.push_back("--clearenv");
  for (const auto& [k, v] : jail.env) {
    a.push_back("--setenv");
    a.push_back(k);
    a.push_back(v);
  }
  a.push_back("--chdir");
  a.push_back(jail.cwd.string());
  a.push_back("--");
  a.insert(a.end(), jail.argv.begin(), jail.argv.end());
  return a;
}

/// unshare gives the script a mount namespace of its own: every mount goes with it. The root is
/// the lower layer of an overlay whose upper layer is a tmpfs on `scratch`.
std::vector<std::string> chroot_argv(const Jail& jail, const fs::path& tool) {
  using strings::shell_quote;
  std::string s = "set -e\n";
  s += "s=" + shell_quote(jail.scratch.string()) + "\n";
  s += "mount -t tmpfs opforge-root \"$s\"\n";
  s += "mkdir \"$s/upper\" \"$s/work\" \"$s/merged\"\n";
  s += "mount -t overlay overlay -o lowerdir=" + shell_quote(jail.root.string()) +
       ",upperdir=\"$s/upper\",workdir=\"$s/work\" \"$s/merged\"\n";
  s += "m=\"$s/merged\"\n";
  s += "mkdir -p \"$m/proc\" \"$m/dev\" \"$m/tmp\"\n";
  s += "mount -t proc proc \"$m/proc\"\nmount --rbind /dev \"$m/dev\"\nmount -t tmpfs tmpfs \"$m/tmp\"\n";
  for (const auto& b : sorted(jail.binds)) {
    const std::string host = shell_quote(b.host.string()), inside = "\"$m\"" + shell_quote(b.inside.string());
    s += "if [ -d " + host + " ]; then mkdir -p " + inside + "; else mkdir -p \"$(dirname " + inside + ")\"; : > " +
         inside + "; fi\n";
    s += "mount --bind " + host + " " + inside + "\n";
    if (b.mode == Bind::Mode::ro) s += "mount -o remount,bind,ro " + inside + "\n";
  }
  s += "exec chroot \"$m\" /usr/bin/env -i";
  for (const auto& [k, v] : jail.env) s += " " + shell_quote(k + "=" + v);
  s += " /bin/sh -c 'cd \"$0\" && exec \"$@\"' " + shell_quote(jail.cwd.string());
  for (const auto& arg : jail.argv) s += " " + shell_quote(arg);
  s += "\n";
  return {tool.string(), "--mount", "--propagation", "private", "--", "/bin/sh", "-c", s};
}

/// The first executable `name` on the machine's PATH.
std::optional<fs::path> on_path(probe::Machine m, const std::string& name) {
  std::string path = settings::path(m.env);
  if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& dir : strings::split(path, ':'))
    if (!dir.empty() && m.fs.is_executable(fs::path(dir) / name)) return fs::path(dir) / name;
  return std::nullopt;
}

}  // namespace

Result<std::vector<std::string>> host_argv(const probe::FileSystem& fs, Sandbox sandbox, const Jail& jail,
                                           const fs::path& tool) {
  if (sandbox == Sandbox::bwrap) return bwrap_argv(fs, jail, tool);
  return chroot_argv(jail, tool);
}

Result<SandboxChoice> choose_sandbox(probe::Machine m) {
  std::string why;
  // OPFORGE_ROOT_SANDBOX=chroot: as root where bubblewrap is installed but user namespaces are not allowed.
  const auto forced = OPFORGE_TRY(settings::root_sandbox(m.env)).value_or("");
  if (auto bwrap = forced == "chroot" ? std::nullopt : on_path(m, "bwrap")) {
    // "bubblewrap 0.8.0": --symlink, --dir, --clearenv and --die-with-parent are all older.
    auto v = m.proc.run({.argv = {bwrap->string(), "--version"}, .timeout = std::chrono::seconds(10)});
    auto words = v && v->ok() ? strings::split(strings::trim(v->out), ' ') : std::vector<std::string>{};
    auto version = words.size() == 2 ? parse_version(words[1]) : std::nullopt;
    if (version && *version >= *parse_version("0.5")) return SandboxChoice{Sandbox::bwrap, *bwrap};
    why = bwrap->string() + " is " + (words.size() == 2 ? words[1] : "of an unknown version") +
          ", older than 0.5 (no --clearenv); ";
  }
  auto unshare = forced == "bwrap" ? std::nullopt : on_path(m, "unshare");
  if (unshare && on_path(m, "chroot")) return SandboxChoice{Sandbox::chroot, *unshare};
  return unsatisfied(why +
                         "no sandbox to build inside a root: neither bubblewrap 0.5 or newer (bwrap) nor "
                         "unshare and chroot are on PATH",
                     "install bubblewrap (apt-get install bubblewrap; dnf install bubblewrap), or util-linux and "
                     "coreutils and run as root");
}

std::string_view describe_script() {
  return R"SH(. /etc/os-release 2>/dev/null || true
echo "os=$PRETTY_NAME"
echo "os_id=$ID $ID_LIKE"
echo "glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null)"
for t in gcc g++ python3 ninja nvcc; do p=$(command -v $t 2>/dev/null) && echo "tool.$t=$p"; done
[ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null 2>&1 && echo "tool.nvcc=/usr/local/cuda/bin/nvcc"
command -v gcc >/dev/null 2>&1 && echo "gcc_version=$(gcc -dumpfullversion -dumpversion 2>/dev/null)"
command -v python3 >/dev/null 2>&1 && python3 -c 'import os, sys, sysconfig
print("python_version=%d.%d.%d" % sys.version_info[:3])
i = sysconfig.get_path("include")
print("python_include=" + (i if os.path.exists(os.path.join(i, "Python.h")) else ""))' 2>/dev/null
exit 0
)SH";
}

Info parse_describe(std::string_view output) {
  Info info;
  for (const auto& line : strings::split(output, '\n')) {
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq), value(strings::trim(line.substr(eq + 1)));
    // What a root's files say is shown as text: a PRETTY_NAME with terminal sequences is escaped.
    if (key == "os") info.os = strings::cut(value, 100);
    else if (key == "os_id") info.os_id = strings::cut(value, 100);
    else if (key == "glibc" && value.starts_with("glibc ")) {
      info.glibc = strings::cut(value.substr(6), 40);
      auto parts = strings::split(info.glibc, '.');
      if (parts.size() >= 2) info.glibc_minor = std::atoi(parts[1].c_str());
    } else if (key.starts_with("tool.") && !value.empty()) info.tools[key.substr(5)] = value;
    else if (key == "gcc_version") info.gcc_version = strings::cut(value, 60);
    else if (key == "python_version") info.python_version = strings::cut(value, 60);
    else if (key == "python_include") info.python_include = value;
  }
  return info;
}

std::string install_hint(const Info& info, std::string_view tool) {
  const bool rpm = info.os_id.find("rhel") != std::string::npos || info.os_id.find("fedora") != std::string::npos ||
                   info.os_id.find("centos") != std::string::npos;
  std::string package(tool);
  if (tool == "ninja") package = "ninja-build";
  else if (tool == "g++" && rpm) package = "gcc-c++";
  else if (tool == "python3-dev" && rpm) package = "python3-devel";
  return rpm ? "dnf install " + package : "apt-get install " + package;
}

Status check_tools(const Info& info, bool native) {
  // python3 is not asked for: a recipe may name another Python ([cuda] python, a manylinux image's
  // /opt/python/...), and the plan inside says what its Python lacks.
  std::vector<std::string> want = {"gcc", "g++"};
  if (native) want.push_back("ninja");
  std::vector<std::string> missing, commands;
  for (const auto& t : want)
    if (!info.tools.contains(t)) {
      missing.push_back(t);
      commands.push_back(install_hint(info, t));
    }
  if (missing.empty()) return {};
  return unsatisfied("the root " + info.root.string() + " (" + (info.os.empty() ? "unknown system" : info.os) +
                         ") has no " + strings::join(missing, ", ") + " on its PATH",
                     "install them inside the root, e.g. chroot " + info.root.string() + " " +
                         strings::join(commands, "; ") + " (or debootstrap --include=... when making it)");
}

Result<Info> describe(probe::Machine m, const fs::path& root_dir, const fs::path& scratch) {
  if (m.fs.resolved_type(root_dir) != probe::FileType::directory)
    return bad_input("root " + root_dir.string() + " is not a folder",
                     "pass a root filesystem: debootstrap's target folder, or an unpacked manylinux image");
  if (m.fs.resolved_type(root_dir / "usr") != probe::FileType::directory ||
      m.fs.type_of(root_dir / "bin/sh") == probe::FileType::none)
    return bad_input("root " + root_dir.string() + " is not a root filesystem (no /usr, no /bin/sh in it)",
                     "pass a root filesystem: debootstrap's target folder, or an unpacked manylinux image");
  auto sandbox = OPFORGE_TRY(choose_sandbox(m));
  Jail jail;
  jail.root = root_dir;
  jail.scratch = scratch;
  jail.env = {{"PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, {"LANG", "C.UTF-8"}};
  jail.argv = {"/bin/sh", "-c", std::string(describe_script())};
  OPFORGE_CHECK(m.fs.create_directories(scratch));
  auto ran = OPFORGE_TRY(m.proc.run({.argv = OPFORGE_TRY(host_argv(m.fs, sandbox.sandbox, jail, sandbox.tool)),
                                     .timeout = std::chrono::seconds(60)}));
  if (!ran.ok())
    return unsatisfied(std::string(sandbox_name(sandbox.sandbox)) + " could not run a shell inside the root " +
                           root_dir.string() + ": " + strings::cut(strings::trim(ran.err + ran.out), 400),
                       sandbox.sandbox == Sandbox::chroot
                           ? "chroot needs root; or install bubblewrap (apt-get install bubblewrap)"
                           : "is creating user namespaces allowed here (sysctl kernel.unprivileged_userns_clone)? "
                             "As root, chroot is used when bwrap is not on PATH");
  Info info = parse_describe(ran.out);
  info.root = root_dir;
  info.sandbox = sandbox.sandbox;
  return info;
}

nlohmann::json identity(const Info& info) {
  return {{"path", info.root.string()}, {"os", info.os}, {"glibc", info.glibc}, {"gcc", info.gcc_version}};
}

Result<Info> describe_from_inside(probe::Machine m, const fs::path& root_path) {
  auto ran = OPFORGE_TRY(
      m.proc.run({.argv = {"/bin/sh", "-c", std::string(describe_script())}, .timeout = std::chrono::seconds(60)}));
  if (!ran.ok())
    return failure("could not describe the root from inside it: " +
                   strings::cut(strings::trim(ran.err + ran.out), 400));
  Info info = parse_describe(ran.out);
  info.root = root_path;
  return info;
}

std::vector<std::string> identity_changes(const nlohmann::json& recorded, const Info& now) {
  std::vector<std::string> out;
  const nlohmann::json current = identity(now);
  for (const char* key : {"os", "glibc", "gcc"}) {
    const auto was = util::json_read::text(recorded, key).value_or("");
    const auto is = current[key].get<std::string>();
    if (was != is)
      out.push_back(std::string(key) + ": " + (was.empty() ? "none" : was) + " in the record, " +
                    (is.empty() ? "none" : is) + " now");
  }
  return out;
}

Result<Self> find_self(probe::Machine m) {
  Self self;
  self.exe = OPFORGE_TRY(m.fs.canonical("/proc/self/exe"));
  self.data_dir = probe::data_dir(m.fs);
  auto bytes = OPFORGE_TRY(m.fs.read_file(self.exe, wheel::Limits{}.entry_bytes));
  auto elf = OPFORGE_TRY(wheel::read_elf(bytes));
  self.is_static = elf.needed.empty();
  if (self.is_static) return self;
  auto loader = m.fs.canonical("/lib64/ld-linux-x86-64.so.2");
  if (!loader)
    return unsatisfied("this opforge (" + self.exe.string() +
                           ") is linked dynamically and the host's loader /lib64/ld-linux-x86-64.so.2 is not there",
                       "use the static opforge of the platform wheel (scripts/dist) to build inside a root");
  self.loader = *loader;
  self.lib_dir = loader->parent_path();
  return self;
}

std::vector<Bind> self_binds(const Self& self) {
  std::vector<Bind> b = {{self.exe, kSelfDir / "bin/opforge", Bind::Mode::ro},
                         {self.data_dir, kSelfDir / "share/opforge", Bind::Mode::ro}};
  if (!self.is_static) b.push_back({self.lib_dir, kSelfDir / "host-lib", Bind::Mode::ro});
  return b;
}

std::vector<std::string> self_argv(const Self& self, const std::vector<std::string>& args) {
  std::vector<std::string> a;
  // The host's loader runs the host's opforge with the host's libraries; the programs it starts
  // are the root's, with the root's loader and libraries (no LD_LIBRARY_PATH is set).
  if (!self.is_static)
    a = {(kSelfDir / "host-lib" / self.loader.filename()).string(), "--library-path", (kSelfDir / "host-lib").string()};
  a.push_back((kSelfDir / "bin/opforge").string());
  a.insert(a.end(), args.begin(), args.end());
  return a;
}

Result<int> run(probe::Machine m, const SandboxChoice& sandbox, Jail jail,
                const std::function<void(std::string_view)>& on_line) {
  OPFORGE_CHECK(m.fs.create_directories(jail.scratch));
  probe::Command cmd;
  cmd.argv = OPFORGE_TRY(host_argv(m.fs, sandbox.sandbox, jail, sandbox.tool));
  cmd.output = probe::Output::lines;
  cmd.on_line = on_line;
  auto ran = OPFORGE_TRY(m.proc.run(cmd));
  return ran.exit_code < 0 ? 128 + ran.signal : ran.exit_code;
}

}  // namespace opforge::root
