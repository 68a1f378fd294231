#include "cuda/resolve.h"

#include <algorithm>

#include "cuda/mismatch.h"
#include "settings/settings.h"
#include "util/strings.h"

namespace opforge::cuda {

namespace {

Result<std::vector<VersionClause>> parse_spec(const std::string& spec) {
  auto clauses = parse_version_spec(spec);
  if (!clauses) {
    Error e = clauses.error();
    e.where = {};  // the recipe's own check points at the file; here the spec has no location
    e.message = "invalid [cuda] version: " + e.message;
    return opforge::unexpected(e);
  }
  return clauses;
}

std::string listing(const Resolution& r) {
  std::string s;
  for (auto& c : r.candidates) {
    s += "\n  " + c.path.string() + " (" + c.found_by + ")";
    if (c.toolkit) s += " CUDA " + c.toolkit->version.str() + " [" + c.toolkit->version_source + "]";
    s += ": " + c.said();
  }
  if (r.candidates.empty()) s = "\n  (no candidate folder found)";
  return s;
}

}  // namespace

namespace {

/// A toolkit the user named (PyTorch's order: CUDA_HOME, else CUDA_PATH).
struct Named {
  std::string var, value;
  Origin origin = Origin::cuda_home;  ///< the candidate `var` makes (discover())
  Candidate* candidate = nullptr;     ///< null when no variable names one
};

/// What every way of choosing looks at.
struct Choice {
  Resolution& res;
  const probe::Environment& env;
  std::vector<Candidate*> valid;  ///< newest first; ties keep discovery order (CUDA_HOME first)
  Named named;
  std::optional<Version> torch_cuda;

