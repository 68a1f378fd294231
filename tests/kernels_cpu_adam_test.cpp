#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "adam_kernels.h"
#include "cpu_adam.h"

namespace {

// Documented tolerances (docs/ops.md): SIMD paths vs the scalar path after many steps, and the
// fp32 library vs a double-precision reference formula.
constexpr double kSimdVsScalarRel = 1e-5;
constexpr double kVsReferenceAbs = 2e-5;

struct State {
  std::vector<float> p, g, m, v;
};

State make_state(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  State s{std::vector<float>(n), std::vector<float>(n), std::vector<float>(n, 0.0f), std::vector<float>(n, 0.0f)};
  for (auto& x : s.p) x = d(rng);
  return s;
}

void fill_grads(State& s, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 0.1f);
  for (auto& x : s.g) x = d(rng);
}

struct Hyper {
  float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.0f;
  int flags = 0;
};

// Runs `steps` steps at one SIMD level with a fresh gradient each step.
State run(int level, std::size_t n, int steps, const Hyper& h, int threads) {
  EXPECT_EQ(opforge_cpu_adam_set_simd_level(level), 0) << opforge_cpu_adam_last_error();
  State s = make_state(n, 1);
  for (int t = 1; t <= steps; ++t) {
    fill_grads(s, 100 + t);
    int rc = opforge_cpu_adam_step(s.p.data(), s.g.data(), s.m.data(), s.v.data(), n, t, h.lr, h.b1, h.b2, h.eps, h.wd,
                                   h.flags, nullptr, threads);
    EXPECT_EQ(rc, 0) << opforge_cpu_adam_last_error();
  }
  return s;
}

// The textbook formula (torch.optim.Adam / AdamW), in double.
std::vector<double> reference(std::size_t n, int steps, const Hyper& h) {
  State s = make_state(n, 1);
  std::vector<double> p(s.p.begin(), s.p.end()), m(n, 0.0), v(n, 0.0);
  bool adamw = h.flags & OPFORGE_CPU_ADAM_ADAMW;
  for (int t = 1; t <= steps; ++t) {
    fill_grads(s, 100 + t);
    double bc1 = 1 - std::pow(double(h.b1), t), bc2 = 1 - std::pow(double(h.b2), t);
    for (std::size_t i = 0; i < n; ++i) {
      double g = s.g[i];
      if (adamw) p[i] *= 1 - double(h.lr) * h.wd;
      else g += double(h.wd) * p[i];
      m[i] = h.b1 * m[i] + (1 - double(h.b1)) * g;
      v[i] = h.b2 * v[i] + (1 - double(h.b2)) * g * g;
      p[i] -= double(h.lr) / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + h.eps);
    }
  }
  return p;
}

std::vector<int> supported_levels() {
  std::vector<int> levels;
  for (int l = OPFORGE_CPU_ADAM_SCALAR; l <= OPFORGE_CPU_ADAM_AVX512; ++l)
    if (l <= opforge_cpu_adam_best_simd_level()) levels.push_back(l);
  return levels;
}

class KernelsCpuAdam : public ::testing::TestWithParam<Hyper> {
 protected:
  void TearDown() override { opforge_cpu_adam_set_simd_level(opforge_cpu_adam_best_simd_level()); }
};

TEST_P(KernelsCpuAdam, EveryLevelMatchesScalarAndReferenceOverManySteps) {
  const Hyper h = GetParam();
  const std::size_t n = 4099;  // not a multiple of 8 or 16: the tails run too
  const int steps = 200;
  State scalar = run(OPFORGE_CPU_ADAM_SCALAR, n, steps, h, 1);
  std::vector<double> ref = reference(n, steps, h);
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_NEAR(scalar.p[i], ref[i], kVsReferenceAbs) << "scalar vs reference at " << i;
  for (int level : supported_levels()) {
    SCOPED_TRACE(opforge_cpu_adam_simd_name(level));
    State s = run(level, n, steps, h, 3);
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double scale = std::max(1.0, std::fabs(double(scalar.p[i])));
      worst = std::max(worst, std::fabs(double(s.p[i]) - scalar.p[i]) / scale);
      ASSERT_NEAR(s.p[i], ref[i], kVsReferenceAbs) << "vs reference at " << i;
      // The moments are compared on the scale of the whole trajectory (g ~ 0.1, so m ~ 1e-2 and
      // v ~ 1e-2): a moment that crosses zero has no meaningful relative error.
      ASSERT_NEAR(s.m[i], scalar.m[i], kSimdVsScalarRel * 1e-1);
      ASSERT_NEAR(s.v[i], scalar.v[i], kSimdVsScalarRel * 1e-2);
    }
    EXPECT_LE(worst, kSimdVsScalarRel);
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, KernelsCpuAdam,
                         ::testing::Values(Hyper{}, Hyper{1e-2f, 0.8f, 0.99f, 1e-6f, 0.1f, 0},
                                           Hyper{1e-2f, 0.9f, 0.999f, 1e-8f, 0.05f, OPFORGE_CPU_ADAM_ADAMW}));

