/* The bundled ops of a wheel built for another machine, run there (under emulation): each library
 * is opened with dlopen, as opforge_ops' Python layer opens it, and computes against a reference
 * worked out here in double precision. Usage: cross_check LIBDIR SCRATCHFILE. Prints one PASS line
 * per op, exits 1 at the first wrong result. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void* lib_dir_open(const char* dir, const char* name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "FAIL: dlopen %s: %s\n", path, dlerror());
    exit(1);
  }
  return h;
}

static void* sym(void* h, const char* name) {
  void* f = dlsym(h, name);
  if (!f) {
    fprintf(stderr, "FAIL: %s is not exported\n", name);
    exit(1);
  }
  return f;
}

static int check_utils(const char* dir) {
  void* h = lib_dir_open(dir, "libopforge_utils.so");
  int (*flatten)(const void* const*, const size_t*, size_t, void*, int) = sym(h, "opforge_utils_flatten");
  int (*unflatten)(const void*, void* const*, const size_t*, size_t, int) = sym(h, "opforge_utils_unflatten");
  char a[5] = "abcd", b[3] = "xy", c[7] = "123456", flat[16] = {0};
  const void* members[3] = {a, b, c};
  size_t sizes[3] = {4, 2, 6};
  if (flatten(members, sizes, 3, flat, 2) != 0 || memcmp(flat, "abcdxy123456", 12) != 0) return 1;
  char a2[4], b2[2], c2[6];
  void* outs[3] = {a2, b2, c2};
  if (unflatten(flat, outs, sizes, 3, 2) != 0 || memcmp(a2, a, 4) || memcmp(b2, b, 2) || memcmp(c2, c, 6)) return 1;
  printf("PASS: utils flatten/unflatten of 3 buffers\n");
  return 0;
}

/* One Adam step (L2 weight decay, bias-corrected) worked out in double. */
static double adam_ref(double p, double g, double* m, double* v, int64_t t, double lr, double b1, double b2, double eps,
                       double wd) {
  g += wd * p;
  *m = b1 * *m + (1 - b1) * g;
  *v = b2 * *v + (1 - b2) * g * g;
  double mh = *m / (1 - pow(b1, (double)t)), vh = *v / (1 - pow(b2, (double)t));
  return p - lr * mh / (sqrt(vh) + eps);
}

static int check_cpu_adam(const char* dir) {
  void* h = lib_dir_open(dir, "libopforge_cpu_adam.so");
  int (*step)(float*, const float*, float*, float*, uint64_t, int64_t, float, float, float, float, float, int, void*,
              int) = sym(h, "opforge_cpu_adam_step");
  int (*best)(void) = sym(h, "opforge_cpu_adam_best_simd_level");
  int (*set)(int) = sym(h, "opforge_cpu_adam_set_simd_level");
  const char* (*name)(int) = sym(h, "opforge_cpu_adam_simd_name");
  enum { N = 1000 };
  const int levels[2] = {0, best()};
  for (int li = 0; li < 2; ++li) {
    if (set(levels[li]) != 0) return 1;
    float p[N], g[N], m[N] = {0}, v[N] = {0};
    double rp[N], rm[N] = {0}, rv[N] = {0};
    for (int i = 0; i < N; ++i) {
      p[i] = (float)(0.5 * sin(i * 0.37)), g[i] = (float)(0.1 * cos(i * 0.11));
      rp[i] = p[i];
    }
    for (int64_t t = 1; t <= 3; ++t) {
      if (step(p, g, m, v, N, t, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 0, NULL, 1) != 0) return 1;
      for (int i = 0; i < N; ++i) rp[i] = adam_ref(rp[i], g[i], &rm[i], &rv[i], t, 1e-3, 0.9, 0.999, 1e-8, 0.01);
    }
    double worst = 0;
    for (int i = 0; i < N; ++i) worst = fmax(worst, fabs(p[i] - rp[i]));
    if (!(worst < 1e-5)) {
      fprintf(stderr, "FAIL: cpu_adam %s differs from the reference by %g\n", name(levels[li]), worst);
      return 1;
    }
    printf("PASS: cpu_adam %s: 3 steps of %d parameters within %.1e of the reference\n", name(levels[li]), N, worst);
  }
  return 0;
}

typedef struct {
  uint64_t count, nan_count, posinf_count, neginf_count, zero_count, subnormal_count, over_threshold_count, reserved;
  double abs_min, abs_max;
} stats_t;

static int check_overflow(const char* dir) {
  void* h = lib_dir_open(dir, "libopforge_overflow.so");
  int (*stats)(const void*, uint64_t, int, double, stats_t*) = sym(h, "opforge_overflow_stats_cpu");
  const char* (*isa)(void) = sym(h, "opforge_overflow_cpu_isa");
  enum { N = 4099 };
  static float x[N];
  for (int i = 0; i < N; ++i) x[i] = (float)(i % 7) - 3.0f;
  x[5] = NAN, x[700] = INFINITY, x[4000] = -INFINITY, x[4098] = 1e30f;
  stats_t s;
  if (stats(x, N, 0, 1e20, &s) != 0) return 1;
  if (s.count != N || s.nan_count != 1 || s.posinf_count != 1 || s.neginf_count != 1 || s.over_threshold_count != 1) {
    fprintf(stderr, "FAIL: overflow stats: nan %llu +inf %llu -inf %llu over %llu\n", (unsigned long long)s.nan_count,
            (unsigned long long)s.posinf_count, (unsigned long long)s.neginf_count,
            (unsigned long long)s.over_threshold_count);
    return 1;
  }
  printf("PASS: overflow CPU path (%s) finds the planted NaN, +inf, -inf and 1e30 among %d floats\n", isa(), N);
  return 0;
}

static int check_aio(const char* dir, const char* file) {
  void* h = lib_dir_open(dir, "libopforge_aio.so");
  int (*available)(void) = sym(h, "opforge_aio_available");
  int (*wr)(const char*, const void*, uint64_t, uint64_t, int, int, int*) = sym(h, "opforge_aio_write");
  int (*rd)(const char*, void*, uint64_t, uint64_t, int, int, int*) = sym(h, "opforge_aio_read");
  const char* (*err)(void) = sym(h, "opforge_aio_last_error");
  if (available() != 0) {
    fprintf(stderr, "FAIL: aio: %s\n", err());
    return 1;
  }
  enum { SIZE = 3 << 20 };
  unsigned char* out = malloc(SIZE);
  unsigned char* in = malloc(SIZE);
  for (int i = 0; i < SIZE; ++i) out[i] = (unsigned char)(i * 31 + 7);
  if (wr(file, out, SIZE, 0, 0, 1, NULL) != 0 || rd(file, in, SIZE, 0, 0, 1, NULL) != 0 || memcmp(in, out, SIZE)) {
    fprintf(stderr, "FAIL: aio round trip: %s\n", err());
    return 1;
  }
  printf("PASS: aio wrote and read back 3 MiB through libaio\n");
  free(out), free(in);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: cross_check LIBDIR SCRATCHFILE\n");
    return 2;
  }
  return check_utils(argv[1]) || check_cpu_adam(argv[1]) || check_overflow(argv[1]) || check_aio(argv[1], argv[2]);
}
