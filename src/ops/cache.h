#pragma once
/// What the ops stage keeps in the cache folder between plans (probes.json, deepspeed-compat.json:
/// probe::JsonCache files), and how a program a probe runs is located.
#include <string>

#include "probe/json_cache.h"
#include "probe/machine.h"

namespace opforge::ops {

namespace fs = std::filesystem;

/// A program as a command names it: `found` is where it runs from (looked up on PATH when the
/// name has no '/'), `real` the file behind it (symlinks resolved), whose stamp keys a cache entry.
struct ProgramPath {
  fs::path found, real;
};
ProgramPath locate_program(probe::Machine m, const std::string& name);

}  // namespace opforge::ops
