#include "compile/native.h"

#include <algorithm>
#include <set>

#include "compile/compiler_cache.h"
#include "compile/op_steps.h"
#include "compiler/flags.h"
#include "compiler/host.h"
#include "probe/json_cache.h"
#include "util/strings.h"

namespace opforge::compile {
namespace {

enum class Lang { c, cxx, cuda };

std::optional<Lang> language_of(const fs::path& source) {
  auto ext = source.extension().string();
  if (ext == ".c") return Lang::c;
  if (ext == ".cpp" || ext == ".cc" || ext == ".cxx") return Lang::cxx;
  if (ext == ".cu") return Lang::cuda;
  return std::nullopt;
}

/// A path on a build line of build.ninja: '$', ' ' and ':' are escaped with '$'.
std::string ninja_escape_path(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == '$' || c == ' ' || c == ':') out += '$';
    out += c;
  }
  return out;
}

std::string ninja_escape_value(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

/// The object of `source` under the op's object folder: a source in a sibling folder
/// ("../utils/x.cpp", inside the source tree) gets "_up_" for "..", so no object path leaves
/// obj/<op>/ whatever the manifest says.
fs::path object_path(const fs::path& obj_dir, const fs::path& source) {
  fs::path rel;
  for (const auto& part : source.lexically_normal().relative_path()) rel /= part == ".." ? fs::path("_up_") : part;
  return obj_dir / (rel.string() + ".o");
}

/// A string build.ninja cannot hold: ninja has no escape for a line break (and '\0' ends the
/// text), nor for '|' in a path. The manifest refuses these with file:line:col; this check covers
/// every other source of a string (recipe paths, toolkit and compiler paths, flags).
Status check_ninja_string(std::string_view s, bool path) {
  for (char c : s)
    if (c == '\n' || c == '\r' || c == '\0' || (path && c == '|'))
      return bad_input("cannot write build.ninja: '" + strings::cut(s) + "' contains " +
                           (c == '|' ? std::string("'|'") : std::string("a line break or NUL")),
                       "rename the path or remove the character from the flag");
  return {};
}

/// nvcc runs its own steps through /bin/sh inside double quotes, where '$' and '`' still
/// expand: a path with "$x" loses it, and a flag "-DX=`cmd`" runs cmd (CUDA 13.0's nvcc, tried).
/// No argument of an nvcc step may hold either.
Status check_nvcc_argument(std::string_view a) {
  auto at = a.find_first_of("$`");
  if (at == std::string_view::npos) return {};
  return bad_input(
      "cannot compile with nvcc: the argument '" + strings::cut(a) + "' contains '" + std::string(1, a[at]) +
          "', which nvcc's own shell would expand (or run)",
      "move the source tree or the build folder to a path without '$' and '`', or remove it from the flag");
}

Status check_graph(const Graph& graph, const fs::path& build) {
  for (auto& step : graph.steps) {
    for (auto& a : step.argv) OPFORGE_CHECK(check_ninja_string(a, false));
    if (step.rule == "nvcc")
      for (auto& a : step.argv) OPFORGE_CHECK(check_nvcc_argument(a));
    OPFORGE_CHECK(check_ninja_string(step.description, false));
    OPFORGE_CHECK(check_ninja_string(step.output.string(), true));
    OPFORGE_CHECK(check_ninja_string(step.depfile, true));
    for (auto& in : step.inputs) OPFORGE_CHECK(check_ninja_string(in.string(), true));
    auto rel = step.output.lexically_normal().lexically_relative(build.lexically_normal());
    if (rel.empty() || *rel.begin() == "..")
      return failure("internal: output '" + step.output.string() + "' is outside the build folder");
  }
  return {};
}

}  // namespace

