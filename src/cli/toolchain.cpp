// `opforge toolchain link|unlink RECIPE [--into DIR | --system]`: the compiler symlinks an nvcc
// that needs an older gcc, and their removal. Writes symlinks and their list (.opforge-links) only.
#include <iostream>

#include "cli/command.h"
#include "compiler/links.h"
#include "compiler/resolve.h"
#include "cuda/resolve.h"
#include "recipe/bundled.h"
#include "recipe/recipe.h"

namespace opforge::cli {
namespace fs = std::filesystem;
namespace {

struct Args {
  std::string recipe;
  std::string into;
  bool system = false;
  std::string cuda = "auto";
  std::string host = "auto";
  std::string python;
  bool allow_unsupported = false;
};

void declare(CLI::App& sub, Args& a) {
  sub.add_option("recipe", a.recipe, "the recipe (TOML, or 'default'); its [cuda] and [compiler] decide");
  auto* into = sub.add_option("--into", a.into, "folder for gcc/g++/cc/c++ symlinks (a private shim)");
  sub.add_flag("--system", a.system, "the gcc/g++ symlinks inside the toolkit's own bin/")->excludes(into);
  sub.add_option("--cuda", a.cuda, "without a recipe: the [cuda] version spec");
  sub.add_option("--host", a.host, "without a recipe: the [compiler] host");
  sub.add_option("--python", a.python, "the Python whose torch decides the CUDA version");
}

Result<cuda::Toolkit> toolkit_of(probe::Machine m, Args& a) {
  std::string python = "python3";
  if (!a.recipe.empty()) {
    auto r = OPFORGE_TRY(recipe::load(m, recipe::resolve_recipe_arg(m.fs, a.recipe).file));
    a.cuda = r.cuda.version;
    a.host = r.compiler.host;
    a.allow_unsupported = r.compiler.allow_unsupported;
    python = r.cuda.python;
  }
  if (!a.python.empty()) python = a.python;
  auto res = OPFORGE_TRY(cuda::resolve(m, a.cuda, python));
  return *res.chosen;
}

Status run(Args& a, bool link) {
  auto m = probe::real_machine();
  if (!a.system && a.into.empty()) return bad_input("say where the links go: --into DIR or --system");
  auto tk = OPFORGE_TRY(toolkit_of(m, a));
  if (!link) {
    const int removed = OPFORGE_TRY(a.system ? compiler::unlink_system(m.fs, tk) : compiler::remove_shim(m.fs, a.into));
    const std::string dir = a.system ? (tk.root / "bin").string() : a.into;
    if (removed == 0) std::cout << "no compiler links made by opforge in " << dir << ": nothing removed\n";
    else
      std::cout << "removed opforge's " << removed << " compiler link" << (removed == 1 ? "" : "s") << " from " << dir
                << "\n";
    return {};
  }
  auto choice = OPFORGE_TRY(compiler::resolve(m, tk, a.host, a.allow_unsupported,
                                              a.into.empty() ? fs::path("/nonexistent") : fs::path(a.into)));
  std::cout << choice.reason << "\n";
  if (a.system) {
    OPFORGE_CHECK(compiler::link_system(m.fs, tk, choice));
    std::cout << "linked " << (tk.root / "bin" / "gcc").string() << " -> " << choice.compiler.cc.string() << "\n"
              << "linked " << (tk.root / "bin" / "g++").string() << " -> " << choice.compiler.cxx.string() << "\n";
  } else {
    choice.shim_dir = fs::path(a.into);
    OPFORGE_CHECK(compiler::ensure_shim(m.fs, choice));
    std::cout << "shim " << a.into << ": gcc, cc -> " << choice.compiler.cc.string() << "; g++, c++ -> "
              << choice.compiler.cxx.string() << "\n(use: nvcc -ccbin " << a.into << "/g++, or PATH=" << a.into
              << ":$PATH)\n";
  }
  return {};
}

Registrar toolchain_command{{
    "toolchain",
    "make (or remove) the compiler symlinks an older nvcc needs",
    [](CLI::App& app) -> Runner {
      auto link_args = std::make_shared<Args>();
      auto unlink_args = std::make_shared<Args>();
      auto* link = app.add_subcommand("link", "create gcc/g++ symlinks to a compiler the toolkit accepts");
      auto* unlink = app.add_subcommand("unlink", "remove exactly the links `link` made");
      declare(*link, *link_args);
      declare(*unlink, *unlink_args);
      app.require_subcommand(1);
      return [link, link_args, unlink_args]() -> Status {
        return link->parsed() ? run(*link_args, true) : run(*unlink_args, false);
      };
    },
}};

}  // namespace
}  // namespace opforge::cli
