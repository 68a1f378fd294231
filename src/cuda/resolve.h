#pragma once
/// Which CUDA toolkit a recipe gets, and why (docs/reference.md §4): the choice among what
/// discover() found. resolve() composes the scanners, the torch lookup and discovery, so this
/// header brings their declarations too.
#include <map>
#include <string>

#include "cuda/discover.h"
#include "cuda/toolkit.h"
#include "cuda/torch.h"
#include "cuda/versions.h"
#include "probe/machine.h"
#include "util/error.h"

namespace opforge::cuda {

/// Chooses among `discovered` per spec (marks candidates, fills verdicts and warnings).
/// The pure half of resolve().
Result<Resolution> choose(Resolution discovered, const std::string& version_spec, const probe::Environment& env);

/// discover + choose per spec: "auto" (newest valid, preferring torch's major.minor), "torch",
/// "X.Y", ranges ">=12.1,<13". bad_input for a malformed spec; unsatisfied (exit 3) when nothing
/// matches — the message lists every candidate and why. CUDA_HOME (else CUDA_PATH) from m.env,
/// when set, is the toolkit used: bad_input when it is not a toolkit (the message says what is
/// missing), unsatisfied (with Error::names_user_setting) when its version does not match the spec
/// or torch's CUDA major.
/// DS_SKIP_CUDA_CHECK=1 turns the torch major mismatch into a warning.
Result<Resolution> resolve(probe::Machine m, const std::string& version_spec, const std::string& python);

/// CUDA_HOME, PATH (toolkit bin prepended to the current PATH), LD_LIBRARY_PATH (lib dir prepended).
std::map<std::string, std::string> exports(const Toolkit& tk, const probe::Environment& env);

}  // namespace opforge::cuda
