#pragma once
/// Builds inside a root filesystem of an older distribution (a debootstrap root, an unpacked
/// manylinux image), without a container engine: bubblewrap where it runs, else unshare + chroot
/// as root. The root is only read (bubblewrap: bound read-only; chroot: the lower layer of an
/// overlay on a tmpfs), so nothing of it changes; the folders a build needs are bound in at their
/// own paths. Every access to the
/// machine goes through probe::Machine.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "probe/machine.h"
#include "settings/settings.h"
#include "util/error.h"

namespace opforge::root {

namespace fs = std::filesystem;

/// How a command is put inside the root.
enum class Sandbox { bwrap, chroot };
std::string_view sandbox_name(Sandbox s);

struct Bind {
  fs::path host;
  fs::path inside;
  enum class Mode { ro, rw } mode = Mode::ro;
};

/// One command to run inside a root.
struct Jail {
  fs::path root;                           ///< absolute
  std::vector<Bind> binds;                 ///< mounted parents first (sorted by `inside`)
  std::map<std::string, std::string> env;  ///< the whole environment inside
  std::vector<std::string> argv;           ///< the command inside
  fs::path cwd = "/";                      ///< inside
  fs::path scratch;                        ///< chroot: an empty host folder for the overlay's tmpfs
};

/// The host command that runs `jail`: `bwrap ...` with the root's entries bound read-only into its
/// tmpfs `/` (read through `fs`), or `unshare --mount ... sh -c SCRIPT` that mounts the root as
/// the lower layer of an overlay, binds the folders and chroots.
Result<std::vector<std::string>> host_argv(const probe::FileSystem& fs, Sandbox sandbox, const Jail& jail,
                                           const fs::path& tool);

/// The sandbox this machine offers: bubblewrap (0.5 or newer) on PATH, else
/// unshare and chroot (which need root). unsatisfied, naming the package, when neither is there.
struct SandboxChoice {
  Sandbox sandbox;
  fs::path tool;  ///< bwrap's or unshare's path
};
Result<SandboxChoice> choose_sandbox(probe::Machine m);

/// What a root holds for a build: its distribution, glibc, compilers and Python.
struct Info {
  fs::path root;
  std::string os;                            ///< PRETTY_NAME of its os-release ("Debian GNU/Linux 11 (bullseye)")
  std::string os_id;                         ///< ID and ID_LIKE ("debian", "rocky rhel centos fedora")
  int glibc_minor = 0;                       ///< 31 for glibc 2.31; 0 when unknown
  std::string glibc;                         ///< "2.31"
  std::map<std::string, std::string> tools;  ///< "gcc", "g++", "python3", "ninja", "nvcc" → path inside
  std::string gcc_version, python_version;
  std::string python_include;  ///< the folder holding Python.h; empty without python3-dev
  Sandbox sandbox = Sandbox::bwrap;
  /// The host's toolkit bound in (read-only, at its own path); CUDA_HOME names it only when the
  /// root has no nvcc of its own (tools["nvcc"]: Debian's nvidia-cuda-toolkit, a CUDA image).
  std::optional<fs::path> host_toolkit;
};

/// The shell script describe() runs inside the root, and the parser of what it prints (pure).
std::string_view describe_script();
Info parse_describe(std::string_view output);

/// Runs describe_script() inside `root_dir` and parses it. bad_input when the folder is no root
/// filesystem (no /bin/sh, /usr); unsatisfied when no sandbox can run here.
Result<Info> describe(probe::Machine m, const fs::path& root_dir, const fs::path& scratch);

/// The package that brings `tool` (gcc, g++, python3, ninja, python3-dev) on the root's
/// distribution, as its installer names it ("apt-get install g++", "dnf install gcc-c++").
std::string install_hint(const Info& info, std::string_view tool);

/// unsatisfied, naming what to install inside the root, when it lacks a tool a build needs
/// (gcc and g++, and ninja for the native backend).
Status check_tools(const Info& info, bool native);

/// Where opforge itself comes from for the run inside: the executable and its data folder, and,
/// for a dynamically linked opforge, the host's loader and library folder (a development build
/// runs inside with the host's own libraries, read-only; the platform wheel's static binary
/// needs nothing).
struct Self {
  fs::path exe;
  fs::path data_dir;
  bool is_static = false;
  fs::path loader;   ///< the host's ld-linux-x86-64.so.2 (dynamic only)
  fs::path lib_dir;  ///< its folder, the host's libraries
};
Result<Self> find_self(probe::Machine m);

/// The folders inside where opforge's own files are bound.
inline const fs::path kSelfDir = "/.opforge";

/// The argv inside for running opforge with `args` (`build RECIPE ...`).
std::vector<std::string> self_argv(const Self& self, const std::vector<std::string>& args);
/// The binds that bring opforge itself in.
std::vector<Bind> self_binds(const Self& self);

/// Runs `jail` through the machine, its output merged a line at a time into `on_line`; the exit
/// code of the command inside (or of the sandbox when it could not start it).
Result<int> run(probe::Machine m, const SandboxChoice& sandbox, Jail jail,
                const std::function<void(std::string_view)>& on_line);

/// `opforge build|plan` run inside a root: what the host knows of the recipe's folders.
struct Invocation {
  fs::path root;                  ///< the root filesystem (absolute)
  fs::path recipe;                ///< the recipe file (absolute)
  std::string command = "build";  ///< "build" or "plan"
  /// --build-dir / --dist-dir as given (absolute); else the recipe's (build only).
  std::optional<fs::path> build_dir, dist_dir;
  /// The other flags, passed on as they are (-j 4, --glibc 2.31, --cache ccache, ...).
  std::vector<std::string> args;
};

/// What the run inside binds and sets, for `plan --root` and the build's first lines.
struct Prepared {
  Info info;
  SandboxChoice sandbox;
  Jail jail;
};

/// Describes the root, checks its tools (unsatisfied: what to install there), and puts together
/// the run of opforge inside: the recipe's folder, its source, build, dist and cache folders
/// (read-write, at their own paths), the host's CUDA toolkits (read-only, at their own paths),
/// opforge itself, and the environment as the settings table says (settings::inside_root): every
/// variable that changes the wheel, as it is; the host's own state (its loader, Python, session)
/// left out. bad_input, naming the variable, when one that changes the wheel names a folder the
/// build inside cannot see. Host folders it binds are created when missing.
Result<Prepared> prepare(probe::Machine m, const Invocation& inv);

/// What a build record keeps of the root a wheel was built in (inputs.root): its path on the host,
/// distribution, glibc and gcc. `verify` rebuilds such a record in that root, and refuses when the
/// root is gone or is no longer what the record names.
nlohmann::json identity(const Info& info);
/// The opforge running inside a root describes it for the record: describe_script() run with the
/// root's own /bin/sh (no sandbox: it is already inside). `root_path` is the root's path on the host.
Result<Info> describe_from_inside(probe::Machine m, const fs::path& root_path);
/// What differs between a recorded identity and the root as it is now ("glibc: 2.31 in the record,
/// 2.36 now"); empty when it is the same root.
std::vector<std::string> identity_changes(const nlohmann::json& recorded, const Info& now);

/// The variable the run inside carries: its opforge must not enter a root again.
using settings::kInRootVariable;

/// One line about the root for the user: "root: /r (Debian GNU/Linux 11 (bullseye)), glibc 2.31,
/// gcc 10.2.1, Python 3.9.2 (headers: /usr/include/python3.9), ninja; through bubblewrap".
std::string describe_line(const Info& info);

}  // namespace opforge::root
