// CPU statistics of the overflow op against a straightforward scalar oracle.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "overflow.h"
#include "scan_core.h"

namespace {

struct Info {
  int dtype, bytes;
  double min_normal, max;
};
const Info kInfos[] = {
    {OPFORGE_OVERFLOW_F32, 4, 0x1p-126, 3.4028234663852886e38},
    {OPFORGE_OVERFLOW_F16, 2, 0x1p-14, 65504.0},
    {OPFORGE_OVERFLOW_BF16, 2, 0x1p-126, 3.3895313892515355e38},
    {OPFORGE_OVERFLOW_F64, 8, 0x1p-1022, std::numeric_limits<double>::max()},
    {OPFORGE_OVERFLOW_F8E4M3FN, 1, 0x1p-6, 448.0},
    {OPFORGE_OVERFLOW_F8E5M2, 1, 0x1p-14, 57344.0},
};

// Decodes one element to double the long way (the oracle does not share code with the library).
double decode(int dtype, const unsigned char* p) {
  switch (dtype) {
    case OPFORGE_OVERFLOW_F32: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case OPFORGE_OVERFLOW_F64: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case OPFORGE_OVERFLOW_F16: {  // from the bits: gcc 11 has no _Float16 in C++
      const unsigned u = unsigned(p[0] | (p[1] << 8));
      const int s = u >> 15, e = (u >> 10) & 31, m = u & 1023;
      if (e == 31) return m ? std::nan("") : (s ? -HUGE_VAL : HUGE_VAL);
      const double v = e ? std::ldexp(1.0 + m / 1024.0, e - 15) : std::ldexp(m / 1024.0, -14);
      return s ? -v : v;
    }
    case OPFORGE_OVERFLOW_BF16: {
      uint32_t u = uint32_t(p[0] | (p[1] << 8)) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    case OPFORGE_OVERFLOW_F8E4M3FN: {
      const int s = p[0] >> 7, e = (p[0] >> 3) & 15, m = p[0] & 7;
      if (e == 15 && m == 7) return std::nan("");
      const double v = e ? std::ldexp(1.0 + m / 8.0, e - 7) : std::ldexp(m / 8.0, -6);
      return s ? -v : v;
    }
    default: {  // e5m2
      const int s = p[0] >> 7, e = (p[0] >> 2) & 31, m = p[0] & 3;
      double v;
      if (e == 31) v = m ? std::nan("") : INFINITY;
      else v = e ? std::ldexp(1.0 + m / 4.0, e - 15) : std::ldexp(m / 4.0, -14);
      return s ? -v : v;
    }
  }
}

opforge_overflow_stats oracle(const Info& info, const unsigned char* p, uint64_t n) {
  opforge_overflow_stats s{};
  s.count = n;
  s.abs_min = INFINITY;
  s.abs_max = -1;
  for (uint64_t i = 0; i < n; ++i) {
    const double v = decode(info.dtype, p + i * info.bytes);
    if (std::isnan(v)) {
      ++s.nan_count;
      continue;
    }
    if (std::isinf(v)) {
      ++(v > 0 ? s.posinf_count : s.neginf_count);
      continue;
    }
    const double a = std::fabs(v);
    if (a == 0) ++s.zero_count;
    if (a > 0 && a < info.min_normal) ++s.subnormal_count;
    if (a > info.max / 2) ++s.over_threshold_count;
    s.abs_min = std::min(s.abs_min, a);
    s.abs_max = std::max(s.abs_max, a);
  }
  return s;
}

void expect_same(const opforge_overflow_stats& a, const opforge_overflow_stats& b, const char* what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.nan_count, b.nan_count);
  EXPECT_EQ(a.posinf_count, b.posinf_count);
  EXPECT_EQ(a.neginf_count, b.neginf_count);
  EXPECT_EQ(a.zero_count, b.zero_count);
  EXPECT_EQ(a.subnormal_count, b.subnormal_count);
  EXPECT_EQ(a.over_threshold_count, b.over_threshold_count);
  EXPECT_EQ(a.abs_min, b.abs_min);
  EXPECT_EQ(a.abs_max, b.abs_max);
}

opforge_overflow_stats run(const Info& info, const unsigned char* p, uint64_t n) {
  opforge_overflow_stats s{};
  EXPECT_EQ(opforge_overflow_stats_cpu(p, n, info.dtype, 0.0, &s), 0) << opforge_overflow_last_error();
  return s;
}

class PerDtype : public ::testing::TestWithParam<Info> {};

TEST_P(PerDtype, RandomBitPatternsCoverEveryClass) {
  const Info info = GetParam();
  std::mt19937_64 rng(42 + info.dtype);
  for (uint64_t n : {1ull, 2ull, 7ull, 33ull, 1000ull, 65536ull + 77ull, 200003ull}) {
    std::vector<unsigned char> buf(n * info.bytes + 16);
    for (auto& b : buf) b = static_cast<unsigned char>(rng());
    for (int offset : {0, 1, 3, 5}) {  // unaligned starts
      const unsigned char* p = buf.data() + offset;
      expect_same(run(info, p, n), oracle(info, p, n), "random");
    }
  }
}

TEST_P(PerDtype, NanAndInfAtEveryPositionClass) {
  const Info info = GetParam();
  const uint64_t n = 65536 * 2 + 29;  // crosses the internal chunk boundary, ragged tail
  std::vector<unsigned char> clean(n * info.bytes + 8);
  std::vector<unsigned char> nan_bits(info.bytes, 0xff);  // all-ones is a NaN in every format
  for (uint64_t i = 0; i < n; ++i) clean[1 + i * info.bytes + info.bytes - 1] = 0x3c;  // some normal
  for (uint64_t pos : {uint64_t(0), uint64_t(1), uint64_t(65535), uint64_t(65536), n - 3, n - 1}) {
    std::vector<unsigned char> buf = clean;
    std::memcpy(buf.data() + 1 + pos * info.bytes, nan_bits.data(), info.bytes);
    const unsigned char* p = buf.data() + 1;
    const opforge_overflow_stats s = run(info, p, n);
    EXPECT_EQ(s.nan_count, 1u) << "position " << pos;
    expect_same(s, oracle(info, p, n), "planted nan");
  }
}

// Finite random values with inf/NaN planted in some internal chunks only: the finite max must come
// from the right chunk whether or not that chunk also holds a non-finite value.
TEST_P(PerDtype, FiniteMaxBesideNonFiniteInSomeChunks) {
  const Info info = GetParam();
  std::mt19937_64 rng(7 + info.dtype);
  const uint64_t n = 300007;
  std::vector<unsigned char> buf(n * info.bytes + 8);
  unsigned char* p = buf.data() + 3;
  for (uint64_t i = 0; i < n; ++i) {
    for (int b = 0; b < info.bytes; ++b) p[i * info.bytes + b] = static_cast<unsigned char>(rng());
    // one below the top exponent bit keeps the value finite in every format (and varies its size)
    p[i * info.bytes + info.bytes - 1] &= 0xbf;
  }
  std::vector<unsigned char> inf_bits(info.bytes, 0xff);  // all-ones: NaN everywhere
  for (uint64_t pos : {uint64_t(5), uint64_t(70000), uint64_t(n - 2)})
    std::memcpy(p + pos * info.bytes, inf_bits.data(), info.bytes);
  expect_same(run(info, p, n), oracle(info, p, n), "finite max beside non-finite");
}

TEST_P(PerDtype, EveryPatternOfEightBitFormatsAndSignedZeros) {
  const Info info = GetParam();
  std::vector<unsigned char> buf(info.bytes * 2, 0);
  buf[info.bytes * 2 - 1] = 0x80;  // -0 in the second element
  const opforge_overflow_stats s = run(info, buf.data(), 2);
  EXPECT_EQ(s.zero_count, 2u);
  EXPECT_EQ(s.abs_max, 0.0);
  EXPECT_EQ(s.abs_min, 0.0);
  if (info.bytes == 1) {
    std::vector<unsigned char> all(256);
    for (int i = 0; i < 256; ++i) all[i] = static_cast<unsigned char>(i);
    expect_same(run(info, all.data(), 256), oracle(info, all.data(), 256), "all 256");
  }
}

TEST_P(PerDtype, EmptyIsFine) {
  const Info info = GetParam();
  opforge_overflow_stats s{};
  ASSERT_EQ(opforge_overflow_stats_cpu(nullptr, 0, info.dtype, 0.0, &s), 0);
  EXPECT_EQ(s.count, 0u);
  EXPECT_EQ(s.nan_count, 0u);
  EXPECT_TRUE(std::isinf(s.abs_min));
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, PerDtype, ::testing::ValuesIn(kInfos),
                         [](const auto& i) { return "dtype" + std::to_string(i.param.dtype); });

TEST(OverflowCpu, DtypeMaxAndThreshold) {
  EXPECT_EQ(opforge_overflow_dtype_max(OPFORGE_OVERFLOW_F16), 65504.0);
  EXPECT_EQ(opforge_overflow_dtype_max(OPFORGE_OVERFLOW_F8E4M3FN), 448.0);
  EXPECT_EQ(opforge_overflow_dtype_max(OPFORGE_OVERFLOW_F8E5M2), 57344.0);
  const float v[] = {1.0f, 99.0f, 100.0f, 100.5f, -1000.0f, INFINITY};
  opforge_overflow_stats s{};
  ASSERT_EQ(opforge_overflow_stats_cpu(v, 6, OPFORGE_OVERFLOW_F32, 100.0, &s), 0);
  EXPECT_EQ(s.over_threshold_count, 2u);  // inf is counted as inf, not as "over"
}

TEST(OverflowCpu, BadInputGetsAnError) {
  opforge_overflow_stats s{};
  EXPECT_EQ(opforge_overflow_stats_cpu(nullptr, 1, 0, 0.0, &s), OPFORGE_OVERFLOW_EINVAL);
  EXPECT_STRNE(opforge_overflow_last_error(), "");
  float x = 0;
  EXPECT_EQ(opforge_overflow_stats_cpu(&x, 1, 99, 0.0, &s), OPFORGE_OVERFLOW_EINVAL);
  EXPECT_NE(std::string(opforge_overflow_last_error()).find("99"), std::string::npos);
}

TEST(OverflowCpu, MultiMatchesSingle) {
  const float a[] = {1, 2, NAN};
  const uint16_t h[] = {0x7c00, 0x0001, 0x8000};
  opforge_overflow_tensor t[3] = {{a, 3, OPFORGE_OVERFLOW_F32, 0, 0},
                                  {h, 3, OPFORGE_OVERFLOW_F16, 0, 0},
                                  {nullptr, 0, OPFORGE_OVERFLOW_BF16, 0, 0}};
  opforge_overflow_stats out[3];
  ASSERT_EQ(opforge_overflow_stats_cpu_multi(t, 3, out), 0);
  EXPECT_EQ(out[0].nan_count, 1u);
  EXPECT_EQ(out[1].posinf_count, 1u);
  EXPECT_EQ(out[1].subnormal_count, 1u);
  EXPECT_EQ(out[1].zero_count, 1u);
  EXPECT_EQ(out[2].count, 0u);
}

TEST(OverflowCpu, NoopReadsNothingAndWritesNothing) {
  // the benchmark's stand-in for stats_cpu_multi: a descriptor it must not follow, output left as is
  opforge_overflow_tensor t[1] = {{reinterpret_cast<const void*>(uintptr_t(8)), 1000, OPFORGE_OVERFLOW_F32, 0, 0}};
  opforge_overflow_stats out[1] = {};
  out[0].count = 77;
  EXPECT_EQ(opforge_overflow_stats_cpu_noop(t, 1, out), 0);
  EXPECT_EQ(out[0].count, 77u);
}

TEST(OverflowCpu, CountAbove32Bits) {
  // 2^32 + 17 fp8 elements of a lazily mapped zero region: no memory is committed except the page
  // written below, so the count path above 32 bits is exercised without 4 GiB of RAM.
  const uint64_t n = (uint64_t(1) << 32) + 17;
  void* m = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) GTEST_SKIP() << "cannot map 4 GiB of address space";
  auto* p = static_cast<unsigned char*>(m);
  p[n - 1] = 0x7f;  // e4m3fn NaN at the very end
  opforge_overflow_stats s{};
  ASSERT_EQ(opforge_overflow_stats_cpu(p, n, OPFORGE_OVERFLOW_F8E4M3FN, 0.0, &s), 0);
  munmap(m, n);
  EXPECT_EQ(s.count, n);
  EXPECT_EQ(s.nan_count, 1u);
  EXPECT_EQ(s.zero_count, n - 1);
}