namespace {

/// What every compile and link of one plan shares.
struct Toolset {
  const plan::Plan& plan;
  std::string cxx, cc;
  const cuda::Toolkit* tk;
  std::vector<std::string> prefix_maps;
  unsigned nvcc_threads = 1;
};

/// Compiles one source of `op` into its object under `obj_dir`.
Result<Step> compile_step(const Toolset& t, const ops::Manifest& op, const fs::path& source, const fs::path& obj_dir,
                          const std::vector<std::string>& includes) {
  auto lang = language_of(source);
  if (!lang)
    return bad_input("op '" + op.name + "': cannot compile " + source.string(),
                     "sources must end in .c, .cpp, .cc, .cxx or .cu");
  const plan::Plan& plan = t.plan;
  fs::path src = (op.dir / source).lexically_normal();
  fs::path obj = object_path(obj_dir, source);
  std::string seed = op.name + "/" + source.generic_string();
  Step step;
  step.inputs = {src};
  step.output = obj;
  step.depfile = obj.string() + ".d";
  if (*lang == Lang::cuda) {
    step.rule = "nvcc";
    step.description = "nvcc " + seed;
    step.argv = {t.tk->nvcc.string(),
                 "-ccbin",
                 t.cxx,
                 "-std=c++17",
                 "-O3",
                 "-cudart=static",
                 "-Xcompiler=-fPIC",
                 "-Xcompiler=-fvisibility=hidden"};
    // Reproducibility flags, each only where this nvcc takes it (compiler/flags.h).
    const Version& v = t.tk->version;
    using compiler::Tool;
    if (compiler::accepts(Tool::nvcc, "-frandom-seed", v)) step.argv.push_back("-frandom-seed=" + seed);
    else step.argv.push_back("-Xcompiler=-frandom-seed=" + seed);
    if (compiler::accepts(Tool::nvcc, "--compress-mode", v)) step.argv.push_back("--compress-mode=default");
    // cicc and cudafe++ name anonymous namespaces (and nvcc's _INTERNAL_ prefixes) after the
    // source's absolute path: a stable name instead gives the same bytes from any folder.
    if (compiler::accepts(Tool::nvcc, "-Xcicc=--orig_src_path_name", v))
      for (auto x : {"-Xcicc=--orig_src_path_name=", "-Xcudafe=--orig_src_path_name="}) step.argv.push_back(x + seed);
    if (compiler::accepts(Tool::nvcc, "--threads", v))
      step.argv.push_back("--threads=" + std::to_string(t.nvcc_threads));
    for (auto& m : t.prefix_maps) step.argv.push_back("-Xcompiler=" + m);
    if (plan.host && plan.host->allow_unsupported) step.argv.push_back("-allow-unsupported-compiler");
    for (auto& arch : plan.arch.arches)
      for (auto& g : arch.gencode()) step.argv.push_back(g);
    for (auto& f : op.nvcc_flags) step.argv.push_back(f);
  } else {
    step.rule = *lang == Lang::c ? "cc" : "cxx";
    step.description = (*lang == Lang::c ? "cc " : "c++ ") + seed;
    step.argv = {*lang == Lang::c ? t.cc : t.cxx};
    if (*lang == Lang::cxx) step.argv.push_back("-std=c++17");
    for (auto f : {"-O2", "-g0", "-fPIC", "-fvisibility=hidden"}) step.argv.push_back(f);
    step.argv.push_back("-frandom-seed=" + seed);
    for (auto& m : t.prefix_maps) step.argv.push_back(m);
    for (auto& f : op.cxx_flags) step.argv.push_back(f);
    if (op.kind == ops::Kind::cuda && t.tk) step.argv.push_back("-I" + t.tk->include_dir.string());
  }
  for (auto& f : includes) step.argv.push_back(f);
  if (auto it = op.source_flags.find(source.generic_string()); it != op.source_flags.end())
    for (auto& f : it->second) step.argv.push_back(f);
  step.flags_end = step.argv.size();
  step.argv.insert(step.argv.end(), {"-MD", "-MF", step.depfile, "-c", src.string(), "-o", obj.string()});
  return step;
}

/// Links the objects of `op` into `unstripped` (static cudart for a CUDA op).
Step link_step(const Toolset& t, const ops::Manifest& op, const std::string& lib_name,
               const std::vector<fs::path>& objects, const fs::path& unstripped) {
  Step link;
  link.rule = "link";
  link.description = "link " + lib_name;
  link.argv = {t.cxx, "-shared", "-o", unstripped.string()};
  for (auto& o : objects) link.argv.push_back(o.string());
  link.argv.insert(link.argv.end(), {"-Wl,--build-id=none", "-Wl,-soname," + lib_name, "-Wl,-z,noexecstack"});
  for (auto& f : op.ldflags) link.argv.push_back(f);
  if (op.kind == ops::Kind::cuda) {
    link.argv.push_back("-L" + t.tk->lib_dir.string());
    link.argv.push_back("-lcudart_static");
    for (auto l : {"-ldl", "-lrt", "-lpthread"}) link.argv.push_back(l);
  }
  for (auto& l : op.libraries) link.argv.push_back("-l" + l);
  link.inputs = objects;
  link.output = unstripped;
  return link;
}

/// The .symtab keeps a tmpxft_<pid> file symbol from nvcc: strip it for identical bytes.
Step strip_step(const std::string& lib_name, const fs::path& unstripped, const fs::path& library) {
  Step strip;
  strip.rule = "strip";
  strip.description = "strip " + lib_name;
  strip.argv = {"strip", "--strip-unneeded", "-o", library.string(), unstripped.string()};
  strip.inputs = {unstripped};
  strip.output = library;
  return strip;
}

/// The steps of an op's Python extension (manifest.h: PythonExtension): its sources compiled with
/// Py_LIMITED_API set to the floor and the plan's Python headers, linked without libpython (the
/// interpreter provides the symbols), stripped into lib/<name>.abi3.so.
Result<fs::path> extension_steps(const Toolset& t, const ops::Manifest& op, const fs::path& build,
                                 const std::vector<std::string>& includes, std::vector<Step>& steps) {
  const ops::PythonExtension& ext = *op.python_extension;
  fs::path obj_dir = build / "obj" / op.name / ext.name;
  std::vector<fs::path> objects;
  for (auto& source : ext.sources) {
    Step step = OPFORGE_TRY(compile_step(t, op, source, obj_dir, includes));
    const std::vector<std::string> python = {"-DPy_LIMITED_API=" + ext.limited_api_macro(),
                                             "-I" + t.plan.python_include.string()};
    step.argv.insert(step.argv.begin() + static_cast<std::ptrdiff_t>(step.flags_end), python.begin(), python.end());
    step.flags_end += python.size();
    objects.push_back(step.output);
    steps.push_back(std::move(step));
  }
  const std::string file = ext.file_name();
  fs::path unstripped = obj_dir / (file + ".unstripped");
  Step link;
  link.rule = "link";
  link.description = "link " + file;
  link.argv = {t.cxx, "-shared", "-o", unstripped.string()};
  for (auto& o : objects) link.argv.push_back(o.string());
  link.argv.insert(link.argv.end(), {"-Wl,--build-id=none", "-Wl,-z,noexecstack"});
  link.inputs = objects;
  link.output = unstripped;
  steps.push_back(std::move(link));
  fs::path library = build / "lib" / file;
  steps.push_back(strip_step(file, unstripped, library));
  return library;
}

}  // namespace

