// The aarch64 check of the CPU ops, run under qemu-user by tests/kernels_aarch64.sh (no gtest for
// aarch64 here: plain checks, a line per finding, exit status 1 on any failure). It links the
// op libraries as op.toml builds them and checks, through their C ABI only:
//   - the level chosen at run time is the expected one (argv[1]) and the level steps use now is
//     argv[2] (which OPFORGE_CPU_ADAM_SIMD may have lowered);
//   - every level this CPU has agrees with the scalar path (relative 1e-5) and with the
//     double-precision textbook Adam/AdamW (absolute 2e-5) after 200 steps: the tolerances
//     docs/ops.md gives for the x86-64 paths;
//   - every level writes the scalar path's fp16 and bf16 bits;
//   - utils' flatten/unflatten round trip.
#include <sys/prctl.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu_adam.h"

extern "C" {
int opforge_utils_flatten(const void* const* members, const std::size_t* sizes, std::size_t n, void* flat, int threads);
int opforge_utils_unflatten(const void* flat, void* const* members, const std::size_t* sizes, std::size_t n,
                            int threads);
}

#ifndef PR_SVE_GET_VL
#define PR_SVE_GET_VL 51
#endif

namespace {

constexpr double kSimdVsScalarRel = 1e-5;
constexpr double kVsReferenceAbs = 2e-5;
constexpr int kLevels = OPFORGE_CPU_ADAM_SVE + 1;

int g_failures = 0;

void check(bool ok, const std::string& what) {
  if (ok) return;
  std::printf("FAIL: %s\n", what.c_str());
  ++g_failures;
}

struct State {
  std::vector<float> p, g, m, v;
};

State make_state(std::size_t n) {
  std::mt19937 rng(1);
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
  float lr, b1, b2, eps, wd;
  int flags;
};

State run(int level, std::size_t n, int steps, const Hyper& h) {
  opforge_cpu_adam_set_simd_level(level);
  State s = make_state(n);
  for (int t = 1; t <= steps; ++t) {
    fill_grads(s, 100 + t);
    int rc = opforge_cpu_adam_step(s.p.data(), s.g.data(), s.m.data(), s.v.data(), n, t, h.lr, h.b1, h.b2, h.eps, h.wd,
                                   h.flags, nullptr, 3);
    check(rc == 0, std::string("step: ") + opforge_cpu_adam_last_error());
  }
  return s;
}

// torch.optim.Adam / AdamW in double.
std::vector<double> reference(std::size_t n, int steps, const Hyper& h) {
  State s = make_state(n);
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
  std::vector<int> out;
  for (int l = 0; l < kLevels; ++l)
    if (opforge_cpu_adam_set_simd_level(l) == 0) out.push_back(l);
  return out;
}

void check_steps(const std::vector<int>& levels) {
  const Hyper variants[] = {{1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 0},
                            {1e-2f, 0.8f, 0.99f, 1e-6f, 0.1f, 0},
                            {1e-2f, 0.9f, 0.999f, 1e-8f, 0.05f, OPFORGE_CPU_ADAM_ADAMW}};
  const std::size_t n = 4099;  // no multiple of any vector length: the tails run too
  const int steps = 200;
  for (const Hyper& h : variants) {
    State scalar = run(OPFORGE_CPU_ADAM_SCALAR, n, steps, h);
    std::vector<double> ref = reference(n, steps, h);
    for (int level : levels) {
      const std::string name = opforge_cpu_adam_simd_name(level);
      State s = run(level, n, steps, h);
      double worst_rel = 0, worst_ref = 0, worst_m = 0, worst_v = 0;
      for (std::size_t i = 0; i < n; ++i) {
        double scale = std::max(1.0, std::fabs(double(scalar.p[i])));
        worst_rel = std::max(worst_rel, std::fabs(double(s.p[i]) - scalar.p[i]) / scale);
        worst_ref = std::max(worst_ref, std::fabs(double(s.p[i]) - ref[i]));
        worst_m = std::max(worst_m, std::fabs(double(s.m[i]) - scalar.m[i]));
        worst_v = std::max(worst_v, std::fabs(double(s.v[i]) - scalar.v[i]));
      }
      std::printf("%s lr=%g wd=%g flags=%d: vs scalar %.3g (relative), vs reference %.3g\n", name.c_str(), h.lr, h.wd,
                  h.flags, worst_rel, worst_ref);
      check(worst_rel <= kSimdVsScalarRel, name + ": parameters differ from the scalar path");
      check(worst_ref <= kVsReferenceAbs, name + ": parameters differ from the reference");
      check(worst_m <= kSimdVsScalarRel * 1e-1, name + ": first moment differs from the scalar path");
      check(worst_v <= kSimdVsScalarRel * 1e-2, name + ": second moment differs from the scalar path");
    }
  }
}

// With lr = 0 the parameters stay as they are: the copies show each level's conversion.
void check_half_bits(const std::vector<int>& levels) {
  std::vector<float> p{1.0f,  65519.0f, 65520.0f, 70000.0f, std::ldexp(1.0f, -25),       std::ldexp(3.0f, -26),
                       -0.0f, 3.14159f, 1e-30f,   -1e30f,   1.0f + std::ldexp(1.0f, -11)};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-70000.0f, 70000.0f);
  while (p.size() < 1001) p.push_back(d(rng) / float(1 << (p.size() % 24)));
  const std::size_t n = p.size();
  for (int half : {OPFORGE_CPU_ADAM_HALF_FP16, OPFORGE_CPU_ADAM_HALF_BF16}) {
    std::vector<std::vector<std::uint16_t>> outs;
    for (int level : levels) {
      opforge_cpu_adam_set_simd_level(level);
      std::vector<float> q = p, g(n, 0.0f), m(n, 0.0f), v(n, 0.0f);
      std::vector<std::uint16_t> out(n, 0x1234);
      check(opforge_cpu_adam_step(q.data(), g.data(), m.data(), v.data(), n, 1, 0.0f, 0.9f, 0.999f, 1e-8f, 0.0f, half,
                                  out.data(), 2) == 0,
            "half step");
      outs.push_back(out);
    }
    for (std::size_t l = 1; l < outs.size(); ++l)
      check(outs[l] == outs[0], std::string(opforge_cpu_adam_simd_name(levels[l])) + ": " +
                                    (half == OPFORGE_CPU_ADAM_HALF_FP16 ? "fp16" : "bf16") +
                                    " bits differ from the scalar path's");
  }
}

