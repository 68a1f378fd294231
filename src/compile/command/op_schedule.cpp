#include "compile/command/op_schedule.h"

#include <algorithm>
#include <numeric>

namespace opforge::compile {

std::vector<OpWork> op_work(const std::vector<ops::Decision>& ops) {
  std::vector<OpWork> out;
  for (const auto& d : ops) {
    if (!d.builds()) continue;
    OpWork w;
    w.op = d.manifest.name;
    unsigned units = 0;
    double cost = 0;
    for (const auto& s : d.manifest.sources) {
      const auto ext = s.extension();
      if (ext == ".h" || ext == ".hpp" || ext == ".cuh") continue;
      ++units;
      const bool cuda = ext == ".cu";
      w.cuda_units += cuda ? 1 : 0;
      cost += cuda ? kCudaUnitCost : 1;
    }
    w.units = std::max(1u, units);
    w.cost = std::max(1.0, cost);
    out.push_back(std::move(w));
  }
  return out;
}

std::vector<std::size_t> start_order(const std::vector<OpWork>& work) {
  std::vector<std::size_t> order(work.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (work[a].cost != work[b].cost) return work[a].cost > work[b].cost;
    return work[a].op < work[b].op;
  });
  return order;
}

Grant grant_for(const OpWork& work, unsigned free, std::size_t waiting, std::size_t arches) {
  free = std::max(1u, free);
  const unsigned left_for_others = static_cast<unsigned>(std::min<std::size_t>(waiting, free - 1));
  const unsigned mine = free - left_for_others;
  Grant g;
  g.jobs = std::min(mine, std::max(1u, work.units));
  // Idle slots beyond the op's units: its nvcc compiles split their architectures over threads.
  if (work.cuda_units > 0 && arches > 1 && mine > g.jobs)
    g.nvcc_threads = static_cast<unsigned>(std::min<std::size_t>(arches, mine / g.jobs));
  return g;
}

}  // namespace opforge::compile
