// `jobs = "auto"` on the fake machine: cores, MemAvailable, a cgroup v2 limit and recorded peaks
// decide how many compiles run at once.
#include <gtest/gtest.h>
#include <fstream>
#include <sstream>

#include "plan/jobs.h"
#include "probe/fake_machine.h"

using namespace opforge;

namespace {

constexpr std::uint64_t kGiB = 1024 * 1024;  // in KiB

ops::Decision op(const std::string& name, ops::Kind kind, bool build = true) {
  ops::Decision d;
  d.manifest.name = name;
  d.manifest.kind = kind;
  d.status = build ? ops::OpStatus::build : ops::OpStatus::skipped;
  return d;
}

std::string meminfo(std::uint64_t available_kib) {
  return "MemTotal:       24000000 kB\nMemFree:         1000000 kB\nMemAvailable:   " + std::to_string(available_kib) +
         " kB\nBuffers:          100000 kB\n";
}

}  // namespace

TEST(PlanJobs, MemAvailableBoundsTheCoresAtTheNvccDefault) {
  std::vector<ops::Decision> ops = {op("fused_adam", ops::Kind::cuda), op("cpu_adam", ops::Kind::cpu)};
  auto fit = plan::memory_aware_jobs(16, 10 * kGiB, ops, {});
  EXPECT_EQ(fit.jobs, 3u);  // 10 GiB / 3 GiB per nvcc compile
  EXPECT_EQ(fit.why, "16 cores; 10.0 GiB available / 3.0 GiB per nvcc compile");
  auto few_cores = plan::memory_aware_jobs(2, 21.4 * kGiB, ops, {});
  EXPECT_EQ(few_cores.jobs, 2u);
  EXPECT_EQ(few_cores.why, "2 cores; 21.4 GiB available / 3.0 GiB per nvcc compile");
}

TEST(PlanJobs, RecordedPeaksReplaceTheDefaults) {
  std::vector<ops::Decision> ops = {op("fused_adam", ops::Kind::cuda), op("cpu_adam", ops::Kind::cpu),
                                    op("huge", ops::Kind::cuda, false)};  // not built: not counted
  std::map<std::string, std::uint64_t> peaks = {{"fused_adam", kGiB / 2}, {"cpu_adam", kGiB}, {"huge", 40 * kGiB}};
  auto fit = plan::memory_aware_jobs(16, 10 * kGiB, ops, peaks);
  EXPECT_EQ(fit.jobs, 10u);
  EXPECT_EQ(fit.why, "16 cores; 10.0 GiB available / 1.0 GiB per compile (recorded)");
  // One op without history falls back to the default for its kind.
  ops.push_back(op("new_cuda", ops::Kind::cuda));
  EXPECT_EQ(plan::memory_aware_jobs(16, 10 * kGiB, ops, peaks).jobs, 3u);
}

TEST(PlanJobs, AtLeastOneJobAndCoresWhenMemoryIsUnknown) {
  std::vector<ops::Decision> ops = {op("fused_adam", ops::Kind::cuda)};
  EXPECT_EQ(plan::memory_aware_jobs(8, kGiB, ops, {}).jobs, 1u);  // less than one compile fits: still one
  auto unknown = plan::memory_aware_jobs(8, std::nullopt, ops, {});
  EXPECT_EQ(unknown.jobs, 8u);
  EXPECT_EQ(unknown.why, "8 cores; available memory unknown");
  EXPECT_EQ(plan::memory_aware_jobs(0, 10 * kGiB, {}, {}).jobs, 1u);  // nothing built, no cores known
}

TEST(PlanJobs, AvailableMemoryIsMemAvailableLoweredByTheCgroupLimit) {
  probe::FakeFileSystem fs;
  EXPECT_FALSE(plan::available_memory_kib(fs));
  fs.add_file("/proc/meminfo", meminfo(20 * kGiB));
  EXPECT_EQ(plan::available_memory_kib(fs), 20 * kGiB);
  fs.add_file("/proc/self/cgroup", "0::/build.slice/job.scope\n");
  fs.add_file("/sys/fs/cgroup/build.slice/job.scope/memory.max", "max\n");  // no limit
  fs.add_file("/sys/fs/cgroup/build.slice/job.scope/memory.current", "1073741824\n");
  EXPECT_EQ(plan::available_memory_kib(fs), 20 * kGiB);
  fs.add_file("/sys/fs/cgroup/build.slice/job.scope/memory.max", "8589934592\n");  // 8 GiB, 1 GiB used
  EXPECT_EQ(plan::available_memory_kib(fs), 7 * kGiB);
}

std::string test_data(const std::string& name) {
  std::ifstream in(std::string(OPFORGE_TEST_DATA) + "/cgroup/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(PlanJobs, CgroupV2InactiveFileCountsAsFree) {
  probe::FakeFileSystem fs;
  fs.add_file("/proc/meminfo", meminfo(20 * kGiB));
  fs.add_file("/proc/self/cgroup", "0::/job\n");
  fs.add_file("/sys/fs/cgroup/job/memory.max", "8589934592\n");
  fs.add_file("/sys/fs/cgroup/job/memory.current", "4294967296\n");  // 4 GiB, 1 GiB of it inactive cache
  fs.add_file("/sys/fs/cgroup/job/memory.stat", "anon 3221225472\nfile 1073741824\ninactive_file 1073741824\n");
  auto a = plan::available_memory(fs);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kib, 5 * kGiB);
  EXPECT_EQ(a->from, "cgroup v2 memory.max");
}

