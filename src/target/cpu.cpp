// The look-ups over every machine's CPU table (target/cpu.h); the tables are x86.cpp's and arm.cpp's.
#include "target/cpu.h"

#include <algorithm>
#include <array>

#include "target/arm.h"
#include "target/x86.h"

namespace opforge::target {
namespace {

std::set<std::string> families_up_to(const CpuMachine& m, int level) {
  std::set<std::string> out;
  for (const auto& f : m.families)
    if (f.level >= 2 && f.level <= level) out.emplace(f.name);
  return out;
}

CpuTarget level_target(const CpuMachine& m, int level) {
  std::string name(m.levels[static_cast<std::size_t>(level - 1)]);
  return CpuTarget{name, level, families_up_to(m, level), std::string(m.platform), name, "generic", false};
}

CpuTarget cpu_target(const CpuMachine& m, const NamedCpu& cpu) {
  CpuTarget t{std::string(cpu.name),
              cpu.level,
              families_up_to(m, cpu.level),
              std::string(m.platform),
              std::string(cpu.arch.empty() ? cpu.name : cpu.arch),
              std::string(cpu.tune.empty() ? cpu.name : cpu.tune),
              true};
  for (auto f : cpu.extra) t.families.emplace(f);
  return t;
}

}  // namespace

std::span<const CpuMachine* const> cpu_machines() {
  static const std::array<const CpuMachine*, 2> machines{&x86_machine(), &arm_machine()};
  return machines;
}

const CpuMachine* cpu_machine(std::string_view platform) {
  for (const CpuMachine* m : cpu_machines())
    if (m->platform == platform) return m;
  return nullptr;
}

std::vector<std::string> cpu_target_names(std::string_view platform) {
  std::vector<std::string> out;
  const CpuMachine* m = cpu_machine(platform);
  if (!m) return out;
  for (auto level : m->levels) out.emplace_back(level);
  for (const auto& cpu : m->cpus) out.emplace_back(cpu.name);
  return out;
}

std::vector<std::string> cpu_target_names() {
  std::vector<std::string> out;
  for (const CpuMachine* m : cpu_machines()) {
    auto names = cpu_target_names(m->platform);
    out.insert(out.end(), names.begin(), names.end());
  }
  return out;
}

std::optional<CpuTarget> find_cpu_target(std::string_view name) {
  for (const CpuMachine* m : cpu_machines()) {
    for (std::size_t i = 0; i < m->levels.size(); ++i)
      if (m->levels[i] == name) return level_target(*m, static_cast<int>(i) + 1);
    for (const auto& cpu : m->cpus)
      if (cpu.name == name) return cpu_target(*m, cpu);
  }
  return std::nullopt;
}

std::span<const IsaFamily> isa_families(std::string_view platform) {
  const CpuMachine* m = cpu_machine(platform);
  return m ? m->families : std::span<const IsaFamily>{};
}

const IsaFamily* find_family(std::string_view platform, std::string_view name) {
  for (const auto& f : isa_families(platform))
    if (f.name == name) return &f;
  return nullptr;
}

std::string level_name(std::string_view platform, int level) {
  const CpuMachine* m = cpu_machine(platform);
  if (!m || m->levels.empty()) return {};
  const auto last = static_cast<int>(m->levels.size());
  return std::string(m->levels[static_cast<std::size_t>(std::clamp(level, 1, last) - 1)]);
}

std::set<std::string> families_of_flags(const std::vector<std::string>& flags) {
  std::set<std::string> out;
  for (const CpuMachine* m : cpu_machines()) out.merge(m->families_of_flags(flags));
  return out;
}

}  // namespace opforge::target
