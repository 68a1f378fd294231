#include "compile/command/op_schedule.h"

#include <gtest/gtest.h>

namespace opforge::compile {
namespace {

namespace fs = std::filesystem;

ops::Decision op(std::string name, std::vector<fs::path> sources, bool build = true) {
  ops::Decision d;
  d.manifest.name = std::move(name);
  d.manifest.sources = std::move(sources);
  d.status = build ? ops::OpStatus::build : ops::OpStatus::skipped;
  return d;
}

TEST(CompileOpSchedule, WorkCountsUnitsAndWeighsCudaOnesMore) {
  auto work = op_work({op("transformer", {"a.cu", "b.cu", "c.cpp", "k.cuh"}), op("utils", {"flatten.cpp"}),
                       op("skipped", {"x.cu"}, false), op("unknown", {})});
  ASSERT_EQ(work.size(), 3u);
  EXPECT_EQ(work[0].op, "transformer");
  EXPECT_EQ(work[0].units, 3u);  // the header is not a unit
  EXPECT_EQ(work[0].cuda_units, 2u);
  EXPECT_DOUBLE_EQ(work[0].cost, 2 * kCudaUnitCost + 1);
  EXPECT_EQ(work[1].units, 1u);
  EXPECT_DOUBLE_EQ(work[1].cost, 1);
  EXPECT_EQ(work[2].op, "unknown");  // sources unknown: one host unit
  EXPECT_EQ(work[2].units, 1u);
}

TEST(CompileOpSchedule, CostliestStartFirstThenByName) {
  auto work =
      op_work({op("b_small", {"x.cpp"}), op("a_small", {"x.cpp"}), op("big", {"a.cu", "b.cu"}), op("mid", {"a.cu"})});
  auto order = start_order(work);
  std::vector<std::string> names;
  for (auto i : order) names.push_back(work[i].op);
  EXPECT_EQ(names, (std::vector<std::string>{"big", "mid", "a_small", "b_small"}));
}

TEST(CompileOpSchedule, SlotsAreLeftForWaitingOpsAndNeverExceeded) {
  OpWork big{"big", 8, 8, 32};
  // Two cores, many ops waiting: one job each, two ops at once.
  EXPECT_EQ(grant_for(big, 2, 10, 1).jobs, 1u);
  // Eight slots, three ops waiting: this one takes five, three stay free for the others.
  EXPECT_EQ(grant_for(big, 8, 3, 1).jobs, 5u);
  // The last op takes every free slot, up to its units.
  EXPECT_EQ(grant_for(big, 4, 0, 1).jobs, 4u);
  OpWork one{"one", 1, 1, 4};
  EXPECT_EQ(grant_for(one, 4, 0, 1).jobs, 1u);
  for (unsigned free = 1; free <= 16; ++free)
    for (std::size_t waiting = 0; waiting < 5; ++waiting)
      for (std::size_t arches = 1; arches < 4; ++arches) {
        auto g = grant_for(big, free, waiting, arches);
        EXPECT_GE(g.jobs, 1u);
        EXPECT_LE(g.slots(), free) << free << " " << waiting << " " << arches;
        auto h = grant_for(one, free, waiting, arches);
        EXPECT_LE(h.slots(), free) << free << " " << waiting << " " << arches;
      }
}

TEST(CompileOpSchedule, IdleSlotsBecomeNvccThreadsForSeveralArchitecturesOnly) {
  OpWork one_cu{"fp_quantizer", 1, 1, 4};
  EXPECT_EQ(grant_for(one_cu, 4, 0, 1).nvcc_threads, 1u);  // one architecture: nothing to split
  auto g = grant_for(one_cu, 4, 0, 3);
  EXPECT_EQ(g.jobs, 1u);
  EXPECT_EQ(g.nvcc_threads, 3u);  // one thread per architecture at most
  EXPECT_EQ(grant_for(one_cu, 4, 0, 8).nvcc_threads, 4u);
  OpWork host{"utils", 1, 0, 1};
  EXPECT_EQ(grant_for(host, 4, 0, 3).nvcc_threads, 1u);    // no CUDA unit
  EXPECT_EQ(grant_for(one_cu, 2, 1, 3).nvcc_threads, 1u);  // the other slot is left for a waiting op
}

}  // namespace
}  // namespace opforge::compile
