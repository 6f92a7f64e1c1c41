/* A C program built on two kernels exported by Tyche — a matrix multiply (gmm.h) and a softmax
 * (softmax.h), both in libkernels.a — with nothing of Tyche at run time. It runs them on its own
 * data, checks the results and prints the time of each. The shapes come from the headers, so any
 * exported GMM and SFM workload works. How to make the kernels: docs/export.md. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gmm.h"
#include "softmax.h"

static double seconds_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Kernels take any pointer; TYCHE_ALIGNMENT-aligned ones avoid a copy. */
static float* array_of(size_t bytes) {
  float* p = aligned_alloc(TYCHE_ALIGNMENT,
                           (bytes + TYCHE_ALIGNMENT - 1) / TYCHE_ALIGNMENT * TYCHE_ALIGNMENT);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  return p;
}

static void fill(float* p, int64_t n, uint32_t seed) {
  for (int64_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = (float)(seed >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
  }
}

static void check(int status, const char* kernel) {
  if (status != TYCHE_OK) {
    fprintf(stderr, "%s: %s\n", kernel, tyche_error_string(status));
    exit(1);
  }
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* The median of 11 timed calls, after one untimed. */
#define MEDIAN_SECONDS(result, call)                    \
  do {                                                  \
    double times_[11];                                  \
    check(call, #call);                                 \
    for (int r_ = 0; r_ < 11; ++r_) {                   \
      double start_ = seconds_now();                    \
      check(call, #call);                               \
      times_[r_] = seconds_now() - start_;              \
    }                                                   \
    qsort(times_, 11, sizeof(double), compare_doubles); \
    (result) = times_[5];                               \
  } while (0)

int main(void) {
  /* Z[b, i, j] = sum_k X[b, i, k] * Y[b, k, j] */
  const int64_t x_shape[] = gmm_X_SHAPE, y_shape[] = gmm_Y_SHAPE;
  const int64_t batch = x_shape[0], n = x_shape[1], k = x_shape[2], m = y_shape[2];
  float* x = array_of(gmm_X_BYTES);
  float* y = array_of(gmm_Y_BYTES);
  float* z = array_of(gmm_Z_BYTES);
  fill(x, gmm_X_ELEMENTS, 1);
  fill(y, gmm_Y_ELEMENTS, 2);
  double gmm_s;
  MEDIAN_SECONDS(gmm_s, gmm(x, y, z));
  /* A few elements against a dot product in double. */
  double worst = 0;
  for (int t = 0; t < 64; ++t) {
    int64_t b = t % batch, i = (t * 37) % n, j = (t * 101) % m;
    double dot = 0, scale = 0;
    for (int64_t q = 0; q < k; ++q) {
      double a = x[(b * n + i) * k + q], c = y[(b * k + q) * m + j];
      dot += a * c;
      scale += fabs(a * c);
    }
    double err = fabs(z[(b * n + i) * m + j] - dot) / (scale + 1e-30);
    if (err > worst) worst = err;
  }
  printf("gmm     %lld x %lld x %lld x %lld: %8.3f ms, %6.1f GFLOP/s, relative error %.1e\n",
         (long long)batch, (long long)n, (long long)m, (long long)k, gmm_s * 1e3,
         2.0 * (double)(batch * n * m * k) / gmm_s / 1e9, worst);

  /* softmax over the last axis of A[rows, cols] */
  const int64_t a_shape[] = softmax_A_SHAPE;
  const int64_t rows = a_shape[0], cols = a_shape[1];
  float* a = array_of(softmax_A_BYTES);
  float* s = array_of(softmax_softmax_BYTES);
  fill(a, softmax_A_ELEMENTS, 3);
  double softmax_s;
  MEDIAN_SECONDS(softmax_s, softmax(a, s));
  double worst_sum = 0;
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += s[r * cols + c];
    if (fabs(sum - 1) > worst_sum) worst_sum = fabs(sum - 1);
  }
  printf("softmax %lld x %lld: %8.3f ms, %6.2f GB/s, rows sum to 1 within %.1e\n", (long long)rows,
         (long long)cols, softmax_s * 1e3, 2.0 * (double)softmax_A_BYTES / softmax_s / 1e9,
         worst_sum);

  int ok = worst < 1e-4 && worst_sum < 1e-4;
  printf("%s\n", ok ? "OK" : "WRONG RESULTS");
  free(x);
  free(y);
  free(z);
  free(a);
  free(s);
  return ok ? 0 : 1;
}
