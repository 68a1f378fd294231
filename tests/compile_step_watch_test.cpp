// The compile steps of a command build seen in /proc: which process is a step, its peak (the sum of
// its processes), and how the job count learns from the heaviest step.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "compile/watch/step_watch.h"
#include "plan/jobs.h"
#include "probe/fake_machine.h"

using namespace opforge;

namespace {

compile::ProcessView proc(int pid, int ppid, std::uint64_t rss, std::vector<std::string> argv, std::string cwd = "/") {
  return {pid, ppid, rss, std::move(argv), std::move(cwd)};
}

}  // namespace

TEST(CompileStepWatch, AStepIsTheOutermostCompileOfATreeSourceWithEverythingBelowIt) {
  compile::StepWatch watch("/cache/trees/abc/");
  const std::string nvcc = "/cache/nvcc/1234/nvcc";
  // ninja -> sh -c "nvcc ... -c /tree/a.cu -o a.o" -> the nvcc wrapper -> nvcc -> cicc; a g++ step
  // with a relative source in the tree; a compile of another tree's file; an nvcc-internal gcc.
  std::vector<compile::ProcessView> t1 = {
      proc(10, 1, 9000, {"ninja", "-v", "-j", "2"}),
      proc(11, 10, 1000, {"/bin/sh", "-c", nvcc + " -O3 -c /cache/trees/abc/csrc/a.cu -o /cache/trees/abc/build/a.o"}),
      proc(12, 11, 2000, {"/bin/sh", nvcc, "-O3", "-c", "/cache/trees/abc/csrc/a.cu", "-o", "a.o"}),
      proc(13, 12, 500000, {"cicc", "--orig_src_path_name", "a.o", "/tmp/tmpxft_1.cpp1.ii"}),
      proc(14, 12, 30000, {"gcc", "-c", "-x", "c++", "/tmp/tmpxft_1.cudafe1.cpp", "-o", "a.o"}),
      proc(20, 10, 1000, {"/bin/sh", "-c", "g++ -O2 -c csrc/module.cpp -o build/module.o"}, "/cache/trees/abc"),
      proc(21, 20, 300000, {"/usr/lib/gcc/cc1plus", "csrc/module.cpp"}, "/cache/trees/abc"),
      proc(30, 1, 7777777, {"g++", "-c", "/elsewhere/x.cpp", "-o", "x.o"}),
  };
  watch.observe(t1, 1.0);
  t1[3].rss_kib = 1500000;  // cicc grows
  t1.erase(t1.begin() + 5, t1.begin() + 7);
  watch.observe(t1, 4.5);
  auto steps = watch.steps();
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].source, "csrc/a.cu");
  EXPECT_EQ(steps[0].peak_kib, 1000u + 2000u + 1500000u + 30000u);
  EXPECT_DOUBLE_EQ(steps[0].seconds, 3.5);
  EXPECT_EQ(steps[1].source, "csrc/module.cpp");
  EXPECT_EQ(steps[1].peak_kib, 301000u);
  EXPECT_DOUBLE_EQ(steps[1].seconds, 0.0);
  EXPECT_EQ(compile::heaviest_steps(steps, 1), "a.cu 1.5 GiB (4 s)");
}

TEST(CompileStepWatch, ProcessesAreReadFromProc) {
  probe::FakeFileSystem fs;
  fs.add_file("/proc/42/status", "Name:\tcicc\nPPid:\t41\nVmRSS:\t  123456 kB\n");
  fs.add_file("/proc/42/cmdline", std::string("cicc\0-c\0/t/a.cu\0", 16));
  fs.add_symlink("/proc/42/cwd", "/t");
  fs.add_file("/proc/self/status", "PPid:\t1\n");  // not a pid
  fs.add_file("/proc/43/status", "PPid:\t1\n");    // ended before its cmdline was read
  auto all = compile::list_processes(fs, "/proc");
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].pid, 42);
  EXPECT_EQ(all[0].ppid, 41);
  EXPECT_EQ(all[0].rss_kib, 123456u);
  EXPECT_EQ(all[0].argv, (std::vector<std::string>{"cicc", "-c", "/t/a.cu"}));
  EXPECT_EQ(all[0].cwd, "/t");
}

TEST(CompileStepWatch, TheJobCountOfACommandBuildLearnsFromItsHeaviestStep) {
  constexpr std::uint64_t kGiB = 1024 * 1024;
  const std::map<std::string, std::uint64_t> peaks = {{plan::steps_peak_key("flash-attn"), 6 * kGiB}};
  // No ops, no history: the cores, as before.
  auto fresh = plan::memory_aware_jobs(16, 20 * kGiB, {}, {}, {}, plan::steps_peak_key("flash-attn"));
  EXPECT_EQ(fresh.jobs, 16u);
  // Its steps measured 6 GiB: 20 GiB hold 3 of them.
  auto learned = plan::memory_aware_jobs(16, 20 * kGiB, {}, peaks, {}, plan::steps_peak_key("flash-attn"));
  EXPECT_EQ(learned.jobs, 3u);
  EXPECT_EQ(learned.why, "16 cores; 20.0 GiB available / 6.0 GiB per compile (recorded)");
  // Another project's steps say nothing about this one.
  EXPECT_EQ(plan::memory_aware_jobs(16, 20 * kGiB, {}, peaks, {}, plan::steps_peak_key("mamba-ssm")).jobs, 16u);
}

