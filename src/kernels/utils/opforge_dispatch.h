#pragma once
// OPFORGE_DISPATCHED marks a function that runs only after a run-time CPU check chose it (cpuid,
// __builtin_cpu_supports; getauxval(AT_HWCAP) on AArch64): it goes into the section "opforge_dispatch", which `opforge
// inspect` and a build's cpu_target check read as dispatched code, not as code every CPU runs (docs/ops.md, "SIMD
// chosen at run time"). Everything such a function calls must be marked too, or be inlined into it (intrinsics are).
#if (defined(__x86_64__) || defined(__aarch64__)) && (defined(__GNUC__) || defined(__clang__))
#define OPFORGE_DISPATCHED __attribute__((section("opforge_dispatch")))
#else
#define OPFORGE_DISPATCHED
#endif