TEST(KernelsCpuAdamDispatch, ReportsALevelAndItsName) {
  int level = opforge_cpu_adam_simd_level();
  ASSERT_NE(opforge_cpu_adam_simd_name(level), nullptr);
  EXPECT_LE(level, opforge_cpu_adam_best_simd_level());
  EXPECT_EQ(opforge_cpu_adam_set_simd_level(7), -EINVAL);
  EXPECT_NE(std::string(opforge_cpu_adam_last_error()).find("unknown level 7"), std::string::npos);
  if (opforge_cpu_adam_best_simd_level() < OPFORGE_CPU_ADAM_AVX512) {
    EXPECT_EQ(opforge_cpu_adam_set_simd_level(OPFORGE_CPU_ADAM_AVX512), -ENOTSUP);
  }
}

TEST(KernelsCpuAdamConvert, ScalarConversionsRoundToNearestEven) {
  using opforge_cpu_adam::to_bf16;
  using opforge_cpu_adam::to_fp16;
  EXPECT_EQ(to_fp16(1.0f), 0x3c00);
  EXPECT_EQ(to_fp16(-2.0f), 0xc000);
  EXPECT_EQ(to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(to_fp16(65519.0f), 0x7bff);
  EXPECT_EQ(to_fp16(65520.0f), 0x7c00);  // the tie rounds to even: infinity
  EXPECT_EQ(to_fp16(INFINITY), 0x7c00);
  EXPECT_EQ(to_fp16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(to_fp16(std::ldexp(1.0f, -25)), 0x0000);  // tie → even (0)
  EXPECT_EQ(to_fp16(std::ldexp(3.0f, -26)), 0x0001);
  EXPECT_EQ(to_fp16(std::ldexp(1.0f, -14)), 0x0400);         // smallest normal
  EXPECT_EQ(to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie → even
  EXPECT_EQ(to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(to_fp16(NAN) & 0x7e00, 0x7e00);
  EXPECT_EQ(to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie → even
  EXPECT_EQ(to_bf16(1.0f + std::ldexp(3.0f, -8)), 0x3f82);
  EXPECT_EQ(to_bf16(-INFINITY), 0xff80);
  EXPECT_EQ(to_bf16(NAN) & 0x7fc0, 0x7fc0);
}

// With lr = 0 the parameters stay as they are, so the half copy shows each level's conversion:
// every level must give the scalar conversion's bits, rounding cases included.
TEST(KernelsCpuAdamConvert, EveryLevelWritesTheSameHalfBits) {
  std::vector<float> p{1.0f,
                       65519.0f,
                       65520.0f,
                       70000.0f,
                       std::ldexp(1.0f, -25),
                       std::ldexp(3.0f, -26),
                       1.0f + std::ldexp(1.0f, -11),
                       -0.0f,
                       3.14159f,
                       1.0f + std::ldexp(1.0f, -8),
                       1.0f + std::ldexp(3.0f, -8),
                       1e-30f,
                       -1e30f};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-70000.0f, 70000.0f);
  while (p.size() < 1000) p.push_back(d(rng) / (1 << (p.size() % 24)));
  const std::size_t n = p.size();
  for (int half : {OPFORGE_CPU_ADAM_HALF_FP16, OPFORGE_CPU_ADAM_HALF_BF16}) {
    std::vector<std::uint16_t> expect(n);
    for (std::size_t i = 0; i < n; ++i)
      expect[i] =
          half == OPFORGE_CPU_ADAM_HALF_FP16 ? opforge_cpu_adam::to_fp16(p[i]) : opforge_cpu_adam::to_bf16(p[i]);
    for (int level : supported_levels()) {
      SCOPED_TRACE(opforge_cpu_adam_simd_name(level));
      ASSERT_EQ(opforge_cpu_adam_set_simd_level(level), 0);
      std::vector<float> q = p, g(n, 0.0f), m(n, 0.0f), v(n, 0.0f);
      std::vector<std::uint16_t> out(n, 0x1234);
      ASSERT_EQ(opforge_cpu_adam_step(q.data(), g.data(), m.data(), v.data(), n, 1, 0.0f, 0.9f, 0.999f, 1e-8f, 0.0f,
                                      half, out.data(), 2),
                0);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], expect[i]) << "value " << p[i];
    }
  }
  opforge_cpu_adam_set_simd_level(opforge_cpu_adam_best_simd_level());
}

TEST(KernelsCpuAdamErrors, BadArgumentsSayWhat) {
  float x = 0;
  EXPECT_EQ(opforge_cpu_adam_step(&x, &x, &x, &x, 1, 0, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 0, nullptr, 1), -EINVAL);
  EXPECT_EQ(std::string(opforge_cpu_adam_last_error()), "opforge_cpu_adam_step: step must be >= 1, got 0");
  EXPECT_EQ(opforge_cpu_adam_step(&x, &x, &x, &x, 1, 1, 1e-3f, 1.0f, 0.999f, 1e-8f, 0, 0, nullptr, 1), -EINVAL);
  EXPECT_EQ(opforge_cpu_adam_step(&x, &x, &x, &x, 1, 1, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, OPFORGE_CPU_ADAM_HALF_FP16,
                                  nullptr, 1),
            -EINVAL);
  EXPECT_EQ(opforge_cpu_adam_step(nullptr, &x, &x, &x, 1, 1, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 0, nullptr, 1), -EINVAL);
  EXPECT_EQ(
      opforge_cpu_adam_step(nullptr, nullptr, nullptr, nullptr, 0, 1, 1e-3f, 0.9f, 0.999f, 1e-8f, 0, 0, nullptr, 1), 0);
}

}  // namespace