TEST(CompileStepWatch, TheThreadTellsEachNewPeakWhileTheBuildRuns) {
  probe::FakeFileSystem fs;
  fs.add_file("/proc/7/status", "PPid:\t1\nVmRSS:\t2048 kB\n");
  fs.add_file("/proc/7/cmdline", std::string("nvcc\0-c\0/t/a.cu\0", 16));
  std::atomic<std::uint64_t> told{0};
  compile::StepWatchThread watch(fs, "/t", 1, [&](std::uint64_t kib) { told = kib; });
  for (int i = 0; i < 2000 && told == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  auto steps = watch.finish();
  EXPECT_EQ(told, 2048u);  // before the build ends: a killed build has passed it on
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].source, "a.cu");
  EXPECT_EQ(steps[0].peak_kib, 2048u);
}

TEST(CompileStepWatch, TheSummarySaysHowManyRanAtOnceAsMeasured) {
  using compile::StepPeak;
  // Two at once (b starts while a runs; c after both, in the next observation).
  const std::vector<StepPeak> two = {{.source = "a.cu", .seconds = 4, .start = 0, .peak_kib = 2 << 20},
                                     {.source = "b.cu", .seconds = 3, .start = 1, .peak_kib = 1 << 20},
                                     {.source = "c.cpp", .seconds = 1, .start = 4.25, .peak_kib = 1 << 19}};
  EXPECT_EQ(compile::most_at_once(two), 2);
  EXPECT_EQ(compile::steps_said(two, 2),
            "memory: 3 compile steps, 2 at once; the heaviest a.cu 2.0 GiB (4 s), b.cu 1.0 GiB (3 s), c.cpp 0.5 GiB "
            "(1 s)");
  // One after another, though two were allowed (setuptools without ninja): said, with its cost.
  const std::vector<StepPeak> serial = {{.source = "a.cu", .seconds = 40, .start = 0, .peak_kib = 1 << 20},
                                        {.source = "b.cu", .seconds = 20, .start = 40.25, .peak_kib = 1 << 20}};
  EXPECT_EQ(compile::most_at_once(serial), 1);
  EXPECT_EQ(compile::steps_said(serial, 2),
            "memory: 2 compile steps, 1 at once (2 allowed); the heaviest a.cu 1.0 GiB (40 s), b.cu 1.0 GiB (20 s)\n"
            "  the project compiled one file at a time, whatever MAX_JOBS says (setuptools without ninja: torch's "
            "BuildExtension with use_ninja=False, or no ninja on PATH): its steps took 60 s, about 30 s at 2 at once");
  EXPECT_EQ(compile::steps_said(serial, 1),
            "memory: 2 compile steps, 1 at once; the heaviest a.cu 1.0 GiB (40 s), b.cu 1.0 GiB (20 s)");
}

TEST(CompileStepWatch, ACudaCompileThatNamesNoWrapperIsSaidToHaveEscapedIt) {
  const std::string wrapper = "/cache/nvcc/1234/nvcc";
  compile::StepWatch watch("/t", {wrapper, "__nvcc"});
  // ninja's step through the wrapper (ccache in front); setuptools' own spawn of the toolkit's nvcc
  // by its absolute path (use_ninja=False and a project that names it); a host compile.
  watch.observe({proc(10, 1, 100, {"/bin/sh", "-c", "ccache " + wrapper + " -c /t/a.cu -o a.o"}),
                 proc(11, 10, 100, {"ccache", wrapper, "-c", "/t/a.cu", "-o", "a.o"}),
                 proc(20, 1, 100, {"/usr/local/cuda-13.0/bin/nvcc", "-c", "/t/b.cu", "-o", "b.o"}),
                 proc(21, 20, 100, {"cicc", "x"}), proc(30, 1, 100, {"g++", "-c", "/t/c.cpp", "-o", "c.o"})},
                1.0);
  // A step seen first before its wrapper's process appeared is wrapped once any observation shows it.
  watch.observe({proc(40, 1, 100, {"/bin/sh", "-c", "/view/bin/nvcc -c /t/d.cu"})}, 1.25);
  watch.observe({proc(40, 1, 100, {"/bin/sh", "-c", "/view/bin/nvcc -c /t/d.cu"}),
                 proc(41, 40, 100, {"/usr/bin/opforge", "__nvcc", "/cache/nvcc/1234/rule.json", "-c", "/t/d.cu"})},
                1.5);
  const auto steps = watch.steps();
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_TRUE(steps[0].cuda && steps[0].wrapped);
  EXPECT_TRUE(steps[1].cuda && !steps[1].wrapped);
  EXPECT_FALSE(steps[2].cuda);
  EXPECT_TRUE(steps[3].cuda && steps[3].wrapped);
  EXPECT_EQ(compile::unwrapped_cuda_steps(steps), (std::vector<std::string>{"b.cu"}));
}
