#include <gtest/gtest.h>

#include "cache/cache.h"
#include "probe/fake_machine.h"
#include "util/strings.h"

namespace opforge::cache {
namespace {

constexpr std::int64_t kDay = 86400LL * 1000000000LL;

/// A cache with a toolkit (used 10 days ago), two environments (30 and 2 days ago) and a scratch
/// tree (5 days ago); sizes 300, 5000, 4000 and 100 bytes.
struct World {
  probe::FakeMachine w;
  World() {
    w.fs.add_file("/c/toolkits/13.2/opforge-toolkit.json",
                  R"({"cuda": "13.2", "requirement": "cuda-toolkit[nvcc,cudart,cccl]==13.2.2", "packages": []})");
    w.fs.add_file("/c/toolkits/13.2/site/nvcc", std::string(300 - 83, 'x'));
    w.fs.add_file("/c/toolkits/13.2/.opforge-last-use", "");
    w.fs.set_mtime("/c/toolkits/13.2/.opforge-last-use", 90 * kDay);
    w.fs.set_mtime("/c/toolkits/13.2/opforge-toolkit.json", 80 * kDay);
    w.fs.add_file("/c/envs/aaaa/.opforge-env.json", R"({"cell": "torch2.14.0-py3.11", "torch": "torch==2.14.0"})");
    w.fs.add_file("/c/envs/aaaa/lib/torch.so", std::string(5000, 't'));
    w.fs.set_mtime("/c/envs/aaaa/.opforge-env.json", 70 * kDay);
    w.fs.add_file("/c/envs/bbbb/.opforge-env.json", R"({"cell": "torch2.15.0-py3.11", "torch": "torch==2.15.0"})");
    w.fs.add_file("/c/envs/bbbb/lib/torch.so", std::string(4000, 't'));
    w.fs.set_mtime("/c/envs/bbbb/.opforge-env.json", 98 * kDay);
    w.fs.add_file("/c/trees/0123456789abcdef/setup.py", std::string(100, 's'));
    w.fs.set_mtime("/c/trees/0123456789abcdef", 95 * kDay);
  }
};

std::vector<std::string> paths(const std::vector<Entry>& es) {
  std::vector<std::string> out;
  for (auto& e : es) out.push_back(e.path.string());
  return out;
}

TEST(CachePrune, ListsLeastRecentlyUsedFirst) {
  World world;
  auto es = list(world.w.fs, "/c", Sizes::measure_missing);
  EXPECT_EQ(paths(es), (std::vector<std::string>{"/c/envs/aaaa", "/c/toolkits/13.2", "/c/trees/0123456789abcdef",
                                                 "/c/envs/bbbb"}));
  EXPECT_EQ(es[0].kind, "env");
  EXPECT_EQ(es[0].user, "matrix cell torch2.14.0-py3.11 (torch==2.14.0)");
  EXPECT_EQ(es[0].bytes, 5056u);  // the marker and torch.so
  EXPECT_EQ(es[1].kind, "toolkit");
  EXPECT_EQ(es[1].user, "CUDA 13.2 (cuda-toolkit[nvcc,cudart,cccl]==13.2.2)");
  EXPECT_EQ(es[1].lock, "/c/toolkits/.13.2.lock");
  EXPECT_EQ(es[2].kind, "tree");
  EXPECT_EQ(es[2].bytes, 100u);
}

TEST(CacheSizes, KeptSizesAreReadWithoutWalkingAndAgreeWithTheListing) {
  World world;
  // An entry's owner writes its size when it makes it; the others (made before sizes were kept)
  // are unknown to a fast listing (doctor) until `opforge cache` measures them once.
  ASSERT_TRUE(probe::record_size(world.w.fs, "/c/envs/bbbb", 4242));
  auto fast = list(world.w.fs, "/c", Sizes::recorded);
  auto t = totals(fast);
  EXPECT_EQ(t.entries, 4u);
  EXPECT_EQ(t.bytes, 4242u);
  EXPECT_EQ(t.unmeasured, 3u);

  auto measured = list(world.w.fs, "/c", Sizes::measure_missing);
  EXPECT_EQ(totals(measured).bytes, 4242u + 5056u + 306u + 100u);
  EXPECT_EQ(totals(measured).unmeasured, 0u);
  EXPECT_EQ(world.w.fs.read_file("/c/envs/.aaaa.bytes").value(), "5056\n");
  EXPECT_EQ(world.w.fs.read_file("/c/toolkits/.13.2.bytes").value(), "306\n");  // manifest, nvcc, marker

  // The kept sizes are what both now say, even after the files changed: nothing walks.
  world.w.fs.add_file("/c/envs/aaaa/lib/more.so", std::string(7000, 'm'));
  EXPECT_EQ(totals(list(world.w.fs, "/c", Sizes::recorded)).bytes, totals(measured).bytes);
  EXPECT_EQ(totals(list(world.w.fs, "/c", Sizes::measure_missing)).bytes, totals(measured).bytes);
}

TEST(CacheSizes, ADamagedSizeFileIsUnknownNotAnError) {
  World world;
  world.w.fs.add_file("/c/envs/.aaaa.bytes", "12x\n");
  auto fast = list(world.w.fs, "/c", Sizes::recorded);
  EXPECT_EQ(totals(fast).unmeasured, 4u);
  EXPECT_EQ(probe::recorded_size(world.w.fs, "/c/envs/aaaa"), std::nullopt);
}

TEST(CacheSizes, PruneRemovesAnEntrysSizeFileWithIt) {
  World world;
  ASSERT_TRUE(probe::record_size(world.w.fs, "/c/envs/aaaa", 1));
  PruneOptions o;
  o.now_ns = 100 * kDay;
  o.older_than = std::chrono::hours(24 * 20);
  auto r = prune(world.w.fs, "/c", o);
  ASSERT_TRUE(r) << r.error().message;
  ASSERT_EQ(r->removed.size(), 1u);
  EXPECT_EQ(r->removed[0].path, "/c/envs/aaaa");
  EXPECT_EQ(world.w.fs.type_of("/c/envs/.aaaa.bytes"), probe::FileType::none);
}

TEST(CachePrune, OlderThanRemovesOnlyOldEntries) {
  World world;
  PruneOptions o;
  o.now_ns = 100 * kDay;
  o.older_than = std::chrono::hours(24 * 7);
  auto r = prune(world.w.fs, "/c", o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(paths(r->removed), (std::vector<std::string>{"/c/envs/aaaa", "/c/toolkits/13.2"}));
  EXPECT_EQ(world.w.fs.type_of("/c/envs/aaaa"), probe::FileType::none);
  EXPECT_EQ(world.w.fs.type_of("/c/envs/bbbb"), probe::FileType::directory);
}

TEST(CachePrune, MaxSizeRemovesLeastRecentlyUsedFirstAndKeepsLockedOnes) {
  World world;
  world.w.fs.hold_lock("/c/envs/.aaaa.lock");  // a running build uses the oldest environment
  PruneOptions o;
  o.now_ns = 100 * kDay;
  o.max_bytes = 4500;
  auto r = prune(world.w.fs, "/c", o);
  ASSERT_TRUE(r) << r.error().message;
  // aaaa (in use) stays; then the toolkit, the tree, and bbbb go until the rest fits.
  EXPECT_EQ(paths(r->kept_in_use), (std::vector<std::string>{"/c/envs/aaaa"}));
  EXPECT_EQ(paths(r->removed),
            (std::vector<std::string>{"/c/toolkits/13.2", "/c/trees/0123456789abcdef", "/c/envs/bbbb"}));
  EXPECT_EQ(world.w.fs.type_of("/c/envs/aaaa"), probe::FileType::directory);
  EXPECT_GT(r->bytes_after, *o.max_bytes);  // what is in use cannot go
}

TEST(CachePrune, GitClonesAreListedAndPrunedLikeTheRest) {
  // Every kind of entry the cache holds, a [source] git clone among them (layout.h's kFolders).
  World world;
  world.w.fs.add_file("/c/git/ops-0123abcd/repo.git/HEAD", std::string(20, 'h'));
  world.w.fs.add_file("/c/git/ops-0123abcd/trees/abc/setup.py", std::string(30, 's'));
  world.w.fs.add_file("/c/git/ops-0123abcd/.opforge-last-use", "");
  world.w.fs.set_mtime("/c/git/ops-0123abcd/.opforge-last-use", 60 * kDay);
  world.w.fs.set_mtime("/c/git/ops-0123abcd", 50 * kDay);
  auto es = list(world.w.fs, "/c", Sizes::measure_missing);
  ASSERT_EQ(es.size(), 5u);
  EXPECT_EQ(es[0].path, "/c/git/ops-0123abcd");  // used 60 days in: before every other entry
  EXPECT_EQ(es[0].kind, "git");
  EXPECT_EQ(es[0].user, "a clone of a [source] git repository (ops) and its checkouts");
  EXPECT_EQ(es[0].lock, "/c/git/.ops-0123abcd.lock");
  EXPECT_EQ(es[0].bytes, 50u);
  // A build that uses the clone holds its lock: prune keeps it; then it goes first.
  world.w.fs.hold_lock("/c/git/.ops-0123abcd.lock");
  PruneOptions o;
  o.max_bytes = 9000;
  auto kept = prune(world.w.fs, "/c", o);
  ASSERT_TRUE(kept) << kept.error().render();
  ASSERT_EQ(kept->kept_in_use.size(), 1u);
  EXPECT_EQ(kept->kept_in_use[0].path, "/c/git/ops-0123abcd");
  World fresh;
  fresh.w.fs.add_file("/c/git/ops-0123abcd/repo.git/HEAD", std::string(20, 'h'));
  fresh.w.fs.set_mtime("/c/git/ops-0123abcd", 10 * kDay);
  o.max_bytes.reset();
  o.older_than = std::chrono::hours(24 * 50);
  o.now_ns = 100 * kDay;
  auto r = prune(fresh.w.fs, "/c", o);
  ASSERT_TRUE(r) << r.error().render();
  EXPECT_EQ(r->removed.front().path, "/c/git/ops-0123abcd");
  EXPECT_EQ(fresh.w.fs.type_of("/c/git/ops-0123abcd"), probe::FileType::none);
}

TEST(CachePrune, NoLimitRemovesOnlyKilledRunsTemporaries) {
  World world;
  world.w.fs.add_file("/c/toolkits/.partial-13.2/site/x", "half");
  PruneOptions o;
  o.now_ns = 100 * kDay;
  auto r = prune(world.w.fs, "/c", o);
  ASSERT_TRUE(r);
  EXPECT_EQ(paths(r->removed), (std::vector<std::string>{"/c/toolkits/.partial-13.2"}));
}

TEST(CachePrune, AgesAndSizes) {
  EXPECT_EQ(*parse_age("30d"), std::chrono::seconds(30 * 86400));
  EXPECT_EQ(*parse_age("12h"), std::chrono::seconds(12 * 3600));
  EXPECT_EQ(*parse_age("2w"), std::chrono::seconds(14 * 86400));
  EXPECT_FALSE(parse_age("30"));
  EXPECT_FALSE(parse_age("d"));
  EXPECT_FALSE(parse_age("-3d"));
  EXPECT_EQ(*parse_size("20G"), 20ULL << 30);
  EXPECT_EQ(*parse_size("1.5K"), 1536u);
  EXPECT_EQ(*parse_size("4096"), 4096u);
  EXPECT_FALSE(parse_size("lots"));
  EXPECT_FALSE(parse_size("1..5G"));
  EXPECT_EQ(parse_size("G").error().kind, ErrorKind::bad_input);
  // Ages are compared in nanoseconds: what would overflow there is refused, with the range.
  EXPECT_EQ(*parse_age("36500d"), std::chrono::seconds(36500LL * 86400));
  for (auto huge : {"150000d", "20000w", "99999999999999999999s", "36501d"}) {
    auto r = parse_age(huge);
    ASSERT_FALSE(r) << huge;
    EXPECT_EQ(r.error().render(), "--older-than '" + std::string(huge) +
                                      "' is out of range\n  hint: ages go from 0s to 36500d (100 years); to remove "
                                      "everything, use --max-size 0");
  }
  EXPECT_EQ(parse_size("999999999999999T").error().message, "--max-size '999999999999999T' is out of range");
  EXPECT_EQ(*parse_size("1024T"), 1ULL << 50);
  EXPECT_EQ(strings::human_size(1536), "1.5 KiB");
}

}  // namespace
}  // namespace opforge::cache