unsigned nvcc_threads_for(std::size_t arches, std::size_t cuda_units, unsigned jobs) {
  jobs = std::max(1u, jobs);
  if (arches <= 1 || cuda_units == 0) return 1;
  const std::size_t at_once = std::min<std::size_t>(jobs, cuda_units);
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>(arches, jobs / at_once)));
}

Result<Graph> describe(const plan::Plan& plan) {
  Graph graph;
  const fs::path& build = plan.build_dir;
  const fs::path& src_root = plan.source.root;
  std::string cxx = "g++", cc = "gcc";
  if (plan.host) {
    auto via = compiler::invocation(*plan.host);
    cxx = via.cxx.string();
    cc = via.cc.string();
  }
  // Reproducibility (docs/reference.md §5): paths mapped, a stable seed per file, no build id, no debug info.
  std::vector<std::string> prefix_maps = {"-ffile-prefix-map=" + src_root.string() + "=.",
                                          "-ffile-prefix-map=" + build.string() + "=build"};
  std::size_t cuda_units = 0;
  for (const auto& d : plan.ops)
    if (d.build)
      cuda_units += static_cast<std::size_t>(std::count_if(d.manifest.sources.begin(), d.manifest.sources.end(),
                                                           [](const fs::path& s) { return s.extension() == ".cu"; }));
  graph.nvcc_threads = nvcc_threads_for(plan.arch.arches.size(), cuda_units, plan.jobs);
  if (graph.nvcc_threads > 1) graph.nvcc_pool_depth = std::max(1u, plan.jobs / graph.nvcc_threads);
  const Toolset tools{plan, cxx, cc, plan.cuda.chosen ? &*plan.cuda.chosen : nullptr, prefix_maps, graph.nvcc_threads};

  for (const auto& decision : plan.ops) {
    if (!decision.build) continue;
    const auto& op = decision.manifest;
    if (op.kind == ops::Kind::cuda && !tools.tk)
      return unsatisfied("op '" + op.name + "' needs a CUDA toolkit, and none was resolved");

    fs::path obj_dir = build / "obj" / op.name;
    std::string lib_name = op.library_name.empty() ? "libopforge_" + op.name + ".so" : op.library_name;
    fs::path unstripped = obj_dir / (lib_name + ".unstripped");
    fs::path library = build / "lib" / lib_name;
    std::vector<std::string> includes;
    for (auto& inc : op.include_dirs) {
      fs::path dir = (op.dir / inc).lexically_normal();
      if (!dir.has_filename()) dir = dir.parent_path();  // "op/." normalises to "op/"
      includes.push_back("-I" + dir.string());
    }

    OpOutputs outputs{op.name, library, {}};
    std::vector<fs::path> objects;
    for (auto& source : op.sources) {
      Step step = OPFORGE_TRY(compile_step(tools, op, source, obj_dir, includes));
      // The flags of the op's first compile: its argv without the compiler and the files.
      if (outputs.flags.empty())
        outputs.flags = std::vector<std::string>(step.argv.begin() + 1, step.argv.begin() + step.flags_end);
      objects.push_back(step.output);
      graph.steps.push_back(std::move(step));
    }
    graph.steps.push_back(link_step(tools, op, lib_name, objects, unstripped));
    graph.steps.push_back(strip_step(lib_name, unstripped, library));
    if (op.python_extension && !plan.python_include.empty())
      outputs.extension = OPFORGE_TRY(extension_steps(tools, op, build, includes, graph.steps));
    graph.outputs.push_back(std::move(outputs));
  }
  // ccache in front of every compile: here, so that `opforge plan` prints what ninja runs.
  if (plan.cache == recipe::Cache::ccache)
    for (auto& step : graph.steps)
      if (step.rule == "cc" || step.rule == "cxx" || step.rule == "nvcc") {
        step.argv.insert(step.argv.begin(), "ccache");
        ++step.flags_end;
      }
  OPFORGE_CHECK(check_ninja_string(build.string(), true));
  OPFORGE_CHECK(check_graph(graph, build));
  return graph;
}

