#include "compile/wrap/wrappers.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "cache/layout.h"
#include "compile/cache/launcher.h"
#include "compile/pch/pch.h"
#include "compiler/flags.h"
#include "compiler/host.h"
#include "ops/ops.h"
#include "settings/settings.h"
#include "util/hash.h"
#include "util/strings.h"

namespace opforge::compile {

namespace fs = std::filesystem;

namespace {

/// A gencode option's GPU without its suffix: "90" for -gencode=arch=compute_90a,code=sm_90a.
std::string gencode_base(const std::string& g) {
  auto at = g.find("arch=compute_");
  if (at == std::string::npos) return {};
  std::string n;
  for (std::size_t i = at + 13; i < g.size() && std::isdigit(static_cast<unsigned char>(g[i])); ++i) n += g[i];
  return n;
}

/// The wrapper's lines that put the plan's architectures in place of the project's ($asked), in a
/// compile that asked for some. An arch-specific or family target (sm_90a, sm_100f) whose GPU is
/// in the plan is kept: its kernels (wgmma, TMA) exist only there, and compiled for the plain
/// sm_90 they stop at the project's own #error. The plan's own target for that GPU then gives way
/// to it. The plan's other targets come in when the project asked for any plain target. A compile
/// that asked only for targets of GPUs the plan lacks stops here, naming the file.
std::string enforce_block(const std::vector<std::string>& gencode) {
  std::vector<std::string> bases, codes;
  for (const auto& g : gencode) {
    const std::string b = gencode_base(g);
    if (!b.empty() && std::find(bases.begin(), bases.end(), b) == bases.end()) bases.push_back(b);
    codes.push_back(g.substr(g.rfind('=') + 1));
  }
  std::string out =
      "  kept= covered= plain= opt= sub= missing=\n"
      "  for t in $(printf '%s\\n' \"$asked\" | tr ',=[]' '    '); do\n"
      "    case $t in\n"
      "      -gencode|--generate-code) opt=g; sub=; continue ;;\n"
      "      -arch|--gpu-architecture) opt=a; sub=; continue ;;\n"
      "      -code|--gpu-code) opt=c; sub=; continue ;;\n"
      "      arch|code) sub=$t; continue ;;\n"
      "    esac\n"
      "    [ \"$opt$sub\" = garch ] && continue  # a -gencode's virtual architecture: its code= says what is built\n"
      "    case $t in\n"
      "      sm_*[af]|compute_*[af])\n"
      "        n=${t#*_}; b=${n%?}\n"
      "        case ' " +
      strings::join(bases, " ") +
      " ' in *\" $b \"*)\n"
      "          covered=\"$covered $b \"\n"
      "          for k in $t $([ \"$opt\" = a ] && [ \"${t%%_*}\" = sm ] && echo \"compute_$n\"); do\n"
      "            case \"$kept \" in *\" $k \"*) ;; *) kept=\"$kept $k\" ;; esac\n"
      "          done ;;\n"
      "        *) major=${b%?}; missing=\"$missing $major.${b#\"$major\"}${n#\"$b\"}\" ;;\n"
      "        esac ;;\n"
      "      *) plain=1 ;;\n"
      "    esac\n"
      "  done\n"
      "  if [ -z \"$kept\" ] && [ -z \"$plain\" ]; then\n"
      "    echo \"opforge: ${src:-this nvcc command} asks nvcc only for$asked, GPUs that [arch] list does not "
      "have (it compiles " +
      strings::join(codes, " ") +
      "): add${missing:- its architecture} to [arch] list\" >&2\n"
      "    exit 1\n"
      "  fi\n"
      "  for t in $kept; do\n"
      "    n=${t#*_}\n"
      "    case $t in sm_*) set -- \"$@\" \"-gencode=arch=compute_$n,code=sm_$n\" ;;"
      " *) set -- \"$@\" \"-gencode=arch=compute_$n,code=compute_$n\" ;; esac\n"
      "  done\n"
      "  if [ -n \"$plain\" ]; then\n";
  for (const auto& g : gencode)
    out += "    case \"$covered\" in *\" " + gencode_base(g) + " \"*) ;; *) set -- \"$@\" " + strings::shell_quote(g) +
           " ;; esac\n";
  out += "  fi\n";
  return out;
}

}  // namespace

namespace {

/// `word` in double quotes for sh, where a parameter expansion's pattern must stay literal.
std::string dquote(std::string_view word) {
  std::string out = "\"";
  for (char c : word) {
    if (c == '"' || c == '\\' || c == '$' || c == '`') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

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

std::string rewrite_block(const std::vector<ArgRewrite>& rewrites) {
  if (rewrites.empty()) return {};
  std::string text =
      "# The target machine's torch and CUDA runtime in place of this machine's (a cross-build).\n"
      "n=$#\n"
      "for a do\n"
      "  case $a in\n";
  for (const auto& r : rewrites) {
    const std::string to = dquote(r.to);
    for (const std::string opt : {"-I", "-isystem", "-L", ""}) {
      if (opt == "-isystem" && !r.prefix) continue;
      const std::string from = dquote(opt + r.from);
      text += "    " + from + (r.prefix ? "|" + from + "/*" : std::string()) + ") a=" + dquote(opt) + to + "\"${a#" +
              from + "}\" ;;\n";
    }
  }
  text +=
      "  esac\n"
      "  set -- \"$@\" \"$a\"\n"
      "done\n"
      "shift $n\n";
  return text;
}

NvccWrapper nvcc_wrapper(const fs::path& cache_dir, const fs::path& nvcc, const std::string& stamp,
                         const std::vector<std::string>& gencode, bool random_seed, const CompilerLaunch& launch,
                         bool stable_names, const std::vector<ArgRewrite>& rewrites) {
  const bool launched = !launch.program.empty();
  NvccWrapper w;
  w.gencode = gencode;
  // The project's architecture options are taken out of the command line and written to
  // $OPFORGE_NVCC_ARCH_LOG (what the project asked for, for the build record); with `gencode`, the
  // plan's take their place, so that a setup.py that hardcodes its own list compiles the one asked
  // for. A command without any architecture option keeps nvcc's default, as before.
  const std::string keep = gencode.empty() ? "; set -- \"$@\" \"$a\"" : "";
  w.text =
      "#!/bin/sh\n"
      "# Written by opforge: the toolkit's nvcc without -lineinfo, whose line table records\n"
      "# each source file's modification time (the wheel's bytes would change with it)" +
      std::string(gencode.empty() ? ".\n"
                                  : ",\n# and with the plan's GPU architectures in place of the project's own.\n");
  if (random_seed)
    w.text +=
        "# Each object gets -frandom-seed=<its file name>: without it nvcc names internal-linkage\n"
        "# entities (CCCL's customization-point objects) after its own process id.\n";
  if (stable_names)
    w.text +=
        "# And cicc and cudafe++ a stable name for it (--orig_src_path_name): they derive nvcc's\n"
        "# _INTERNAL_<hash> prefixes from the source's path, which a build server sees elsewhere.\n";
  if (launched)
    w.text += "# Each compile runs through " + launch.program +
              ", with the real host compiler (not opforge's host wrappers, which would\n"
              "# run it a second time inside its own steps).\n";
  // A -ccbin naming the host wrappers: dropped when launched (launch.ccbin takes its place).
  const std::string host_dir = launch.host_dir.empty() ? std::string() : strings::shell_quote(launch.host_dir.string());
  const std::string drop_ccbin = host_dir.empty() ? std::string("__opforge_none__") : host_dir + "|" + host_dir + "/*";
  w.text += rewrite_block(rewrites);
  w.text +=
      "asked= skip= out= next= seeded=" + std::string(launched ? " compile= ccbin= hasccbin=" : "") +
      std::string(gencode.empty() ? "" : " src=") + std::string(stable_names ? " named=" : "") +
      "\n"
      "for a do\n"
      "  shift\n"
      "  if [ -n \"$next\" ]; then out=$a; next=; set -- \"$@\" \"$a\"; continue; fi\n"
      "  if [ -n \"$skip\" ]; then asked=\"$asked $skip $a\"; skip=" +
      keep + "; continue; fi\n" +
      (launched ? "  if [ -n \"$ccbin\" ]; then\n"
                  "    case $a in " +
                      drop_ccbin +
                      ") ;; *) hasccbin=1; set -- \"$@\" \"$ccbin\" \"$a\" ;; esac\n"
                      "    ccbin=; continue\n"
                      "  fi\n"
                : std::string()) +
      "  case $a in\n"
      "    -lineinfo|--generate-line-info) ;;\n"
      "    -o|--output-file) next=1; set -- \"$@\" \"$a\" ;;\n"
      "    -frandom-seed|-frandom-seed=*) seeded=1; set -- \"$@\" \"$a\" ;;\n" +
      std::string(
          stable_names
              ? "    -Xcicc=--orig_src_path_name*|-Xcudafe=--orig_src_path_name*) named=1; set -- \"$@\" \"$a\" ;;\n"
              : "") +
      (launched ? "    -c|--compile) compile=1; set -- \"$@\" \"$a\" ;;\n"
                  "    -ccbin|--compiler-bindir) ccbin=$a ;;\n"
                  "    -ccbin=*|--compiler-bindir=*)\n"
                  "      case ${a#*=} in " +
                      drop_ccbin + ") ;; *) hasccbin=1; set -- \"$@\" \"$a\" ;; esac ;;\n"
                : std::string()) +
      "    -gencode|--generate-code|-arch|--gpu-architecture|-code|--gpu-code) skip=$a" + keep +
      " ;;\n"
      "    -gencode=*|--generate-code=*|-arch=*|--gpu-architecture=*|-code=*|--gpu-code=*) asked=\"$asked $a\"" +
      keep + " ;;\n" + (gencode.empty() ? std::string() : "    *.cu) src=$a; set -- \"$@\" \"$a\" ;;\n") +
      "    *) set -- \"$@\" \"$a\" ;;\n"
      "  esac\n"
      "done\n"
      "if [ -n \"$skip\" ]; then set -- \"$@\" \"$skip\"; fi\n"
      "if [ -n \"$asked\" ]; then\n"
      "  if [ -n \"$OPFORGE_NVCC_ARCH_LOG\" ]; then { printf '%s\\n' \"$asked\" >>\"$OPFORGE_NVCC_ARCH_LOG\"; } "
      "2>/dev/null; fi\n" +
      (gencode.empty() ? std::string("  :\n") : enforce_block(gencode)) + "fi\n";
  if (random_seed)
    w.text += "if [ -n \"$out\" ] && [ -z \"$seeded\" ]; then set -- \"$@\" \"-frandom-seed=${out##*/}\"; fi\n";
  if (stable_names)
    w.text +=
        "if [ -n \"$out\" ] && [ -z \"$named\" ]; then\n"
        "  set -- \"$@\" \"-Xcicc=--orig_src_path_name=${out##*/}\" \"-Xcudafe=--orig_src_path_name=${out##*/}\"\n"
        "fi\n";
  if (launched) {
    w.text += "if [ -z \"$hasccbin\" ]; then set -- \"$@\" -ccbin " + strings::shell_quote(launch.ccbin.string()) +
              "; fi\n"
              "if [ -n \"$compile\" ]; then exec " +
              strings::shell_quote(launch.program) + " " + strings::shell_quote(nvcc.string()) + " \"$@\"; fi\n";
  }
  w.text += "exec " + strings::shell_quote(nvcc.string()) + " \"$@\"\n";
  w.path = cache_dir / "nvcc" / sha256_hex(w.text + stamp).substr(0, 16) / "nvcc";
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

void add_stable_temp_names(std::map<std::string, std::string>& env, std::string_view tree_name) {
  if (!tree_name.empty()) env[kPythonTempVariable] = "/tmp/opforge-py-" + std::string(tree_name);
}

void add_watch_environment(std::map<std::string, std::string>& env, const NetworkWatch& watch,
                           const fs::path& arch_log) {
  auto path = env.find("PYTHONPATH");
  env["PYTHONPATH"] = watch.dir.string() + (path == env.end() || path->second.empty() ? "" : ":" + path->second);
  if (!arch_log.empty()) env[kNvccArchLogVariable] = arch_log.string();
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
                                          const plan::Plan& plan, const std::string& launcher) {
  if (!plan.host || cache_dir.empty()) return std::nullopt;
  const auto via = compiler::invocation(*plan.host);
  // The scripts run the compilers by absolute path: their own folder is first on PATH.
  if (!via.cc.is_absolute() || !via.cxx.is_absolute()) return std::nullopt;
  const bool clang = plan.host->compiler.family == compiler::Family::clang;
  // Precompiled torch headers: the C++ compilers' compiles go through opforge itself (pch/pch.h),
  // which adds -g0 as these scripts do.
  std::string self;
  if (plan.pch)
    for (const auto& a : probe::self_command(fs)) self += (self.empty() ? "" : " ") + strings::shell_quote(a);
  // gcc collects its garbage later ([build] gcc_gc_heap_mib): in every compile's arguments, so that
  // a precompiled header is made with it too, and in the scripts' text (their folder's key).
  const std::string gc = !clang && plan.gcc_gc_heap_kib
                             ? " " + std::string(kGccGcParam) + std::to_string(plan.gcc_gc_heap_kib)
                             : std::string();
  const auto rewrites = cross_rewrites(plan);
  auto script = [&launcher, &self, &cache_dir, &gc, &rewrites](const fs::path& real, bool cxx) {
    const std::string exe = strings::shell_quote(real.string());
    std::string compile = launcher.empty() ? exe : strings::shell_quote(launcher) + " " + exe;
    std::string tail = " \"$@\"" + gc + " -g0";
    const bool pch = cxx && !self.empty();
    if (pch) {
      compile = self + " " + std::string(pch::kCommand) + " --compiler " + exe + " --pch-dir " +
                strings::shell_quote(cache::folder(cache_dir, cache::Kind::pch).string()) +
                (launcher.empty() ? std::string() : " --launcher " + strings::shell_quote(launcher)) + " --";
      tail = " \"$@\"" + gc;
    }
    return std::string("#!/bin/sh\n") + "# Written by opforge: " + real.string() +
           " without debug information when it compiles.\n"
           "# opforge strips the wheel's libraries, so what -g adds is thrown away; -g0 comes last\n"
           "# to override any -g, and the generated code is the same either way.\n" +
           (gc.empty() ? std::string()
                       : "# gcc collects its garbage once its heap passes" + gc +
                             " KiB: less CPU,\n# the same objects ([build] gcc_gc_heap_mib).\n") +
           (launcher.empty() ? std::string() : "# Each compile runs through " + launcher + ".\n") +
           (pch ? "# Each compile runs through opforge, which starts a file that includes torch/extension.h\n"
                  "# from a precompiled copy of that header ([build] pch).\n"
                : "") +
           rewrite_block(rewrites) +
           "for a do\n"
           "  case $a in -c) exec " +
           compile + tail +
           " ;; esac\n"
           "done\n"
           "exec " +
           exe + " \"$@\"\n";
  };
  HostWrappers w;
  std::string key;
  for (const auto& [name, real] : std::vector<std::pair<std::string, fs::path>>{
           {clang ? "clang" : "gcc", via.cc}, {clang ? "clang++" : "g++", via.cxx}, {"cc", via.cc}, {"c++", via.cxx}}) {
    w.files.emplace_back(name, script(real, name == "g++" || name == "c++" || name == "clang++"));
    key += name + "\n" + w.files.back().second + compiler::stamp(fs, real) + "\n";
  }
  w.dir = cache_dir / "host" / sha256_hex(key).substr(0, 16);
  w.cc = w.dir / (clang ? "cc" : "gcc");
  w.cxx = w.dir / (clang ? "c++" : "g++");
  return w;
}

Status write_host_wrappers(probe::FileSystem& fs, const HostWrappers& w) {
  for (const auto& [name, text] : w.files) OPFORGE_CHECK(compiler::write_script(fs, w.dir / name, text));
  return {};
}

Status write_nvcc_wrapper(probe::FileSystem& fs, const NvccWrapper& w) {
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

std::optional<NvccWrapper> default_nvcc_wrapper(probe::Machine m, const plan::Plan& plan) {
  const fs::path cache_dir = settings::cache_dir(m.env);
  if (!plan.cuda.chosen || cache_dir.empty()) return std::nullopt;
  const auto host = default_host_wrappers(m, plan);
  return nvcc_wrapper(cache_dir, plan.cuda.chosen->nvcc, compiler::stamp(m.fs, plan.cuda.chosen->nvcc),
                      enforced_gencode(plan), nvcc_takes_random_seed(plan),
                      nvcc_launch(plan, host ? &*host : nullptr, cache_dir), nvcc_takes_stable_names(plan),
                      cross_rewrites(plan));
}

std::optional<HostWrappers> default_host_wrappers(probe::Machine m, const plan::Plan& plan) {
  const fs::path cache_dir = settings::cache_dir(m.env);
  return host_wrappers(m.fs, cache_dir, plan, wrapper_launch(plan, cache_dir));
}

}  // namespace opforge::compile
