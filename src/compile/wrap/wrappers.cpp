#include "compile/wrap/wrappers.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "cache/layout.h"
#include "compile/compiler_cache/launcher.h"
#include "compile/pch/pch.h"
#include "compile/wrap/wrap_command.h"
#include "compiler/flags.h"
#include "compiler/host.h"
#include "ops/ops.h"
#include "settings/settings.h"
#include "util/hash.h"
#include "util/strings.h"

namespace opforge::compile {

namespace fs = std::filesystem;

std::vector<ArgRewrite> cross_rewrites(const plan::Plan& plan) {
  std::vector<ArgRewrite> out;
  if (!plan.cross() || !plan.cross_command) return out;
  if (plan.target_torch && plan.cuda.torch && !plan.cuda.torch->torch_dir.empty())
    out.push_back({plan.cuda.torch->torch_dir.lexically_normal().string(), plan.target_torch->torch_dir.string()});
  if (plan.cuda_target && plan.cuda.chosen) {
    // torch links $CUDA_HOME/lib64; the toolkit's own name for it may be targets/x86_64-linux/lib.
    std::vector<fs::path> dirs{plan.cuda.chosen->lib_dir, plan.cuda.chosen->root / "lib64"};
    for (const auto& d : dirs) {
      const std::string from = d.lexically_normal().string();
      if (std::none_of(out.begin(), out.end(), [&](const ArgRewrite& r) { return r.from == from; }))
        out.push_back({from, plan.cuda_target->lib_dir.string(), false});
    }
  }
  return out;
}

NvccWrapper nvcc_wrapper(const fs::path& cache_dir, const std::vector<std::string>& self, const fs::path& nvcc,
                         const std::string& stamp, const std::vector<std::string>& gencode, bool random_seed,
                         const CompilerLaunch& launch, bool stable_names, const std::vector<ArgRewrite>& rewrites) {
  const NvccRule rule{.nvcc = nvcc,
                      .gencode = gencode,
                      .random_seed = random_seed,
                      .stable_names = stable_names,
                      .launcher = launch.program,
                      .ccbin = launch.ccbin,
                      .host_dir = launch.host_dir,
                      .rewrites = rewrites};
  NvccWrapper w;
  w.gencode = gencode;
  w.rule = rule_json(rule);
  const fs::path dir = cache_dir / "nvcc" / sha256_hex(w.rule + strings::join(self, " ") + "\n" + stamp).substr(0, 16);
  w.path = dir / "nvcc";
  std::string run;
  for (const auto& a : self) run += strings::shell_quote(a) + " ";
  w.text =
      "#!/bin/sh\n"
      "# Written by opforge: " +
      nvcc.string() +
      " by opforge's rule for it (rule.json beside this script):\n"
      "# without -lineinfo, whose line table records each source file's modification time\n" +
      std::string(gencode.empty() ? "" : "# with the plan's GPU architectures in place of the project's own\n") +
      std::string(random_seed ? "# each object with -frandom-seed=<its file name> (else nvcc names internal-linkage\n"
                                "# entities after its own process id)\n"
                              : "") +
      std::string(stable_names
                      ? "# with a stable name for cicc and cudafe++ (--orig_src_path_name), which a build server\n"
                        "# would otherwise derive from where it sees the source\n"
                      : "") +
      (launch.program.empty() ? std::string() : "# each compile through " + launch.program + "\n") + "exec " + run +
      std::string(kNvccCommand) + " \"${0%/*}/rule.json\" \"$@\"\n";
  return w;
}

namespace {

/// The comma-separated items of a code= value: "sm_80", "[sm_90,compute_90]".
std::vector<std::string> code_items(std::string_view v) {
  if (!v.empty() && v.front() == '[') v.remove_prefix(1);
  if (!v.empty() && v.back() == ']') v.remove_suffix(1);
  std::vector<std::string> out;
  for (auto& item : strings::split(v, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

/// The targets of one option's value: "arch=compute_80,code=sm_80" (-gencode), "sm_90" (-arch),
/// "sm_80,compute_80" (-code).
void add_targets(std::string_view option, std::string_view value, std::set<std::string>& out) {
  if (option == "-gencode" || option == "--generate-code") {
    std::string arch;
    bool has_code = false;
    auto code_at = value.find("code=");
    auto arch_at = value.find("arch=");
    if (arch_at != std::string_view::npos) {
      auto end = value.find(',', arch_at);
      arch = std::string(value.substr(arch_at + 5, end == std::string_view::npos ? end : end - arch_at - 5));
    }
    if (code_at != std::string_view::npos) {
      has_code = true;
      for (auto& item : code_items(value.substr(code_at + 5))) out.insert(item);
    }
    if (!has_code && !arch.empty()) out.insert(arch);
    return;
  }
  for (auto& item : code_items(value)) {
    if (item == "all" || item == "all-major" || item == "native") {
      out.insert(item);
    } else if ((option == "-arch" || option == "--gpu-architecture") && item.starts_with("sm_")) {
      out.insert(item);
      out.insert("compute_" + item.substr(3));
    } else {
      out.insert(item);
    }
  }
}

}  // namespace

std::vector<std::string> project_arch_targets(std::string_view log) {
  std::set<std::string> out;
  static const std::vector<std::string_view> options = {"-gencode",           "--generate-code", "-arch",
                                                        "--gpu-architecture", "-code",           "--gpu-code"};
  for (auto& line : strings::split(log, '\n')) {
    auto words = strings::split(line, ' ');
    for (std::size_t i = 0; i < words.size(); ++i) {
      std::string_view w = words[i];
      for (auto opt : options) {
        if (w == opt && i + 1 < words.size()) {
          add_targets(opt, words[++i], out);
          break;
        }
        if (w.size() > opt.size() && w.starts_with(opt) && w[opt.size()] == '=') {
          add_targets(opt, w.substr(opt.size() + 1), out);
          break;
        }
      }
    }
  }
  // sm before compute, each by number: sm_75 sm_80 sm_90a compute_90
  std::vector<std::string> sorted(out.begin(), out.end());
  auto key = [](const std::string& t) {
    const bool ptx = t.starts_with("compute_");
    const std::string num = t.substr(t.find('_') == std::string::npos ? 0 : t.find('_') + 1);
    std::size_t digits = 0;
    while (digits < num.size() && num[digits] >= '0' && num[digits] <= '9') ++digits;
    return std::make_tuple(ptx, digits, num);
  };
  std::sort(sorted.begin(), sorted.end(), [&](auto& a, auto& b) { return key(a) < key(b); });
  return sorted;
}

NetworkWatch network_watch(const fs::path& cache_dir) {
  NetworkWatch w;
  w.text = R"(# Written by opforge for command builds: a build that reaches the network says so.
# Each URL opened and each address connected to is printed once, to stderr:
#   opforge: network: <what> (the build reached the network: ...)
import os
import sys

_seen = set()


def _say(what):
    if what in _seen:
        return
    _seen.add(what)
    try:
        sys.stderr.write("opforge: network: " + what + " (the build reached the network: it fails "
                         "where there is none, and fetches unverified files where there is; look "
                         "for the project's switch to build from source)\n")
        sys.stderr.flush()
    except Exception:
        pass


def _hook(event, args):
    try:
        if event == "urllib.Request":
            _say(str(args[3] or "GET") + " " + str(args[0]))
        elif event == "socket.connect":
            address = args[1]
            if isinstance(address, tuple) and len(address) >= 2:
                _say("connect " + str(address[0]) + ":" + str(address[1]))
    except Exception:
        pass


sys.addaudithook(_hook)


def _stable_temp_names():
    # scikit-build-core stages the wheel in a new tempfile.TemporaryDirectory() and configures
    # CMake with it as CMAKE_INSTALL_PREFIX, which a project's configure_file writes into the wheel
    # (llama.cpp's lib/pkgconfig/llama.pc): Python's temporary names are made the same every build,
    # in a folder of the scratch tree's content hash.
    folder = os.environ.get("OPFORGE_PYTHON_TMPDIR")
    if not folder:
        return
    try:
        import random
        import tempfile
        os.makedirs(folder, exist_ok=True)

        class _Names(tempfile._RandomNameSequence):
            @property
            def rng(self):
                if getattr(self, "_opforge_pid", None) != os.getpid():  # a fork starts afresh
                    self._opforge_pid, self._opforge_rng = os.getpid(), random.Random("opforge")
                return self._opforge_rng

        tempfile.tempdir = folder
        tempfile._name_sequence = _Names()
    except Exception:
        pass


_stable_temp_names()


def _shadowed():
    # The sitecustomize this file hides (a distribution's, a virtual environment's), if any.
    import importlib.machinery
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


_shadowed()
)";
  w.dir = cache_dir / "pywatch" / sha256_hex(w.text).substr(0, 16);
  return w;
}

Status write_network_watch(probe::FileSystem& fs, const NetworkWatch& w) {
  return compiler::write_script(fs, w.dir / "sitecustomize.py", w.text);
}

void add_stable_temp_names(settings::ChildEnv& env, std::string_view tree_name) {
  if (!tree_name.empty()) env.set(kPythonTempVariable, "/tmp/opforge-py-" + std::string(tree_name));
}

void add_watch_environment(settings::ChildEnv& env, const NetworkWatch& watch, const fs::path& arch_log) {
  env.prepend_path("PYTHONPATH", watch.dir.string());
  if (!arch_log.empty()) env.set(kNvccArchLogVariable, arch_log.string());
}

bool nvcc_takes_stable_names(const plan::Plan& plan) {
  return plan.cuda.chosen &&
         compiler::accepts(compiler::Tool::nvcc, "-Xcicc=--orig_src_path_name", plan.cuda.chosen->version) &&
         compiler::accepts(compiler::Tool::nvcc, "-Xcudafe=--orig_src_path_name", plan.cuda.chosen->version);
}

bool nvcc_takes_random_seed(const plan::Plan& plan) {
  return plan.cuda.chosen && compiler::accepts(compiler::Tool::nvcc, "-frandom-seed", plan.cuda.chosen->version);
}

std::vector<std::string> enforced_gencode(const plan::Plan& plan) {
  std::vector<std::string> out;
  if (!plan.recipe.arch.enforce) return out;
  for (const auto& a : plan.arch.arches)
    for (auto& g : a.gencode()) out.push_back(g);
  return out;
}

std::optional<HostWrappers> host_wrappers(const probe::FileSystem& fs, const fs::path& cache_dir,
                                          const plan::Plan& plan, const std::string& launcher,
                                          std::vector<std::string> self) {
  if (!plan.host || cache_dir.empty()) return std::nullopt;
  const auto via = compiler::invocation(*plan.host);
  // The rules name the compilers by absolute path: the scripts' own folder is first on PATH.
  if (!via.cc.is_absolute() || !via.cxx.is_absolute()) return std::nullopt;
  const bool clang = plan.host->compiler.family == compiler::Family::clang;
  if (self.empty()) self = probe::self_command(fs);
  if (self.empty()) self = {"opforge"};  // /proc unreadable: the one on PATH
  std::string run;
  for (const auto& a : self) run += strings::shell_quote(a) + " ";
  // gcc collects its garbage later ([build] gcc_gc_heap_mib): in every compile's arguments, so that
  // a precompiled header is made with it too.
  const std::string gc =
      !clang && plan.gcc_gc_heap_kib ? std::string(kGccGcParam) + std::to_string(plan.gcc_gc_heap_kib) : std::string();
  const auto rewrites = cross_rewrites(plan);
  HostWrappers w;
  // Another opforge may read the rules another way: its stamp in the folder's key, as the compilers'.
  std::string key = run + "\n" + compiler::stamp(fs, self.back()) + "\n";
  for (const auto& [name, real] : std::vector<std::pair<std::string, fs::path>>{
           {clang ? "clang" : "gcc", via.cc}, {clang ? "clang++" : "g++", via.cxx}, {"cc", via.cc}, {"c++", via.cxx}}) {
    const bool cxx = name == "g++" || name == "c++" || name == "clang++";
    // Precompiled torch headers: the C++ compilers' compiles go through __host-compile (pch/pch.h).
    const HostRule rule{.compiler = real,
                        .gc_param = gc,
                        .launcher = launcher,
                        .rewrites = rewrites,
                        .pch_dir = cxx && plan.pch ? cache::folder(cache_dir, cache::Kind::pch) : fs::path()};
    const std::string rule_file = name + ".rule.json";
    const std::string script =
        "#!/bin/sh\n"
        "# Written by opforge: " +
        real.string() + " by opforge's rule for it (" + rule_file +
        " beside this script):\n"
        "# without debug information when it compiles (-g0 last: opforge strips the wheel's libraries, so\n"
        "# what -g adds is thrown away, and the generated code is the same either way)\n" +
        (gc.empty() ? std::string()
                    : "# gcc collecting its garbage once its heap passes " + gc.substr(gc.find('=', 8) + 1) +
                          " KiB ([build] gcc_gc_heap_mib)\n") +
        (launcher.empty() ? std::string() : "# each compile through " + launcher + "\n") +
        (rule.pch_dir.empty() ? std::string()
                              : "# a file that includes torch/extension.h started from a precompiled copy of it\n") +
        "exec " + run + std::string(kHostCommand) + " \"${0%/*}/" + rule_file + "\" \"$@\"\n";
    w.files.emplace_back(name, script);
    w.rules.emplace_back(rule_file, host_rule_json(rule));
    key += name + "\n" + script + w.rules.back().second + compiler::stamp(fs, real) + "\n";
  }
  w.dir = cache_dir / "host" / sha256_hex(key).substr(0, 16);
  w.cc = w.dir / (clang ? "cc" : "gcc");
  w.cxx = w.dir / (clang ? "c++" : "g++");
  return w;
}

namespace {

/// `text` into `path` unless it holds that already (the wrappers' folder is named by a hash of it).
Status write_rule(probe::FileSystem& fs, const fs::path& path, const std::string& text) {
  if (fs.read_file(path, text.size() + 1).value_or("") == text) return {};
  OPFORGE_CHECK(fs.create_directories(path.parent_path()));
  return fs.write_file_atomic(path, text);
}

}  // namespace

Status write_host_wrappers(probe::FileSystem& fs, const HostWrappers& w) {
  for (const auto& [name, text] : w.rules) OPFORGE_CHECK(write_rule(fs, w.dir / name, text));
  for (const auto& [name, text] : w.files) OPFORGE_CHECK(compiler::write_script(fs, w.dir / name, text));
  return {};
}

Status write_nvcc_wrapper(probe::FileSystem& fs, const NvccWrapper& w) {
  // Unchanged when the same (the folder's name is a hash of both): ccache keys on the script's mtime.
  OPFORGE_CHECK(write_rule(fs, w.path.parent_path() / "rule.json", w.rule));
  return compiler::write_script(fs, w.path, w.text);
}

CompilerLaunch nvcc_launch(const plan::Plan& plan, const HostWrappers* host, const fs::path& cache_dir) {
  CompilerLaunch out;
  out.program = wrapper_launch(plan, cache_dir);
  if (out.program.empty()) return out;
  // The compiler the host wrappers run, or the plan's own; none: nvcc's default (gcc on PATH).
  if (plan.host) out.ccbin = compiler::invocation(*plan.host).cxx;
  if (out.ccbin.empty()) out.ccbin = "g++";
  if (host) out.host_dir = host->dir;
  return out;
}

NvccWrapper plan_nvcc_wrapper(const probe::FileSystem& fs, const plan::Plan& plan, const fs::path& cache_dir,
                              const HostWrappers* host) {
  auto self = probe::self_command(fs);
  if (self.empty()) self = {"opforge"};  // /proc unreadable: the one on PATH
  // Another opforge may read the rule another way: its stamp in the wrapper's key, as nvcc's.
  const std::string stamp = compiler::stamp(fs, plan.cuda.chosen->nvcc) + "\n" + compiler::stamp(fs, self.back());
  return nvcc_wrapper(cache_dir, self, plan.cuda.chosen->nvcc, stamp, enforced_gencode(plan),
                      nvcc_takes_random_seed(plan), nvcc_launch(plan, host, cache_dir), nvcc_takes_stable_names(plan),
                      cross_rewrites(plan));
}

std::optional<NvccWrapper> default_nvcc_wrapper(probe::Machine m, const plan::Plan& plan) {
  const fs::path cache_dir = settings::cache_dir(m.env);
  if (!plan.cuda.chosen || cache_dir.empty()) return std::nullopt;
  const auto host = default_host_wrappers(m, plan);
  return plan_nvcc_wrapper(m.fs, plan, cache_dir, host ? &*host : nullptr);
}

std::optional<HostWrappers> default_host_wrappers(probe::Machine m, const plan::Plan& plan) {
  const fs::path cache_dir = settings::cache_dir(m.env);
  return host_wrappers(m.fs, cache_dir, plan, wrapper_launch(plan, cache_dir));
}

}  // namespace opforge::compile
