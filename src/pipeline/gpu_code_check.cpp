/// The plan's GPU code is a promise a command build keeps: a wheel whose libraries do not hold the
/// plan's architectures (none at all, fewer, or others) is refused, and kept aside for inspection.
#include <algorithm>
#include <set>

#include "ops/ops.h"
#include "pipeline/stages.h"
#include "project/build_files.h"
#include "util/strings.h"

namespace opforge::pipeline {

namespace {

/// "sm_90a" and "sm_90" are one target here: a fatbinary names sm_90a's code sm_90.
std::string plain_target(std::string t) {
  while (!t.empty() && t.back() >= 'a' && t.back() <= 'z') t.pop_back();
  return t;
}

std::set<std::string> plain_targets(const std::vector<std::string>& targets) {
  std::set<std::string> out;
  for (const auto& t : targets) out.insert(plain_target(t));
  return out;
}

std::string listed(const std::set<std::string>& s) { return strings::join({s.begin(), s.end()}, " "); }

std::string some_files(const std::vector<std::string>& files) {
  std::vector<std::string> shown(files.begin(),
                                 files.begin() + static_cast<long>(std::min<std::size_t>(files.size(), 3)));
  return strings::join(shown, ", ") + (files.size() > shown.size() ? ", …" : "");
}

}  // namespace

GpuCodePromise gpu_code_promise(const plan::Plan& plan) {
  GpuCodePromise p;
  if (plan.arch.source == plan::kNoGpuCodeSource) {
    p.kind = GpuCodePromise::Kind::none;
    p.why = "[arch] list = \"none\"";
    return p;
  }
  if (plan.arch.arches.empty()) return p;  // no toolkit: nothing was planned
  if (plan.source.catalogue == plan::Catalogue::op_builder) {
    // An op tree: GPU code from its CUDA ops only.
    std::vector<std::string> cuda_ops;
    for (const auto& d : plan.ops)
      if (d.builds() && ops::needs_toolkit(d.manifest.kind)) cuda_ops.push_back(d.manifest.name);
    if (cuda_ops.empty()) return p;
    p.why = "CUDA ops are built (" + some_files(cuda_ops) + ")";
  } else {
    const auto& files = plan.project_files;
    if (files.cuda_sources == 0) return p;  // a project with no CUDA source makes a wheel without GPU code
    p.why = "the project has " + std::to_string(files.cuda_sources) + " CUDA source" +
            (files.cuda_sources == 1 ? "" : "s") + " (" + some_files(files.cuda_source_sample) + ")";
  }
  p.kind = plan.recipe.arch.enforce ? GpuCodePromise::Kind::exactly : GpuCodePromise::Kind::some;
  p.targets = planned_gpu_targets(plan);
  return p;
}

Status check_gpu_code(const plan::Plan& plan, const GpuCodePromise& promise, const GpuCodeSeen& seen) {
  using Kind = GpuCodePromise::Kind;
  const auto& by_file = seen.by_library;
  const std::string kept = "the refused wheel: " + seen.wheel.string() + " (`opforge inspect` it)" +
                           (seen.log.empty() ? std::string() : "; the build's output: " + seen.log.string());
  std::vector<std::string> with_code;
  std::set<std::string> compiled;
  for (const auto& [file, targets] : by_file)
    if (!targets.empty()) {
      with_code.push_back(file);
      for (const auto& t : targets) compiled.insert(plain_target(t));
    }
  if (promise.kind == Kind::unchecked) return {};
  if (promise.kind == Kind::none) {
    if (with_code.empty()) return {};
    return failure("the wheel holds GPU code (" + listed(compiled) + " in " + some_files(with_code) +
                       "), and the recipe says none ([arch] list = \"none\")",
                   "the project compiled CUDA on its own: turn its CUDA switch off, or give [arch] list the GPUs' "
                   "architectures; " +
                       kept);
  }
  const std::string planned = strings::join(promise.targets, " ");
  const std::string switches = project::switch_hint(plan.project_files.switches, seen.env);
  if (with_code.empty()) {
    std::string hint = switches.empty() ? std::string(
                                              "the project compiled no CUDA code: check its build for a switch "
                                              "that turns its CUDA extensions on (FORCE_CUDA=1 and the like)")
                                        : switches;
    hint += "\n  for a wheel without GPU code on purpose: [arch] list = \"none\"\n  " + kept;
    return failure("the wheel holds no GPU code, and the plan is " + planned + " (arch list " + plan.arch.str() + "; " +
                       promise.why + "): " + std::to_string(seen.libraries) + " librar" +
                       (seen.libraries == 1 ? "y" : "ies") + " in the wheel, none with a fatbinary",
                   hint);
  }
  if (promise.kind == Kind::some) return {};
  const auto want = plain_targets(promise.targets);
  std::set<std::string> missing, extra;
  std::set_difference(want.begin(), want.end(), compiled.begin(), compiled.end(),
                      std::inserter(missing, missing.end()));
  std::set_difference(compiled.begin(), compiled.end(), want.begin(), want.end(), std::inserter(extra, extra.end()));
  if (missing.empty() && extra.empty()) return {};
  std::vector<std::string> what;
  if (!missing.empty()) what.push_back("missing " + listed(missing));
  if (!extra.empty()) what.push_back("not planned " + listed(extra));
  std::vector<std::string> per_file;
  for (const auto& [file, targets] : by_file)
    if (!targets.empty()) per_file.push_back(file + ": " + strings::join(targets, " "));
  // The wrapper's log names what the project asked nvcc for; nothing there means its nvcc ran
  // without the wrapper (its own nvcc path, or a compile torch's setuptools path started itself).
  const std::string cause =
      seen.wrapper_saw_nvcc
          ? "the project's nvcc ran through opforge's wrapper, so a step outside it (a prebuilt or downloaded "
            "library, a CMake sub-build with its own nvcc) made this code"
          : "the project's nvcc did not run through opforge's wrapper (it saw no nvcc command), so the project's "
            "own -gencode/-arch options were compiled";
  return failure("the wheel's GPU code is not the plan's " + planned + " (arch list " + plan.arch.str() +
                     "): " + strings::join(what, "; ") + "\n  " + strings::join(per_file, "\n  ") + "\n  " + cause,
                 "[arch] enforce = false keeps a project's own list on purpose; " + kept);
}

}  // namespace opforge::pipeline
