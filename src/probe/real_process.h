#pragma once
// The real process runner, kept apart from the rest of real_machine.cpp: fork, the watchdog and
// the poll loop are one concept of their own.
#include <memory>

#include "probe/machine.h"

namespace opforge::probe {

/// A runner that forks real processes; `fs` finds argv[0] on the child's PATH.
std::unique_ptr<ProcessRunner> make_real_process_runner(const FileSystem& fs);

}  // namespace opforge::probe
