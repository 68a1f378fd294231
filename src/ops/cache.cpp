#include "ops/cache.h"

namespace opforge::ops {

ProgramPath locate_program(probe::Machine m, const std::string& name) {
  ProgramPath p{name, {}};
  if (name.find('/') == std::string::npos)
    if (auto found = probe::find_on_path(m.fs, name, m.env.get("PATH").value_or(""))) p.found = *found;
  p.real = m.fs.canonical(p.found).value_or(p.found);
  return p;
}

}  // namespace opforge::ops