std::string render_ninja(const Graph& graph, const fs::path& build_dir) {
  std::string out = "# Written by opforge: do not edit.\nninja_required_version = 1.10\nbuilddir = " +
                    ninja_escape_path(build_dir.string()) + "\n\n";
  if (graph.nvcc_pool_depth > 0) out += "pool nvcc\n  depth = " + std::to_string(graph.nvcc_pool_depth) + "\n\n";
  for (std::string rule : {"cc", "cxx", "nvcc"})
    out += "rule " + rule + "\n  command = $cmd\n  depfile = $dep\n  deps = gcc\n  description = $desc\n" +
           (rule == "nvcc" && graph.nvcc_pool_depth > 0 ? "  pool = nvcc\n" : "") + "\n";
  for (auto rule : {"link", "strip"})
    out += std::string("rule ") + rule + "\n  command = $cmd\n  description = $desc\n\n";
  for (auto& step : graph.steps) {
    out += "build " + ninja_escape_path(step.output.string()) + ": " + step.rule;
    for (auto& in : step.inputs) out += " " + ninja_escape_path(in.string());
    out += "\n  cmd = " + ninja_escape_value(strings::shell_join(step.argv)) + "\n";
    out += "  desc = " + ninja_escape_value(step.description) + "\n";
    if (!step.depfile.empty()) out += "  dep = " + ninja_escape_path(step.depfile) + "\n";
  }
  out += "\ndefault";
  for (auto& o : graph.outputs) {
    out += " " + ninja_escape_path(o.library.string());
    if (!o.extension.empty()) out += " " + ninja_escape_path(o.extension.string());
  }
  out += "\n";
  return out;
}

