#include "ops/cache.h"

#include "settings/settings.h"

namespace opforge::ops {

ProgramPath locate_program(probe::Machine m, const std::string& name) {
  ProgramPath p{name, {}};
  if (name.find('/') == std::string::npos)
    if (auto found = probe::find_on_path(m.fs, name, settings::path(m.env))) p.found = *found;
  p.real = m.fs.canonical(p.found).value_or(p.found);
  return p;
}

}  // namespace opforge::ops