TEST(PlanJobs, CgroupV1LimitIsReadFromTheMemoryController) {
  // The real files of a cgroup v1 machine without a limit: MemAvailable decides.
  probe::FakeFileSystem fs;
  fs.add_file("/proc/meminfo", meminfo(20 * kGiB));
  const std::string self = test_data("v1_proc_self_cgroup");
  fs.add_file("/proc/self/cgroup", self);
  const auto start = self.find(":memory:") + 8;
  const std::string dir = "/sys/fs/cgroup/memory" + self.substr(start, self.find('\n', start) - start);
  std::string stat = test_data("v1_memory.stat");
  fs.add_file(dir + "/memory.stat", stat);
  fs.add_file(dir + "/memory.limit_in_bytes", "9223372036854771712\n");
  fs.add_file(dir + "/memory.usage_in_bytes", "3278819328\n");
  auto a = plan::available_memory(fs);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kib, 20 * kGiB);
  EXPECT_EQ(a->from, "MemAvailable");
  // A parent's 6 GiB limit shows in hierarchical_memory_limit: 6 GiB - (usage - inactive cache).
  const auto inactive_at = stat.find("total_inactive_file ") + 20;
  const std::uint64_t inactive = std::stoull(stat.substr(inactive_at, stat.find('\n', inactive_at) - inactive_at));
  const auto at = stat.find("hierarchical_memory_limit ");
  stat.replace(at, stat.find('\n', at) - at, "hierarchical_memory_limit 6442450944");
  fs.add_file(dir + "/memory.stat", stat);
  a = plan::available_memory(fs);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kib, (6442450944ull - (3278819328ull - inactive)) / 1024);
  EXPECT_EQ(a->from, "cgroup v1 memory.limit_in_bytes");
  auto jobs = plan::memory_aware_jobs(2, a->kib, {}, {}, a->from);
  EXPECT_EQ(jobs.jobs, 2u);  // nothing compiled: the cores
}

TEST(PlanJobs, CgroupV1PathMissingInsideAContainerUsesTheMountedCgroup) {
  probe::FakeFileSystem fs;
  fs.add_file("/proc/meminfo", meminfo(20 * kGiB));
  fs.add_file("/proc/self/cgroup", "12:pids:/docker/abc\n4:memory:/docker/abc\n0::/docker/abc\n");
  fs.add_file("/sys/fs/cgroup/memory/memory.limit_in_bytes", "4294967296\n");
  fs.add_file("/sys/fs/cgroup/memory/memory.usage_in_bytes", "1073741824\n");
  auto a = plan::available_memory(fs);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->kib, 3 * kGiB);
  // Hostile or truncated files are no limit, never a crash or a zero.
  fs.add_file("/sys/fs/cgroup/memory/memory.limit_in_bytes", "-1\n");
  fs.add_file("/sys/fs/cgroup/memory/memory.stat",
              "hierarchical_memory_limit\ntotal_inactive_file 99999999999999999999999\n");
  a = plan::available_memory(fs);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->from, "MemAvailable");
  EXPECT_EQ(a->kib, 20 * kGiB);
}

TEST(PlanJobs, PeaksAreKeptWithTheCacheAndOnlyGrow) {
  probe::FakeFileSystem fs;
  fs.add_directory("/cache");
  EXPECT_TRUE(plan::load_compile_peaks(fs, "/cache").empty());
  plan::store_compile_peaks(fs, "/cache", {{"fused_adam", 2 * kGiB}, {"cpu_adam", kGiB}});
  plan::store_compile_peaks(fs, "/cache", {{"fused_adam", kGiB / 4}});  // a ccache hit measures less
  auto peaks = plan::load_compile_peaks(fs, "/cache");
  EXPECT_EQ(peaks, (std::map<std::string, std::uint64_t>{{"cpu_adam", kGiB}, {"fused_adam", 2 * kGiB}}));
  fs.add_file("/cache/compile-peaks.json", "not json");
  EXPECT_TRUE(plan::load_compile_peaks(fs, "/cache").empty());  // a broken hint is no hint
}

TEST(PlanJobs, ThePrecompiledHeadersMakingIsKeptAsideFirst) {
  constexpr std::uint64_t kGiB = 1024ull * 1024;
  const std::map<std::string, std::uint64_t> peaks = {{plan::steps_peak_key("p"), 2 * kGiB}};
  EXPECT_EQ(plan::memory_aware_jobs(16, 10 * kGiB, {}, peaks, {}, plan::steps_peak_key("p")).jobs, 5u);
  auto kept = plan::memory_aware_jobs(16, 10 * kGiB, {}, peaks, {}, plan::steps_peak_key("p"), plan::kPchMakeKib);
  EXPECT_EQ(kept.jobs, 3u);
  EXPECT_NE(kept.why.find("10.0 GiB available less 3.0 GiB for making the precompiled torch header / 2.0 GiB"),
            std::string::npos)
      << kept.why;
}