// The GPU kernel's per-thread code (scan_core.h) run on the host: the shares of `threads` grid-stride
// threads together must give the CPU path's statistics, whatever the alignment, size and grid.
template <int B, class W>
opforge_overflow_stats simulate_gpu(const Info& info, const unsigned char* p, uint64_t n, uint64_t threads) {
  using namespace opforge_overflow;
  const Layout l = layout_of(info.dtype);
  const ScanParams<W> q = scan_params<W>(l, threshold_bits_for(info.dtype, 0.0));
  RawCounts total = raw_zero();
  for (uint64_t t = 0; t < threads; ++t) raw_add(total, scan_share<B, W>(p, n, t, threads, q));
  const DerivedCounts d = derive(total, n, l.has_inf);
  auto value = [&](unsigned long long bits) {
    unsigned char e[8] = {};
    for (int b = 0; b < info.bytes; ++b) e[b] = static_cast<unsigned char>(bits >> (8 * b));
    return decode(info.dtype, e);
  };
  opforge_overflow_stats s{};
  s.count = n;
  store_counts(d, &s);
  s.abs_min = d.finite ? value(total.mn) : INFINITY;
  s.abs_max = d.finite ? value(total.mx) : -1.0;
  return s;
}

opforge_overflow_stats simulate_gpu(const Info& info, const unsigned char* p, uint64_t n, uint64_t threads) {
  switch (info.bytes) {
    case 1: return simulate_gpu<1, uint32_t>(info, p, n, threads);
    case 2: return simulate_gpu<2, uint32_t>(info, p, n, threads);
    case 4: return simulate_gpu<4, uint32_t>(info, p, n, threads);
    default: return simulate_gpu<8, uint64_t>(info, p, n, threads);
  }
}