namespace {

/// The ops whose steps ninja reports as FAILED (`FAILED: [code=N] <output>`), each with the first
/// compiler error of its part of the log; nullopt when a failed output belongs to no op.
std::optional<std::map<std::string, std::string>> failed_ops(const std::string& log, const fs::path& build,
                                                             const std::vector<OpOutputs>& outputs,
                                                             const fs::path& source_root) {
  std::map<std::string, std::string> out;
  std::string current;  // the op whose FAILED section is being read
  std::string section;
  auto close = [&] {
    if (!current.empty() && out[current].empty()) out[current] = first_compiler_error(section, source_root);
    section.clear();
  };
  for (auto line : strings::split(log, '\n')) {
    if (line.starts_with("FAILED: ")) {
      close();
      std::string path(strings::trim(line.substr(8)));
      if (path.starts_with("[code=")) path = std::string(strings::trim(path.substr(path.find(']') + 1)));
      current.clear();
      // ninja names the output as build.ninja does (absolute), or relative to the build folder.
      const fs::path absolute = fs::path(path).is_absolute() ? fs::path(path) : build / path;
      for (auto& o : outputs)
        if (absolute == o.library || absolute == o.extension ||
            absolute.string().starts_with((build / "obj" / o.op).string() + "/"))
          current = o.op;
      if (current.empty()) return std::nullopt;
      out.emplace(current, "");
      continue;
    }
    if (line.starts_with("ninja: build stopped")) continue;
    section += std::string(line) + "\n";
  }
  close();
  return out;
}

}  // namespace

