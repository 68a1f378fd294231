#pragma once
/// dist/: committing a wheel with its build record, recovering from a killed commit, the lock
/// that builds sharing a dist/ folder take, and finding a wheel this build would only repeat.
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "probe/machine.h"
#include "record/record.h"
#include "util/error.h"

namespace opforge::pipeline {

namespace fs = std::filesystem;

/// The wheel `name` and its record in `dist`, when the record was made from these inputs
/// (`fingerprint`) and the wheel's bytes still match it. Only the record of the wheel this build
/// makes is read: other files in dist/ are not this build's business.
std::optional<std::pair<fs::path, record::Record>> find_reusable(probe::Machine m, const fs::path& dist,
                                                                 const std::string& name,
                                                                 const std::string& fingerprint);

/// Commits `wheel` (`bytes`) and its record `rec` into dist/. Two renames cannot be one atomic step, so the
/// record is the commit point and a wheel without its record is not committed:
///   1. the wheel and the record are written completely under hidden names (.W.opforge-new,
///      .R.opforge-new);
///   2. an existing record of the same name is moved aside (.R.opforge-old), so that no record
///      ever sits beside a wheel it does not describe;
///   3. the wheel is renamed into place, 4. the record is renamed into place (committed),
///   5. the old record is removed.
/// A kill at any moment leaves either the previous pair, the new pair, or a wheel without a record
/// plus hidden files that say which; recover_dist() (next build, under the build lock) finishes
/// the commit when the new wheel is in place, or puts the previous record back, and removes every
/// stale temporary.
Status commit(probe::Machine m, const fs::path& wheel, std::string_view bytes, const record::Record& rec);

/// Finishes or undoes a commit a kill interrupted, then removes opforge's stale temporaries from
/// `dist` (only hidden names opforge makes: .W.opforge-new, .R.opforge-old, .X.tmp-*).
Status recover_dist(probe::Machine m, const fs::path& dist);

/// dist/ may be shared by builds of other recipes, each under its own build folder's lock.
/// Recovering, the reuse check and a commit hold dist/.opforge-dist.lock, so that one build's
/// recovery never removes another's staged files and two commits never interleave. The lock is
/// held for seconds at most (no compiling under it): a second build waits for it.
Result<std::shared_ptr<void>> lock_dist(probe::Machine m, const fs::path& dist,
                                        const std::function<void(std::string_view)>& on_line,
                                        probe::Clock* clock = nullptr);

}  // namespace opforge::pipeline
