// Cross-compiled on the x86-64 machine with aarch64-linux-gnu-g++ and run inside the arm64 root
// (tests/install/arm64_root_check.sh): NEON intrinsics, the root's own loader and libstdc++, and
// the emulated CPU's HWCAP, each with an answer the test knows beforehand.
#include <arm_neon.h>
#include <sys/auxv.h>

#include <array>
#include <cstdio>
#include <numeric>

int main() {
  // 1..16 against 16..1: sum of i * (17 - i) = 816.
  std::array<float, 16> a{}, b{};
  std::iota(a.begin(), a.end(), 1.0f);
  for (int i = 0; i < 16; ++i) b[i] = 16.0f - static_cast<float>(i);
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (int i = 0; i < 16; i += 4) acc = vfmaq_f32(acc, vld1q_f32(&a[i]), vld1q_f32(&b[i]));
  const float dot = vaddvq_f32(acc);
  // AT_HWCAP bit 1 is HWCAP_ASIMD: the CPU (here qemu's) says it has Advanced SIMD.
  const bool asimd = (getauxval(AT_HWCAP) & (1UL << 1)) != 0;
  std::printf("neon dot %.0f asimd %s\n", static_cast<double>(dot), asimd ? "yes" : "no");
  return dot == 816.0f && asimd ? 0 : 1;
}