  bool skip_cuda_check() const { return settings::skip_cuda_check(env); }
  opforge::unexpected<Error> conflict(const std::string& what) const {
    auto e = unsatisfied(named.var + "=" + strings::cut(named.value) + " is CUDA " +
                             named.candidate->toolkit->version.str() + ", " + what,
                         "point " + named.var + " at a matching toolkit, unset it, or change [cuda] version");
    e.error().names_user_setting = true;
    return e;
  }
};

struct Pick {
  Candidate* candidate = nullptr;
  std::string why;
};

std::vector<Candidate*> valid_newest_first(Resolution& res) {
  std::vector<Candidate*> valid;
  for (auto& c : res.candidates)
    if (c.toolkit) valid.push_back(&c);
  std::stable_sort(valid.begin(), valid.end(),
                   [](auto* a, auto* b) { return a->toolkit->version > b->toolkit->version; });
  return valid;
}

/// A toolkit the user named is used or refused, never passed over in silence.
Result<Named> named_toolkit(Resolution& res, const probe::Environment& env) {
  Named named;
  if (auto roots = settings::toolkit_roots(env); !roots.empty()) {
    named.var = roots.front().first;
    named.value = roots.front().second;
    named.origin = *origin_from_name(named.var);
  }
  if (named.var.empty()) return named;
  for (auto& c : res.candidates)
    if (c.found_through(named.origin)) {
      named.candidate = &c;
      break;
    }
  if (named.candidate && named.candidate->toolkit) return named;
  const std::string reason = named.candidate ? named.candidate->why : "not looked at";
  return bad_input(named.var + "=" + strings::cut(named.value) + " is not a CUDA toolkit: " + reason,
                   "point " + named.var +
                       " at a toolkit's folder (holding bin/nvcc, include/cuda.h and lib64/libcudart*), or unset it");
}

/// The recipe's explicit request wins over a toolkit CUDA_HOME/CUDA_PATH names (an image or a
/// module system sets it for every build, it cannot match every cell of a matrix): the named
/// toolkit is passed over, said so in its verdict and a warning with how to use it instead.
void pass_over_named(Choice& ch, const std::string& request) {
  Candidate& c = *ch.named.candidate;
  c.verdict = Verdict::not_chosen;
  c.why = request + " in the recipe wins over " + ch.named.var + " (CUDA " + c.toolkit->version.str() + ")";
  ch.res.warnings.push_back(ch.named.var + "=" + strings::cut(ch.named.value) + " (CUDA " + c.toolkit->version.str() +
                            ") is not used: " + request + " in the recipe asks for another toolkit; to build with " +
                            ch.named.var + "'s, set [cuda] version = \"auto\" (or \"" + c.toolkit->version.str() +
                            "\")");
}

/// Why a toolkit of another minor than torch's was chosen (valid_newest_first: the first of the
/// major is its newest).
std::string newest_of_major(const Version& want) {
  return "newest toolkit of torch's CUDA major " + std::to_string(want.major) + "; none here is torch's CUDA " +
         want.str() + " (PyTorch only warns on a minor difference)";
}

/// [cuda] version = "torch" with CUDA_HOME/CUDA_PATH set: the named toolkit if it is torch's
/// exact CUDA; else another toolkit that is (the recipe's request wins); else the named one if
/// its major matches (PyTorch warns on a minor difference); else another of torch's major.
Result<Pick> pick_named_for_torch(Choice& ch, const Version& want, const std::string& torch_version) {
  const Version& have = ch.named.candidate->toolkit->version;
  const std::string request = "[cuda] version = \"torch\" (torch " + torch_version + ", CUDA " + want.str() + ")";
  if (have == want) return Pick{ch.named.candidate, ch.named.var + " points to it, torch's exact CUDA " + want.str()};
  for (auto* c : ch.valid)
    if (c != ch.named.candidate && c->toolkit->version == want) {
      pass_over_named(ch, request);
      return Pick{c, "same CUDA version as torch " + torch_version + " (" + request + " decided)"};
    }
  if (compare_cuda(have, want) != Mismatch::major) {
    ch.res.warnings.push_back("CUDA " + have.str() + " (" + ch.named.var + ") differs from torch's CUDA " + want.str());
    return Pick{ch.named.candidate, ch.named.var + " points to it"};
  }
  for (auto* c : ch.valid)
    if (c != ch.named.candidate && compare_cuda(c->toolkit->version, want) != Mismatch::major) {
      pass_over_named(ch, request);
      ch.res.minor_mismatch_warning = ch.res.warnings.size();
      ch.res.warnings.push_back("CUDA " + c->toolkit->version.str() + " differs from torch's CUDA " + want.str() +
                                " in the minor version; this usually works (PyTorch only warns)");
      return Pick{c, newest_of_major(want) + " (" + request + " decided)"};
    }
  if (!ch.skip_cuda_check())
    return ch.conflict("but torch " + torch_version + " is built for CUDA " + want.str() +
                       " ([cuda] version = \"torch\"; DS_SKIP_CUDA_CHECK=1 allows a major mismatch)");
  ch.res.warnings.push_back("CUDA " + have.str() + " (" + ch.named.var + ") differs from torch's CUDA " + want.str());
  return Pick{ch.named.candidate, ch.named.var + " points to it"};
}

/// [cuda] version = "torch": a toolkit of torch's CUDA major.minor, else the newest of its major
/// with a warning (PyTorch only warns on a minor mismatch; docs/recipe.md says the same).
Result<Pick> pick_for_torch(Choice& ch) {
  const auto& torch = ch.res.torch;
  if (!torch || !torch->torch_version)
    return unsatisfied(
        "[cuda] version = \"torch\", but " +
            std::string(torch ? "torch is not installed for " + torch->python : "the Python could not be run"),
        "install a CUDA-enabled torch for that Python, choose another one with --python / [cuda] python, or set [cuda] "
        "version to \"auto\" or \"X.Y\"");
  if (!ch.torch_cuda)
    return unsatisfied("[cuda] version = \"torch\", but torch " + *torch->torch_version + " of " + torch->python +
                           " is a CPU-only build",
                       "install a CUDA-enabled torch, or set [cuda] version to \"auto\" or \"X.Y\"");
  const Version& want = *ch.torch_cuda;
  if (ch.named.candidate) return pick_named_for_torch(ch, want, *torch->torch_version);
  for (auto* c : ch.valid)
    if (c->toolkit->version == want) return Pick{c, "same CUDA version as torch " + *torch->torch_version};
  for (auto* c : ch.valid)
    if (compare_cuda(c->toolkit->version, want) != Mismatch::major) {
      ch.res.minor_mismatch_warning = ch.res.warnings.size();
      ch.res.warnings.push_back("CUDA " + c->toolkit->version.str() + " differs from torch's CUDA " + want.str() +
                                " in the minor version; this usually works (PyTorch only warns)");
      return Pick{c, newest_of_major(want)};
    }
  if (ch.valid.empty()) return Pick{};
  if (ch.skip_cuda_check()) {
    Candidate* c = ch.valid.front();
    ch.res.warnings.push_back("CUDA " + c->toolkit->version.str() + " does not match torch's CUDA " + want.str() +
                              " (major mismatch, allowed by DS_SKIP_CUDA_CHECK=1)");
    return Pick{c, "newest valid toolkit (DS_SKIP_CUDA_CHECK=1 bypasses the torch CUDA check)"};
  }
  for (auto* c : ch.valid) {
    c->verdict = Verdict::not_chosen;
    c->why = "CUDA major differs from torch's " + want.str();
  }
  return unsatisfied(
      "no CUDA toolkit matches torch's CUDA " + want.str() + " (major version mismatch):" + listing(ch.res),
      "install CUDA " + want.str() + ", or set DS_SKIP_CUDA_CHECK=1 to build anyway");
}

/// [cuda] version = "auto": the named toolkit, else the newest with torch's CUDA, else the newest.
Pick pick_auto(Choice& ch) {
  if (ch.named.candidate)
    return Pick{ch.named.candidate, ch.named.var + " points to it ([cuda] version = \"auto\" leaves the choice to " +
                                        ch.named.var + "; unset it to choose by torch's CUDA)"};
  if (ch.torch_cuda)
    for (auto* c : ch.valid)
      if (c->toolkit->version == *ch.torch_cuda)
        return Pick{c, "newest toolkit with torch's CUDA " + ch.torch_cuda->str()};
  if (ch.valid.empty()) return Pick{};
  Candidate* c = ch.valid.front();
  if (ch.torch_cuda)
    ch.res.warnings.push_back("no toolkit has torch's CUDA " + ch.torch_cuda->str() + "; using CUDA " +
                              c->toolkit->version.str());
  return Pick{c, "newest valid toolkit"};
}

/// [cuda] version = "X.Y" or clauses: CUDA_HOME/CUDA_PATH's toolkit when it matches, else the newest that does.
Result<Pick> pick_matching(Choice& ch, const std::string& spec, const std::vector<VersionClause>& constraints) {
  auto matches = [&](const Candidate* c) {
    return std::all_of(constraints.begin(), constraints.end(), [&](auto& k) { return k.accepts(c->toolkit->version); });
  };
  Pick pick;
  if (ch.named.candidate) {
    if (matches(ch.named.candidate))
      pick = Pick{ch.named.candidate, "matches " + spec + "; " + ch.named.var + " points to it"};
    else pass_over_named(ch, "[cuda] version = \"" + spec + "\"");
  }
  for (auto* c : ch.valid)
    if (!pick.candidate && matches(c))
      pick = Pick{c, "newest toolkit matching " + spec + " ([cuda] version in the recipe decided)"};
  for (auto* c : ch.valid)
    if (c != pick.candidate && c != ch.named.candidate && !matches(c)) {
      c->verdict = Verdict::not_chosen;
      c->why = "CUDA " + c->toolkit->version.str() + " does not match " + spec;
    }
  return pick;
}

/// Marks the pick and says of every other valid toolkit why it was not chosen.
Status settle(Choice& ch, const Pick& pick, const std::string& spec) {
  if (!pick.candidate) {
    std::string hint = spec == "auto" ? "install a CUDA toolkit (or set CUDA_HOME to one)"
                                      : "install a CUDA toolkit matching " + spec + " or change [cuda] version";
    auto e =
        unsatisfied("no CUDA toolkit satisfies [cuda] version = \"" + spec + "\"; looked at:" + listing(ch.res), hint);
    // A toolkit the user named was passed over: an error about their setting, never a silent skip.
    e.error().names_user_setting = ch.named.candidate != nullptr;
    return e;
  }
  const Version& chosen = pick.candidate->toolkit->version;
  pick.candidate->verdict = Verdict::chosen;
  pick.candidate->why = pick.why;
  for (auto* c : ch.valid)
    if (c != pick.candidate && c->verdict == Verdict::valid) {
      c->verdict = Verdict::not_chosen;
      c->why = c->toolkit->version < chosen
                   ? "older than CUDA " + chosen.str()
                   : "the chosen toolkit is CUDA " + chosen.str() + " at " + pick.candidate->toolkit->root.string();
    }
  if (ch.torch_cuda && spec != "torch" && compare_cuda(chosen, *ch.torch_cuda) == Mismatch::major)
    ch.res.warnings.push_back(
        "torch's CUDA is " + ch.torch_cuda->str() + " but the chosen toolkit is CUDA " + chosen.str() +
        " (the ops reach only the driver, so this is fine for opforge_ops; not for torch extensions)");
  ch.res.chosen = pick.candidate->toolkit;
  // The guides' PATH confusion in one line: `which nvcc` is another toolkit than the one chosen.
  for (auto* c : ch.valid)
    if (c != pick.candidate && c->found_through(Origin::nvcc_on_path))
      ch.res.warnings.push_back("the nvcc on PATH (" + c->toolkit->nvcc.string() + ", CUDA " +
                                c->toolkit->version.str() + ") is not the toolkit chosen (CUDA " + chosen.str() +
                                " at " + pick.candidate->toolkit->root.string() +
                                "); opforge's builds use the chosen one, a build by hand needs " +
                                (pick.candidate->toolkit->root / "bin").string() + " first on PATH");
  return {};
}

}  // namespace

Result<Resolution> choose(Resolution res, const std::string& spec_in, const probe::Environment& env) {
  std::string spec(strings::trim(spec_in));
  if (spec.empty()) spec = "auto";
  std::vector<VersionClause> constraints;
  if (spec != "auto" && spec != "torch") constraints = OPFORGE_TRY(parse_spec(spec));
  Choice ch{res, env, valid_newest_first(res), OPFORGE_TRY(named_toolkit(res, env)),
            res.torch ? res.torch->cuda : std::nullopt};
  Pick pick = spec == "torch"  ? OPFORGE_TRY(pick_for_torch(ch))
              : spec == "auto" ? pick_auto(ch)
                               : OPFORGE_TRY(pick_matching(ch, spec, constraints));
  OPFORGE_CHECK(settle(ch, pick, spec));
  return res;
}

Result<Resolution> resolve(probe::Machine m, const std::string& version_spec, const std::string& python) {
  std::string spec(strings::trim(version_spec));
  // Reject a malformed spec before spending a python start on it.
  if (!spec.empty() && spec != "auto" && spec != "torch") OPFORGE_TRY(parse_spec(spec));
  auto torch = read_torch(m, python);
  return choose(discover(m, torch), spec, m.env);
}

std::map<std::string, std::string> exports(const Toolkit& tk, const probe::Environment& env) {
  auto prepend = [](const fs::path& dir, const std::string& cur) {
    return cur.empty() ? dir.string() : dir.string() + ":" + cur;
  };
  // A distribution's toolkit lives in the system's own folders (CUDA_HOME=/usr, libcudart in
  // /usr/lib/x86_64-linux-gnu): /usr/bin first on PATH would put the system's python and
  // compilers before a venv's, and the loader searches the system's library folder anyway.
  auto system_dir = [](const fs::path& d) {
    return d == "/usr/bin" || d == "/bin" || d == "/usr/lib" || d == "/lib" ||
           (d.parent_path() == "/usr/lib" && d.filename().string().ends_with("-linux-gnu"));
  };
  std::map<std::string, std::string> out{{"CUDA_HOME", tk.root.string()}};
  const fs::path bin = tk.root / "bin";
  const std::string path = settings::path(env);
  out["PATH"] = system_dir(bin) ? (path.empty() ? bin.string() : path) : prepend(bin, path);
  if (!system_dir(tk.lib_dir)) out["LD_LIBRARY_PATH"] = prepend(tk.lib_dir, settings::library_path(env).value_or(""));
  return out;
}

}  // namespace opforge::cuda