Result<RunResult> run(probe::Machine m, const plan::Plan& plan, const RunOptions& options) {
  auto graph = OPFORGE_TRY(describe(plan));
  const bool ccache = plan.cache == recipe::Cache::ccache;
  if (ccache) {
    // docs/reference.md §5: every path relative (base_dir "/"), so hits cross folders; this build's
    // own counters in the stats log (the user's global ccache statistics are left alone).
    set_ccache_environment(graph.env, {.base_dir = "/",
                                       .remote = plan.recipe.build.remote,
                                       .stats_log = plan.build_dir / "ccache-stats.log",
                                       .depend_mode = false});
    (void)m.fs.remove(plan.build_dir / "ccache-stats.log");
  }
  OPFORGE_CHECK(m.fs.create_directories(plan.build_dir / "lib"));
  for (auto& o : graph.outputs) OPFORGE_CHECK(m.fs.create_directories(plan.build_dir / "obj" / o.op));
  if (plan.host) OPFORGE_CHECK(compiler::check_shim(m.fs, *plan.host));
  OPFORGE_CHECK(m.fs.write_file_atomic(plan.build_dir / "build.ninja", render_ninja(graph, plan.build_dir)));

  RunResult result;
  result.outputs = graph.outputs;
  if (graph.outputs.empty()) return result;
  auto env = m.env.all();
  for (auto& [k, v] : plan.exports)
    if (k == "PATH" || k == "LD_LIBRARY_PATH" || k == "CUDA_HOME") env[k] = v;
  for (auto& [k, v] : graph.env) env[k] = v;
  // With an "auto" op in the build, one op's failure must not stop the others.
  const bool keep_going =
      std::any_of(plan.ops.begin(), plan.ops.end(), [](const ops::Decision& d) { return d.build && !d.required; });
  // ninja on a terminal reports each step as it starts, in opforge's own status format (a user's
  // NINJA_STATUS would change what is read back); TERM=dumb would make it print as in a pipe.
  env["NINJA_STATUS"] = kNinjaStatus;
  if (auto term = env.find("TERM"); term == env.end() || term->second.empty() || term->second == "dumb")
    env["TERM"] = "vt100";
  std::string log;  // ninja's output as in a pipe: the finished steps and their output
  NinjaStatusReader reader(options.on_step, [&](std::string_view line) {
    log.append(line).push_back('\n');
    if (line.starts_with("[")) ++result.steps_run;
    if (options.on_line) options.on_line(line);
  });
  probe::Command cmd{.argv = {"ninja", "-C", plan.build_dir.string(), "-j", std::to_string(std::max(1u, plan.jobs))},
                     .env = env,
                     .output = probe::Output::lines,
                     .on_line = [&](std::string_view line) { reader.line(line); },
                     .terminal = true};
  if (keep_going) cmd.argv.insert(cmd.argv.end(), {"-k", "0"});
  cmd.timeout = plan.compile_timeout;
  auto ran = m.proc.run(cmd);
  if (!ran) return opforge::unexpected(ran.error());
  if (ran->timed_out)
    return failure("the compile ran longer than " + std::to_string(plan.compile_timeout.count()) +
                       " s and was stopped (every process it started included)",
                   "a step that never ends (a compiler that hangs) is stopped at OPFORGE_COMPILE_TIMEOUT (seconds); "
                   "raise it for a larger build");
  result.log = log;
  result.peak_rss_kib = ran->peak_rss_kib;
  std::optional<std::map<std::string, std::string>> failed;
  if (!ran->ok() && keep_going) failed = failed_ops(log, plan.build_dir, graph.outputs, plan.source.root);
  const auto required = [&](const std::string& op) {
    return std::any_of(plan.ops.begin(), plan.ops.end(),
                       [&](const ops::Decision& d) { return d.manifest.name == op && d.required; });
  };
  if (failed && !failed->empty() &&
      std::none_of(failed->begin(), failed->end(), [&](auto& f) { return required(f.first); })) {
    std::erase_if(result.outputs, [&](const OpOutputs& o) { return failed->contains(o.op); });
    result.failed = std::move(*failed);
  } else if (!ran->ok()) {
    // ninja prints "FAILED: <out>", the command, then the compiler's output: show that part.
    auto pos = log.find("FAILED:");
    std::string detail = pos == std::string::npos ? log : log.substr(pos);
    return failure("a build step failed:\n" + detail,
                   "fix the error above and run `opforge build` again; finished steps are kept");
  }
  if (ccache) {
    // Counter names are read only from a ccache that writes the ones parse_ccache_stats_log knows.
    auto v = probe::run_remembered(m, probe::Command{.argv = {"ccache", "--version"}});
    auto version = v && v->ok() ? parse_ccache_version(v->out) : std::nullopt;
    if (version && reads_stats_log(*version)) {
      auto log = m.fs.read_file(plan.build_dir / "ccache-stats.log");
      result.cache = parse_ccache_stats_log(log ? *log : "");
    }
  }
  return result;
}

CacheStats parse_ccache_stats_log(std::string_view text) {
  CacheStats s;
  bool hit = false, remote = false, miss = false, open = false;
  auto close_call = [&] {
    if (!open) return;
    s.hits += hit;
    s.remote_hits += hit && remote;
    s.misses += !hit && miss;
    hit = remote = miss = false;
  };
  for (auto line : strings::split(text, '\n')) {
    if (line.starts_with("# ")) {
      close_call();
      open = true;
      ++s.calls;
    } else if (line == "direct_cache_hit" || line == "preprocessed_cache_hit") {
      hit = true;
    } else if (line == "remote_storage_hit") {
      remote = true;
    } else if (line == "cache_miss") {
      miss = true;
    }
  }
  close_call();
  return s;
}

std::string describe_cache_stats(const CacheStats& s) {
  if (s.calls == 0) return "ccache: no compiler calls";
  const int cacheable = s.hits + s.misses;
  std::string out =
      "ccache: " + std::to_string(s.hits) + " of " + std::to_string(cacheable) + " compiles were cache hits";
  if (cacheable) out += " (" + std::to_string((200 * s.hits + cacheable) / (2 * cacheable)) + "%)";
  if (s.remote_hits) out += ", " + std::to_string(s.remote_hits) + " from remote storage";
  if (s.calls > cacheable) out += "; " + std::to_string(s.calls - cacheable) + " calls not cacheable";
  return out;
}

}  // namespace opforge::compile
