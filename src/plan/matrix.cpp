#include "plan/matrix.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cache/layout.h"
#include "cuda/provision.h"
#include "cuda/resolve.h"
#include "target/arch.h"
#include "target/platform.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/strings.h"

namespace opforge::plan {

namespace {

Location where(const recipe::Recipe& r, const std::string& key) {
  auto it = r.locations.find(key);
  return it == r.locations.end() ? Location{r.file.string(), 0, 0, {}} : it->second;
}

/// The interpreter's real path and "X.Y", from one run of it.
struct PythonFacts {
  std::string real_path;
  std::string version;
};

std::optional<PythonFacts> ask_python(probe::Machine m, const std::string& python) {
  auto r = m.proc.run(probe::Command{
      .argv = {python, "-c",
               "import os, sys; print(os.path.realpath(sys.executable)); print('%d.%d' % sys.version_info[:2])"},
      .timeout = std::chrono::seconds(30)});
  if (!r || !r->ok()) return std::nullopt;
  auto lines = strings::split(strings::trim(r->out), '\n');
  if (lines.size() != 2) return std::nullopt;
  return PythonFacts{std::string(strings::trim(lines[0])), std::string(strings::trim(lines[1]))};
}

std::string pip_failure(const probe::ProcessResult& r) {
  auto lines = strings::split(strings::trim(r.out + "\n" + r.err), '\n');
  if (lines.size() > 8) lines.erase(lines.begin(), lines.end() - 8);
  return strings::join(lines, "\n");
}

}  // namespace

std::string cell_id(std::string_view torch, std::string_view python_version) {
  return "torch" + std::string(torch) + "-py" + std::string(python_version);
}

std::string arch_tag(std::string_view list) {
  auto arches = target::parse_arch_list(list);
  if (!arches || arches->empty()) return "sm" + std::string(list);
  std::vector<std::string> parts;
  for (const auto& a : *arches) parts.push_back(a.sm() + (a.ptx ? "ptx" : ""));
  return "sm" + strings::join(parts, "_");
}

Result<std::string> fallback_arch_list(const std::vector<std::string>& lists) {
  std::vector<target::Arch> all;
  for (const auto& list : lists) {
    auto arches = target::parse_arch_list(list);
    if (!arches) return bad_input("matrix.arch: '" + strings::cut(list) + "': " + arches.error().message);
    for (auto a : *arches) {
      const bool ptx = a.ptx;
      a.ptx = false;
      auto same = std::find(all.begin(), all.end(), a);
      if (same == all.end()) all.push_back(a), same = all.end() - 1;
      // A variant's own older PTX stays: it may be the only code for GPUs between its SASS and the
      // next list's (a "7.5+PTX" list runs on an 8.0 GPU that "9.0" SASS does not).
      same->ptx = same->ptx || ptx;
    }
  }
  std::sort(all.begin(), all.end());
  // The newest architecture without a suffix also as PTX: arch-specific and family PTX
  // (compute_90a) compiles for its own GPU only, never for a newer one.
  for (auto it = all.rbegin(); it != all.rend(); ++it)
    if (!it->suffix) {
      it->ptx = true;
      break;
    }
  return target::arch_list_str(all);
}

std::string torch_requirement(std::string_view torch) {
  auto parts = strings::split(torch, '.');
  return parts.size() == 2 ? "torch==" + std::string(torch) + ".*" : "torch==" + std::string(torch);
}

std::string env_hash(const std::string& python_real_path, const std::string& python_version,
                     const std::string& torch_req, std::vector<std::string> requirements) {
  std::sort(requirements.begin(), requirements.end());
  std::string key = "opforge-env-1\n" + python_real_path + "\n" + python_version + "\n" + torch_req + "\n" +
                    strings::join(requirements, "\n");
  return sha256_hex(key).substr(0, 16);
}

Result<std::vector<Cell>> cells(probe::Machine m, const recipe::Recipe& r, const fs::path& cache) {
  std::vector<std::string> pythons = r.matrix.python;
  const bool from_matrix = !pythons.empty();
  if (pythons.empty()) pythons.push_back(r.cuda.python);
  std::vector<std::pair<std::string, PythonFacts>> facts;
  for (std::size_t i = 0; i < pythons.size(); ++i) {
    auto f = ask_python(m, pythons[i]);
    if (!f) {
      Location loc = from_matrix ? where(r, "matrix.python." + std::to_string(i)) : where(r, "matrix");
      return bad_input(
          "matrix: the Python interpreter '" + strings::cut(pythons[i]) + "' is not there (it could not be run)",
          "name an interpreter installed on this machine (e.g. python3.11, or a full path)", loc);
    }
    facts.emplace_back(pythons[i], *f);
  }
  std::vector<Cell> out;
  std::vector<std::string> platforms = r.matrix.platform;
  if (platforms.empty()) platforms.emplace_back();
  // Each arch list a variant cell, then the fallback with their union; one cell without the axis.
  std::vector<std::pair<std::string, bool>> arches;
  for (const auto& list : r.matrix.arch) arches.emplace_back(list, false);
  if (!arches.empty()) {
    auto fallback = fallback_arch_list(r.matrix.arch);
    if (!fallback) return bad_input(fallback.error().message, fallback.error().hint, where(r, "matrix.arch"));
    arches.emplace_back(*fallback, true);
  } else {
    arches.emplace_back("", false);
  }
  for (auto& torch : r.matrix.torch)
    for (auto& [python, f] : facts)
      for (auto& platform : platforms)
        for (auto& [arch, fallback] : arches) {
          Cell c;
          c.platform = platform;
          c.base_id = cell_id(torch, f.version) +
                      (platform.empty() || platform == target::host_platform().name ? std::string() : "-" + platform);
          c.arch = arch;
          c.fallback = fallback;
          c.id = arch.empty() ? c.base_id : c.base_id + "-" + (fallback ? std::string("fallback") : arch_tag(arch));
          c.index = out.size();
          c.torch = torch;
          c.torch_requirement = torch_requirement(torch);
          c.python = python;
          c.python_version = f.version;
          c.env = cache::folder(cache, cache::Kind::env) /
                  env_hash(f.real_path, f.version, c.torch_requirement, r.matrix.requirements);
          c.env_python = c.env / "bin" / "python";
          c.ready = m.fs.resolved_type(c.env / kEnvMarker) == probe::FileType::regular;
          out.push_back(std::move(c));
        }
  for (auto& [id, python] : r.matrix.environments) {
    // Keyed by the cell without its arch part: every arch list of a cell builds in one environment.
    const bool named = std::any_of(out.begin(), out.end(), [&](auto& c) { return c.base_id == id; });
    if (!named) {
      std::vector<std::string> ids;
      for (auto& c : out)
        if (std::find(ids.begin(), ids.end(), c.base_id) == ids.end()) ids.push_back(c.base_id);
      return bad_input("matrix.environments names '" + strings::cut(id) + "', which is not a cell of this matrix",
                       "cells: " + strings::join(ids, ", "), where(r, "matrix.environments." + id));
    }
    fs::path py = fs::path(python).is_absolute() ? fs::path(python) : r.dir / python;
    if (!m.fs.is_executable(py))
      return bad_input(
          "matrix.environments." + id + ": '" + strings::cut(py.string()) + "' is not an executable Python",
          "name the python of an existing environment (.../bin/python)", where(r, "matrix.environments." + id));
    for (auto& c : out) {
      if (c.base_id != id) continue;
      c.env = py.parent_path().parent_path();
      c.env_python = py;
      c.user_env = true;
      c.ready = true;
    }
  }
  return out;
}

Result<std::vector<Cell>> select(const recipe::Recipe& r, std::vector<Cell> all, const std::string& id,
                                 std::optional<std::size_t> index) {
  std::vector<std::string> ids;
  for (auto& c : all) ids.push_back(c.id);
  if (!id.empty()) {
    for (auto& c : all)
      if (c.id == id) return std::vector<Cell>{c};
    std::string msg = "--cell " + strings::cut(id) + ": the matrix has no such cell";
    if (auto g = strings::did_you_mean(id, ids)) msg += "; did you mean " + *g + "?";
    return bad_input(msg, "cells: " + strings::join(ids, ", ") + " (`opforge matrix` lists them)", where(r, "matrix"));
  }
  if (index) {
    if (*index < all.size()) return std::vector<Cell>{all[*index]};
    return bad_input("--cell-index " + std::to_string(*index) + ": the matrix has " + std::to_string(all.size()) +
                         " cells (0 to " + std::to_string(all.size() - 1) + ")",
                     "for a SLURM array use --array=0-" + std::to_string(all.size() - 1), where(r, "matrix"));
  }
  return all;
}

fs::path env_lock(const fs::path& env) { return cache::entry_lock(env); }

namespace {

/// Makes the environment in place (the caller holds its lock exclusively).
Status make_env(probe::Machine m, const recipe::Recipe& r, const Cell& cell,
                const std::function<void(std::string_view)>& on_line) {
  // No marker: a killed run's half-made environment (or none). It is made in place, because a
  // venv cannot move: its scripts name their folder.
  OPFORGE_CHECK(m.fs.remove_all(cell.env));
  if (on_line) on_line("making the environment of " + cell.id + " in " + cell.env.string());
  auto fail = [&](const std::string& what, const probe::ProcessResult& res) -> Status {
    (void)m.fs.remove_all(cell.env);
    return unsatisfied("matrix cell " + cell.id + ": " + what + " failed; its last lines:\n" + pip_failure(res),
                       "check the network and pip's index settings (PIP_INDEX_URL, pip.conf), or name an existing "
                       "environment for the cell in [matrix] environments");
  };
  auto venv = OPFORGE_TRY(m.proc.run(
      probe::Command{.argv = {cell.python, "-m", "venv", cell.env.string()}, .timeout = std::chrono::minutes(5)}));
  if (!venv.ok()) return fail("`" + cell.python + " -m venv`", venv);
  std::vector<std::string> argv = {
      cell.env_python.string(), "-m", "pip", "install", "--disable-pip-version-check", "--no-input",
      cell.torch_requirement};
  argv.insert(argv.end(), r.matrix.requirements.begin(), r.matrix.requirements.end());
  auto pip = OPFORGE_TRY(m.proc.run(probe::Command{.argv = argv, .timeout = std::chrono::minutes(60)}));
  if (!pip.ok()) return fail("`pip install " + cell.torch_requirement + "`", pip);
  return {};
}

}  // namespace

Status ensure_env(probe::Machine m, const recipe::Recipe& r, Cell& cell,
                  const std::function<void(std::string_view)>& on_line) {
  if (cell.user_env) return {};
  OPFORGE_CHECK(m.fs.create_directories(cell.env.parent_path()));
  const fs::path lock_file = env_lock(cell.env);
  auto waiting = [&] {
    if (on_line) on_line("waiting for another opforge process that makes (or prunes) the environment of " + cell.id);
  };
  nlohmann::json marker = {{"cell", cell.id},
                           {"python", cell.python},
                           {"python_version", cell.python_version},
                           {"torch", cell.torch_requirement},
                           {"requirements", r.matrix.requirements}};
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto shared = OPFORGE_TRY(probe::wait_for_shared_lock(m.fs, lock_file, waiting));
    if (m.fs.resolved_type(cell.env / kEnvMarker) == probe::FileType::regular) {
      cell.ready = true;
      cell.hold = shared;
      // The marker's time is the environment's last use (the cache listing sorts by it).
      return m.fs.write_file_atomic(cell.env / kEnvMarker, util::json_dump(marker, 2) + "\n");
    }
    shared.reset();
    auto lock = OPFORGE_TRY(probe::wait_for_lock(m.fs, lock_file, waiting));
    if (m.fs.resolved_type(cell.env / kEnvMarker) != probe::FileType::regular) {
      OPFORGE_CHECK(make_env(m, r, cell, on_line));
      OPFORGE_CHECK(m.fs.create_directories(cell.env));
      OPFORGE_CHECK(m.fs.write_file_atomic(cell.env / kEnvMarker, util::json_dump(marker, 2) + "\n"));
      // Its size, once: listing the cache never walks it.
      (void)probe::record_size(m.fs, cell.env, probe::tree_bytes(m.fs, cell.env));
    }
  }
  return failure("the environment " + cell.env.string() + " was removed three times while this build waited",
                 "is `opforge cache prune` running in a loop?");
}