TEST_P(PerDtype, GpuThreadSharesMatchTheCpuPath) {
  const Info info = GetParam();
  std::mt19937_64 rng(99 + info.dtype);
  for (uint64_t n : {0ull, 1ull, 5ull, 17ull, 64ull, 1001ull, 40000ull}) {
    std::vector<unsigned char> buf(n * info.bytes + 32);
    for (auto& b : buf) b = static_cast<unsigned char>(rng());
    // Mostly ordinary values (the kernel's fast path) with a random element now and then.
    for (uint64_t i = 0; i < n; ++i)
      if (rng() % 8 != 0) buf[16 + i * info.bytes + info.bytes - 1] = 0x3c;
    for (int offset : {0, 1, 2, 4, 8, 12}) {
      const unsigned char* p = buf.data() + offset;
      for (uint64_t threads : {1ull, 2ull, 3ull, 32ull, 257ull, 5000ull}) {
        SCOPED_TRACE("n " + std::to_string(n) + " offset " + std::to_string(offset) + " threads " +
                     std::to_string(threads));
        expect_same(simulate_gpu(info, p, n, threads), run(info, p, n), "gpu shares");
      }
    }
  }
}

TEST_P(PerDtype, GpuSharesOnZeroHeavyData) {
  // ReLU-like data: zeros (both signs), subnormals and ordinary values mixed within every vector,
  // nothing above the threshold: the kernel's count_low path, word-at-a-time for 1- and 2-byte
  // formats. Then the same with a rare inf/NaN so that some vectors take the full classification.
  const Info info = GetParam();
  std::mt19937_64 rng(7 + info.dtype);
  const uint64_t n = 4099;
  for (int rare : {0, 1}) {
    std::vector<unsigned char> buf(n * info.bytes + 32, 0);
    unsigned char* p = buf.data() + 16;
    for (uint64_t i = 0; i < n; ++i) {
      unsigned char* e = p + i * info.bytes;
      const unsigned kind = rng() % 8;
      const unsigned char sign = (rng() & 1) ? 0x80 : 0;
      if (kind < 4) {  // zero
        e[info.bytes - 1] = sign;
      } else if (kind < 6) {  // small: subnormal (or the lowest normals of wide-mantissa formats)
        for (int b = 0; b + 1 < info.bytes; ++b) e[b] = static_cast<unsigned char>(rng());
        e[info.bytes - 1] = sign | (info.bytes == 1 ? static_cast<unsigned char>(1 + rng() % 3) : 0);
      } else {  // ordinary
        for (int b = 0; b + 1 < info.bytes; ++b) e[b] = static_cast<unsigned char>(rng());
        e[info.bytes - 1] = sign | 0x3c;
      }
      if (rare && rng() % 500 == 0) std::memset(e, 0xff, info.bytes);  // NaN in every format
    }
    for (int offset : {0, 1, 2, 4, 8}) {
      for (uint64_t threads : {1ull, 7ull, 64ull}) {
        SCOPED_TRACE("rare " + std::to_string(rare) + " offset " + std::to_string(offset) + " threads " +
                     std::to_string(threads));
        const unsigned char* q = p - 16 + offset;
        expect_same(simulate_gpu(info, q, n, threads), run(info, q, n), "zero-heavy");
      }
    }
  }
}

TEST(OverflowGpuShares, PerThreadCountersAreFlushedBeforeTheyWrap) {
  // One thread, more than kFlushVectors vectors of all-zero e5m2: every vector takes the slow path.
  const Info info = kInfos[5];
  const uint64_t n = (opforge_overflow::kFlushVectors + 1000) * 16 * 2 + 7;
  std::vector<unsigned char> buf(n, 0);
  buf[n / 2] = 0x7c;  // +inf
  const opforge_overflow_stats s = simulate_gpu(info, buf.data(), n, 1);
  EXPECT_EQ(s.zero_count, n - 1);
  EXPECT_EQ(s.posinf_count, 1u);
  expect_same(s, run(info, buf.data(), n), "flush");
}

}  // namespace
