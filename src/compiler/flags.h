#pragma once
/// Every option opforge adds to nvcc, gcc and clang, with the first version that accepts it and
/// where that fact comes from (docs/reference.md, "Flags each tool accepts"). The native backend,
/// the command backend's variables and the compiler wrappers ask here before adding a flag.
#include <optional>
#include <string_view>
#include <vector>

#include "util/version.h"

namespace opforge::compiler {

enum class Tool { nvcc, gcc, clang };

struct FlagFact {
  Tool tool;
  std::string_view flag;    ///< as written, up to its '=' (`-frandom-seed`, `--compress-mode`)
  Version since;            ///< the first version that accepts it
  std::string_view why;     ///< what opforge adds it for
  std::string_view source;  ///< where `since` comes from: release notes, or tried here with the real tool
};

/// The table, in the order docs/reference.md lists it.
const std::vector<FlagFact>& flag_table();

/// Whether `tool` at `version` accepts `flag` (a flag missing from the table: true, so a typo in
/// a caller shows up in tests, never as a silently dropped flag; see the table test).
bool accepts(Tool tool, std::string_view flag, const Version& version);

/// The table's row for `flag`, if it has one.
std::optional<FlagFact> fact(Tool tool, std::string_view flag);

}  // namespace opforge::compiler