std::vector<CellView> describe_cells(probe::Machine m, const recipe::Recipe& r, const std::vector<Cell>& cells,
                                     const fs::path& cache) {
  std::vector<CellView> out;
  for (auto& c : cells) {
    CellView v{c, "", "", "unknown"};
    if (!c.ready) {
      v.toolkit = "decided once the environment is made";
      out.push_back(std::move(v));
      continue;
    }
    auto torch = cuda::read_torch(m, c.env_python.string());
    if (torch && torch->cuda) v.cuda = torch->cuda->str();
    auto res = cuda::resolve(m, "torch", c.env_python.string());
    const bool exact = res && res->chosen && torch && torch->cuda && res->chosen->version == *torch->cuda;
    if (exact) {
      v.toolkit = res->chosen->root.string();
      v.toolkit_from = "installed";
    } else if (r.cuda.provision == "pypi" && torch && torch->cuda) {
      auto p = cuda::describe_provision(m, *torch, cache);
      if (p) {
        v.toolkit = p->dir.string();
        v.toolkit_from = p->present ? "pypi" : "pypi (to fetch: " + p->requirement + ")";
      } else {
        v.toolkit = p.error().message.substr(0, p.error().message.find('\n'));
        v.toolkit_from = "none";
      }
    } else if (res && res->chosen) {
      v.toolkit = res->chosen->root.string();
      v.toolkit_from = "installed (CUDA " + res->chosen->version.str() + ", not torch's)";
    } else {
      v.toolkit_from = "none";
    }
    out.push_back(std::move(v));
  }
  return out;
}

std::string matrix_json(const std::vector<CellView>& views) {
  nlohmann::json inc = nlohmann::json::array();
  for (auto& v : views)
    inc.push_back({{"cell", v.cell.id},
                   {"index", v.cell.index},
                   {"torch", v.cell.torch},
                   {"python", v.cell.python_version},
                   {"platform", v.cell.platform.empty() ? std::string(target::host_platform().name) : v.cell.platform},
                   {"cuda", v.cuda},
                   {"toolkit_from", v.toolkit_from}});
  for (std::size_t i = 0; i < views.size(); ++i)
    if (!views[i].cell.arch.empty()) {
      inc[i]["arch"] = views[i].cell.arch;
      inc[i]["fallback"] = views[i].cell.fallback;
    }
  return util::json_dump(nlohmann::json{{"include", inc}});
}

}  // namespace opforge::plan