void check_utils() {
  std::vector<std::vector<std::uint8_t>> members;
  std::vector<const void*> src;
  std::vector<std::size_t> sizes{0, 1, 7, 4096, 3, 65537};
  std::size_t total = 0;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    members.emplace_back(sizes[i]);
    for (std::size_t j = 0; j < sizes[i]; ++j) members[i][j] = static_cast<std::uint8_t>(i * 31 + j * 7);
    src.push_back(members[i].data());
    total += sizes[i];
  }
  std::vector<std::uint8_t> flat(total);
  check(opforge_utils_flatten(src.data(), sizes.data(), sizes.size(), flat.data(), 2) == 0, "utils: flatten");
  std::vector<std::vector<std::uint8_t>> back;
  std::vector<void*> dst;
  for (auto s : sizes) back.emplace_back(s, 0x55);
  for (auto& b : back) dst.push_back(b.data());
  check(opforge_utils_unflatten(flat.data(), dst.data(), sizes.data(), sizes.size(), 2) == 0, "utils: unflatten");
  check(back == members, "utils: flatten then unflatten changed the bytes");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s EXPECTED_BEST EXPECTED_NOW (simd level names)\n", argv[0]);
    return 2;
  }
  const char* now = opforge_cpu_adam_simd_name(opforge_cpu_adam_simd_level());
  const char* best = opforge_cpu_adam_simd_name(opforge_cpu_adam_best_simd_level());
  int vl = prctl(PR_SVE_GET_VL);
  std::printf("best level: %s, level now: %s, SVE vector length: %s\n", best, now,
              vl < 0 ? "none" : (std::to_string(vl & 0xffff) + " bytes").c_str());
  check(std::strcmp(best, argv[1]) == 0, std::string("best level is ") + best + ", expected " + argv[1]);
  check(std::strcmp(now, argv[2]) == 0, std::string("level now is ") + now + ", expected " + argv[2]);
  check(opforge_cpu_adam_set_simd_level(OPFORGE_CPU_ADAM_AVX2) == -ENOTSUP, "avx2 is refused on aarch64");
  std::vector<int> levels = supported_levels();
  check_steps(levels);
  check_half_bits(levels);
  check_utils();
  std::printf(g_failures ? "%d failures\n" : "all checks passed\n", g_failures);
  return g_failures ? 1 : 0;
}
