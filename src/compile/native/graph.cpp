/// The native backend's build graph (compile/native/graph.h): one compile per source, a link and a strip
/// per op and per Python extension, ccache in front of the compiles.
#include "compile/native/graph.h"

#include <algorithm>

#include "compile/native/ninja_file.h"
#include "compiler/flags.h"
#include "compiler/host.h"

namespace opforge::compile {
namespace {

namespace fs = std::filesystem;

enum class Lang { c, cxx, cuda };

std::optional<Lang> language_of(const fs::path& source) {
  auto ext = source.extension().string();
  if (ext == ".c") return Lang::c;
  if (ext == ".cpp" || ext == ".cc" || ext == ".cxx") return Lang::cxx;
  if (ext == ".cu") return Lang::cuda;
  return std::nullopt;
}

/// The object of `source` under the op's object folder: a source in a sibling folder
/// ("../utils/x.cpp", inside the source tree) gets "_up_" for "..", so no object path leaves
/// obj/<op>/ whatever the manifest says.
fs::path object_path(const fs::path& obj_dir, const fs::path& source) {
  fs::path rel;
  for (const auto& part : source.lexically_normal().relative_path()) rel /= part == ".." ? fs::path("_up_") : part;
  return obj_dir / (rel.string() + ".o");
}

/// What every compile and link of one plan shares.
struct Toolset {
  const plan::Plan& plan;
  std::string cxx, cc;
  const cuda::Toolkit* tk;
  std::vector<std::string> prefix_maps;
  unsigned nvcc_threads = 1;

  /// -I of the CUDA headers a CUDA op's sources read: a cross-build's target runtime first (its
  /// cuda_runtime.h), then the toolkit's (crt/ and CCCL, which go with this nvcc).
  std::vector<std::string> cuda_includes() const {
    std::vector<std::string> out;
    if (plan.cuda_target) out.push_back("-I" + plan.cuda_target->include_dir.string());
    if (tk) out.push_back("-I" + tk->include_dir.string());
    return out;
  }
  /// Where libcudart_static.a is: the target runtime's for a cross-build, else the toolkit's.
  fs::path cudart_dir() const { return plan.cuda_target ? plan.cuda_target->lib_dir : tk->lib_dir; }
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
    // A cross-build's nvcc reads targets/<machine>/include and its cccl/, which an x86-64 toolkit
    // lacks (plan::Plan::cross_nvcc_includes), then the toolkit's own crt/ (-isystem folders come
    // after every -I, whatever the order).
    if (plan.cuda_target) {
      for (auto& i : plan.cross_nvcc_includes) step.argv.push_back(i);
      if (t.tk) step.argv.push_back("-I" + t.tk->include_dir.string());
    }
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
    if (op.kind == ops::Kind::cuda && t.tk)
      for (auto& i : t.cuda_includes()) step.argv.push_back(i);
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
    link.argv.push_back("-L" + t.cudart_dir().string());
    link.argv.push_back("-lcudart_static");
    for (auto l : {"-ldl", "-lrt", "-lpthread"}) link.argv.push_back(l);
  }
  for (auto& l : op.libraries) link.argv.push_back("-l" + l);
  link.inputs = objects;
  link.output = unstripped;
  return link;
}

/// The .symtab keeps a tmpxft_<pid> file symbol from nvcc: strip it for identical bytes.
Step strip_step(const Toolset& t, const std::string& lib_name, const fs::path& unstripped, const fs::path& library) {
  Step strip;
  strip.rule = "strip";
  strip.description = "strip " + lib_name;
  strip.argv = {plan::strip_program(t.plan), "--strip-unneeded", "-o", library.string(), unstripped.string()};
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
    std::vector<std::string> python = {"-DPy_LIMITED_API=" + ext.limited_api_macro(),
                                       "-I" + t.plan.python_include.string()};
    if (!t.plan.python_arch_include.empty())
      python.insert(python.end(), {"-idirafter", t.plan.python_arch_include.string()});
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
  steps.push_back(strip_step(t, file, unstripped, library));
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
    if (d.builds())
      cuda_units += static_cast<std::size_t>(std::count_if(d.manifest.sources.begin(), d.manifest.sources.end(),
                                                           [](const fs::path& s) { return s.extension() == ".cu"; }));
  graph.nvcc_threads = nvcc_threads_for(plan.arch.arches.size(), cuda_units, plan.jobs);
  if (graph.nvcc_threads > 1) graph.nvcc_pool_depth = std::max(1u, plan.jobs / graph.nvcc_threads);
  const Toolset tools{plan, cxx, cc, plan.cuda.chosen ? &*plan.cuda.chosen : nullptr, prefix_maps, graph.nvcc_threads};

  for (const auto& decision : plan.ops) {
    if (!decision.builds()) continue;
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
    graph.steps.push_back(strip_step(tools, lib_name, unstripped, library));
    if (op.python_extension && !plan.python_include.empty())
      outputs.extension = OPFORGE_TRY(extension_steps(tools, op, build, includes, graph.steps));
    graph.outputs.push_back(std::move(outputs));
  }
  // The compiler cache in front of every compile: here, so that `opforge plan` prints what ninja runs.
  if (const auto launcher = recipe::cache_kind(plan.cache).program; !launcher.empty())
    for (auto& step : graph.steps)
      if (step.rule == "cc" || step.rule == "cxx" || step.rule == "nvcc") {
        step.argv.insert(step.argv.begin(), std::string(launcher));
        ++step.flags_end;
      }
  OPFORGE_CHECK(check_for_ninja(graph, build));
  return graph;
}

}  // namespace opforge::compile
